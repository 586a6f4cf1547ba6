//! Packet protection keys, the TLS handshake (through rustls' QUIC support), key
//! updates, and the endpoint's own secrets (Retry tokens, stateless reset tokens).
//!
//! quark writes no cryptographic primitive: AEAD, header protection and HKDF come
//! from rustls (with the ring provider); Retry integrity, token sealing and reset
//! token derivation use ring directly.
//!
//! CONTRACT (filled in by the packet/crypto work): public items fixed, bodies and
//! private items the implementer's.

pub mod one_rtt;
pub mod tls;
pub mod tokens;

pub use rustls::quic::{DirectionalKeys, HeaderProtectionKey, KeyChange, Keys, PacketKey, Secrets};

use crate::types::Side;

/// Initial packet protection keys for QUIC v1 (RFC 9001 §5.2), derived from the
/// Destination Connection ID of the client's first Initial.
pub fn initial_keys(client_dst_cid: &[u8], side: Side) -> Keys {
    let _ = (client_dst_cid, side);
    todo!("crypto")
}

/// Map our [`Side`] to rustls'.
pub fn rustls_side(side: Side) -> rustls::Side {
    match side {
        Side::Client => rustls::Side::Client,
        Side::Server => rustls::Side::Server,
    }
}
