//! A misbehaving peer: after a real handshake, the client sends hand-built frames
//! in an otherwise valid 1-RTT packet. The server must close with the error code
//! the RFC prescribes, and the client must see that code in CONNECTION_CLOSE.

mod common;

use std::time::Duration;

use common::{Sim, seed};
use quark_proto::{ConnectionError, TransportErrorCode as Code};

fn varint(v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    quark_proto::varint::put_varint(&mut out, v);
    out
}

fn frame(parts: &[Vec<u8>]) -> Vec<u8> {
    parts.concat()
}

/// Send `frames` from the client; return the server's error and the code the
/// client was told.
fn misbehave(frames: &[u8]) -> (ConnectionError, ConnectionError) {
    let (mut sim, tls) = Sim::pair(seed(30));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    // Let the handshake settle (HANDSHAKE_DONE, NEW_CONNECTION_IDs).
    sim.run_for(Duration::from_millis(100));
    sim.client
        .connection_mut(c)
        .unwrap()
        .inject_raw_frames(frames);
    sim.run_until(10_000, |sim| {
        sim.server.connection(s).unwrap().is_closed()
            && sim.client.connection(c).unwrap().is_closed()
    });
    let server = sim.server.connection(s).unwrap().error().cloned().unwrap();
    let client = sim.client.connection(c).unwrap().error().cloned().unwrap();
    (server, client)
}

fn expect(name: &str, frames: Vec<u8>, code: Code) {
    let (server, client) = misbehave(&frames);
    match &server {
        ConnectionError::TransportError(e) => {
            assert_eq!(e.code, code, "{name}: server closed with {e}")
        }
        other => panic!("{name}: server ended with {other:?}, expected {code:?}"),
    }
    match &client {
        ConnectionError::ConnectionClosed { code: got, .. } => {
            assert_eq!(*got, code, "{name}: client was told {got:?}")
        }
        other => panic!("{name}: client saw {other:?}, expected CONNECTION_CLOSE {code:?}"),
    }
}

#[test]
fn unknown_frame_type() {
    expect(
        "unknown type 0x21",
        varint(0x21),
        Code::FRAME_ENCODING_ERROR,
    );
}

#[test]
fn truncated_frame() {
    // A STREAM frame announcing 1000 bytes and carrying 1. (A frame cut at its
    // very first byte can't be tested here: the packet's padding completes it.)
    expect(
        "truncated STREAM",
        frame(&[varint(0x0a), varint(0), varint(1000), vec![0]]),
        Code::FRAME_ENCODING_ERROR,
    );
}

#[test]
fn handshake_done_from_a_client() {
    expect("HANDSHAKE_DONE", varint(0x1e), Code::PROTOCOL_VIOLATION);
}

#[test]
fn datagram_frame_not_negotiated() {
    expect(
        "DATAGRAM",
        frame(&[varint(0x31), varint(1), vec![0]]),
        Code::PROTOCOL_VIOLATION,
    );
}

#[test]
fn stream_on_the_servers_send_only_stream() {
    // Stream 3 is server-initiated unidirectional: the client may not send on it.
    expect(
        "STREAM on 3",
        frame(&[varint(0x0a), varint(3), varint(1), vec![0]]),
        Code::STREAM_STATE_ERROR,
    );
}

#[test]
fn stream_beyond_max_streams() {
    // The server allows 256 client bidi streams: index 256 is stream 1024.
    expect(
        "STREAM on 1024",
        frame(&[varint(0x0a), varint(1024), varint(1), vec![0]]),
        Code::STREAM_LIMIT_ERROR,
    );
}

#[test]
fn stream_beyond_flow_control() {
    let window = quark_proto::TransportConfig::default().stream_receive_window;
    // One byte at the first offset past the window.
    expect(
        "STREAM past window",
        frame(&[varint(0x0e), varint(0), varint(window), varint(1), vec![0]]),
        Code::FLOW_CONTROL_ERROR,
    );
}

#[test]
fn final_size_changes() {
    // FIN at 5, then FIN at 6 on the same stream.
    let first = frame(&[varint(0x0b), varint(0), varint(5), vec![0; 5]]);
    let second = frame(&[varint(0x0b), varint(0), varint(6), vec![0; 6]]);
    expect(
        "final size change",
        [first, second].concat(),
        Code::FINAL_SIZE_ERROR,
    );
}

#[test]
fn max_streams_too_large() {
    expect(
        "MAX_STREAMS 2^60+1",
        frame(&[varint(0x12), varint((1 << 60) + 1)]),
        Code::FRAME_ENCODING_ERROR,
    );
}

#[test]
fn retire_an_unissued_connection_id() {
    expect(
        "RETIRE_CONNECTION_ID 1000",
        frame(&[varint(0x19), varint(1000)]),
        Code::PROTOCOL_VIOLATION,
    );
}

#[test]
fn too_many_connection_ids() {
    // The server stores at most 4 client IDs (active_connection_id_limit); the
    // client already issued sequence numbers 1-3, so one more is too many.
    let mut frames = Vec::new();
    for seq in 10..=11u64 {
        frames.extend(frame(&[
            varint(0x18),
            varint(seq),
            varint(0),
            vec![8],
            vec![seq as u8; 8],
            vec![seq as u8; 16],
        ]));
    }
    expect(
        "NEW_CONNECTION_ID beyond the limit",
        frames,
        Code::CONNECTION_ID_LIMIT_ERROR,
    );
}

#[test]
fn crypto_data_far_ahead() {
    // CRYPTO at an offset beyond the crypto buffer.
    expect(
        "CRYPTO offset 1 MiB",
        frame(&[varint(0x06), varint(1 << 20), varint(1), vec![0]]),
        Code::CRYPTO_BUFFER_EXCEEDED,
    );
}

#[test]
fn ack_of_an_unsent_packet() {
    // ACK for packet 1 000 000, which the server never sent.
    expect(
        "ACK 1e6",
        frame(&[
            varint(0x02),
            varint(1_000_000),
            varint(0),
            varint(0),
            varint(0),
        ]),
        Code::PROTOCOL_VIOLATION,
    );
}

#[test]
fn reset_stream_on_a_receive_only_stream() {
    // RESET_STREAM on stream 3 (server uni): the client cannot have sent on it... but
    // for the server it is send-only: RESET_STREAM from the peer is a state error.
    expect(
        "RESET_STREAM on 3",
        frame(&[varint(0x04), varint(3), varint(0), varint(0)]),
        Code::STREAM_STATE_ERROR,
    );
}

#[test]
fn non_minimal_frame_type() {
    // PING encoded in two bytes.
    expect("PING as 0x4001", vec![0x40, 0x01], Code::PROTOCOL_VIOLATION);
}

mod random_frames {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        /// Any bytes as frames: the server either accepts them or closes with a
        /// transport error; never panics, never leaves the connection half-dead.
        #[test]
        fn arbitrary_frame_bytes(bytes in proptest::collection::vec(any::<u8>(), 1..200)) {
            let (mut sim, tls) = Sim::pair(seed(31));
            let c = sim.connect(&tls);
            let s = sim.handshake(c);
            sim.client.connection_mut(c).unwrap().inject_raw_frames(&bytes);
            sim.run_for(Duration::from_secs(2));
            let server = sim.server.connection(s).unwrap();
            // Either accepted, or closed: by us with a transport error, or by the
            // peer because the bytes happened to be a valid CONNECTION_CLOSE.
            if let Some(err) = server.error() {
                let ok = matches!(
                    err,
                    ConnectionError::TransportError(_)
                        | ConnectionError::ConnectionClosed { .. }
                        | ConnectionError::ApplicationClosed { .. }
                );
                prop_assert!(ok, "{err:?}");
            }
        }
    }
}
