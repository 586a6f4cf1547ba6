//! What each sent packet carried, so acknowledgement and loss can be applied to
//! the right streams and control frames.

use smallvec::SmallVec;

use crate::types::{Dir, SpaceId, StreamId};

/// A STREAM frame as sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct StreamChunk {
    pub(crate) id: StreamId,
    pub(crate) offset: u64,
    pub(crate) len: u32,
    pub(crate) fin: bool,
}

/// A control frame that must be repeated (with current values) if lost.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Control {
    MaxData,
    MaxStreamData(StreamId),
    MaxStreams(Dir),
    DataBlocked(u64),
    StreamDataBlocked(StreamId, u64),
    StreamsBlocked(Dir, u64),
    ResetStream(StreamId),
    StopSending(StreamId),
    NewConnectionId(u64),
    RetireConnectionId(u64),
    AckFrequency(u64),
}

/// The retransmittable contents of one packet. Small and inline for the common
/// packet (an ACK and one or two STREAM frames): no allocation per packet.
#[derive(Clone, Debug)]
pub(crate) struct SentFrames {
    /// The packet-number space the packet was sent in.
    pub(crate) space: SpaceId,
    /// Largest packet number in the ACK frame we sent, for ack-of-ack.
    pub(crate) ack_largest: Option<u64>,
    /// CRYPTO range (offset, len).
    pub(crate) crypto: Option<(u64, u32)>,
    pub(crate) streams: SmallVec<[StreamChunk; 2]>,
    pub(crate) control: SmallVec<[Control; 1]>,
    pub(crate) handshake_done: bool,
    /// A PMTU probe (PING + PADDING).
    pub(crate) mtu_probe: bool,
    /// DATAGRAM frames carried: counted if lost, never resent.
    pub(crate) datagrams: u16,
}

impl SentFrames {
    pub(crate) fn new(space: SpaceId) -> Self {
        SentFrames {
            space,
            ack_largest: None,
            crypto: None,
            streams: SmallVec::new(),
            control: SmallVec::new(),
            handshake_done: false,
            mtu_probe: false,
            datagrams: 0,
        }
    }
}
