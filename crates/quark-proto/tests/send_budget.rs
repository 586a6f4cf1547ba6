//! The connection's send budget: what all streams' send buffers hold together
//! stays within it however many streams write, and every stream gets its turn
//! as room comes back; room reserved for a stream is kept for it.

mod common;

use std::time::Duration;

use common::{Sim, Tls, payload, seed};
use quark_proto::{
    ClientConfig, Connection, ConnectionHandle, Dir, ReadOutcome, ServerConfig, StreamId,
    TransportConfig,
};

/// A client and server with these transports, 10 ms apart, handshake done.
pub fn pair(
    seed: u64,
    client: TransportConfig,
    server: TransportConfig,
) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let tls = Tls::new();
    let mut sc = ServerConfig::new(tls.server_config(None));
    sc.transport = server.into();
    let mut sim = Sim::new(seed, sc, Default::default());
    sim.set_delay(Duration::from_millis(5));
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = client.into();
    let c = sim.connect_with(cc);
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(100));
    (sim, c, s)
}

/// Opens `n` client streams with a one-byte request each and returns them
/// once the server has accepted them all.
fn requests(sim: &mut Sim, c: ConnectionHandle, s: ConnectionHandle, n: usize) -> Vec<StreamId> {
    let conn = sim.client.connection_mut(c).unwrap();
    let ids: Vec<StreamId> = (0..n)
        .map(|_| {
            let id = conn.open_stream(Dir::Bi).unwrap();
            assert_eq!(conn.write(id, b"?").unwrap(), 1);
            conn.finish(id).unwrap();
            id
        })
        .collect();
    let mut accepted = 0;
    sim.run_until(100_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        while conn.accept_stream(Dir::Bi).is_some() {
            accepted += 1;
        }
        accepted == n
    });
    ids
}

/// The server's responses: each stream's body, written as far as the
/// connection accepts.
struct Responses {
    ids: Vec<StreamId>,
    bodies: Vec<Vec<u8>>,
    written: Vec<usize>,
}

impl Responses {
    fn new(ids: Vec<StreamId>, len: usize) -> Self {
        let bodies = (0..ids.len()).map(|i| payload(len, i as u8)).collect();
        let written = vec![0; ids.len()];
        Responses {
            ids,
            bodies,
            written,
        }
    }

    /// Writes every stream as much as it takes, in 16 KiB pieces, finishing
    /// each after its last byte.
    fn pump(&mut self, conn: &mut Connection) {
        for (i, &id) in self.ids.iter().enumerate() {
            let body = &self.bodies[i];
            while self.written[i] < body.len() {
                let end = (self.written[i] + 16 * 1024).min(body.len());
                let n = conn.write(id, &body[self.written[i]..end]).unwrap();
                if n == 0 {
                    break;
                }
                self.written[i] += n;
                if self.written[i] == body.len() {
                    conn.finish(id).unwrap();
                }
            }
        }
    }

    fn total(&self) -> usize {
        self.written.iter().sum()
    }
}

/// Reads everything that arrived on `ids` into `into`; whether all ended.
fn read_all(conn: &mut Connection, ids: &[StreamId], into: &mut [Vec<u8>], done: &mut [bool]) {
    let mut buf = [0u8; 16 * 1024];
    for (i, &id) in ids.iter().enumerate() {
        while !done[i] {
            match conn.read(id, &mut buf).unwrap() {
                ReadOutcome::Data(n) => into[i].extend_from_slice(&buf[..n]),
                ReadOutcome::Finished => done[i] = true,
                ReadOutcome::Blocked => break,
            }
        }
    }
}

#[test]
fn many_streams_hold_no_more_than_the_budget_and_all_get_their_turn() {
    const STREAMS: usize = 256;
    const WINDOW: u64 = 1 << 20;
    const BODY: usize = 32 * 1024;
    // The client grants 1 MiB for the whole connection and never more until
    // it reads.
    let client = TransportConfig {
        receive_window: WINDOW,
        receive_window_max: WINDOW,
        ..TransportConfig::default()
    };
    let (mut sim, c, s) = pair(seed(130), client, TransportConfig::default());
    let ids = requests(&mut sim, c, s, STREAMS);
    let mut responses = Responses::new(ids.clone(), BODY);
    let mut most_held = 0;
    let mut bound_by_budget = false;
    // Phase 1: the client reads nothing; the server writes all it can.
    sim.run_until(100_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        responses.pump(conn);
        let (held, budget) = (conn.send_buffered(), conn.send_budget());
        assert!(held <= budget, "{held} bytes held, budget {budget}");
        most_held = most_held.max(held);
        // Every stream refused, credit left: the budget is what stops them.
        if (responses.total() as u64) < WINDOW && held + 16 * 1024 > budget {
            bound_by_budget = true;
        }
        responses.total() as u64 == WINDOW && held == 0
    });
    assert!(bound_by_budget, "the budget never limited the writes");
    assert!(most_held > 0);
    eprintln!("at most {most_held} bytes held across {STREAMS} streams");
    // Phase 2: the client reads; every stream completes, byte for byte.
    let mut got = vec![Vec::new(); STREAMS];
    let mut done = vec![false; STREAMS];
    sim.run_until(1_000_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        responses.pump(conn);
        let (held, budget) = (conn.send_buffered(), conn.send_budget());
        assert!(held <= budget, "{held} bytes held, budget {budget}");
        let conn = sim.client.connection_mut(c).unwrap();
        read_all(conn, &ids, &mut got, &mut done);
        done.iter().all(|&d| d)
    });
    for (i, body) in got.iter().enumerate() {
        assert!(body == &responses.bodies[i], "stream {i}: body differs");
    }
}

#[test]
fn room_reserved_for_a_stream_is_kept_for_it() {
    const BUDGET: usize = 64 * 1024;
    let server = TransportConfig {
        send_budget: BUDGET,
        send_budget_max: BUDGET,
        ..TransportConfig::default()
    };
    let (mut sim, c, s) = pair(seed(131), TransportConfig::default(), server);
    let ids = requests(&mut sim, c, s, 2);
    let (a, b) = (ids[0], ids[1]);
    let body_a = payload(BUDGET, 1);
    let body_b = payload(1000, 2);
    let conn = sim.server.connection_mut(s).unwrap();
    assert_eq!(conn.reserve(a, usize::MAX).unwrap(), BUDGET);
    assert_eq!(conn.send_buffered(), BUDGET, "the reservation counts");
    assert!(!conn.is_writable(b));
    assert_eq!(conn.write(b, &body_b).unwrap(), 0, "the room is a's");
    assert_eq!(conn.write(a, &body_a).unwrap(), BUDGET);
    conn.finish(a).unwrap();
    // Acknowledgements free the budget and wake b.
    let mut woken = false;
    sim.run_until(10_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        while let Some(e) = conn.poll_event() {
            woken |= e == quark_proto::Event::Stream(quark_proto::StreamEvent::Writable(b));
        }
        woken
    });
    sim.run_until(10_000, |sim| {
        sim.server.connection(s).unwrap().send_buffered() == 0
    });
    let conn = sim.server.connection_mut(s).unwrap();
    // A reservation returns to the budget when its stream is finished.
    assert_eq!(conn.reserve(b, 500).unwrap(), 500);
    let stream = conn.open_stream(Dir::Uni).unwrap();
    assert_eq!(conn.reserve(stream, usize::MAX).unwrap(), BUDGET - 500);
    conn.finish(stream).unwrap();
    assert_eq!(conn.send_buffered(), 500);
    assert_eq!(conn.write(b, &body_b).unwrap(), body_b.len());
    conn.finish(b).unwrap();
    assert_eq!(conn.send_buffered(), body_b.len(), "held, nothing reserved");
    let mut got = vec![Vec::new(), Vec::new()];
    let mut done = [false; 2];
    sim.run_until(10_000, |sim| {
        let conn = sim.client.connection_mut(c).unwrap();
        read_all(conn, &ids, &mut got, &mut done);
        done == [true; 2]
    });
    assert!(got[0] == body_a && got[1] == body_b);
}

/// `all_acked` waits for each stream's end and reset, which hold no bytes of
/// the budget: false from a write until its acknowledgement, from a FIN
/// sent on its own until the FIN's, and from a reset until the
/// RESET_STREAM's.
#[test]
fn all_acked_waits_for_a_fin_and_a_reset_alone() {
    let t = TransportConfig::default;
    let (mut sim, c, _s) = pair(seed(31), t(), t());
    let settle = |sim: &mut Sim| sim.run_for(Duration::from_millis(100));
    let conn = sim.client.connection_mut(c).unwrap();
    assert!(conn.all_acked());
    let id = conn.open_stream(Dir::Bi).unwrap();
    assert_eq!(conn.write(id, b"hello").unwrap(), 5);
    assert!(!conn.all_acked());
    settle(&mut sim);
    let conn = sim.client.connection_mut(c).unwrap();
    assert!(conn.all_acked());
    conn.finish(id).unwrap();
    assert_eq!(conn.send_buffered(), 0, "a FIN holds no bytes");
    assert!(!conn.all_acked(), "the FIN is not acknowledged yet");
    settle(&mut sim);
    let conn = sim.client.connection_mut(c).unwrap();
    assert!(conn.all_acked());
    let id = conn.open_stream(Dir::Uni).unwrap();
    assert_eq!(conn.write(id, b"x").unwrap(), 1);
    settle(&mut sim);
    let conn = sim.client.connection_mut(c).unwrap();
    assert!(conn.all_acked());
    conn.reset_stream(id, 7).unwrap();
    assert!(
        !conn.all_acked(),
        "the RESET_STREAM is not acknowledged yet"
    );
    settle(&mut sim);
    assert!(sim.client.connection_mut(c).unwrap().all_acked());
}
