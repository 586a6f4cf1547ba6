//! Loss at the tail of an exchange, where no later packet can reveal it:
//! only the probe timeout (RFC 9002 §6.2) recovers, so what a 1-RTT probe
//! carries decides how long the application waits.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::{Sim, Tls, packet_types, payload, read_more, read_to_end, seed};
use quark_proto::{ClientConfig, Dir, EndpointConfig, ServerConfig, TransportConfig};

/// Whether a datagram begins with a short (1-RTT) header.
fn is_short(d: &[u8]) -> bool {
    d.first().is_some_and(|b| b & 0x80 == 0)
}

/// One endpoint sends a message of `len` bytes; its 1-RTT datagrams with
/// the indices in `lost` (counted from the message's first) are lost, and
/// so is every datagram its peer sends from then on (the ACKs of the
/// probes). Whether the message still arrives, checked byte for byte,
/// within 10 s (simulated; 10 ms one way). With `answer`, the server's
/// answer to a request is lost; else the client's request itself.
fn lost_tail_arrives(answer: bool, len: usize, lost: &'static [u32]) -> bool {
    let (mut sim, tls) = Sim::pair(seed(91));
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let request = payload(if answer { 700 } else { len }, 3);
    let reply = payload(if answer { len } else { 900 }, 7);
    let id = sim
        .client
        .connection_mut(c)
        .unwrap()
        .open_stream(Dir::Bi)
        .unwrap();
    if answer {
        let conn = sim.client.connection_mut(c).unwrap();
        conn.write(id, &request).unwrap();
        conn.finish(id).unwrap();
        sim.run_until(10_000, |sim| {
            sim.server.connection(s).unwrap().readable_bytes(id) == request.len()
        });
    }
    // Let the handshake's last frames and the request's ACK settle.
    sim.run_for(Duration::from_millis(200));

    // (armed, the sender's 1-RTT datagrams seen, of them dropped)
    let state = Rc::new(RefCell::new((false, 0u32, 0usize)));
    let seen = state.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut st = seen.borrow_mut();
        if !st.0 {
            return true;
        }
        let from_sender = to_server != answer;
        if !from_sender {
            return false; // every ACK lost
        }
        if is_short(d) {
            st.1 += 1;
            if lost.contains(&(st.1 - 1)) {
                st.2 += 1;
                return false;
            }
        }
        true
    }));
    let sent = if answer {
        let conn = sim.server.connection_mut(s).unwrap();
        assert_eq!(conn.accept_stream(Dir::Bi), Some(id));
        assert_eq!(conn.write(id, &reply).unwrap(), reply.len());
        conn.finish(id).unwrap();
        &reply
    } else {
        let conn = sim.client.connection_mut(c).unwrap();
        assert_eq!(conn.write(id, &request).unwrap(), request.len());
        conn.finish(id).unwrap();
        &request
    };
    state.borrow_mut().0 = true;
    let start = sim.now;
    let receiver = |sim: &mut Sim| match answer {
        true => sim.client.connection(c).unwrap().readable_bytes(id),
        false => sim.server.connection(s).unwrap().readable_bytes(id),
    };
    sim.run_until(100_000, |sim| {
        receiver(sim) == sent.len() || sim.now - start > Duration::from_secs(10)
    });
    assert_eq!(state.borrow().2, lost.len(), "not every packet was dropped");
    if receiver(&mut sim) != sent.len() {
        return false;
    }
    let conn = match answer {
        true => sim.client.connection_mut(c).unwrap(),
        false => {
            let conn = sim.server.connection_mut(s).unwrap();
            assert_eq!(conn.accept_stream(Dir::Bi), Some(id));
            conn
        }
    };
    assert!(read_to_end(conn, id) == *sent, "the message differs");
    true
}

/// The server's answer to a request is lost, and every ACK of the client
/// after it. The server's probes carry the answer again (RFC 9002 §6.2.4:
/// "retransmit unacknowledged data"; on a connection without earlier
/// trouble, from the second PTO on) rather than bare PINGs, so the client
/// gets it without any ACK reaching the server. With PINGs the server learnt
/// of the loss only from an ACK, and an aioquic client in the interop
/// runner's handshakeloss case, its ACKs lost three times in a row, timed
/// out waiting for an answer the server had long sent.
#[test]
fn a_probe_carries_a_lost_answer_again() {
    assert!(lost_tail_arrives(true, 900, &[0]), "no answer within 10 s");
}

/// The same for the client: its request is lost, and every ACK of the
/// server after it; the client's probe carries the request again.
#[test]
fn a_probe_carries_a_lost_request_again() {
    assert!(
        lost_tail_arrives(false, 700, &[0]),
        "no request within 10 s"
    );
}

/// A longer answer (six packets) loses its fourth and last packets, and
/// every ACK after it. A PTO's probes carry all of the answer still in
/// flight again, oldest first, so the lost middle and end arrive too. While
/// each probe took the oldest packet in flight, all of them carried the
/// answer's first packet, which had arrived.
#[test]
fn probes_carry_every_lost_packet_of_a_tail() {
    assert!(
        lost_tail_arrives(true, 6_000, &[3, 5]),
        "no answer within 10 s"
    );
}

/// A whole hq-style exchange (handshake, a request, a 6 KB answer) at 30 %
/// random loss each way, as in the interop runner's handshakeloss case but
/// with the answer's tail exposed too. How long it took, or `None` if an
/// endpoint gave up (30 s handshake and idle timeouts) or 60 s (simulated)
/// passed.
fn exchange_time(tls: &Tls, seed: u64) -> Option<Duration> {
    let transport = Arc::new(TransportConfig {
        handshake_timeout: Duration::from_secs(30),
        max_idle_timeout: Duration::from_secs(30),
        ..TransportConfig::default()
    });
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone();
    let mut sim = Sim::new(seed, server, EndpointConfig::default());
    sim.set_delay(Duration::from_millis(10));
    sim.impair(|c| c.loss = 0.3);
    let mut client = ClientConfig::new(tls.client_config(None));
    client.transport = transport;
    let start = sim.now;
    let c = sim.connect_with(client);
    let (request, answer) = (payload(40, 1), payload(6_000, 2));
    let (mut id, mut asked, mut got, mut answered) = (None, Vec::new(), Vec::new(), false);
    loop {
        if sim.now - start > Duration::from_secs(60) {
            return None;
        }
        let conn = sim.client.connection_mut(c).unwrap();
        if conn.error().is_some() {
            return None;
        }
        if id.is_none() && conn.is_handshake_complete() {
            let s = conn.open_stream(Dir::Bi).unwrap();
            conn.write(s, &request).unwrap();
            conn.finish(s).unwrap();
            id = Some(s);
        }
        let Some(id) = id else {
            if !sim.step() {
                return None;
            }
            continue;
        };
        if let (false, Some(&h)) = (answered, sim.server_handles.first()) {
            let conn = sim.server.connection_mut(h)?;
            // The one stream the client opens, once it has arrived.
            let _ = conn.accept_stream(Dir::Bi);
            if read_more(conn, id, &mut asked) {
                assert!(asked == request, "seed {seed}: the request differs");
                assert_eq!(conn.write(id, &answer).unwrap(), answer.len());
                conn.finish(id).unwrap();
                answered = true;
            }
        }
        if read_more(sim.client.connection_mut(c).unwrap(), id, &mut got) {
            assert!(got == answer, "seed {seed}: the answer differs");
            return Some(sim.now - start);
        }
        if !sim.step() {
            return None;
        }
    }
}

/// Every exchange of 1 000 seeds completes at 30 % loss (the slowest in
/// 12 s). While 1-RTT probes were bare PINGs, an answer whose tail and the
/// ACKs of the PINGs after it were lost waited on backed-off PTOs for an ACK
/// to get through: 6 of these 1 000 stalled (9 of 2 000); resending only
/// from a second PTO in a row, 1 did. With probes that took only the oldest
/// packet in flight, all completed, the slowest in 23 s. The tail over more
/// seeds: `exchange_tail`, and docs/results/2026-11-30-probes.
#[test]
fn exchanges_complete_at_30_percent_loss() {
    const SEEDS: u64 = 1_000;
    let tls = Tls::new();
    let base = seed(1);
    let mut failed = Vec::new();
    let mut slowest = Duration::ZERO;
    for i in 0..SEEDS {
        match exchange_time(&tls, base.wrapping_add(i)) {
            Some(t) => slowest = slowest.max(t),
            None => failed.push(base.wrapping_add(i)),
        }
    }
    eprintln!("slowest exchange {slowest:?}");
    assert!(
        failed.is_empty(),
        "{} of {SEEDS} exchanges stalled (seeds {failed:?})",
        failed.len()
    );
}

/// The distribution of exchange times at 30 % loss (`EX_SEEDS` seeds from
/// `seed(1)`, default 5 000). A measurement, not a check: `cargo test
/// --release -p quark-proto --test tail_loss -- --ignored --nocapture
/// exchange_tail` (`SIM_SEED=100000` for another base).
#[test]
#[ignore]
fn exchange_tail() {
    let n: u64 = std::env::var("EX_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5_000);
    let tls = Tls::new();
    let base = seed(1);
    let mut times: Vec<Duration> = (0..n)
        .filter_map(|i| exchange_time(&tls, base.wrapping_add(i)))
        .collect();
    times.sort();
    let at = |q: f64| times[((times.len() - 1) as f64 * q) as usize];
    let over = |secs| times.iter().filter(|t| t.as_secs() >= secs).count();
    eprintln!(
        "{n} exchanges from seed {base}: median {:?}, p90 {:?}, p99 {:?}, p99.9 {:?}, slowest {:?}; 5 s or more: {}, 10 s or more: {}, failed: {}",
        at(0.5),
        at(0.9),
        at(0.99),
        at(0.999),
        times.last().copied().unwrap_or_default(),
        over(5),
        over(10),
        n as usize - times.len()
    );
}

/// A connection-level control frame at the tail goes again with a probe
/// too: the client moves to a fresh connection ID of the server, and the
/// packet retiring the old one is lost, as is every datagram of the server
/// from then on. The server still learns of the retirement (it stops
/// routing the old ID) within 10 s (simulated).
#[test]
fn a_probe_carries_a_lost_retire_connection_id_again() {
    let (mut sim, tls) = Sim::pair(seed(93));
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(200));
    let before = sim.server.connection(s).unwrap().local_cids();

    // (armed, the client's 1-RTT datagrams dropped)
    let state = Rc::new(RefCell::new((false, 0u32)));
    let seen = state.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut st = seen.borrow_mut();
        if !st.0 {
            return true;
        }
        if !to_server {
            return false; // every datagram of the server lost
        }
        if is_short(d) && st.1 == 0 {
            st.1 = 1;
            return false;
        }
        true
    }));
    state.borrow_mut().0 = true;
    let now = sim.now;
    // Same address: only the connection ID changes, and the retirement.
    sim.client
        .connection_mut(c)
        .unwrap()
        .migrate(now, true)
        .expect("a spare ID after the handshake");
    let start = sim.now;
    let retired = |sim: &Sim| {
        let ids = sim.server.connection(s).unwrap().local_cids();
        before.iter().any(|id| !ids.contains(id))
    };
    sim.run_until(100_000, |sim| {
        retired(sim) || sim.now - start > Duration::from_secs(10)
    });
    assert_eq!(state.borrow().1, 1, "the retiring packet was not dropped");
    assert!(retired(&sim), "no RETIRE_CONNECTION_ID within 10 s");
}

/// The client's Finished and its request (1-RTT, sent beside it) are lost,
/// and every datagram of the server after its first flight: no ACK and no
/// HANDSHAKE_DONE reach the client, which may not arm a 1-RTT PTO before the
/// handshake is confirmed (RFC 9002 §6.2.1). Its Handshake probe takes the
/// request along (§6.2.4: "packets from other packet number spaces with
/// in-flight data"), so the server gets it within 2 s (simulated); else it
/// came only once a HANDSHAKE_DONE got through.
#[test]
fn a_handshake_probe_carries_the_request_sent_beside_the_finished() {
    let (mut sim, tls) = Sim::pair(seed(95));
    sim.set_delay(Duration::from_millis(10));
    // (client datagrams with a Handshake or 1-RTT packet dropped, server
    // datagrams passed)
    let state = Rc::new(RefCell::new((0u32, 0u32)));
    let seen = state.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut st = seen.borrow_mut();
        if !to_server {
            st.1 += 1;
            return st.0 == 0; // all of the server's after the first flight
        }
        let late = packet_types(d)
            .iter()
            .any(|t| *t == "handshake" || *t == "1rtt");
        if late && st.0 < 2 {
            st.0 += 1;
            return false;
        }
        true
    }));
    let c = sim.connect(&tls);
    sim.run_until(10_000, |sim| {
        sim.client.connection(c).unwrap().is_handshake_complete()
    });
    let request = payload(300, 5);
    let conn = sim.client.connection_mut(c).unwrap();
    let id = conn.open_stream(Dir::Bi).unwrap();
    conn.write(id, &request).unwrap();
    conn.finish(id).unwrap();
    let start = sim.now;
    let arrived = |sim: &Sim| {
        sim.server_handles.first().is_some_and(|&h| {
            sim.server
                .connection(h)
                .is_some_and(|s| s.readable_bytes(id) == request.len())
        })
    };
    sim.run_until(100_000, |sim| {
        arrived(sim) || sim.now - start > Duration::from_secs(2)
    });
    assert_eq!(
        state.borrow().0,
        2,
        "the Finished and the request were not both dropped"
    );
    assert!(arrived(&sim), "no request within 2 s");
    let h = sim.server_handles[0];
    let conn = sim.server.connection_mut(h).unwrap();
    assert_eq!(conn.accept_stream(Dir::Bi), Some(id));
    assert!(read_to_end(conn, id) == request, "the request differs");
}
