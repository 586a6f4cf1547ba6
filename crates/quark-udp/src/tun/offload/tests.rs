use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::*;

pub(super) fn payload(len: usize, seed: u64) -> Vec<u8> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    (0..len).map(|_| rng.random()).collect()
}

/// An IPv4 or IPv6 packet around `l4` (a transport header and payload).
pub(super) fn ip_packet(v6: bool, proto: u8, l4: &[u8]) -> Vec<u8> {
    let mut p = if v6 {
        let mut h = vec![0x60, 0, 0, 0, 0, 0, proto, 64];
        h[4..6].copy_from_slice(&(l4.len() as u16).to_be_bytes());
        h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        h.extend_from_slice(&[0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
        h
    } else {
        let mut h = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, proto, 0, 0];
        h[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
        h.extend_from_slice(&[10, 77, 0, 1, 10, 77, 0, 2]);
        h
    };
    p.extend_from_slice(l4);
    p
}

pub(super) fn tcp_header(seq: u32, flags: u8) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    h[0..2].copy_from_slice(&443u16.to_be_bytes());
    h[2..4].copy_from_slice(&50000u16.to_be_bytes());
    h[4..8].copy_from_slice(&seq.to_be_bytes());
    h[12] = 5 << 4;
    h[13] = flags;
    h
}

pub(super) fn udp_header() -> Vec<u8> {
    let mut h = vec![0u8; 8];
    h[0..2].copy_from_slice(&4433u16.to_be_bytes());
    h[2..4].copy_from_slice(&50000u16.to_be_bytes());
    h
}

/// A GSO frame as the kernel hands it over: NEEDS_CSUM, the transport
/// header's checksum field holding the pseudo-header's sum.
pub(super) fn gso_frame(v6: bool, proto: u8, l4: Vec<u8>, mss: u16) -> (VnetHeader, Vec<u8>) {
    let mut p = ip_packet(v6, proto, &l4);
    let start = if v6 { 40 } else { 20 };
    let off = if proto == TCP { 16 } else { 6 };
    let ip = Ip::parse(&p).unwrap();
    let partial = fold(ip.pseudo_sum(&p, proto, l4.len()));
    p[start + off..start + off + 2].copy_from_slice(&partial.to_be_bytes());
    let gso_type = match (proto, v6) {
        (UDP, _) => GSO_UDP_L4,
        (_, false) => GSO_TCPV4,
        (_, true) => GSO_TCPV6,
    };
    let hdr = VnetHeader {
        flags: NEEDS_CSUM,
        gso_type,
        hdr_len: (start + if proto == TCP { 20 } else { 8 }) as u16,
        gso_size: mss,
        csum_start: start as u16,
        csum_offset: off as u16,
    };
    (hdr, p)
}

pub(super) fn wire(hdr: &VnetHeader, p: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    to_wire(hdr, p, |s| out.push(s)).unwrap();
    out
}

pub(super) fn valid(p: &[u8]) -> bool {
    received_header(p, true).flags == DATA_VALID
}

#[test]
fn header_round_trips() {
    let h = VnetHeader {
        flags: 1,
        gso_type: GSO_UDP_L4,
        hdr_len: 28,
        gso_size: 1452,
        csum_start: 20,
        csum_offset: 6,
    };
    let mut frame = h.encode().to_vec();
    frame.extend_from_slice(b"packet");
    assert_eq!(VnetHeader::split(&frame), Ok((h, &b"packet"[..])));
    assert_eq!(VnetHeader::split(&frame[..9]), Err(OffloadError::Truncated));
}

#[test]
fn tcp_super_packet_becomes_segments_with_checksums_sequence_and_flags() {
    let data = payload(10_000, 1);
    let mut l4 = tcp_header(0xffff_f000, TCP_CWR | TCP_PSH | TCP_FIN | 0x10);
    l4.extend_from_slice(&data);
    let (hdr, p) = gso_frame(false, TCP, l4, 1448);
    let segs = wire(&hdr, &p);
    assert_eq!(segs.len(), 7); // 6 × 1448 + 1312
    let mut joined = Vec::new();
    for (i, s) in segs.iter().enumerate() {
        assert!(valid(s), "segment {i}: bad TCP checksum");
        assert_eq!(
            fold(add(0, &s[..20])),
            0xffff,
            "segment {i}: bad IP checksum"
        );
        assert_eq!(usize::from(u16::from_be_bytes([s[2], s[3]])), s.len());
        assert_eq!(u16::from_be_bytes([s[4], s[5]]), 0x1234 + i as u16);
        let seq = u32::from_be_bytes(s[24..28].try_into().unwrap());
        assert_eq!(seq, 0xffff_f000u32.wrapping_add(1448 * i as u32));
        let flags = s[33];
        assert_eq!(flags & TCP_CWR != 0, i == 0, "CWR only on the first");
        assert_eq!(
            flags & (TCP_FIN | TCP_PSH) != 0,
            i == 6,
            "FIN, PSH only on the last"
        );
        assert!(flags & 0x10 != 0, "ACK on every segment");
        joined.extend_from_slice(&s[40..]);
    }
    assert_eq!(joined, data);
}

#[test]
fn udp_super_packet_over_ipv6_becomes_datagrams() {
    let data = payload(5 * 1200 + 17, 2);
    let mut l4 = udp_header();
    l4.extend_from_slice(&data);
    let (hdr, p) = gso_frame(true, UDP, l4, 1200);
    let segs = wire(&hdr, &p);
    assert_eq!(segs.len(), 6);
    for (i, s) in segs.iter().enumerate() {
        let want = if i < 5 { 1200 } else { 17 };
        assert_eq!(s.len(), 40 + 8 + want);
        assert_eq!(usize::from(u16::from_be_bytes([s[4], s[5]])), 8 + want);
        assert_eq!(usize::from(u16::from_be_bytes([s[44], s[45]])), 8 + want);
        assert!(valid(s), "segment {i}: bad UDP checksum");
        assert_eq!(&s[48..], &data[i * 1200..i * 1200 + want]);
    }
}

#[test]
fn a_small_frame_gets_its_checksum_completed_and_a_whole_one_passes() {
    let mut l4 = udp_header();
    l4.extend_from_slice(&payload(333, 3));
    let (mut hdr, p) = gso_frame(false, UDP, l4, 0);
    hdr.gso_type = GSO_NONE;
    let segs = wire(&hdr, &p);
    assert_eq!(segs.len(), 1);
    assert!(valid(&segs[0]));
    assert_eq!(segs[0][..26], p[..26], "only the checksum changes");
    // Already complete (no NEEDS_CSUM): untouched.
    assert_eq!(wire(&VnetHeader::default(), &segs[0]), segs);
}

#[test]
fn a_corrupted_packet_is_not_marked_valid() {
    let mut l4 = tcp_header(7, 0x10);
    l4.extend_from_slice(&payload(1000, 4));
    let (hdr, p) = gso_frame(false, TCP, l4, 1448);
    let mut seg = wire(&hdr, &p).remove(0);
    assert!(valid(&seg));
    seg[500] ^= 0x40;
    assert!(!valid(&seg));
    // Trusted (nothing on the link corrupts), and never for other protocols.
    assert_eq!(received_header(&seg, false).flags, DATA_VALID);
    assert_eq!(
        received_header(&ip_packet(false, 1, &[8, 0, 0, 0]), false).flags,
        0
    );
}

#[test]
fn bad_frames_are_errors_not_panics() {
    let (hdr, p) = gso_frame(false, TCP, tcp_header(1, 0x10), 1000);
    assert_eq!(
        to_wire(&hdr, &p[..10], |_| ()),
        Err(OffloadError::Malformed)
    );
    assert_eq!(
        to_wire(&hdr, &p[..30], |_| ()),
        Err(OffloadError::Truncated)
    );
    let ufo = VnetHeader { gso_type: 3, ..hdr };
    assert_eq!(
        to_wire(&ufo, &p, |_| ()),
        Err(OffloadError::UnsupportedGso(3))
    );
    let past = VnetHeader {
        csum_start: 60_000,
        ..hdr
    };
    assert!(to_wire(&past, &p, |_| ()).is_err());
    let small = VnetHeader {
        gso_type: GSO_NONE,
        csum_offset: 60_000,
        ..hdr
    };
    assert_eq!(to_wire(&small, &p, |_| ()), Err(OffloadError::Truncated));
    // Random frames with random headers: any outcome but a panic.
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    for _ in 0..20_000 {
        let len = rng.random_range(0..200);
        let mut f: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        if let Some(b) = f.get_mut(VNET_HDR_LEN) {
            *b = if rng.random() { 0x45 } else { 0x60 };
        }
        if let Ok((h, p)) = VnetHeader::split(&f) {
            let h = VnetHeader {
                gso_size: h.gso_size % 64,
                ..h
            };
            let _ = to_wire(&h, p, |s| assert!(!s.is_empty()));
            let _ = received_header(p, true);
        }
    }
}
