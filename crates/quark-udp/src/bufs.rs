//! The two kinds of receive buffer the sockets fill: borrowed slices
//! (`IoSliceMut`), or `BytesMut`s whose spare capacity takes each message, so
//! that nothing is zeroed first and the bytes can be shared on afterwards.

use std::io::{self, IoSliceMut};
use std::task::{Context, Poll};

use bytes::BytesMut;

use crate::{RecvMeta, UdpSocket};

/// Receive buffers of either kind, for the AF_XDP copy loop and its kernel
/// socket. `BytesMut`s are emptied first: a message fills one from its start.
pub(crate) trait RecvBufs {
    /// How many buffers.
    fn count(&self) -> usize;
    /// Bytes buffer `i` takes.
    fn room(&self, i: usize) -> usize;
    /// Store `bytes` at `at` in buffer `i`: right after what the message
    /// holds so far (`at + bytes.len() <= room(i)`).
    fn write(&mut self, i: usize, at: usize, bytes: &[u8]);
    /// One `recvmmsg` on `sock` into these, waiting for a datagram.
    fn poll_udp(
        &mut self,
        sock: &UdpSocket,
        cx: &mut Context<'_>,
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>>;
}

impl RecvBufs for [IoSliceMut<'_>] {
    fn count(&self) -> usize {
        self.len()
    }

    fn room(&self, i: usize) -> usize {
        self[i].len()
    }

    fn write(&mut self, i: usize, at: usize, bytes: &[u8]) {
        self[i][at..at + bytes.len()].copy_from_slice(bytes);
    }

    fn poll_udp(
        &mut self,
        sock: &UdpSocket,
        cx: &mut Context<'_>,
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        sock.poll_recv(cx, self, meta)
    }
}

impl RecvBufs for [BytesMut] {
    fn count(&self) -> usize {
        self.len()
    }

    fn room(&self, i: usize) -> usize {
        self[i].capacity()
    }

    fn write(&mut self, i: usize, at: usize, bytes: &[u8]) {
        let buf = &mut self[i];
        buf.truncate(at);
        buf.extend_from_slice(bytes);
    }

    fn poll_udp(
        &mut self,
        sock: &UdpSocket,
        cx: &mut Context<'_>,
        meta: &mut [RecvMeta],
    ) -> Poll<io::Result<usize>> {
        sock.poll_recv_buf(cx, self, meta)
    }
}
