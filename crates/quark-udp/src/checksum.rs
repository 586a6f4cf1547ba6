//! The Internet checksum (RFC 1071), for the headers this crate builds: the
//! AF_XDP backend's IPv4 and UDP headers, and the TUN offloads' segments.

/// Adds `data`, read as big-endian 16-bit words (a zero byte pads an odd
/// length), to the running sum `acc`. Eight bytes at a time with the carries
/// folded back in: the same sum modulo 0xffff (RFC 1071 §2(C)), four times
/// fewer additions. The result is folded to 32 bits, so a few sums and small
/// numbers (a protocol, a length) can be added to it with plain `+`.
pub(crate) fn add(mut acc: u64, data: &[u8]) -> u64 {
    let mut chunks = data.chunks_exact(8);
    for c in &mut chunks {
        let word = u64::from_be_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]);
        let (sum, carry) = acc.overflowing_add(word);
        acc = sum + u64::from(carry);
    }
    let mut pairs = chunks.remainder().chunks_exact(2);
    for p in &mut pairs {
        acc = acc.wrapping_add(u64::from(u16::from_be_bytes([p[0], p[1]])));
    }
    if let [last] = pairs.remainder() {
        acc = acc.wrapping_add(u64::from(u16::from_be_bytes([*last, 0])));
    }
    // At most 0xffff_ffff + 0xffff_ffff: fits, and leaves room for `+`.
    (acc & 0xffff_ffff) + (acc >> 32)
}

/// The sum folded to 16 bits: 0xffff for data that includes its valid checksum.
pub(crate) fn fold(mut acc: u64) -> u16 {
    while acc > 0xffff {
        acc = (acc & 0xffff) + (acc >> 16);
    }
    acc as u16
}

/// The checksum to store (big-endian) for a sum taken with the field zeroed.
pub(crate) fn finish(acc: u64) -> u16 {
    !fold(acc)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    /// 16 bits at a time, straight from RFC 1071 §4.1: what the fast sum and
    /// the frames built with it are checked against.
    pub(crate) fn reference(data: &[u8]) -> u16 {
        let mut sum: u32 = 0;
        for pair in data.chunks(2) {
            let hi = u32::from(pair[0]) << 8;
            let lo = pair.get(1).map_or(0, |&b| u32::from(b));
            sum += hi | lo;
            sum = (sum & 0xffff) + (sum >> 16);
        }
        !(sum as u16)
    }

    #[test]
    fn a_known_ipv4_header() {
        // The example header of many a textbook; its checksum is 0xb861.
        let h = [
            0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 0xc0, 0xa8,
            0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7,
        ];
        assert_eq!(finish(add(0, &h)), 0xb861);
        let mut with = h;
        with[10..12].copy_from_slice(&0xb861u16.to_be_bytes());
        assert_eq!(fold(add(0, &with)), 0xffff);
    }

    #[test]
    fn carries_are_not_lost() {
        let ones = [0xffu8; 4096];
        assert_eq!(finish(add(0, &ones)), reference(&ones));
        assert_eq!(finish(add(u64::MAX - 1, &ones)), finish(add(0xfffe, &ones)));
    }

    proptest! {
        #[test]
        fn matches_the_reference(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            prop_assert_eq!(finish(add(0, &data)), reference(&data));
        }

        #[test]
        fn sums_chain(a in proptest::collection::vec(any::<u8>(), 0..100),
                      b in proptest::collection::vec(any::<u8>(), 0..100)) {
            // Chaining over an even-length first part is summing the whole.
            let mut a = a;
            a.truncate(a.len() & !1);
            let whole: Vec<u8> = a.iter().chain(&b).copied().collect();
            prop_assert_eq!(finish(add(add(0, &a), &b)), reference(&whole));
            prop_assert_eq!(finish(add(0, &a) + add(0, &b)), reference(&whole));
        }
    }
}
