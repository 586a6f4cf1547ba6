//! A client that acknowledges every 1-RTT packet number up to the largest it
//! received, lost and never-sent ones included, is caught by the server's
//! skipped packet numbers (RFC 9000 §21.4) and closed with
//! PROTOCOL_VIOLATION; an honest client on a lossy path never is.

mod common;

use common::app::{Echo, run_echo};
use common::{Sim, payload, seed};
use quark_proto::connection::Misbehave;
use quark_proto::frame::encode_ack;
use quark_proto::{ConnectionError, TransportErrorCode};

#[test]
fn acknowledging_what_never_came_is_a_protocol_violation() {
    let (mut sim, tls) = Sim::pair(seed(95));
    let c = sim.connect(&tls);
    let mut echo = Echo::new(c, vec![payload(4_000_000, 9)]);
    // Handshake first, honestly.
    sim.run_until(100_000, |s| {
        s.client.connection(c).unwrap().is_handshake_complete()
    });
    sim.client.connection_mut(c).unwrap().misbehave(Misbehave {
        no_acks: true,
        ..Misbehave::default()
    });
    let mut frame = Vec::new();
    for _ in 0..200_000 {
        let server_closed = sim
            .server_handles
            .first()
            .is_some_and(|&h| sim.server.connection(h).is_none_or(|conn| conn.is_closed()));
        if server_closed || sim.client.connection(c).unwrap().is_closed() {
            break;
        }
        echo.drive(&mut sim);
        let conn = sim.client.connection_mut(c).unwrap();
        if let Some(largest) = conn.largest_received_1rtt() {
            frame.clear();
            encode_ack(&mut frame, std::iter::once(0..largest + 1), 0, None, 1, 64);
            if !conn.has_raw_frames() {
                conn.inject_raw_frames(&frame);
            }
        }
        if !sim.step() {
            break;
        }
    }
    sim.run_until(10_000, |s| s.client.connection(c).unwrap().is_closed());
    let error = sim.client.connection(c).unwrap().error().cloned();
    match error {
        Some(ConnectionError::ConnectionClosed { code, reason, .. }) => {
            assert_eq!(code, TransportErrorCode::PROTOCOL_VIOLATION);
            assert!(reason.contains("never sent"), "{reason}");
        }
        other => panic!("the lying client was not caught: {other:?}"),
    }
}

#[test]
fn an_honest_client_on_a_lossy_path_is_never_accused() {
    let (mut sim, tls) = Sim::pair(seed(96));
    sim.set_loss(0.03);
    let c = sim.connect(&tls);
    let mut echo = Echo::new(c, vec![payload(3_000_000, 4)]);
    run_echo(&mut sim, &mut echo, 2_000_000);
    assert!(sim.client.connection(c).unwrap().error().is_none());
}
