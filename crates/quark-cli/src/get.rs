//! `quark get`: fetch URLs over hq-interop (or HTTP/3 with `--h3`), in
//! parallel as streams of one connection.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use quark::tls::{self, Verify};
use quark::{Connection, Endpoint};
use tokio::io::AsyncWriteExt;

use crate::options::{TransportArgs, parse_quic_version};

/// Fetch files over hq-interop or HTTP/3.
#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    /// URLs like https://host:port/path, all on the same server.
    #[arg(required = true)]
    pub(crate) urls: Vec<String>,
    /// Output directory, or `-` for standard output.
    #[arg(short, long, default_value = ".")]
    pub(crate) output: String,
    /// Trust the certificates in this PEM file.
    #[arg(long, conflicts_with = "insecure")]
    pub(crate) ca: Option<PathBuf>,
    /// Do not verify the server certificate.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Give up connecting after this many seconds.
    #[arg(long, default_value_t = 10)]
    pub(crate) connect_timeout: u64,
    /// No progress bar or summary.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// Speak HTTP/3 (ALPN h3) instead of hq-interop.
    #[arg(long)]
    pub(crate) h3: bool,
    /// With --h3: QPACK dynamic table capacity in bytes we allow the peer's
    /// encoder, and the most our encoder uses of the peer's (0: static table
    /// only, no QPACK streams).
    #[arg(long, default_value_t = quark_h3::QPACK_CAPACITY)]
    pub(crate) qpack_capacity: u64,
    /// With --h3: streams the peer's QPACK encoder may leave blocked.
    #[arg(long, default_value_t = quark_h3::QPACK_BLOCKED_STREAMS)]
    pub(crate) qpack_blocked_streams: u64,
    /// With --h3: the requests' priority (RFC 9218 Priority header), e.g.
    /// `u=0` (most urgent) to `u=7`, `,i` for incremental: `u=5,i`.
    #[arg(long, value_parser = parse_priority, requires = "h3")]
    pub(crate) priority: Option<quark_h3::Priority>,
    /// Start a 1-RTT key update as soon as the handshake is confirmed (the
    /// interop runner's keyupdate case); quark otherwise updates keys by
    /// itself before their confidentiality limit.
    #[arg(long)]
    pub(crate) key_update: bool,
    /// Send the requests in 0-RTT. rustls keeps session tickets in memory
    /// only (they cannot be saved to a file), so a first connection in the
    /// same run gets a ticket, then the real one resumes with it; the
    /// summary says whether the server accepted the early data. Requests
    /// are GETs (with `--h3` too), safe to send early.
    #[arg(long = "0rtt")]
    pub(crate) zero_rtt: bool,
    /// QUIC version to speak from the first packet: 1 (RFC 9000) or 2 (RFC
    /// 9369). A server without it answers with Version Negotiation and the
    /// connection fails (no silent fallback). Starting in 1, the client
    /// offers 2 and a server preferring 2 moves the connection to it.
    #[arg(long, default_value = "1", value_parser = parse_quic_version)]
    pub(crate) quic_version: u32,
    /// Stay in the starting version: offer no other (RFC 9368).
    #[arg(long)]
    pub(crate) no_version_upgrade: bool,
    #[command(flatten)]
    pub(crate) request: crate::get_http::RequestArgs,
    #[command(flatten)]
    pub(crate) transport: TransportArgs,
}

/// A parsed `https://host[:port]/path` URL.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Url {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) path: String,
}

pub(crate) fn parse_url(url: &str) -> anyhow::Result<Url> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| anyhow!("{url}: only https:// URLs are supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, p) = v6
            .split_once(']')
            .ok_or_else(|| anyhow!("{url}: bad IPv6 address"))?;
        (h.to_string(), p.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        bail!("{url}: missing host");
    }
    let port = match port {
        Some(p) => p.parse().map_err(|_| anyhow!("{url}: bad port '{p}'"))?,
        None => 443,
    };
    Ok(Url {
        host,
        port,
        path: path.to_string(),
    })
}

fn output_name(path: &str) -> String {
    let name = path
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if name.is_empty() || name == "." || name == ".." {
        "index.html".into()
    } else {
        name.into()
    }
}

pub(crate) async fn run(args: GetArgs) -> anyhow::Result<()> {
    let urls: Vec<Url> = args
        .urls
        .iter()
        .map(|u| parse_url(u))
        .collect::<Result<_, _>>()?;
    let first = &urls[0];
    if let Some(other) = urls
        .iter()
        .find(|u| u.host != first.host || u.port != first.port)
    {
        bail!(
            "all URLs must name the same server ({}:{} vs {}:{})",
            first.host,
            first.port,
            other.host,
            other.port
        );
    }
    let request = args.request.options().await?;
    if request.is_some() && !args.h3 {
        bail!("-i, -H, -X, -d and --data-binary need --h3");
    }
    // Early data can be replayed (RFC 9110 §9.2.1): safe methods only.
    if let Some(r) = request.as_ref().filter(|_| args.zero_rtt) {
        if !r.method.is_safe() {
            bail!(
                "--0rtt sends only safe methods (GET, HEAD), not {}",
                r.method
            );
        }
    }
    let to_stdout = args.output == "-";
    let out_dir = PathBuf::from(&args.output);
    if !to_stdout && !out_dir.is_dir() {
        bail!("-o {}: not a directory", out_dir.display());
    }
    let addr: SocketAddr = tokio::net::lookup_host((first.host.as_str(), first.port))
        .await
        .with_context(|| format!("cannot resolve {}", first.host))?
        .next()
        .ok_or_else(|| anyhow!("cannot resolve {}", first.host))?;
    let verify = match (&args.ca, args.insecure) {
        (_, true) => Verify::Insecure,
        (Some(ca), false) => Verify::CaFile(ca.clone()),
        (None, false) => bail!("no way to verify the server: give --ca FILE (or --insecure)"),
    };
    let suites = args.transport.cipher_suites()?;
    let (alpn, _) = crate::serve::protocol(args.h3);
    let mut config = tls::client_config_with(verify, &[alpn], &suites)?;
    config.transport = Arc::new(args.transport.transport_config());
    config.version = args.quic_version;
    if args.no_version_upgrade {
        config.compatible_versions.clear();
    }
    let bind: SocketAddr = if addr.is_ipv6() {
        "[::]:0".parse()?
    } else {
        "0.0.0.0:0".parse()?
    };
    let endpoint = Endpoint::with_config(args.transport.endpoint_config(), None, bind)
        .context("cannot open a UDP socket")?;
    endpoint.set_busy_poll(args.transport.busy_poll());
    let timeout = Duration::from_secs(args.connect_timeout);
    if args.zero_rtt {
        config = config.with_0rtt();
        crate::zero_rtt::prime(&endpoint, &config, addr, &first.host, timeout).await?;
    }
    let start = Instant::now();
    let connecting = endpoint.connect(config, addr, &first.host)?;
    let (conn, early) = match connecting.into_0rtt() {
        Ok(conn) => (conn, true),
        Err(connecting) => (
            crate::zero_rtt::established(connecting, addr, timeout).await?,
            false,
        ),
    };
    // With 0-RTT the requests go before the handshake ends: time it apart.
    let handshake = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let accepted = conn.handshake().await.unwrap_or(false);
            (start.elapsed(), accepted)
        })
    };
    let via = match args.h3 {
        true => {
            let h3 = quark_h3::Config {
                qpack_max_table_capacity: args.qpack_capacity,
                qpack_blocked_streams: args.qpack_blocked_streams,
                ..Default::default()
            };
            let client = quark_h3::Client::with_config(conn.clone(), &h3)
                .await
                .map_err(|e| anyhow!("{addr}: HTTP/3 failed to start: {e}"))?;
            let authority = match first.host.contains(':') {
                true => format!("[{}]:{}", first.host, first.port),
                false => format!("{}:{}", first.host, first.port),
            };
            // With -i/-H/-X/-d the request is built from the options: the
            // priority goes in as its header field, unless -H set one.
            let request = request.map(|mut opts| {
                if let Some(p) = args.priority {
                    let name = http::HeaderName::from_static(quark_h3::priority::PRIORITY);
                    if !opts.headers.iter().any(|(n, _)| *n == name) {
                        if let Ok(v) = http::HeaderValue::from_str(&quark_h3::priority::format(p)) {
                            opts.headers.push((name, v));
                        }
                    }
                }
                Arc::new(opts)
            });
            Via::H3(client, authority.into(), request, args.priority)
        }
        false => Via::Hq(conn.clone()),
    };

    if args.key_update {
        // Confirmed once HANDSHAKE_DONE arrives, a round trip or so later.
        let conn = conn.clone();
        tokio::spawn(async move {
            for _ in 0..500 {
                if conn.initiate_key_update() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
    }
    let bar = progress_bar(args.quiet, urls.len());
    let mut tasks = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let (via, path, bar) = (via.clone(), url.path.clone(), bar.clone());
        // To stdout the first body streams straight through; later ones wait in
        // memory for their turn, so the output follows the order of the URLs.
        let dest = match (to_stdout, i) {
            (true, 0) => Sink::Stdout,
            (true, _) => Sink::Memory,
            (false, _) => Sink::File(out_dir.join(output_name(&url.path))),
        };
        tasks.push(tokio::spawn(async move {
            fetch_one(via, path, dest, bar).await
        }));
    }
    let mut total = 0u64;
    let mut failures = 0;
    let mut stdout = tokio::io::stdout();
    for (url, task) in urls.iter().zip(tasks) {
        match task.await? {
            Ok(Fetched::File(n)) => total += n,
            Ok(Fetched::Memory(body)) => {
                total += body.len() as u64;
                stdout.write_all(&body).await?;
            }
            Err(e) => {
                failures += 1;
                bar.suspend(|| eprintln!("error: {}: {e}", url.path));
            }
        }
    }
    stdout.flush().await?;
    bar.finish_and_clear();
    let elapsed = start.elapsed();
    let code = if args.h3 {
        quark_h3::error::H3_NO_ERROR
    } else {
        0
    };
    let (handshake, accepted) = handshake.await?;
    let zero_rtt = match (args.zero_rtt, early, accepted) {
        (false, ..) => "",
        (true, false, _) => ", 0-RTT unavailable",
        (true, true, true) => ", 0-RTT accepted",
        (true, true, false) => ", 0-RTT rejected",
    };
    let (stats, ecn) = (conn.stats(), conn.ecn_state());
    let key_updates = stats.key_updates;
    conn.close(code, b"done");
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    // The files must be complete when the process exits.
    endpoint.flush_qlog();
    if !args.quiet {
        let secs = elapsed.as_secs_f64();
        let updates = match key_updates {
            0 => String::new(),
            n => format!(", {n} key update{}", if n == 1 { "" } else { "s" }),
        };
        let version = match conn.quic_version() {
            Some(quark::VERSION_2) => ", QUIC v2",
            _ => "",
        };
        eprintln!(
            "{} of {} files, {} bytes in {:.3} s (handshake {:.1} ms), goodput {:.1} Mbit/s [{}{}{updates}{version}{zero_rtt}]",
            urls.len() - failures,
            urls.len(),
            total,
            secs,
            handshake.as_secs_f64() * 1e3,
            total as f64 * 8.0 / secs / 1e6,
            conn.cipher_suite().unwrap_or_default(),
            ecn_summary(&stats, ecn),
        );
    }
    if failures > 0 {
        bail!("{failures} of {} downloads failed", urls.len());
    }
    Ok(())
}

/// `, ECN capable (ECT(0) in 90, CE 0, marked out 96)`: what the path did
/// with ECN marks, as the summary line shows it.
fn ecn_summary(stats: &quark::ConnectionStats, state: Option<quark::EcnState>) -> String {
    let state = match state {
        Some(quark::EcnState::Testing) => "testing",
        Some(quark::EcnState::Unknown) => "unknown",
        Some(quark::EcnState::Capable) => "capable",
        Some(quark::EcnState::Failed) | None => "off",
    };
    let mut s = format!(
        ", ECN {state} (ECT(0) in {}, CE {}, marked out {}",
        stats.ecn_ect0_in, stats.ecn_ce_in, stats.ecn_marked_out
    );
    if stats.ecn_ect1_in > 0 {
        s += &format!(", ECT(1) in {}", stats.ecn_ect1_in);
    }
    s.push(')');
    s
}

enum Fetched {
    File(u64),
    Memory(Vec<u8>),
}

/// Where a body goes.
enum Sink {
    File(PathBuf),
    Stdout,
    Memory,
}

/// The protocol requests go over.
#[derive(Clone)]
enum Via {
    Hq(Connection),
    /// The client, the authority (`host:port`) of the URLs, `-i`, `-H`, ...
    /// and `--priority`.
    H3(
        quark_h3::Client,
        Arc<str>,
        Option<Arc<crate::get_http::RequestOptions>>,
        Option<quark_h3::Priority>,
    ),
}

impl Via {
    async fn fetch(
        &self,
        path: &str,
        out: &mut (impl tokio::io::AsyncWrite + Unpin),
        progress: impl FnMut(usize),
    ) -> Result<u64, String> {
        match self {
            Via::Hq(conn) => quark::hq::fetch(conn, path, out, progress)
                .await
                .map_err(|e| e.describe()),
            Via::H3(client, authority, Some(opts), _) => {
                crate::get_http::fetch(client, authority, path, opts, out, progress)
                    .await
                    .map_err(|e| e.to_string())
            }
            Via::H3(client, authority, None, priority) => quark_h3::files::fetch_prioritized(
                client, authority, path, *priority, out, progress,
            )
            .await
            .map_err(|e| e.to_string()),
        }
    }
}

async fn fetch_one(
    via: Via,
    path: String,
    dest: Sink,
    bar: ProgressBar,
) -> Result<Fetched, String> {
    let progress = |n: usize| bar.inc(n as u64);
    let result = match &dest {
        Sink::File(dest) => {
            let mut file = tokio::fs::File::create(dest)
                .await
                .map_err(|e| format!("{}: {e}", dest.display()))?;
            via.fetch(&path, &mut file, progress)
                .await
                .map(Fetched::File)
        }
        Sink::Stdout => via
            .fetch(&path, &mut tokio::io::stdout(), progress)
            .await
            .map(Fetched::File),
        Sink::Memory => {
            let mut body = Vec::new();
            via.fetch(&path, &mut body, progress)
                .await
                .map(|_| Fetched::Memory(body))
        }
    };
    if result.is_err() {
        if let Sink::File(dest) = &dest {
            let _ = std::fs::remove_file(dest);
        }
    }
    bar.set_message(format!("{} done", short(&path)));
    result
}

fn short(path: &str) -> &str {
    Path::new(path)
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or(path)
}

fn progress_bar(quiet: bool, files: usize) -> ProgressBar {
    if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(format!("{files} files"));
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("https://localhost:4433/a/b").unwrap(),
            Url {
                host: "localhost".into(),
                port: 4433,
                path: "/a/b".into()
            }
        );
        assert_eq!(parse_url("https://[::1]:9/x").unwrap().host, "::1");
        assert_eq!(
            parse_url("https://h").unwrap(),
            Url {
                host: "h".into(),
                port: 443,
                path: "/".into()
            }
        );
        assert!(parse_url("http://h/").is_err());
        assert!(parse_url("https://h:99999/").is_err());
        assert!(parse_url("https://:1/").is_err());
    }

    #[test]
    fn names() {
        assert_eq!(output_name("/a/b.bin"), "b.bin");
        assert_eq!(output_name("/"), "index.html");
        assert_eq!(output_name("/x?y=1"), "x");
    }
}

/// `--priority`: `u=N` (urgency 0-7) and/or `i` (incremental), comma
/// separated, as in the Priority header field (RFC 9218 §4).
fn parse_priority(s: &str) -> Result<quark_h3::Priority, String> {
    let mut p = quark_h3::Priority::default();
    for member in s.split(',').map(str::trim) {
        match member.strip_prefix("u=").map(str::parse::<u8>) {
            Some(Ok(u)) if u <= 7 => p.urgency = u,
            None if member == "i" => p.incremental = true,
            _ => return Err(format!("{s:?}: expected u=N (0-7) and optionally ,i")),
        }
    }
    Ok(p)
}

#[cfg(test)]
mod priority_flag {
    use super::parse_priority;
    use quark_h3::Priority;

    #[test]
    fn urgency_and_incremental() {
        let p = |urgency, incremental| Priority {
            urgency,
            incremental,
        };
        assert_eq!(parse_priority("u=0"), Ok(p(0, false)));
        assert_eq!(parse_priority("u=5,i"), Ok(p(5, true)));
        assert_eq!(parse_priority("i"), Ok(p(3, true)));
        for bad in ["u=8", "u=1,", "fast", "u=-1", "U=1"] {
            assert!(parse_priority(bad).is_err(), "{bad}");
        }
    }
}
