//! Tests that look inside the endpoint: what the API keeps per stream must
//! leave with the stream, or a long-lived connection grows without bound; and a
//! driver that stops must not leave the application waiting forever.

use std::net::SocketAddr;
use std::time::Duration;

use quark_proto::{ConnectionError, EndpointConfig};
use quark_udp::Socket;

use crate::tls::{self, Identity, Verify};
use crate::{Connection, Endpoint};

const ALPN: &[u8] = b"test";

/// Per-stream entries the connection's bookkeeping holds now.
fn per_stream_entries(conn: &Connection) -> usize {
    let state = conn.shared.lock();
    let entry = &state.conns[&conn.handle];
    let w = &entry.wakers;
    entry.send_halves.len() + w.readers.len() + w.writers.len() + w.finishers.len()
}

/// A client and a server endpoint (kept alive by the caller) and the two ends
/// of a connection between them.
async fn connected() -> ((Endpoint, Endpoint), Connection, Connection) {
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let server = Endpoint::server(tls::server_config(&id, &[ALPN]).unwrap(), local).unwrap();
    let client = Endpoint::client(local).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let addr = server.local_addr().unwrap();
    let (c, s) = tokio::join!(
        client.connect(config, addr, "localhost").unwrap(),
        server.accept()
    );
    let (c, s) = (c.unwrap(), s.unwrap());
    ((client, server), c, s)
}

#[tokio::test]
async fn finished_streams_leave_no_bookkeeping_behind() {
    let (_endpoints, c, s) = connected().await;
    let echo = {
        let s = s.clone();
        tokio::spawn(async move {
            while let Ok((mut send, mut recv)) = s.accept_bi().await {
                let body = recv.read_to_end(1 << 20).await.unwrap();
                send.write_all(&body).await.unwrap();
                send.finish().unwrap();
                assert_eq!(send.stopped().await.unwrap(), None);
            }
        })
    };
    const STREAMS: usize = 300;
    for i in 0..STREAMS {
        let body = vec![i as u8; 1000 + i];
        let (mut send, mut recv) = c.open_bi().await.unwrap();
        send.write_all(&body).await.unwrap();
        send.finish().unwrap();
        assert_eq!(recv.read_to_end(1 << 20).await.unwrap(), body);
    }
    // The server's last `stopped` resolves once the client's ACK arrives.
    for _ in 0..200 {
        if per_stream_entries(&s) == 0 && per_stream_entries(&c) == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    assert_eq!(
        per_stream_entries(&c),
        0,
        "client keeps entries for dropped streams"
    );
    assert_eq!(
        per_stream_entries(&s),
        0,
        "server keeps entries for dropped streams"
    );
    c.close(0, b"");
    echo.abort();
}

/// A driver that dies (a panic, or its runtime shutting down; here its task is
/// aborted) fails every connection and wakes every waiter instead of leaving
/// them hanging: a worker thread that panicked once hung a whole test run.
/// Stream halves are references to their connection like `Connection`
/// clones: counted when made, given back when dropped, and the last reference
/// of either kind closes the connection (code 0).
#[tokio::test]
async fn the_last_stream_half_dropped_closes_the_connection() {
    let (_endpoints, c, s) = connected().await;
    let refs = |conn: &Connection| conn.shared.lock().conns[&conn.handle].refs;
    let alone = refs(&c);
    let (send, recv) = c.open_bi().await.unwrap();
    assert_eq!(refs(&c), alone + 2);
    drop(recv);
    assert_eq!(refs(&c), alone + 1);
    // Only the send half is left: the connection stays open.
    drop(c);
    let still_open = tokio::time::timeout(Duration::from_millis(200), s.closed()).await;
    assert!(still_open.is_err(), "closed while a stream half was alive");
    drop(send);
    let closed = tokio::time::timeout(Duration::from_secs(5), s.closed())
        .await
        .expect("not closed after the last stream half was dropped");
    assert!(
        matches!(closed, ConnectionError::ApplicationClosed { code: 0, .. }),
        "{closed:?}"
    );
}

#[tokio::test]
async fn a_stopped_driver_wakes_every_waiter() {
    let local: SocketAddr = "127.0.0.1:0".parse().unwrap();
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let server_config = tls::server_config(&id, &[ALPN]).unwrap();
    let socket = Socket::bind(local).unwrap();
    let (server, driver) =
        Endpoint::start(EndpointConfig::default(), Some(server_config), socket, None);
    let client = Endpoint::client(local).unwrap();
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let addr = server.local_addr().unwrap();
    let (c, s) = tokio::join!(
        client.connect(config.clone(), addr, "localhost").unwrap(),
        server.accept()
    );
    let (_c, s) = (c.unwrap(), s.unwrap());
    let streams = tokio::spawn({
        let s = s.clone();
        async move { s.accept_bi().await.map(|_| ()) }
    });
    let accepting = tokio::spawn({
        let server = server.clone();
        async move { server.accept().await.is_some() }
    });
    let idle = tokio::spawn({
        let server = server.clone();
        async move { server.wait_idle().await }
    });
    tokio::time::sleep(Duration::from_millis(20)).await;
    assert!(!streams.is_finished() && !accepting.is_finished() && !idle.is_finished());

    driver.abort();
    let limit = Duration::from_secs(10);
    let stream = tokio::time::timeout(limit, streams).await.unwrap().unwrap();
    assert_eq!(stream.unwrap_err(), ConnectionError::DriverStopped);
    assert!(
        !tokio::time::timeout(limit, accepting)
            .await
            .unwrap()
            .unwrap()
    );
    tokio::time::timeout(limit, idle).await.unwrap().unwrap();
    let opened = s.open_bi().await.map(|_| ());
    assert_eq!(opened.unwrap_err(), ConnectionError::DriverStopped);
    let connecting = server.connect(config, addr, "localhost").unwrap();
    let failed = tokio::time::timeout(limit, connecting).await.unwrap();
    assert_eq!(failed.unwrap_err(), ConnectionError::DriverStopped);
}

/// A bulk receiver's driver does not wait past every task after each receive:
/// the reader it woke took the data and waits for more (nothing to answer),
/// so the acknowledgments go out at once. Waiting past all costs a round of
/// the runtime, an `epoll_wait`, per receive.
#[tokio::test]
async fn a_reader_that_waits_again_is_not_waited_for() {
    let (_endpoints, c, s) = connected().await;
    const LEN: usize = 20 << 20;
    let body: Vec<u8> = (0..LEN).map(|i| (i % 251) as u8).collect();
    let sender = tokio::spawn({
        let body = body.clone();
        async move {
            let mut send = s.open_uni().await.unwrap();
            send.write_all(&body).await.unwrap();
            send.finish().unwrap();
            send.stopped().await.unwrap();
        }
    });
    let mut recv = c.accept_uni().await.unwrap();
    let before = {
        let state = c.shared.lock();
        (state.deferrals, state.deferrals_past_all)
    };
    // The reader runs in a task of its own, as a server's or the lab's do.
    let got = tokio::spawn(async move { recv.read_to_end(LEN).await.unwrap() })
        .await
        .unwrap();
    assert!(got == body, "received data differs");
    sender.await.unwrap();
    let (deferrals, past_all) = {
        let state = c.shared.lock();
        (
            state.deferrals - before.0,
            state.deferrals_past_all - before.1,
        )
    };
    // Every receive woke the reader; at most the last (FIN: the reader
    // finishes instead of waiting again) waits past all.
    assert!(deferrals >= 10, "{deferrals} deferrals");
    assert!(
        past_all <= 2,
        "{past_all} of {deferrals} waited past all tasks"
    );
}
