//! Removing packet protection on receipt (RFC 9001 §5.3–5.5).

use std::ops::Range;

use rustls::quic::{HeaderProtectionKey, PacketKey};

use super::header::LONG_FORM;
use super::number::decode_packet_number;
use super::{HeaderType, PacketDecodeError, PartialDecode, Unprotected};

use PacketDecodeError::Invalid;

/// Remove header protection in place. `packet` is exactly this packet
/// (`&mut datagram[..pd.len]`); `largest_pn` is the largest packet number
/// successfully processed in its space, for packet-number decoding.
pub fn remove_header_protection(
    packet: &mut [u8],
    pd: &PartialDecode,
    hp: &dyn HeaderProtectionKey,
    largest_pn: Option<u64>,
) -> Result<Unprotected, PacketDecodeError> {
    if !matches!(pd.ty, HeaderType::Frames(_)) {
        return Err(Invalid("packet type has no header protection"));
    }
    // Never look past this packet into a coalesced one.
    let packet = packet
        .get_mut(..pd.len)
        .ok_or(Invalid("packet shorter than its header says"))?;

    //= https://www.rfc-editor.org/rfc/rfc9001#section-5.4.2
    //# The sample of ciphertext is taken starting from an offset of 4 bytes
    //# after the start of the Packet Number field.  That is, in sampling
    //# packet ciphertext for header protection, the Packet Number field is
    //# assumed to be 4 bytes long (its maximum possible encoded length).
    //#
    //# An endpoint MUST discard packets that are not long enough to contain
    //# a complete sample.
    let sample_start = pd.pn_offset + 4;
    let sample_end = sample_start + hp.sample_len();
    if sample_end > packet.len() {
        return Err(Invalid("too short for the header protection sample"));
    }
    let (head, rest) = packet.split_at_mut(sample_start);
    let (first, after_first) = head.split_first_mut().ok_or(Invalid("empty packet"))?;
    // All four bytes that may hold the packet number are handed over; rustls unmasks
    // only as many as the Packet Number Length bits say once the first byte is clear.
    let pn_field = &mut after_first[pd.pn_offset - 1..];
    hp.decrypt_in_place(&rest[..sample_end - sample_start], first, pn_field)
        .map_err(|_| Invalid("header protection failed"))?;

    let first = *first;
    let pn_len = usize::from(first & 0x03) + 1;
    let truncated = pn_field[..pn_len]
        .iter()
        .fold(0u64, |acc, &b| (acc << 8) | u64::from(b));
    let pn = decode_packet_number(largest_pn, truncated, pn_len);
    let long = first & LONG_FORM != 0;

    //= https://www.rfc-editor.org/rfc/rfc9000#section-17.2
    //# Reserved Bits:  Two bits (those with a mask of 0x0c) of byte 0 are
    //#    reserved across multiple packet types.
    //= https://www.rfc-editor.org/rfc/rfc9000#section-17.3.1
    //# Reserved Bits:  The next two bits (those with a mask of 0x18) of byte
    //#    0 are reserved.
    let reserved_mask = if long { 0x0c } else { 0x18 };
    Ok(Unprotected {
        pn,
        header_len: pd.pn_offset + pn_len,
        //# Key Phase:  The next bit (0x04) of byte 0 indicates the key phase,
        key_phase: !long && first & 0x04 != 0,
        //# Spin Bit:  The third most significant bit (0x20) of byte 0 is the
        //#    latency spin bit, set as described in Section 17.4.
        spin: !long && first & 0x20 != 0,
        reserved_bits_zero: first & reserved_mask == 0,
    })
}

/// Decrypt the payload of a packet whose header protection has been removed.
/// Returns the range of `packet` holding the plaintext frames.
///
/// `packet` must be exactly the packet (`&mut datagram[..pd.len]`), as for
/// [`remove_header_protection`].
//= https://www.rfc-editor.org/rfc/rfc9001#section-5.3
//# The associated data, A, for the AEAD is the contents of the QUIC
//# header, starting from the first byte of either the short or long
//# header, up to and including the unprotected packet number.
pub fn decrypt_payload(
    packet: &mut [u8],
    header: &Unprotected,
    key: &dyn PacketKey,
) -> Result<Range<usize>, rustls::Error> {
    if header.header_len > packet.len() {
        return Err(rustls::Error::DecryptError);
    }
    let (aad, payload) = packet.split_at_mut(header.header_len);
    let plain = key.decrypt_in_place(header.pn, aad, payload)?.len();
    Ok(header.header_len..header.header_len + plain)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cid::ConnectionId;
    use crate::crypto::{Keys, initial_keys};
    use crate::packet::{HeaderParams, PacketBuilder, VERSION_1, write_retry};
    use crate::types::{PacketKind, Side};

    fn keys() -> (Keys, Keys) {
        (
            initial_keys(b"abc", Side::Client),
            initial_keys(b"abc", Side::Server),
        )
    }

    /// A sealed Handshake packet; `tweak` edits the plaintext header before sealing.
    fn packet(k: &Keys, payload: &[u8], tweak: impl FnOnce(&mut Vec<u8>)) -> Vec<u8> {
        let e = ConnectionId::EMPTY;
        let h = HeaderParams {
            kind: PacketKind::Handshake,
            version: VERSION_1,
            dst_cid: &e,
            src_cid: &e,
            token: &[],
            pn: 9,
            largest_acked: None,
            key_phase: false,
            spin: false,
        };
        let mut buf = Vec::new();
        let b = PacketBuilder::start(&mut buf, &h, 1200, 16);
        buf.extend_from_slice(payload);
        let job = b.finish_plaintext(&mut buf, 0, 16);
        tweak(&mut buf);
        job.seal(&mut buf, k.local.packet.as_ref(), k.local.header.as_ref());
        buf
    }

    #[test]
    fn reserved_bits_are_reported_not_rejected() {
        let (c, s) = keys();
        let mut pkt = packet(&c, &[1, 2, 3, 4], |b| b[0] |= 0x08);
        let pd = PartialDecode::new(&pkt, 0).unwrap();
        let h = remove_header_protection(&mut pkt, &pd, s.remote.header.as_ref(), None).unwrap();
        assert!(!h.reserved_bits_zero);
        // they were authenticated, so the caller learns they really were sent
        assert!(decrypt_payload(&mut pkt, &h, s.remote.packet.as_ref()).is_ok());
    }

    #[test]
    fn tampering_fails_decryption() {
        let (c, s) = keys();
        let clean = packet(&c, &[1, 2, 3, 4], |_| {});
        for at in [0, 7, clean.len() - 1] {
            let mut pkt = clean.clone();
            pkt[at] ^= 0x01;
            let Ok(pd) = PartialDecode::new(&pkt, 0) else {
                continue;
            };
            if let Ok(h) = remove_header_protection(&mut pkt, &pd, s.remote.header.as_ref(), None) {
                assert!(decrypt_payload(&mut pkt, &h, s.remote.packet.as_ref()).is_err());
            }
        }
    }

    #[test]
    fn rejects_short_and_unprotected_packets() {
        let (c, s) = keys();
        let pkt = packet(&c, &[1, 2, 3, 4], |_| {});
        let pd = PartialDecode::new(&pkt, 0).unwrap();
        let hp = s.remote.header.as_ref();
        // the caller passed less than the packet
        let mut short = pkt[..pkt.len() - 1].to_vec();
        assert!(remove_header_protection(&mut short, &pd, hp, None).is_err());
        // a packet whose Length leaves no room for the sample
        let mut tiny = vec![0xe0, 0, 0, 0, 1, 0, 0, 0x05, 0, 0, 0, 0, 0];
        let pd = PartialDecode::new(&tiny, 0).unwrap();
        assert_eq!(
            remove_header_protection(&mut tiny, &pd, hp, None),
            Err(Invalid("too short for the header protection sample"))
        );
        // Retry carries no header protection
        let mut retry = Vec::new();
        let cid = ConnectionId::new(&[1]).unwrap();
        write_retry(&mut retry, VERSION_1, &cid, &cid, &cid, &[9; 30], 0);
        let pd = PartialDecode::new(&retry, 0).unwrap();
        assert!(remove_header_protection(&mut retry, &pd, hp, None).is_err());
    }

    proptest::proptest! {
        /// Whatever arrives, parsing and unprotecting return errors, never panic.
        #[test]
        fn never_panics(
            mut bytes in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200),
            first in proptest::prelude::any::<u8>(),
            largest in proptest::option::of(proptest::prelude::any::<u64>()),
            v1: bool,
        ) {
            let (_, s) = keys();
            if let Some(b) = bytes.first_mut() {
                *b = first | 0x40;
            }
            if v1 && bytes.len() > 7 {
                // a v1 long header with short CIDs, so parsing gets further
                bytes[0] |= 0x80;
                bytes[1..5].copy_from_slice(&VERSION_1.to_be_bytes());
                bytes[5] &= 0x07;
            }
            if let Ok(pd) = PartialDecode::new(&bytes, 4) {
                let hp = s.remote.header.as_ref();
                if let Ok(h) = remove_header_protection(&mut bytes, &pd, hp, largest) {
                    proptest::prop_assert!(h.header_len <= pd.len);
                    let pkt = &mut bytes[..pd.len];
                    let _ = decrypt_payload(pkt, &h, s.remote.packet.as_ref());
                }
            }
        }
    }
}
