//! Packet protection keys, the TLS handshake (through rustls' QUIC support), key
//! updates, and the endpoint's own secrets (Retry tokens, stateless reset tokens).
//!
//! quark writes no cryptographic primitive: AEAD, header protection and HKDF come
//! from rustls (with the ring or aws-lc-rs provider, see [`provider`]); Retry integrity, token sealing and reset
//! token derivation use ring directly.

pub mod one_rtt;
pub mod provider;
pub mod relabel;
pub mod reserve;
pub(crate) mod retry;
#[cfg(test)]
pub(crate) mod test_pair;
mod tickets;
pub mod tls;
pub mod tokens;

pub use rustls::quic::{DirectionalKeys, HeaderProtectionKey, KeyChange, Keys, PacketKey, Secrets};

use crate::types::Side;

/// Initial packet protection keys for QUIC v1 (RFC 9001 §5.2), derived from the
/// Destination Connection ID of the client's first Initial.
//= https://www.rfc-editor.org/rfc/rfc9001#section-5.2
//# Initial packets apply the packet protection process, but use a secret
//# derived from the Destination Connection ID field from the client's
//# first Initial packet.
//#
//# This secret is determined by using HKDF-Extract (see Section 2.2 of
//# [HKDF]) with a salt and the Destination Connection ID, using the hash
//# function specified for TLS_AES_128_GCM_SHA256 and AEAD_AES_128_GCM.
pub fn initial_keys(client_dst_cid: &[u8], side: Side) -> Keys {
    initial_keys_for(crate::packet::VERSION_1, client_dst_cid, side)
}

/// [`initial_keys`] for `version`: QUIC v2 has its own salt and labels.
//= https://www.rfc-editor.org/rfc/rfc9369#section-3.3.1
//# initial_salt = 0x0dede3def700a6db819381be6e269dcbf9bd2ed9
pub fn initial_keys_for(version: u32, client_dst_cid: &[u8], side: Side) -> Keys {
    let suite = provider::same_suite(rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256)
        .tls13()
        .expect("a TLS 1.3 suite");
    let quic = suite
        .quic
        .expect("ring's and aws-lc-rs' TLS 1.3 suites all support QUIC");
    Keys::initial(
        crate::packet::rustls_version(version),
        suite,
        quic,
        client_dst_cid,
        rustls_side(side),
    )
}

/// Map our [`Side`] to rustls'.
pub fn rustls_side(side: Side) -> rustls::Side {
    match side {
        Side::Client => rustls::Side::Client,
        Side::Server => rustls::Side::Server,
    }
}

/// The 1-RTT secrets behind key updates: rustls' own, or ours when the
/// connection moved to a version the TLS session was not started in
/// ([`relabel`]).
#[derive(Clone)]
pub enum NextSecrets {
    /// From rustls (`KeyChange::OneRtt`).
    Tls(Secrets),
    /// Derived here with another version's labels.
    Relabeled(relabel::Secrets),
}

impl NextSecrets {
    /// The packet keys of the next phase; then move one phase on.
    pub fn next_packet_keys(&mut self) -> rustls::quic::PacketKeySet {
        match self {
            NextSecrets::Tls(s) => s.next_packet_keys(),
            NextSecrets::Relabeled(s) => s.next_packet_keys(),
        }
    }

    /// The packet key for receiving in the next phase, without moving on.
    pub fn peek_next_remote(&self) -> Box<dyn PacketKey> {
        self.clone().next_packet_keys().remote
    }
}

impl From<Secrets> for NextSecrets {
    fn from(s: Secrets) -> Self {
        NextSecrets::Tls(s)
    }
}

/// New keys from the TLS session: [`KeyChange`] with secrets that may be ours.
pub enum LevelKeys {
    /// Keys for the Handshake space.
    Handshake(Keys),
    /// 1-RTT keys and the secrets of the next phase.
    OneRtt(Keys, NextSecrets),
}
