//! ICMP error reports: a datagram to a closed port comes back as a report,
//! wakes the reader, and neither drops a later send nor hides a datagram.

use std::future::poll_fn;
use std::net::SocketAddr;
use std::time::Duration;

use super::{bind, datagram, recv_msgs};
use crate::{ErrorCause, ErrorReport, UdpSocket};

/// An address on `ip` where nothing listens (bound, then closed).
fn closed_port(ip: &str) -> SocketAddr {
    let s = std::net::UdpSocket::bind(format!("{ip}:0")).unwrap();
    s.local_addr().unwrap()
}

/// Waits until the socket is readable: a queued report wakes it.
async fn woken(sock: &UdpSocket) {
    // A guard against hanging forever, not a timing assertion.
    tokio::time::timeout(
        Duration::from_secs(20),
        poll_fn(|cx| sock.poll_recv_ready(cx)),
    )
    .await
    .expect("no wake-up for the error")
    .unwrap();
}

fn reports(sock: &UdpSocket) -> Vec<(ErrorReport, Vec<u8>)> {
    let mut buf = [0u8; 128];
    let mut out = Vec::new();
    sock.try_recv_errors(&mut buf, |r, quoted| out.push((*r, quoted.to_vec())));
    out
}

/// A socket with its error queue on.
fn reporting(addr: &str) -> UdpSocket {
    let sock = bind(addr);
    assert!(sock.set_error_reports(true));
    sock
}

async fn port_unreachable(bind_at: &str, closed_ip: &str) {
    let sock = reporting(bind_at);
    let closed = closed_port(closed_ip);
    assert_eq!(
        sock.try_send(&[datagram(closed, b"hello quark")]).unwrap(),
        1
    );
    woken(&sock).await;
    // Waiting for the report is the reader's job: read until it shows.
    let mut got = Vec::new();
    for _ in 0..200 {
        got = reports(&sock);
        if !got.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(got.len(), 1, "{got:?}");
    let (report, quoted) = &got[0];
    assert_eq!(report.destination, closed);
    assert_eq!(report.cause, ErrorCause::PortUnreachable);
    assert!(report.from_network);
    assert_eq!(quoted, b"hello quark");
    assert!(reports(&sock).is_empty());
    assert!(!sock.reports_pending());
}

#[tokio::test]
async fn v4_closed_port_is_reported() {
    port_unreachable("127.0.0.1:0", "127.0.0.1").await;
}

#[tokio::test]
async fn v6_closed_port_is_reported() {
    port_unreachable("[::1]:0", "::1").await;
}

#[tokio::test]
async fn dual_stack_reports_an_ipv4_port_as_ipv4() {
    port_unreachable("[::]:0", "127.0.0.1").await;
}

/// The report's pending error is returned by whichever call comes next: a
/// send must still go out and a receive still deliver.
#[tokio::test]
async fn a_pending_report_neither_drops_a_send_nor_hides_a_datagram() {
    let sock = reporting("127.0.0.1:0");
    let peer = bind("127.0.0.1:0");
    let (to_sock, to_peer) = (sock.local_addr().unwrap(), peer.local_addr().unwrap());

    sock.try_send(&[datagram(closed_port("127.0.0.1"), b"x")])
        .unwrap();
    woken(&sock).await;
    assert_eq!(
        sock.try_send(&[datagram(to_peer, b"still sent")]).unwrap(),
        1
    );
    assert_eq!(recv_msgs(&peer, 1).await[0].0, b"still sent");
    assert!(sock.reports_pending(), "the send met the report's error");
    assert_eq!(reports(&sock).len(), 1);

    sock.try_send(&[datagram(closed_port("127.0.0.1"), b"y")])
        .unwrap();
    woken(&sock).await;
    peer.try_send(&[datagram(to_sock, b"still received")])
        .unwrap();
    assert_eq!(recv_msgs(&sock, 1).await[0].0, b"still received");
    assert_eq!(reports(&sock).len(), 1);
}

/// Off (as at creation), the kernel keeps no report: nothing to read,
/// nothing pending, nothing taking room in the receive buffer.
#[tokio::test]
async fn without_the_queue_nothing_is_kept() {
    let sock = reporting("127.0.0.1:0");
    assert!(!sock.set_error_reports(false));
    let closed = closed_port("127.0.0.1");
    for _ in 0..10 {
        sock.try_send(&[datagram(closed, b"z")]).unwrap();
    }
    let peer = bind("127.0.0.1:0");
    peer.try_send(&[datagram(sock.local_addr().unwrap(), b"after")])
        .unwrap();
    assert_eq!(recv_msgs(&sock, 1).await[0].0, b"after");
    assert!(!sock.reports_pending());
    assert!(reports(&sock).is_empty());
}

/// `sendmmsg` drops the error that stopped it once a message went out. When
/// that was a report's pending error (the ICMP came in while the batch was
/// going out), the short count is the only sign a report waits, and it must
/// be read: otherwise it waits until the next report, as a path MTU probe's
/// did in quark's too-big test, which then sent the probe a second time.
#[tokio::test]
async fn a_send_cut_short_may_have_met_a_report() {
    use std::sync::atomic::Ordering::Relaxed;
    let sock = reporting("127.0.0.1:0");
    let peer = bind("127.0.0.1:0");
    let to_peer = peer.local_addr().unwrap();
    sock.try_send(&[datagram(closed_port("127.0.0.1"), b"x")])
        .unwrap();
    woken(&sock).await;
    // What the kernel's sendmmsg does to the pending error: takes it.
    let taken = socket2::SockRef::from(&sock).take_error().unwrap();
    assert!(taken.is_some(), "the report's error was pending");
    // ... and the batch stops there, after its first message.
    sock.state.hooks.short_send.store(1, Relaxed);
    let batch = [datagram(to_peer, b"a"), datagram(to_peer, b"b")];
    assert_eq!(sock.try_send(&batch).unwrap(), 2, "the rest went next");
    assert_eq!(recv_msgs(&peer, 2).await.len(), 2);
    assert!(sock.reports_pending(), "a short count may hide a report");
    assert_eq!(reports(&sock).len(), 1);
    assert!(!sock.reports_pending());
}
