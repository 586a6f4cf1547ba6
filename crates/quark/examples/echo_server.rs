//! An echo server: every bidirectional stream gets back what was sent on it.
//!
//! ```sh
//! cargo run -p quark --example echo_server -- 127.0.0.1:4433 /tmp/echo-cert.pem
//! cargo run -p quark --example echo_client -- 127.0.0.1:4433 /tmp/echo-cert.pem hello
//! ```
//!
//! The server makes a self-signed certificate for `localhost` and writes it,
//! as PEM, to the file named on its command line: the client trusts that
//! file and nothing else. Stop the server with Ctrl-C.

use quark::{Connection, Endpoint, tls};

/// The application protocol both ends agree on in the handshake (ALPN).
const ALPN: &[u8] = b"quark-echo";
/// Longest message echoed: a peer cannot make the server buffer more.
const MAX_MESSAGE: usize = 1 << 20;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:4433".into());
    let cert_file = args.next().unwrap_or_else(|| "echo-cert.pem".into());

    let identity = tls::Identity::self_signed(&["localhost"])?;
    std::fs::write(&cert_file, identity.cert_pem())?;
    let server = Endpoint::server(tls::server_config(&identity, &[ALPN])?, addr.parse()?)?;
    println!(
        "echo server on {}, certificate in {cert_file}",
        server.local_addr()?
    );

    // `accept` yields connections whose handshake has completed.
    while let Some(conn) = server.accept().await {
        tokio::spawn(serve(conn));
    }
    Ok(())
}

/// Echo every stream the client opens, each in a task of its own.
async fn serve(conn: Connection) {
    let peer = conn.remote_address();
    while let Ok((mut send, mut recv)) = conn.accept_bi().await {
        tokio::spawn(async move {
            let echo = async {
                let message = recv.read_to_end(MAX_MESSAGE).await?;
                send.write_all(&message).await?;
                send.finish()?;
                println!("{peer}: echoed {} bytes", message.len());
                Ok::<_, BoxError>(())
            };
            if let Err(e) = echo.await {
                eprintln!("{peer}: {e}");
            }
        });
    }
}
