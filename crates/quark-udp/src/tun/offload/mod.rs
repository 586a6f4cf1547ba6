//! What a NIC's offloads do, done in software for `quark link`'s TUN devices.
//!
//! A real sender hands its NIC 64 KB TCP (TSO) or UDP (USO) super-packets with
//! the checksum left to the hardware; the NIC cuts them into wire-sized
//! segments. A TUN device opened with `IFF_VNET_HDR` and offloads switched on
//! hands user space exactly those frames, each behind a `virtio_net_hdr`
//! ([`VnetHeader`]). [`to_wire`] plays the NIC: it completes checksums and cuts
//! super-packets into the segments the emulated link then delays, drops or
//! reorders one by one. On the way back in, [`coalesce`] plays the receiving
//! NIC: it checks checksums (so the kernel need not, and drops what the link
//! corrupted) and, like GRO, hands runs of consecutive segments of one flow to
//! the kernel as one super-packet. Without this, the kernel segments every
//! batch in software before the TUN device, receivers take packets one by one,
//! and the emulated path charges every stack for work real NICs do.

use thiserror::Error;

use crate::checksum::{add, finish, fold};

/// Bytes of a `virtio_net_hdr` (the TUN default, without `num_buffers`).
pub const VNET_HDR_LEN: usize = 10;

/// `VIRTIO_NET_HDR_F_NEEDS_CSUM`: the checksum is left to the NIC.
const NEEDS_CSUM: u8 = 1;
/// `VIRTIO_NET_HDR_F_DATA_VALID`: the NIC verified the checksum.
const DATA_VALID: u8 = 2;
const GSO_NONE: u8 = 0;
const GSO_TCPV4: u8 = 1;
const GSO_TCPV6: u8 = 4;
const GSO_UDP_L4: u8 = 5;
/// Set on top of a TCP GSO type when the super-packet carries CWR.
const GSO_ECN: u8 = 0x80;

const TCP: u8 = 6;
const UDP: u8 = 17;
const TCP_FIN: u8 = 0x01;
const TCP_PSH: u8 = 0x08;
const TCP_CWR: u8 = 0x80;

/// A `virtio_net_hdr`, as a TUN device with `IFF_VNET_HDR` reads and writes
/// it (little-endian, as on every host quark builds for).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VnetHeader {
    /// `NEEDS_CSUM` (1), `DATA_VALID` (2).
    pub flags: u8,
    /// `GSO_NONE`, `GSO_TCPV4`, `GSO_TCPV6`, `GSO_UDP_L4`, maybe `| GSO_ECN`.
    pub gso_type: u8,
    /// Length of the headers (a hint).
    pub hdr_len: u16,
    /// Payload bytes per segment.
    pub gso_size: u16,
    /// Where checksumming starts: the transport header.
    pub csum_start: u16,
    /// Where, from `csum_start`, the checksum goes.
    pub csum_offset: u16,
}

impl VnetHeader {
    /// Splits a frame read from the device into its header and IP packet.
    pub fn split(frame: &[u8]) -> Result<(VnetHeader, &[u8]), OffloadError> {
        let (h, packet) = frame
            .split_at_checked(VNET_HDR_LEN)
            .ok_or(OffloadError::Truncated)?;
        let u16_at = |i: usize| u16::from_le_bytes([h[i], h[i + 1]]);
        let hdr = VnetHeader {
            flags: h[0],
            gso_type: h[1],
            hdr_len: u16_at(2),
            gso_size: u16_at(4),
            csum_start: u16_at(6),
            csum_offset: u16_at(8),
        };
        Ok((hdr, packet))
    }

    /// The header's bytes.
    pub fn encode(&self) -> [u8; VNET_HDR_LEN] {
        let mut b = [0u8; VNET_HDR_LEN];
        b[0] = self.flags;
        b[1] = self.gso_type;
        for (i, v) in [
            self.hdr_len,
            self.gso_size,
            self.csum_start,
            self.csum_offset,
        ]
        .into_iter()
        .enumerate()
        {
            b[2 + 2 * i..4 + 2 * i].copy_from_slice(&v.to_le_bytes());
        }
        b
    }
}

/// Why a frame could not be put on the wire.
#[derive(Debug, Error, PartialEq, Eq)]
pub enum OffloadError {
    /// Shorter than the headers it claims.
    #[error("truncated frame")]
    Truncated,
    /// Neither IPv4 nor IPv6, or a transport header where none fits.
    #[error("malformed IP packet")]
    Malformed,
    /// A segmentation offload this emulator does not do (UFO, SCTP, ...).
    #[error("unsupported GSO type {0}")]
    UnsupportedGso(u8),
}

/// Puts one frame the kernel handed the device on the wire, as a NIC would:
/// `out` gets each resulting IP packet with a complete checksum, the segments
/// of a super-packet in order.
pub fn to_wire(
    hdr: &VnetHeader,
    packet: &[u8],
    mut out: impl FnMut(Vec<u8>),
) -> Result<(), OffloadError> {
    let ip = Ip::parse(packet)?;
    let proto = match hdr.gso_type & !GSO_ECN {
        GSO_NONE => {
            let mut p = packet.to_vec();
            if hdr.flags & NEEDS_CSUM != 0 {
                complete_checksum(&mut p, hdr)?;
            }
            out(p);
            return Ok(());
        }
        GSO_TCPV4 | GSO_TCPV6 => TCP,
        GSO_UDP_L4 => UDP,
        other => return Err(OffloadError::UnsupportedGso(other)),
    };
    // With NEEDS_CSUM the kernel says where the transport header is (past any
    // IPv6 extension headers); a GSO frame always has it.
    let l4 = if hdr.flags & NEEDS_CSUM != 0 {
        usize::from(hdr.csum_start)
    } else {
        ip.header_len
    };
    let l4_len = match proto {
        TCP => usize::from(packet.get(l4 + 12).ok_or(OffloadError::Truncated)? >> 4) * 4,
        _ => 8,
    };
    if l4 < ip.header_len || (proto == TCP && l4_len < 20) {
        return Err(OffloadError::Malformed);
    }
    let headers = l4 + l4_len;
    let payload = packet.get(headers..).ok_or(OffloadError::Truncated)?;
    let mss = usize::from(hdr.gso_size).max(1);
    let count = payload.len().div_ceil(mss).max(1);
    for i in 0..count {
        let chunk = &payload[(i * mss).min(payload.len())..((i + 1) * mss).min(payload.len())];
        let mut seg = Vec::with_capacity(headers + chunk.len());
        seg.extend_from_slice(&packet[..headers]);
        seg.extend_from_slice(chunk);
        ip.set_lengths(&mut seg, i as u16);
        let last = i + 1 == count;
        if proto == TCP {
            let seq = u32::from_be_bytes(packet[l4 + 4..l4 + 8].try_into().unwrap());
            let seq = seq.wrapping_add((i * mss) as u32);
            seg[l4 + 4..l4 + 8].copy_from_slice(&seq.to_be_bytes());
            if i > 0 {
                seg[l4 + 13] &= !TCP_CWR;
            }
            if !last {
                seg[l4 + 13] &= !(TCP_FIN | TCP_PSH);
            }
        } else {
            let len = (seg.len() - l4) as u16;
            seg[l4 + 4..l4 + 6].copy_from_slice(&len.to_be_bytes());
        }
        let at = l4 + if proto == TCP { 16 } else { 6 };
        seg[at..at + 2].fill(0);
        let c = finish(ip.pseudo_sum(&seg, proto, seg.len() - l4) + add(0, &seg[l4..]));
        seg[at..at + 2].copy_from_slice(&mangle(c).to_be_bytes());
        out(seg);
    }
    Ok(())
}

/// The header to write a packet the link delivers with: `DATA_VALID` when
/// its TCP or UDP checksum is right (what a receiving NIC reports), so the
/// kernel skips verifying it; otherwise none, so the kernel checks and drops
/// a corrupted packet. `verify: false` trusts the packet (it left [`to_wire`]
/// with a good checksum and the link corrupts nothing).
pub fn received_header(packet: &[u8], verify: bool) -> VnetHeader {
    let valid = match Ip::parse(packet) {
        Ok(ip) if ip.proto == TCP || ip.proto == UDP => !verify || ip.checksum_ok(packet),
        _ => false,
    };
    VnetHeader {
        flags: if valid { DATA_VALID } else { 0 },
        ..VnetHeader::default()
    }
}

/// The IP header of a packet: where the transport header starts and what it is.
struct Ip {
    v6: bool,
    header_len: usize,
    proto: u8,
    /// Fragments are left for the kernel to check (they carry no whole
    /// transport header).
    fragment: bool,
}

impl Ip {
    fn parse(p: &[u8]) -> Result<Ip, OffloadError> {
        match p.first().map(|b| b >> 4) {
            Some(4) if p.len() >= 20 => {
                let header_len = usize::from(p[0] & 0x0f) * 4;
                if header_len < 20 || p.len() < header_len {
                    return Err(OffloadError::Malformed);
                }
                let frag = u16::from_be_bytes([p[6], p[7]]);
                Ok(Ip {
                    v6: false,
                    header_len,
                    proto: p[9],
                    fragment: frag & 0x3fff != 0,
                })
            }
            Some(6) if p.len() >= 40 => Ok(Ip {
                v6: true,
                header_len: 40,
                proto: p[6],
                fragment: false,
            }),
            _ => Err(OffloadError::Malformed),
        }
    }

    /// Segment `i` of a super-packet: its length fields and (IPv4) its ID and
    /// header checksum, as the kernel's own GSO sets them.
    fn set_lengths(&self, seg: &mut [u8], i: u16) {
        if self.v6 {
            let len = (seg.len() - 40) as u16;
            seg[4..6].copy_from_slice(&len.to_be_bytes());
            return;
        }
        let len = seg.len() as u16;
        seg[2..4].copy_from_slice(&len.to_be_bytes());
        let id = u16::from_be_bytes([seg[4], seg[5]]).wrapping_add(i);
        seg[4..6].copy_from_slice(&id.to_be_bytes());
        seg[10..12].fill(0);
        let c = finish(add(0, &seg[..self.header_len]));
        seg[10..12].copy_from_slice(&c.to_be_bytes());
    }

    /// The pseudo-header's sum (RFC 9293 §3.1, RFC 8200 §8.1), unfolded.
    fn pseudo_sum(&self, p: &[u8], proto: u8, l4_len: usize) -> u64 {
        let addrs = if self.v6 { &p[8..40] } else { &p[12..20] };
        add(0, addrs) + u64::from(proto) + l4_len as u64
    }

    fn checksum_ok(&self, p: &[u8]) -> bool {
        if self.fragment {
            return false;
        }
        let l4 = &p[self.header_len..];
        if self.proto == UDP && !self.v6 && l4.len() >= 8 && l4[6..8] == [0, 0] {
            return true; // IPv4 UDP without a checksum
        }
        let min = if self.proto == TCP { 20 } else { 8 };
        l4.len() >= min && fold(self.pseudo_sum(p, self.proto, l4.len()) + add(0, l4)) == 0xffff
    }
}

/// A frame with `NEEDS_CSUM` and no segmentation: the kernel put the
/// pseudo-header's sum in the checksum field; sum from `csum_start` to the end
/// and store the complement there.
fn complete_checksum(p: &mut [u8], hdr: &VnetHeader) -> Result<(), OffloadError> {
    let start = usize::from(hdr.csum_start);
    let at = start + usize::from(hdr.csum_offset);
    if at + 2 > p.len() {
        return Err(OffloadError::Truncated);
    }
    let c = mangle(finish(add(0, &p[start..])));
    p[at..at + 2].copy_from_slice(&c.to_be_bytes());
    Ok(())
}

/// A computed checksum of 0 is sent as 0xffff (UDP reserves 0 for "none").
fn mangle(c: u16) -> u16 {
    if c == 0 { 0xffff } else { c }
}

mod gro;

pub use gro::coalesce;

#[cfg(test)]
mod tests;
