//! Download a file over hq-interop (HTTP/0.9 over QUIC, the QUIC interop
//! community's file protocol) and print its SHA-256.
//!
//! Against `quark serve` (any hq-interop server works):
//!
//! ```sh
//! quark serve --root ./www --listen 127.0.0.1:4433 --write-cert /tmp/serve.pem
//! cargo run -p quark --example download -- 127.0.0.1:4433 /index.html /tmp/serve.pem
//! ```
//!
//! With no arguments it serves a generated 8 MiB file itself, on a port of
//! its own, and checks that the digest it prints is the file's.

use std::path::PathBuf;

use quark::{Endpoint, ReadError, hq, tls};
use sha2::{Digest, Sha256};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.as_slice() {
        [] => demo().await,
        [addr, path] => download(addr, path, tls::Verify::Insecure).await.map(drop),
        [addr, path, ca] => download(addr, path, tls::Verify::CaFile(ca.into()))
            .await
            .map(drop),
        _ => Err("usage: download [ADDR PATH [CA_FILE]]".into()),
    }
}

/// GET `path` from `addr`; returns the body's SHA-256 in hex.
async fn download(addr: &str, path: &str, verify: tls::Verify) -> Result<String, BoxError> {
    if matches!(verify, tls::Verify::Insecure) {
        eprintln!("no CA file given: the server's certificate is not verified");
    }
    let config = tls::client_config(verify, &[hq::ALPN])?;
    let client = Endpoint::client("0.0.0.0:0".parse()?)?;
    let conn = client.connect(config, addr.parse()?, "localhost")?.await?;

    // hq-interop: one request per bidirectional stream, the request line
    // then FIN; the answer is the file's bytes then FIN (or a stream reset
    // with 0x404 and the like when there is no such file).
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(format!("GET {path}\r\n").as_bytes()).await?;
    send.finish()?;

    // Hash the body as it arrives; `read_visit` lends the received bytes
    // in place, without a copy.
    let mut hasher = Sha256::new();
    let mut total = 0u64;
    let started = std::time::Instant::now();
    loop {
        match recv
            .read_visit(usize::MAX, |piece| hasher.update(piece))
            .await
        {
            Ok(Some(n)) => total += n as u64,
            Ok(None) => break,
            // hq-interop has no status line: errors come as stream resets.
            Err(ReadError::Reset(hq::NOT_FOUND)) => return Err(format!("{path}: not found").into()),
            Err(e) => return Err(format!("{path}: {e}").into()),
        }
    }
    let secs = started.elapsed().as_secs_f64();
    let digest = hex::encode(hasher.finalize());
    println!("{digest}  {path}");
    println!(
        "{total} bytes in {secs:.3} s ({:.1} Mbit/s)",
        total as f64 * 8.0 / secs / 1e6
    );

    conn.close(0, b"");
    client.wait_idle().await;
    Ok(digest)
}

/// Serve a generated file with `quark::hq` and download it.
async fn demo() -> Result<(), BoxError> {
    let root = std::env::temp_dir().join(format!("quark-download-{}", std::process::id()));
    std::fs::create_dir_all(&root)?;
    let body: Vec<u8> = (0..8u32 << 20)
        .map(|i| (i.wrapping_mul(31) >> 3) as u8)
        .collect();
    std::fs::write(root.join("file.bin"), &body)?;
    let expected = hex::encode(Sha256::digest(&body));

    let identity = tls::Identity::self_signed(&["localhost"])?;
    let ca: PathBuf = root.join("cert.pem");
    std::fs::write(&ca, identity.cert_pem())?;
    let server = Endpoint::server(
        tls::server_config(&identity, &[hq::ALPN])?,
        "127.0.0.1:0".parse()?,
    )?;
    let addr = server.local_addr()?.to_string();
    let files = root.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(hq::serve_connection(conn, files.clone()));
        }
    });

    let got = download(&addr, "/file.bin", tls::Verify::CaFile(ca)).await;
    std::fs::remove_dir_all(&root)?;
    if got? != expected {
        return Err("the downloaded file's digest differs from the served one".into());
    }
    println!("digest matches the served file");
    Ok(())
}
