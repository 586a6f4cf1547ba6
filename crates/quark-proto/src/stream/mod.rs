//! Stream data structures: the send buffer (retransmission-aware), the receive
//! reassembly buffer, per-stream send/receive state machines (RFC 9000 §3) and
//! flow-control counters (RFC 9000 §4). The connection's stream manager
//! (`connection/streams.rs`) ties them to frames and to the application.
//!
//! CONTRACT (filled in by the streams work): public items fixed; bodies and private
//! items the implementer's.

pub mod flow;
pub mod recv;
pub mod send;

pub use flow::{RecvFlow, SendFlow};
pub use recv::{ReadError, ReadOutcome, RecvBuffer, RecvState, RecvStream};
pub use send::{SendBuffer, SendRange, SendState, SendStream, WriteError};
