//! Stream data structures: the send buffer (retransmission-aware), the receive
//! reassembly buffer, per-stream send/receive state machines (RFC 9000 §3) and
//! flow-control counters (RFC 9000 §4). The connection's stream manager
//! (`connection/streams.rs`) ties them to frames and to the application.
//!
//! Connection-level accounting, for the stream manager:
//! - sending: [`SendStream::write`] takes `SendFlow::credit()` and returns what it
//!   accepted, which the caller passes to [`SendFlow::consume`] (and calls
//!   [`SendFlow::set_blocked`] when the connection credit was what stopped it);
//! - receiving: the growth returned by [`RecvStream::on_data`] and
//!   [`RecvStream::on_reset`] goes to [`RecvFlow::on_received`]; every increase of
//!   [`RecvStream::read_offset`] (reads, and data discarded by a reset or `stop`) goes
//!   to [`RecvFlow::on_consumed`].

pub mod flow;
mod ranges;
pub mod recv;
pub mod send;

pub use flow::{AutoWindow, FlowClock, RecvFlow, SendFlow};
pub use recv::{
    Append, MAX_MOVED, MIN_SHARED, ReadError, ReadInto, ReadOutcome, RecvBuffer, RecvState,
    RecvStream, Visit,
};
pub use send::{SendBuffer, SendRange, SendState, SendStream, WriteError};

#[cfg(test)]
mod tests;
