//! Incoming stream data: reassembly that is O(1) per frame when data arrives in
//! order and O(log n) when it does not, bounded by flow control.
//!
//! CONTRACT (filled in by the streams work).

use crate::error::TransportError;

/// Reassembles bytes received at arbitrary offsets into an in-order byte stream.
/// In-order data is appended to contiguous storage directly; out-of-order segments
/// wait in an ordered map until the gap before them fills. Duplicates and overlaps
/// are trimmed. The caller bounds memory (flow control, or a crypto buffer limit).
pub struct RecvBuffer {
    // implementer's fields
    _todo: (),
}

impl Default for RecvBuffer {
    fn default() -> Self {
        Self::new()
    }
}

impl RecvBuffer {
    /// An empty buffer.
    pub fn new() -> Self {
        todo!("recv buffer")
    }

    /// Store `data` at `offset`. Returns how much the highest received offset grew.
    pub fn insert(&mut self, offset: u64, data: &[u8]) -> u64 {
        let _ = (offset, data);
        todo!("recv buffer")
    }

    /// Copy contiguous bytes into `buf`; returns how many.
    pub fn read(&mut self, buf: &mut [u8]) -> usize {
        let _ = buf;
        todo!("recv buffer")
    }

    /// Contiguous bytes ready to read.
    pub fn readable(&self) -> usize {
        todo!("recv buffer")
    }

    /// Bytes consumed by reads so far.
    pub fn read_offset(&self) -> u64 {
        todo!("recv buffer")
    }

    /// One past the highest byte received.
    pub fn max_offset(&self) -> u64 {
        todo!("recv buffer")
    }

    /// Bytes held, in order and out of order (for memory bounds and tests).
    pub fn buffered(&self) -> usize {
        todo!("recv buffer")
    }

    /// How many inserts took the in-order fast path and how many the out-of-order path.
    pub fn path_counts(&self) -> (u64, u64) {
        todo!("recv buffer")
    }
}

/// Receiving part of a stream (RFC 9000 §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecvState {
    /// Receiving; final size unknown.
    Recv,
    /// FIN received, some data missing.
    SizeKnown,
    /// All data received, not all read.
    DataRecvd,
    /// All data read by the application (terminal).
    DataRead,
    /// RESET_STREAM received, not yet reported to the application.
    ResetRecvd,
    /// Reset reported to the application (terminal).
    ResetRead,
}

/// Result of a read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadOutcome {
    /// This many bytes were copied (at least one).
    Data(usize),
    /// No data now; more may come.
    Blocked,
    /// The stream ended: all data has been read.
    Finished,
}

/// Why a read failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ReadError {
    /// The peer reset the stream with this code.
    #[error("reset by peer (code {0})")]
    Reset(u64),
    /// We stopped reading (STOP_SENDING).
    #[error("stream stopped")]
    Stopped,
}

/// The receiving half of a stream with its flow control. MAX_STREAM_DATA credit is
/// returned only as the application reads (not as data arrives), so a slow reader
/// bounds what the peer may send.
pub struct RecvStream {
    // implementer's fields
    _todo: (),
}

impl RecvStream {
    /// A stream on which we advertised `window` bytes of initial credit; later updates
    /// keep the limit at read offset + `window`.
    pub fn new(window: u64) -> Self {
        let _ = window;
        todo!("recv stream")
    }

    /// A STREAM frame arrived. Checks the stream limit (FLOW_CONTROL_ERROR) and the
    /// final-size rules (FINAL_SIZE_ERROR). Returns how many new bytes count against
    /// connection-level flow control (growth of the highest offset).
    pub fn on_data(&mut self, offset: u64, data: &[u8], fin: bool) -> Result<u64, TransportError> {
        let _ = (offset, data, fin);
        todo!("recv stream")
    }

    /// A RESET_STREAM arrived. Checks the final size against what was received. Returns
    /// the connection-level flow control growth (final size minus highest offset seen).
    pub fn on_reset(&mut self, error_code: u64, final_size: u64) -> Result<u64, TransportError> {
        let _ = (error_code, final_size);
        todo!("recv stream")
    }

    /// Read into `buf`. After `Finished` or an error is returned once, the stream is
    /// in a terminal state.
    pub fn read(&mut self, buf: &mut [u8]) -> Result<ReadOutcome, ReadError> {
        let _ = buf;
        todo!("recv stream")
    }

    /// The application no longer wants data. Returns true if STOP_SENDING should be sent
    /// (not all data received yet and no reset seen).
    pub fn stop(&mut self) -> bool {
        todo!("recv stream")
    }

    /// A new MAX_STREAM_DATA limit to advertise, when the application has read enough
    /// since the last one (half a window); the limit is considered sent.
    pub fn take_max_stream_data(&mut self) -> Option<u64> {
        todo!("recv stream")
    }

    /// The limit currently advertised (to resend if a MAX_STREAM_DATA frame is lost).
    pub fn max_stream_data(&self) -> u64 {
        todo!("recv stream")
    }

    /// Whether a read would return something other than `Blocked` now.
    pub fn is_readable(&self) -> bool {
        todo!("recv stream")
    }

    /// Current state.
    pub fn state(&self) -> RecvState {
        todo!("recv stream")
    }

    /// Bytes read by the application so far (for connection-level credit).
    pub fn read_offset(&self) -> u64 {
        todo!("recv stream")
    }

    /// The reassembly buffer (for tests and metrics).
    pub fn buffer(&self) -> &RecvBuffer {
        todo!("recv stream")
    }
}
