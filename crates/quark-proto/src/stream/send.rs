//! Outgoing stream data: buffered until acknowledged, retransmitted when lost, and
//! the sending half of a stream (RFC 9000 §3.1) with its flow control (§4.1).

use std::collections::VecDeque;

use bytes::{BufMut, Bytes};

mod buffer;
mod store;

pub use buffer::SendBuffer;

/// A range of stream data chosen for one frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SendRange {
    /// Stream offset.
    pub offset: u64,
    /// Bytes (0 only for a bare FIN).
    pub len: usize,
    /// Whether the frame carries FIN (the range ends at the final size).
    pub fin: bool,
    /// True if this is data sent before and declared lost.
    pub retransmit: bool,
}

/// Sending part of a stream (RFC 9000 §3.1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendState {
    /// Ready / Send: accepting writes.
    Send,
    /// FIN written, not all acknowledged.
    DataSent,
    /// All data and FIN acknowledged (terminal).
    DataRecvd,
    /// RESET_STREAM sent, not yet acknowledged.
    ResetSent,
    /// RESET_STREAM acknowledged (terminal).
    ResetRecvd,
}

/// Why a write failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    /// The peer sent STOP_SENDING with this code.
    #[error("stopped by peer (code {0})")]
    Stopped(u64),
    /// The stream was finished or reset by us.
    #[error("stream closed for writing")]
    Closed,
}

/// Bytes a stream holds written but not yet sent, at most; the rest of its
/// buffer is for data in flight (TCP's `TCP_NOTSENT_LOWAT`). Without it a bulk
/// writer filled the whole 4 MiB buffer ahead of the window, and each byte was
/// cold in cache by the time it was copied into a packet: 2 GB on loopback went
/// 21 -> 29 Gbit/s and 0.57 -> 0.51 CPU s/GB with it (BENCHMARKS.md). 512 KiB
/// measured best among 64 KiB to 1 MiB.
pub const NOT_SENT_LIMIT: usize = 512 * 1024;

/// The sending half of a stream with its flow control.
#[derive(Debug)]
pub struct SendStream {
    buf: SendBuffer,
    state: SendState,
    /// The peer's MAX_STREAM_DATA: no byte at or above it may be written.
    max_stream_data: u64,
    /// Most unacknowledged bytes we hold.
    buffer_limit: usize,
    /// The STOP_SENDING code, once received.
    stopped: Option<u64>,
    /// A write was refused by stream credit at this limit.
    blocked_at: Option<u64>,
    /// The last limit reported in STREAM_DATA_BLOCKED.
    blocked_reported: Option<u64>,
}

impl SendStream {
    /// A stream the peer lets us send `max_stream_data` bytes on; we buffer at most
    /// `buffer_limit` unacknowledged bytes.
    pub fn new(max_stream_data: u64, buffer_limit: usize) -> Self {
        Self::with_storage(max_stream_data, buffer_limit, VecDeque::new())
    }

    /// [`new`](Self::new), buffering into `storage` (see [`SendBuffer::with_storage`]).
    pub fn with_storage(max_stream_data: u64, buffer_limit: usize, storage: VecDeque<u8>) -> Self {
        SendStream {
            buf: SendBuffer::with_storage(storage),
            state: SendState::Send,
            max_stream_data,
            buffer_limit,
            stopped: None,
            blocked_at: None,
            blocked_reported: None,
        }
    }

    /// The buffer's byte storage, for reuse by another stream.
    pub fn into_storage(self) -> VecDeque<u8> {
        self.buf.into_storage()
    }

    /// Hold at most `limit` unacknowledged bytes from now on (data already
    /// held stays).
    pub fn set_buffer_limit(&mut self, limit: usize) {
        self.buffer_limit = limit;
    }

    /// Stream credit left: bytes the peer still lets us write.
    pub fn stream_credit(&self) -> u64 {
        self.max_stream_data.saturating_sub(self.buf.written())
    }

    /// Room left under the buffer limit, and under the limit on bytes not sent
    /// yet: data is written shortly before it goes out, while still in cache.
    fn buffer_room(&self) -> usize {
        let unsent_room = NOT_SENT_LIMIT.saturating_sub(self.buf.unsent());
        self.buffer_limit
            .saturating_sub(self.buf.buffered())
            .min(unsent_room)
    }

    fn check_open(&self) -> Result<(), WriteError> {
        if let Some(code) = self.stopped {
            return Err(WriteError::Stopped(code));
        }
        if self.state != SendState::Send {
            return Err(WriteError::Closed);
        }
        Ok(())
    }

    /// Accept up to `data.len()` bytes, limited by the stream's flow-control credit, the
    /// buffer limit and `conn_credit` (the connection-level credit the caller has left).
    /// Returns how many were taken (0 when blocked). The caller consumes the returned
    /// count from its connection-level credit.
    pub fn write(&mut self, data: &[u8], conn_credit: u64) -> Result<usize, WriteError> {
        let n = self.accept(data.len(), conn_credit)?;
        self.buf.write(&data[..n]);
        Ok(n)
    }

    /// [`write`](Self::write) of `parts` one after the other, as if joined:
    /// the limits are checked once for them all. Returns how many bytes of
    /// the joined parts were taken.
    pub fn write_parts(&mut self, parts: &[&[u8]], conn_credit: u64) -> Result<usize, WriteError> {
        let len = parts.iter().map(|p| p.len()).sum();
        let n = self.accept(len, conn_credit)?;
        let mut left = n;
        for part in parts {
            let k = part.len().min(left);
            if k > 0 {
                self.buf.write(&part[..k]);
            }
            left -= k;
        }
        Ok(n)
    }

    /// [`write`](Self::write) of the application's own bytes: the stream holds
    /// the prefix it takes by reference instead of copying it (see
    /// [`SendBuffer::write_shared`]).
    pub fn write_shared(&mut self, data: &Bytes, conn_credit: u64) -> Result<usize, WriteError> {
        let n = self.accept(data.len(), conn_credit)?;
        if n > 0 {
            self.buf.write_shared(data.slice(..n));
        }
        Ok(n)
    }

    /// How many of `len` bytes a write may take now, within `conn_credit`
    /// (the connection's credit and send budget the caller has left), as
    /// [`write`](Self::write) would take them; nothing is written. A refusal
    /// for want of stream credit is noted as a write's is (STREAM_DATA_BLOCKED).
    pub fn accept(&mut self, len: usize, conn_credit: u64) -> Result<usize, WriteError> {
        self.check_open()?;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
        //# Senders MUST NOT send data in excess of either limit.
        let stream_credit = self.stream_credit();
        let n = (len as u64)
            .min(stream_credit)
            .min(conn_credit)
            .min(self.buffer_room() as u64) as usize;
        if n < len && n as u64 == stream_credit {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
            //# A sender SHOULD send a
            //# STREAM_DATA_BLOCKED or DATA_BLOCKED frame to indicate to the receiver
            //# that it has data to write but is blocked by flow control limits.
            self.blocked_at = Some(self.max_stream_data);
        }
        Ok(n)
    }

    /// Finish the stream (FIN after the written data).
    pub fn finish(&mut self) -> Result<(), WriteError> {
        self.check_open()?;
        self.buf.finish();
        self.state = SendState::DataSent;
        Ok(())
    }

    /// Abandon the stream. Returns the final size to put in RESET_STREAM, or `None` if
    /// it is already reset or fully acknowledged (nothing to send).
    pub fn reset(&mut self) -> Option<u64> {
        match self.state {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-3.1
            //# From any state that is one of "Ready", "Send", or "Data Sent", an
            //# application can signal that it wishes to abandon transmission of
            //# stream data.
            SendState::Send | SendState::DataSent => {
                // Every written byte consumed the peer's credit, so the final size is
                // what was written, sent or not (RFC 9000 §4.5).
                let final_size = self.buf.written();
                self.buf.clear();
                self.state = SendState::ResetSent;
                Some(final_size)
            }
            SendState::DataRecvd | SendState::ResetSent | SendState::ResetRecvd => None,
        }
    }

    /// The peer sent STOP_SENDING. Returns the final size for the RESET_STREAM we must
    /// answer with (RFC 9000 §3.5), or `None` if no reset is needed (already reset, or
    /// everything acknowledged).
    pub fn on_stop_sending(&mut self, error_code: u64) -> Option<u64> {
        if self.stopped.is_none() {
            self.stopped = Some(error_code);
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-3.5
        //# An endpoint that receives a STOP_SENDING frame
        //# MUST send a RESET_STREAM frame if the stream is in the "Ready" or
        //# "Send" state.
        // In "Data Sent" we reset at once too rather than defer (which the RFC allows):
        // the peer does not want the bytes still in flight.
        self.reset()
    }

    /// The peer raised MAX_STREAM_DATA. Returns true if credit grew.
    pub fn on_max_stream_data(&mut self, max: u64) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
        //# A sender MUST ignore any MAX_STREAM_DATA or MAX_DATA frames that do
        //# not increase flow control limits.
        if max <= self.max_stream_data {
            return false;
        }
        self.max_stream_data = max;
        true
    }

    /// Replace the limit, even with a lower one: the server's real limit
    /// after 0-RTT ran on remembered ones (RFC 9000 §7.4.1). The caller
    /// checked it holds what was written.
    pub fn replace_max_stream_data(&mut self, max: u64) {
        self.max_stream_data = max;
    }

    /// The limit we are blocked at, if a write was refused for stream-level flow
    /// control and no STREAM_DATA_BLOCKED was reported at this limit yet; reporting it
    /// here counts as sending it.
    pub fn take_blocked(&mut self) -> Option<u64> {
        let limit = self.blocked_at?;
        // Stale once credit grew, or once the stream no longer sends new data.
        if limit != self.max_stream_data
            || self.state != SendState::Send
            || self.blocked_reported == Some(limit)
        {
            return None;
        }
        self.blocked_reported = Some(limit);
        Some(limit)
    }

    fn is_resetting(&self) -> bool {
        matches!(self.state, SendState::ResetSent | SendState::ResetRecvd)
    }

    /// Whether there is anything to (re)transmit.
    pub fn has_pending(&self) -> bool {
        !self.is_resetting() && self.buf.has_pending()
    }

    /// See [`SendBuffer::next_range`]. `None` once reset.
    pub fn next_range(&mut self, max_len: usize) -> Option<SendRange> {
        if self.is_resetting() {
            return None;
        }
        self.buf.next_range(max_len)
    }

    /// See [`SendBuffer::copy_range`].
    pub fn copy_range<B: BufMut>(&self, offset: u64, len: usize, dst: &mut B) {
        self.buf.copy_range(offset, len, dst)
    }

    /// A STREAM frame was acknowledged. Returns true when the stream reached DataRecvd
    /// with this acknowledgement (once).
    pub fn on_ack(&mut self, offset: u64, len: usize, fin: bool) -> bool {
        if self.is_resetting() {
            return false;
        }
        let all_acked = self.buf.on_ack(offset, len, fin);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-3.1
        //# Once all stream data has been successfully acknowledged, the sending
        //# part of the stream enters the "Data Recvd" state, which is a terminal
        //# state.
        if all_acked && self.state == SendState::DataSent {
            self.state = SendState::DataRecvd;
            return true;
        }
        false
    }

    /// A STREAM frame was lost.
    pub fn on_lost(&mut self, offset: u64, len: usize, fin: bool) {
        if !self.is_resetting() {
            self.buf.on_lost(offset, len, fin);
        }
    }

    /// Our RESET_STREAM was acknowledged (ResetRecvd).
    pub fn on_reset_acked(&mut self) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-3.1
        //# Once a packet containing a RESET_STREAM has been acknowledged, the
        //# sending part of the stream enters the "Reset Recvd" state, which is a
        //# terminal state.
        if self.state == SendState::ResetSent {
            self.state = SendState::ResetRecvd;
        }
    }

    /// Current state.
    pub fn state(&self) -> SendState {
        self.state
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        self.buf.written()
    }

    /// Bytes held: written and not yet acknowledged.
    pub fn buffered(&self) -> usize {
        self.buf.buffered()
    }

    /// The STOP_SENDING code, if the peer stopped us.
    pub fn stopped(&self) -> Option<u64> {
        self.stopped
    }

    /// Whether writes wait for data to go out (the not-sent limit is reached):
    /// then sending, not only an acknowledgement, can make the stream writable.
    pub fn at_not_sent_limit(&self) -> bool {
        self.buf.unsent() >= NOT_SENT_LIMIT
    }

    /// True if a write of at least one byte would succeed now (ignoring the
    /// connection-level credit).
    pub fn is_writable(&self) -> bool {
        self.check_open().is_ok() && self.stream_credit() > 0 && self.buffer_room() > 0
    }
}

#[cfg(test)]
mod tests;
