use std::io::IoSlice;

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use super::super::tests::{gso_frame, ip_packet, payload, tcp_header, udp_header, valid, wire};
use super::super::{DATA_VALID, GSO_NONE, TCP, UDP, VnetHeader, to_wire};
use super::*;

/// What `coalesce` writes: each frame as one buffer (header and packet).
fn frames(packets: &[Vec<u8>], verify: bool) -> Vec<(VnetHeader, Vec<u8>)> {
    let mut out = Vec::new();
    coalesce(packets, verify, |parts: &[IoSlice<'_>]| {
        let bytes: Vec<u8> = parts.iter().flat_map(|p| p.iter().copied()).collect();
        let (h, p) = VnetHeader::split(&bytes).unwrap();
        out.push((h, p.to_vec()));
    });
    out
}

/// Cuts frames back into wire packets, as the receiving kernel's GSO would.
fn recut(frames: &[(VnetHeader, Vec<u8>)]) -> Vec<Vec<u8>> {
    frames.iter().flat_map(|(h, p)| wire(h, p)).collect()
}

fn tcp_segments(len: usize, mss: u16, seed: u64) -> Vec<Vec<u8>> {
    let mut l4 = tcp_header(1000, 0x10 | TCP_PSH);
    l4.extend_from_slice(&payload(len, seed));
    let (h, p) = gso_frame(false, TCP, l4, mss);
    wire(&h, &p)
}

#[test]
fn segments_of_a_tcp_burst_become_one_super_packet_again() {
    let segs = tcp_segments(20_000, 1448, 1);
    assert_eq!(segs.len(), 14);
    let out = frames(&segs, true);
    assert_eq!(out.len(), 1);
    let (h, p) = &out[0];
    assert_eq!(
        (h.flags, h.gso_type, h.gso_size),
        (NEEDS_CSUM, GSO_TCPV4, 1448)
    );
    assert_eq!((h.csum_start, h.csum_offset, h.hdr_len), (20, 16, 40));
    assert_eq!(p.len(), 40 + 20_000);
    assert_eq!(usize::from(u16::from_be_bytes([p[2], p[3]])), p.len());
    assert_eq!(p[33] & TCP_PSH, TCP_PSH, "the last segment's PSH");
    // Cut again, it gives back exactly the segments.
    assert!(recut(&out) == segs, "cut again, the segments differ");
}

#[test]
fn udp_datagrams_join_until_a_short_one_or_another_flow() {
    let mut packets = Vec::new();
    for (port, sizes) in [
        (4433u16, &[1200, 1200, 1200, 700, 1200][..]),
        (4434, &[1200, 1200][..]),
    ] {
        for (i, &n) in sizes.iter().enumerate() {
            let mut l4 = udp_header();
            l4[0..2].copy_from_slice(&port.to_be_bytes());
            l4.extend_from_slice(&payload(n, i as u64));
            // One datagram each, IP IDs counting up as a sender's would.
            let (h, mut p) = gso_frame(false, UDP, l4, n as u16);
            p[4..6].copy_from_slice(&(0x1234 + i as u16).to_be_bytes());
            packets.extend(wire(&h, &p));
        }
    }
    let out = frames(&packets, true);
    let shape: Vec<(u8, u16, usize)> = out
        .iter()
        .map(|(h, p)| (h.gso_type, h.gso_size, p.len()))
        .collect();
    assert_eq!(
        shape,
        [
            (GSO_UDP_L4, 1200, 28 + 3 * 1200 + 700), // the short one ends a run
            (GSO_NONE, 0, 28 + 1200),                // a run of one goes as it is
            (GSO_UDP_L4, 1200, 28 + 2 * 1200),       // another port, another run
        ]
    );
    assert_eq!(out[1].0.flags, DATA_VALID);
    let p = &out[0].1;
    assert_eq!(
        usize::from(u16::from_be_bytes([p[24], p[25]])),
        p.len() - 20
    );
    assert!(recut(&out) == packets, "cut again, the datagrams differ");
}

#[test]
fn a_gap_a_corrupted_segment_or_another_protocol_ends_a_run() {
    let mut segs = tcp_segments(10 * 1000, 1000, 2);
    segs.remove(3); // lost
    segs[6][100] ^= 1; // corrupted
    segs.insert(8, ip_packet(false, 1, &[8, 0, 0, 0])); // ICMP
    let out = frames(&segs, true);
    let shape: Vec<(u8, u8, usize)> = out
        .iter()
        .map(|(h, p)| (h.flags, h.gso_type, p.len()))
        .collect();
    assert_eq!(
        shape,
        [
            (NEEDS_CSUM, GSO_TCPV4, 40 + 3000),
            (NEEDS_CSUM, GSO_TCPV4, 40 + 3000),
            (0, GSO_NONE, 40 + 1000), // for the kernel to check and drop
            (DATA_VALID, GSO_NONE, 40 + 1000),
            (0, GSO_NONE, 24),
            (DATA_VALID, GSO_NONE, 40 + 1000),
        ]
    );
    assert!(!valid(&out[2].1));
    // Not verifying (nothing corrupts), the corrupted one would have joined.
    assert_eq!(frames(&segs, false).len(), 4);
}

#[test]
fn runs_stop_at_64_segments_and_64_kb() {
    let small = tcp_segments(100 * 100, 100, 3);
    let lens: Vec<usize> = frames(&small, false).iter().map(|(_, p)| p.len()).collect();
    assert_eq!(lens, [40 + 64 * 100, 40 + 36 * 100]);
    let big = tcp_segments(100 * 1448, 1448, 4);
    for (_, p) in frames(&big, false) {
        assert!(p.len() <= MAX_TOTAL, "{}", p.len());
    }
    assert!(
        recut(&frames(&big, false)) == big,
        "cut again, the segments differ"
    );
}

#[test]
fn random_packets_never_panic() {
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let base = tcp_segments(5000, 500, 6);
    for _ in 0..5_000 {
        let mut packets = base.clone();
        for _ in 0..rng.random_range(1..4) {
            let i = rng.random_range(0..packets.len());
            let p = &mut packets[i];
            match rng.random_range(0..3) {
                0 => p.truncate(rng.random_range(0..p.len())),
                1 => {
                    let j = rng.random_range(0..p.len());
                    p[j] = rng.random();
                }
                _ => p.extend((0..rng.random_range(0..50)).map(|_| rng.random::<u8>())),
            }
        }
        let verify = rng.random();
        for (h, p) in frames(&packets, verify) {
            let _ = to_wire(&h, &p, |_| ());
        }
    }
}
