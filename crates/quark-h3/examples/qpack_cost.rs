//! What QPACK's dynamic table costs an HTTP/3 request in CPU: client and
//! server in this process on loopback, `GET /2048` with a benchmark's
//! minimal head (as the lab's `rps` runs send) and with a browser's head,
//! 8 requests in flight, the static table only against the dynamic table
//! (4096 bytes, 16 blocked streams) on both sides. Prints requests per
//! CPU-second of the process (both ends) for each.
//!
//! ```sh
//! cargo run --release -p quark-h3 --example qpack_cost -- [REQUESTS]
//! ```

use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, Response};
use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

const BODY: usize = 2048;
const IN_FLIGHT: usize = 8;

/// User and system CPU time of this process so far (Linux).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    // Fields after the command name's closing parenthesis: utime is the
    // 14th field of the line, stime the 15th (in clock ticks, 100 a second).
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

async fn serve(server: Endpoint, config: quark_h3::Config) {
    let body = Bytes::from(vec![b'x'; BODY]);
    while let Some(conn) = server.accept().await {
        let body = body.clone();
        tokio::spawn(async move {
            let Ok(mut h3) = quark_h3::Server::with_config(conn, &config).await else {
                return;
            };
            while let Ok(Some((_req, mut stream))) = h3.accept().await {
                let body = body.clone();
                tokio::spawn(async move {
                    let resp = Response::builder()
                        .header("content-length", BODY)
                        .header("server", "quark")
                        .header("content-type", "application/octet-stream")
                        .body(())?;
                    stream.send_response(&resp).await?;
                    stream.send_data(body).await?;
                    stream.finish()?;
                    Ok::<_, BoxError>(())
                });
            }
        });
    }
}

async fn connect(addr: std::net::SocketAddr, id: &Identity) -> Result<Connection, BoxError> {
    let client = Endpoint::client("127.0.0.1:0".parse()?)?;
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[quark_h3::ALPN])?;
    Ok(client.connect(config, addr, "localhost")?.await?)
}

/// Requests per CPU-second for `n` requests with heads from `head`.
async fn run(config: quark_h3::Config, n: usize, head: Head) -> Result<f64, BoxError> {
    let id = Identity::self_signed(&["localhost"])?;
    let server = Endpoint::server(
        tls::server_config(&id, &[quark_h3::ALPN])?,
        "127.0.0.1:0".parse()?,
    )?;
    let addr = server.local_addr()?;
    tokio::spawn(serve(server.clone(), config));
    let client = quark_h3::Client::with_config(connect(addr, &id).await?, &config).await?;
    // Warm-up: settings exchanged, tables filled.
    for i in 0..50 {
        one(&client, head(i)).await?;
    }
    let (cpu, start) = (cpu_time(), Instant::now());
    let mut tasks = tokio::task::JoinSet::new();
    for t in 0..IN_FLIGHT {
        let client = client.clone();
        tasks.spawn(async move {
            for i in (t..n).step_by(IN_FLIGHT) {
                one(&client, head(i)).await?;
            }
            Ok::<_, BoxError>(())
        });
    }
    while let Some(r) = tasks.join_next().await {
        r??;
    }
    let (cpu, wall) = (cpu_time() - cpu, start.elapsed());
    let inserts = client.qpack_inserts();
    let stats = client.connection().stats();
    client.connection().close(0x100, b"done");
    server.close(0, b"done");
    eprintln!(
        "  {n} requests in {wall:.2?}, CPU {cpu:.2?}, client QPACK inserts (ours, acked, theirs) {inserts:?}, client packets out {} in {}",
        stats.packets_out, stats.packets_in
    );
    Ok(n as f64 / cpu.as_secs_f64().max(0.01))
}

/// Makes the `i`th request's head.
type Head = fn(usize) -> Request<()>;

async fn one(client: &quark_h3::Client, req: Request<()>) -> Result<(), BoxError> {
    let mut s = client.send_request(&req).await?;
    s.finish()?;
    let resp = s.recv_response().await?;
    assert_eq!(resp.status(), 200);
    let mut got = 0;
    while let Some(n) = s.recv_data_with(|_| {}).await? {
        got += n;
    }
    assert_eq!(got, BODY);
    Ok(())
}

fn minimal(_: usize) -> Request<()> {
    Request::get("https://localhost:4433/2048")
        .body(())
        .unwrap()
}

fn browser(i: usize) -> Request<()> {
    Request::get(format!("https://localhost:4433/img/{}.webp", i % 40))
        .header("user-agent", "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36")
        .header("accept", "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8")
        .header("accept-encoding", "gzip, deflate, br, zstd")
        .header("accept-language", "en-US,en;q=0.9,de;q=0.8")
        .header("sec-fetch-dest", "image")
        .header("cookie", "session_id=9f86d081884c7d659a2feaa0c55ad015; cart=3")
        .body(())
        .unwrap()
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), BoxError> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let heads: [(&str, Head); 2] = [("minimal", minimal), ("browser", browser)];
    for (name, head) in heads {
        let mut rates = Vec::new();
        for (label, config) in [
            ("static", quark_h3::Config::default()),
            ("dynamic", quark_h3::Config::dynamic_qpack()),
        ] {
            eprintln!("{name} head, {label} table:");
            rates.push(run(config, n, head).await?);
        }
        println!(
            "{name} head: static {:.0} req/CPU-s, dynamic {:.0} req/CPU-s ({:+.1} %)",
            rates[0],
            rates[1],
            (rates[1] / rates[0] - 1.0) * 100.0
        );
    }
    Ok(())
}
