//! What each sent packet carried, so acknowledgement and loss can be applied to
//! the right streams and control frames.
//!
//! The record is moved several times per packet sent (built, handed to
//! recovery, stored; issue #30), so it is kept small: the frames are one list
//! of 24-byte [`Item`]s, and [`SentFrames`] is 72 bytes, which keeps the whole
//! `SentPacket<SentFrames>` at 120 (test `record_sizes`).

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
    /// NEW_TOKEN, by its number on the connection (the newest's token is
    /// kept until acknowledged).
    NewToken(u64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
enum Kind {
    Stream,
    Crypto,
    MaxData,
    MaxStreamData,
    MaxStreams,
    DataBlocked,
    StreamDataBlocked,
    StreamsBlocked,
    ResetStream,
    StopSending,
    NewConnectionId,
    RetireConnectionId,
    AckFrequency,
    NewToken,
}

/// One recorded STREAM, CRYPTO or control frame, packed by hand into 24
/// bytes (an enum of `StreamChunk`, CRYPTO and `Control` is 32: rustc does not
/// place the other variants around `Control`'s tag).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Item {
    kind: Kind,
    /// STREAM: FIN; MAX_STREAMS, STREAMS_BLOCKED: unidirectional.
    flag: bool,
    /// STREAM, CRYPTO: length.
    len: u32,
    /// Stream ID; CRYPTO offset; the limit or sequence number of the others.
    a: u64,
    /// STREAM offset; STREAM_DATA_BLOCKED's and STREAMS_BLOCKED's limit.
    b: u64,
}

impl Item {
    fn new(kind: Kind, flag: bool, a: u64, b: u64) -> Self {
        Item {
            kind,
            flag,
            len: 0,
            a,
            b,
        }
    }

    fn stream(c: StreamChunk) -> Self {
        Item {
            kind: Kind::Stream,
            flag: c.fin,
            len: c.len,
            a: c.id.0,
            b: c.offset,
        }
    }

    fn control(c: Control) -> Self {
        let uni = |d: Dir| d == Dir::Uni;
        match c {
            Control::MaxData => Item::new(Kind::MaxData, false, 0, 0),
            Control::MaxStreamData(id) => Item::new(Kind::MaxStreamData, false, id.0, 0),
            Control::MaxStreams(d) => Item::new(Kind::MaxStreams, uni(d), 0, 0),
            Control::DataBlocked(max) => Item::new(Kind::DataBlocked, false, max, 0),
            Control::StreamDataBlocked(id, max) => {
                Item::new(Kind::StreamDataBlocked, false, id.0, max)
            }
            Control::StreamsBlocked(d, max) => Item::new(Kind::StreamsBlocked, uni(d), max, 0),
            Control::ResetStream(id) => Item::new(Kind::ResetStream, false, id.0, 0),
            Control::StopSending(id) => Item::new(Kind::StopSending, false, id.0, 0),
            Control::NewConnectionId(seq) => Item::new(Kind::NewConnectionId, false, seq, 0),
            Control::RetireConnectionId(seq) => Item::new(Kind::RetireConnectionId, false, seq, 0),
            Control::AckFrequency(seq) => Item::new(Kind::AckFrequency, false, seq, 0),
            Control::NewToken(seq) => Item::new(Kind::NewToken, false, seq, 0),
        }
    }

    fn as_stream(&self) -> Option<StreamChunk> {
        (self.kind == Kind::Stream).then_some(StreamChunk {
            id: StreamId(self.a),
            offset: self.b,
            len: self.len,
            fin: self.flag,
        })
    }

    fn as_crypto(&self) -> Option<(u64, u32)> {
        (self.kind == Kind::Crypto).then_some((self.a, self.len))
    }

    fn as_control(&self) -> Option<Control> {
        let dir = if self.flag { Dir::Uni } else { Dir::Bi };
        Some(match self.kind {
            Kind::Stream | Kind::Crypto => return None,
            Kind::MaxData => Control::MaxData,
            Kind::MaxStreamData => Control::MaxStreamData(StreamId(self.a)),
            Kind::MaxStreams => Control::MaxStreams(dir),
            Kind::DataBlocked => Control::DataBlocked(self.a),
            Kind::StreamDataBlocked => Control::StreamDataBlocked(StreamId(self.a), self.b),
            Kind::StreamsBlocked => Control::StreamsBlocked(dir, self.a),
            Kind::ResetStream => Control::ResetStream(StreamId(self.a)),
            Kind::StopSending => Control::StopSending(StreamId(self.a)),
            Kind::NewConnectionId => Control::NewConnectionId(self.a),
            Kind::RetireConnectionId => Control::RetireConnectionId(self.a),
            Kind::AckFrequency => Control::AckFrequency(self.a),
            Kind::NewToken => Control::NewToken(self.a),
        })
    }
}

/// No ACK frame in the packet (packet numbers are below 2^62, RFC 9000 §12.3).
const NO_ACK: u64 = u64::MAX;

/// The retransmittable contents of one packet. Small and inline for the common
/// packet (an ACK and one or two STREAM frames): no allocation per packet.
#[derive(Clone, Debug)]
pub(crate) struct SentFrames {
    /// The packet-number space the packet was sent in.
    pub(crate) space: SpaceId,
    /// Largest packet number in the ACK frame we sent, for ack-of-ack; `NO_ACK`
    /// if none (an `Option<u64>` is 16 bytes).
    ack_largest: u64,
    /// STREAM, CRYPTO and control frames, in the order written.
    items: SmallVec<[Item; 2]>,
    /// `items` holds a CRYPTO frame / a control frame: in bulk neither, and
    /// the scans for them are skipped on every packet acknowledged.
    has_crypto: bool,
    has_control: bool,
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
            ack_largest: NO_ACK,
            items: SmallVec::new(),
            has_crypto: false,
            has_control: false,
            handshake_done: false,
            mtu_probe: false,
            datagrams: 0,
        }
    }

    /// Largest packet number in the ACK frame the packet carried.
    pub(crate) fn ack_largest(&self) -> Option<u64> {
        (self.ack_largest != NO_ACK).then_some(self.ack_largest)
    }

    pub(crate) fn set_ack_largest(&mut self, largest: Option<u64>) {
        self.ack_largest = largest.unwrap_or(NO_ACK);
    }

    /// The CRYPTO range (offset, len) the packet carried (one frame at most).
    pub(crate) fn crypto(&self) -> Option<(u64, u32)> {
        if !self.has_crypto {
            return None;
        }
        self.items.iter().find_map(Item::as_crypto)
    }

    pub(crate) fn set_crypto(&mut self, offset: u64, len: u32) {
        debug_assert!(!self.has_crypto, "one CRYPTO frame a packet");
        self.has_crypto = true;
        self.items.push(Item {
            kind: Kind::Crypto,
            flag: false,
            len,
            a: offset,
            b: 0,
        });
    }

    pub(crate) fn push_stream(&mut self, chunk: StreamChunk) {
        self.items.push(Item::stream(chunk));
    }

    pub(crate) fn push_control(&mut self, ctl: Control) {
        self.has_control = true;
        self.items.push(Item::control(ctl));
    }

    /// STREAM frames, in the order written.
    pub(crate) fn streams(&self) -> impl Iterator<Item = StreamChunk> + '_ {
        self.items.iter().filter_map(Item::as_stream)
    }

    /// Control frames, in the order written.
    pub(crate) fn controls(&self) -> impl Iterator<Item = Control> + '_ {
        let items: &[Item] = if self.has_control { &self.items } else { &[] };
        items.iter().filter_map(Item::as_control)
    }

    /// Any STREAM or control frame (the stream layer's business): anything
    /// but the one CRYPTO frame a packet may carry.
    pub(crate) fn has_stream_or_control(&self) -> bool {
        self.items.len() > usize::from(self.has_crypto)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_give_back_what_was_recorded() {
        let id = StreamId((1 << 62) - 1);
        let big = (1 << 62) - 1;
        let controls = [
            Control::MaxData,
            Control::MaxStreamData(id),
            Control::MaxStreams(Dir::Bi),
            Control::MaxStreams(Dir::Uni),
            Control::DataBlocked(big),
            Control::StreamDataBlocked(id, big),
            Control::StreamsBlocked(Dir::Uni, 7),
            Control::StreamsBlocked(Dir::Bi, big),
            Control::ResetStream(id),
            Control::StopSending(StreamId(4)),
            Control::NewConnectionId(3),
            Control::RetireConnectionId(big),
            Control::AckFrequency(9),
        ];
        let chunks = [
            StreamChunk {
                id,
                offset: big,
                len: u32::MAX,
                fin: true,
            },
            StreamChunk {
                id: StreamId(0),
                offset: 0,
                len: 0,
                fin: false,
            },
        ];
        let mut only_streams = SentFrames::new(SpaceId::Data);
        only_streams.push_stream(chunks[0]);
        only_streams.push_stream(chunks[1]);
        assert!(only_streams.has_stream_or_control());
        assert_eq!(only_streams.streams().collect::<Vec<_>>(), chunks);
        assert_eq!(
            (only_streams.controls().count(), only_streams.crypto()),
            (0, None)
        );
        let mut only_control = SentFrames::new(SpaceId::Data);
        only_control.push_control(Control::MaxData);
        assert!(only_control.has_stream_or_control());
        assert_eq!(
            only_control.controls().collect::<Vec<_>>(),
            [Control::MaxData]
        );

        let mut s = SentFrames::new(SpaceId::Data);
        assert_eq!((s.ack_largest(), s.crypto()), (None, None));
        assert!(!s.has_stream_or_control());
        s.set_crypto(big, 1200);
        assert!(!s.has_stream_or_control());
        s.push_stream(chunks[0]);
        for c in controls {
            s.push_control(c);
        }
        s.push_stream(chunks[1]);
        s.set_ack_largest(Some(big));
        assert!(s.has_stream_or_control());
        assert_eq!(s.ack_largest(), Some(big));
        assert_eq!(s.crypto(), Some((big, 1200)));
        assert_eq!(s.streams().collect::<Vec<_>>(), chunks);
        assert_eq!(s.controls().collect::<Vec<_>>(), controls);
        s.set_ack_largest(Some(0));
        assert_eq!(s.ack_largest(), Some(0));
        s.set_ack_largest(None);
        assert_eq!(s.ack_largest(), None);
    }

    #[test]
    fn record_sizes() {
        use crate::recovery::SentPacket;
        use std::mem::size_of;
        assert_eq!(size_of::<Item>(), 24);
        assert_eq!(size_of::<SentFrames>(), 72);
        // At most 128 bytes a record is moved with inline loads and stores,
        // not a `memcpy` call (issue #30: four moves per packet sent, and
        // on an ACK two of the record with its packet number).
        assert!(size_of::<SentPacket<SentFrames>>() <= 120);
        assert!(size_of::<(u64, SentPacket<SentFrames>)>() <= 128);
    }
}
