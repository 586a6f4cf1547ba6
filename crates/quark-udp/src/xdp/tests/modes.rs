//! Both ends on AF_XDP, each attach mode, address resolution by ARP, what is
//! refused, and what the kernel keeps doing for everything else.

use std::io::ErrorKind;
use std::net::SocketAddr;
use std::time::Duration;

use tokio::sync::oneshot;

use super::{bind_kernel_when_free, by_tag, collect, datagram, pair, payload, run_in, send_all};
use crate::xdp::{Attach, Bind, XdpConfig, XdpSocket, bpf, program};
use crate::{Socket, Transmit};

/// Echoes `count` datagrams from one XDP socket to another and back, with the
/// given configuration on both ends; returns the modes the kernel granted.
fn echo_between_xdp_sockets(
    test: &str,
    config: impl Fn(&str) -> XdpConfig + Send + Clone + 'static,
) -> Option<String> {
    const COUNT: u32 = 300;
    let pair = pair(test)?;
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let server = SocketAddr::new(b.ip.into(), 443);
    let (ready, wait) = oneshot::channel();
    let config_b = config.clone();
    let echo = run_in(&b.netns, move || async move {
        let sock: Socket = XdpSocket::bind(server, &config_b(&b.interface))
            .unwrap()
            .into();
        ready.send(()).unwrap();
        let got = collect(&sock, COUNT as usize).await;
        for (data, meta) in &got {
            send_all(&sock, &[datagram(meta.addr, data, meta.ecn)]).await;
        }
        let Socket::Xdp(x) = &sock else {
            unreachable!()
        };
        x.mode().to_string()
    });
    let client = run_in(&a.netns, move || async move {
        let sock: Socket = XdpSocket::bind(SocketAddr::new(a.ip.into(), 0), &config(&a.interface))
            .unwrap()
            .into();
        wait.await.unwrap();
        let payloads: Vec<Vec<u8>> = (0..COUNT)
            .map(|i| payload(i, 20 + i as usize * 4))
            .collect();
        let transmits: Vec<Transmit<'_>> =
            payloads.iter().map(|p| datagram(server, p, 1)).collect();
        send_all(&sock, &transmits).await;
        let back = by_tag(collect(&sock, COUNT as usize).await);
        assert_eq!(back.len(), payloads.len());
        for ((data, meta), sent) in back.iter().zip(&payloads) {
            assert_eq!(data, sent);
            assert_eq!((meta.addr, meta.ecn), (server, 1));
        }
    });
    client.join().unwrap().unwrap();
    Some(echo.join().unwrap().unwrap())
}

#[test]
fn xdp_to_xdp_native() {
    if let Some(mode) = echo_between_xdp_sockets("x2x", XdpConfig::new) {
        assert_eq!(mode, "native XDP, copy mode");
    }
}

#[test]
fn xdp_to_xdp_generic_copy() {
    let generic = |name: &str| XdpConfig {
        attach: Attach::Generic,
        bind: Bind::Copy,
        udp_checksum: false,
        ..XdpConfig::new(name)
    };
    if let Some(mode) = echo_between_xdp_sockets("gen", generic) {
        assert_eq!(mode, "generic XDP, copy mode");
    }
}

#[test]
fn a_queue_is_free_again_right_after_its_socket_closes() {
    // Processes run one after another (`quark get` twice) each bind the same
    // queue; the kernel releases a closed socket's queue asynchronously.
    let Some(pair) = pair("rb") else { return };
    let a = pair.a.clone();
    let result = run_in(&a.netns, move || async move {
        for round in 0..20 {
            let config = XdpConfig::new(&a.interface);
            let socket = XdpSocket::bind(SocketAddr::new(a.ip.into(), 0), &config)
                .map_err(|e| format!("round {round}: {e}"))?;
            drop(socket);
        }
        Ok::<(), String>(())
    });
    result.join().unwrap().unwrap().unwrap();
}

#[test]
fn zero_copy_is_refused_on_veth() {
    let Some(pair) = pair("zc") else { return };
    let a = pair.a.clone();
    let result = run_in(&a.netns, move || async move {
        let config = XdpConfig {
            bind: Bind::ZeroCopy,
            ..XdpConfig::new(&a.interface)
        };
        XdpSocket::bind(SocketAddr::new(a.ip.into(), 0), &config).map(|_| ())
    });
    let err = result.join().unwrap().unwrap().unwrap_err();
    eprintln!("XDP_ZEROCOPY on veth: {err}");
    assert_eq!(err.kind(), ErrorKind::Unsupported);
}

#[test]
fn unknown_neighbours_go_through_the_kernel_which_resolves_them() {
    let Some(pair) = pair("arp") else { return };
    pair.forget_neighbours().unwrap();
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let kernel = SocketAddr::new(b.ip.into(), 7000);
    let (ready, wait) = oneshot::channel();
    // b: a kernel socket that answers two datagrams; its kernel must resolve a
    // by ARP, which a's XDP program passes to a's kernel.
    let answer = run_in(&b.netns, move || async move {
        let sock = Socket::bind_with(kernel, None).unwrap();
        ready.send(()).unwrap();
        for _ in 0..2 {
            let (data, meta) = collect(&sock, 1).await.remove(0);
            send_all(&sock, &[datagram(meta.addr, &data, 0)]).await;
        }
    });
    let asker = run_in(&a.netns, move || async move {
        let sock: Socket = XdpSocket::bind(
            SocketAddr::new(a.ip.into(), 0),
            &XdpConfig::new(&a.interface),
        )
        .unwrap()
        .into();
        wait.await.unwrap();
        // The first goes through a's kernel (b's address is unknown) and is not
        // lost; the second through AF_XDP (b's address was learned meanwhile).
        for tag in 0..2 {
            let hello = payload(tag, 100);
            send_all(&sock, &[datagram(kernel, &hello, 0)]).await;
            let got = collect(&sock, 1).await;
            assert_eq!(got[0].0, hello);
            assert_eq!(got[0].1.addr, kernel);
        }
    });
    asker.join().unwrap().unwrap();
    answer.join().unwrap().unwrap();
}

#[test]
fn gso_batches_under_generic_xdp_arrive_through_the_kernel() {
    // With generic XDP a GSO batch crosses veth whole (one ~8 KB frame), too large
    // for a UMEM frame: the program passes it on and the kernel socket gets it.
    let Some(pair) = pair("gso") else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let to = SocketAddr::new(a.ip.into(), 4433);
    let (ready, wait) = oneshot::channel();
    let receiver = run_in(&a.netns, move || async move {
        let config = XdpConfig {
            attach: Attach::Generic,
            ..XdpConfig::new(&a.interface)
        };
        let sock: Socket = XdpSocket::bind(to, &config).unwrap().into();
        ready.send(()).unwrap();
        by_tag(collect(&sock, 80).await)
    });
    let sender = run_in(&b.netns, move || async move {
        let sock = Socket::bind_with(SocketAddr::new(b.ip.into(), 0), None).unwrap();
        assert!(sock.max_gso_segments() > 1, "no UDP GSO here");
        wait.await.unwrap();
        for batch in 0..10u32 {
            let contents: Vec<u8> = (0..8).flat_map(|s| payload(batch * 8 + s, 1000)).collect();
            let t = Transmit {
                segment_size: Some(1000),
                ..datagram(to, &contents, 0)
            };
            send_all(&sock, &[t]).await;
        }
    });
    sender.join().unwrap().unwrap();
    let got = receiver.join().unwrap().unwrap();
    for (tag, (data, _)) in got.iter().enumerate() {
        assert_eq!(data, &payload(tag as u32, 1000));
    }
}

#[test]
fn other_traffic_still_reaches_the_kernel_and_the_program_leaves_with_the_socket() {
    let Some(pair) = pair("pass") else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let (port, a_ip) = (4433, a.ip);
    let result = run_in(&a.netns, move || async move {
        let local = SocketAddr::new(a.ip.into(), port);
        let sock = XdpSocket::bind(local, &XdpConfig::new(&a.interface)).unwrap();
        // One program per interface: a second socket can't attach.
        let other = SocketAddr::new(a.ip.into(), port + 1);
        let err = XdpSocket::bind(other, &XdpConfig::new(&a.interface)).unwrap_err();
        eprintln!("second AF_XDP socket on one interface: {err}");
        // Another port of a's kernel stack still works while the program runs.
        let kernel = bind_kernel_when_free(other).await;
        let got = collect(&kernel, 1).await;
        assert_eq!(got[0].0, payload(1, 64));
        drop(sock);
        // Gone with the socket: the kernel now gets what went to AF_XDP.
        let kernel = bind_kernel_when_free(local).await;
        let got = collect(&kernel, 1).await;
        assert_eq!(got[0].0, payload(2, 64));
    });
    let sender = run_in(&b.netns, move || async move {
        let sock = Socket::bind_with(SocketAddr::new(b.ip.into(), 0), None).unwrap();
        // Repeat each until the receiver moves on (it binds in between, and the
        // refused second AF_XDP bind waits a moment for the queue first).
        for (tag, to_port) in [(1, port + 1), (2, port)] {
            let p = payload(tag, 64);
            for _ in 0..100 {
                send_all(
                    &sock,
                    &[datagram(SocketAddr::new(a_ip.into(), to_port), &p, 0)],
                )
                .await;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
    result.join().unwrap().unwrap();
    sender.join().unwrap().unwrap();
}

#[test]
fn ipv6_and_oversize_datagrams_are_refused() {
    let Some(pair) = pair("refuse") else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let result = run_in(&a.netns, move || async move {
        let sock = XdpSocket::bind(
            SocketAddr::new(a.ip.into(), 0),
            &XdpConfig::new(&a.interface),
        )
        .unwrap();
        let ok = payload(0, 100);
        let big = payload(1, 1473); // 1500-byte MTU: 1472 bytes of UDP payload
        let v4 = SocketAddr::new(b.ip.into(), 9);
        let v6: SocketAddr = "[2001:db8::1]:9".parse().unwrap();
        assert_eq!(sock.try_send(&[]).unwrap(), 0);
        let err = sock.try_send(&[datagram(v6, &ok, 0)]).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Unsupported);
        let err = sock.try_send(&[datagram(v4, &big, 0)]).unwrap_err();
        assert_eq!(err.raw_os_error(), Some(libc::EMSGSIZE));
        // A refused transmit after a good one: the good one counts, the next
        // call reports the error.
        let two = [datagram(v4, &ok, 0), datagram(v4, &big, 0)];
        assert_eq!(sock.try_send(&two).unwrap(), 1);
        assert!(sock.try_send(&two[1..]).is_err());
        assert!(
            XdpSocket::bind(SocketAddr::new(v6.ip(), 0), &XdpConfig::new(&a.interface)).is_err()
        );
    });
    result.join().unwrap().unwrap();
}

#[test]
fn the_verifier_accepts_the_program() {
    if crate::netns::unavailable().is_some() {
        eprintln!("skipped: needs root");
        return;
    }
    let Ok(map) = bpf::create_xskmap(4) else {
        eprintln!("skipped: no XSKMAP");
        return;
    };
    use std::os::fd::AsRawFd;
    for addr in [
        std::net::Ipv4Addr::UNSPECIFIED,
        std::net::Ipv4Addr::new(192, 0, 2, 200),
    ] {
        let insns = program::redirect_udp(map.as_raw_fd(), addr, 65535, 3840);
        bpf::load_xdp(&insns).unwrap();
    }
}
