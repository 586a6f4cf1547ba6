//! Packet headers, packet numbers, protection, and the special packets
//! (Version Negotiation, Retry, Stateless Reset).
//!
//! CONTRACT (filled in by the packet/crypto work): the public items below are fixed;
//! bodies, private helpers and submodules are the implementer's.
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

pub mod number;

use std::ops::Range;

use rustls::quic::{HeaderProtectionKey, PacketKey};

use crate::cid::{ConnectionId, ResetToken};
use crate::types::PacketKind;

pub use number::{decode_packet_number, packet_number_len};

/// QUIC version 1.
pub const VERSION_1: u32 = 0x0000_0001;

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
    /// A long header with a version we do not speak.
    #[error("unsupported version {version:#x}")]
    UnsupportedVersion {
        /// The version.
        version: u32,
        /// Its Destination Connection ID (the server's view: echo as Source).
        dst_cid: ConnectionId,
        /// Its Source Connection ID.
        src_cid: ConnectionId,
    },
    /// Malformed: truncated, a bad length, fixed bit clear, CID too long, ...
    #[error("invalid packet: {0}")]
    Invalid(&'static str),
}

impl PartialDecode {
    /// Parse the first packet of `datagram`. `local_cid_len` is the length of the
    /// connection IDs this endpoint issues (short headers carry no length).
    pub fn new(datagram: &[u8], local_cid_len: usize) -> Result<Self, PacketDecodeError> {
        let _ = (datagram, local_cid_len);
        todo!("packet")
    }

    /// True for long-header packets.
    pub fn is_long(&self) -> bool {
        self.first & 0x80 != 0
    }
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

/// Remove header protection in place. `packet` is exactly this packet
/// (`&mut datagram[..pd.len]`); `largest_pn` is the largest packet number
/// successfully processed in its space, for packet-number decoding.
pub fn remove_header_protection(
    packet: &mut [u8],
    pd: &PartialDecode,
    hp: &dyn HeaderProtectionKey,
    largest_pn: Option<u64>,
) -> Result<Unprotected, PacketDecodeError> {
    let _ = (packet, pd, hp, largest_pn);
    todo!("packet")
}

/// Decrypt the payload of a packet whose header protection has been removed.
/// Returns the range of `packet` holding the plaintext frames.
pub fn decrypt_payload(
    packet: &mut [u8],
    header: &Unprotected,
    key: &dyn PacketKey,
) -> Result<Range<usize>, rustls::Error> {
    let _ = (packet, header, key);
    todo!("packet")
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

impl PacketBuilder {
    /// Append a header to `buf`. The packet, including the `tag_len`-byte AEAD tag,
    /// will be at most `max_size` bytes.
    pub fn start(buf: &mut Vec<u8>, h: &HeaderParams<'_>, max_size: usize, tag_len: usize) -> Self {
        let _ = (buf, h, max_size, tag_len);
        todo!("packet")
    }

    /// Payload bytes that still fit.
    pub fn remaining(&self, buf: &[u8]) -> usize {
        self.max_end.saturating_sub(buf.len())
    }

    /// Pad with PADDING frames so the packet (with tag) is at least `min_size` bytes and
    /// long enough to sample for header protection, write the Length field, and reserve
    /// the tag. Encryption is left to the returned job.
    pub fn finish_plaintext(self, buf: &mut Vec<u8>, min_size: usize, tag_len: usize) -> SealJob {
        let _ = (buf, min_size, tag_len);
        todo!("packet")
    }

    /// `finish_plaintext` and `seal` in one step. Returns the packet's size.
    pub fn finish(
        self,
        buf: &mut Vec<u8>,
        min_size: usize,
        key: &dyn PacketKey,
        hp: &dyn HeaderProtectionKey,
    ) -> usize {
        let job = self.finish_plaintext(buf, min_size, key.tag_len());
        job.seal(buf, key, hp);
        job.end + key.tag_len() - job.start
    }
}

impl SealJob {
    /// Encrypt the payload in place, write the tag and apply header protection.
    pub fn seal(&self, buf: &mut [u8], key: &dyn PacketKey, hp: &dyn HeaderProtectionKey) {
        let _ = (buf, key, hp);
        todo!("packet")
    }
}

/// Append a Version Negotiation packet answering a client that sent
/// `client_dst` / `client_src` (RFC 9000 §17.2.1): the IDs swapped, our versions
/// listed, first byte's unused bits from `random`.
pub fn write_version_negotiation(
    buf: &mut Vec<u8>,
    client_dst: &ConnectionId,
    client_src: &ConnectionId,
    versions: &[u32],
    random: u8,
) {
    let _ = (buf, client_dst, client_src, versions, random);
    todo!("packet")
}

/// The versions listed in a Version Negotiation packet (`pd.ty` must be
/// `VersionNegotiation`). Empty or misaligned lists are invalid.
pub fn version_negotiation_versions(
    packet: &[u8],
    pd: &PartialDecode,
) -> Result<Vec<u32>, PacketDecodeError> {
    let _ = (packet, pd);
    todo!("packet")
}

/// Append a Retry packet (RFC 9000 §17.2.5) with its integrity tag (RFC 9001 §5.8).
/// `dst_cid` is the client's SCID, `src_cid` the server's new CID, `orig_dst_cid`
/// the DCID of the client's first Initial.
pub fn write_retry(
    buf: &mut Vec<u8>,
    dst_cid: &ConnectionId,
    src_cid: &ConnectionId,
    orig_dst_cid: &ConnectionId,
    token: &[u8],
    random: u8,
) {
    let _ = (buf, dst_cid, src_cid, orig_dst_cid, token, random);
    todo!("packet")
}

/// Check a received Retry packet's integrity tag against the DCID the client sent.
pub fn retry_integrity_ok(orig_dst_cid: &ConnectionId, packet: &[u8]) -> bool {
    let _ = (orig_dst_cid, packet);
    todo!("packet")
}

/// Append a Stateless Reset (RFC 9000 §10.3) of `len` bytes (at least 21):
/// a short-header-looking first byte, unpredictable bytes, then the token.
pub fn write_stateless_reset(buf: &mut Vec<u8>, token: &ResetToken, len: usize, random: &[u8]) {
    let _ = (buf, token, len, random);
    todo!("packet")
}
