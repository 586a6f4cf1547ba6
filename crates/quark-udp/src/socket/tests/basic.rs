//! Single datagrams, batches, addresses, async paths and counters.

use std::io::IoSliceMut;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;

use super::{assert_drained, bind, datagram, payload, recv_msgs};
use crate::{BATCH_SIZE, RecvMeta, Transmit, UdpSocket, stats};

async fn single_datagram(addr: &str) {
    let rx = bind(addr);
    let tx = bind(addr);
    let to = rx.local_addr().unwrap();
    assert_eq!(tx.try_send(&[datagram(to, b"hello quark")]).unwrap(), 1);
    let got = recv_msgs(&rx, 1).await;
    let (bytes, meta) = &got[0];
    assert_eq!(bytes, b"hello quark");
    assert_eq!(meta.addr, tx.local_addr().unwrap());
    assert_eq!((meta.len, meta.stride, meta.ecn), (11, 11, 0));
    assert_eq!(meta.dst_ip, Some(to.ip()));
    assert_drained(&rx);
}

#[tokio::test]
async fn v4_single_datagram() {
    single_datagram("127.0.0.1:0").await;
}

#[tokio::test]
async fn v6_single_datagram() {
    single_datagram("[::1]:0").await;
}

#[tokio::test]
async fn empty_datagram_has_nonzero_stride() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    tx.try_send(&[datagram(rx.local_addr().unwrap(), b"")])
        .unwrap();
    let got = recv_msgs(&rx, 1).await;
    assert_eq!((got[0].1.len, got[0].1.stride), (0, 1));
}

#[tokio::test]
async fn dual_stack_shows_v4_peers_as_v4() {
    let dual = bind("[::]:0");
    let v4 = bind("127.0.0.1:0");
    let dual_port = dual.local_addr().unwrap().port();
    let to: SocketAddr = ([127, 0, 0, 1], dual_port).into();
    v4.try_send(&[datagram(to, b"ping")]).unwrap();
    let got = recv_msgs(&dual, 1).await;
    let meta = got[0].1;
    assert_eq!(meta.addr, v4.local_addr().unwrap());
    assert!(meta.addr.is_ipv4());
    assert_eq!(meta.dst_ip, Some(IpAddr::from([127, 0, 0, 1])));

    // Answering the IPv4 address from the IPv6 socket works, ECN and source included.
    let reply = Transmit {
        ecn: 0b10,
        src_ip: Some([127, 0, 0, 1].into()),
        ..datagram(meta.addr, b"pong")
    };
    assert_eq!(dual.try_send(&[reply]).unwrap(), 1);
    let got = recv_msgs(&v4, 1).await;
    assert_eq!(got[0].0, b"pong");
    assert_eq!(got[0].1.ecn, 0b10);
    assert_eq!(got[0].1.addr, to);
}

#[tokio::test]
async fn src_ip_chooses_the_source_and_dst_ip_is_reported() {
    // Every 127/8 address is local, so the choice of source is visible.
    let rx = bind("0.0.0.0:0");
    let tx = bind("0.0.0.0:0");
    let port = rx.local_addr().unwrap().port();
    let to: SocketAddr = ([127, 0, 0, 3], port).into();
    let t = Transmit {
        src_ip: Some([127, 0, 0, 2].into()),
        ..datagram(to, b"x")
    };
    tx.try_send(&[t]).unwrap();
    let meta = recv_msgs(&rx, 1).await[0].1;
    assert_eq!(meta.addr.ip(), IpAddr::from([127, 0, 0, 2]));
    assert_eq!(meta.dst_ip, Some(IpAddr::from([127, 0, 0, 3])));

    // The same through a dual-stack sender (IP_PKTINFO on an IPv6 socket).
    let dual = bind("[::]:0");
    let t = Transmit {
        src_ip: Some([127, 0, 0, 4].into()),
        ..datagram(to, b"y")
    };
    dual.try_send(&[t]).unwrap();
    let meta = recv_msgs(&rx, 1).await[0].1;
    assert_eq!(
        meta.addr,
        SocketAddr::from(([127, 0, 0, 4], dual.local_addr().unwrap().port()))
    );

    // And IPv6 (::1 is the only local address, so this checks it is accepted).
    let rx6 = bind("[::]:0");
    let to6: SocketAddr = (
        IpAddr::from(std::net::Ipv6Addr::LOCALHOST),
        rx6.local_addr().unwrap().port(),
    )
        .into();
    let t = Transmit {
        src_ip: Some(to6.ip()),
        ..datagram(to6, b"z")
    };
    dual.try_send(&[t]).unwrap();
    let meta = recv_msgs(&rx6, 1).await[0].1;
    assert_eq!(meta.addr.ip(), to6.ip());
    assert_eq!(meta.dst_ip, Some(to6.ip()));
}

#[tokio::test]
async fn batch_larger_than_one_syscall_arrives_byte_exact() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    let to = rx.local_addr().unwrap();
    let count = BATCH_SIZE * 2 + 7;
    let payloads: Vec<Vec<u8>> = (0..count)
        .map(|i| payload(i as u32, 4 + (i * 37) % 1400))
        .collect();
    let transmits: Vec<Transmit<'_>> = payloads.iter().map(|p| datagram(to, p)).collect();
    let mut sent = 0;
    while sent < count {
        sent += tx.send(&transmits[sent..]).await.unwrap();
    }
    let mut got = recv_msgs(&rx, count).await;
    // Loopback may reorder across CPUs; compare as sets.
    got.sort_by_key(|(bytes, _)| u32::from_be_bytes(bytes[..4].try_into().unwrap()));
    for (i, (bytes, meta)) in got.iter().enumerate() {
        assert_eq!(bytes, &payloads[i], "datagram {i}");
        assert_eq!(meta.stride, meta.len);
    }
    assert_drained(&rx);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_send_and_recv_across_tasks() {
    let rx = Arc::new(bind("[::1]:0"));
    let tx = bind("[::1]:0");
    let to = rx.local_addr().unwrap();
    const COUNT: usize = 500;
    let receiver = tokio::spawn({
        let rx = rx.clone();
        async move {
            let mut seen = vec![false; COUNT];
            let mut storage = vec![vec![0u8; 2048]; BATCH_SIZE];
            let mut meta = [RecvMeta::default(); BATCH_SIZE];
            let mut n = 0;
            while n < COUNT {
                let mut bufs: Vec<IoSliceMut<'_>> =
                    storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                let got = rx.recv(&mut bufs, &mut meta).await.unwrap();
                for (buf, m) in bufs.iter().zip(&meta).take(got) {
                    let i = u32::from_be_bytes(buf[..4].try_into().unwrap()) as usize;
                    assert_eq!(&buf[..m.len], &payload(i as u32, 1000)[..]);
                    assert!(!seen[i], "duplicate {i}");
                    seen[i] = true;
                    n += 1;
                }
            }
        }
    });
    let payloads: Vec<Vec<u8>> = (0..COUNT as u32).map(|i| payload(i, 1000)).collect();
    for chunk in payloads.chunks(50) {
        let transmits: Vec<Transmit<'_>> = chunk.iter().map(|p| datagram(to, p)).collect();
        let mut sent = 0;
        while sent < transmits.len() {
            sent += tx.send(&transmits[sent..]).await.unwrap();
        }
    }
    receiver.await.unwrap();
}

#[tokio::test]
async fn poll_send_and_poll_recv() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    let to = rx.local_addr().unwrap();
    let p = payload(9, 300);
    assert_eq!(
        tx.send_polled(&[datagram(to, &p), datagram(to, &p)])
            .await
            .unwrap(),
        2
    );
    let mut a = [0u8; 2048];
    let mut b = [0u8; 2048];
    let mut meta = [RecvMeta::default(); 2];
    let mut got = 0;
    while got < 2 {
        let mut bufs = [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)];
        got += rx
            .recv_polled(&mut bufs[got..], &mut meta[got..])
            .await
            .unwrap();
    }
    assert_eq!(&a[..meta[0].len], &p[..]);
    assert_eq!(&b[..meta[1].len], &p[..]);
    assert_eq!(tx.send_polled(&[]).await.unwrap(), 0);
}

#[tokio::test]
async fn stats_count_syscalls_datagrams_and_bytes() {
    stats::set_enabled(true);
    assert!(stats::enabled());
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    let to = rx.local_addr().unwrap();
    let p = payload(1, 100);
    let gso = payload(2, 1000);
    rx.set_gro(false).unwrap();
    let before = stats::snapshot();
    let transmits = [
        datagram(to, &p),
        Transmit {
            segment_size: Some(100),
            ..datagram(to, &gso)
        },
    ];
    assert_eq!(tx.try_send(&transmits).unwrap(), 2);
    recv_msgs(&rx, 11).await;
    // Other tests run in parallel and count too: check lower bounds.
    let d = stats::snapshot().since(&before);
    assert!(d.send_syscalls >= 1);
    assert!(d.send_datagrams >= 11);
    assert!(d.send_bytes >= 1100);
    assert!(d.recv_syscalls >= 2);
    assert!(d.recv_datagrams >= 11);
    assert!(d.recv_bytes >= 1100);
}

#[test]
fn bind_outside_a_runtime_is_an_error() {
    let err = UdpSocket::bind("127.0.0.1:0".parse().unwrap()).unwrap_err();
    assert_eq!(err.kind(), std::io::ErrorKind::Other);
}

/// A batch shorter than asked clears the socket's readiness (so no empty
/// `recvmmsg` follows every wake-up); a datagram arriving afterwards must still
/// wake the receiver, every time.
#[tokio::test]
async fn short_batch_clears_readiness_without_losing_wakeups() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    let to = rx.local_addr().unwrap();
    let (mut a, mut b) = ([0u8; 64], [0u8; 64]);
    let mut meta = [RecvMeta::default(); 2];
    for round in 0..100u32 {
        let p = payload(round, 40);
        assert_eq!(tx.try_send(&[datagram(to, &p)]).unwrap(), 1);
        let mut bufs = [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)];
        assert_eq!(rx.recv_polled(&mut bufs, &mut meta).await.unwrap(), 1);
        assert_eq!(&a[..meta[0].len], &p[..]);
        // Nothing is waiting: a poll must not report data.
        let mut bufs = [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)];
        let waker = std::task::Waker::noop();
        let polled = rx.poll_recv(
            &mut std::task::Context::from_waker(waker),
            &mut bufs,
            &mut meta,
        );
        assert!(polled.is_pending(), "round {round}: {polled:?}");
        // A datagram sent while the receiver waits wakes it.
        let late = payload(round + 1000, 40);
        let send_later = async {
            tokio::task::yield_now().await;
            assert_eq!(tx.try_send(&[datagram(to, &late)]).unwrap(), 1);
        };
        let mut bufs = [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)];
        let recv = tokio::time::timeout(
            std::time::Duration::from_secs(5),
            rx.recv_polled(&mut bufs, &mut meta),
        );
        let (got, ()) = tokio::join!(recv, send_later);
        assert_eq!(got.expect("receiver woken").unwrap(), 1, "round {round}");
        assert_eq!(&a[..meta[0].len], &late[..]);
    }
}

#[tokio::test]
async fn the_receive_buffer_grows_and_never_shrinks() {
    let s = bind("127.0.0.1:0");
    let start = s.grow_recv_buffer(0).unwrap();
    assert!(start > 0);
    // Within `rmem_max` (or beyond it with CAP_NET_ADMIN) the kernel
    // reports twice what was asked; it never goes down.
    let grown = s.grow_recv_buffer(start).unwrap();
    assert!(grown >= start, "{grown} < {start}");
    assert_eq!(s.grow_recv_buffer(1024).unwrap(), grown);
}
