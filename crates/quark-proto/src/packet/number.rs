//! Packet number encoding and decoding (RFC 9000 §17.1, Appendix A.2 and A.3).
//!
//! CONTRACT (filled in by the packet/crypto work).

/// Bytes (1..=4) needed to encode `pn` so the peer can recover it, given the largest
/// packet number it has acknowledged (RFC 9000 Appendix A.2).
pub fn packet_number_len(pn: u64, largest_acked: Option<u64>) -> usize {
    let _ = (pn, largest_acked);
    todo!("packet numbers")
}

/// Recover a full packet number from its `pn_len`-byte truncation, given the largest
/// packet number received so far in the space (RFC 9000 Appendix A.3).
pub fn decode_packet_number(largest_pn: Option<u64>, truncated: u64, pn_len: usize) -> u64 {
    let _ = (largest_pn, truncated, pn_len);
    todo!("packet numbers")
}
