//! Loss at the tail of an exchange, where no later packet can reveal it:
//! only the probe timeout (RFC 9002 §6.2) recovers, so what a 1-RTT probe
//! carries decides how long the application waits.

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use common::{Sim, payload, read_to_end, seed};
use quark_proto::Dir;

/// Whether a datagram begins with a short (1-RTT) header.
fn is_short(d: &[u8]) -> bool {
    d.first().is_some_and(|b| b & 0x80 == 0)
}

/// The server answers a request with one packet, which is lost, and every
/// datagram the client sends from then on is lost too (its ACKs of the
/// server's probes). The server's probe carries the answer again (RFC 9002
/// §6.2.4: "retransmit unacknowledged data") rather than a bare PING, so the
/// client gets it without any ACK reaching the server. With PINGs the
/// server learnt of the loss only from an ACK, and an aioquic client in the
/// interop runner's handshakeloss case, its ACKs lost three times in a row,
/// timed out waiting for an answer the server had long sent.
#[test]
fn a_probe_carries_a_lost_answer_again() {
    let (mut sim, tls) = Sim::pair(seed(91));
    sim.set_delay(Duration::from_millis(10));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let id = {
        let conn = sim.client.connection_mut(c).unwrap();
        let id = conn.open_stream(Dir::Bi).unwrap();
        conn.write(id, b"GET /a\r\n").unwrap();
        conn.finish(id).unwrap();
        id
    };
    sim.run_until(10_000, |sim| {
        sim.server.connection(s).unwrap().readable_bytes(id) == 8
    });
    // Let the handshake's last frames and the request's ACK settle.
    sim.run_for(Duration::from_millis(200));

    // (armed, server 1-RTT datagrams dropped)
    let state = Rc::new(RefCell::new((false, 0u32)));
    let seen = state.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        let mut st = seen.borrow_mut();
        if !st.0 {
            return true;
        }
        if to_server {
            return false;
        }
        if is_short(d) && st.1 == 0 {
            st.1 = 1;
            return false;
        }
        true
    }));
    let answer = payload(900, 7);
    {
        let conn = sim.server.connection_mut(s).unwrap();
        assert_eq!(conn.accept_stream(Dir::Bi), Some(id));
        assert_eq!(conn.write(id, &answer).unwrap(), answer.len());
        conn.finish(id).unwrap();
    }
    state.borrow_mut().0 = true;
    let start = sim.now;
    sim.run_until(100_000, |sim| {
        sim.client.connection(c).unwrap().readable_bytes(id) == answer.len()
            || sim.now - start > Duration::from_secs(10)
    });
    // Nothing from the client reached the server since the answer went.
    let (_, server_lost) = *state.borrow();
    assert_eq!(
        server_lost, 1,
        "the answer's packet was not the one dropped"
    );
    let took = sim.now - start;
    let conn = sim.client.connection_mut(c).unwrap();
    assert_eq!(
        conn.readable_bytes(id),
        answer.len(),
        "no answer after {took:?}"
    );
    let got = read_to_end(conn, id);
    assert_eq!(got, answer);
}
