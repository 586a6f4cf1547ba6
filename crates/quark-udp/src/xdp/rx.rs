//! Receiving: take frames off the RX ring, check their headers, copy the payloads
//! into the caller's buffers (coalescing equal-size datagrams of one flow, like
//! UDP GRO), and give the frames back through the fill ring.

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering::Relaxed;

use super::xsk::Umem;
use super::{Rx, XdpSocket, lock, wire};
use crate::bufs::RecvBufs;
use crate::stats::Timer;
use crate::{MAX_GRO_SEGMENTS, RecvMeta};

pub(super) fn recv<B: RecvBufs + ?Sized>(
    sock: &XdpSocket,
    rx: &mut Rx,
    bufs: &mut B,
    meta: &mut [RecvMeta],
) -> io::Result<usize> {
    let n = bufs.count().min(meta.len());
    if n == 0 {
        return Ok(0);
    }
    let timer = Timer::start();
    let gro = sock.gro.load(Relaxed);
    // Every frame taken off the RX ring goes straight back to the fill ring, so
    // take no more than it has room for (with twice the slots as frames it
    // always has; see `Xsk::open`). The rest wait for the next call.
    let ready = rx.ring.available();
    let ready = ready.min(rx.fill.free(ready));
    let (mut msgs, mut taken, mut datagrams, mut bytes) = (0, 0, 0, 0);
    while taken < ready {
        let desc = rx.ring.peek(taken);
        let frame = sock.umem.ptr(desc.addr, desc.len as usize).map(|ptr| {
            // SAFETY: the frame came off the RX ring, so the kernel is done writing
            // it and won't touch it until it is back in the fill ring (below,
            // after this borrow ends); `ptr` covers `desc.len` bytes of one frame.
            unsafe { std::slice::from_raw_parts(ptr.cast_const(), desc.len as usize) }
        });
        let parsed = frame
            .and_then(wire::parse)
            .filter(|p| p.dst.port() == sock.local.port());
        if let (Some(frame), Some(p)) = (frame, parsed) {
            let payload = &frame[p.payload.clone()];
            let src = SocketAddr::V4(p.src);
            let dst_ip = Some(IpAddr::V4(*p.dst.ip()));
            let joined = gro && msgs > 0 && {
                let m = &mut meta[msgs - 1];
                let fits = m.addr == src
                    && m.dst_ip == dst_ip
                    && m.ecn == p.ecn
                    && m.len > 0
                    && !payload.is_empty()
                    && payload.len() <= m.stride
                    && m.len % m.stride == 0
                    && m.len / m.stride < MAX_GRO_SEGMENTS
                    && m.len + payload.len() <= bufs.room(msgs - 1);
                if fits {
                    bufs.write(msgs - 1, m.len, payload);
                    m.len += payload.len();
                }
                fits
            };
            if !joined {
                if msgs == n {
                    break; // no buffer left: this frame waits for the next call
                }
                let room = bufs.room(msgs);
                let len = payload.len().min(room);
                if len < payload.len() {
                    tracing::debug!(
                        size = payload.len(),
                        buffer = room,
                        "received datagram truncated; buffer too small"
                    );
                }
                bufs.write(msgs, 0, &payload[..len]);
                meta[msgs] = RecvMeta {
                    addr: src,
                    len,
                    stride: len.max(1),
                    ecn: p.ecn,
                    dst_ip,
                };
                msgs += 1;
            }
            datagrams += 1;
            bytes += payload.len();
            if rx.learned != Some((*p.src.ip(), p.src_mac)) {
                rx.learned = Some((*p.src.ip(), p.src_mac));
                lock(&sock.neigh).learn(*p.src.ip(), p.src_mac);
            }
        }
        // Give the frame back (an address outside the UMEM, which the kernel
        // never hands out, is not passed on).
        let base = Umem::base(desc.addr);
        if sock.umem.ptr(base, 0).is_some() {
            rx.fill.push(base);
        }
        taken += 1;
    }
    rx.ring.consume(taken);
    rx.ring.release();
    rx.fill.submit();
    let mut syscalls = 0;
    if rx.fill.needs_wakeup() {
        // Zero-copy drivers wait for this to refill their receive queue.
        syscalls += 1;
        wake(sock);
    }
    sock.rx_xdp.fetch_add(datagrams as u64, Relaxed);
    timer.stop().received(syscalls, datagrams, bytes);
    if msgs == 0 {
        return Err(io::ErrorKind::WouldBlock.into());
    }
    Ok(msgs)
}

/// `recvfrom` with no buffer: tells the driver that fill-ring frames are waiting.
fn wake(sock: &XdpSocket) {
    // SAFETY: a zero-length, non-blocking receive into no buffer and no address:
    // the kernel reads and writes no user memory.
    let rc = unsafe {
        libc::recvfrom(
            sock.io.get_ref().as_raw_fd(),
            std::ptr::null_mut(),
            0,
            libc::MSG_DONTWAIT,
            std::ptr::null_mut(),
            std::ptr::null_mut(),
        )
    };
    if rc < 0 {
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::WouldBlock {
            tracing::debug!(%error, "AF_XDP receive wake-up failed");
        }
    }
}
