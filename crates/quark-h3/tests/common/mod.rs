//! Shared by the HTTP/3 tests: endpoints of quark and quinn on loopback, a
//! quark-h3 server with two routes, and payloads checked by SHA-256.
//!
//! Routes: `GET /bytes/<n>` answers `n` deterministic bytes (content-length
//! set); `POST /echo` answers the request body, with its SHA-256 as the trailer
//! `x-sha256`.

#![allow(dead_code)]

pub(crate) mod peers;

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http::{Request, Response};
use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint};
use sha2::{Digest, Sha256};

pub(crate) const ALPN: &[u8] = quark_h3::ALPN;

/// Deterministic bytes for a body of `len` (xorshift from `seed`).
pub(crate) fn data(len: usize, seed: u32) -> Bytes {
    let mut out = Vec::with_capacity(len + 4);
    let mut x = seed | 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
    out.into()
}

pub(crate) fn sha(b: &[u8]) -> String {
    Sha256::digest(b)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The rest of a response's body, read to its end.
pub(crate) async fn body_of(s: &mut quark_h3::RequestStream) -> Vec<u8> {
    let mut body = Vec::new();
    while let Some(chunk) = s.recv_data().await.unwrap() {
        body.extend_from_slice(&chunk);
    }
    body
}

/// Sends `req` with no body and returns the response head and the stream
/// (for the body and trailers).
pub(crate) async fn exchange(
    client: &quark_h3::Client,
    req: &Request<()>,
) -> (Response<()>, quark_h3::RequestStream) {
    let mut s = client.send_request(req).await.unwrap();
    s.finish().unwrap();
    let resp = s.recv_response().await.unwrap();
    (resp, s)
}

/// `POST /echo` of `body` on `client`, sent in pieces of `piece` bytes (with a
/// content-length when `with_length`): status 200, the same body back and its
/// SHA-256 as the trailer, each checked.
pub(crate) async fn echo(client: &quark_h3::Client, body: &Bytes, piece: usize, with_length: bool) {
    let mut req = Request::post("https://localhost/echo");
    if with_length {
        req = req.header("content-length", body.len());
    }
    let mut s = client.send_request(&req.body(()).unwrap()).await.unwrap();
    for p in body.chunks(piece.max(1)) {
        s.send_data(body.slice_ref(p)).await.unwrap();
    }
    s.finish().unwrap();
    assert_eq!(s.recv_response().await.unwrap().status(), 200, "POST /echo");
    let got = body_of(&mut s).await;
    assert_eq!(sha(&got), sha(body), "POST /echo");
    let trailers = s.trailers().expect("POST /echo: no trailers");
    assert_eq!(trailers["x-sha256"], sha(body).as_str(), "POST /echo");
}

/// `GET /bytes/<n>` on `client`: status 200, content-length `n`, and the body
/// checked by SHA-256.
pub(crate) async fn get_bytes(client: &quark_h3::Client, n: usize) {
    let req = Request::get(format!("https://localhost/bytes/{n}"))
        .body(())
        .unwrap();
    let (resp, mut s) = exchange(client, &req).await;
    assert_eq!(resp.status(), 200, "GET /bytes/{n}");
    assert_eq!(resp.headers()["content-length"], n.to_string().as_str());
    let body = body_of(&mut s).await;
    assert_eq!(sha(&body), sha(&data(n, n as u32)), "GET /bytes/{n}");
}

/// A quark server endpoint on loopback and its identity.
pub(crate) fn quark_server() -> (Endpoint, Identity) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let config = tls::server_config(&id, &[ALPN]).unwrap();
    let server = Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap();
    (server, id)
}

/// A quark client connection to `addr`, trusting `id`.
pub(crate) async fn quark_connect(addr: SocketAddr, id: &Identity) -> Connection {
    let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    client
        .connect(config, addr, "localhost")
        .unwrap()
        .await
        .unwrap()
}

/// The tests' HTTP/3 settings: QPACK's dynamic table on (4096 bytes, 16
/// blocked streams), so every test exercises it.
pub(crate) fn h3_config() -> quark_h3::Config {
    quark_h3::Config::dynamic_qpack()
}

/// A quark-h3 client on a fresh quark connection to `addr`, trusting `id`.
pub(crate) async fn quark_h3_client(addr: SocketAddr, id: &Identity) -> quark_h3::Client {
    quark_h3::Client::with_config(quark_connect(addr, id).await, &h3_config())
        .await
        .unwrap()
}

/// A server that answers each request stream with `answer`, in a task of
/// its own.
pub(crate) fn spawn_stream_server<F, Fut>(server: &Endpoint, config: quark_h3::Config, answer: F)
where
    F: Fn(quark_h3::RequestStream) -> Fut + Copy + Send + Sync + 'static,
    Fut: std::future::Future<Output = Result<(), quark_h3::Error>> + Send + 'static,
{
    let server = server.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                let h3 = quark_h3::Server::with_config(conn, &config).await.unwrap();
                while let Ok(Some(stream)) = h3.accept_stream().await {
                    tokio::spawn(answer(stream));
                }
            });
        }
    });
}

/// Serves every connection `server` accepts with quark-h3 and the two routes.
pub(crate) fn spawn_quark_h3_server(server: &Endpoint) {
    spawn_quark_h3_server_stats(server);
}

/// QPACK insert counts of each connection served (as
/// `Server::qpack_inserts`), recorded when it ends.
pub(crate) type QpackStats = Arc<std::sync::Mutex<Vec<(u64, u64, u64)>>>;

/// [`spawn_quark_h3_server`], recording each connection's QPACK inserts.
pub(crate) fn spawn_quark_h3_server_stats(server: &Endpoint) -> QpackStats {
    let stats = QpackStats::default();
    let server = server.clone();
    let recorded = stats.clone();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            let recorded = recorded.clone();
            tokio::spawn(async move {
                let mut h3 = quark_h3::Server::with_config(conn, &h3_config())
                    .await
                    .unwrap();
                while let Ok(Some((req, stream))) = h3.accept().await {
                    tokio::spawn(async move {
                        let _ = answer(req, stream).await;
                    });
                }
                recorded.lock().unwrap().push(h3.qpack_inserts());
            });
        }
    });
    stats
}

/// Answers one request. What the peer does wrong (a reset, a stopped stream)
/// ends it with an error, not a panic: tests count panics as bugs.
async fn answer(
    req: Request<()>,
    mut stream: quark_h3::RequestStream,
) -> Result<(), quark_h3::Error> {
    let path = req.uri().path().to_string();
    if let Some(n) = path.strip_prefix("/bytes/") {
        let n: usize = n.parse().unwrap_or(0);
        let resp = Response::builder()
            .header("content-length", n)
            .body(())
            .unwrap();
        stream.send_response(&resp).await?;
        let body = data(n, n as u32);
        for piece in body.chunks(64 * 1024) {
            stream.send_data(body.slice_ref(piece)).await?;
        }
        stream.finish()
    } else if path == "/echo" {
        let body = body_of_checked(&mut stream).await?;
        stream.send_response(&Response::new(())).await?;
        stream.send_data(body.clone().into()).await?;
        let mut trailers = http::HeaderMap::new();
        trailers.insert("x-sha256", sha(&body).parse().unwrap());
        stream.send_trailers(&trailers).await
    } else {
        let resp = Response::builder().status(404).body(()).unwrap();
        stream.send_response(&resp).await?;
        stream.finish()
    }
}

async fn body_of_checked(s: &mut quark_h3::RequestStream) -> Result<Vec<u8>, quark_h3::Error> {
    let mut body = Vec::new();
    while let Some(chunk) = s.recv_data().await? {
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// A rustls provider with ring, for quinn's configurations.
fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A quinn server endpoint on loopback speaking h3.
pub(crate) fn quinn_server(id: &Identity) -> quinn::Endpoint {
    let mut tls = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(id.chain.clone(), id.key.clone_key())
        .unwrap();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    quinn::Endpoint::server(config, "127.0.0.1:0".parse().unwrap()).unwrap()
}

/// A quinn client connection to `addr` speaking h3, trusting `id`.
pub(crate) async fn quinn_connect(addr: SocketAddr, id: &Identity) -> quinn::Connection {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(id.cert.clone()).unwrap();
    let mut tls = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let mut endpoint = quinn::Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
    endpoint.set_default_client_config(quinn::ClientConfig::new(Arc::new(crypto)));
    endpoint.connect(addr, "localhost").unwrap().await.unwrap()
}
