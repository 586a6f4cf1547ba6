use super::*;

fn send_all(s: &mut SendStream) -> Vec<SendRange> {
    let mut v = Vec::new();
    while let Some(r) = s.next_range(1000) {
        v.push(r);
    }
    v
}

#[test]
fn write_finish_ack_reaches_data_recvd() {
    let mut s = SendStream::new(1000, 1000);
    assert_eq!(s.state(), SendState::Send);
    assert!(s.is_writable());
    assert_eq!(s.write(b"hello", u64::MAX), Ok(5));
    assert_eq!(s.finish(), Ok(()));
    assert_eq!(s.state(), SendState::DataSent);
    assert_eq!(s.write(b"x", u64::MAX), Err(WriteError::Closed));
    assert_eq!(s.finish(), Err(WriteError::Closed));
    assert!(!s.is_writable());
    assert!(s.has_pending());
    let ranges = send_all(&mut s);
    assert_eq!(ranges.len(), 1);
    let r = ranges[0];
    assert!(r.fin);
    let mut out = Vec::new();
    s.copy_range(r.offset, r.len, &mut out);
    assert_eq!(out, b"hello");
    assert!(s.on_ack(r.offset, r.len, r.fin));
    assert_eq!(s.state(), SendState::DataRecvd);
    // Reported once.
    assert!(!s.on_ack(r.offset, r.len, r.fin));
    assert_eq!(s.reset(), None);
    assert_eq!(s.on_stop_sending(5), None);
    assert_eq!(s.stopped(), Some(5));
}

#[test]
fn write_is_limited_by_every_credit() {
    // Stream credit.
    let mut s = SendStream::new(10, 100);
    assert_eq!(s.write(&[0; 20], 100), Ok(10));
    assert_eq!(s.write(&[0; 20], 100), Ok(0));
    assert!(!s.is_writable());
    // Buffer limit.
    let mut s = SendStream::new(100, 10);
    assert_eq!(s.write(&[0; 20], 100), Ok(10));
    assert!(!s.is_writable());
    let r = s.next_range(4).unwrap();
    s.on_ack(r.offset, r.len, r.fin);
    assert!(s.is_writable());
    assert_eq!(s.write(&[0; 20], 100), Ok(4));
    assert_eq!(s.buffered(), 10);
    // Connection credit.
    let mut s = SendStream::new(100, 100);
    assert_eq!(s.write(&[0; 20], 7), Ok(7));
    assert_eq!(s.write(&[0; 20], 0), Ok(0));
    assert!(s.is_writable());
    assert_eq!(s.written(), 7);
}

/// Writes stop at NOT_SENT_LIMIT bytes not yet sent, though the buffer (for
/// data in flight too) has room; sending, not acknowledging, makes room again.
#[test]
fn unsent_bytes_are_limited_apart_from_the_buffer() {
    let big = 4 * NOT_SENT_LIMIT;
    let mut s = SendStream::new(big as u64, big);
    let data = vec![7u8; 2 * NOT_SENT_LIMIT];
    assert_eq!(s.write(&data, u64::MAX), Ok(NOT_SENT_LIMIT));
    assert!(!s.is_writable());
    assert_eq!(s.write(&data, u64::MAX), Ok(0));
    // 1 000 bytes go out (in flight, unacknowledged): 1 000 bytes of room.
    let r = s.next_range(1000).unwrap();
    assert_eq!(r.len, 1000);
    assert!(s.is_writable());
    assert_eq!(s.write(&data, u64::MAX), Ok(1000));
    assert_eq!(s.buffered(), NOT_SENT_LIMIT + 1000);
    // Acknowledging what was sent frees buffer, not not-sent room.
    s.on_ack(r.offset, r.len, r.fin);
    assert_eq!(s.write(&data, u64::MAX), Ok(0));
}

#[test]
fn stream_data_blocked_once_per_limit() {
    let mut s = SendStream::new(10, 100);
    assert_eq!(s.take_blocked(), None);
    // Limited by the buffer or the connection: not stream-blocked.
    assert_eq!(s.write(&[0; 5], 3), Ok(3));
    assert_eq!(s.take_blocked(), None);
    assert_eq!(s.write(&[0; 20], 100), Ok(7));
    assert_eq!(s.take_blocked(), Some(10));
    assert_eq!(s.take_blocked(), None);
    assert_eq!(s.write(&[0; 20], 100), Ok(0));
    assert_eq!(s.take_blocked(), None);
    assert!(!s.on_max_stream_data(10));
    assert!(!s.on_max_stream_data(5));
    assert!(s.on_max_stream_data(15));
    // The old limit is stale.
    assert_eq!(s.take_blocked(), None);
    assert_eq!(s.write(&[0; 20], 100), Ok(5));
    assert_eq!(s.take_blocked(), Some(15));
    // Exactly filling the credit is not being blocked.
    let mut s = SendStream::new(10, 100);
    assert_eq!(s.write(&[0; 10], 100), Ok(10));
    assert_eq!(s.take_blocked(), None);
}

#[test]
fn reset_drops_data_and_stops_sending() {
    let mut s = SendStream::new(100, 100);
    s.write(&[1; 50], 100).unwrap();
    let r = s.next_range(20).unwrap();
    assert_eq!(s.reset(), Some(50));
    assert_eq!(s.state(), SendState::ResetSent);
    assert_eq!(s.buffered(), 0);
    assert!(!s.has_pending());
    assert_eq!(s.next_range(100), None);
    // Late notifications are ignored.
    s.on_lost(r.offset, r.len, r.fin);
    assert!(!s.on_ack(r.offset, r.len, r.fin));
    assert_eq!(s.next_range(100), None);
    assert_eq!(s.reset(), None);
    assert_eq!(s.write(b"x", 100), Err(WriteError::Closed));
    s.on_reset_acked();
    assert_eq!(s.state(), SendState::ResetRecvd);
    assert_eq!(s.on_stop_sending(1), None);
}

#[test]
fn stop_sending_answers_with_the_final_size() {
    // Ready/Send: must reset, with everything written as the final size.
    let mut s = SendStream::new(100, 100);
    s.write(&[1; 30], 100).unwrap();
    s.next_range(10).unwrap();
    assert_eq!(s.on_stop_sending(77), Some(30));
    assert_eq!(s.state(), SendState::ResetSent);
    assert_eq!(s.stopped(), Some(77));
    assert_eq!(s.write(b"x", 100), Err(WriteError::Stopped(77)));
    assert_eq!(s.finish(), Err(WriteError::Stopped(77)));
    assert_eq!(s.on_stop_sending(78), None);
    assert_eq!(s.stopped(), Some(77));
    // Data Sent: reset too.
    let mut s = SendStream::new(100, 100);
    s.write(&[1; 30], 100).unwrap();
    s.finish().unwrap();
    assert_eq!(s.on_stop_sending(1), Some(30));
    // Already reset by the application.
    let mut s = SendStream::new(100, 100);
    assert_eq!(s.reset(), Some(0));
    assert_eq!(s.on_stop_sending(1), None);
}

#[test]
fn retransmission_through_the_stream() {
    let mut s = SendStream::new(100, 100);
    s.write(b"abcdefghij", 100).unwrap();
    s.finish().unwrap();
    let a = s.next_range(4).unwrap();
    let b = s.next_range(100).unwrap();
    assert!(b.fin);
    s.on_lost(a.offset, a.len, a.fin);
    assert!(!s.on_ack(b.offset, b.len, b.fin));
    assert!(s.has_pending());
    let again = s.next_range(100).unwrap();
    assert_eq!((again.offset, again.len, again.retransmit), (0, 4, true));
    assert!(s.on_ack(again.offset, again.len, again.fin));
    assert_eq!(s.state(), SendState::DataRecvd);
}

#[test]
fn max_stream_data_in_data_sent_is_harmless() {
    let mut s = SendStream::new(5, 100);
    s.write(&[0; 9], 100).unwrap();
    s.finish().unwrap();
    assert!(s.on_max_stream_data(50));
    assert_eq!(s.take_blocked(), None);
    assert!(!s.is_writable());
}

#[test]
fn parts_are_written_as_if_joined_within_the_credit() {
    // Stream credit 10: the second part is cut, the third not started.
    let mut s = SendStream::new(10, 1000);
    let parts: [&[u8]; 4] = [b"head", b"", b"body-bytes", b"end"];
    assert_eq!(s.write_parts(&parts, u64::MAX), Ok(10));
    // The connection's credit limits too; nothing left: blocked, not an error.
    assert_eq!(s.write_parts(&[b"more"], u64::MAX), Ok(0));
    let mut t = SendStream::new(1000, 1000);
    assert_eq!(t.write_parts(&parts, 6), Ok(6));
    assert_eq!(
        t.write_parts(&[&b"body-bytes"[2..], b"end"], u64::MAX),
        Ok(11)
    );
    t.finish().unwrap();
    let mut out = Vec::new();
    for r in send_all(&mut t) {
        t.copy_range(r.offset, r.len, &mut out);
    }
    assert_eq!(out, b"headbody-bytesend");
    let mut out = Vec::new();
    for r in send_all(&mut s) {
        s.copy_range(r.offset, r.len, &mut out);
    }
    assert_eq!(out, b"headbody-b");
}
