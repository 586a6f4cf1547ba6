//! Packet headers, packet numbers, protection, and the special packets
//! (Version Negotiation, Retry, Stateless Reset).
//!
//! Receive path: [`PartialDecode::new`] reads the invariant and long-header fields
//! of the first packet in a datagram (a datagram may hold several, coalesced:
//! `len` says where the next one starts); the endpoint routes on `dst_cid`; the
//! connection picks keys, calls [`remove_header_protection`], then
//! [`decrypt_payload`].
//!
//! Send path: [`PacketBuilder::start`] writes a header into the caller's buffer,
//! the connection appends frames, [`PacketBuilder::finish`] pads, writes the
//! length, encrypts in place and applies header protection. `finish` is split into
//! [`PacketBuilder::finish_plaintext`] + [`SealJob::seal`] so a batch of packets
//! can be built first and encrypted together just before the send system call.

mod build;
pub mod craft;
mod header;
pub mod number;
mod protect;
mod special;
#[cfg(test)]
mod vectors;
mod version;

use std::ops::Range;

use crate::cid::ConnectionId;
use crate::types::PacketKind;

pub(crate) use header::long_header_cids;
pub use number::{decode_packet_number, packet_number_len};
pub use protect::{decrypt_payload, remove_header_protection};
pub use special::{
    retry_integrity_ok, version_negotiation_versions, write_retry, write_stateless_reset,
    write_version_negotiation,
};

pub use version::{VERSION_1, VERSION_2, is_known as is_known_version, rustls_version};

/// The QUIC bit (RFC 9000 calls it the Fixed Bit): 1 in every packet but
/// Version Negotiation, unless greased (RFC 9287).
pub(crate) const QUIC_BIT: u8 = header::FIXED_BIT;

/// Smallest datagram that may carry a client Initial (RFC 9000 §14.1).
pub const MIN_INITIAL_SIZE: usize = 1200;

/// The type of a packet as read from its first byte and version.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderType {
    /// A packet that carries frames.
    Frames(PacketKind),
    /// Retry (long header type 3).
    Retry,
    /// Version Negotiation (long header, version 0).
    VersionNegotiation,
}

/// The header fields readable before header protection is removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartialDecode {
    /// What kind of packet this is.
    pub ty: HeaderType,
    /// The first byte, still protected.
    pub first: u8,
    /// Version field (0 for short headers; 0 for Version Negotiation).
    pub version: u32,
    /// Destination Connection ID.
    pub dst_cid: ConnectionId,
    /// Source Connection ID (empty for short headers).
    pub src_cid: ConnectionId,
    /// Position of the token within the packet: Initial's Token field; for Retry,
    /// the Retry Token. Empty range otherwise.
    pub token: Range<usize>,
    /// Offset of the (protected) Packet Number field. For Retry and Version
    /// Negotiation: offset just after the Source Connection ID.
    pub pn_offset: usize,
    /// Length of this packet within the datagram: for long headers up to the end of
    /// the Length field's extent, for short headers (and Retry/VN) the whole rest.
    pub len: usize,
}

/// Why a packet could not be parsed. Such packets are dropped silently, except
/// `UnsupportedVersion`, which a server answers with Version Negotiation.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PacketDecodeError {
    /// A long header with a version we do not speak. Its connection IDs may be
    /// longer than version 1 allows (up to 255 bytes, RFC 8999 §5.1), so they
    /// are given as positions in the datagram.
    #[error("unsupported version {version:#x}")]
    UnsupportedVersion {
        /// The version.
        version: u32,
        /// Where its Destination Connection ID lies (the server's view: echo
        /// as Source).
        dst_cid: Range<usize>,
        /// Where its Source Connection ID lies.
        src_cid: Range<usize>,
    },
    /// Malformed: truncated, a bad length, fixed bit clear, CID too long, ...
    #[error("invalid packet: {0}")]
    Invalid(&'static str),
}

/// The header after header protection has been removed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unprotected {
    /// The full packet number.
    pub pn: u64,
    /// Header length including the packet number: the AEAD's associated data.
    pub header_len: usize,
    /// Key Phase bit (short headers; false otherwise).
    pub key_phase: bool,
    /// Spin bit (short headers; false otherwise).
    pub spin: bool,
    /// The reserved bits were zero. If not, and the packet decrypts, the
    /// connection must close with PROTOCOL_VIOLATION (RFC 9000 §17.2, §17.3.1).
    pub reserved_bits_zero: bool,
}

/// What a packet's header needs when it is written.
#[derive(Clone, Copy, Debug)]
pub struct HeaderParams<'a> {
    /// Initial, 0-RTT, Handshake or 1-RTT.
    pub kind: PacketKind,
    /// Version for long headers.
    pub version: u32,
    /// Destination Connection ID.
    pub dst_cid: &'a ConnectionId,
    /// Source Connection ID (long headers only).
    pub src_cid: &'a ConnectionId,
    /// Token (Initial only; empty otherwise).
    pub token: &'a [u8],
    /// Packet number.
    pub pn: u64,
    /// Largest packet number the peer has acknowledged in this space, which sets the
    /// packet number length (RFC 9000 §17.1).
    pub largest_acked: Option<u64>,
    /// Key Phase bit (1-RTT only).
    pub key_phase: bool,
    /// Spin bit (1-RTT only).
    pub spin: bool,
}

/// A packet being written into a caller-owned buffer.
#[derive(Clone, Debug)]
pub struct PacketBuilder {
    /// Offset of the packet's first byte in the buffer.
    pub start: usize,
    /// Offset of the Packet Number field.
    pub pn_offset: usize,
    /// Length of the Packet Number field.
    pub pn_len: usize,
    /// Offset just after the header (where frames begin).
    pub header_end: usize,
    /// Offset of the two-byte Length field (long headers).
    pub len_offset: Option<usize>,
    /// The buffer may grow to this offset before the AEAD tag.
    pub max_end: usize,
    /// Packet number.
    pub pn: u64,
    /// Packet kind.
    pub kind: PacketKind,
}

/// Everything needed to encrypt one finished packet later.
#[derive(Clone, Copy, Debug)]
pub struct SealJob {
    /// Offset of the packet's first byte.
    pub start: usize,
    /// Offset of the Packet Number field.
    pub pn_offset: usize,
    /// Header length (start .. start + header_len is the associated data).
    pub header_len: usize,
    /// End of the plaintext; the tag is written here.
    pub end: usize,
    /// Packet number.
    pub pn: u64,
}
