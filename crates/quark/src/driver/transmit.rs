//! The driver's way out: every touched connection's datagrams, built into
//! pooled buffers and sent in `sendmmsg` batches of GSO super-datagrams.

use std::task::{Context, Poll};
use std::time::Instant;

use quark_proto::{EcnCodepoint, Transmit};
use quark_udp::Socket;
use smallvec::SmallVec;

use super::fair::{Step, round_robin};
use super::{CONN_BUDGET, Driver, FLUSH_BYTES, MAX_GSO_BYTES, SEND_BATCH, SEND_BUF_SIZE};
use crate::shared::State;

impl Driver {
    /// Queue a built transmit for the next `sendmmsg`.
    pub(super) fn queue(&mut self, t: Transmit, buf: Vec<u8>) {
        self.outgoing_bytes += t.size;
        self.outgoing.push((t, buf));
    }

    /// Send what is queued. Returns false if the socket is full.
    pub(super) fn flush(&mut self, cx: &mut Context<'_>, socket: &Socket) -> bool {
        while !self.outgoing.is_empty() {
            // Built in place: collecting would move the whole inline array.
            let mut batch = SmallVec::<[quark_udp::Transmit<'_>; SEND_BATCH]>::new();
            batch.extend(self.outgoing.iter().take(SEND_BATCH).map(|(t, buf)| {
                quark_udp::Transmit {
                    destination: t.destination,
                    ecn: t.ecn.map_or(0, EcnCodepoint::bits),
                    contents: &buf[..t.size],
                    segment_size: t.segment_size,
                    src_ip: t.src_ip,
                }
            }));
            match socket.poll_send(cx, &batch) {
                Poll::Ready(Ok(n)) => {
                    drop(batch);
                    let n = n.max(1).min(self.outgoing.len());
                    for (t, buf) in self.outgoing.drain(..n) {
                        self.outgoing_bytes -= t.size;
                        self.pool.push(buf);
                    }
                }
                Poll::Ready(Err(e)) => {
                    // A datagram the kernel refuses (e.g. unreachable) is dropped, as the
                    // network would; recovery retransmits.
                    drop(batch);
                    tracing::debug!(error = %e, "send error");
                    let (t, buf) = self.outgoing.remove(0);
                    self.outgoing_bytes -= t.size;
                    self.pool.push(buf);
                }
                Poll::Pending => return false,
            }
        }
        true
    }

    /// Collect datagrams from touched connections, sending whenever a batch is
    /// full. Connections not fully drained (the socket filled up) are kept in
    /// `backlog` for the next round. Returns whether anything was produced.
    pub(super) fn transmit(
        &mut self,
        cx: &mut Context<'_>,
        state: &mut State,
        socket: &Socket,
        now: Instant,
    ) -> bool {
        let mut any = false;
        loop {
            let mut buf = self
                .pool
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(SEND_BUF_SIZE));
            let Some(t) = state.proto.poll_transmit(&mut buf) else {
                self.pool.push(buf);
                break;
            };
            self.queue(t, buf);
            any = true;
        }
        // Round-robin among the touched connections, a transmit (up to one
        // GSO batch) each per pass: a connection with a full window goes
        // round again rather than ahead of the others' answers.
        let touched = std::mem::take(&mut self.touched);
        let mut again = std::mem::take(&mut self.again);
        let result = round_robin(&touched, CONN_BUDGET, &mut again, |h| {
            let full = self.outgoing.len() >= SEND_BATCH || self.outgoing_bytes >= FLUSH_BYTES;
            if full && !self.flush(cx, socket) {
                return Step::Blocked;
            }
            let Some(conn) = state.proto.connection_mut(h) else {
                return Step::Empty;
            };
            let max = socket
                .max_gso_segments()
                .min(MAX_GSO_BYTES / conn.max_datagram_size())
                .max(1);
            let mut buf = self
                .pool
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(SEND_BUF_SIZE));
            let transmit = conn.poll_transmit(now, max, &mut buf);
            debug_assert!(
                buf.capacity() <= SEND_BUF_SIZE,
                "a send buffer grew to {} bytes",
                buf.capacity()
            );
            match transmit {
                Some(t) => {
                    self.queue(t, buf);
                    any = true;
                    Step::Built
                }
                None => {
                    self.pool.push(buf);
                    Step::Empty
                }
            }
        });
        if let Err(rest) = result {
            // Socket full: the rest waits for writability.
            self.backlog.extend_from_slice(&rest);
        }
        self.touched = touched;
        self.again = again;
        any
    }
}
