//! Incoming stream data: reassembly that is O(1) per frame when data arrives in
//! order and O(log n) when it does not, bounded by flow control; and the receiving
//! half of a stream (RFC 9000 §3.2) with its flow control (§4.1, §4.5).

use std::collections::VecDeque;

use bytes::Bytes;

use super::flow::{AutoWindow, FlowClock};
use crate::error::TransportError;
use crate::varint::VarInt;

mod buffer;

pub use buffer::{Append, MAX_MOVED, MIN_SHARED, ReadInto, RecvBuffer, Visit};

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
    /// This many bytes were copied (at least one, unless the caller's buffer was empty).
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
#[derive(Debug)]
pub struct RecvStream {
    buf: RecvBuffer,
    state: RecvState,
    /// Credit kept ahead of the read offset (grows with fast reads).
    window: AutoWindow,
    /// The limit we advertised (initially `window`).
    max_stream_data: u64,
    /// Highest offset counted against flow control: the largest frame end or the final
    /// size.
    highest: u64,
    final_size: Option<u64>,
    /// The RESET_STREAM error code, once reset.
    reset_code: Option<u64>,
    /// The application stopped reading (STOP_SENDING).
    stopped: bool,
}

impl RecvStream {
    /// A stream on which we advertised `window` bytes of initial credit; later updates
    /// keep the limit at read offset + `window`.
    pub fn new(window: u64) -> Self {
        Self::with_storage(AutoWindow::new(window, window), VecDeque::new())
    }

    /// [`new`](Self::new) with a window that may grow ([`AutoWindow`]),
    /// reassembling into `storage` (see [`RecvBuffer::with_storage`]).
    pub fn with_storage(window: AutoWindow, storage: VecDeque<u8>) -> Self {
        RecvStream {
            buf: RecvBuffer::with_storage(storage),
            state: RecvState::Recv,
            window,
            max_stream_data: window.size(),
            highest: 0,
            final_size: None,
            reset_code: None,
            stopped: false,
        }
    }

    /// The buffer's byte storage, for reuse by another stream.
    pub fn into_storage(self) -> VecDeque<u8> {
        self.buf.into_storage()
    }

    /// Capacity of the byte storage.
    pub fn storage_capacity(&self) -> usize {
        self.buf.storage_capacity()
    }

    /// The byte storage of a stream read to its end (`DataRead`), for
    /// another stream while this one waits for its sending half; empty
    /// otherwise.
    pub fn take_storage(&mut self) -> VecDeque<u8> {
        if self.state != RecvState::DataRead {
            return VecDeque::new();
        }
        self.buf.take_storage()
    }

    /// A STREAM frame arrived. Checks the stream limit (FLOW_CONTROL_ERROR) and the
    /// final-size rules (FINAL_SIZE_ERROR). Returns how many new bytes count against
    /// connection-level flow control (growth of the highest offset).
    pub fn on_data(&mut self, offset: u64, data: &[u8], fin: bool) -> Result<u64, TransportError> {
        self.on_data_from(offset, data, fin, None)
    }

    /// [`on_data`](Self::on_data) for `data` that may lie in `owner`, a
    /// shared receive buffer ([`RecvBuffer::insert_from`]).
    pub fn on_data_from(
        &mut self,
        offset: u64,
        data: &[u8],
        fin: bool,
        owner: Option<&Bytes>,
    ) -> Result<u64, TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.8
        //# The largest offset delivered on a stream -- the sum of the offset and
        //# data length -- cannot exceed 2^62-1, as it is not possible to provide
        //# flow control credit for that data.
        let end = offset
            .checked_add(data.len() as u64)
            .filter(|&end| end <= VarInt::MAX.into_inner())
            .ok_or_else(|| TransportError::flow_control("stream offset beyond 2^62-1"))?;
        self.check_final_size(end, fin)?;
        if end > self.max_stream_data {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-4.1
            //# A receiver MUST close the connection with an error of type
            //# FLOW_CONTROL_ERROR if the sender violates the advertised connection
            //# or stream data limits; see Section 11 for details on error handling.
            return Err(TransportError::flow_control(
                "stream data beyond MAX_STREAM_DATA",
            ));
        }
        // An empty frame without FIN carries no byte and no final size.
        let grown = if !data.is_empty() || fin {
            let grown = end.saturating_sub(self.highest);
            self.highest = self.highest.max(end);
            grown
        } else {
            0
        };
        if !matches!(self.state, RecvState::Recv | RecvState::SizeKnown) {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-3.2
            //# After all data has been received, any STREAM or
            //# STREAM_DATA_BLOCKED frames for the stream can be discarded.
            return Ok(grown);
        }
        if fin && self.final_size.is_none() {
            self.final_size = Some(end);
            self.state = RecvState::SizeKnown;
        }
        self.buf.insert_from(offset, data, owner);
        if self.stopped {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-3.5
            //# STREAM frames received after sending a STOP_SENDING frame are still
            //# counted toward connection and stream flow control, even though these
            //# frames can be discarded upon receipt.
            self.buf.discard_readable();
        }
        if self.final_size == Some(self.buf.contiguous_end()) {
            // Stopped: nobody will read, so the data counts as read.
            self.state = if self.stopped {
                RecvState::DataRead
            } else {
                RecvState::DataRecvd
            };
        }
        Ok(grown)
    }

    /// The final-size rules of RFC 9000 §4.5 for a frame ending at `end`.
    fn check_final_size(&self, end: u64, fin: bool) -> Result<(), TransportError> {
        match self.final_size {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-4.5
            //# A receiver SHOULD treat receipt of data at or beyond the
            //# final size as an error of type FINAL_SIZE_ERROR, even after a stream
            //# is closed.
            Some(final_size) if end > final_size => Err(TransportError::final_size(
                "stream data beyond the final size",
            )),
            //= https://www.rfc-editor.org/rfc/rfc9000#section-4.5
            //# If a
            //# RESET_STREAM or STREAM frame is received indicating a change in the
            //# final size for the stream, an endpoint SHOULD respond with an error
            //# of type FINAL_SIZE_ERROR; see Section 11 for details on error
            //# handling.
            Some(final_size) if fin && end != final_size => {
                Err(TransportError::final_size("final size changed"))
            }
            // A final size below bytes already received would change what was sent.
            None if fin && end < self.highest => Err(TransportError::final_size(
                "final size below data already received",
            )),
            _ => Ok(()),
        }
    }

    /// A RESET_STREAM arrived. Checks the final size against what was received. Returns
    /// the connection-level flow control growth (final size minus highest offset seen).
    ///
    /// Unread data is discarded: [`read_offset`](Self::read_offset) moves to the final
    /// size so that the connection can return the credit.
    pub fn on_reset(&mut self, error_code: u64, final_size: u64) -> Result<u64, TransportError> {
        if self.final_size.is_some_and(|known| known != final_size) {
            return Err(TransportError::final_size(
                "RESET_STREAM changed the final size",
            ));
        }
        if final_size < self.highest {
            return Err(TransportError::final_size(
                "RESET_STREAM final size below data already received",
            ));
        }
        if final_size > self.max_stream_data {
            return Err(TransportError::flow_control(
                "RESET_STREAM final size beyond MAX_STREAM_DATA",
            ));
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.5
        //# The receiver MUST use the final size of the stream to
        //# account for all bytes sent on the stream in its connection-level flow
        //# controller.
        let grown = final_size - self.highest;
        self.highest = final_size;
        self.final_size = Some(final_size);
        match self.state {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-3.2
            //# Receiving a RESET_STREAM frame in the "Recv" or "Size Known" state
            //# causes the stream to enter the "Reset Recvd" state.
            RecvState::Recv | RecvState::SizeKnown => {
                //= https://www.rfc-editor.org/rfc/rfc9000#section-3.2
                //# An
                //# implementation MAY interrupt delivery of stream data, discard any
                //# data that was not consumed, and signal the receipt of the
                //# RESET_STREAM.
                self.buf.discard_all(final_size);
                self.reset_code = Some(error_code);
                self.state = if self.stopped {
                    RecvState::ResetRead
                } else {
                    RecvState::ResetRecvd
                };
            }
            // All data is here: the reset is suppressed and the data delivered (§3.2
            // allows either); later states are terminal.
            RecvState::DataRecvd
            | RecvState::DataRead
            | RecvState::ResetRecvd
            | RecvState::ResetRead => {}
        }
        Ok(grown)
    }

    /// Read into `buf`. After `Finished` or an error is returned once, the stream is
    /// in a terminal state (and keeps returning the same).
    pub fn read(&mut self, buf: &mut [u8]) -> Result<ReadOutcome, ReadError> {
        self.read_into(buf)
    }

    /// [`read`](Self::read) into any [`ReadInto`] destination.
    pub fn read_into<D: ReadInto + ?Sized>(
        &mut self,
        buf: &mut D,
    ) -> Result<ReadOutcome, ReadError> {
        self.read_with(|b| b.read_into(buf))
    }

    /// [`read`](Self::read) handing over up to `max` bytes as [`Bytes`]: no
    /// copy when they are held in a receive buffer ([`RecvBuffer::read_bytes`]).
    /// `Ok(None)` when the stream has ended; an empty `Bytes` when nothing is
    /// readable yet (or `max` is 0).
    pub fn read_bytes(&mut self, max: usize) -> Result<Option<Bytes>, ReadError> {
        let mut bytes = Bytes::new();
        let outcome = self.read_with(|b| {
            bytes = b.read_bytes(max).unwrap_or_default();
            bytes.len()
        })?;
        Ok((outcome != ReadOutcome::Finished).then_some(bytes))
    }

    /// A read's states around `take`, which moves readable bytes out of the
    /// buffer (there is at least one) and says how many.
    fn read_with(
        &mut self,
        take: impl FnOnce(&mut RecvBuffer) -> usize,
    ) -> Result<ReadOutcome, ReadError> {
        if self.stopped {
            return Err(ReadError::Stopped);
        }
        match self.state {
            RecvState::ResetRecvd | RecvState::ResetRead => {
                self.state = RecvState::ResetRead;
                Err(ReadError::Reset(self.reset_code.unwrap_or_default()))
            }
            RecvState::DataRead => Ok(ReadOutcome::Finished),
            RecvState::Recv | RecvState::SizeKnown | RecvState::DataRecvd => {
                if self.buf.readable() > 0 {
                    Ok(ReadOutcome::Data(take(&mut self.buf)))
                } else if self.state == RecvState::DataRecvd {
                    self.state = RecvState::DataRead;
                    Ok(ReadOutcome::Finished)
                } else {
                    Ok(ReadOutcome::Blocked)
                }
            }
        }
    }

    /// After a read that returned data: when it took the last byte and the
    /// FIN is here, end the stream now (Data Read), as the next read would,
    /// and return true. Lets a caller learn of the end without that read.
    pub fn end_if_drained(&mut self) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-3.2
        //# Once the application receives the indication that all data has been
        //# delivered, the stream enters the "Data Read" state.
        if self.state != RecvState::DataRecvd || self.stopped || self.buf.readable() > 0 {
            return false;
        }
        self.state = RecvState::DataRead;
        true
    }

    /// The application no longer wants data. Returns true if STOP_SENDING should be sent
    /// (not all data received yet and no reset seen). Buffered data is discarded and
    /// counts as read.
    pub fn stop(&mut self) -> bool {
        if self.stopped {
            return false;
        }
        self.stopped = true;
        self.buf.discard_readable();
        match self.state {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-3.5
            //# If the stream is in the "Recv" or "Size Known" state, the transport
            //# SHOULD signal this by sending a STOP_SENDING frame to prompt closure
            //# of the stream in the opposite direction.
            RecvState::Recv | RecvState::SizeKnown => true,
            RecvState::DataRecvd => {
                self.state = RecvState::DataRead;
                false
            }
            RecvState::ResetRecvd => {
                self.state = RecvState::ResetRead;
                false
            }
            RecvState::DataRead | RecvState::ResetRead => false,
        }
    }

    /// A new MAX_STREAM_DATA limit to advertise, when the application has read enough
    /// since the last one (half a window); the limit is considered sent. `clock`
    /// lets the window grow ([`AutoWindow`]).
    pub fn take_max_stream_data(&mut self, clock: Option<FlowClock>) -> Option<u64> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-3.2
        //# In this state, the endpoint no longer needs to send MAX_STREAM_DATA
        //# frames; it only receives any retransmissions of stream data.
        if self.state != RecvState::Recv || self.stopped {
            return None;
        }
        // Credit follows reads only: a reader that does not keep up gets no more data.
        let limit = self
            .window
            .take(self.buf.read_offset(), self.max_stream_data, clock)?;
        self.max_stream_data = limit;
        Some(limit)
    }

    /// The current window (credit kept ahead of the read offset).
    pub fn window(&self) -> u64 {
        self.window.size()
    }

    /// The limit currently advertised (to resend if a MAX_STREAM_DATA frame is lost).
    pub fn max_stream_data(&self) -> u64 {
        self.max_stream_data
    }

    /// The connection closed: give back storage no read can reach.
    pub fn shed(&mut self) {
        self.buf.shed();
    }

    /// Whether a read would return something other than `Blocked` now.
    pub fn is_readable(&self) -> bool {
        self.stopped
            || match self.state {
                RecvState::Recv | RecvState::SizeKnown => self.buf.readable() > 0,
                _ => true,
            }
    }

    /// Current state.
    pub fn state(&self) -> RecvState {
        self.state
    }

    /// The RESET_STREAM error code, if the peer reset the stream.
    pub fn reset_code(&self) -> Option<u64> {
        self.reset_code
    }

    /// The final size, once known (FIN or RESET_STREAM received).
    pub fn final_size(&self) -> Option<u64> {
        self.final_size
    }

    /// Bytes read by the application so far, plus bytes discarded after
    /// [`stop`](Self::stop) or a reset (for connection-level credit: every increase
    /// is credit to return with `RecvFlow::on_consumed`).
    pub fn read_offset(&self) -> u64 {
        self.buf.read_offset()
    }

    /// The reassembly buffer (for tests and metrics).
    pub fn buffer(&self) -> &RecvBuffer {
        &self.buf
    }
}

#[cfg(test)]
mod tests;
