//! 0-RTT between quark and quinn, in one process over loopback: a quark
//! client resumes against a quinn server that accepts early data, and a
//! quinn client resumes against a quark server with 0-RTT on. Each echoes a
//! request sent before the handshake completed, compared byte for byte.

use std::net::SocketAddr;
use std::sync::Arc;

use quark::tls::{self, Identity, Verify};

const ALPN: &[u8] = b"hq-interop";

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

fn body() -> Vec<u8> {
    (0..5000u32).map(|i| (i * 11 + 1) as u8).collect()
}

fn ring() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A quinn server accepting 0-RTT that echoes every stream.
fn quinn_server(id: &Identity) -> SocketAddr {
    let mut tls = rustls::ServerConfig::builder_with_provider(ring())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(id.chain.clone(), id.key.clone_key())
        .unwrap();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.max_early_data_size = u32::MAX;
    let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(tls).unwrap();
    let config = quinn::ServerConfig::with_crypto(Arc::new(crypto));
    let endpoint = quinn::Endpoint::server(config, localhost()).unwrap();
    let addr = endpoint.local_addr().unwrap();
    tokio::spawn(async move {
        while let Some(incoming) = endpoint.accept().await {
            tokio::spawn(async move {
                let Ok(conn) = incoming.await else { return };
                while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                    let request = recv.read_to_end(1 << 20).await.unwrap();
                    send.write_all(&request).await.unwrap();
                    send.finish().unwrap();
                }
            });
        }
    });
    addr
}

#[tokio::test]
async fn quark_client_0rtt_to_quinn_server() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let addr = quinn_server(&id);
    let client = quark::Endpoint::client(localhost()).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN])
        .unwrap()
        .with_0rtt();
    let first = client
        .connect(config.clone(), addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = first.open_bi().await.unwrap();
    send.write_all(b"ticket").await.unwrap();
    send.finish().unwrap();
    assert_eq!(recv.read_to_end(1 << 20).await.unwrap(), b"ticket");

    let Ok(conn) = client
        .connect(config, addr, "localhost")
        .unwrap()
        .into_0rtt()
    else {
        panic!("no 0-RTT with quinn's ticket");
    };
    let body = body();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&body).await.unwrap();
    send.finish().unwrap();
    assert!(conn.handshake().await.unwrap(), "quinn rejected 0-RTT");
    assert_eq!(recv.read_to_end(1 << 20).await.unwrap(), body);
}

#[tokio::test]
async fn quinn_client_0rtt_to_quark_server() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let server_config = tls::server_config(&id, &[ALPN]).unwrap().with_0rtt(64);
    let server = quark::Endpoint::server(server_config, localhost()).unwrap();
    let addr = server.local_addr().unwrap();
    tokio::spawn(async move {
        while let Some(conn) = server.accept().await {
            tokio::spawn(async move {
                while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                    let request = recv.read_to_end(1 << 20).await.unwrap();
                    send.write_all(&request).await.unwrap();
                    send.finish().unwrap();
                }
            });
        }
    });

    let mut roots = rustls::RootCertStore::empty();
    roots.add(id.cert.clone()).unwrap();
    let mut tls = rustls::ClientConfig::builder_with_provider(ring())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    tls.alpn_protocols = vec![ALPN.to_vec()];
    tls.enable_early_data = true;
    let crypto = quinn::crypto::rustls::QuicClientConfig::try_from(tls).unwrap();
    let config = quinn::ClientConfig::new(Arc::new(crypto));
    let client = quinn::Endpoint::client(localhost()).unwrap();

    let first = client
        .connect_with(config.clone(), addr, "localhost")
        .unwrap()
        .await
        .unwrap();
    let (mut send, mut recv) = first.open_bi().await.unwrap();
    send.write_all(b"ticket").await.unwrap();
    send.finish().unwrap();
    assert_eq!(recv.read_to_end(1 << 20).await.unwrap(), b"ticket");

    let connecting = client.connect_with(config, addr, "localhost").unwrap();
    let Ok((conn, accepted)) = connecting.into_0rtt() else {
        panic!("no 0-RTT with quark's ticket");
    };
    let body = body();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(&body).await.unwrap();
    send.finish().unwrap();
    assert!(accepted.await, "quark rejected 0-RTT");
    assert_eq!(recv.read_to_end(1 << 20).await.unwrap(), body);
}
