//! The QUIC versions quark speaks: v1 (RFC 9000) and v2 (RFC 9369), and what
//! differs between them on the wire: the long header's packet type bits.
//! (Initial salt and key labels live in rustls; the Retry key in crypto::retry.)

use super::header::{TYPE_HANDSHAKE, TYPE_INITIAL, TYPE_RETRY, TYPE_ZERO_RTT};
use crate::types::PacketKind;

/// QUIC version 1.
pub const VERSION_1: u32 = 0x0000_0001;

//= https://www.rfc-editor.org/rfc/rfc9369#section-3.1
//# The Version field of long headers is 0x6b3343cf.
/// QUIC version 2 (RFC 9369).
pub const VERSION_2: u32 = 0x6b33_43cf;

/// Whether quark can parse and protect packets of `version`.
pub fn is_known(version: u32) -> bool {
    version == VERSION_1 || version == VERSION_2
}

/// The rustls key schedule flavour for `version` (salt and HKDF labels:
/// "quic key" or "quicv2 key", RFC 9369 §3.3).
pub fn rustls_version(version: u32) -> rustls::quic::Version {
    if version == VERSION_2 {
        rustls::quic::Version::V2
    } else {
        rustls::quic::Version::V1
    }
}

/// A long header's packet type (Initial, 0-RTT, Handshake or `None` for
/// Retry), already shifted into bits 4-5 of the first byte.
//= https://www.rfc-editor.org/rfc/rfc9369#section-3.2
//# Initial:  0b01
//# 0-RTT:  0b10
//# Handshake:  0b11
//# Retry:  0b00
pub(super) fn type_bits(version: u32, kind: Option<PacketKind>) -> u8 {
    let v1 = match kind {
        Some(PacketKind::Initial) => TYPE_INITIAL,
        Some(PacketKind::ZeroRtt) => TYPE_ZERO_RTT,
        Some(_) => TYPE_HANDSHAKE,
        None => TYPE_RETRY,
    };
    if version == VERSION_2 {
        // v2's types are v1's plus one, modulo four.
        (v1 + 0x10) & 0x30
    } else {
        v1
    }
}

/// The inverse of [`type_bits`]: `None` for Retry.
pub(super) fn kind_of(version: u32, bits: u8) -> Option<PacketKind> {
    let v1_bits = if version == VERSION_2 {
        (bits & 0x30).wrapping_sub(0x10) & 0x30
    } else {
        bits & 0x30
    };
    match v1_bits {
        TYPE_INITIAL => Some(PacketKind::Initial),
        TYPE_ZERO_RTT => Some(PacketKind::ZeroRtt),
        TYPE_HANDSHAKE => Some(PacketKind::Handshake),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_bits_round_trip() {
        let kinds = [
            Some(PacketKind::Initial),
            Some(PacketKind::ZeroRtt),
            Some(PacketKind::Handshake),
            None,
        ];
        for version in [VERSION_1, VERSION_2] {
            for kind in kinds {
                assert_eq!(kind_of(version, type_bits(version, kind)), kind);
            }
        }
        // RFC 9369 §3.2, as first bytes with the fixed bits set
        assert_eq!(type_bits(VERSION_2, Some(PacketKind::Initial)), 0x10);
        assert_eq!(type_bits(VERSION_2, Some(PacketKind::ZeroRtt)), 0x20);
        assert_eq!(type_bits(VERSION_2, Some(PacketKind::Handshake)), 0x30);
        assert_eq!(type_bits(VERSION_2, None), 0x00);
        assert!(is_known(VERSION_2) && is_known(VERSION_1) && !is_known(0x1a2a_3a4a));
    }
}
