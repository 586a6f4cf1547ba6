//! The send timeout: a connection with data to send that the peer lets make
//! no progress (no new data acknowledged, no credit granted) is closed after
//! `send_timeout`; a slow peer that keeps granting credit, or a connection
//! with nothing to send, is not.

mod common;

use std::time::{Duration, Instant};

use common::{Sim, Tls, payload, seed};
use quark_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, Dir, ReadOutcome, ServerConfig, StreamId,
    TransportConfig, TransportErrorCode,
};

const TIMEOUT: Duration = Duration::from_secs(10);
const WINDOW: u64 = 64 * 1024;

/// A server with a 10 s send timeout; a client with 64 KiB stream and
/// 128 KiB connection windows that keeps the connection alive (PING after
/// 2 s of quiet), as a peer holding it open would.
fn pair(seed: u64) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let tls = Tls::new();
    let mut sc = ServerConfig::new(tls.server_config(None));
    sc.transport = TransportConfig {
        send_timeout: Some(TIMEOUT),
        ..TransportConfig::default()
    }
    .into();
    let mut sim = Sim::new(seed, sc, Default::default());
    sim.set_delay(Duration::from_millis(5));
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = TransportConfig {
        stream_receive_window: WINDOW,
        stream_receive_window_max: WINDOW,
        receive_window: 2 * WINDOW,
        receive_window_max: 2 * WINDOW,
        keep_alive: Some(Duration::from_secs(2)),
        ..TransportConfig::default()
    }
    .into();
    let c = sim.connect_with(cc);
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(100));
    (sim, c, s)
}

/// A client request the server has accepted.
fn request(sim: &mut Sim, c: ConnectionHandle, s: ConnectionHandle) -> StreamId {
    let conn = sim.client.connection_mut(c).unwrap();
    let id = conn.open_stream(Dir::Bi).unwrap();
    conn.write(id, b"GET").unwrap();
    conn.finish(id).unwrap();
    sim.run_until(10_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        conn.accept_stream(Dir::Bi) == Some(id)
    });
    id
}

/// Writes `body` from `at` as far as the server's connection takes it.
fn write_from(sim: &mut Sim, s: ConnectionHandle, id: StreamId, body: &[u8], at: &mut usize) {
    let conn = sim.server.connection_mut(s).unwrap();
    while *at < body.len() {
        let n = conn.write(id, &body[*at..]).unwrap();
        if n == 0 {
            return;
        }
        *at += n;
        if *at == body.len() {
            conn.finish(id).unwrap();
        }
    }
}

/// Runs until the server's connection closes; when it did.
fn run_until_closed(sim: &mut Sim, s: ConnectionHandle, within: Duration) -> Instant {
    let end = sim.now + within;
    sim.run_until(1_000_000, |sim| {
        assert!(sim.now <= end, "not closed within {within:?}");
        sim.server.connection(s).unwrap().is_closed()
    });
    sim.now
}

/// The close the client received from the server.
fn assert_closed_for_no_progress(sim: &mut Sim, c: ConnectionHandle, s: ConnectionHandle) {
    let server = sim.server.connection(s).unwrap();
    assert_eq!(server.error(), Some(&ConnectionError::SendTimedOut));
    sim.run_until(10_000, |sim| sim.client.connection(c).unwrap().is_closed());
    let client = sim.client.connection(c).unwrap();
    assert!(
        matches!(
            client.error(),
            Some(ConnectionError::ConnectionClosed { code, .. }) if *code == TransportErrorCode::NO_ERROR
        ),
        "{:?}",
        client.error()
    );
}

#[test]
fn a_peer_that_stops_granting_credit_is_closed_after_the_send_timeout() {
    let (mut sim, c, s) = pair(seed(140));
    let id = request(&mut sim, c, s);
    let body = payload(1 << 20, 1);
    let mut at = 0;
    // The server fills the client's window; the client acknowledges it all
    // and never reads, so never grants more.
    sim.run_until(100_000, |sim| {
        write_from(sim, s, id, &body, &mut at);
        sim.server.connection(s).unwrap().send_buffered() == 0 && at > 0
    });
    assert_eq!(at as u64, WINDOW, "the stream's window, all written");
    let stalled = sim.now;
    let closed = run_until_closed(&mut sim, s, 3 * TIMEOUT);
    let waited = closed - stalled;
    // Progress stopped with the last acknowledgement, just before `stalled`.
    assert!(
        waited >= TIMEOUT - Duration::from_millis(100)
            && waited <= TIMEOUT + Duration::from_secs(1),
        "closed {waited:?} after the last progress"
    );
    assert_closed_for_no_progress(&mut sim, c, s);
}

#[test]
fn a_peer_that_stops_acknowledging_is_closed_after_the_send_timeout() {
    let (mut sim, c, s) = pair(seed(141));
    let id = request(&mut sim, c, s);
    // From now on nothing reaches the client, so it acknowledges nothing; its
    // PINGs (keep-alive, then probes) still reach the server.
    sim.filter = Some(Box::new(|to_server, _| to_server));
    let body = payload(100_000, 2);
    let mut at = 0;
    write_from(&mut sim, s, id, &body, &mut at);
    assert!(at > 0);
    let written = sim.now;
    let closed = run_until_closed(&mut sim, s, 3 * TIMEOUT);
    let waited = closed - written;
    assert!(
        waited >= TIMEOUT && waited <= TIMEOUT + Duration::from_secs(1),
        "closed {waited:?} after the write"
    );
    assert_eq!(
        sim.server.connection(s).unwrap().error(),
        Some(&ConnectionError::SendTimedOut)
    );
}

#[test]
fn a_slow_peer_that_keeps_granting_credit_is_not_closed() {
    let (mut sim, c, s) = pair(seed(142));
    let id = request(&mut sim, c, s);
    let body = payload(16 * WINDOW as usize, 3);
    let (mut at, mut got, mut done) = (0, Vec::new(), false);
    let start = sim.now;
    // The client reads what arrived every 8 s: the server waits that long
    // for credit each time, under its 10 s timeout.
    while !done {
        let round = sim.now + Duration::from_secs(8);
        while sim.now < round {
            write_from(&mut sim, s, id, &body, &mut at);
            assert!(sim.step());
        }
        let conn = sim.client.connection_mut(c).unwrap();
        let mut buf = [0u8; 16 * 1024];
        loop {
            match conn.read(id, &mut buf).unwrap() {
                ReadOutcome::Data(n) => got.extend_from_slice(&buf[..n]),
                ReadOutcome::Finished => {
                    done = true;
                    break;
                }
                ReadOutcome::Blocked => break,
            }
        }
        assert!(!sim.server.connection(s).unwrap().is_closed());
    }
    assert!(got == body, "body differs");
    // Long past the timeout, many times over.
    assert!(sim.now - start > 10 * TIMEOUT, "{:?}", sim.now - start);
}

#[test]
fn a_connection_with_nothing_to_send_is_not_closed() {
    let (mut sim, c, s) = pair(seed(143));
    // A response delivered and acknowledged.
    let id = request(&mut sim, c, s);
    let body = payload(10_000, 4);
    let mut at = 0;
    write_from(&mut sim, s, id, &body, &mut at);
    assert_eq!(at, body.len());
    // A response blocked for credit, then given up (reset): nothing waits.
    let other = request(&mut sim, c, s);
    let big = payload(1 << 20, 5);
    let mut big_at = 0;
    sim.run_until(100_000, |sim| {
        write_from(sim, s, other, &big, &mut big_at);
        sim.server.connection(s).unwrap().send_buffered() == 0 && big_at > 0
    });
    assert!(big_at < big.len(), "blocked for credit");
    let conn = sim.server.connection_mut(s).unwrap();
    conn.reset_stream(other, 7).unwrap();
    sim.run_for(6 * TIMEOUT);
    assert!(!sim.server.connection(s).unwrap().is_closed());
    assert!(!sim.client.connection(c).unwrap().is_closed());
    let mut got = Vec::new();
    let conn = sim.client.connection_mut(c).unwrap();
    let mut buf = [0u8; 16 * 1024];
    while let ReadOutcome::Data(n) = conn.read(id, &mut buf).unwrap() {
        got.extend_from_slice(&buf[..n]);
    }
    assert!(got == body, "body differs");
}
