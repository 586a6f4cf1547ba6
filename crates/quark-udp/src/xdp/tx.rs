//! Sending: cut each transmit into datagrams, build each one's frame (headers and
//! payload) in an idle send frame, queue the frames on the TX ring, and wake the
//! kernel; frames come back through the completion ring.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;

use super::wire::{self, HEADERS, IP_LEN, UDP_LEN};
use super::xsk::{FRAME_SIZE, RX_HEADROOM};
use super::{Tx, XdpSocket};
use crate::Transmit;
use crate::stats::Timer;
use crate::sys::addr::{ip_to_canonical, to_canonical};

/// Most wake-up calls per flush (each sends up to the whole TX ring).
const MAX_KICKS: usize = 8;

pub(super) fn send(sock: &XdpSocket, tx: &mut Tx, transmits: &[Transmit<'_>]) -> io::Result<usize> {
    let timer = Timer::start();
    reclaim(tx);
    let max_payload = sock
        .iface
        .mtu
        .saturating_sub(IP_LEN + UDP_LEN)
        .min((FRAME_SIZE - RX_HEADROOM) as usize - HEADERS);
    let (mut done, mut datagrams, mut bytes) = (0, 0, 0);
    let mut refused = None;
    for t in transmits {
        let dst = match to_canonical(t.destination) {
            SocketAddr::V4(dst) => dst,
            SocketAddr::V6(_) => {
                refused = Some(io::Error::new(
                    io::ErrorKind::Unsupported,
                    "AF_XDP sockets carry IPv4 only",
                ));
                break;
            }
        };
        let size = t.segment().unwrap_or(t.contents.len());
        if size > max_payload {
            // Like a kernel socket with IP_PMTUDISC_PROBE: EMSGSIZE for this one.
            refused = Some(io::Error::from_raw_os_error(libc::EMSGSIZE));
            break;
        }
        let segments = t.segments();
        if tx.free.len() < segments || (tx.ring.free(segments as u32) as usize) < segments {
            break; // no room: the caller comes back once frames complete
        }
        let src_ip = match t.src_ip.map(ip_to_canonical) {
            Some(IpAddr::V4(ip)) => ip,
            _ => *sock.local.ip(),
        };
        let next_hop = match tx.resolved {
            Some((ip, mac)) if ip == *dst.ip() => Some(mac),
            _ => sock.resolve(*dst.ip()),
        };
        let Some(dst_mac) = next_hop else {
            // The kernel resolves the address and sends it; if its buffer is
            // full the datagram is lost, as on a busy link.
            if let Err(error) = sock.kernel.try_send(std::slice::from_ref(t)) {
                tracing::debug!(%error, %dst, "send through the kernel socket failed");
            }
            done += 1;
            continue;
        };
        tx.resolved = Some((*dst.ip(), dst_mac));
        let header = wire::Header {
            src_mac: sock.iface.mac,
            dst_mac,
            src: std::net::SocketAddrV4::new(src_ip, sock.local.port()),
            dst,
            ecn: t.ecn,
        };
        for k in 0..segments {
            let start = (k * size).min(t.contents.len());
            let chunk = &t.contents[start..(start + size).min(t.contents.len())];
            // `free` held `segments` frames (checked above).
            let Some(addr) = tx.free.pop() else { break };
            let len = HEADERS + chunk.len();
            let Some(ptr) = sock.umem.ptr(addr, len) else {
                tx.free.push(addr); // unreachable: len <= FRAME_SIZE
                break;
            };
            // SAFETY: the frame was on the free list, so neither the kernel (it
            // returned it through the completion ring, or never had it) nor any
            // other borrow uses it; `ptr` covers `len` bytes of that frame.
            let frame = unsafe { std::slice::from_raw_parts_mut(ptr, len) };
            frame[HEADERS..].copy_from_slice(chunk);
            wire::write(frame, &header, chunk.len(), sock.udp_checksum);
            tx.ring.push(libc::xdp_desc {
                addr,
                len: len as u32,
                options: 0,
            });
            datagrams += 1;
            bytes += chunk.len();
        }
        done += 1;
    }
    tx.ring.submit();
    let kicked = flush(sock, tx);
    timer
        .stop()
        .sent(kicked.as_ref().map_or(0, |&n| n), datagrams, bytes);
    kicked?;
    match (done, refused) {
        (0, Some(error)) => Err(error),
        (0, None) => Err(io::ErrorKind::WouldBlock.into()),
        (done, _) => Ok(done),
    }
}

/// Takes sent frames back from the completion ring.
fn reclaim(tx: &mut Tx) {
    let n = tx.comp.available();
    for i in 0..n {
        tx.free.push(tx.comp.peek(i));
    }
    tx.comp.consume(n);
    tx.comp.release();
}

/// Wakes the kernel until it has taken every queued frame, it stops making
/// progress (device busy), or [`MAX_KICKS`] calls were made; remembers in
/// `tx_pending` whether frames are left. Returns the calls made.
pub(super) fn flush(sock: &XdpSocket, tx: &mut Tx) -> io::Result<usize> {
    let mut calls = 0;
    let pending = loop {
        let before = tx.ring.in_flight();
        if before == 0 {
            break false;
        }
        if !tx.ring.needs_wakeup() {
            break false; // the driver picks them up by itself
        }
        if calls == MAX_KICKS {
            break true;
        }
        calls += 1;
        // SAFETY: a zero-length, non-blocking send of no buffer to no address:
        // the kernel reads no user memory beyond the rings it owns.
        let rc = unsafe {
            libc::sendto(
                sock.io.get_ref().as_raw_fd(),
                std::ptr::null(),
                0,
                libc::MSG_DONTWAIT,
                std::ptr::null(),
                0,
            )
        };
        if rc < 0 {
            let error = io::Error::last_os_error();
            match error.raw_os_error() {
                // Budget used up, completion ring full, device busy, or a frame
                // dropped by the device: progress decides what's next.
                Some(libc::EAGAIN | libc::EBUSY | libc::ENOBUFS | libc::EINTR) => {}
                _ => {
                    sock.tx_pending.store(false, Relaxed);
                    return Err(error);
                }
            }
        }
        reclaim(tx);
        if tx.ring.in_flight() >= before {
            break true;
        }
    };
    sock.tx_pending.store(pending, Relaxed);
    Ok(calls)
}
