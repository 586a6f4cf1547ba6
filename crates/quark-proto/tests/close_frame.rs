//! What a CONNECTION_CLOSE tells the peer: the type of the frame that caused
//! the error (RFC 9000 §19.19), whichever layer found it, and the reason, also
//! when the close goes out during the handshake.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{Sim, seed};
use quark_proto::{ClientConfig, ConnectionError, TransportConfig, TransportErrorCode as Code};

fn varint(v: u64) -> Vec<u8> {
    let mut out = Vec::new();
    quark_proto::varint::put_varint(&mut out, v);
    out
}

/// The client sends `frames` after the handshake; returns the server's own
/// error and the CONNECTION_CLOSE the client received (code, frame type).
fn close_for(frames: &[u8]) -> (Code, u64) {
    let (mut sim, tls) = Sim::pair(seed(90));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(100));
    sim.client
        .connection_mut(c)
        .unwrap()
        .inject_raw_frames(frames);
    sim.run_until(10_000, |sim| {
        sim.server.connection(s).unwrap().is_closed()
            && sim.client.connection(c).unwrap().is_closed()
    });
    let Some(ConnectionError::TransportError(ours)) = sim.server.connection(s).unwrap().error()
    else {
        panic!("server did not close with a transport error");
    };
    let ours = ours.clone();
    match sim.client.connection(c).unwrap().error() {
        Some(ConnectionError::ConnectionClosed {
            code,
            frame_type,
            reason,
        }) => {
            assert_eq!(*code, ours.code);
            assert_eq!(Some(*frame_type), ours.frame_type, "{ours}");
            assert_eq!(*reason, ours.reason, "the reason reaches the peer");
            (*code, *frame_type)
        }
        other => panic!("client saw {other:?}"),
    }
}

fn expect(name: &str, frames: Vec<u8>, code: Code, frame_type: u64) {
    let got = close_for(&frames);
    assert_eq!(got, (code, frame_type), "{name}");
}

#[test]
fn stream_frame_errors_name_the_stream_frame() {
    let window = TransportConfig::default().stream_receive_window;
    // OFF and LEN bits set, as the frames are written.
    expect(
        "STREAM past the window",
        [varint(0x0e), varint(0), varint(window), varint(1), vec![0]].concat(),
        Code::FLOW_CONTROL_ERROR,
        0x0e,
    );
    expect(
        "STREAM on the server's send-only stream",
        [varint(0x0a), varint(3), varint(1), vec![0]].concat(),
        Code::STREAM_STATE_ERROR,
        0x0a,
    );
    expect(
        "STREAM beyond MAX_STREAMS",
        [varint(0x0a), varint(1024), varint(1), vec![0]].concat(),
        Code::STREAM_LIMIT_ERROR,
        0x0a,
    );
    // A FIN at 5, then at 6.
    expect(
        "final size changed",
        [
            varint(0x0b),
            varint(0),
            varint(5),
            vec![0; 5],
            varint(0x0b),
            varint(0),
            varint(6),
            vec![0; 6],
        ]
        .concat(),
        Code::FINAL_SIZE_ERROR,
        0x0b,
    );
}

#[test]
fn stream_control_errors_name_their_frame() {
    // Stream 3: server-initiated unidirectional, send-only for the server.
    expect(
        "RESET_STREAM on a send-only stream",
        [varint(0x04), varint(3), varint(0), varint(0)].concat(),
        Code::STREAM_STATE_ERROR,
        0x04,
    );
    expect(
        "STREAM_DATA_BLOCKED on a send-only stream",
        [varint(0x15), varint(3), varint(0)].concat(),
        Code::STREAM_STATE_ERROR,
        0x15,
    );
    // Stream 2: client-initiated unidirectional, receive-only for the server.
    expect(
        "STOP_SENDING on a receive-only stream",
        [varint(0x05), varint(2), varint(0)].concat(),
        Code::STREAM_STATE_ERROR,
        0x05,
    );
    expect(
        "MAX_STREAM_DATA on a receive-only stream",
        [varint(0x11), varint(2), varint(10)].concat(),
        Code::STREAM_STATE_ERROR,
        0x11,
    );
    // Found by the decoder, which already named the frame.
    expect(
        "MAX_STREAMS above 2^60",
        [varint(0x12), varint((1 << 60) + 1)].concat(),
        Code::FRAME_ENCODING_ERROR,
        0x12,
    );
}

#[test]
fn connection_frame_errors_name_their_frame() {
    expect(
        "RETIRE_CONNECTION_ID of an unissued ID",
        [varint(0x19), varint(1000)].concat(),
        Code::PROTOCOL_VIOLATION,
        0x19,
    );
    expect(
        "CRYPTO beyond the buffer",
        [varint(0x06), varint(1 << 20), varint(1), vec![0]].concat(),
        Code::CRYPTO_BUFFER_EXCEEDED,
        0x06,
    );
    expect(
        "ACK of an unsent packet",
        [
            varint(0x02),
            varint(1_000_000),
            varint(0),
            varint(0),
            varint(0),
        ]
        .concat(),
        Code::PROTOCOL_VIOLATION,
        0x02,
    );
    expect(
        "HANDSHAKE_DONE from a client",
        varint(0x1e),
        Code::PROTOCOL_VIOLATION,
        0x1e,
    );
    expect(
        "DATAGRAM not negotiated",
        [varint(0x31), varint(1), vec![0]].concat(),
        Code::PROTOCOL_VIOLATION,
        0x31,
    );
}

#[test]
fn new_connection_id_errors_name_their_frame() {
    // Sequence number 1 is an ID the client issued: the same number with
    // another ID is a violation.
    let got = close_for(
        &[
            varint(0x18),
            varint(1),
            varint(0),
            vec![8],
            vec![0xab; 8],
            vec![0xcd; 16],
        ]
        .concat(),
    );
    assert_eq!(got, (Code::PROTOCOL_VIOLATION, 0x18));
    // Two new IDs beyond the server's limit of 4 live ones.
    let mut frames = Vec::new();
    for seq in 10..=11u64 {
        frames.extend([
            varint(0x18),
            varint(seq),
            varint(0),
            vec![8],
            vec![seq as u8; 8],
            vec![seq as u8; 16],
        ]);
    }
    let got = close_for(&frames.concat());
    assert_eq!(got, (Code::CONNECTION_ID_LIMIT_ERROR, 0x18));
}

#[test]
fn a_transport_parameter_error_tells_the_peer_why() {
    // A client announcing active_connection_id_limit 1: the server finds it when
    // the handshake completes and closes in a Handshake packet.
    let (mut sim, tls) = Sim::pair(seed(91));
    let mut cc = ClientConfig::new(tls.client_config(None));
    cc.transport = Arc::new(TransportConfig {
        active_connection_id_limit: 1,
        ..TransportConfig::default()
    });
    let c = sim.connect_with(cc);
    sim.run_until(10_000, |sim| sim.client.connection(c).unwrap().is_closed());
    match sim.client.connection(c).unwrap().error() {
        Some(ConnectionError::ConnectionClosed {
            code,
            frame_type,
            reason,
        }) => {
            assert_eq!(*code, Code::TRANSPORT_PARAMETER_ERROR);
            assert_eq!(*frame_type, 0x06, "the parameters came in CRYPTO frames");
            assert_eq!(reason, "active_connection_id_limit below 2");
        }
        other => panic!("client saw {other:?}"),
    }
}

/// A client that never heard from the server (every packet lost) sends its
/// CONNECTION_CLOSE once and is gone at once: with nothing to answer, the
/// closing state would only hold it for 3 PTO (seconds without an RTT
/// sample), as `connect_first` abandons its losing attempts.
#[test]
fn a_client_that_heard_nothing_is_gone_once_its_close_is_sent() {
    let (mut sim, tls) = Sim::pair(seed(91));
    sim.set_loss(1.0);
    let c = sim.connect(&tls);
    sim.run_for(Duration::from_millis(50));
    assert!(!sim.client.connection(c).unwrap().is_closed());
    let now = sim.now;
    sim.client
        .connection_mut(c)
        .unwrap()
        .close(now, 0, b"abandoned");
    let conn = sim.client.connection(c).unwrap();
    assert!(
        conn.is_closed() && !conn.is_drained(),
        "closing until its close goes out"
    );
    sim.step();
    assert_eq!(sim.now, now, "no time passed");
    assert!(sim.client.connection(c).unwrap().is_drained());
}
