//! Sending a slice of transmits with as few `sendmmsg` calls as possible.
//!
//! Each transmit becomes one message, or several when it carries more segments than
//! one GSO send may (or any segments at all without GSO). Messages go out in batches
//! of [`BATCH_SIZE`]; a cursor (transmit, byte offset) tracks how far the kernel got.

use std::io;
use std::mem::{self, MaybeUninit};
use std::net::IpAddr;
use std::os::fd::BorrowedFd;

use super::super::State;
use super::super::addr::{RawAddr, ip_to_canonical, to_canonical};
use super::super::cmsg::{self, Encoder};
use crate::stats::Timer;
use crate::{BATCH_SIZE, MAX_GSO_BYTES, Transmit};

/// Sends `transmits` in order; returns how many were sent completely.
///
/// A transmit counts only when all its datagrams went out. If the socket buffer
/// fills in the middle of a transmit that needed several messages (GSO off or
/// unavailable), the caller sends it again whole: duplicate datagrams cost the peer
/// a packet-number check, while dropping the rest would look like loss and shrink the
/// congestion window.
pub(crate) fn send(
    fd: BorrowedFd<'_>,
    state: &State,
    transmits: &[Transmit<'_>],
) -> io::Result<usize> {
    let mut batch = Batch::new();
    let mut cursor = Cursor::default();
    // The transmit being retried without GSO after the kernel refused it with GSO,
    // and that error.
    let mut retry: Option<(usize, io::Error)> = None;
    while cursor.transmit < transmits.len() {
        let no_gso = retry.as_ref().map(|(t, _)| *t);
        batch.fill(transmits, cursor, state.v6, state.gso_segments(), no_gso);
        let timer = Timer::start();
        let (result, syscalls) = syscall(fd, state, &mut batch);
        let elapsed = timer.stop();
        match result {
            Ok(sent) if sent > 0 => {
                let sent = sent.min(batch.len);
                if sent < batch.len {
                    state.sent_short();
                }
                if elapsed.counting() {
                    let msgs = &batch.info()[..sent];
                    let datagrams = msgs.iter().map(|m| m.segments).sum();
                    let bytes = batch.hdrs()[..sent]
                        .iter()
                        .map(|h| h.msg_len as usize)
                        .sum();
                    elapsed.sent(syscalls, datagrams, bytes);
                }
                if let Some((_, error)) = retry.take() {
                    // The same datagrams went out without GSO: GSO was the problem.
                    state.gso_failed(&error);
                }
                cursor = batch.info()[sent - 1].next();
            }
            Ok(_) => {
                elapsed.sent(syscalls, 0, 0);
                return done_or(
                    cursor,
                    io::Error::new(io::ErrorKind::WriteZero, "sendmmsg sent nothing"),
                );
            }
            Err(error) => {
                elapsed.sent(syscalls, 0, 0);
                let gso_refused = matches!(error.raw_os_error(), Some(libc::EIO | libc::EINVAL));
                if gso_refused && batch.info().first().is_some_and(|m| m.gso) && retry.is_none() {
                    retry = Some((cursor.transmit, error));
                    continue;
                }
                return done_or(cursor, error);
            }
        }
    }
    Ok(transmits.len())
}

/// The transmits finished before `cursor`, or `error` when there are none.
fn done_or(cursor: Cursor, error: io::Error) -> io::Result<usize> {
    if cursor.transmit > 0 {
        Ok(cursor.transmit)
    } else {
        Err(error)
    }
}

/// The system call, with fault injection in tests.
fn syscall(fd: BorrowedFd<'_>, state: &State, batch: &mut Batch) -> (io::Result<usize>, usize) {
    #[allow(unused_mut)]
    let mut len = batch.len;
    #[cfg(test)]
    {
        use std::sync::atomic::Ordering::Relaxed;
        let hooks = &state.hooks;
        if hooks.gso_errno.load(Relaxed) != 0 {
            // Like the kernel: the messages before the failing one are sent.
            if let Some(first_gso) = batch.info().iter().position(|m| m.gso) {
                if first_gso == 0 {
                    let errno = hooks.gso_errno.swap(0, Relaxed);
                    return (Err(io::Error::from_raw_os_error(errno)), 0);
                }
                len = first_gso;
            }
        }
        let short = hooks.short_send.swap(0, Relaxed);
        if short > 0 {
            len = len.min(short);
        }
        if hooks.send_errno.load(Relaxed) != 0 {
            if hooks.send_errno_skip.load(Relaxed) > 0 {
                hooks.send_errno_skip.fetch_sub(1, Relaxed);
            } else {
                let errno = hooks.send_errno.swap(0, Relaxed);
                return (Err(io::Error::from_raw_os_error(errno)), 0);
            }
        }
    }
    super::sendmmsg(fd, state, &mut batch.hdrs()[..len])
}

/// Where sending stands: the next transmit, and the byte offset in it.
#[derive(Debug, Default, Clone, Copy)]
struct Cursor {
    transmit: usize,
    offset: usize,
}

/// What one message of a batch carries.
#[derive(Debug, Clone, Copy)]
struct Msg {
    /// Index of its transmit.
    transmit: usize,
    /// Offset in the transmit's contents after this message.
    end: usize,
    /// The transmit's last message.
    last: bool,
    /// Datagrams on the wire.
    segments: usize,
    /// Sent with `UDP_SEGMENT`.
    gso: bool,
}

impl Msg {
    /// The cursor after this message.
    fn next(&self) -> Cursor {
        if self.last {
            Cursor {
                transmit: self.transmit + 1,
                offset: 0,
            }
        } else {
            Cursor {
                transmit: self.transmit,
                offset: self.end,
            }
        }
    }
}

/// Up to [`BATCH_SIZE`] messages with their addresses, iovecs and control data,
/// on the stack. Only the first `len` entries are initialised; headers point into
/// the other arrays, so a filled batch must not move before the system call.
struct Batch {
    hdrs: [MaybeUninit<libc::mmsghdr>; BATCH_SIZE],
    iovs: [MaybeUninit<libc::iovec>; BATCH_SIZE],
    names: [MaybeUninit<RawAddr>; BATCH_SIZE],
    ctrl: [MaybeUninit<cmsg::Buf>; BATCH_SIZE],
    /// Not zeroed up front: that wrote all 32 (a kilobyte) for every call,
    /// most of which send one message.
    info: [MaybeUninit<Msg>; BATCH_SIZE],
    len: usize,
}

impl Batch {
    fn new() -> Self {
        Self {
            hdrs: [const { MaybeUninit::uninit() }; BATCH_SIZE],
            iovs: [const { MaybeUninit::uninit() }; BATCH_SIZE],
            names: [const { MaybeUninit::uninit() }; BATCH_SIZE],
            ctrl: [const { MaybeUninit::uninit() }; BATCH_SIZE],
            info: [const { MaybeUninit::uninit() }; BATCH_SIZE],
            len: 0,
        }
    }

    /// What the initialised messages carry.
    fn info(&self) -> &[Msg] {
        // SAFETY: `push` initialised the first `len` entries; `MaybeUninit<T>` has
        // the layout of `T`.
        unsafe { std::slice::from_raw_parts(self.info.as_ptr().cast(), self.len) }
    }

    /// The initialised headers.
    fn hdrs(&mut self) -> &mut [libc::mmsghdr] {
        // SAFETY: `push` initialised the first `len` headers; `MaybeUninit<T>` has
        // the layout of `T`.
        unsafe { std::slice::from_raw_parts_mut(self.hdrs.as_mut_ptr().cast(), self.len) }
    }

    /// Fills the batch with messages from `cursor` on. Segmented transmits take
    /// `gso_segments` datagrams per message (1 for the transmit `no_gso`), within
    /// [`MAX_GSO_BYTES`].
    fn fill(
        &mut self,
        transmits: &[Transmit<'_>],
        mut cursor: Cursor,
        v6: bool,
        gso_segments: usize,
        no_gso: Option<usize>,
    ) {
        self.len = 0;
        while self.len < BATCH_SIZE && cursor.transmit < transmits.len() {
            let t = &transmits[cursor.transmit];
            let total = t.contents.len();
            let (end, segment) = match t.segment() {
                None => (total, None),
                Some(size) => {
                    let per_msg = if no_gso == Some(cursor.transmit) || size > usize::from(u16::MAX)
                    {
                        1
                    } else {
                        gso_segments.min(MAX_GSO_BYTES / size).max(1)
                    };
                    ((cursor.offset + size * per_msg).min(total), Some(size))
                }
            };
            let part = &t.contents[cursor.offset..end];
            // One datagram needs no UDP_SEGMENT, even in a segmented transmit.
            let gso = segment.filter(|&size| part.len() > size);
            let msg = Msg {
                transmit: cursor.transmit,
                end,
                last: end == total,
                segments: segment.map_or(1, |size| part.len().div_ceil(size).max(1)),
                gso: gso.is_some(),
            };
            self.push(t, part, gso, v6, msg);
            cursor = msg.next();
        }
    }

    /// Appends one message: `part` of transmit `t`, cut into `gso`-size datagrams
    /// by the kernel when `gso` is set.
    fn push(&mut self, t: &Transmit<'_>, part: &[u8], gso: Option<usize>, v6: bool, msg: Msg) {
        let i = self.len;
        let (name, name_len) = RawAddr::encode(t.destination, v6);
        let name = self.names[i].write(name);
        let iov = self.iovs[i].write(libc::iovec {
            // The kernel only reads the buffer of a send.
            iov_base: part.as_ptr().cast_mut().cast(),
            iov_len: part.len(),
        });
        let mut enc = Encoder::new(&mut self.ctrl[i]);
        if let Some(size) = gso {
            // `fill` keeps GSO sizes within u16.
            enc.push(
                libc::SOL_UDP,
                libc::UDP_SEGMENT,
                &(size as u16).to_ne_bytes(),
            );
        }
        let ecn = libc::c_int::from(t.ecn & 0b11);
        if ecn != 0 {
            // ECN marks (RFC 9000 §13.4) are the low two bits of the TOS byte,
            // written whole (DSCP 0). The TOS byte of an IPv4 destination (v4-mapped ones included) is set
            // through IP_TOS, even on an IPv6 socket; the kernel's IPv4 path reads it.
            let (level, kind) = if to_canonical(t.destination).is_ipv4() {
                (libc::IPPROTO_IP, libc::IP_TOS)
            } else {
                (libc::IPPROTO_IPV6, libc::IPV6_TCLASS)
            };
            enc.push(level, kind, &ecn.to_ne_bytes());
        }
        match t.src_ip.map(ip_to_canonical) {
            Some(IpAddr::V4(ip)) => {
                // struct in_pktinfo { int ipi_ifindex; in_addr ipi_spec_dst; in_addr ipi_addr; }:
                // the kernel sends from ipi_spec_dst.
                let mut info = [0u8; 12];
                info[4..8].copy_from_slice(&ip.octets());
                enc.push(libc::IPPROTO_IP, libc::IP_PKTINFO, &info);
            }
            Some(IpAddr::V6(ip)) => {
                // struct in6_pktinfo { in6_addr ipi6_addr; unsigned ipi6_ifindex; }
                let mut info = [0u8; 20];
                info[..16].copy_from_slice(&ip.octets());
                enc.push(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &info);
            }
            None => {}
        }
        let ctrl_len = enc.len();
        // SAFETY: all-zero is a valid `mmsghdr` (integers and null pointers).
        let mut hdr: libc::mmsghdr = unsafe { mem::zeroed() };
        hdr.msg_hdr.msg_name = (name as *mut RawAddr).cast();
        hdr.msg_hdr.msg_namelen = name_len;
        hdr.msg_hdr.msg_iov = iov;
        hdr.msg_hdr.msg_iovlen = 1;
        if ctrl_len > 0 {
            hdr.msg_hdr.msg_control = self.ctrl[i].as_mut_ptr().cast();
            hdr.msg_hdr.msg_controllen = ctrl_len as _;
        }
        self.hdrs[i].write(hdr);
        self.info[i].write(msg);
        self.len += 1;
    }
}
