//! An HTTP/3 server: `GET /anything` answers with a greeting naming the
//! path, `POST` echoes the request body back.
//!
//! ```sh
//! cargo run -p quark-h3 --example h3_server -- 127.0.0.1:4443 /tmp/h3-cert.pem
//! cargo run -p quark-h3 --example h3_client -- 127.0.0.1:4443 /tmp/h3-cert.pem /hello
//! ```
//!
//! The server makes a self-signed certificate for `localhost` and writes it
//! as PEM to the file named on its command line, for the client to trust.
//! For serving a directory, see `quark serve --h3` and [`quark_h3::files`].

use bytes::Bytes;
use http::{Method, Response, StatusCode};
use quark::{Connection, Endpoint, tls};
use quark_h3::RequestStream;

/// Largest request body echoed: a client cannot make the server hold more.
const MAX_BODY: usize = 1 << 20;

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:4443".into());
    let cert_file = args.next().unwrap_or_else(|| "h3-cert.pem".into());

    let identity = tls::Identity::self_signed(&["localhost"])?;
    std::fs::write(&cert_file, identity.cert_pem())?;
    let config = tls::server_config(&identity, &[quark_h3::ALPN])?;
    let server = Endpoint::server(config, addr.parse()?)?;
    println!(
        "HTTP/3 server on {}, certificate in {cert_file}",
        server.local_addr()?
    );

    while let Some(conn) = server.accept().await {
        tokio::spawn(async move {
            if let Err(e) = serve(conn).await {
                eprintln!("connection: {e}");
            }
        });
    }
    Ok(())
}

/// Answer one connection's requests, each in a task of its own.
async fn serve(conn: Connection) -> Result<(), BoxError> {
    // Opens the control stream and sends SETTINGS.
    let mut h3 = quark_h3::Server::new(conn).await?;
    // `accept` hands over each request with its head already read.
    while let Some((req, stream)) = h3.accept().await? {
        println!("{} {}", req.method(), req.uri());
        tokio::spawn(async move {
            if let Err(e) = answer(req.method().clone(), req.uri().path().to_owned(), stream).await
            {
                eprintln!("request: {e}");
            }
        });
    }
    Ok(())
}

async fn answer(method: Method, path: String, mut stream: RequestStream) -> Result<(), BoxError> {
    // Read the body (empty for a GET), refusing more than MAX_BODY.
    let mut body = Vec::new();
    while let Some(piece) = stream.recv_data().await? {
        if body.len() + piece.len() > MAX_BODY {
            let resp = Response::builder()
                .status(StatusCode::PAYLOAD_TOO_LARGE)
                .body(())?;
            stream.send_response(&resp).await?;
            stream.finish()?;
            return Ok(());
        }
        body.extend_from_slice(&piece);
    }

    let (status, reply) = match method {
        Method::GET => (
            StatusCode::OK,
            Bytes::from(format!("hello from quark-h3, you asked for {path}\n")),
        ),
        Method::POST => (StatusCode::OK, Bytes::from(body)),
        _ => (StatusCode::METHOD_NOT_ALLOWED, Bytes::new()),
    };
    let resp = Response::builder()
        .status(status)
        .header("content-type", "text/plain")
        .header("content-length", reply.len())
        .body(())?;
    stream.send_response(&resp).await?;
    if !reply.is_empty() {
        stream.send_data(reply).await?;
    }
    // FIN: the response is complete.
    stream.finish()?;
    Ok(())
}
