//! GSO sends, GRO receives, and the fallback when GSO fails.

use std::net::SocketAddr;
use std::sync::atomic::Ordering::Relaxed;

use super::{assert_drained, bind, datagram, payload, recv_msgs};
use crate::{MAX_GSO_SEGMENTS, Transmit, UdpSocket};

const SEG: usize = 1200;

/// Ten segments, the last one shorter.
fn ten_segments() -> Vec<u8> {
    payload(77, 9 * SEG + 700)
}

fn gso(to: SocketAddr, contents: &[u8], segment: usize) -> Transmit<'_> {
    Transmit {
        segment_size: Some(segment),
        ..datagram(to, contents)
    }
}

/// Receives `count` separate datagrams and checks they are `contents` cut into
/// `segment`-byte pieces, in order.
async fn expect_split(rx: &UdpSocket, contents: &[u8], segment: usize) {
    let pieces: Vec<&[u8]> = contents.chunks(segment).collect();
    let got = recv_msgs(rx, pieces.len()).await;
    for (i, ((bytes, meta), piece)) in got.iter().zip(&pieces).enumerate() {
        assert_eq!(&bytes[..], *piece, "segment {i}");
        assert_eq!(meta.stride, meta.len);
    }
    assert_drained(rx);
}

#[tokio::test]
async fn gso_send_arrives_as_separate_datagrams_without_gro() {
    let rx = bind("127.0.0.1:0");
    rx.set_gro(false).unwrap();
    assert_eq!(rx.gro_segments(), 1);
    let tx = bind("127.0.0.1:0");
    assert_eq!(
        tx.max_gso_segments(),
        MAX_GSO_SEGMENTS,
        "loopback supports GSO"
    );
    let contents = ten_segments();
    assert_eq!(
        tx.try_send(&[gso(rx.local_addr().unwrap(), &contents, SEG)])
            .unwrap(),
        1
    );
    expect_split(&rx, &contents, SEG).await;
}

#[tokio::test]
async fn gso_send_arrives_coalesced_with_gro() {
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        let rx = bind(addr);
        assert_eq!(rx.gro_segments(), 64, "loopback supports GRO");
        let tx = bind(addr);
        let contents = ten_segments();
        tx.try_send(&[gso(rx.local_addr().unwrap(), &contents, SEG)])
            .unwrap();
        let got = recv_msgs(&rx, 1).await;
        let (bytes, meta) = &got[0];
        assert_eq!(bytes, &contents);
        assert_eq!((meta.len, meta.stride), (contents.len(), SEG));
        assert_eq!(bytes.chunks(meta.stride).count(), 10);
        assert_drained(&rx);
    }
}

#[tokio::test]
async fn more_segments_than_one_gso_send_takes() {
    let rx = bind("127.0.0.1:0");
    rx.set_gro(false).unwrap();
    let tx = bind("127.0.0.1:0");
    // 100 segments: more than 64 per send. And 60 of 1400 bytes: more than 64 KiB.
    for (count, size) in [(100, 100), (60, 1400)] {
        let contents = payload(count as u32, count * size);
        tx.try_send(&[gso(rx.local_addr().unwrap(), &contents, size)])
            .unwrap();
        expect_split(&rx, &contents, size).await;
    }
}

#[tokio::test]
async fn segmented_transmits_without_gso_go_out_one_by_one() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    tx.set_gso(false);
    assert_eq!(tx.max_gso_segments(), 1);
    let contents = ten_segments();
    let to = rx.local_addr().unwrap();
    let small = payload(5, 10);
    // Mixed with plain datagrams; with GRO on at the receiver nothing is coalesced
    // because loopback only keeps GSO sends together.
    let transmits = [
        datagram(to, &small),
        gso(to, &contents, SEG),
        datagram(to, &small),
    ];
    assert_eq!(tx.try_send(&transmits).unwrap(), 3);
    let got = recv_msgs(&rx, 12).await;
    assert_eq!(got[0].0, small);
    for (i, piece) in contents.chunks(SEG).enumerate() {
        assert_eq!(got[1 + i].0, piece);
        assert_eq!(got[1 + i].1.stride, piece.len());
    }
    assert_eq!(got[11].0, small);
    tx.set_gso(true);
    assert_eq!(tx.max_gso_segments(), MAX_GSO_SEGMENTS);
}

/// A GSO send refused with `errno` (and what follows it) still delivers everything,
/// and GSO stays off.
async fn gso_failure_falls_back(errno: i32) {
    let rx = bind("127.0.0.1:0");
    rx.set_gro(false).unwrap();
    let tx = bind("127.0.0.1:0");
    let to = rx.local_addr().unwrap();
    let contents = ten_segments();
    let first = payload(1, 50);
    let last = payload(2, 60);
    tx.state.hooks.gso_errno.store(errno, Relaxed);
    let transmits = [
        datagram(to, &first),
        gso(to, &contents, SEG),
        datagram(to, &last),
    ];
    assert_eq!(tx.try_send(&transmits).unwrap(), 3);
    assert_eq!(
        tx.state.hooks.gso_errno.load(Relaxed),
        0,
        "the failure was injected"
    );
    assert_eq!(tx.max_gso_segments(), 1);
    let got = recv_msgs(&rx, 12).await;
    assert_eq!(got[0].0, first);
    for (i, piece) in contents.chunks(SEG).enumerate() {
        assert_eq!(got[1 + i].0, piece);
    }
    assert_eq!(got[11].0, last);
    assert_drained(&rx);
    // Permanently: asking for GSO again doesn't bring it back.
    tx.set_gso(true);
    assert_eq!(tx.max_gso_segments(), 1);
}

#[tokio::test]
async fn gso_eio_falls_back_to_separate_datagrams() {
    gso_failure_falls_back(libc::EIO).await;
}

#[tokio::test]
async fn gso_einval_falls_back_to_separate_datagrams() {
    gso_failure_falls_back(libc::EINVAL).await;
}

#[tokio::test]
async fn einval_not_caused_by_gso_is_reported_and_gso_kept() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    let to = rx.local_addr().unwrap();
    let contents = ten_segments();
    // The GSO send fails, and so does the same transmit without GSO.
    tx.state.hooks.gso_errno.store(libc::EINVAL, Relaxed);
    tx.state.hooks.send_errno.store(libc::EINVAL, Relaxed);
    let err = tx.try_send(&[gso(to, &contents, SEG)]).unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::EINVAL));
    assert_eq!(tx.max_gso_segments(), MAX_GSO_SEGMENTS);
    // GSO still works afterwards: the receiver (GRO on) gets one coalesced message.
    tx.try_send(&[gso(to, &contents, SEG)]).unwrap();
    let got = recv_msgs(&rx, 1).await;
    assert_eq!((got[0].0.len(), got[0].1.stride), (contents.len(), SEG));
    assert_drained(&rx);
}

#[tokio::test]
async fn transmit_cut_short_without_gso_counts_as_unsent() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    tx.set_gso(false);
    let to = rx.local_addr().unwrap();
    // 40 segments take two system calls of 32 and 8 messages; the second one finds
    // the buffer full.
    let long = payload(6, 40 * 100);
    let small = payload(7, 10);
    for (transmits, expect) in [
        (vec![gso(to, &long, 100), datagram(to, &small)], None),
        (vec![datagram(to, &small), gso(to, &long, 100)], Some(1)),
    ] {
        tx.state.hooks.send_errno.store(libc::EAGAIN, Relaxed);
        tx.state.hooks.send_errno_skip.store(1, Relaxed);
        let result = tx.try_send(&transmits);
        match expect {
            None => assert_eq!(result.unwrap_err().kind(), std::io::ErrorKind::WouldBlock),
            Some(n) => assert_eq!(result.unwrap(), n),
        }
        // The first system call's 32 datagrams went out; the caller will resend the
        // long transmit whole.
        let got = recv_msgs(&rx, 32).await;
        assert!(got.iter().all(|(b, _)| b.len() == 100 || b == &small));
        assert_drained(&rx);
    }
}

#[tokio::test]
async fn gro_batches_fill_bytes_mut_buffers_without_zeroing() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    let to = rx.local_addr().unwrap();
    let batches: Vec<Vec<u8>> = (0..3).map(|i| payload(200 + i, 9 * SEG + 700)).collect();
    for b in &batches {
        tx.try_send(&[gso(to, b, SEG)]).unwrap();
    }
    // Buffers with stale contents and some length: emptied, then filled.
    let mut bufs: Vec<bytes::BytesMut> = (0..4)
        .map(|_| {
            let mut b = bytes::BytesMut::with_capacity(65536);
            b.extend_from_slice(&[0xee; 100]);
            b
        })
        .collect();
    let mut meta = [crate::RecvMeta::default(); 4];
    let mut got = Vec::new();
    while got.len() < batches.len() {
        let n = tokio::time::timeout(
            std::time::Duration::from_secs(20),
            std::future::poll_fn(|cx| rx.poll_recv_buf(cx, &mut bufs, &mut meta)),
        )
        .await
        .expect("datagrams missing")
        .unwrap();
        for (b, m) in bufs.iter().zip(&meta).take(n) {
            assert_eq!(b.len(), m.len);
            assert_eq!(m.stride, SEG);
            got.push(b.to_vec());
        }
    }
    assert_eq!(got, batches);
    assert_drained(&rx);
}
