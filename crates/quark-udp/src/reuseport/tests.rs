//! Datagrams from many source ports reach the socket their DCID names, with
//! the classic and the eBPF program.

use std::net::UdpSocket;
use std::os::fd::AsFd;
use std::time::Duration;

use super::*;

const N: u8 = 3;
const STEER: CidSteering = CidSteering {
    dcid_byte: 1,
    sockets: N,
};

fn group() -> Vec<UdpSocket> {
    let sockets =
        crate::bind_std_reuseport("127.0.0.1:0".parse().unwrap(), usize::from(N)).unwrap();
    for s in &sockets {
        s.set_nonblocking(false).unwrap();
        s.set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
    }
    sockets
}

/// A short-header datagram whose DCID's byte 1 is `index`.
fn short(index: u8) -> Vec<u8> {
    vec![0x40, 0x07, index, 9, 9, 9, 9, 9, 9, 1, 2, 3]
}

/// A long-header one (DCID of 8 bytes, byte 1 is `index`).
fn long(index: u8) -> Vec<u8> {
    let mut d = vec![0xc0, 0, 0, 0, 1, 8, 0x07, index, 5, 5, 5, 5, 5, 5, 0];
    d.resize(60, 0);
    d
}

/// From 12 client sockets (12 source ports, so the hash alone would
/// scatter them), each datagram arrives at socket `index % N`.
fn check_steering(sockets: &[UdpSocket]) {
    let to = sockets[0].local_addr().unwrap();
    for i in 0..12u8 {
        let client = UdpSocket::bind("127.0.0.1:0").unwrap();
        for datagram in [short(i), long(i + 3)] {
            client.send_to(&datagram, to).unwrap();
            let want = usize::from(datagram[if datagram[0] & 0x80 != 0 { 7 } else { 2 }] % N);
            let mut buf = [0u8; 128];
            let (n, from) = sockets[want]
                .recv_from(&mut buf)
                .unwrap_or_else(|e| panic!("datagram {i} not at socket {want}: {e}"));
            assert_eq!(
                (&buf[..n], from),
                (&datagram[..], client.local_addr().unwrap())
            );
        }
    }
}

#[test]
fn classic_program_steers_by_dcid() {
    let sockets = group();
    attach_classic(sockets[0].as_fd(), STEER).unwrap();
    check_steering(&sockets);
}

#[test]
fn ebpf_program_steers_by_dcid() {
    let sockets = group();
    match attach_ebpf(sockets[1].as_fd(), STEER) {
        Ok(()) => check_steering(&sockets),
        Err(e) if e.raw_os_error() == Some(libc::EPERM) => {
            eprintln!("skipped: loading eBPF needs root or CAP_BPF ({e})");
        }
        Err(e) => panic!("eBPF steering: {e}"),
    }
}

#[test]
fn bad_parameters_are_refused() {
    let sockets = group();
    let zero = CidSteering {
        dcid_byte: 1,
        sockets: 0,
    };
    assert!(attach_classic(sockets[0].as_fd(), zero).is_err());
    let far = CidSteering {
        dcid_byte: 20,
        sockets: 3,
    };
    assert!(attach(sockets[0].as_fd(), far).is_err());
}

#[test]
fn inherited_descriptors_are_checked() {
    let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
    set_inheritable(socket.as_fd(), true).unwrap();
    let raw = std::os::fd::IntoRawFd::into_raw_fd(socket);
    let back = inherited_udp_socket(raw).unwrap();
    assert!(back.local_addr().is_ok());
    // A pipe is not a datagram socket; a closed descriptor is refused too.
    let file = std::fs::File::open("/dev/null").unwrap();
    assert!(inherited_udp_socket(file.as_raw_fd()).is_err());
    assert!(inherited_udp_socket(-1).is_err());
}
