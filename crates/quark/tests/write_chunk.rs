//! Shared chunks (`SendStream::write_chunk`) over real UDP: the stream holds
//! the application's `Bytes` instead of copying them into its buffer. A client
//! sends 3 MB as slices of one buffer, mixed with copied writes, and gets them
//! echoed back byte for byte.

mod common;

use bytes::Bytes;
use common::{data, echo_server_and_client, sha};
use quark::WriteError;

const ALPN: &[u8] = b"test";

#[tokio::test]
async fn shared_chunks_mixed_with_copies_arrive_byte_for_byte() {
    let (_server, client, config, addr) = echo_server_and_client(ALPN);
    let conn = client.connect(config, addr, "localhost").unwrap();
    let conn = conn.await.unwrap();
    let body = Bytes::from(data(3_000_000, 7));
    let (mut send, mut recv) = conn.open_bi().await.unwrap();
    let all = body.clone();
    let writer = tokio::spawn(async move {
        // Sizes below and above the 4 KiB under which chunks are copied.
        let sizes = [100_000, 50, 6_000, 300_000, 2_000];
        let (mut at, mut i) = (0, 0);
        while at < all.len() {
            let end = (at + sizes[i % sizes.len()]).min(all.len());
            if i % 3 == 1 {
                send.write_all(&all[at..end]).await.unwrap();
            } else {
                send.write_chunk(all.slice(at..end)).await.unwrap();
            }
            (at, i) = (end, i + 1);
        }
        send.finish().unwrap();
        let late = send.write_chunk(all.slice(..10_000)).await;
        assert!(
            matches!(late, Err(WriteError::ClosedStream)),
            "a chunk after finish is refused: {late:?}"
        );
    });
    let out = recv.read_to_end(usize::MAX).await.unwrap();
    writer.await.unwrap();
    assert_eq!(out.len(), body.len());
    assert_eq!(sha(&out), sha(&body));
    conn.close(0, b"done");
}
