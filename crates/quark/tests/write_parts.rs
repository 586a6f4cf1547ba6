//! `SendStream::write_parts` (several slices and the FIN under one lock) and
//! a read that takes a stream's last bytes ending it (`read_visit`), over
//! real UDP: small messages, and one far over the windows and the send
//! budget so the writer waits for room between and inside parts; every echo
//! checked byte for byte.

mod common;

use common::{data, echo_server_and_client, sha};
use quark::WriteError;

const ALPN: &[u8] = b"test";

/// Reads `recv` to its end with `read_visit`, in pieces of at most `max`.
async fn read_all(recv: &mut quark::RecvStream, max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while let Some(n) = recv
        .read_visit(max, |piece| out.extend_from_slice(piece))
        .await
        .unwrap()
    {
        assert!(n > 0 && n <= max);
    }
    // Ended for good: further reads say so again.
    assert_eq!(recv.read_visit(max, |_| {}).await.unwrap(), None);
    out
}

#[tokio::test]
async fn parts_and_fin_in_one_write_arrive_byte_for_byte() {
    let (_server, client, config, addr) = echo_server_and_client(ALPN);
    let conn = client.connect(config, addr, "localhost").unwrap();
    let conn = conn.await.unwrap();
    // Small messages, as a request's head, body and end: many streams, each
    // freed on both sides (the server may open them all over again).
    for i in 0..300usize {
        let body = data(i * 13 % 3000, i as u32);
        let head = [i as u8; 9];
        let (mut send, mut recv) = conn.open_bi().await.unwrap();
        send.write_parts(&[&head, &[], &body], true).await.unwrap();
        let late = send.write_all(b"late").await;
        assert!(matches!(late, Err(WriteError::ClosedStream)), "{late:?}");
        let back = read_all(&mut recv, 1 + i % 4096).await;
        assert_eq!(back.len(), head.len() + body.len(), "stream {i}");
        assert_eq!(sha(&back), sha(&[&head[..], &body].concat()), "stream {i}");
    }
    // One over every window: the write waits for room inside its parts.
    let big = [data(1_500_000, 1), data(10, 2), data(2_000_000, 3)];
    let expect = big.concat();
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let writer = tokio::spawn(async move {
        let parts: Vec<&[u8]> = big.iter().map(|b| &b[..]).collect();
        send.write_parts(&parts, true).await.unwrap();
    });
    let back = read_all(&mut recv, usize::MAX).await;
    writer.await.unwrap();
    assert_eq!(back.len(), expect.len());
    assert_eq!(sha(&back), sha(&expect));
    conn.close(0, b"done");
}
