//! Parsing the unprotected part of a packet header (RFC 9000 §17, RFC 8999).

use std::ops::Range;

#[cfg(test)]
use super::VERSION_1;
use super::version::{is_known, kind_of};
use super::{HeaderType, PacketDecodeError, PartialDecode};
use crate::cid::{ConnectionId, MAX_CID_LEN};
use crate::coding::Reader;
use crate::types::PacketKind;

use PacketDecodeError::Invalid;

/// Header Form bit: 1 for long headers.
pub(super) const LONG_FORM: u8 = 0x80;
/// Fixed Bit: 1 in every QUIC v1 packet except Version Negotiation.
pub(super) const FIXED_BIT: u8 = 0x40;
/// Long Packet Type values, already shifted into place (RFC 9000 Table 5).
pub(super) const TYPE_INITIAL: u8 = 0x00;
pub(super) const TYPE_ZERO_RTT: u8 = 0x10;
pub(super) const TYPE_HANDSHAKE: u8 = 0x20;
pub(super) const TYPE_RETRY: u8 = 0x30;
/// Length of the Retry Integrity Tag (RFC 9001 §5.8).
pub(super) const RETRY_TAG_LEN: usize = 16;

const TRUNCATED: PacketDecodeError = Invalid("truncated header");

impl PartialDecode {
    /// Parse the first packet of `datagram`. `local_cid_len` is the length of the
    /// connection IDs this endpoint issues (short headers carry no length).
    /// A packet with the QUIC (fixed) bit cleared is invalid.
    pub fn new(datagram: &[u8], local_cid_len: usize) -> Result<Self, PacketDecodeError> {
        Self::with_quic_bit(datagram, local_cid_len, false)
    }

    /// [`new`](Self::new), accepting packets with the QUIC bit cleared when
    /// `any_quic_bit`: an endpoint that announces grease_quic_bit must
    /// (RFC 9287 §3).
    pub fn with_quic_bit(
        datagram: &[u8],
        local_cid_len: usize,
        any_quic_bit: bool,
    ) -> Result<Self, PacketDecodeError> {
        let mut r = Reader::new(datagram);
        let first = r.u8().map_err(|_| TRUNCATED)?;
        // Checked as if set: the rest of the parse is the same.
        let fixed = first | if any_quic_bit { FIXED_BIT } else { 0 };
        if first & LONG_FORM == 0 {
            return short(datagram, first, fixed, local_cid_len);
        }

        //= https://www.rfc-editor.org/rfc/rfc8999#section-5.1
        //# Long Header Packet {
        //#   Header Form (1) = 1,
        //#   Version-Specific Bits (7),
        //#   Version (32),
        //#   Destination Connection ID Length (8),
        //#   Destination Connection ID (0..2040),
        //#   Source Connection ID Length (8),
        //#   Source Connection ID (0..2040),
        //#   Version-Specific Data (..),
        //# }
        let version = r.u32().map_err(|_| TRUNCATED)?;
        let dst = cid_field(&mut r).ok_or(TRUNCATED)?;
        let src = cid_field(&mut r).ok_or(TRUNCATED)?;
        if version != 0 && !is_known(version) {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2
            //# In order to properly form a Version Negotiation packet, servers
            //# SHOULD be able to read longer connection IDs from other QUIC
            //# versions.
            // So the IDs, up to 255 bytes each, are handed back as positions in
            // the datagram rather than as `ConnectionId`s (20 bytes at most).
            return Err(PacketDecodeError::UnsupportedVersion {
                version,
                dst_cid: dst,
                src_cid: src,
            });
        }
        let (Some(dst_cid), Some(src_cid)) = (
            ConnectionId::new(&datagram[dst]),
            ConnectionId::new(&datagram[src]),
        ) else {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2
            //# In QUIC version 1, this value MUST NOT exceed
            //# 20 bytes.  Endpoints that receive a version 1 long header with a
            //# value larger than 20 MUST drop the packet.
            return Err(Invalid("connection ID longer than 20 bytes"));
        };
        debug_assert!(dst_cid.len() <= MAX_CID_LEN && src_cid.len() <= MAX_CID_LEN);

        //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2.1
        //# Upon receipt by a client, it will be identified as a Version
        //# Negotiation packet based on the Version field having a value of 0.
        if version == 0 {
            return Ok(PartialDecode {
                ty: HeaderType::VersionNegotiation,
                first,
                version,
                dst_cid,
                src_cid,
                token: 0..0,
                pn_offset: r.position(),
                len: datagram.len(),
            });
        }

        //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2
        //# Packets containing a zero
        //# value for this bit are not valid packets in this version and MUST
        //# be discarded.
        if fixed & FIXED_BIT == 0 {
            return Err(Invalid("fixed bit is zero"));
        }

        let mut token = 0..0;
        //= https://www.rfc-editor.org/rfc/rfc9369#section-3.2
        //# All version 2 long header packet types are different.
        let kind = match kind_of(version, first) {
            Some(PacketKind::Initial) => {
                //# Token Length (i),
                //# Token (..),
                let t = r.varint_bytes().map_err(|_| TRUNCATED)?;
                token = r.position() - t.len()..r.position();
                PacketKind::Initial
            }
            Some(kind) => kind,
            None => return retry(datagram, first, version, dst_cid, src_cid, r.position()),
        };

        //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2
        //# Length:  This is the length of the remainder of the packet (that is,
        //#    the Packet Number and Payload fields) in bytes, encoded as a
        //#    variable-length integer (Section 16).
        let length = r.varint().map_err(|_| TRUNCATED)?;
        let pn_offset = r.position();
        let len = usize::try_from(length)
            .ok()
            .and_then(|l| l.checked_add(pn_offset))
            .filter(|&end| end <= datagram.len())
            .ok_or(Invalid("length beyond the datagram"))?;
        Ok(PartialDecode {
            ty: HeaderType::Frames(kind),
            first,
            version,
            dst_cid,
            src_cid,
            token,
            pn_offset,
            len,
        })
    }

    /// True for long-header packets.
    pub fn is_long(&self) -> bool {
        self.first & LONG_FORM != 0
    }
}

/// A 1-RTT packet: the Destination Connection ID has the length we chose.
//= https://www.rfc-editor.org/rfc/rfc9000#section-17.3.1
//# 1-RTT Packet {
//#   Header Form (1) = 0,
//#   Fixed Bit (1) = 1,
//#   Spin Bit (1),
//#   Reserved Bits (2),
//#   Key Phase (1),
//#   Packet Number Length (2),
//#   Destination Connection ID (0..160),
//#   Packet Number (8..32),
//#   Packet Payload (8..),
//# }
fn short(
    datagram: &[u8],
    first: u8,
    fixed: u8,
    local_cid_len: usize,
) -> Result<PartialDecode, PacketDecodeError> {
    if fixed & FIXED_BIT == 0 {
        return Err(Invalid("fixed bit is zero"));
    }
    let dst = datagram.get(1..1 + local_cid_len).ok_or(TRUNCATED)?;
    let dst_cid = ConnectionId::new(dst).ok_or(Invalid("local CID length above 20"))?;
    Ok(PartialDecode {
        ty: HeaderType::Frames(PacketKind::OneRtt),
        first,
        version: 0,
        dst_cid,
        src_cid: ConnectionId::EMPTY,
        token: 0..0,
        pn_offset: 1 + local_cid_len,
        len: datagram.len(),
    })
}

/// A Retry packet: the token runs up to the 16-byte integrity tag that ends the
/// datagram.
//= https://www.rfc-editor.org/rfc/rfc9000#section-17.2.5
//# Retry Token (..),
//# Retry Integrity Tag (128),
fn retry(
    datagram: &[u8],
    first: u8,
    version: u32,
    dst_cid: ConnectionId,
    src_cid: ConnectionId,
    token_start: usize,
) -> Result<PartialDecode, PacketDecodeError> {
    let token_end = datagram
        .len()
        .checked_sub(RETRY_TAG_LEN)
        .filter(|&end| end >= token_start)
        .ok_or(TRUNCATED)?;
    //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2.5.2
    //# A client
    //# MUST discard a Retry packet with a zero-length Retry Token field.
    if token_end == token_start {
        return Err(Invalid("empty Retry token"));
    }
    Ok(PartialDecode {
        ty: HeaderType::Retry,
        first,
        version,
        dst_cid,
        src_cid,
        token: token_start..token_end,
        pn_offset: token_start,
        len: datagram.len(),
    })
}

/// A connection ID field of a long header: an 8-bit length, then the bytes,
/// whose position in the datagram is returned.
fn cid_field(r: &mut Reader<'_>) -> Option<Range<usize>> {
    let len = usize::from(r.u8().ok()?);
    let start = r.position();
    r.bytes(len).ok()?;
    Some(start..start + len)
}

/// The (destination, source) connection IDs of a long-header packet of a
/// version we speak, read from its start alone (RFC 8999 §5.1): what an ICMP
/// message quotes of a datagram is often cut after a few hundred bytes.
pub(crate) fn long_header_cids(datagram: &[u8]) -> Option<(ConnectionId, ConnectionId)> {
    let mut r = Reader::new(datagram);
    if r.u8().ok()? & LONG_FORM == 0 || !is_known(r.u32().ok()?) {
        return None;
    }
    let dst = cid_field(&mut r)?;
    let src = cid_field(&mut r)?;
    Some((
        ConnectionId::new(&datagram[dst])?,
        ConnectionId::new(&datagram[src])?,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_ids_of_a_cut_long_header() {
        let pkt = hex("c3 00000001 08 8394c8f03e515708 04 0a0b0c0d 00 44 d0");
        let want = (cid("8394c8f03e515708"), cid("0a0b0c0d"));
        // The length field says more than follows: the IDs are still read.
        assert_eq!(long_header_cids(&pkt), Some(want));
        assert_eq!(long_header_cids(&pkt[..19]), Some(want));
        assert_eq!(long_header_cids(&pkt[..18]), None, "the source ID is cut");
        let mut short = pkt.clone();
        short[0] = 0x43;
        assert_eq!(long_header_cids(&short), None);
        let mut unknown = pkt.clone();
        unknown[1..5].copy_from_slice(&[0x1a, 0x2a, 0x3a, 0x4a]);
        assert_eq!(long_header_cids(&unknown), None);
        assert_eq!(long_header_cids(&[]), None);
    }

    fn hex(s: &str) -> Vec<u8> {
        hex::decode(s.split_whitespace().collect::<String>()).unwrap()
    }

    fn cid(s: &str) -> ConnectionId {
        ConnectionId::new(&hex(s)).unwrap()
    }

    #[test]
    fn initial_with_token() {
        // c3 | v1 | dcid 8394c8f03e515708 | scid (empty) | token "ab" | length 6 | pn+payload
        let pkt = hex("c3 00000001 08 8394c8f03e515708 00 02 abcd 06 000000020102 ff ff");
        let pd = PartialDecode::new(&pkt, 8).unwrap();
        assert_eq!(pd.ty, HeaderType::Frames(PacketKind::Initial));
        assert_eq!(pd.version, VERSION_1);
        assert_eq!(pd.dst_cid, cid("8394c8f03e515708"));
        assert!(pd.src_cid.is_empty());
        assert_eq!(&pkt[pd.token.clone()], &[0xab, 0xcd]);
        assert_eq!(pd.pn_offset, 19);
        // the two trailing bytes are a second, coalesced packet
        assert_eq!(pd.len, 25);
        assert!(pd.is_long());
    }

    #[test]
    fn zero_rtt_and_handshake() {
        for (first, kind) in [(0xd0, PacketKind::ZeroRtt), (0xe1, PacketKind::Handshake)] {
            let mut pkt = vec![first];
            pkt.extend_from_slice(&hex("00000001 01 aa 02 bbcc 4003 010203"));
            let pd = PartialDecode::new(&pkt, 0).unwrap();
            assert_eq!(pd.ty, HeaderType::Frames(kind));
            assert_eq!(pd.src_cid, cid("bbcc"));
            assert_eq!(pd.token, 0..0);
            assert_eq!(pd.pn_offset, 12);
            assert_eq!(pd.len, 15);
        }
    }

    #[test]
    fn short_header() {
        let pkt = hex("41 0102030405060708 aabbccdd");
        let pd = PartialDecode::new(&pkt, 8).unwrap();
        assert_eq!(pd.ty, HeaderType::Frames(PacketKind::OneRtt));
        assert_eq!(pd.dst_cid, cid("0102030405060708"));
        assert_eq!(pd.pn_offset, 9);
        assert_eq!(pd.len, pkt.len());
        assert!(!pd.is_long());
        assert_eq!(
            PartialDecode::new(&pkt[..5], 8),
            Err(TRUNCATED),
            "CID cut short"
        );
        assert_eq!(
            PartialDecode::new(&[0x40; 40], 21),
            Err(Invalid("local CID length above 20"))
        );
    }

    #[test]
    fn retry_and_version_negotiation() {
        // RFC 9001 A.4
        let pkt = hex("ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba");
        let pd = PartialDecode::new(&pkt, 0).unwrap();
        assert_eq!(pd.ty, HeaderType::Retry);
        assert_eq!(&pkt[pd.token.clone()], b"token");
        assert_eq!(pd.src_cid, cid("f067a5502a4262b5"));
        assert_eq!(pd.len, pkt.len());
        // no room for the tag
        assert!(PartialDecode::new(&pkt[..pkt.len() - 6], 0).is_err());

        let vn = hex("80 00000000 01 aa 02 bbcc 00000001 ff00001d");
        let pd = PartialDecode::new(&vn, 0).unwrap();
        assert_eq!(pd.ty, HeaderType::VersionNegotiation);
        assert_eq!((pd.dst_cid, pd.src_cid), (cid("aa"), cid("bbcc")));
        assert_eq!(pd.pn_offset, 10);
    }

    #[test]
    fn unsupported_version() {
        let pkt = hex("c0 1a2a3a4a 02 0102 01 03 00 00");
        assert_eq!(
            PartialDecode::new(&pkt, 0),
            Err(PacketDecodeError::UnsupportedVersion {
                version: 0x1a2a3a4a,
                dst_cid: 6..8,
                src_cid: 9..10,
            })
        );
        // too short to read both CIDs: just invalid
        assert_eq!(PartialDecode::new(&pkt[..8], 0), Err(TRUNCATED));
    }

    #[test]
    fn unsupported_version_with_long_ids() {
        // RFC 8999 §5.1: other versions may use IDs of up to 255 bytes.
        let mut pkt = hex("c0 1a2a3a4a ff");
        pkt.extend_from_slice(&[0xd1; 255]);
        pkt.push(100);
        pkt.extend_from_slice(&[0x5c; 100]);
        pkt.resize(1200, 0);
        let Err(PacketDecodeError::UnsupportedVersion {
            version: 0x1a2a3a4a,
            dst_cid,
            src_cid,
        }) = PartialDecode::new(&pkt, 8)
        else {
            panic!("not an unsupported version");
        };
        assert_eq!(&pkt[dst_cid], &[0xd1; 255][..]);
        assert_eq!(&pkt[src_cid], &[0x5c; 100][..]);
        // Cut inside the source ID: invalid, not an unsupported version.
        assert_eq!(PartialDecode::new(&pkt[..300], 8), Err(TRUNCATED));
        // The same IDs under version 1 or in a Version Negotiation are dropped.
        for version in [[0, 0, 0, 1], [0, 0, 0, 0]] {
            pkt[1..5].copy_from_slice(&version);
            assert_eq!(
                PartialDecode::new(&pkt, 8),
                Err(Invalid("connection ID longer than 20 bytes"))
            );
        }
    }

    #[test]
    fn invalid_headers() {
        // fixed bit clear, long and short
        assert!(PartialDecode::new(&hex("83 00000001 00 00 00 01 00"), 0).is_err());
        assert!(PartialDecode::new(&hex("01 00"), 0).is_err());
        // ... valid for an endpoint that announced grease_quic_bit (RFC 9287)
        let long = PartialDecode::with_quic_bit(&hex("83 00000001 00 00 00 01 00"), 0, true);
        assert_eq!(
            long.map(|pd| pd.ty),
            Ok(HeaderType::Frames(PacketKind::Initial))
        );
        let short = PartialDecode::with_quic_bit(&hex("01 00"), 0, true);
        assert_eq!(
            short.map(|pd| pd.ty),
            Ok(HeaderType::Frames(PacketKind::OneRtt))
        );
        // 21-byte DCID in a v1 long header
        let mut pkt = hex("c0 00000001 15");
        pkt.extend_from_slice(&[0; 21]);
        pkt.extend_from_slice(&hex("00 00 01 00"));
        assert_eq!(
            PartialDecode::new(&pkt, 0),
            Err(Invalid("connection ID longer than 20 bytes"))
        );
        // Length beyond the datagram
        assert_eq!(
            PartialDecode::new(&hex("e0 00000001 00 00 05 0000"), 0),
            Err(Invalid("length beyond the datagram"))
        );
        // enormous Length and token length
        assert!(PartialDecode::new(&hex("e0 00000001 00 00 ffffffffffffffff 00"), 0).is_err());
        assert!(PartialDecode::new(&hex("c0 00000001 00 00 ffffffffffffffff 00"), 0).is_err());
        assert_eq!(PartialDecode::new(&[], 0), Err(TRUNCATED));
    }

    fn valid_initial() -> Vec<u8> {
        let mut pkt = hex("c3 00000001 08 8394c8f03e515708 05 0102030405 03 aabbcc 4020");
        pkt.extend_from_slice(&[0x11; 0x20]);
        pkt
    }

    proptest! {
        #[test]
        fn never_panics_on_random_bytes(
            bytes in proptest::collection::vec(any::<u8>(), 0..64),
            cid_len in 0usize..24,
        ) {
            let _ = PartialDecode::new(&bytes, cid_len);
            let _ = long_header_cids(&bytes);
        }

        #[test]
        fn never_panics_on_mutated_packets(
            edits in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
            cut in any::<usize>(),
        ) {
            let mut pkt = valid_initial();
            for (at, byte) in edits {
                let at = at % pkt.len();
                pkt[at] = byte;
            }
            let cut = cut % (pkt.len() + 1);
            if let Ok(pd) = PartialDecode::new(&pkt[..cut], 8) {
                prop_assert!(pd.len <= cut);
                prop_assert!(pd.pn_offset <= pd.len);
                prop_assert!(pd.token.end <= pd.len);
            }
        }
    }
}
