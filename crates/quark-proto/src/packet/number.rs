//! Packet number encoding and decoding (RFC 9000 §17.1, Appendix A.2 and A.3).

/// Largest packet number QUIC allows (RFC 9000 §12.3: 0 to 2^62-1).
const MAX_PN: u64 = (1 << 62) - 1;

/// Bytes (1..=4) needed to encode `pn` so the peer can recover it, given the largest
/// packet number it has acknowledged (RFC 9000 Appendix A.2).
//= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.2
//# if largest_acked is None:
//#   num_unacked = full_pn + 1
//# else:
//#   num_unacked = full_pn - largest_acked
//#
//# min_bits = log(num_unacked, 2) + 1
//# num_bytes = ceil(min_bits / 8)
pub fn packet_number_len(pn: u64, largest_acked: Option<u64>) -> usize {
    let num_unacked = match largest_acked {
        None => pn.saturating_add(1),
        Some(acked) => pn.saturating_sub(acked),
    };
    // ceil((log2(n) + 1) / 8) bytes is the smallest B with 2^(8B - 1) >= n, computed
    // exactly in integers rather than with a floating-point logarithm.
    match num_unacked {
        0..=0x80 => 1,
        0x81..=0x8000 => 2,
        0x8001..=0x80_0000 => 3,
        _ => 4,
    }
}

/// Recover a full packet number from its `pn_len`-byte truncation, given the largest
/// packet number received so far in the space (RFC 9000 Appendix A.3).
///
/// `pn_len` outside 1..=4 is treated as 4; bits of `truncated` above `pn_len` bytes
/// are ignored.
//= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.3
//# DecodePacketNumber(largest_pn, truncated_pn, pn_nbits):
//#    expected_pn  = largest_pn + 1
//#    pn_win       = 1 << pn_nbits
//#    pn_hwin      = pn_win / 2
//#    pn_mask      = pn_win - 1
//#    candidate_pn = (expected_pn & ~pn_mask) | truncated_pn
//#    if candidate_pn <= expected_pn - pn_hwin and
//#       candidate_pn < (1 << 62) - pn_win:
//#       return candidate_pn + pn_win
//#    if candidate_pn > expected_pn + pn_hwin and
//#       candidate_pn >= pn_win:
//#       return candidate_pn - pn_win
//#    return candidate_pn
pub fn decode_packet_number(largest_pn: Option<u64>, truncated: u64, pn_len: usize) -> u64 {
    let nbits = 8 * pn_len.clamp(1, 4) as u32;
    let expected = largest_pn.map_or(0, |l| l.min(MAX_PN) + 1);
    let win = 1u64 << nbits;
    let hwin = win / 2;
    let mask = win - 1;
    let candidate = (expected & !mask) | (truncated & mask);
    // `expected - hwin` is written as `candidate + hwin <= expected` to stay unsigned.
    if candidate + hwin <= expected && candidate < (1 << 62) - win {
        candidate + win
    } else if candidate > expected + hwin && candidate >= win {
        candidate - win
    } else {
        candidate
    }
}

/// The low `pn_len` bytes of `pn`, as written on the wire.
pub(crate) fn truncate(pn: u64, pn_len: usize) -> u64 {
    pn & ((1u64 << (8 * pn_len)) - 1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    //= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.2
    //# For example, if an endpoint has received an acknowledgment for packet
    //# 0xabe8b3 and is sending a packet with a number of 0xac5c02, there are
    //# 29,519 (0x734f) outstanding packet numbers.  In order to represent at
    //# least twice this range (59,038 packets, or 0xe69e), 16 bits are
    //# required.
    //#
    //# In the same state, sending a packet with a number of 0xace8fe uses
    //# the 24-bit encoding, because at least 18 bits are required to
    //# represent twice the range (131,222 packets, or 0x020096).
    #[test]
    fn rfc9000_a2_examples() {
        assert_eq!(packet_number_len(0xac5c02, Some(0xabe8b3)), 2);
        assert_eq!(packet_number_len(0xace8fe, Some(0xabe8b3)), 3);
    }

    #[test]
    fn encode_len_boundaries() {
        assert_eq!(packet_number_len(0, None), 1);
        assert_eq!(packet_number_len(127, None), 1);
        assert_eq!(packet_number_len(128, None), 2);
        assert_eq!(packet_number_len(228, Some(100)), 1);
        assert_eq!(packet_number_len(229, Some(100)), 2);
        assert_eq!(packet_number_len(MAX_PN, Some(0)), 4);
        // a nonsensical largest_acked above pn does not panic
        assert_eq!(packet_number_len(5, Some(10)), 1);
    }

    //= https://www.rfc-editor.org/rfc/rfc9000#appendix-A.3
    //# For example, if the highest successfully authenticated packet had a
    //# packet number of 0xa82f30ea, then a packet containing a 16-bit value
    //# of 0x9b32 will be decoded as 0xa82f9b32.
    #[test]
    fn rfc9000_a3_example() {
        assert_eq!(
            decode_packet_number(Some(0xa82f30ea), 0x9b32, 2),
            0xa82f9b32
        );
    }

    #[test]
    fn decode_edges() {
        assert_eq!(decode_packet_number(None, 0, 1), 0);
        assert_eq!(decode_packet_number(None, 0xff, 1), 0xff);
        // wraps forward past a window boundary
        assert_eq!(decode_packet_number(Some(0xfe), 0x01, 1), 0x101);
        // and backward for a late packet
        assert_eq!(decode_packet_number(Some(0x101), 0xff, 1), 0xff);
        // near 2^62 the candidate is never pushed beyond the packet number space
        let top = MAX_PN;
        assert_eq!(
            decode_packet_number(Some(top - 1), truncate(top, 4), 4),
            top
        );
        // no panic on any input
        let _ = decode_packet_number(Some(u64::MAX), u64::MAX, 9);
        let _ = decode_packet_number(Some(MAX_PN), 0, 0);
    }

    proptest! {
        /// Whenever the receiver's largest packet number lies between the sender's
        /// largest acknowledged and the packet before this one (the window the sender
        /// sized the encoding for), decoding recovers the full number.
        #[test]
        fn round_trip(
            pn in 0u64..(1 << 62) - 1,
            acked_back in proptest::option::of(1u64..1 << 32),
            recv_frac in 0.0f64..=1.0,
        ) {
            let largest_acked = acked_back.and_then(|b| pn.checked_sub(b));
            let len = packet_number_len(pn, largest_acked);
            // Outside what 4 bytes can express the sender is not respecting the window.
            prop_assume!(pn - largest_acked.map_or(0, |a| a) <= 1 << 31);
            // The receiver has seen at least `largest_acked` and at most `pn - 1`.
            let lo = largest_acked;
            let largest_pn = match lo {
                None if pn == 0 => None,
                None => Some(((pn - 1) as f64 * recv_frac) as u64),
                Some(lo) => Some(lo + ((pn - 1 - lo) as f64 * recv_frac) as u64),
            };
            let largest_pn = largest_pn.map(|l| l.min(pn.saturating_sub(1)));
            let decoded = decode_packet_number(largest_pn, truncate(pn, len), len);
            prop_assert_eq!(decoded, pn);
        }
    }
}
