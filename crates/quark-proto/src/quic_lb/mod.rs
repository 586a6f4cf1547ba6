//! QUIC-LB connection IDs (draft-ietf-quic-load-balancers-21): connection IDs
//! that carry a server ID a load balancer can read, so every datagram of a
//! connection, from any client address, reaches the server that owns it.
//!
//! ```text
//! QUIC-LB Connection ID {
//!   First Octet { Config Rotation (3), CID Len or Random Bits (5) },
//!   Plaintext Block { Server ID (8..), Nonce (32..) },   // encrypted with a key
//! }
//! ```
//!
//! [`LbConfig`] is what servers and load balancers share (rotation codepoint,
//! lengths, optional AES-128 key); [`CidEncoder`] makes a server's IDs;
//! [`Decoder`] is the load balancer's side (CID -> server ID). With a key the
//! block is one AES-128-ECB pass when server ID and nonce fill exactly 16
//! bytes, else the draft's four-pass Feistel network (module `cipher`).

mod cipher;
#[cfg(test)]
mod tests;

use std::fmt;

use crate::cid::{ConnectionId, MAX_CID_LEN};

/// The reserved config rotation codepoint of unroutable IDs (§2.2).
pub const UNROUTABLE: u8 = 0b111;
/// Longest server ID: server ID and nonce sum to at most 19 bytes, the nonce
/// has at least 4 (§4.3).
pub const MAX_SERVER_ID_LEN: usize = 15;

/// Why a configuration or a connection ID was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QuicLbError {
    /// A configuration outside the draft's limits.
    #[error("invalid QUIC-LB configuration: {0}")]
    Config(&'static str),
    /// The server ID does not have the configured length.
    #[error("server ID of {got} bytes, configured {want}")]
    ServerIdLength {
        /// Configured length.
        want: usize,
        /// Length given.
        got: usize,
    },
    /// Empty connection ID: nothing to route on.
    #[error("empty connection ID")]
    Empty,
    /// Codepoint 0b111: the server had no configuration (§2.2).
    #[error("unroutable connection ID (config rotation 0b111)")]
    Unroutable,
    /// No configuration for this rotation codepoint.
    #[error("no QUIC-LB configuration for rotation codepoint {0}")]
    UnknownConfig(u8),
    /// The ID is not as long as its configuration's IDs.
    #[error("connection ID of {got} bytes, configuration {rotation} makes {want}")]
    Length {
        /// The codepoint.
        rotation: u8,
        /// Length its IDs have.
        want: usize,
        /// Length of the ID given.
        got: usize,
    },
}

/// A QUIC-LB configuration shared by a load balancer and its servers.
#[derive(Clone)]
pub struct LbConfig {
    rotation: u8,
    server_id_len: usize,
    nonce_len: usize,
    encode_length: bool,
    key: Option<cipher::Key>,
}

impl LbConfig {
    /// A configuration: codepoint `rotation` (0..=6), server IDs of
    /// `server_id_len` bytes (>= 1), nonces of `nonce_len` bytes (>= 4, and the
    /// two sum to at most 19), and a 16-byte AES key (`None`: plaintext IDs,
    /// which let anyone on the path see the server of a connection).
    pub fn new(
        rotation: u8,
        server_id_len: usize,
        nonce_len: usize,
        key: Option<[u8; 16]>,
    ) -> Result<Self, QuicLbError> {
        //= draft-ietf-quic-load-balancers-21 §4.3
        //# The nonce length MUST be at least 4 octets. The server ID length MUST be at
        //# least 1 octet.
        //# [...] the server ID and nonce lengths MUST sum to 19 octets or less.
        if rotation >= UNROUTABLE {
            return Err(QuicLbError::Config("config rotation must be 0..=6"));
        }
        if server_id_len == 0 {
            return Err(QuicLbError::Config("server ID length must be at least 1"));
        }
        if nonce_len < 4 {
            return Err(QuicLbError::Config("nonce length must be at least 4"));
        }
        if server_id_len + nonce_len > MAX_CID_LEN - 1 {
            return Err(QuicLbError::Config(
                "server ID and nonce lengths must sum to at most 19",
            ));
        }
        Ok(LbConfig {
            rotation,
            server_id_len,
            nonce_len,
            encode_length: true,
            key: key.map(|k| cipher::Key::new(&k)),
        })
    }

    /// Whether the first octet's low five bits give the ID's length after it
    /// (§2.3, the default) or are random.
    pub fn with_length_encoding(mut self, on: bool) -> Self {
        self.encode_length = on;
        self
    }

    /// The config rotation codepoint.
    pub fn rotation(&self) -> u8 {
        self.rotation
    }

    /// Server ID length in bytes.
    pub fn server_id_len(&self) -> usize {
        self.server_id_len
    }

    /// Nonce length in bytes.
    pub fn nonce_len(&self) -> usize {
        self.nonce_len
    }

    /// Whether IDs are encrypted.
    pub fn is_encrypted(&self) -> bool {
        self.key.is_some()
    }

    /// Length of the connection IDs of this configuration.
    pub fn cid_len(&self) -> usize {
        1 + self.server_id_len + self.nonce_len
    }

    /// The server ID in `cid`, an ID of this configuration's length.
    fn server_id(&self, cid: &[u8]) -> ServerId {
        let n = self.server_id_len + self.nonce_len;
        let mut block = [0u8; MAX_CID_LEN - 1];
        block[..n].copy_from_slice(&cid[1..1 + n]);
        if let Some(key) = &self.key {
            key.decrypt(&mut block[..n]);
        }
        ServerId::new(&block[..self.server_id_len]).unwrap_or(ServerId::EMPTY)
    }
}

impl fmt::Debug for LbConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LbConfig")
            .field("rotation", &self.rotation)
            .field("server_id_len", &self.server_id_len)
            .field("nonce_len", &self.nonce_len)
            .field("encode_length", &self.encode_length)
            .field("encrypted", &self.key.is_some())
            .finish()
    }
}

/// A server ID: opaque bytes, 1..=15 of them.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ServerId {
    len: u8,
    bytes: [u8; MAX_SERVER_ID_LEN],
}

impl ServerId {
    const EMPTY: ServerId = ServerId {
        len: 0,
        bytes: [0; MAX_SERVER_ID_LEN],
    };

    /// A server ID from bytes; `None` if empty or longer than 15.
    pub fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.is_empty() || bytes.len() > MAX_SERVER_ID_LEN {
            return None;
        }
        let mut id = Self::EMPTY;
        id.len = bytes.len() as u8;
        id.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(id)
    }
}

impl std::ops::Deref for ServerId {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }
}

impl fmt::Debug for ServerId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

/// Makes one server's connection IDs under a configuration.
#[derive(Clone, Debug)]
pub struct CidEncoder {
    config: LbConfig,
    server_id: ServerId,
}

impl CidEncoder {
    /// The encoder of the server `server_id` (of the configured length).
    pub fn new(config: LbConfig, server_id: &[u8]) -> Result<Self, QuicLbError> {
        let want = config.server_id_len;
        if server_id.len() != want {
            return Err(QuicLbError::ServerIdLength {
                want,
                got: server_id.len(),
            });
        }
        let server_id = ServerId::new(server_id).ok_or(QuicLbError::ServerIdLength {
            want,
            got: server_id.len(),
        })?;
        Ok(CidEncoder { config, server_id })
    }

    /// The configuration.
    pub fn config(&self) -> &LbConfig {
        &self.config
    }

    /// This server's ID.
    pub fn server_id(&self) -> ServerId {
        self.server_id
    }

    /// Length of the IDs made.
    pub fn cid_len(&self) -> usize {
        self.config.cid_len()
    }

    /// A fresh connection ID with a random nonce.
    //= draft-ietf-quic-load-balancers-21 §4.5
    //# If there is a key, the server fills the nonce field with
    //# a nonce of its choosing.
    pub fn generate<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> ConnectionId {
        let mut nonce = [0u8; MAX_CID_LEN];
        let nonce = &mut nonce[..self.config.nonce_len];
        rng.fill(&mut nonce[..]);
        self.encode(nonce, rng.random())
    }

    /// The ID with `nonce` (of the configured length; shorter is zero-filled,
    /// longer cut); `random_bits` fill the first octet's low 5 bits when the
    /// length is not encoded there.
    pub fn encode(&self, nonce: &[u8], random_bits: u8) -> ConnectionId {
        let c = &self.config;
        let n = c.server_id_len + c.nonce_len;
        let mut out = [0u8; MAX_CID_LEN];
        let low = if c.encode_length {
            n as u8
        } else {
            random_bits & 0x1f
        };
        //= draft-ietf-quic-load-balancers-21 §2.1
        //# The first three bits of any connection ID MUST encode an identifier for the
        //# configuration that the connection ID uses.
        out[0] = (c.rotation << 5) | low;
        out[1..1 + c.server_id_len].copy_from_slice(&self.server_id);
        let take = nonce.len().min(c.nonce_len);
        let start = 1 + c.server_id_len;
        out[start..start + take].copy_from_slice(&nonce[..take]);
        if let Some(key) = &c.key {
            key.encrypt(&mut out[1..1 + n]);
        }
        ConnectionId::new(&out[..1 + n]).unwrap_or(ConnectionId::EMPTY)
    }
}

/// A load balancer's decoder: the configurations it knows, by codepoint.
#[derive(Clone, Debug, Default)]
pub struct Decoder {
    configs: [Option<LbConfig>; 7],
}

impl Decoder {
    /// A decoder that knows no configuration (every ID is unroutable).
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds (or replaces) the configuration of its codepoint.
    pub fn add(&mut self, config: LbConfig) {
        let slot = usize::from(config.rotation);
        self.configs[slot] = Some(config);
    }

    /// Forgets the configuration of codepoint `rotation`.
    pub fn remove(&mut self, rotation: u8) {
        if let Some(slot) = self.configs.get_mut(usize::from(rotation)) {
            *slot = None;
        }
    }

    /// The server ID `cid` names. Never panics: a malformed ID is an error.
    pub fn server_id(&self, cid: &[u8]) -> Result<ServerId, QuicLbError> {
        let first = *cid.first().ok_or(QuicLbError::Empty)?;
        let rotation = first >> 5;
        if rotation == UNROUTABLE {
            return Err(QuicLbError::Unroutable);
        }
        let config = self.configs[usize::from(rotation)]
            .as_ref()
            .ok_or(QuicLbError::UnknownConfig(rotation))?;
        if cid.len() != config.cid_len() {
            return Err(QuicLbError::Length {
                rotation,
                want: config.cid_len(),
                got: cid.len(),
            });
        }
        Ok(config.server_id(cid))
    }
}
