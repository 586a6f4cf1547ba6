//! The endpoint's own secrets: address-validation tokens (Retry and NEW_TOKEN) and
//! stateless reset tokens.
//!
//! CONTRACT (filled in by the packet/crypto work).

use std::net::SocketAddr;
use std::time::Duration;

use crate::cid::{ConnectionId, ResetToken};

/// Derives stateless reset tokens from connection IDs with a static key (HMAC-SHA256),
/// so a restarted server can still reset connections it has forgotten.
pub struct ResetKey {
    // implementer's fields
    _todo: (),
}

impl ResetKey {
    /// A key from 32 secret bytes.
    pub fn new(secret: &[u8; 32]) -> Self {
        let _ = secret;
        todo!("tokens")
    }

    /// The token for a connection ID we issued.
    pub fn token(&self, cid: &ConnectionId) -> ResetToken {
        let _ = cid;
        todo!("tokens")
    }
}

/// Seals and opens address-validation tokens with an AEAD key only this server knows.
/// A token binds the client's IP address, an issue time (seconds since an arbitrary
/// epoch chosen by the caller, so the type stays clock-free) and, for Retry tokens, the
/// original destination connection ID and the retry source connection ID.
pub struct TokenKey {
    // implementer's fields
    _todo: (),
}

/// The contents of a valid token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenContents {
    /// For a Retry token: the original DCID and the Retry's SCID. `None` for NEW_TOKEN.
    pub retry: Option<(ConnectionId, ConnectionId)>,
    /// When it was issued (caller's clock, as a duration since its epoch).
    pub issued: Duration,
}

impl TokenKey {
    /// A key from 32 secret bytes.
    pub fn new(secret: &[u8; 32]) -> Self {
        let _ = secret;
        todo!("tokens")
    }

    /// Seal a token for `addr`. `nonce` must be unique per token (random 12 bytes).
    pub fn seal(&self, addr: SocketAddr, contents: &TokenContents, nonce: [u8; 12]) -> Vec<u8> {
        let _ = (addr, contents, nonce);
        todo!("tokens")
    }

    /// Open a token presented by `addr`; `None` if forged, damaged or for another address.
    pub fn open(&self, addr: SocketAddr, token: &[u8]) -> Option<TokenContents> {
        let _ = (addr, token);
        todo!("tokens")
    }
}
