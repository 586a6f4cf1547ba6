//! The XDP program, assembled by hand (no compiler or libbpf needed): IPv4 UDP
//! datagrams to quark's address and port go to the AF_XDP socket of the queue they
//! arrived on; everything else (ARP, ICMP, other ports, fragments, IP options)
//! goes on to the kernel's stack.
//!
//! ```text
//!  0  r6 = r1                          ; struct xdp_md *ctx
//!  1  r2 = *(u32 *)(r6 + 0)            ; ctx->data
//!  2  r3 = *(u32 *)(r6 + 4)            ; ctx->data_end
//!  3  r4 = r2
//!  4  r4 += 42                         ; Ethernet 14 + IPv4 20 + UDP 8
//!  5  if r4 > r3 goto pass
//!  6  r5 = *(u16 *)(r2 + 12)           ; EtherType
//!  7  if w5 != 0x0800 (as read) goto pass
//!  8  r5 = *(u8 *)(r2 + 14)            ; version 4, IHL 5 (no options)
//!  9  if w5 != 0x45 goto pass
//! 10  r5 = *(u8 *)(r2 + 23)            ; protocol
//! 11  if w5 != 17 goto pass
//! 12  r5 = *(u16 *)(r2 + 20)           ; flags and fragment offset
//! 13  w5 &= MF | offset (as read)
//! 14  if w5 != 0 goto pass             ; no fragments
//! 15  r5 = *(u32 *)(r2 + 30)           ; destination address
//! 16  if w5 != ADDR goto pass          ; (left out for an unspecified address)
//! 17  r5 = *(u16 *)(r2 + 36)           ; destination port
//! 18  if w5 != PORT goto pass
//! 19  r4 = r2
//! 20  r4 += MAX                        ; longest frame a UMEM frame takes
//! 21  if r3 > r4 goto pass             ; (a GSO batch crossing veth whole)
//! 22  r2 = *(u32 *)(r6 + 16)           ; ctx->rx_queue_index
//! 23  r1 = map (2 slots)
//! 25  r3 = XDP_PASS                    ; if no socket serves this queue
//! 26  call bpf_redirect_map
//! 27  exit
//! pass:
//! 28  r0 = XDP_PASS
//! 29  exit
//! ```
//!
//! Packet bytes are loaded in memory order, so a loaded `u16`/`u32` is the
//! network-order value read as little-endian: the constants compared against are
//! built the same way (`from_ne_bytes` of the wire bytes). Comparisons use the
//! 32-bit jump class so a constant with its top bit set is not sign-extended.

use std::net::Ipv4Addr;

/// One eBPF instruction (`struct bpf_insn`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Insn {
    code: u8,
    /// `dst_reg` in the low nibble, `src_reg` in the high one.
    regs: u8,
    off: i16,
    imm: i32,
}

// Opcodes: class | size/op | source.
const LDX_W: u8 = 0x61; // BPF_LDX | BPF_MEM | BPF_W
const LDX_H: u8 = 0x69; // BPF_LDX | BPF_MEM | BPF_H
const LDX_B: u8 = 0x71; // BPF_LDX | BPF_MEM | BPF_B
const MOV64_X: u8 = 0xbf; // BPF_ALU64 | BPF_MOV | BPF_X
const MOV64_K: u8 = 0xb7; // BPF_ALU64 | BPF_MOV | BPF_K
const ADD64_K: u8 = 0x07; // BPF_ALU64 | BPF_ADD | BPF_K
const AND32_K: u8 = 0x54; // BPF_ALU | BPF_AND | BPF_K
const JGT_X: u8 = 0x2d; // BPF_JMP | BPF_JGT | BPF_X
const JNE32_K: u8 = 0x56; // BPF_JMP32 | BPF_JNE | BPF_K
const LD_IMM64: u8 = 0x18; // BPF_LD | BPF_DW | BPF_IMM
const CALL: u8 = 0x85; // BPF_JMP | BPF_CALL
const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT

/// `src_reg` of a `LD_IMM64` whose immediate is a map descriptor.
const PSEUDO_MAP_FD: u8 = 1;
/// Helper number of `bpf_redirect_map`.
const REDIRECT_MAP: i32 = 51;
/// The verdict that hands a packet to the kernel's stack.
pub(crate) const XDP_PASS: i32 = 2;

/// One instruction from its fields (also used by `crate::reuseport`).
pub(crate) const fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> Insn {
    Insn {
        code,
        regs: (src << 4) | dst,
        off,
        imm,
    }
}

/// Builds the program for the XSKMAP `map_fd`, serving UDP to `addr:port`
/// (any local address when `addr` is unspecified) in frames of at most
/// `max_len` bytes.
pub(crate) fn redirect_udp(map_fd: i32, addr: Ipv4Addr, port: u16, max_len: u16) -> Vec<Insn> {
    // Values as a little-endian load of their wire bytes sees them.
    let ethertype = i32::from(u16::from_ne_bytes([0x08, 0x00]));
    let frag_mask = i32::from(u16::from_ne_bytes([0x3f, 0xff]));
    let addr_k = u32::from_ne_bytes(addr.octets()) as i32;
    let port_k = i32::from(u16::from_ne_bytes(port.to_be_bytes()));

    // Jumps to `pass` are patched once its index is known.
    let mut p = vec![
        insn(MOV64_X, 6, 1, 0, 0),
        insn(LDX_W, 2, 6, 0, 0),
        insn(LDX_W, 3, 6, 4, 0),
        insn(MOV64_X, 4, 2, 0, 0),
        insn(ADD64_K, 4, 0, 0, 42),
        insn(JGT_X, 4, 3, PASS, 0),
        insn(LDX_H, 5, 2, 12, 0),
        insn(JNE32_K, 5, 0, PASS, ethertype),
        insn(LDX_B, 5, 2, 14, 0),
        insn(JNE32_K, 5, 0, PASS, 0x45),
        insn(LDX_B, 5, 2, 23, 0),
        insn(JNE32_K, 5, 0, PASS, 17),
        insn(LDX_H, 5, 2, 20, 0),
        insn(AND32_K, 5, 0, 0, frag_mask),
        insn(JNE32_K, 5, 0, PASS, 0),
    ];
    if !addr.is_unspecified() {
        p.push(insn(LDX_W, 5, 2, 30, 0));
        p.push(insn(JNE32_K, 5, 0, PASS, addr_k));
    }
    p.extend([
        insn(LDX_H, 5, 2, 36, 0),
        insn(JNE32_K, 5, 0, PASS, port_k),
        insn(MOV64_X, 4, 2, 0, 0),
        insn(ADD64_K, 4, 0, 0, i32::from(max_len)),
        insn(JGT_X, 3, 4, PASS, 0),
        insn(LDX_W, 2, 6, 16, 0),
        insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, map_fd),
        insn(0, 0, 0, 0, 0),
        insn(MOV64_K, 3, 0, 0, XDP_PASS),
        insn(CALL, 0, 0, 0, REDIRECT_MAP),
        insn(EXIT, 0, 0, 0, 0),
    ]);
    let pass = p.len();
    for (i, ins) in p.iter_mut().enumerate() {
        if ins.off == PASS {
            // A jump's offset counts from the next instruction.
            ins.off = (pass - i - 1) as i16;
        }
    }
    p.push(insn(MOV64_K, 0, 0, 0, XDP_PASS));
    p.push(insn(EXIT, 0, 0, 0, 0));
    p
}

/// Placeholder offset of a jump to `pass` (no load in the program uses it).
const PASS: i16 = -1;

#[cfg(test)]
mod tests {
    use super::*;

    fn bytes(i: &Insn) -> [u8; 8] {
        let mut out = [0u8; 8];
        out[0] = i.code;
        out[1] = i.regs;
        out[2..4].copy_from_slice(&i.off.to_le_bytes());
        out[4..].copy_from_slice(&i.imm.to_le_bytes());
        out
    }

    #[test]
    fn layout_matches_struct_bpf_insn() {
        assert_eq!(size_of::<Insn>(), 8);
        // "r0 = 2" and "exit", as the kernel's own encodings read.
        assert_eq!(
            bytes(&insn(MOV64_K, 0, 0, 0, 2)),
            [0xb7, 0, 0, 0, 2, 0, 0, 0]
        );
        assert_eq!(bytes(&insn(EXIT, 0, 0, 0, 0)), [0x95, 0, 0, 0, 0, 0, 0, 0]);
        // "r6 = r1": dst 6 in the low nibble, src 1 in the high one.
        assert_eq!(bytes(&insn(MOV64_X, 6, 1, 0, 0))[1], 0x16);
        // A map reference: src_reg 1, the descriptor in the immediate.
        assert_eq!(
            bytes(&insn(LD_IMM64, 1, PSEUDO_MAP_FD, 0, 7)),
            [0x18, 0x11, 0, 0, 7, 0, 0, 0]
        );
    }

    #[test]
    fn constants_are_wire_bytes_read_little_endian() {
        let p = redirect_udp(3, Ipv4Addr::new(192, 0, 2, 200), 4433, 3840);
        let imm = |i: usize| p[i].imm as u32;
        assert_eq!(imm(7).to_le_bytes()[..2], [0x08, 0x00]);
        assert_eq!(imm(16).to_le_bytes(), [192, 0, 2, 200]);
        assert_eq!(imm(18).to_le_bytes()[..2], 4433u16.to_be_bytes());
    }

    #[test]
    fn every_jump_lands_on_pass_and_the_program_ends_in_exit() {
        for addr in [Ipv4Addr::UNSPECIFIED, Ipv4Addr::new(10, 0, 0, 1)] {
            let p = redirect_udp(3, addr, 443, 3840);
            let pass = p.len() - 2;
            assert_eq!(p[pass], insn(MOV64_K, 0, 0, 0, XDP_PASS));
            assert_eq!(p.last().unwrap().code, EXIT);
            let jumps: Vec<usize> = (0..p.len())
                .filter(|&i| p[i].code == JGT_X || p[i].code == JNE32_K)
                .collect();
            assert_eq!(jumps.len(), if addr.is_unspecified() { 7 } else { 8 });
            for i in jumps {
                assert_eq!(i as i64 + 1 + i64::from(p[i].off), pass as i64, "jump {i}");
            }
            // The map reference is a two-slot instruction followed by the call.
            let ld = p.iter().position(|i| i.code == LD_IMM64).unwrap();
            assert_eq!(p[ld + 1], insn(0, 0, 0, 0, 0));
            assert_eq!(p[ld + 3], insn(CALL, 0, 0, 0, REDIRECT_MAP));
        }
    }
}
