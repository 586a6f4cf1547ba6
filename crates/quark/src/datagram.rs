//! Unreliable datagrams (RFC 9221) on a [`Connection`]: send, send with
//! backpressure, receive. Enabled by `TransportConfig::max_datagram_frame_size`
//! on the receiving side.

use std::future::poll_fn;
use std::task::Poll;

use bytes::Bytes;
use quark_proto::{ConnectionError, SendDatagramError};

use crate::connection::Connection;
use crate::shared::Wait;

impl Connection {
    /// Queue a datagram. When the send queue
    /// (`TransportConfig::datagram_send_buffer`) is full, the oldest queued
    /// datagrams are dropped for it; [`send_datagram_wait`](Self::send_datagram_wait)
    /// waits instead.
    pub fn send_datagram(&self, data: Bytes) -> Result<(), SendDatagramError> {
        let mut state = self.shared.lock();
        let conn = state
            .proto
            .connection_mut(self.handle)
            .ok_or(SendDatagramError::NotConnected)?;
        conn.send_datagram(data)?;
        state.touch(self.handle);
        Ok(())
    }

    /// Queue a datagram, waiting while the send queue is full (backpressure:
    /// a sender faster than the path is held to its pace, nothing dropped).
    pub async fn send_datagram_wait(&self, data: Bytes) -> Result<(), SendDatagramError> {
        let mut data = Some(data);
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            let state = &mut *state;
            let Some(conn) = state.proto.connection_mut(self.handle) else {
                return Poll::Ready(Err(SendDatagramError::NotConnected));
            };
            match conn.try_send_datagram(data.take().expect("polled after completion")) {
                Ok(()) => {
                    state.touch(self.handle);
                    Poll::Ready(Ok(()))
                }
                Err(SendDatagramError::Blocked(d)) => {
                    // Woken by Event::DatagramsWritable, or when the connection ends.
                    data = Some(d);
                    let entry = state.conns.get_mut(&self.handle).expect("connection entry");
                    entry.wakers.wait(Wait::DatagramWrite, cx.waker());
                    Poll::Pending
                }
                Err(e) => Poll::Ready(Err(e)),
            }
        })
        .await
    }

    /// Wait for the next datagram from the peer. Datagrams that arrived
    /// before the connection ended are still returned; then its error.
    pub async fn read_datagram(&self) -> Result<Bytes, ConnectionError> {
        poll_fn(|cx| {
            let mut state = self.shared.lock();
            let state = &mut *state;
            let conn = state.proto.connection_mut(self.handle);
            if let Some(data) = conn.and_then(|c| c.read_datagram()) {
                return Poll::Ready(Ok(data));
            }
            let Some(entry) = state.conns.get_mut(&self.handle) else {
                return Poll::Ready(Err(ConnectionError::LocallyClosed));
            };
            if let Some(e) = entry.error.as_deref() {
                return Poll::Ready(Err(e.clone()));
            }
            entry.wakers.wait(Wait::DatagramRead, cx.waker());
            state.reader_waits += 1;
            Poll::Pending
        })
        .await
    }

    /// The largest datagram [`send_datagram`](Self::send_datagram) takes now
    /// (path MTU and the peer's limit); `None` if the peer does not accept
    /// datagrams.
    pub fn max_datagram_size(&self) -> Option<usize> {
        let state = self.shared.lock();
        state
            .proto
            .connection(self.handle)
            .and_then(|c| c.max_datagram_payload())
    }
}
