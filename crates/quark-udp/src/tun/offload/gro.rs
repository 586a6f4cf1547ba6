//! The receiving NIC's half: checksum checks and GRO.

use std::io::IoSlice;

use super::{
    DATA_VALID, GSO_TCPV4, GSO_TCPV6, GSO_UDP_L4, Ip, NEEDS_CSUM, TCP, TCP_PSH, UDP, VnetHeader,
    fold, received_header,
};
use crate::checksum::{add, finish};

/// At most this many segments in one super-packet, and at most 64 KB in all:
/// the limits of the kernel's own GRO (and of receivers' 64 KB buffers).
const MAX_SEGMENTS: usize = 64;
const MAX_TOTAL: usize = 65_535;
const TCP_ACK: u8 = 0x10;

/// Hands `packets` (in delivery order) to `write` as a receiving NIC with GRO
/// would: each run of consecutive full-sized segments of one TCP or UDP flow
/// (the last may be shorter) becomes one frame, a `virtio_net_hdr` asking
/// for GSO and the run's headers followed by every payload; anything else goes
/// alone. Frames are given as slices for one `writev`, so no payload is
/// copied. `verify` checks each packet's checksum first (the link corrupts):
/// a bad one goes alone and unmarked, for the kernel to drop.
pub fn coalesce(packets: &[Vec<u8>], verify: bool, mut write: impl FnMut(&[IoSlice<'_>])) {
    // Each packet parsed (and its checksum checked) once, though it is looked
    // at both as the next of one run and as the first of the next.
    let segments: Vec<Option<Segment>> =
        packets.iter().map(|p| Segment::parse(p, verify)).collect();
    let mut i = 0;
    while i < packets.len() {
        let first = &packets[i];
        let Some(f) = segments[i] else {
            let hdr = received_header(first, verify).encode();
            write(&[IoSlice::new(&hdr), IoSlice::new(first)]);
            i += 1;
            continue;
        };
        let mut end = i + 1;
        let (mut prev, mut total) = (f, f.payload);
        while end < packets.len() && end - i < MAX_SEGMENTS {
            let next = &packets[end];
            match segments[end] {
                Some(n)
                    if f.joins(first, &prev, next, &n) && f.l4 + total + n.payload <= MAX_TOTAL =>
                {
                    total += n.payload;
                    prev = n;
                    end += 1;
                }
                _ => break,
            }
        }
        if end == i + 1 {
            let hdr = VnetHeader {
                flags: DATA_VALID,
                ..VnetHeader::default()
            };
            write(&[IoSlice::new(&hdr.encode()), IoSlice::new(first)]);
        } else {
            let (hdr, head) = f.super_header(first, total, prev.flags);
            let hdr = hdr.encode();
            let mut parts = Vec::with_capacity(2 + end - i);
            parts.push(IoSlice::new(&hdr));
            parts.push(IoSlice::new(&head));
            parts.extend(packets[i..end].iter().map(|p| IoSlice::new(&p[f.l4..])));
            write(&parts);
        }
        i = end;
    }
}

/// A TCP or UDP packet that may join a super-packet.
#[derive(Clone, Copy)]
struct Segment {
    v6: bool,
    proto: u8,
    /// Where the transport header starts, and the payload.
    l3: usize,
    l4: usize,
    payload: usize,
    seq: u32,
    flags: u8,
}

impl Segment {
    /// `None` for what GRO leaves alone: other protocols, IPv4 options or
    /// fragments, IPv6 extension headers, empty payloads, bad checksums.
    fn parse(p: &[u8], verify: bool) -> Option<Segment> {
        let ip = Ip::parse(p).ok()?;
        if ip.fragment || (!ip.v6 && ip.header_len != 20) || (verify && !ip.checksum_ok(p)) {
            return None;
        }
        let l3 = ip.header_len;
        let (l4, seq, flags) = match ip.proto {
            UDP => (l3 + 8, 0, 0),
            TCP => {
                let t = p.get(l3..l3 + 20)?;
                let l4 = l3 + usize::from(t[12] >> 4) * 4;
                (l4, u32::from_be_bytes([t[4], t[5], t[6], t[7]]), t[13])
            }
            _ => return None,
        };
        let payload = p.len().checked_sub(l4).filter(|&n| n > 0)?;
        Some(Segment {
            v6: ip.v6,
            proto: ip.proto,
            l3,
            l4,
            payload,
            seq,
            flags,
        })
    }

    /// Whether `next` (parsed as `n`) continues the run that `first` (this
    /// segment) started and `prev` last joined.
    fn joins(&self, first: &[u8], prev: &Segment, next: &[u8], n: &Segment) -> bool {
        // Same shape first: then `next` is as long as `first`'s headers.
        if (n.v6, n.proto, n.l4) != (self.v6, self.proto, self.l4) {
            return false;
        }
        let same_ip = if self.v6 {
            next[..4] == first[..4] && next[6..40] == first[6..40]
        } else {
            next[1] == first[1] && next[6..10] == first[6..10] && next[12..20] == first[12..20]
        };
        let l3 = self.l3;
        let fits = same_ip
            && prev.payload == self.payload
            && n.payload <= self.payload
            && next[l3..l3 + 4] == first[l3..l3 + 4];
        if !fits || self.proto == UDP {
            return fits;
        }
        // TCP: in sequence, pure ACKs with the same acknowledgement, window
        // and options; a PSH ends the run.
        prev.flags == TCP_ACK
            && n.flags & !TCP_PSH == TCP_ACK
            && n.seq == prev.seq.wrapping_add(prev.payload as u32)
            && next[l3 + 8..l3 + 12] == first[l3 + 8..l3 + 12]
            && next[l3 + 14..l3 + 16] == first[l3 + 14..l3 + 16]
            && next[l3 + 20..self.l4] == first[l3 + 20..self.l4]
    }

    /// The header and headers of a super-packet of `total` payload bytes
    /// whose first segment is `first` and last carried TCP flags `last_flags`:
    /// lengths for the whole, the checksum left to the receiver
    /// (`NEEDS_CSUM`, the pseudo-header's sum in the field, as GSO does).
    fn super_header(&self, first: &[u8], total: usize, last_flags: u8) -> (VnetHeader, Vec<u8>) {
        let mut head = first[..self.l4].to_vec();
        let l3 = self.l3;
        let l4_len = self.l4 - l3 + total;
        if self.v6 {
            head[4..6].copy_from_slice(&(l4_len as u16).to_be_bytes());
        } else {
            head[2..4].copy_from_slice(&((l3 + l4_len) as u16).to_be_bytes());
            head[10..12].fill(0);
            let c = finish(add(0, &head[..l3]));
            head[10..12].copy_from_slice(&c.to_be_bytes());
        }
        let ip = Ip {
            v6: self.v6,
            header_len: l3,
            proto: self.proto,
            fragment: false,
        };
        let (gso_type, at) = match (self.proto, self.v6) {
            (UDP, _) => {
                head[l3 + 4..l3 + 6].copy_from_slice(&(l4_len as u16).to_be_bytes());
                (GSO_UDP_L4, 6)
            }
            (_, v6) => {
                head[l3 + 13] = last_flags;
                (if v6 { GSO_TCPV6 } else { GSO_TCPV4 }, 16)
            }
        };
        let partial = fold(ip.pseudo_sum(&head, self.proto, l4_len));
        head[l3 + at..l3 + at + 2].copy_from_slice(&partial.to_be_bytes());
        let hdr = VnetHeader {
            flags: NEEDS_CSUM,
            gso_type,
            hdr_len: self.l4 as u16,
            gso_size: self.payload as u16,
            csum_start: l3 as u16,
            csum_offset: at as u16,
        };
        (hdr, head)
    }
}

#[cfg(test)]
#[path = "gro_tests.rs"]
mod tests;
