//! ICMP Packet Too Big as a hint for path MTU discovery (RFC 8899 §4.6): a
//! relay between client and server acts as a router onto a 1 500-byte link,
//! dropping larger datagrams and answering each with an ICMP "fragmentation
//! needed" (IPv4) or ICMPv6 "packet too big" to its sender, as a router
//! does. The connections read those from their sockets' error queues and
//! settle on the reported size after one failed probe, instead of losing
//! each size tried three times.
//!
//! Without a router, a probe larger than the interface itself (loopback's
//! MTU set to 1 500 bytes) is refused by the host's own kernel, whose local
//! report gives the interface's MTU: the search takes it the same way.
//!
//! A worker group's connection whose reports reach another worker (as the
//! kernel hashes them after the client moved) gets them from that worker.
//!
//! Runs in a network namespace of its own (root, `unshare` and `ip`: CI has
//! them; skipped elsewhere), so that the forged reports' route MTU stays
//! there.

mod common;

use std::net::{SocketAddr, UdpSocket};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{data, echo, echo_server_and_client_on, sha, spawn_echo};
use quark::tls::{self, Identity, Verify};
use quark::{Connection, Endpoint};
use socket2::{Domain, Protocol, Socket, Type};

const INSIDE: &str = "QUARK_TOO_BIG_NAMESPACE";
/// The emulated link's MTU.
const LINK_MTU: u16 = 1500;

/// The UDP payload the link carries toward `to`.
fn link_payload(to: SocketAddr) -> usize {
    usize::from(LINK_MTU) - if to.is_ipv4() { 20 + 8 } else { 40 + 8 }
}

/// Outside: runs test `name` of this binary again in a new network
/// namespace with loopback up, and returns false. Inside that run: true.
fn inside(name: &str) -> bool {
    inside_with(name, "ip link set lo up")
}

/// As `inside`, with `setup` (shell) run in the namespace first.
fn inside_with(name: &str, setup: &str) -> bool {
    if std::env::var_os(INSIDE).is_some() {
        return true;
    }
    let usable = Command::new("unshare")
        .args(["-n", "ip", "link", "set", "lo", "up"])
        .status()
        .is_ok_and(|s| s.success());
    if !usable {
        eprintln!("no network namespace here (root, unshare and ip needed): skipped");
        return false;
    }
    let status = Command::new("unshare")
        .args([
            "-n",
            "sh",
            "-c",
            r#"eval "$2" && exec "$0" --exact "$1" --test-threads 1"#,
        ])
        .arg(std::env::current_exe().unwrap())
        .arg(name)
        .arg(setup)
        .env(INSIDE, "1")
        .status()
        .unwrap();
    assert!(status.success(), "{name} in the namespace: {status}");
    false
}

/// The Internet checksum (RFC 1071).
fn checksum(bytes: &[u8]) -> u16 {
    let mut sum: u32 = bytes
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// The IP and UDP headers `datagram` (UDP payload) had from `from` to `to`
/// (IPv4: DF set; checksums the kernel does not check left zero).
fn headers(from: SocketAddr, to: SocketAddr, datagram: &[u8]) -> Vec<u8> {
    let udp_len = (8 + datagram.len()) as u16;
    let mut h = match (from, to) {
        (SocketAddr::V4(f), SocketAddr::V4(t)) => {
            let mut ip = vec![0x45, 0];
            ip.extend_from_slice(&(20 + udp_len).to_be_bytes());
            ip.extend_from_slice(&[0, 0, 0x40, 0, 64, 17, 0, 0]); // DF, TTL, UDP
            ip.extend_from_slice(&f.ip().octets());
            ip.extend_from_slice(&t.ip().octets());
            let sum = checksum(&ip);
            ip[10..12].copy_from_slice(&sum.to_be_bytes());
            ip
        }
        (SocketAddr::V6(f), SocketAddr::V6(t)) => {
            let mut ip = vec![0x60, 0, 0, 0];
            ip.extend_from_slice(&udp_len.to_be_bytes());
            ip.extend_from_slice(&[17, 64]); // UDP, hop limit
            ip.extend_from_slice(&f.ip().octets());
            ip.extend_from_slice(&t.ip().octets());
            ip
        }
        _ => panic!("one family"),
    };
    h.extend_from_slice(&from.port().to_be_bytes());
    h.extend_from_slice(&to.port().to_be_bytes());
    h.extend_from_slice(&udp_len.to_be_bytes());
    h.extend_from_slice(&[0, 0]);
    h
}

/// What a router sends back for `datagram` (UDP payload) from `from` to
/// `to` that does not fit its next link: ICMP Fragmentation Needed (type 3
/// code 4) or ICMPv6 Packet Too Big (type 2), with the link's MTU, quoting
/// the headers and the payload's start.
fn too_big_report(from: SocketAddr, to: SocketAddr, datagram: &[u8]) -> Vec<u8> {
    let mut icmp = if from.is_ipv4() {
        let mut m = vec![3, 4, 0, 0, 0, 0];
        m.extend_from_slice(&LINK_MTU.to_be_bytes());
        m
    } else {
        let mut m = vec![2, 0, 0, 0];
        m.extend_from_slice(&u32::from(LINK_MTU).to_be_bytes());
        m
    };
    icmp.extend_from_slice(&headers(from, to, datagram));
    icmp.extend_from_slice(&datagram[..datagram.len().min(64)]);
    if from.is_ipv4() {
        // (An ICMPv6 socket fills its checksum in itself.)
        let sum = checksum(&icmp);
        icmp[2..4].copy_from_slice(&sum.to_be_bytes());
    }
    icmp
}

/// A relay onto a 1 500-byte link: the client sends to its first address,
/// the server sees it at its second. Datagrams over the link's payload are
/// dropped and reported to their sender. Stops when `stop` is set.
fn router(server: SocketAddr, stop: Arc<AtomicBool>) -> SocketAddr {
    let local = SocketAddr::new(server.ip(), 0);
    let near = UdpSocket::bind(local).unwrap();
    let far = UdpSocket::bind(local).unwrap();
    // A router's queue: with the default buffers this relay, one thread per
    // direction sharing two cores with the endpoints, dropped hundreds of
    // datagrams per echo (without GSO), a probe among them now and then,
    // whose retry broke the exact count of probes checked here.
    for socket in [&near, &far] {
        let _ = socket2::SockRef::from(socket).set_recv_buffer_size(4 << 20);
    }
    let icmp = if server.is_ipv4() {
        Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
    } else {
        Socket::new(Domain::IPV6, Type::RAW, Some(Protocol::ICMPV6))
    };
    let icmp = icmp.unwrap();
    let icmp = Arc::new(icmp);
    let addr = near.local_addr().unwrap();
    let client = Arc::new(std::sync::Mutex::new(None::<SocketAddr>));
    for (from, to, upstream) in [
        (near.try_clone().unwrap(), far.try_clone().unwrap(), true),
        (far, near, false),
    ] {
        let (stop, icmp, client) = (stop.clone(), icmp.clone(), client.clone());
        from.set_read_timeout(Some(Duration::from_millis(50)))
            .unwrap();
        std::thread::spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, sender)) = from.recv_from(&mut buf) else {
                    continue;
                };
                if upstream {
                    *client.lock().unwrap() = Some(sender);
                }
                if n > link_payload(sender) {
                    let here = from.local_addr().unwrap();
                    let report = too_big_report(sender, here, &buf[..n]);
                    let dest = SocketAddr::new(sender.ip(), 0);
                    icmp.send_to(&report, &dest.into()).unwrap();
                    continue;
                }
                let dest = if upstream {
                    Some(server)
                } else {
                    *client.lock().unwrap()
                };
                if let Some(dest) = dest {
                    let _ = to.send_to(&buf[..n], dest);
                }
            }
        });
    }
    addr
}

/// Echoes 2 MB through the router between a client and a server on
/// loopback (`localhost`: 127.0.0.1 or ::1) and checks the path MTU the
/// client settled on and how many probes that took.
fn echo_through_the_router(localhost: &str) {
    echo_and_check(localhost, true);
}

/// Echoes 2 MB from a client to a server on `localhost`, through the
/// router or directly, and checks that the client settled on the link's
/// size in two probes.
fn echo_and_check(localhost: &str, routed: bool) {
    quark::counters::set_enabled(true);
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let (_server, client, config, server) = echo_server_and_client_on(b"too-big", localhost);
        let stop = Arc::new(AtomicBool::new(false));
        let via = if routed {
            router(server, stop.clone())
        } else {
            server
        };
        let conn = client.connect(config, via, "localhost").unwrap();
        let conn = tokio::time::timeout(Duration::from_secs(20), conn)
            .await
            .expect("handshake")
            .unwrap();
        let body = data(2_000_000, 9);
        let back = tokio::time::timeout(Duration::from_secs(60), echo(&conn, &body))
            .await
            .expect("the echo completes");
        assert_eq!(sha(&back), sha(&body));
        let stats = conn.stats();
        assert_eq!(
            conn.path_mtu(),
            link_payload(via),
            "the link's size, exactly"
        );
        assert_eq!(stats.mtu_probes, 2, "one too big, then the reported size");
        assert!(quark::counters::driver_snapshot().too_big_hints >= 1);
        stop.store(true, Ordering::Relaxed);
    });
}

#[test]
fn ipv4_fragmentation_needed_ends_the_search_at_the_link_size() {
    if inside("ipv4_fragmentation_needed_ends_the_search_at_the_link_size") {
        echo_through_the_router("127.0.0.1");
    }
}

#[test]
fn ipv6_packet_too_big_ends_the_search_at_the_link_size() {
    if inside("ipv6_packet_too_big_ends_the_search_at_the_link_size") {
        echo_through_the_router("::1");
    }
}

/// No router: loopback's own MTU is 1 500 bytes, so the kernel refuses the
/// first probe (65 000 bytes) itself and says so in a local report, which
/// gives the interface's MTU; the search takes it as a network's report.
#[test]
fn a_probe_beyond_the_interface_is_refused_and_reported_locally() {
    let name = "a_probe_beyond_the_interface_is_refused_and_reported_locally";
    if inside_with(name, "ip link set lo up && ip link set lo mtu 1500") {
        echo_and_check("127.0.0.1", false);
    }
}

#[test]
fn a_probe_beyond_the_interface_is_refused_and_reported_locally_ipv6() {
    let name = "a_probe_beyond_the_interface_is_refused_and_reported_locally_ipv6";
    if inside_with(name, "ip link set lo up && ip link set lo mtu 1500") {
        echo_and_check("::1", false);
    }
}

/// A worker group of two through the router, with the test hook making
/// worker 1 receive what worker 0's socket gets (as when the client's new
/// address hashes to worker 1): worker 0's connection's too-big reports
/// reach worker 1, which holds no connection they fit and passes them on.
/// The server's search ends at the link's size in two probes all the same.
#[test]
fn a_worker_group_passes_a_report_on_to_the_connection_s_worker() {
    if inside("a_worker_group_passes_a_report_on_to_the_connection_s_worker") {
        let rt = tokio::runtime::Runtime::new().unwrap();
        rt.block_on(group_echo_through_the_router());
    }
}

async fn group_echo_through_the_router() {
    let id = Identity::self_signed(&["localhost"]).unwrap();
    let server = tls::server_config(&id, &[b"too-big"]).unwrap();
    let group = Endpoint::server_multi(server, "127.0.0.1:0".parse().unwrap(), 2).unwrap();
    let served = Arc::new(std::sync::Mutex::new(Vec::<Connection>::new()));
    let seen = served.clone();
    group.serve(move |conn| {
        seen.lock().unwrap().push(conn.clone());
        spawn_echo(conn);
        async {}
    });
    group.test_misdeliver(Some(1));
    let config = tls::client_config(Verify::Roots(vec![id.cert.clone()]), &[b"too-big"]).unwrap();
    // The router's address picks the worker: new routers until worker 0
    // holds the connection.
    for _ in 0..32 {
        let stop = Arc::new(AtomicBool::new(false));
        let via = router(group.local_addr(), stop.clone());
        let client = Endpoint::client("127.0.0.1:0".parse().unwrap()).unwrap();
        let conn = client.connect(config.clone(), via, "localhost").unwrap();
        let conn = tokio::time::timeout(Duration::from_secs(20), conn)
            .await
            .expect("handshake")
            .unwrap();
        let mut on = None;
        for _ in 0..100 {
            on = served.lock().unwrap().pop();
            if on.is_some() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let on = on.expect("the group serves the connection");
        if on.worker() != Some(0) {
            conn.close(0, b"");
            stop.store(true, Ordering::Relaxed);
            continue;
        }
        let body = data(2_000_000, 11);
        let back = tokio::time::timeout(Duration::from_secs(60), echo(&conn, &body))
            .await
            .expect("the echo completes");
        assert_eq!(sha(&back), sha(&body));
        assert_eq!(on.path_mtu(), link_payload(via), "the link's size, exactly");
        assert_eq!(
            on.stats().mtu_probes,
            2,
            "one too big, then the reported size"
        );
        let stats = group.stats();
        assert!(stats[0].misdelivered > 0, "{stats:?}");
        assert!(stats[1].reports_handed >= 1, "{stats:?}");
        group.test_misdeliver(None);
        stop.store(true, Ordering::Relaxed);
        return;
    }
    panic!("no router's address hashed to worker 0 in 32 tries");
}
