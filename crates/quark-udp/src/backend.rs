//! [`Socket`]: the UDP or the AF_XDP backend behind one type, chosen at run time.

use std::io::{self, IoSliceMut};
use std::net::SocketAddr;
use std::task::{Context, Poll};

use bytes::BytesMut;

use crate::xdp::{XdpConfig, XdpSocket};
use crate::{ErrorReport, RecvMeta, Transmit, UdpSocket};

/// The environment variable that selects AF_XDP for [`Socket::bind`]: an
/// [`XdpConfig`] in its one-line form, e.g. `QUARK_XDP=veth-a` or
/// `QUARK_XDP=veth-a,attach=generic`. Unset or empty: UDP.
pub const XDP_ENV: &str = "QUARK_XDP";

/// A datagram socket of either backend, with the batch API both share.
#[derive(Debug)]
pub enum Socket {
    /// Kernel UDP (`sendmmsg`/`recvmmsg`, GSO/GRO).
    Udp(UdpSocket),
    /// AF_XDP on one interface (IPv4); boxed, it is much larger than a UDP socket.
    Xdp(Box<XdpSocket>),
}

impl Socket {
    /// Binds `addr` with the backend [`XDP_ENV`] selects (UDP when unset). An
    /// unparsable setting is an `InvalidInput` error.
    pub fn bind(addr: SocketAddr) -> io::Result<Self> {
        let xdp = xdp_from_env().map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        Self::bind_with(addr, xdp.as_ref())
    }

    /// Binds `addr` over AF_XDP with `xdp`, or over UDP when it is `None`.
    pub fn bind_with(addr: SocketAddr, xdp: Option<&XdpConfig>) -> io::Result<Self> {
        match xdp {
            Some(config) => XdpSocket::bind(addr, config).map(|s| Self::Xdp(Box::new(s))),
            None => UdpSocket::bind(addr).map(Self::Udp),
        }
    }

    /// The address the socket is bound to.
    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        match self {
            Self::Udp(s) => s.local_addr(),
            Self::Xdp(s) => s.local_addr(),
        }
    }

    /// Whether this is the AF_XDP backend.
    pub fn is_xdp(&self) -> bool {
        matches!(self, Self::Xdp(_))
    }

    /// Datagrams one transmit may carry (see [`UdpSocket::max_gso_segments`]).
    pub fn max_gso_segments(&self) -> usize {
        match self {
            Self::Udp(s) => s.max_gso_segments(),
            Self::Xdp(s) => s.max_gso_segments(),
        }
    }

    /// Datagrams one receive buffer may hold (see [`UdpSocket::gro_segments`]).
    pub fn gro_segments(&self) -> usize {
        match self {
            Self::Udp(s) => s.gro_segments(),
            Self::Xdp(s) => s.gro_segments(),
        }
    }

    /// See [`UdpSocket::grow_recv_buffer`]; AF_XDP's rings are sized at
    /// creation (returns 0).
    pub fn grow_recv_buffer(&self, bytes: usize) -> io::Result<usize> {
        match self {
            Self::Udp(s) => s.grow_recv_buffer(bytes),
            Self::Xdp(_) => Ok(0),
        }
    }

    /// See [`UdpSocket::set_gso`].
    pub fn set_gso(&self, enabled: bool) {
        match self {
            Self::Udp(s) => s.set_gso(enabled),
            Self::Xdp(s) => s.set_gso(enabled),
        }
    }

    /// See [`UdpSocket::set_gro`].
    pub fn set_gro(&self, enabled: bool) -> io::Result<()> {
        match self {
            Self::Udp(s) => s.set_gro(enabled),
            Self::Xdp(s) => {
                s.set_gro(enabled);
                Ok(())
            }
        }
    }

    /// See [`UdpSocket::try_send`].
    pub fn try_send(&self, transmits: &[Transmit<'_>]) -> io::Result<usize> {
        match self {
            Self::Udp(s) => s.try_send(transmits),
            Self::Xdp(s) => s.try_send(transmits),
        }
    }

    /// See [`UdpSocket::try_recv`].
    pub fn try_recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        match self {
            Self::Udp(s) => s.try_recv(bufs, meta),
            Self::Xdp(s) => s.try_recv(bufs, meta),
        }
    }

    /// See [`UdpSocket::try_recv_buf`].
    pub fn try_recv_buf(&self, bufs: &mut [BytesMut], meta: &mut [RecvMeta]) -> io::Result<usize> {
        match self {
            Self::Udp(s) => s.try_recv_buf(bufs, meta),
            Self::Xdp(s) => s.try_recv_buf(bufs, meta),
        }
    }

    /// See [`UdpSocket::set_error_reports`]; AF_XDP hears no ICMP (false).
    pub fn set_error_reports(&self, on: bool) -> bool {
        match self {
            Self::Udp(s) => s.set_error_reports(on),
            Self::Xdp(_) => false,
        }
    }

    /// See [`UdpSocket::reports_pending`]; AF_XDP hears no ICMP (false).
    pub fn reports_pending(&self) -> bool {
        match self {
            Self::Udp(s) => s.reports_pending(),
            Self::Xdp(_) => false,
        }
    }

    /// See [`UdpSocket::try_recv_errors`]; AF_XDP has no error queue (0).
    pub fn try_recv_errors(&self, buf: &mut [u8], f: impl FnMut(&ErrorReport, &[u8])) -> usize {
        match self {
            Self::Udp(s) => s.try_recv_errors(buf, f),
            Self::Xdp(_) => 0,
        }
    }

    /// See [`UdpSocket::poll_recv_buf`].
    pub fn poll_recv_buf(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [BytesMut],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        match self {
            Self::Udp(s) => s.poll_recv_buf(cx, bufs, meta),
            Self::Xdp(s) => s.poll_recv_buf(cx, bufs, meta),
        }
    }

    /// See [`UdpSocket::poll_send`].
    pub fn poll_send(
        &self,
        cx: &mut Context<'_>,
        transmits: &[Transmit<'_>],
    ) -> Poll<io::Result<usize>> {
        match self {
            Self::Udp(s) => s.poll_send(cx, transmits),
            Self::Xdp(s) => s.poll_send(cx, transmits),
        }
    }

    /// See [`UdpSocket::poll_recv_ready`]. AF_XDP always says ready: its receive
    /// also moves the send ring along, so it must be called every round.
    pub fn poll_recv_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Self::Udp(s) => s.poll_recv_ready(cx),
            Self::Xdp(_) => Poll::Ready(Ok(())),
        }
    }

    /// See [`UdpSocket::poll_recv`].
    pub fn poll_recv(
        &self,
        cx: &mut Context<'_>,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        match self {
            Self::Udp(s) => s.poll_recv(cx, bufs, meta),
            Self::Xdp(s) => s.poll_recv(cx, bufs, meta),
        }
    }

    /// See [`UdpSocket::send`].
    pub async fn send(&self, transmits: &[Transmit<'_>]) -> io::Result<usize> {
        match self {
            Self::Udp(s) => s.send(transmits).await,
            Self::Xdp(s) => s.send(transmits).await,
        }
    }

    /// See [`UdpSocket::recv`].
    pub async fn recv(
        &self,
        bufs: &mut [IoSliceMut<'_>],
        meta: &mut [RecvMeta],
    ) -> io::Result<usize> {
        match self {
            Self::Udp(s) => s.recv(bufs, meta).await,
            Self::Xdp(s) => s.recv(bufs, meta).await,
        }
    }
}

impl From<UdpSocket> for Socket {
    fn from(s: UdpSocket) -> Self {
        Self::Udp(s)
    }
}

impl From<XdpSocket> for Socket {
    fn from(s: XdpSocket) -> Self {
        Self::Xdp(Box::new(s))
    }
}

/// The AF_XDP configuration [`XDP_ENV`] asks for, if any.
pub fn xdp_from_env() -> Result<Option<XdpConfig>, crate::xdp::ParseError> {
    match std::env::var(XDP_ENV) {
        Ok(v) if !v.trim().is_empty() => v.parse().map(Some),
        _ => Ok(None),
    }
}
