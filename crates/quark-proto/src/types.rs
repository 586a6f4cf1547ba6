//! Small shared vocabulary: sides, directions, stream IDs, packet-number spaces, ECN.

use std::fmt;

/// Which end of a connection we are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// Initiated the connection.
    Client,
    /// Accepted the connection.
    Server,
}

impl Side {
    /// True for the client.
    pub fn is_client(self) -> bool {
        self == Side::Client
    }
    /// True for the server.
    pub fn is_server(self) -> bool {
        self == Side::Server
    }
    /// The other side.
    pub fn peer(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
}

/// Whether a stream carries data both ways or one way.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// Bidirectional.
    Bi,
    /// Unidirectional (initiator sends only).
    Uni,
}

/// A stream ID (RFC 9000 §2.1): the two low bits give initiator and direction.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct StreamId(pub u64);

impl StreamId {
    /// The `index`-th stream of a given initiator and direction.
    pub fn new(initiator: Side, dir: Dir, index: u64) -> Self {
        let mut id = index << 2;
        if initiator == Side::Server {
            id |= 0x1;
        }
        if dir == Dir::Uni {
            id |= 0x2;
        }
        StreamId(id)
    }

    /// Which side opened the stream.
    pub fn initiator(self) -> Side {
        if self.0 & 0x1 == 0 {
            Side::Client
        } else {
            Side::Server
        }
    }

    /// Bidirectional or unidirectional.
    pub fn dir(self) -> Dir {
        if self.0 & 0x2 == 0 { Dir::Bi } else { Dir::Uni }
    }

    /// Position among streams of the same initiator and direction.
    pub fn index(self) -> u64 {
        self.0 >> 2
    }
}

impl fmt::Debug for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let who = match self.initiator() {
            Side::Client => "c",
            Side::Server => "s",
        };
        let dir = match self.dir() {
            Dir::Bi => "bi",
            Dir::Uni => "uni",
        };
        write!(f, "{}({who}{dir}#{})", self.0, self.index())
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

/// A packet-number space (RFC 9000 §12.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum SpaceId {
    /// Initial packets.
    Initial = 0,
    /// Handshake packets.
    Handshake = 1,
    /// 0-RTT and 1-RTT packets.
    Data = 2,
}

impl SpaceId {
    /// All three, in handshake order.
    pub const ALL: [SpaceId; 3] = [SpaceId::Initial, SpaceId::Handshake, SpaceId::Data];

    /// Index for per-space arrays.
    pub fn index(self) -> usize {
        self as usize
    }
}

/// The ECN codepoint of an IP packet (RFC 3168).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EcnCodepoint {
    /// ECT(0)
    Ect0 = 0b10,
    /// ECT(1)
    Ect1 = 0b01,
    /// Congestion experienced.
    Ce = 0b11,
}

impl EcnCodepoint {
    /// From the two ECN bits of the IP TOS / traffic class byte; `None` for Not-ECT.
    pub fn from_bits(bits: u8) -> Option<Self> {
        match bits & 0b11 {
            0b10 => Some(EcnCodepoint::Ect0),
            0b01 => Some(EcnCodepoint::Ect1),
            0b11 => Some(EcnCodepoint::Ce),
            _ => None,
        }
    }

    /// The two ECN bits.
    pub fn bits(self) -> u8 {
        self as u8
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_id_bits() {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-2.1
        //# 0x00 Client-Initiated, Bidirectional; 0x01 Server-Initiated, Bidirectional;
        //# 0x02 Client-Initiated, Unidirectional; 0x03 Server-Initiated, Unidirectional
        assert_eq!(StreamId::new(Side::Client, Dir::Bi, 0).0, 0);
        assert_eq!(StreamId::new(Side::Server, Dir::Bi, 0).0, 1);
        assert_eq!(StreamId::new(Side::Client, Dir::Uni, 0).0, 2);
        assert_eq!(StreamId::new(Side::Server, Dir::Uni, 5).0, 23);
        let id = StreamId(23);
        assert_eq!(
            (id.initiator(), id.dir(), id.index()),
            (Side::Server, Dir::Uni, 5)
        );
    }

    #[test]
    fn ecn_bits() {
        for cp in [EcnCodepoint::Ect0, EcnCodepoint::Ect1, EcnCodepoint::Ce] {
            assert_eq!(EcnCodepoint::from_bits(cp.bits()), Some(cp));
        }
        assert_eq!(EcnCodepoint::from_bits(0), None);
    }
}

/// The kinds of packet that carry frames, each with its own set of permitted frames
/// (RFC 9000 §12.4, Table 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PacketKind {
    /// Initial (long header, type 0).
    Initial,
    /// 0-RTT (long header, type 1).
    ZeroRtt,
    /// Handshake (long header, type 2).
    Handshake,
    /// 1-RTT (short header).
    OneRtt,
}

impl PacketKind {
    /// The packet-number space this kind of packet belongs to.
    pub fn space(self) -> SpaceId {
        match self {
            PacketKind::Initial => SpaceId::Initial,
            PacketKind::Handshake => SpaceId::Handshake,
            PacketKind::ZeroRtt | PacketKind::OneRtt => SpaceId::Data,
        }
    }
}

/// A hasher for small integer keys the local side chooses or bounds (stream IDs,
/// connection handles): one multiply instead of SipHash. Not for keys an attacker
/// picks freely, such as connection IDs.
#[derive(Default)]
pub struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn finish(&self) -> u64 {
        self.0.wrapping_mul(0x9e37_79b9_7f4a_7c15)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 << 8) | u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
    fn write_usize(&mut self, v: usize) {
        self.0 = v as u64;
    }
}

/// A map keyed by stream IDs or connection handles, hashed with [`IdHasher`].
pub type IdMap<K, V> = std::collections::HashMap<K, V, std::hash::BuildHasherDefault<IdHasher>>;
