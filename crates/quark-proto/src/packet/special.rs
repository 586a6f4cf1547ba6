//! Packets without packet protection: Version Negotiation, Retry and Stateless Reset.

#[cfg(test)]
use super::VERSION_1;
use super::header::{FIXED_BIT, LONG_FORM, RETRY_TAG_LEN};
use super::version::type_bits;
use super::{HeaderType, PacketDecodeError, PartialDecode};
use crate::cid::{ConnectionId, RESET_TOKEN_LEN, ResetToken};
use crate::crypto::retry;

/// Smallest Stateless Reset: one byte, at least 38 unpredictable bits, the token.
const MIN_RESET_LEN: usize = 21;

fn put_cid(buf: &mut Vec<u8>, cid: &ConnectionId) {
    put_id(buf, cid);
}

/// A connection ID of any version: its 8-bit length, then its bytes.
fn put_id(buf: &mut Vec<u8>, id: &[u8]) {
    let id = &id[..id.len().min(usize::from(u8::MAX))];
    buf.push(id.len() as u8);
    buf.extend_from_slice(id);
}

/// Append a Version Negotiation packet answering a client that sent
/// `client_dst` / `client_src` (RFC 9000 §17.2.1): the IDs swapped, our versions
/// listed, first byte's unused bits from `random`. The IDs are raw bytes, as
/// the client's version may use IDs longer than version 1's 20 bytes (up to
/// 255, RFC 8999 §5.1; anything longer is cut to 255).
pub fn write_version_negotiation(
    buf: &mut Vec<u8>,
    client_dst: &[u8],
    client_src: &[u8],
    versions: &[u32],
    random: u8,
) {
    //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2.1
    //# The value in the Unused field is set to an arbitrary value by the
    //# server.  Clients MUST ignore the value of this field.  Where QUIC
    //# might be multiplexed with other protocols (see [RFC7983]), servers
    //# SHOULD set the most significant bit of this field (0x40) to 1 so that
    //# Version Negotiation packets appear to have the Fixed Bit field.
    buf.push(LONG_FORM | FIXED_BIT | (random & 0x3f));
    //# The Version field of a Version Negotiation packet MUST be set to
    //# 0x00000000.
    buf.extend_from_slice(&0u32.to_be_bytes());
    //# The server MUST include the value from the Source Connection ID field
    //# of the packet it receives in the Destination Connection ID field.
    //# The value for Source Connection ID MUST be copied from the
    //# Destination Connection ID of the received packet
    put_id(buf, client_src);
    put_id(buf, client_dst);
    for v in versions {
        buf.extend_from_slice(&v.to_be_bytes());
    }
}

/// The versions listed in a Version Negotiation packet (`pd.ty` must be
/// `VersionNegotiation`). Empty or misaligned lists are invalid.
pub fn version_negotiation_versions(
    packet: &[u8],
    pd: &PartialDecode,
) -> Result<Vec<u32>, PacketDecodeError> {
    if pd.ty != HeaderType::VersionNegotiation {
        return Err(PacketDecodeError::Invalid(
            "not a Version Negotiation packet",
        ));
    }
    //# Supported Version (32) ...,
    let list = packet
        .get(pd.pn_offset..)
        .filter(|l| !l.is_empty() && l.len() % 4 == 0)
        .ok_or(PacketDecodeError::Invalid("bad Version Negotiation list"))?;
    Ok(list
        .chunks_exact(4)
        .map(|v| u32::from_be_bytes([v[0], v[1], v[2], v[3]]))
        .collect())
}

/// Append a Retry packet (RFC 9000 §17.2.5) with its integrity tag (RFC 9001 §5.8).
/// `dst_cid` is the client's SCID, `src_cid` the server's new CID, `orig_dst_cid`
/// the DCID of the client's first Initial, `version` the client's.
pub fn write_retry(
    buf: &mut Vec<u8>,
    version: u32,
    dst_cid: &ConnectionId,
    src_cid: &ConnectionId,
    orig_dst_cid: &ConnectionId,
    token: &[u8],
    random: u8,
) {
    let start = buf.len();
    //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2.5
    //# Retry Packet {
    //#   Header Form (1) = 1,
    //#   Fixed Bit (1) = 1,
    //#   Long Packet Type (2) = 3,
    //#   Unused (4),
    //#   Version (32),
    //#   Destination Connection ID Length (8),
    //#   Destination Connection ID (0..160),
    //#   Source Connection ID Length (8),
    //#   Source Connection ID (0..160),
    //#   Retry Token (..),
    //#   Retry Integrity Tag (128),
    //# }
    buf.push(LONG_FORM | FIXED_BIT | type_bits(version, None) | (random & 0x0f));
    buf.extend_from_slice(&version.to_be_bytes());
    put_cid(buf, dst_cid);
    put_cid(buf, src_cid);
    buf.extend_from_slice(token);
    let tag = retry::integrity_tag(version, orig_dst_cid, &buf[start..]);
    buf.extend_from_slice(&tag);
}

/// Check a received Retry packet's integrity tag against the DCID the client sent
/// (the key depends on the packet's version: bytes 1..5).
pub fn retry_integrity_ok(orig_dst_cid: &ConnectionId, packet: &[u8]) -> bool {
    let Some(version) = packet.get(1..5) else {
        return false;
    };
    let version = u32::from_be_bytes([version[0], version[1], version[2], version[3]]);
    let Some(split) = packet.len().checked_sub(RETRY_TAG_LEN) else {
        return false;
    };
    let (without_tag, tag) = packet.split_at(split);
    retry::integrity_tag_ok(version, orig_dst_cid, without_tag, tag)
}

/// Append a Stateless Reset (RFC 9000 §10.3) of `len` bytes (at least 21):
/// a short-header-looking first byte, unpredictable bytes, then the token.
///
/// `random` supplies the unpredictable bytes and must hold at least `len - 16`;
/// a shorter `len` is raised to 21.
pub fn write_stateless_reset(buf: &mut Vec<u8>, token: &ResetToken, len: usize, random: &[u8]) {
    //= https://www.rfc-editor.org/rfc/rfc9000#section-10.3
    //# Stateless Reset {
    //#   Fixed Bits (2) = 1,
    //#   Unpredictable Bits (38..),
    //#   Stateless Reset Token (128),
    //# }
    debug_assert!(len >= MIN_RESET_LEN, "stateless reset of {len} bytes");
    let unpredictable = len.max(MIN_RESET_LEN) - RESET_TOKEN_LEN;
    debug_assert!(random.len() >= unpredictable, "not enough random bytes");
    let start = buf.len();
    buf.extend_from_slice(&random[..unpredictable.min(random.len())]);
    buf.resize(start + unpredictable, 0);
    buf[start] = FIXED_BIT | (buf[start] & 0x3f);
    buf.extend_from_slice(&token.0);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cid(b: &[u8]) -> ConnectionId {
        ConnectionId::new(b).unwrap()
    }

    #[test]
    fn version_negotiation_round_trip() {
        let (dst, src) = (cid(&[1, 2, 3, 4, 5, 6, 7, 8]), cid(&[9, 9]));
        let mut buf = Vec::new();
        write_version_negotiation(&mut buf, &dst, &src, &[VERSION_1, 0x1a2a_3a4a], 0xff);
        assert_eq!(buf[0], 0xff, "0x80 | 0x40 | random bits");
        let pd = PartialDecode::new(&buf, 0).unwrap();
        assert_eq!(pd.ty, HeaderType::VersionNegotiation);
        // the client sees its own IDs swapped back
        assert_eq!((pd.dst_cid, pd.src_cid), (src, dst));
        assert_eq!(
            version_negotiation_versions(&buf, &pd).unwrap(),
            vec![VERSION_1, 0x1a2a_3a4a]
        );
        // a misaligned or empty list is invalid
        assert!(version_negotiation_versions(&buf[..buf.len() - 1], &pd).is_err());
        let mut empty = Vec::new();
        write_version_negotiation(&mut empty, &dst, &src, &[], 0);
        let pd = PartialDecode::new(&empty, 0).unwrap();
        assert!(version_negotiation_versions(&empty, &pd).is_err());
    }

    #[test]
    fn version_negotiation_echoes_long_ids() {
        let (dst, src) = ([0xd1; 255], [0x5c; 100]);
        let mut buf = Vec::new();
        write_version_negotiation(&mut buf, &dst, &src, &[VERSION_1], 0);
        // 1 + 4, then the client's source ID as destination, and vice versa.
        assert_eq!(buf[5], 100);
        assert_eq!(&buf[6..106], &src[..]);
        assert_eq!(buf[106], 255);
        assert_eq!(&buf[107..362], &dst[..]);
        assert_eq!(&buf[362..], &VERSION_1.to_be_bytes());
        // Longer than a length byte can say: cut, never a wrong length.
        let mut long = Vec::new();
        write_version_negotiation(&mut long, &[1; 300], &[], &[VERSION_1], 0);
        assert_eq!((long[5], long[6]), (0, 255));
        assert_eq!(long.len(), 1 + 4 + 1 + 1 + 255 + 4);
    }

    #[test]
    fn stateless_reset_shape() {
        let token = ResetToken([0xab; 16]);
        let random = [0xffu8; 64];
        let mut buf = vec![0xee];
        write_stateless_reset(&mut buf, &token, 30, &random);
        let reset = &buf[1..];
        assert_eq!(reset.len(), 30);
        assert_eq!(reset[0] & 0xc0, 0x40, "first byte is 0b01xxxxxx");
        assert_eq!(reset[0], 0x7f);
        assert!(token.matches(&reset[reset.len() - 16..]));
        // it parses as a short header, as it must to be indistinguishable
        assert!(PartialDecode::new(reset, 8).is_ok());
    }

    #[test]
    fn retry_tag_rejects_other_odcid_and_truncation() {
        let mut buf = Vec::new();
        let odcid = cid(&[1, 2, 3, 4]);
        write_retry(
            &mut buf,
            VERSION_1,
            &cid(&[5]),
            &cid(&[6, 7]),
            &odcid,
            b"tok",
            3,
        );
        assert_eq!(buf[0], 0xf3);
        assert!(retry_integrity_ok(&odcid, &buf));
        assert!(!retry_integrity_ok(&cid(&[1, 2, 3, 5]), &buf));
        assert!(!retry_integrity_ok(&odcid, &buf[..10]));
        assert!(!retry_integrity_ok(&odcid, &[]));
    }
}
