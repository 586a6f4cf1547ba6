//! A fleet's shared keys: a session ticket one instance issued resumes on
//! another, and a Retry token one instance minted is accepted by another,
//! when both load the same key file; with different keys neither works.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use quark::fleet::KeyFile;
use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint, EndpointConfig};
use tokio::net::UdpSocket;

const ALPN: &[u8] = b"test";

fn localhost() -> SocketAddr {
    "127.0.0.1:0".parse().unwrap()
}

/// One instance of the fleet: same certificate, the keys of `keys`; echoes
/// every stream.
fn instance(id: &Identity, keys: &KeyFile, retry: bool) -> Endpoint {
    let mut server = tls::server_config(id, &[ALPN]).unwrap();
    server.retry = retry;
    let mut endpoint = EndpointConfig::default();
    keys.apply(&mut endpoint, &mut server);
    let ep = Endpoint::with_config(endpoint, Some(server), localhost()).unwrap();
    let accept = ep.clone();
    tokio::spawn(async move {
        while let Some(conn) = accept.accept().await {
            tokio::spawn(async move {
                let resumed = conn.is_resumed();
                while let Ok((mut send, mut recv)) = conn.accept_bi().await {
                    let mut body = recv.read_to_end(1 << 20).await.unwrap();
                    // The server's view of resumption travels back in the echo.
                    body.push(u8::from(resumed));
                    send.write_all(&body).await.unwrap();
                    send.finish().unwrap();
                }
            });
        }
    });
    ep
}

/// Sends `body`, returns the echo and the server's resumed flag.
async fn echo(conn: &Connection, body: &[u8]) -> (Vec<u8>, bool) {
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    send.write_all(body).await.unwrap();
    send.finish().unwrap();
    let mut back = recv.read_to_end(1 << 20).await.unwrap();
    let resumed = back.pop() == Some(1);
    (back, resumed)
}

fn body() -> Vec<u8> {
    (0..50_000u32).map(|i| (i * 31 + 7) as u8).collect()
}

fn keys() -> KeyFile {
    KeyFile::parse(&KeyFile::generate()).unwrap()
}

/// A ticket from `a` presented to `b`: (client saw resumption, `b` saw it).
async fn ticket_across(same_keys: bool) -> (bool, bool) {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let shared = keys();
    let a = instance(&id, &shared, false);
    let b = instance(&id, &if same_keys { shared } else { keys() }, false);
    let client = Endpoint::client(localhost()).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let first = client
        .connect(config.clone(), a.local_addr().unwrap(), "localhost")
        .unwrap()
        .await
        .unwrap();
    // The echo comes after the server's NewSessionTicket: the client has it.
    let (back, resumed) = echo(&first, &body()).await;
    assert_eq!(back, body());
    assert!(!resumed && !first.is_resumed());
    first.close(0, b"");
    let second = client
        .connect(config, b.local_addr().unwrap(), "localhost")
        .unwrap()
        .await
        .unwrap();
    let (back, server_resumed) = echo(&second, &body()).await;
    assert_eq!(back, body(), "transfer after the resumed handshake");
    (second.is_resumed(), server_resumed)
}

#[tokio::test]
async fn ticket_from_one_instance_resumes_on_another() {
    assert_eq!(ticket_across(true).await, (true, true));
}

#[tokio::test]
async fn ticket_is_refused_without_the_shared_key() {
    assert_eq!(ticket_across(false).await, (false, false));
}

/// A relay in front of two instances: the client's first datagram goes to
/// `first`, every later one to `then`; replies go back to the client. So the
/// Retry comes from `first` and the Initial with its token reaches `then`.
async fn split_relay(first: SocketAddr, then: SocketAddr) -> (SocketAddr, Arc<AtomicUsize>) {
    let front = UdpSocket::bind(localhost()).await.unwrap();
    let back = UdpSocket::bind(localhost()).await.unwrap();
    let addr = front.local_addr().unwrap();
    let to_then = Arc::new(AtomicUsize::new(0));
    let counter = to_then.clone();
    tokio::spawn(async move {
        let (mut client, mut sent) = (None, 0usize);
        let (mut a, mut b) = (vec![0u8; 65536], vec![0u8; 65536]);
        loop {
            tokio::select! {
                Ok((n, from)) = front.recv_from(&mut a) => {
                    client = Some(from);
                    let to = if sent == 0 { first } else { then };
                    if sent > 0 {
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                    sent += 1;
                    let _ = back.send_to(&a[..n], to).await;
                }
                Ok((n, _)) = back.recv_from(&mut b) => {
                    if let Some(c) = client {
                        let _ = front.send_to(&b[..n], c).await;
                    }
                }
            }
        }
    });
    (addr, to_then)
}

/// Connects through [`split_relay`] to two Retry-demanding instances.
async fn retry_across(same_keys: bool) -> Result<(), String> {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let shared = keys();
    let a = instance(&id, &shared, true);
    let b = instance(&id, &if same_keys { shared } else { keys() }, true);
    let (relay, to_b) = split_relay(a.local_addr().unwrap(), b.local_addr().unwrap()).await;
    let client = Endpoint::client(localhost()).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let connecting = client.connect(config, relay, "localhost").unwrap();
    let conn = tokio::time::timeout(Duration::from_secs(2), connecting)
        .await
        .map_err(|_| "handshake timed out".to_string())?
        .map_err(|e| e.to_string())?;
    let (back, _) = echo(&conn, &body()).await;
    assert_eq!(back, body());
    assert!(to_b.load(Ordering::Relaxed) > 0);
    // Only `b` holds the connection: `a` sent the Retry and kept nothing.
    assert_eq!(a.connection_count(), 0);
    assert_eq!(b.connection_count(), 1);
    Ok(())
}

#[tokio::test]
async fn retry_token_from_one_instance_is_accepted_by_another() {
    retry_across(true).await.unwrap();
}

#[tokio::test]
async fn retry_token_is_refused_without_the_shared_key() {
    assert!(retry_across(false).await.is_err());
}
