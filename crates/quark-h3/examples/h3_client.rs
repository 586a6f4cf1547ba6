//! An HTTP/3 client: GETs a path, or POSTs a body when one is given, and
//! prints the response. Start `h3_server` first (see its header).
//!
//! ```sh
//! cargo run -p quark-h3 --example h3_client -- 127.0.0.1:4443 /tmp/h3-cert.pem /hello
//! cargo run -p quark-h3 --example h3_client -- 127.0.0.1:4443 /tmp/h3-cert.pem /echo 'some body'
//! ```
//!
//! For downloading files to disk, see `quark get --h3` and
//! [`quark_h3::files::fetch`].

use bytes::Bytes;
use http::Request;
use quark::{Endpoint, tls};

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let mut args = std::env::args().skip(1);
    let addr = args.next().unwrap_or_else(|| "127.0.0.1:4443".into());
    let cert_file = args.next().unwrap_or_else(|| "h3-cert.pem".into());
    let path = args.next().unwrap_or_else(|| "/".into());
    let body = args.next();

    let config = tls::client_config(tls::Verify::CaFile(cert_file.into()), &[quark_h3::ALPN])?;
    let endpoint = Endpoint::client("127.0.0.1:0".parse()?)?;
    let conn = endpoint
        .connect(config, addr.parse()?, "localhost")?
        .await?;
    let client = quark_h3::Client::new(conn).await?;

    // The URI's authority becomes `:authority`, its path `:path`.
    let uri = format!("https://localhost{path}");
    let req = match &body {
        Some(_) => Request::post(uri).body(())?,
        None => Request::get(uri).body(())?,
    };
    let mut stream = client.send_request(&req).await?;
    if let Some(body) = body {
        stream.send_data(Bytes::from(body)).await?;
    }
    // FIN on the request stream: the request is complete.
    stream.finish()?;

    let resp = stream.recv_response().await?;
    println!("{:?} {}", resp.version(), resp.status());
    for (name, value) in resp.headers() {
        println!("{name}: {}", value.to_str().unwrap_or("<binary>"));
    }
    println!();
    while let Some(piece) = stream.recv_data().await? {
        print!("{}", String::from_utf8_lossy(&piece));
    }
    println!();

    client.connection().close(0x100, b""); // H3_NO_ERROR
    endpoint.wait_idle().await;
    Ok(())
}
