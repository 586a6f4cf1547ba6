//! Runs `examples/datagrams.rs` (so the example stays working, not just
//! compiling): every datagram sent on loopback comes back, each checked byte
//! for byte by the example itself.

#[allow(dead_code)] // its `main` is the example's, unused here
#[path = "../examples/datagrams.rs"]
mod example;

#[tokio::test]
async fn datagram_example_echoes_every_datagram() {
    let summary = example::run(300).await.expect("the example's run");
    assert!(
        summary.max_size >= 1000,
        "max datagram {}",
        summary.max_size
    );
    assert_eq!(summary.sent, 300);
    // Loopback drops nothing at this rate (tests/datagrams.rs relies on it too).
    assert_eq!(summary.echoed, 300);
}
