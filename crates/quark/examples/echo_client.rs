//! An echo client: sends each message on a stream of its own and checks that
//! the same bytes come back. Start `echo_server` first (see its header).
//!
//! ```sh
//! cargo run -p quark --example echo_client -- 127.0.0.1:4433 /tmp/echo-cert.pem hello world
//! ```

use quark::{Endpoint, tls};

/// Must match the server's.
const ALPN: &[u8] = b"quark-echo";
const MAX_MESSAGE: usize = 1 << 20;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:4433".into());
    let cert_file = args.next().unwrap_or_else(|| "echo-cert.pem".into());
    let mut messages: Vec<String> = args.collect();
    if messages.is_empty() {
        messages.push("hello, quark".into());
    }

    // Trust only the server's own certificate, written by echo_server.
    let config = tls::client_config(tls::Verify::CaFile(cert_file.into()), &[ALPN])?;
    let client = Endpoint::client("127.0.0.1:0".parse()?)?;
    let conn = client.connect(config, addr.parse()?, "localhost")?.await?;
    println!(
        "connected to {} ({})",
        conn.remote_address(),
        conn.cipher_suite().unwrap_or_default()
    );

    for message in &messages {
        // One bidirectional stream per message; `finish` sends the FIN the
        // server waits for before it answers.
        let (mut send, mut recv) = conn.open_bi().await?;
        send.write_all(message.as_bytes()).await?;
        send.finish()?;
        let reply = recv.read_to_end(MAX_MESSAGE).await?;
        if reply != message.as_bytes() {
            return Err(format!("echo differs for {message:?}").into());
        }
        println!("echoed: {}", String::from_utf8_lossy(&reply));
    }

    println!("rtt {:?}", conn.rtt());
    conn.close(0, b"done");
    // Let the CONNECTION_CLOSE leave before the runtime stops.
    client.wait_idle().await;
    Ok(())
}
