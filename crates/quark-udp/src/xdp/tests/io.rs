//! Datagrams through AF_XDP to kernel UDP sockets and back, byte-exact.

use std::net::{IpAddr, SocketAddr};

use tokio::sync::{mpsc, oneshot};

use super::{by_tag, collect, datagram, pair, payload, run_in, send_all};
use crate::xdp::{XdpConfig, XdpSocket};
use crate::{Socket, Transmit};

/// Single datagrams, then GSO batches of this many segments.
const SINGLES: u32 = 600;
const BATCHES: u32 = 20;
const SEGMENTS: u32 = 8;
const SEGMENT: usize = 1000;

/// The datagrams every test sends: `SINGLES` of sizes 4..=1472 with ECN marks
/// cycling through 0..=3, then `BATCHES` GSO transmits of `SEGMENTS` datagrams
/// (the last one shorter). Returns the payloads by tag and the GSO contents.
fn workload() -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
    let mut by_tag: Vec<Vec<u8>> = (0..SINGLES)
        .map(|i| payload(i, 4 + (i as usize * 97) % 1469))
        .collect();
    let mut batches = Vec::new();
    for b in 0..BATCHES {
        let mut contents = Vec::new();
        for s in 0..SEGMENTS {
            let tag = SINGLES + b * SEGMENTS + s;
            let len = if s + 1 == SEGMENTS {
                SEGMENT / 2
            } else {
                SEGMENT
            };
            let p = payload(tag, len);
            contents.extend_from_slice(&p);
            by_tag.push(p);
        }
        batches.push(contents);
    }
    (by_tag, batches)
}

fn transmits<'a>(
    to: SocketAddr,
    by_tag: &'a [Vec<u8>],
    batches: &'a [Vec<u8>],
) -> Vec<Transmit<'a>> {
    let mut out: Vec<Transmit<'a>> = by_tag[..SINGLES as usize]
        .iter()
        .enumerate()
        .map(|(i, p)| datagram(to, p, (i % 4) as u8))
        .collect();
    out.extend(batches.iter().map(|c| Transmit {
        segment_size: Some(SEGMENT),
        ..datagram(to, c, 0)
    }));
    out
}

fn ecn_of(tag: usize) -> u8 {
    if tag < SINGLES as usize {
        (tag % 4) as u8
    } else {
        0
    }
}

fn xdp(addr: SocketAddr, interface: &str) -> Socket {
    XdpSocket::bind(addr, &XdpConfig::new(interface))
        .unwrap()
        .into()
}

#[test]
fn xdp_sends_to_a_kernel_socket() {
    let Some(pair) = pair("x2u") else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let to = SocketAddr::new(b.ip.into(), 5000);
    let (ready, wait) = oneshot::channel();
    let (by_tag_, batches) = workload();
    let count = by_tag_.len();
    let receiver = run_in(&b.netns, move || async move {
        let sock = Socket::bind_with(to, None).unwrap();
        ready.send(()).unwrap();
        collect(&sock, count).await
    });
    let sender = run_in(&a.netns, move || async move {
        let sock = xdp(SocketAddr::new(a.ip.into(), 0), &a.interface);
        let Socket::Xdp(x) = &sock else {
            unreachable!()
        };
        eprintln!("AF_XDP on {}: {}", x.interface(), x.mode());
        wait.await.unwrap();
        send_all(&sock, &transmits(to, &by_tag_, &batches)).await;
        let from = sock.local_addr().unwrap();
        // Stay open until the receiver has it all: frames still in flight
        // belong to this socket's memory.
        (from, sock)
    });
    let (from, sock) = sender.join().unwrap().unwrap();
    let got = by_tag(receiver.join().unwrap().unwrap());
    drop(sock);
    let (expected, _) = workload();
    assert_eq!(got.len(), expected.len());
    for (tag, (data, meta)) in got.iter().enumerate() {
        assert_eq!(data, &expected[tag], "datagram {tag}");
        assert_eq!(meta.addr, from);
        assert_eq!(meta.ecn, ecn_of(tag), "ECN of datagram {tag}");
        assert_eq!(meta.dst_ip, Some(IpAddr::V4(pair.b.ip)));
    }
}

#[test]
fn kernel_socket_sends_to_xdp() {
    let Some(pair) = pair("u2x") else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let to = SocketAddr::new(a.ip.into(), 4433);
    let (ready, wait) = oneshot::channel();
    // The receiver reports its progress, so the sender never overruns the veth
    // queue (256 frames with native XDP).
    let (progress, mut progressed) = mpsc::unbounded_channel::<usize>();
    let count = workload().0.len();
    let receiver = run_in(&a.netns, move || async move {
        let sock = xdp(to, &a.interface);
        ready.send(()).unwrap();
        let mut got = Vec::new();
        while got.len() < count {
            got.extend(collect(&sock, 1).await);
            let _ = progress.send(got.len());
        }
        got
    });
    let sender = run_in(&b.netns, move || async move {
        let sock = Socket::bind_with(SocketAddr::new(b.ip.into(), 0), None).unwrap();
        wait.await.unwrap();
        let (by_tag_, batches) = workload();
        let all = transmits(to, &by_tag_, &batches);
        let (mut sent, mut received) = (0, 0);
        for chunk in all.chunks(16) {
            send_all(&sock, chunk).await;
            sent += chunk.iter().map(Transmit::segments).sum::<usize>();
            while received + 64 < sent {
                received = progressed.recv().await.unwrap();
            }
        }
        sock.local_addr().unwrap()
    });
    let from = sender.join().unwrap().unwrap();
    let got = by_tag(receiver.join().unwrap().unwrap());
    let (expected, _) = workload();
    assert_eq!(got.len(), expected.len());
    for (tag, (data, meta)) in got.iter().enumerate() {
        assert_eq!(data, &expected[tag], "datagram {tag}");
        assert_eq!(meta.addr, from);
        assert_eq!(meta.ecn, ecn_of(tag), "ECN of datagram {tag}");
        assert_eq!(meta.dst_ip, Some(IpAddr::V4(pair.a.ip)));
    }
}
