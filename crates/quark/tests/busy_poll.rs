//! Busy polling (`Endpoint::set_busy_poll`): transfers stay byte-exact, the
//! driver really polls while traffic flows, and it sleeps again once the
//! window has passed. Its own test binary: it reads the process-wide I/O
//! counters, which other tests running in parallel would disturb.

mod common;

use std::time::Duration;

use common::{connect, data, echo, sha, spawn_echo};
use quark::Endpoint;
use quark::tls::{self, Identity, Verify};

const ALPN: &[u8] = b"test";

#[tokio::test]
async fn busy_polling_endpoints_echo_exactly_and_sleep_when_idle() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let (server_socket, client_socket, _net) = common::sockets();
    let xdp = server_socket.is_xdp();
    let server_config = tls::server_config(&id, &[ALPN]).unwrap();
    let server =
        Endpoint::with_socket(Default::default(), Some(server_config), server_socket).unwrap();
    let client = Endpoint::with_socket(Default::default(), None, client_socket).unwrap();
    for e in [&server, &client] {
        e.set_busy_poll(Duration::from_micros(200));
    }
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[ALPN]).unwrap();
    let (c, s) = connect(&server, &client, config).await;
    spawn_echo(s);

    quark::counters::set_enabled(true);
    let before = quark_udp::stats::snapshot();
    for i in 0..200u32 {
        let body = data(2048, i);
        assert_eq!(sha(&echo(&c, &body).await), sha(&body), "request {i}");
    }
    let big = data(4 << 20, 7);
    let got = tokio::time::timeout(Duration::from_secs(60), echo(&c, &big))
        .await
        .unwrap();
    assert_eq!(sha(&got), sha(&big));
    let busy = quark_udp::stats::snapshot().since(&before);
    if !xdp {
        // Kernel UDP: polling means receive calls that find nothing, so there
        // are more calls than datagrams (a sleeping driver makes at most one
        // per wake-up, and every wake-up finds something).
        assert!(
            busy.recv_syscalls > busy.recv_datagrams,
            "no busy polling: {} receive calls for {} datagrams",
            busy.recv_syscalls,
            busy.recv_datagrams
        );
    }

    // Idle: after the window the drivers sleep (polling would make thousands
    // of calls in this time).
    tokio::time::sleep(Duration::from_millis(100)).await;
    let before = quark_udp::stats::snapshot();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let idle = quark_udp::stats::snapshot().since(&before);
    assert!(
        idle.recv_syscalls < 50,
        "still polling when idle: {} receive calls in 300 ms",
        idle.recv_syscalls
    );
    c.close(0, b"done");
}
