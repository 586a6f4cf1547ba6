//! Connection IDs and stateless reset tokens.

use std::fmt;

/// Longest connection ID QUIC v1 allows (RFC 9000 §17.2).
pub const MAX_CID_LEN: usize = 20;

/// A connection ID of 0..=20 bytes, stored inline so it is `Copy` and never allocates.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionId {
    len: u8,
    bytes: [u8; MAX_CID_LEN],
}

impl ConnectionId {
    /// The zero-length connection ID.
    pub const EMPTY: ConnectionId = ConnectionId {
        len: 0,
        bytes: [0; MAX_CID_LEN],
    };

    /// A connection ID from bytes; `None` if longer than 20 bytes.
    pub fn new(bytes: &[u8]) -> Option<Self> {
        if bytes.len() > MAX_CID_LEN {
            return None;
        }
        let mut cid = Self::EMPTY;
        cid.len = bytes.len() as u8;
        cid.bytes[..bytes.len()].copy_from_slice(bytes);
        Some(cid)
    }

    /// A random connection ID of `len` bytes (at most 20).
    pub fn random<R: rand::Rng + ?Sized>(rng: &mut R, len: usize) -> Self {
        let len = len.min(MAX_CID_LEN);
        let mut cid = Self::EMPTY;
        cid.len = len as u8;
        rng.fill(&mut cid.bytes[..len]);
        cid
    }

    /// The 20-byte inline storage; only the first [`len`](Self::len) bytes
    /// are the ID. A fixed-size copy of it costs a few moves where a copy of
    /// the ID's own length is a `memcpy` call.
    pub(crate) fn padded(&self) -> &[u8; MAX_CID_LEN] {
        &self.bytes
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        usize::from(self.len)
    }

    /// True for the zero-length connection ID.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

impl std::ops::Deref for ConnectionId {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.bytes[..self.len()]
    }
}

impl fmt::Debug for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.iter() {
            write!(f, "{b:02x}")?;
        }
        if self.is_empty() {
            f.write_str("<empty>")?;
        }
        Ok(())
    }
}

impl fmt::Display for ConnectionId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self, f)
    }
}

/// Length of a stateless reset token.
pub const RESET_TOKEN_LEN: usize = 16;

/// A stateless reset token (RFC 9000 §10.3).
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct ResetToken(pub [u8; RESET_TOKEN_LEN]);

impl ResetToken {
    /// Constant-time comparison with the last 16 bytes of a datagram.
    pub fn matches(&self, candidate: &[u8]) -> bool {
        // Compare every byte so timing does not reveal the matching prefix.
        candidate.len() == RESET_TOKEN_LEN
            && candidate
                .iter()
                .zip(self.0)
                .fold(0u8, |acc, (a, b)| acc | (a ^ b))
                == 0
    }
}

impl fmt::Debug for ResetToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ResetToken(..)")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cid_bounds() {
        assert!(ConnectionId::new(&[0; 21]).is_none());
        let cid = ConnectionId::new(&[1, 2, 3]).unwrap();
        assert_eq!(&*cid, &[1, 2, 3]);
        assert_eq!(cid.len(), 3);
        assert_eq!(format!("{cid}"), "010203");
        assert!(ConnectionId::EMPTY.is_empty());
    }

    #[test]
    fn reset_token_match() {
        let t = ResetToken([7; 16]);
        assert!(t.matches(&[7; 16]));
        assert!(!t.matches(&[7; 15]));
        assert!(!t.matches(&[8; 16]));
    }
}
