use bytes::Bytes;

use super::*;
use crate::error::TransportErrorCode;
use proptest::prelude::*;

fn code(r: Result<u64, TransportError>) -> TransportErrorCode {
    r.unwrap_err().code
}

fn read_vec(s: &mut RecvStream, max: usize) -> Result<ReadOutcome, ReadError> {
    let mut buf = vec![0; max];
    s.read(&mut buf)
}

#[test]
fn in_order_data_then_fin() {
    let mut s = RecvStream::new(100);
    assert_eq!(s.state(), RecvState::Recv);
    assert!(!s.is_readable());
    assert_eq!(read_vec(&mut s, 10), Ok(ReadOutcome::Blocked));
    assert_eq!(s.on_data(0, b"hello", false), Ok(5));
    assert!(s.is_readable());
    assert_eq!(s.on_data(5, b" world", true), Ok(6));
    assert_eq!(s.state(), RecvState::DataRecvd);
    let mut buf = [0; 8];
    assert_eq!(s.read(&mut buf), Ok(ReadOutcome::Data(8)));
    assert_eq!(&buf, b"hello wo");
    assert_eq!(s.read(&mut buf), Ok(ReadOutcome::Data(3)));
    assert_eq!(s.state(), RecvState::DataRecvd);
    assert!(s.is_readable());
    assert_eq!(s.read(&mut buf), Ok(ReadOutcome::Finished));
    assert_eq!(s.state(), RecvState::DataRead);
    assert_eq!(s.read(&mut buf), Ok(ReadOutcome::Finished));
    assert_eq!(s.read_offset(), 11);
}

#[test]
fn size_known_then_data_recvd_out_of_order() {
    let mut s = RecvStream::new(100);
    assert_eq!(s.on_data(5, b"world", true), Ok(10));
    assert_eq!(s.state(), RecvState::SizeKnown);
    assert_eq!(s.final_size(), Some(10));
    assert_eq!(read_vec(&mut s, 10), Ok(ReadOutcome::Blocked));
    // Retransmissions are accepted and count nothing new.
    assert_eq!(s.on_data(5, b"world", true), Ok(0));
    assert_eq!(s.on_data(0, b"hello", false), Ok(0));
    assert_eq!(s.state(), RecvState::DataRecvd);
    assert_eq!(s.on_data(0, b"hello", false), Ok(0));
    assert_eq!(read_vec(&mut s, 20), Ok(ReadOutcome::Data(10)));
    assert_eq!(read_vec(&mut s, 20), Ok(ReadOutcome::Finished));
}

#[test]
fn empty_fin_frame() {
    let mut s = RecvStream::new(100);
    s.on_data(0, b"abc", false).unwrap();
    assert_eq!(s.on_data(3, b"", true), Ok(0));
    assert_eq!(s.state(), RecvState::DataRecvd);
    let mut s = RecvStream::new(100);
    assert_eq!(s.on_data(0, b"", true), Ok(0));
    assert_eq!(s.state(), RecvState::DataRecvd);
    assert_eq!(read_vec(&mut s, 4), Ok(ReadOutcome::Finished));
    // A FIN frame beyond the highest offset counts its gap against the connection.
    let mut s = RecvStream::new(100);
    assert_eq!(s.on_data(50, b"", true), Ok(50));
}

#[test]
fn flow_control_limit() {
    let mut s = RecvStream::new(10);
    assert_eq!(s.on_data(0, &[0; 10], false), Ok(10));
    assert_eq!(
        code(s.on_data(10, &[0], false)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
    assert_eq!(
        code(s.on_data(5, &[0; 6], false)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
    assert_eq!(
        code(s.on_reset(0, 11)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
    let mut s = RecvStream::new(u64::MAX);
    assert_eq!(
        code(s.on_data(u64::MAX - 1, &[0; 4], false)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
    assert_eq!(
        code(s.on_data(1 << 62, &[], false)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
}

#[test]
fn final_size_errors() {
    // A FIN that changes the final size.
    let mut s = RecvStream::new(100);
    s.on_data(0, b"abc", true).unwrap();
    assert_eq!(
        code(s.on_data(0, b"abcd", true)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    assert_eq!(
        code(s.on_data(0, b"ab", true)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    // Data beyond a known final size, even without FIN.
    assert_eq!(
        code(s.on_data(3, b"d", false)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    // RESET_STREAM that changes it.
    assert_eq!(code(s.on_reset(1, 4)), TransportErrorCode::FINAL_SIZE_ERROR);
    assert_eq!(code(s.on_reset(1, 2)), TransportErrorCode::FINAL_SIZE_ERROR);

    // A FIN below data already received.
    let mut s = RecvStream::new(100);
    s.on_data(10, b"xyz", false).unwrap();
    assert_eq!(
        code(s.on_data(0, b"abc", true)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    // A RESET_STREAM below data already received.
    assert_eq!(
        code(s.on_reset(1, 12)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    assert_eq!(s.on_reset(1, 13), Ok(0));

    // After a reset, data beyond the final size or a different FIN.
    let mut s = RecvStream::new(100);
    s.on_reset(7, 20).unwrap();
    assert_eq!(
        code(s.on_data(15, &[0; 6], false)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    assert_eq!(
        code(s.on_data(0, &[0; 19], true)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    assert_eq!(s.on_data(0, &[0; 20], true), Ok(0));
    assert_eq!(
        code(s.on_reset(7, 21)),
        TransportErrorCode::FINAL_SIZE_ERROR
    );
    assert_eq!(s.on_reset(7, 20), Ok(0));
}

#[test]
fn reset_discards_data_and_reports_once() {
    let mut s = RecvStream::new(100);
    s.on_data(0, b"abcdef", false).unwrap();
    s.on_data(10, b"xyz", false).unwrap();
    assert_eq!(read_vec(&mut s, 2), Ok(ReadOutcome::Data(2)));
    // Final size 30: 17 bytes beyond the highest offset seen count now.
    assert_eq!(s.on_reset(42, 30), Ok(17));
    assert_eq!(s.state(), RecvState::ResetRecvd);
    assert_eq!(s.reset_code(), Some(42));
    assert_eq!(s.buffer().buffered(), 0);
    // The discarded bytes count as consumed for connection-level credit.
    assert_eq!(s.read_offset(), 30);
    assert!(s.is_readable());
    assert_eq!(read_vec(&mut s, 10), Err(ReadError::Reset(42)));
    assert_eq!(s.state(), RecvState::ResetRead);
    assert_eq!(read_vec(&mut s, 10), Err(ReadError::Reset(42)));
    // Late data is accepted (within the final size) and ignored.
    assert_eq!(s.on_data(20, b"late", false), Ok(0));
    assert_eq!(s.buffer().buffered(), 0);
    assert_eq!(s.take_max_stream_data(None), None);
}

#[test]
fn reset_after_all_data_is_suppressed() {
    let mut s = RecvStream::new(100);
    s.on_data(0, b"abc", true).unwrap();
    assert_eq!(s.on_reset(9, 3), Ok(0));
    assert_eq!(s.state(), RecvState::DataRecvd);
    assert_eq!(read_vec(&mut s, 10), Ok(ReadOutcome::Data(3)));
    assert_eq!(read_vec(&mut s, 10), Ok(ReadOutcome::Finished));
}

#[test]
fn reset_in_size_known() {
    let mut s = RecvStream::new(100);
    s.on_data(5, b"abc", true).unwrap();
    assert_eq!(s.on_reset(1, 8), Ok(0));
    assert_eq!(s.state(), RecvState::ResetRecvd);
}

#[test]
fn stop_sending_rules() {
    let mut s = RecvStream::new(100);
    s.on_data(0, b"abc", false).unwrap();
    assert!(s.stop());
    assert!(!s.stop());
    assert_eq!(read_vec(&mut s, 10), Err(ReadError::Stopped));
    assert!(s.is_readable());
    assert_eq!(s.read_offset(), 3);
    // Data keeps counting for flow control but is discarded.
    assert_eq!(s.on_data(3, b"defg", false), Ok(4));
    assert_eq!(s.buffer().buffered(), 0);
    assert_eq!(s.read_offset(), 7);
    assert_eq!(s.take_max_stream_data(None), None);
    assert_eq!(
        code(s.on_data(7, &[0; 94], false)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
    // Out-of-order data waits (bounded by the limit) until the gap fills.
    s.on_data(9, b"ij", true).unwrap();
    assert_eq!(s.state(), RecvState::SizeKnown);
    s.on_data(7, b"gh", false).unwrap();
    assert_eq!(s.state(), RecvState::DataRead);
    assert_eq!(s.buffer().buffered(), 0);

    // Stopped, then reset: terminal without the application seeing it.
    let mut s = RecvStream::new(100);
    assert!(s.stop());
    assert_eq!(s.on_reset(3, 10), Ok(10));
    assert_eq!(s.state(), RecvState::ResetRead);

    // Nothing to ask for once all data or a reset arrived.
    let mut s = RecvStream::new(100);
    s.on_data(0, b"abc", true).unwrap();
    assert!(!s.stop());
    assert_eq!(s.state(), RecvState::DataRead);
    let mut s = RecvStream::new(100);
    s.on_reset(1, 0).unwrap();
    assert!(!s.stop());
    assert_eq!(s.state(), RecvState::ResetRead);
}

#[test]
fn credit_returns_only_as_the_application_reads() {
    let mut s = RecvStream::new(100);
    assert_eq!(s.max_stream_data(), 100);
    assert_eq!(s.take_max_stream_data(None), None);
    s.on_data(0, &[1; 100], false).unwrap();
    // Everything arrived but nothing was read: no more credit.
    assert_eq!(s.take_max_stream_data(None), None);
    let mut buf = [0; 49];
    s.read(&mut buf).unwrap();
    assert_eq!(s.take_max_stream_data(None), None);
    s.read(&mut buf[..1]).unwrap();
    assert_eq!(s.take_max_stream_data(None), Some(150));
    assert_eq!(s.take_max_stream_data(None), None);
    assert_eq!(s.max_stream_data(), 150);
    // A peer that keeps sending into a non-reading receiver is held at the limit.
    s.on_data(100, &[1; 50], false).unwrap();
    assert_eq!(
        code(s.on_data(150, &[1], false)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
    assert_eq!(s.take_max_stream_data(None), None);
    assert!(s.buffer().buffered() <= 100);
    // Once the size is known, no more updates.
    s.on_data(150, &[], true).unwrap();
    let mut big = [0; 200];
    s.read(&mut big).unwrap();
    assert_eq!(s.take_max_stream_data(None), None);
}

#[test]
fn tiny_windows_still_advance() {
    let mut s = RecvStream::new(1);
    s.on_data(0, b"a", false).unwrap();
    assert_eq!(s.take_max_stream_data(None), None);
    assert_eq!(read_vec(&mut s, 1), Ok(ReadOutcome::Data(1)));
    assert_eq!(s.take_max_stream_data(None), Some(2));
    let mut s = RecvStream::new(0);
    assert_eq!(s.take_max_stream_data(None), None);
    assert_eq!(
        code(s.on_data(0, b"a", false)),
        TransportErrorCode::FLOW_CONTROL_ERROR
    );
}

#[test]
fn empty_read_buffer() {
    let mut s = RecvStream::new(100);
    s.on_data(0, b"abc", true).unwrap();
    assert_eq!(s.read(&mut []), Ok(ReadOutcome::Data(0)));
    assert_eq!(s.state(), RecvState::DataRecvd);
}

proptest! {
    /// Whatever the arrival order, duplicates and window updates, the reader gets the
    /// exact bytes, flow control never trips for a sender that respects the limits,
    /// and the connection-level growth adds up to the final size.
    #[test]
    fn reassembles_under_flow_control(
        len in 0usize..2000,
        window in 1u64..600,
        picks in proptest::collection::vec((any::<u16>(), 1usize..200), 1..300),
    ) {
        let data: Vec<u8> = (0..len).map(|i| (i % 253) as u8).collect();
        let mut s = RecvStream::new(window);
        let mut limit = s.max_stream_data();
        let mut out = Vec::new();
        let mut grown = 0u64;
        let mut buf = [0u8; 64];
        let mut picks = picks.into_iter().cycle();
        loop {
            // The sender picks any range below the limit it knows (resending is fine).
            let (at, l) = picks.next().unwrap();
            let top = limit.min(len as u64);
            if top > 0 {
                let s0 = at as u64 % top;
                let e0 = (s0 + l as u64).min(top);
                let fin = e0 == len as u64;
                grown += s.on_data(s0, &data[s0 as usize..e0 as usize], fin).unwrap();
            } else if len == 0 {
                grown += s.on_data(0, &[], true).unwrap();
            }
            match s.read(&mut buf).unwrap() {
                ReadOutcome::Data(n) => out.extend_from_slice(&buf[..n]),
                ReadOutcome::Blocked => {
                    // Nothing in order yet: the sender fills the first gap.
                    let from = s.read_offset();
                    let to = (from + 50).min(limit).min(len as u64);
                    if from < to || len == 0 {
                        grown += s.on_data(from, &data[from as usize..to as usize], to == len as u64).unwrap();
                    }
                }
                ReadOutcome::Finished => break,
            }
            if let Some(l) = s.take_max_stream_data(None) {
                prop_assert!(l > limit);
                limit = l;
            }
            prop_assert!(s.buffer().buffered() as u64 <= window);
        }
        prop_assert_eq!(out, data);
        prop_assert_eq!(grown, len as u64);
        prop_assert_eq!(s.state(), RecvState::DataRead);
    }
}

#[test]
fn read_bytes_follows_the_stream_states() {
    let mut s = RecvStream::new(10_000);
    assert_eq!(s.read_bytes(100), Ok(Some(Bytes::new())), "nothing yet");
    let d: Bytes = vec![9u8; 3000].into();
    s.on_data_from(0, &d[..2000], false, Some(&d)).unwrap();
    s.on_data_from(2000, &d[2000..2500], true, Some(&d))
        .unwrap();
    assert_eq!(s.state(), RecvState::DataRecvd);
    assert_eq!(s.read_bytes(0), Ok(Some(Bytes::new())));
    let first = s.read_bytes(usize::MAX).unwrap().unwrap();
    assert_eq!(first.as_ptr(), d.as_ptr(), "handed over without a copy");
    assert_eq!(first.len(), 2000);
    let rest = s.read_bytes(usize::MAX).unwrap().unwrap();
    assert_eq!(rest.len(), 500, "the copied small frame");
    assert_eq!(s.read_bytes(10), Ok(None));
    assert_eq!(s.state(), RecvState::DataRead);
    assert_eq!(s.read_bytes(10), Ok(None));
}

#[test]
fn read_bytes_reports_a_reset_and_a_stop() {
    let mut s = RecvStream::new(10_000);
    let d: Bytes = vec![1u8; 2000].into();
    s.on_data_from(0, &d, false, Some(&d)).unwrap();
    s.on_reset(7, 2000).unwrap();
    assert!(d.is_unique(), "the reset let go of the datagram");
    assert_eq!(s.read_bytes(10), Err(ReadError::Reset(7)));
    let mut s = RecvStream::new(10_000);
    s.stop();
    assert_eq!(s.read_bytes(10), Err(ReadError::Stopped));
}
