//! Outgoing stream data: buffered until acknowledged, retransmitted when lost.
//!
//! CONTRACT (filled in by the streams work).

use bytes::BufMut;

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

/// Bytes written by the application and not yet acknowledged, with bookkeeping
/// of what is unsent, in flight, lost and acknowledged. Used for streams and for the
/// CRYPTO stream of each packet-number space. Memory is freed as the acknowledged
/// prefix advances; writes are coalesced into contiguous storage (no allocation per
/// write once capacity is reached).
pub struct SendBuffer {
    // implementer's fields
    _todo: (),
}

impl Default for SendBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl SendBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        todo!("send buffer")
    }

    /// Append bytes (no limit here; callers bound what they accept).
    pub fn write(&mut self, data: &[u8]) {
        let _ = data;
        todo!("send buffer")
    }

    /// Mark the end of the stream after everything written so far.
    pub fn finish(&mut self) {
        todo!("send buffer")
    }

    /// Total bytes written (the final size once finished).
    pub fn written(&self) -> u64 {
        todo!("send buffer")
    }

    /// Bytes held (written and not yet acknowledged).
    pub fn buffered(&self) -> usize {
        todo!("send buffer")
    }

    /// Whether something is waiting to be sent: lost data, unsent data or an unsent FIN.
    pub fn has_pending(&self) -> bool {
        todo!("send buffer")
    }

    /// Choose the next range to send, at most `max_len` bytes: lost data first, then
    /// new data. Marks it in flight. Returns a bare FIN (len 0) when only FIN is left.
    pub fn next_range(&mut self, max_len: usize) -> Option<SendRange> {
        let _ = max_len;
        todo!("send buffer")
    }

    /// Append the bytes of `offset..offset+len` (which must still be buffered) to `dst`.
    pub fn copy_range<B: BufMut>(&self, offset: u64, len: usize, dst: &mut B) {
        let _ = (offset, len, dst);
        todo!("send buffer")
    }

    /// The peer acknowledged a frame that carried this range. Returns true when every
    /// byte and the FIN (if finished) have now been acknowledged.
    pub fn on_ack(&mut self, offset: u64, len: usize, fin: bool) -> bool {
        let _ = (offset, len, fin);
        todo!("send buffer")
    }

    /// A frame that carried this range was declared lost: queue whatever part of it is
    /// not yet acknowledged for retransmission.
    pub fn on_lost(&mut self, offset: u64, len: usize, fin: bool) {
        let _ = (offset, len, fin);
        todo!("send buffer")
    }

    /// Drop all data (after RESET_STREAM): nothing more will be sent.
    pub fn clear(&mut self) {
        todo!("send buffer")
    }
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

/// The sending half of a stream with its flow control.
pub struct SendStream {
    // implementer's fields
    _todo: (),
}

impl SendStream {
    /// A stream the peer lets us send `max_stream_data` bytes on; we buffer at most
    /// `buffer_limit` unacknowledged bytes.
    pub fn new(max_stream_data: u64, buffer_limit: usize) -> Self {
        let _ = (max_stream_data, buffer_limit);
        todo!("send stream")
    }

    /// Accept up to `data.len()` bytes, limited by the stream's flow-control credit, the
    /// buffer limit and `conn_credit` (the connection-level credit the caller has left).
    /// Returns how many were taken (0 when blocked).
    pub fn write(&mut self, data: &[u8], conn_credit: u64) -> Result<usize, WriteError> {
        let _ = (data, conn_credit);
        todo!("send stream")
    }

    /// Finish the stream (FIN after the written data).
    pub fn finish(&mut self) -> Result<(), WriteError> {
        todo!("send stream")
    }

    /// Abandon the stream. Returns the final size to put in RESET_STREAM, or `None` if
    /// it is already reset or fully acknowledged (nothing to send).
    pub fn reset(&mut self) -> Option<u64> {
        todo!("send stream")
    }

    /// The peer sent STOP_SENDING. Returns the final size for the RESET_STREAM we must
    /// answer with (RFC 9000 §3.5), or `None` if no reset is needed.
    pub fn on_stop_sending(&mut self, error_code: u64) -> Option<u64> {
        let _ = error_code;
        todo!("send stream")
    }

    /// The peer raised MAX_STREAM_DATA. Returns true if credit grew.
    pub fn on_max_stream_data(&mut self, max: u64) -> bool {
        let _ = max;
        todo!("send stream")
    }

    /// The limit we are blocked at, if a write was refused for stream-level flow
    /// control and no STREAM_DATA_BLOCKED was reported at this limit yet; reporting it
    /// here counts as sending it.
    pub fn take_blocked(&mut self) -> Option<u64> {
        todo!("send stream")
    }

    /// Whether there is anything to (re)transmit.
    pub fn has_pending(&self) -> bool {
        todo!("send stream")
    }

    /// See [`SendBuffer::next_range`].
    pub fn next_range(&mut self, max_len: usize) -> Option<SendRange> {
        let _ = max_len;
        todo!("send stream")
    }

    /// See [`SendBuffer::copy_range`].
    pub fn copy_range<B: BufMut>(&self, offset: u64, len: usize, dst: &mut B) {
        let _ = (offset, len, dst);
        todo!("send stream")
    }

    /// A STREAM frame was acknowledged. Returns true when the stream reached DataRecvd.
    pub fn on_ack(&mut self, offset: u64, len: usize, fin: bool) -> bool {
        let _ = (offset, len, fin);
        todo!("send stream")
    }

    /// A STREAM frame was lost.
    pub fn on_lost(&mut self, offset: u64, len: usize, fin: bool) {
        let _ = (offset, len, fin);
        todo!("send stream")
    }

    /// Our RESET_STREAM was acknowledged (ResetRecvd).
    pub fn on_reset_acked(&mut self) {
        todo!("send stream")
    }

    /// Current state.
    pub fn state(&self) -> SendState {
        todo!("send stream")
    }

    /// Bytes written so far.
    pub fn written(&self) -> u64 {
        todo!("send stream")
    }

    /// The STOP_SENDING code, if the peer stopped us.
    pub fn stopped(&self) -> Option<u64> {
        todo!("send stream")
    }

    /// True if a write of at least one byte would succeed now (ignoring the
    /// connection-level credit).
    pub fn is_writable(&self) -> bool {
        todo!("send stream")
    }
}
