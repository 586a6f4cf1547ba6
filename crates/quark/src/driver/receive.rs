//! The driver's way in: one `recvmmsg` batch (and what other workers
//! passed on) fed to the protocol.

use std::net::{IpAddr, SocketAddr};
use std::task::{Context, Poll};
use std::time::Instant;

use quark_proto::{ConnectionHandle, DatagramEvent, EcnCodepoint};
use quark_udp::{ErrorCause, Socket};
use smallvec::SmallVec;

use super::{Driver, INBOX_BATCH, MAX_RECV_BUF, MIN_RECV_ASK, RECV_BATCH};
use crate::forward::{Forwarded, Kind, Link};
use crate::shared::{ConnEntry, State};

impl Driver {
    /// Read one batch of datagrams (and what other workers passed on) and feed
    /// it to the protocol. Returns whether anything arrived.
    ///
    /// One batch per round, not until the socket is empty: answering what a
    /// batch brought before reading on gives the peer work while this side
    /// reads the rest, so with many request/response connections the two sides
    /// overlap instead of taking turns (rps +18 % requests/s and p99 -27 %,
    /// response-time +28 %; BENCHMARKS.md). A bulk receiver loses nothing: with
    /// GRO one batch holds up to 16 buffers of 64 KB.
    pub(super) fn receive(
        &mut self,
        cx: &mut Context<'_>,
        socket: &Socket,
        state: &mut State,
        now: Instant,
    ) -> bool {
        let n = self.read_batch(cx, socket);
        if socket.reports_pending() {
            self.read_reports(socket, state, now);
            if socket.reports_pending() {
                // More than one read takes: the rest next round.
                cx.waker().wake_by_ref();
            }
        }
        let misdeliver = self.link.as_ref().and_then(Link::misdeliver_target);
        let mut events: SmallVec<[Option<DatagramEvent>; 8]> = SmallVec::new();
        for i in 0..n {
            let meta = self.metas[i];
            let ecn = EcnCodepoint::from_bits(meta.ecn);
            let lend = self.lend;
            if lend && meta.len >= quark_proto::MIN_SHARED_RECEIVE {
                crate::counters::driver::add(&crate::counters::driver::LENT, 1);
            }
            let data = self.rx.get(i);
            if let (Some(to), Some(link)) = (misdeliver, &self.link) {
                // Test hook: short-header datagrams go to the wrong worker.
                for seg in data.chunks_mut(meta.stride.max(1)) {
                    if seg.first().is_some_and(|b| b & 0x80 == 0) {
                        link.misdeliver(to, forwarded(meta.addr, meta.dst_ip, ecn, seg));
                        continue;
                    }
                    let event = state
                        .proto
                        .handle_datagram(now, meta.addr, meta.dst_ip, ecn, seg);
                    if let Some(DatagramEvent::Forward(to)) = event {
                        link.forward(to, forwarded(meta.addr, meta.dst_ip, ecn, seg));
                    }
                    events.push(event);
                }
            } else {
                // Every segment of a GRO buffer at once: connections decrypt
                // their whole share before processing it.
                let link = &self.link;
                let on_event = |event: DatagramEvent, seg: &[u8]| {
                    if let (DatagramEvent::Forward(to), Some(link)) = (event, link) {
                        link.forward(to, forwarded(meta.addr, meta.dst_ip, ecn, seg));
                    }
                    events.push(Some(event));
                };
                state.proto.handle_batch(
                    now,
                    meta.addr,
                    meta.dst_ip,
                    ecn,
                    data,
                    meta.stride,
                    lend,
                    on_event,
                );
            }
            for event in events.drain(..) {
                self.on_datagram(state, event);
            }
        }
        (n > 0) | self.receive_forwarded(cx, state, now)
    }

    /// One `recvmmsg` into the receive buffers: how many datagrams it read.
    /// Sets `drained` when the socket had nothing more.
    pub(super) fn read_batch(&mut self, cx: &mut Context<'_>, socket: &Socket) -> usize {
        self.drained = false;
        self.unread = false;
        // A few tries: an error is about one datagram, and the socket may hold more.
        for _ in 0..4 {
            // Busy polling asks the socket itself: its readiness only changes
            // when the runtime's reactor runs, which spinning postpones.
            let ready = socket.poll_recv_ready(cx).is_ready();
            if !ready && !self.busy.active() {
                // Nothing waiting (and the waker is registered): skip the buffers.
                self.drained = true;
                return 0;
            }
            let (bufs, lend) = self.rx.ready(self.recv_ask);
            self.lend = lend;
            let polled = if ready {
                socket.poll_recv_buf(cx, bufs, &mut self.metas)
            } else {
                match socket.try_recv_buf(bufs, &mut self.metas) {
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => Poll::Pending,
                    result => Poll::Ready(result),
                }
            };
            match polled {
                Poll::Ready(Ok(n)) => {
                    // Every buffer filled: the socket may hold more.
                    self.unread = n == self.recv_ask;
                    if self.unread {
                        crate::counters::driver::add(&crate::counters::driver::FULL_READS, 1);
                    }
                    self.recv_ask = (2 * n).clamp(MIN_RECV_ASK, RECV_BATCH);
                    return n;
                }
                // About one datagram, not fatal. (An ICMP error's pending
                // errno is retried by quark-udp and read in `read_reports`.)
                Poll::Ready(Err(e)) => tracing::debug!(error = %e, "receive error"),
                Poll::Pending => {
                    self.drained = true;
                    return 0;
                }
            }
        }
        0
    }

    /// The error reports the socket queued (ICMP unreachable, too big, local
    /// errors; `quark_udp::UdpSocket::try_recv_errors`). An unreachable one
    /// goes to the protocol, which ends the connection it quotes if that is
    /// still in its handshake; a too-big one guides that connection's path
    /// MTU search, and so does a local one (a probe larger than the
    /// interface, refused by this host's kernel); the rest are only counted.
    fn read_reports(&mut self, socket: &Socket, state: &mut State, now: Instant) {
        use crate::counters::driver::{REPORTS, TOO_BIG, UNREACHABLE, add};
        // A long header's IDs end within 47 bytes.
        let mut buf = [0u8; 64];
        let mut ended = SmallVec::<[ConnectionHandle; 4]>::new();
        let mut too_big = SmallVec::<[ConnectionHandle; 4]>::new();
        let n = socket.try_recv_errors(&mut buf, |report, quoted| {
            let dst = report.destination;
            if !report.from_network {
                // Our own kernel refused a probe larger than the interface.
                if let ErrorCause::TooBig { mtu } = report.cause {
                    let size = udp_payload(mtu, dst);
                    too_big.extend(state.proto.handle_local_too_big(now, dst, size));
                }
                return;
            }
            let port_closed = match report.cause {
                ErrorCause::PortUnreachable => true,
                ErrorCause::Unreachable => false,
                ErrorCause::TooBig { mtu } => {
                    let size = udp_payload(mtu, dst);
                    too_big.extend(self.too_big_report(state, now, dst, quoted, size));
                    return;
                }
                ErrorCause::Other(_) => return,
            };
            if let Some(h) = state
                .proto
                .handle_unreachable(now, dst, quoted, port_closed)
            {
                ended.push(h);
            }
        });
        add(&REPORTS, n as u64);
        add(&UNREACHABLE, ended.len() as u64);
        add(&TOO_BIG, too_big.len() as u64);
        for h in ended.into_iter().chain(too_big) {
            self.touch(state, h);
        }
    }

    /// A too-big report read from this worker's socket (or misdelivered
    /// here by the test hook): the connection it fits takes it. In a worker
    /// group, a short header's report that fits none here goes to the other
    /// workers (its client moved: see `forward`), at most 16 a second.
    fn too_big_report(
        &mut self,
        state: &mut State,
        now: Instant,
        remote: SocketAddr,
        quoted: &[u8],
        size: u16,
    ) -> Option<ConnectionHandle> {
        let Some(link) = self.link.as_ref() else {
            return state.proto.handle_too_big(now, remote, quoted, size);
        };
        if let Some(to) = link.misdeliver_target() {
            link.misdeliver(to, Forwarded::too_big(remote, quoted, size, false));
            return None;
        }
        let applied = state.proto.handle_too_big(now, remote, quoted, size);
        let short = quoted.first().is_some_and(|b| b & 0x80 == 0);
        if applied.is_none() && short && self.hand_overs.allow(now) {
            link.hand_over_too_big(remote, quoted, size);
        }
        applied
    }

    /// Take datagrams other workers passed to this one.
    pub(super) fn receive_forwarded(
        &mut self,
        cx: &mut Context<'_>,
        state: &mut State,
        now: Instant,
    ) -> bool {
        let Some(inbox) = &mut self.inbox else {
            return false;
        };
        let mut taken = SmallVec::<[Forwarded; 8]>::new();
        while taken.len() < INBOX_BATCH {
            match inbox.poll_recv(cx) {
                Poll::Ready(Some(f)) => taken.push(f),
                _ => break,
            }
        }
        if taken.len() == INBOX_BATCH {
            // More may wait in the inbox.
            self.drained = false;
            self.unread = true;
        }
        let Some(link) = self.link.clone().filter(|_| !taken.is_empty()) else {
            return false;
        };
        for mut f in taken {
            link.received();
            if let Kind::TooBig { size, handed } = f.kind {
                let applied = if handed {
                    state.proto.handle_too_big(now, f.remote, &f.data, size)
                } else {
                    self.too_big_report(state, now, f.remote, &f.data, size)
                };
                if let Some(h) = applied {
                    crate::counters::driver::add(&crate::counters::driver::TOO_BIG, 1);
                    self.touch(state, h);
                }
                continue;
            }
            let event = state
                .proto
                .handle_datagram(now, f.remote, f.local_ip, f.ecn, &mut f.data);
            if let Some(DatagramEvent::Forward(to)) = event {
                // Misdelivered by the test hook: now it goes where it belongs.
                link.forward(to, f);
            }
            self.on_datagram(state, event);
        }
        true
    }

    pub(super) fn on_datagram(&mut self, state: &mut State, event: Option<DatagramEvent>) {
        match event {
            Some(DatagramEvent::NewConnection(h)) => {
                state.conns.insert(h, ConnEntry::new(true));
                self.fit_recv_buffer(state);
                self.touch(state, h);
            }
            Some(DatagramEvent::Connection(h)) => self.touch(state, h),
            Some(DatagramEvent::Response | DatagramEvent::Forward(_)) | None => {}
        }
    }
}

fn forwarded(
    remote: SocketAddr,
    local_ip: Option<IpAddr>,
    ecn: Option<EcnCodepoint>,
    data: &[u8],
) -> Forwarded {
    Forwarded {
        remote,
        local_ip,
        ecn,
        data: data.to_vec(),
        kind: Kind::Datagram,
    }
}

impl Driver {
    /// Grows the socket's receive buffer with the connections (`recv_buffer_for`).
    pub(super) fn fit_recv_buffer(&mut self, state: &State) {
        let n = state.conns.len();
        let Some(want) = recv_buffer_for(n, state.recv_buf_per_conn, self.recv_buf_bytes) else {
            return;
        };
        self.recv_buf_bytes = want;
        match self.socket.grow_recv_buffer(want) {
            Ok(got) => tracing::debug!(conns = n, want, got, "receive buffer grown"),
            Err(e) => tracing::debug!(error = %e, "cannot grow the receive buffer"),
        }
    }
}

/// The receive buffer to ask for with `conns` connections at `per` bytes
/// each, if more than `now`: room for twice the connections (so a few
/// system calls take it from 8 000 to 100 000), within `MAX_RECV_BUF`.
pub(super) fn recv_buffer_for(conns: usize, per: usize, now: usize) -> Option<usize> {
    if per == 0 || conns.saturating_mul(per) <= now {
        return None;
    }
    let want = conns
        .saturating_mul(2)
        .saturating_mul(per)
        .min(MAX_RECV_BUF);
    (want > now).then_some(want)
}

/// The UDP payload a path MTU of `mtu` bytes leaves (an IPv4 report for an
/// IPv4-mapped address on a dual-stack socket), saturating.
fn udp_payload(mtu: u32, to: std::net::SocketAddr) -> u16 {
    let headers = match to {
        std::net::SocketAddr::V6(a) if a.ip().to_ipv4_mapped().is_none() => 40 + 8,
        _ => 20 + 8,
    };
    u16::try_from(mtu.saturating_sub(headers)).unwrap_or(u16::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_receive_buffer_doubles_with_the_connections_within_a_bound() {
        let (per, base) = (4 << 10, 32 << 20);
        // 8 192 connections fit the socket's own 32 MiB.
        assert_eq!(recv_buffer_for(8_192, per, base), None);
        assert_eq!(recv_buffer_for(8_193, per, base), Some(2 * 8_193 * per));
        let mut now = base;
        let mut calls = 0;
        for n in 1..=100_000 {
            if let Some(w) = recv_buffer_for(n, per, now) {
                assert!(w >= n * per);
                now = w;
                calls += 1;
            }
        }
        assert!(calls <= 4, "{calls} system calls");
        assert_eq!(recv_buffer_for(10_000_000, per, 0), Some(MAX_RECV_BUF));
        assert_eq!(recv_buffer_for(10_000_000, per, MAX_RECV_BUF), None);
        assert_eq!(recv_buffer_for(100_000, 0, base), None);
    }

    #[test]
    fn a_reported_mtu_less_the_headers() {
        let v4: std::net::SocketAddr = "192.0.2.1:443".parse().unwrap();
        let v6: std::net::SocketAddr = "[2001:db8::1]:443".parse().unwrap();
        let mapped: std::net::SocketAddr = "[::ffff:192.0.2.1]:443".parse().unwrap();
        assert_eq!(super::udp_payload(1500, v4), 1472);
        assert_eq!(super::udp_payload(1500, v6), 1452);
        assert_eq!(super::udp_payload(1500, mapped), 1472);
        assert_eq!(super::udp_payload(10, v6), 0);
        assert_eq!(super::udp_payload(u32::MAX, v4), u16::MAX);
    }
}
