//! A stream whose writes waited (for the peer's credit, for room in the send
//! budget, or with room reserved) when the connection closed can still be
//! read to its end: closing sheds the send side and resets the send budget's
//! counts, and freeing the stream afterwards must not take its wait from
//! those counts a second time (an underflow: a panic in debug builds).

mod common;

use std::sync::Arc;

use common::{Sim, Tls, payload, read_to_end, seed, small_windows};
use quark_proto::{ClientConfig, Dir, EndpointConfig, ServerConfig, TransportConfig};

#[test]
fn a_stream_waiting_at_close_is_read_to_its_end() {
    // Three ways to wait: credit (the server's 16 KiB stream window), budget
    // room (a 32 KiB budget), and a reservation.
    for case in 0..3u64 {
        let tls = Tls::new();
        let mut server = ServerConfig::new(tls.server_config(None));
        server.transport = Arc::new(small_windows());
        let mut sim = Sim::new(seed(90 + case), server, EndpointConfig::default());
        let mut client = ClientConfig::new(tls.client_config(None));
        client.transport = Arc::new(TransportConfig {
            send_budget: 32 * 1024,
            send_budget_max: 32 * 1024,
            ..TransportConfig::default()
        });
        let c = sim.connect_with(client);
        let s = sim.handshake(c);
        let conn = sim.client.connection_mut(c).unwrap();
        let id = conn.open_stream(Dir::Bi).unwrap();
        let body = payload(200_000, 1);
        match case {
            0 => {
                // Past the stream window: refused for credit.
                let n = conn.write(id, &body).unwrap();
                assert!(n < body.len());
                assert_eq!(conn.write(id, &body[n..]).unwrap(), 0);
            }
            1 => {
                // A request the server sees; then two other streams set the
                // rest of the budget aside (acknowledgements do not free it).
                assert_eq!(conn.write(id, &body[..100]).unwrap(), 100);
                for _ in 0..2 {
                    let other = conn.open_stream(Dir::Bi).unwrap();
                    assert!(conn.reserve(other, 16 * 1024).unwrap() > 0);
                }
                assert_eq!(conn.write(id, &body[..1000]).unwrap(), 0);
            }
            _ => {
                // A request the server sees, then room set aside for more.
                assert_eq!(conn.write(id, &body[..100]).unwrap(), 100);
                assert!(conn.reserve(id, 8 * 1024).unwrap() > 0);
            }
        }
        // The server answers on the stream and ends its side, then closes.
        sim.run_until(10_000, |sim| {
            let conn = sim.server.connection_mut(s).unwrap();
            conn.accept_stream(Dir::Bi).is_some()
        });
        let response = payload(5000, 2);
        let conn = sim.server.connection_mut(s).unwrap();
        assert_eq!(conn.write(id, &response).unwrap(), response.len());
        conn.finish(id).unwrap();
        sim.run_until(10_000, |sim| {
            sim.client.connection(c).unwrap().readable_bytes(id) >= response.len()
        });
        let now = sim.now;
        sim.server.connection_mut(s).unwrap().close(now, 0, b"bye");
        sim.run_until(10_000, |sim| sim.client.connection(c).unwrap().is_closed());
        let conn = sim.client.connection_mut(c).unwrap();
        assert_eq!(read_to_end(conn, id), response, "case {case}");
    }
}
