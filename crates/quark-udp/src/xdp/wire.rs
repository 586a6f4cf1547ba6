//! Ethernet II + IPv4 + UDP headers: built in front of each datagram sent through
//! AF_XDP, checked and stripped from each one received.
//!
//! Only what quark sends is built: no VLAN tag, no IP options, Don't Fragment set
//! (RFC 9000 §14), TTL 64. Receiving accepts any well-formed unfragmented IPv4 UDP
//! datagram (options included) and drops everything else.

use std::net::{Ipv4Addr, SocketAddrV4};
use std::ops::Range;

use crate::checksum::{add, finish};

/// An Ethernet address.
pub(crate) type Mac = [u8; 6];

/// Ethernet header: destination, source, EtherType.
pub(crate) const ETH_LEN: usize = 14;
/// IPv4 header without options.
pub(crate) const IP_LEN: usize = 20;
/// UDP header.
pub(crate) const UDP_LEN: usize = 8;
/// All headers in front of the payload of a datagram quark sends.
pub(crate) const HEADERS: usize = ETH_LEN + IP_LEN + UDP_LEN;

const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const PROTO_UDP: u8 = 17;
const TTL: u8 = 64;
/// Don't Fragment, in the flags/fragment-offset field.
const DF: u16 = 0x4000;
/// More Fragments, and the fragment offset bits.
const MF_AND_OFFSET: u16 = 0x3fff;

/// Who a datagram is from and to, at every layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) src_mac: Mac,
    pub(crate) dst_mac: Mac,
    pub(crate) src: SocketAddrV4,
    pub(crate) dst: SocketAddrV4,
    /// The two ECN bits (the rest of the TOS byte is 0).
    pub(crate) ecn: u8,
}

/// Writes the headers into `frame[..HEADERS]` for the `payload_len` bytes that
/// the caller put at `frame[HEADERS..]`. The UDP checksum is computed when
/// `udp_checksum` is true, else left 0 ("no checksum", allowed for IPv4).
///
/// `frame` must hold `HEADERS + payload_len` bytes and `payload_len` must be at
/// most 65 507 (the caller checks both against the MTU first).
pub(crate) fn write(frame: &mut [u8], h: &Header, payload_len: usize, udp_checksum: bool) {
    let udp_len = (UDP_LEN + payload_len) as u16;
    let ip_len = IP_LEN as u16 + udp_len;
    let (eth, rest) = frame.split_at_mut(ETH_LEN);
    eth[0..6].copy_from_slice(&h.dst_mac);
    eth[6..12].copy_from_slice(&h.src_mac);
    eth[12..14].copy_from_slice(&ETHERTYPE_IPV4);

    let (ip, rest) = rest.split_at_mut(IP_LEN);
    ip[0] = 0x45; // version 4, 5 words of header
    ip[1] = h.ecn & 0b11;
    ip[2..4].copy_from_slice(&ip_len.to_be_bytes());
    // Identification 0: RFC 6864 §4.1 lets atomic datagrams (DF set, not
    // fragmented) carry any value; Linux also sends 0 for them on connected sockets.
    ip[4..6].copy_from_slice(&[0, 0]);
    ip[6..8].copy_from_slice(&DF.to_be_bytes());
    ip[8] = TTL;
    ip[9] = PROTO_UDP;
    ip[10..12].copy_from_slice(&[0, 0]);
    ip[12..16].copy_from_slice(&h.src.ip().octets());
    ip[16..20].copy_from_slice(&h.dst.ip().octets());
    let sum = finish(add(0, ip));
    ip[10..12].copy_from_slice(&sum.to_be_bytes());

    let udp = &mut rest[..UDP_LEN + payload_len];
    udp[0..2].copy_from_slice(&h.src.port().to_be_bytes());
    udp[2..4].copy_from_slice(&h.dst.port().to_be_bytes());
    udp[4..6].copy_from_slice(&udp_len.to_be_bytes());
    udp[6..8].copy_from_slice(&[0, 0]);
    if udp_checksum {
        let sum = finish(add(pseudo_header(h.src.ip(), h.dst.ip(), udp_len), udp));
        // RFC 768: a computed checksum of zero is sent as all ones (0 means "none").
        let sum = if sum == 0 { 0xffff } else { sum };
        udp[6..8].copy_from_slice(&sum.to_be_bytes());
    }
}

/// What [`parse`] found in a received frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) src_mac: Mac,
    pub(crate) src: SocketAddrV4,
    pub(crate) dst: SocketAddrV4,
    pub(crate) ecn: u8,
    /// Where the UDP payload lies in the frame.
    pub(crate) payload: Range<usize>,
}

/// Checks a received Ethernet frame and finds its UDP payload; `None` for
/// anything but a well-formed, unfragmented IPv4 UDP datagram with a correct IP
/// header checksum.
///
/// The UDP checksum is not checked: QUIC's AEAD protects every packet, and a
/// frame that crossed a veth from a kernel socket carries only the partial
/// (pseudo-header) sum that checksum offload leaves for the "hardware".
pub(crate) fn parse(frame: &[u8]) -> Option<Parsed> {
    let eth = frame.get(..ETH_LEN)?;
    if eth[12..14] != ETHERTYPE_IPV4 {
        return None;
    }
    let packet = &frame[ETH_LEN..];
    let first = *packet.first()?;
    let header_len = usize::from(first & 0x0f) * 4;
    if first >> 4 != 4 || header_len < IP_LEN || packet.len() < header_len + UDP_LEN {
        return None;
    }
    let ip = &packet[..header_len];
    // Frames may carry Ethernet padding beyond the IP datagram, never less.
    let total = usize::from(u16::from_be_bytes([ip[2], ip[3]]));
    if total < header_len + UDP_LEN || total > packet.len() {
        return None;
    }
    let fragment = u16::from_be_bytes([ip[6], ip[7]]) & MF_AND_OFFSET;
    if fragment != 0 || ip[9] != PROTO_UDP || finish(add(0, ip)) != 0 {
        return None;
    }
    let src_ip = Ipv4Addr::new(ip[12], ip[13], ip[14], ip[15]);
    let dst_ip = Ipv4Addr::new(ip[16], ip[17], ip[18], ip[19]);
    let udp = &packet[header_len..total];
    let udp_len = usize::from(u16::from_be_bytes([udp[4], udp[5]]));
    if udp_len < UDP_LEN || udp_len > udp.len() {
        return None;
    }
    let start = ETH_LEN + header_len + UDP_LEN;
    let mut src_mac = [0u8; 6];
    src_mac.copy_from_slice(&eth[6..12]);
    Some(Parsed {
        src_mac,
        src: SocketAddrV4::new(src_ip, u16::from_be_bytes([udp[0], udp[1]])),
        dst: SocketAddrV4::new(dst_ip, u16::from_be_bytes([udp[2], udp[3]])),
        ecn: ip[1] & 0b11,
        payload: start..start + udp_len - UDP_LEN,
    })
}

/// The UDP pseudo-header's share of the checksum (RFC 768): addresses,
/// protocol, UDP length.
fn pseudo_header(src: &Ipv4Addr, dst: &Ipv4Addr, udp_len: u16) -> u64 {
    let mut words = [0u8; 12];
    words[..4].copy_from_slice(&src.octets());
    words[4..8].copy_from_slice(&dst.octets());
    words[9] = PROTO_UDP;
    words[10..12].copy_from_slice(&udp_len.to_be_bytes());
    add(0, &words)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checksum::tests::reference as reference_sum;
    use proptest::prelude::*;

    const A: Mac = [0x02, 0, 0, 0, 0, 0x0a];
    const B: Mac = [0x02, 0, 0, 0, 0, 0x0b];

    fn header() -> Header {
        Header {
            src_mac: A,
            dst_mac: B,
            src: "192.0.2.1:4433".parse().unwrap(),
            dst: "192.0.2.2:50000".parse().unwrap(),
            ecn: 0b10,
        }
    }

    fn build(h: &Header, payload: &[u8], csum: bool) -> Vec<u8> {
        let mut frame = vec![0u8; HEADERS + payload.len()];
        frame[HEADERS..].copy_from_slice(payload);
        write(&mut frame, h, payload.len(), csum);
        frame
    }

    #[test]
    fn byte_exact_frame() {
        // Headers for the 5-byte payload "hello"; the checksums were computed
        // independently (a 16-bit big-endian sum per RFC 1071, in Python).
        let frame = build(&header(), b"hello", true);
        #[rustfmt::skip]
        let expected: [u8; 47] = [
            // Ethernet: destination, source, IPv4
            0x02, 0, 0, 0, 0, 0x0b, 0x02, 0, 0, 0, 0, 0x0a, 0x08, 0x00,
            // IPv4: 45, ECN 10, length 33, id 0, DF, TTL 64, UDP, checksum, addresses
            0x45, 0x02, 0x00, 0x21, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11, 0xb6, 0xc6,
            192, 0, 2, 1, 192, 0, 2, 2,
            // UDP: 4433 -> 50000, length 13, checksum
            0x11, 0x51, 0xc3, 0x50, 0x00, 0x0d, 0x63, 0x5c,
            b'h', b'e', b'l', b'l', b'o',
        ];
        assert_eq!(frame, expected);
    }

    #[test]
    fn checksums_verify_with_the_reference_sum() {
        let payload: Vec<u8> = (0..1201u32).map(|i| (i * 31 + 7) as u8).collect();
        let frame = build(&header(), &payload, true);
        assert_eq!(reference_sum(&frame[ETH_LEN..ETH_LEN + IP_LEN]), 0);
        let udp = &frame[ETH_LEN + IP_LEN..];
        let mut pseudo = Vec::new();
        pseudo.extend_from_slice(&frame[ETH_LEN + 12..ETH_LEN + 20]);
        pseudo.extend_from_slice(&[0, 17]);
        pseudo.extend_from_slice(&(udp.len() as u16).to_be_bytes());
        pseudo.extend_from_slice(udp);
        assert_eq!(reference_sum(&pseudo), 0);
    }

    #[test]
    fn checksum_off_leaves_zero() {
        let frame = build(&header(), b"x", false);
        assert_eq!(frame[ETH_LEN + IP_LEN + 6..ETH_LEN + IP_LEN + 8], [0, 0]);
        assert!(parse(&frame).is_some());
    }

    #[test]
    fn parse_rejects_what_quark_must_not_take() {
        let good = build(&header(), b"payload", true);
        assert!(parse(&good).is_some());
        let mutate = |f: &dyn Fn(&mut Vec<u8>)| {
            let mut frame = good.clone();
            f(&mut frame);
            parse(&frame)
        };
        // Not IPv4; IPv6 version; bad IP checksum; TCP; a fragment; truncated.
        assert_eq!(mutate(&|f| f[12] = 0x86), None);
        assert_eq!(mutate(&|f| f[14] = 0x65), None);
        assert_eq!(mutate(&|f| f[24] ^= 1), None);
        assert_eq!(mutate(&|f| f[23] = 6), None);
        assert_eq!(mutate(&|f| f[20] |= 0x20), None);
        assert_eq!(mutate(&|f| f.truncate(HEADERS - 1)), None);
        assert_eq!(mutate(&|f| f.truncate(HEADERS + 3)), None);
        // A UDP length beyond the IP datagram, or below the UDP header.
        assert_eq!(mutate(&|f| f[39] = 0xff), None);
        assert_eq!(mutate(&|f| f[39] = 7), None);
        for len in 0..HEADERS {
            assert_eq!(parse(&good[..len]), None);
        }
    }

    #[test]
    fn parse_skips_options_and_padding() {
        // An IP header with one word of options (NOPs), and Ethernet padding.
        let plain = build(&header(), b"abc", true);
        let mut frame = plain[..ETH_LEN + IP_LEN].to_vec();
        frame.extend_from_slice(&[1, 1, 1, 1]);
        frame.extend_from_slice(&plain[ETH_LEN + IP_LEN..]);
        frame[ETH_LEN] = 0x46;
        frame[ETH_LEN + 3] += 4;
        frame[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&[0, 0]);
        let sum = reference_sum(&frame[ETH_LEN..ETH_LEN + 24]);
        frame[ETH_LEN + 10..ETH_LEN + 12].copy_from_slice(&sum.to_be_bytes());
        frame.resize(64, 0);
        let p = parse(&frame).unwrap();
        assert_eq!(&frame[p.payload], b"abc");
    }

    proptest! {
        #[test]
        fn round_trip(
            payload in proptest::collection::vec(any::<u8>(), 0..1500),
            src in any::<[u8; 4]>(), dst in any::<[u8; 4]>(),
            sport in any::<u16>(), dport in any::<u16>(), ecn in 0u8..4,
            csum in any::<bool>(),
        ) {
            let h = Header {
                src: SocketAddrV4::new(src.into(), sport),
                dst: SocketAddrV4::new(dst.into(), dport),
                ecn,
                ..header()
            };
            let frame = build(&h, &payload, csum);
            let p = parse(&frame).unwrap();
            prop_assert_eq!(p.src, h.src);
            prop_assert_eq!(p.dst, h.dst);
            prop_assert_eq!(p.ecn, ecn);
            prop_assert_eq!(p.src_mac, A);
            prop_assert_eq!(&frame[p.payload], &payload[..]);
            prop_assert_eq!(reference_sum(&frame[ETH_LEN..ETH_LEN + IP_LEN]), 0);
        }

        #[test]
        fn parse_never_panics(frame in proptest::collection::vec(any::<u8>(), 0..120)) {
            let _ = parse(&frame);
        }
    }
}
