//! Writing and protecting packets (RFC 9000 §17, RFC 9001 §5.3–5.4).

use rustls::quic::{HeaderProtectionKey, PacketKey};

use super::header::{FIXED_BIT, LONG_FORM};
use super::number::{packet_number_len, truncate};
use super::version::type_bits;
use super::{HeaderParams, PacketBuilder, SealJob};
use crate::cid::MAX_CID_LEN;
use crate::types::PacketKind;
use crate::varint::put_varint;

/// Header protection samples 16 bytes for every cipher suite QUIC v1 defines.
const SAMPLE_LEN: usize = 16;
/// Largest value of the two-byte Length varint we reserve in long headers.
const MAX_LENGTH_FIELD: usize = (1 << 14) - 1;

impl PacketBuilder {
    /// Append a header to `buf`. The packet, including the `tag_len`-byte AEAD tag,
    /// will be at most `max_size` bytes.
    pub fn start(buf: &mut Vec<u8>, h: &HeaderParams<'_>, max_size: usize, tag_len: usize) -> Self {
        let pn_len = packet_number_len(h.pn, h.largest_acked);
        Self::start_with_pn_len(buf, h, pn_len, max_size, tag_len)
    }

    /// [`Self::start`] with a chosen Packet Number length (1..=4) instead of the
    /// shortest safe one, e.g. to reproduce the RFC's examples.
    pub(crate) fn start_with_pn_len(
        buf: &mut Vec<u8>,
        h: &HeaderParams<'_>,
        pn_len: usize,
        max_size: usize,
        tag_len: usize,
    ) -> Self {
        debug_assert!((1..=4).contains(&pn_len));
        let pn_len = pn_len.clamp(1, 4);
        let start = buf.len();
        let pn_len_bits = (pn_len - 1) as u8;
        if h.kind == PacketKind::OneRtt {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-17.3.1
            //# Header Form (1) = 0,
            //# Fixed Bit (1) = 1,
            //# Spin Bit (1),
            //# Reserved Bits (2),
            //# Key Phase (1),
            //# Packet Number Length (2),
            let mut first = FIXED_BIT | pn_len_bits;
            if h.spin {
                first |= 0x20;
            }
            if h.key_phase {
                first |= 0x04;
            }
            // Room for the whole packet at once; fixed-size copies, then the
            // Vec cut back to the real lengths: two `memcpy` calls and three
            // capacity checks less per packet than pushing each field.
            buf.reserve(max_size.max(1 + MAX_CID_LEN + 4));
            buf.push(first);
            buf.extend_from_slice(h.dst_cid.padded());
            buf.truncate(start + 1 + h.dst_cid.len());
            let pn_offset = buf.len();
            //= https://www.rfc-editor.org/rfc/rfc9000#section-17.1
            //# packet numbers are encoded in 1 to 4 bytes
            let shifted = (truncate(h.pn, pn_len) as u32) << (8 * (4 - pn_len));
            buf.extend_from_slice(&shifted.to_be_bytes());
            buf.truncate(pn_offset + pn_len);
            return Self::started(buf, h, start, pn_offset, pn_len, None, max_size, tag_len);
        }
        let ty = type_bits(h.version, Some(h.kind));
        buf.push(LONG_FORM | FIXED_BIT | ty | pn_len_bits);
        buf.extend_from_slice(&h.version.to_be_bytes());
        buf.push(h.dst_cid.len() as u8);
        buf.extend_from_slice(h.dst_cid);
        buf.push(h.src_cid.len() as u8);
        buf.extend_from_slice(h.src_cid);
        if h.kind == PacketKind::Initial {
            put_varint(buf, h.token.len() as u64);
            buf.extend_from_slice(h.token);
        } else {
            debug_assert!(h.token.is_empty(), "only Initial packets carry a token");
        }
        // Filled in by `finish_plaintext` once the payload length is known.
        let len_offset = Some(buf.len());
        buf.extend_from_slice(&[0x40, 0x00]);
        let pn_offset = buf.len();
        buf.extend_from_slice(&truncate(h.pn, pn_len).to_be_bytes()[8 - pn_len..]);
        Self::started(
            buf, h, start, pn_offset, pn_len, len_offset, max_size, tag_len,
        )
    }

    /// The header is written: reserve the packet's room and describe it.
    #[allow(clippy::too_many_arguments)]
    #[inline]
    fn started(
        buf: &mut Vec<u8>,
        h: &HeaderParams<'_>,
        start: usize,
        pn_offset: usize,
        pn_len: usize,
        len_offset: Option<usize>,
        max_size: usize,
        tag_len: usize,
    ) -> Self {
        let header_end = buf.len();
        let mut max_end = start + max_size.saturating_sub(tag_len);
        if len_offset.is_some() {
            // The two-byte Length field caps a long-header packet at 16383 bytes after it.
            max_end = max_end.min((pn_offset + MAX_LENGTH_FIELD).saturating_sub(tag_len));
        }
        buf.reserve((max_end + tag_len).saturating_sub(buf.len()));
        PacketBuilder {
            start,
            pn_offset,
            pn_len,
            header_end,
            len_offset,
            max_end,
            pn: h.pn,
            kind: h.kind,
        }
    }

    /// Payload bytes that still fit.
    pub fn remaining(&self, buf: &[u8]) -> usize {
        self.max_end.saturating_sub(buf.len())
    }

    /// Pad with PADDING frames so the packet (with tag) is at least `min_size` bytes and
    /// long enough to sample for header protection, write the Length field, and reserve
    /// the tag. Encryption is left to the returned job.
    pub fn finish_plaintext(self, buf: &mut Vec<u8>, min_size: usize, tag_len: usize) -> SealJob {
        debug_assert!(
            buf.len() >= self.header_end,
            "buffer truncated below the header"
        );
        //= https://www.rfc-editor.org/rfc/rfc9001#section-5.4.2
        //# To ensure that sufficient data is available for sampling, packets are
        //# padded so that the combined lengths of the encoded packet number and
        //# protected payload is at least 4 bytes longer than the sample required
        //# for header protection.
        let end_for_sample = (self.pn_offset + 4 + SAMPLE_LEN).saturating_sub(tag_len);
        let end_for_size = (self.start + min_size).saturating_sub(tag_len);
        let end = buf.len().max(end_for_sample).max(end_for_size);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.1
        //# PADDING Frame {
        //#   Type (i) = 0x00,
        //# }
        buf.resize(end, 0);

        if let Some(at) = self.len_offset {
            let length = end + tag_len - self.pn_offset;
            debug_assert!(length <= MAX_LENGTH_FIELD, "long header packet too large");
            let field = 0x4000 | (length.min(MAX_LENGTH_FIELD) as u16);
            buf[at..at + 2].copy_from_slice(&field.to_be_bytes());
        }
        // Room for the tag: every QUIC AEAD's is 16 bytes, zeroed by two
        // stores where `resize` calls `memset` (issue #30: once per packet).
        if tag_len == 16 {
            buf.extend_from_slice(&[0; 16]);
        } else {
            buf.resize(end + tag_len, 0);
        }
        SealJob {
            start: self.start,
            pn_offset: self.pn_offset,
            header_len: self.header_end - self.start,
            end,
            pn: self.pn,
        }
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
    ///
    /// `buf` is the buffer `finish_plaintext` wrote into; `key` must have the tag
    /// length given to it.
    pub fn seal(&self, buf: &mut [u8], key: &dyn PacketKey, hp: &dyn HeaderProtectionKey) {
        self.seal_payload(buf, key);
        self.protect_header(buf, hp, key.tag_len());
    }

    /// The first half of [`SealJob::seal`]: encrypt the payload and write the tag.
    /// Batches seal every payload first, then protect every header.
    pub fn seal_payload(&self, buf: &mut [u8], key: &dyn PacketKey) {
        let tag_len = key.tag_len();
        let packet = &mut buf[self.start..self.end + tag_len];

        //= https://www.rfc-editor.org/rfc/rfc9001#section-5.3
        //# When constructing packets, the AEAD function is applied prior to
        //# applying header protection; see Section 5.4.  The unprotected packet
        //# header is part of the associated data (A).
        let (header, rest) = packet.split_at_mut(self.header_len);
        let (payload, tag_out) = rest.split_at_mut(self.end - self.start - self.header_len);
        let tag = key
            .encrypt_in_place(self.pn, header, payload)
            .expect("QUIC packets are far below the AEAD's input limit");
        tag_out.copy_from_slice(tag.as_ref());
    }

    /// The second half of [`SealJob::seal`]: header protection, which samples the
    /// ciphertext and so must follow [`SealJob::seal_payload`].
    pub fn protect_header(&self, buf: &mut [u8], hp: &dyn HeaderProtectionKey, tag_len: usize) {
        let packet = &mut buf[self.start..self.end + tag_len];
        //= https://www.rfc-editor.org/rfc/rfc9001#section-5.4.1
        //# Header protection is applied after packet protection is applied (see
        //# Section 5.3).  The ciphertext of the packet is sampled and used as
        //# input to an encryption algorithm.
        let pn_at = self.pn_offset - self.start;
        let pn_len = self.header_len - pn_at;
        let (head, after) = packet.split_at_mut(pn_at + 4);
        let (first, rest) = head.split_first_mut().expect("header is never empty");
        let sample = &after[..hp.sample_len()];
        hp.encrypt_in_place(sample, first, &mut rest[pn_at - 1..pn_at - 1 + pn_len])
            .expect("sample has the key's length and the packet number at most 4 bytes");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cid::ConnectionId;
    use crate::crypto::{Keys, initial_keys};
    use crate::packet::{
        HeaderType, PartialDecode, VERSION_1, decrypt_payload, remove_header_protection,
    };
    use crate::types::Side;
    use proptest::prelude::*;

    fn keys() -> (Keys, Keys) {
        let cid = [7u8; 8];
        (
            initial_keys(&cid, Side::Client),
            initial_keys(&cid, Side::Server),
        )
    }

    fn params<'a>(
        kind: PacketKind,
        dst: &'a ConnectionId,
        src: &'a ConnectionId,
        token: &'a [u8],
        pn: u64,
    ) -> HeaderParams<'a> {
        HeaderParams {
            kind,
            version: VERSION_1,
            dst_cid: dst,
            src_cid: src,
            token,
            pn,
            largest_acked: pn.checked_sub(1),
            key_phase: false,
            spin: false,
        }
    }

    /// Open the packet at the start of `datagram`; returns (pd, pn, plaintext).
    fn open(
        datagram: &mut [u8],
        cid_len: usize,
        largest: Option<u64>,
        k: &Keys,
    ) -> (PartialDecode, u64, Vec<u8>) {
        let pd = PartialDecode::new(datagram, cid_len).unwrap();
        let pkt = &mut datagram[..pd.len];
        let h = remove_header_protection(pkt, &pd, k.remote.header.as_ref(), largest).unwrap();
        assert!(h.reserved_bits_zero);
        let r = decrypt_payload(pkt, &h, k.remote.packet.as_ref()).unwrap();
        let plain = pkt[r].to_vec();
        (pd, h.pn, plain)
    }

    #[test]
    fn pads_tiny_payloads_for_the_sample() {
        let (c, s) = keys();
        let dst = ConnectionId::new(&[1; 4]).unwrap();
        let mut buf = Vec::new();
        let h = params(PacketKind::OneRtt, &dst, &ConnectionId::EMPTY, &[], 0);
        let b = PacketBuilder::start(&mut buf, &h, 1200, 16);
        assert_eq!(b.pn_len, 1);
        let size = b.finish(
            &mut buf,
            0,
            c.local.packet.as_ref(),
            c.local.header.as_ref(),
        );
        // 1 + 4 CID + 1 pn + 3 PADDING + 16 tag: sample at pn_offset + 4 fits exactly
        assert_eq!(size, 25);
        let (_, pn, plain) = open(&mut buf, 4, None, &s);
        assert_eq!((pn, plain), (0, vec![0; 3]));
    }

    #[test]
    fn respects_max_size_and_min_size() {
        let (c, s) = keys();
        let dst = ConnectionId::new(&[1; 8]).unwrap();
        let src = ConnectionId::new(&[2; 8]).unwrap();
        let mut buf = vec![0xaa; 10]; // something already in the datagram
        let h = params(PacketKind::Handshake, &dst, &src, &[], 300);
        let b = PacketBuilder::start(&mut buf, &h, 100, 16);
        let room = b.remaining(&buf);
        buf.resize(buf.len() + room, 0x01);
        let size = b.finish(
            &mut buf,
            0,
            c.local.packet.as_ref(),
            c.local.header.as_ref(),
        );
        assert_eq!(size, 100);
        assert_eq!(buf.len(), 110);
        assert_eq!(&buf[..10], &[0xaa; 10]);

        let mut buf = Vec::new();
        let h = params(PacketKind::Initial, &dst, &src, b"tok", 0);
        let b = PacketBuilder::start(&mut buf, &h, 1500, 16);
        buf.push(0x01);
        let size = b.finish(
            &mut buf,
            1200,
            c.local.packet.as_ref(),
            c.local.header.as_ref(),
        );
        assert_eq!(size, 1200);
        let (pd, _, plain) = open(&mut buf, 0, None, &s);
        assert_eq!(pd.len, 1200);
        assert_eq!(&buf[pd.token], b"tok");
        assert_eq!(plain[0], 0x01);
        assert!(plain[1..].iter().all(|&b| b == 0));
    }

    #[test]
    fn long_header_length_is_capped() {
        let (c, _) = keys();
        let mut buf = Vec::new();
        let e = ConnectionId::EMPTY;
        let h = params(PacketKind::Handshake, &e, &e, &[], 0);
        let b = PacketBuilder::start(&mut buf, &h, 65_000, 16);
        assert!(b.max_end + 16 - b.pn_offset <= MAX_LENGTH_FIELD);
        let room = b.remaining(&buf);
        buf.resize(buf.len() + room, 0);
        let size = b.finish(
            &mut buf,
            0,
            c.local.packet.as_ref(),
            c.local.header.as_ref(),
        );
        assert!(PartialDecode::new(&buf, 0).unwrap().len == size);
    }

    #[test]
    fn coalesced_and_batch_sealed() {
        let (c, s) = keys();
        let dst = ConnectionId::new(&[3; 5]).unwrap();
        let src = ConnectionId::new(&[4; 6]).unwrap();
        let mut buf = Vec::new();
        let mut jobs = Vec::new();
        let kinds = [
            PacketKind::Initial,
            PacketKind::Handshake,
            PacketKind::OneRtt,
        ];
        for (i, kind) in kinds.into_iter().enumerate() {
            let h = params(kind, &dst, &src, &[], 1000 + i as u64);
            let b = PacketBuilder::start(&mut buf, &h, 1200, 16);
            buf.extend_from_slice(&[i as u8 + 1; 40]);
            jobs.push(b.finish_plaintext(&mut buf, 0, 16));
        }
        // Encrypt everything at once, just before "sending".
        for job in &jobs {
            job.seal(&mut buf, c.local.packet.as_ref(), c.local.header.as_ref());
        }
        let mut at = 0;
        for (i, kind) in kinds.into_iter().enumerate() {
            let (pd, pn, plain) = open(&mut buf[at..], 5, Some(999 + i as u64), &s);
            assert_eq!(pd.ty, HeaderType::Frames(kind));
            assert_eq!(pn, 1000 + i as u64);
            assert_eq!(plain, vec![i as u8 + 1; 40]);
            at += pd.len;
        }
        assert_eq!(at, buf.len());
    }

    /// The 1-RTT header is written with fixed-size copies cut back to length:
    /// byte-exact for every connection ID and packet number length, after
    /// earlier packets in the buffer.
    #[test]
    fn one_rtt_header_bytes() {
        let pn = 0x12_3456_789a;
        for cid_len in [0u8, 1, 8, 20] {
            let id: Vec<u8> = (1..=cid_len).collect();
            let dst = ConnectionId::new(&id).unwrap();
            for pn_len in 1..=4 {
                let mut buf = vec![0xaa; 37];
                let mut h = params(PacketKind::OneRtt, &dst, &ConnectionId::EMPTY, &[], pn);
                h.key_phase = true;
                let b = PacketBuilder::start_with_pn_len(&mut buf, &h, pn_len, 1200, 16);
                let mut want = vec![0xaa; 37];
                want.push(0x40 | 0x04 | (pn_len - 1) as u8);
                want.extend_from_slice(&id);
                want.extend_from_slice(&pn.to_be_bytes()[8 - pn_len..]);
                assert_eq!(buf, want, "cid {cid_len} pn_len {pn_len}");
                let at = 37 + 1 + usize::from(cid_len);
                assert_eq!((b.start, b.pn_offset, b.header_end), (37, at, at + pn_len));
                assert_eq!(b.max_end, 37 + 1200 - 16);
                assert!(buf.capacity() >= 37 + 1200);
            }
        }
    }

    fn kind() -> impl Strategy<Value = PacketKind> {
        prop_oneof![
            Just(PacketKind::Initial),
            Just(PacketKind::ZeroRtt),
            Just(PacketKind::Handshake),
            Just(PacketKind::OneRtt),
        ]
    }

    proptest! {
        #[test]
        fn build_then_open(
            kind in kind(),
            dst in proptest::collection::vec(any::<u8>(), 0..=20),
            src in proptest::collection::vec(any::<u8>(), 0..=20),
            token in proptest::collection::vec(any::<u8>(), 0..40),
            pn in 0u64..1 << 40,
            gap in 1u64..1 << 20,
            key_phase: bool,
            spin: bool,
            payload in proptest::collection::vec(any::<u8>(), 0..300),
            min_size in 0usize..1300,
        ) {
            let (c, s) = keys();
            let dst = ConnectionId::new(&dst).unwrap();
            let src = ConnectionId::new(&src).unwrap();
            let token = if kind == PacketKind::Initial { &token[..] } else { &[][..] };
            let h = HeaderParams {
                kind, version: VERSION_1, dst_cid: &dst, src_cid: &src, token, pn,
                largest_acked: pn.checked_sub(gap), key_phase, spin,
            };
            let mut buf = Vec::new();
            let b = PacketBuilder::start(&mut buf, &h, 1500, 16);
            prop_assert!(b.remaining(&buf) >= payload.len());
            buf.extend_from_slice(&payload);
            let size = b.finish(&mut buf, min_size, c.local.packet.as_ref(), c.local.header.as_ref());
            prop_assert_eq!(size, buf.len());
            prop_assert!(size >= min_size);

            let pd = PartialDecode::new(&buf, dst.len()).unwrap();
            prop_assert_eq!(pd.ty, HeaderType::Frames(kind));
            prop_assert_eq!(pd.len, size);
            prop_assert_eq!(pd.dst_cid, dst);
            prop_assert_eq!(&buf[pd.token.clone()], token);
            let pkt = &mut buf[..pd.len];
            let largest = pn.checked_sub(gap.min(pn));
            let u = remove_header_protection(pkt, &pd, s.remote.header.as_ref(), largest).unwrap();
            prop_assert_eq!(u.pn, pn);
            prop_assert_eq!(u.key_phase, key_phase && kind == PacketKind::OneRtt);
            prop_assert_eq!(u.spin, spin && kind == PacketKind::OneRtt);
            prop_assert!(u.reserved_bits_zero);
            let r = decrypt_payload(pkt, &u, s.remote.packet.as_ref()).unwrap();
            prop_assert_eq!(&pkt[r.start..r.start + payload.len()], &payload[..]);
            prop_assert!(pkt[r.start + payload.len()..r.end].iter().all(|&b| b == 0));
        }
    }
}
