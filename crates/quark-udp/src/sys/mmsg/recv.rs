//! Receiving a batch of messages with one `recvmmsg` and parsing their metadata.

use std::io;
use std::mem::{self, MaybeUninit};
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::BorrowedFd;

use super::super::State;
use super::super::addr::{RawAddr, ip_to_canonical};
use super::super::cmsg;
use crate::stats::Timer;
use crate::{BATCH_SIZE, RecvMeta};

/// Receives up to `min(bufs.len(), meta.len(), BATCH_SIZE)` messages, one per
/// buffer; returns how many and fills `meta` for each. Each `iovec` must
/// describe memory writable for its length (it may be uninitialised: only the
/// kernel writes it).
pub(crate) fn recv(
    fd: BorrowedFd<'_>,
    state: &State,
    bufs: &mut [libc::iovec],
    meta: &mut [RecvMeta],
) -> io::Result<usize> {
    let n = bufs.len().min(meta.len()).min(BATCH_SIZE);
    if n == 0 {
        return Ok(0);
    }
    let mut hdrs = [const { MaybeUninit::<libc::mmsghdr>::uninit() }; BATCH_SIZE];
    let mut names = [const { MaybeUninit::<RawAddr>::uninit() }; BATCH_SIZE];
    let mut ctrl = [const { MaybeUninit::<cmsg::Buf>::uninit() }; BATCH_SIZE];
    for (i, buf) in bufs[..n].iter_mut().enumerate() {
        // SAFETY: all-zero is a valid `mmsghdr` (integers and null pointers).
        let mut hdr: libc::mmsghdr = unsafe { mem::zeroed() };
        hdr.msg_hdr.msg_name = (names[i].write(RawAddr::ZERO) as *mut RawAddr).cast();
        hdr.msg_hdr.msg_namelen = RawAddr::CAPACITY;
        hdr.msg_hdr.msg_iov = buf;
        hdr.msg_hdr.msg_iovlen = 1;
        hdr.msg_hdr.msg_control = ctrl[i].as_mut_ptr().cast();
        hdr.msg_hdr.msg_controllen = cmsg::BUF_LEN as _;
        hdrs[i].write(hdr);
    }
    // SAFETY: the loop above initialised the first `n` headers; `MaybeUninit<T>` has
    // the layout of `T`.
    let hdrs: &mut [libc::mmsghdr] =
        unsafe { std::slice::from_raw_parts_mut(hdrs.as_mut_ptr().cast(), n) };

    let timer = Timer::start();
    let (result, syscalls) = super::recvmmsg(fd, state, hdrs);
    let elapsed = timer.stop();
    let got = match result {
        Ok(got) => got.min(n),
        Err(error) => {
            elapsed.received(syscalls, 0, 0);
            return Err(error);
        }
    };

    let (mut datagrams, mut bytes) = (0, 0);
    for (i, hdr) in hdrs[..got].iter().enumerate() {
        let name_len = hdr.msg_hdr.msg_namelen.min(RawAddr::CAPACITY);
        // SAFETY: initialised to zeros above, then partly overwritten by the kernel.
        let name = unsafe { names[i].assume_init_ref() }.decode(name_len);
        // `msg_controllen` is `size_t` on glibc, `socklen_t` on musl.
        #[allow(clippy::unnecessary_cast)]
        let ctrl_len = (hdr.msg_hdr.msg_controllen as usize).min(cmsg::BUF_LEN);
        // SAFETY: the kernel wrote `msg_controllen` bytes of control data (bounded
        // by the buffer's length).
        let ctrl = unsafe { std::slice::from_raw_parts(ctrl[i].as_ptr().cast::<u8>(), ctrl_len) };
        let flags = hdr.msg_hdr.msg_flags;
        if flags & (libc::MSG_TRUNC | libc::MSG_CTRUNC) != 0 {
            tracing::debug!(
                flags,
                "received message truncated; buffer or control space too small"
            );
        }
        let m = parse(hdr.msg_len as usize, name, ctrl);
        datagrams += m.len.div_ceil(m.stride).max(1);
        bytes += m.len;
        meta[i] = m;
    }
    elapsed.received(syscalls, datagrams, bytes);
    Ok(got)
}

/// Builds the metadata of one message of `len` bytes from its source address and
/// control data.
fn parse(len: usize, addr: Option<SocketAddr>, ctrl: &[u8]) -> RecvMeta {
    let mut meta = RecvMeta {
        addr: addr.unwrap_or(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), 0)),
        len,
        stride: len,
        ecn: 0,
        dst_ip: None,
    };
    for c in cmsg::decode(ctrl) {
        match (c.level, c.kind) {
            // IPv4 delivers the TOS byte as one byte, IPv6 the traffic class as an int.
            (libc::IPPROTO_IP, libc::IP_TOS) | (libc::IPPROTO_IPV6, libc::IPV6_TCLASS) => {
                if let Some(tos) = cmsg::int(c.data) {
                    meta.ecn = (tos & 0b11) as u8;
                }
            }
            // struct in_pktinfo { int ipi_ifindex; in_addr ipi_spec_dst; in_addr ipi_addr; }:
            // ipi_addr is the header's destination.
            (libc::IPPROTO_IP, libc::IP_PKTINFO) => {
                if let Some(&[a, b, c, d]) = c.data.get(8..12) {
                    meta.dst_ip = Some(IpAddr::V4(Ipv4Addr::new(a, b, c, d)));
                }
            }
            // struct in6_pktinfo { in6_addr ipi6_addr; unsigned ipi6_ifindex; }
            (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO) => {
                if let Some(addr) = c.data.get(..16).and_then(|a| <[u8; 16]>::try_from(a).ok()) {
                    meta.dst_ip = Some(ip_to_canonical(IpAddr::V6(Ipv6Addr::from(addr))));
                }
            }
            (libc::SOL_UDP, libc::UDP_GRO) => {
                if let Some(size) = cmsg::int(c.data).and_then(|s| usize::try_from(s).ok()) {
                    meta.stride = size;
                }
            }
            _ => {}
        }
    }
    // Never 0 and never beyond the data, so `chunks(stride)` is always safe.
    meta.stride = meta.stride.clamp(1, len.max(1));
    meta
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sys::cmsg::{Buf, Encoder};

    fn parse_with(len: usize, build: impl FnOnce(&mut Encoder<'_>)) -> RecvMeta {
        let mut buf = MaybeUninit::<Buf>::uninit();
        let mut enc = Encoder::new(&mut buf);
        build(&mut enc);
        let n = enc.len();
        // SAFETY: the encoder initialised the first `n` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), n) };
        parse(len, None, bytes)
    }

    #[test]
    fn gro_tos_and_pktinfo() {
        let m = parse_with(3000, |e| {
            e.push(libc::SOL_UDP, libc::UDP_GRO, &1200i32.to_ne_bytes());
            e.push(libc::IPPROTO_IP, libc::IP_TOS, &[0b1010_1011]);
            e.push(
                libc::IPPROTO_IP,
                libc::IP_PKTINFO,
                &[0, 0, 0, 0, 9, 9, 9, 9, 10, 0, 0, 1],
            );
        });
        assert_eq!((m.len, m.stride, m.ecn), (3000, 1200, 0b11));
        assert_eq!(m.dst_ip, Some("10.0.0.1".parse().unwrap()));
    }

    #[test]
    fn v6_tclass_and_mapped_pktinfo() {
        let mut info = [0u8; 20];
        info[..16].copy_from_slice(&"::ffff:192.0.2.1".parse::<Ipv6Addr>().unwrap().octets());
        let m = parse_with(100, |e| {
            e.push(
                libc::IPPROTO_IPV6,
                libc::IPV6_TCLASS,
                &0x02i32.to_ne_bytes(),
            );
            e.push(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &info);
        });
        assert_eq!((m.stride, m.ecn), (100, 2));
        assert_eq!(m.dst_ip, Some("192.0.2.1".parse().unwrap()));
    }

    #[test]
    fn hostile_values_are_bounded() {
        // A zero or negative GRO size, short pktinfo, empty datagram.
        let m = parse_with(0, |e| {
            e.push(libc::SOL_UDP, libc::UDP_GRO, &0i32.to_ne_bytes());
            e.push(libc::IPPROTO_IP, libc::IP_PKTINFO, &[1, 2, 3]);
        });
        assert_eq!((m.len, m.stride, m.dst_ip), (0, 1, None));
        let m = parse_with(50, |e| {
            e.push(libc::SOL_UDP, libc::UDP_GRO, &(-5i32).to_ne_bytes())
        });
        assert_eq!(m.stride, 50);
        let m = parse_with(50, |e| {
            e.push(libc::SOL_UDP, libc::UDP_GRO, &9000i32.to_ne_bytes())
        });
        assert_eq!(m.stride, 50);
    }
}
