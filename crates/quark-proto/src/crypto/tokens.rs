//! The endpoint's own secrets: address-validation tokens (Retry and NEW_TOKEN) and
//! stateless reset tokens.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::hmac;

use crate::cid::{ConnectionId, RESET_TOKEN_LEN, ResetToken};
use crate::coding::Reader;

/// Derives stateless reset tokens from connection IDs with a static key (HMAC-SHA256),
/// so a restarted server can still reset connections it has forgotten.
pub struct ResetKey {
    key: hmac::Key,
}

impl ResetKey {
    /// A key from 32 secret bytes.
    pub fn new(secret: &[u8; 32]) -> Self {
        ResetKey {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }

    /// The token for a connection ID we issued.
    //= https://www.rfc-editor.org/rfc/rfc9000#section-10.3.2
    //# An endpoint could use HMAC [RFC2104] (for example, HMAC(static_key,
    //# connection_id)) or the HMAC-based Key Derivation Function (HKDF)
    //# [RFC5869] (for example, using the static key as input keying
    //# material, with the connection ID as salt).
    pub fn token(&self, cid: &ConnectionId) -> ResetToken {
        let tag = hmac::sign(&self.key, cid);
        let mut token = [0; RESET_TOKEN_LEN];
        token.copy_from_slice(&tag.as_ref()[..RESET_TOKEN_LEN]);
        ResetToken(token)
    }
}

/// Seals and opens address-validation tokens with an AEAD key only this server knows.
/// A token binds the client's IP address, an issue time (seconds since an arbitrary
/// epoch chosen by the caller, so the type stays clock-free) and, for Retry tokens, the
/// original destination connection ID and the retry source connection ID.
///
/// Wire form: `kind (1) | nonce (12) | ChaCha20-Poly1305(contents) | tag (16)`.
///
/// ChaCha20-Poly1305 rather than AES-GCM: as fast for a few dozen bytes, and
/// valgrind's memcheck takes the tag ring's GHASH assembly computes for
/// undefined, so every NEW_TOKEN frame would fail the memory-checked runs of
/// the C examples (`quark-ffi`'s `c_peers`) with a false report.
///
/// The client's address goes in the AEAD's associated data rather than in the sealed
/// contents: the server already knows the address when it opens a token, so it need
/// not travel (tokens stay shorter, and reveal nothing about it), and a token presented
/// from any other address simply fails authentication — no separate comparison that
/// could be forgotten or done wrong. The kind byte is sent in clear because it decides
/// what else goes in the associated data (Retry tokens also bind the port, since the
/// client must not change it during the handshake, RFC 9000 §8.1.4; NEW_TOKEN tokens do
/// not, since the next connection comes from a new port), and it is authenticated too.
pub struct TokenKey {
    key: LessSafeKey,
    /// Rotated-out keys, still accepted for opening (at most a few: each
    /// costs a trial decryption of a token that fails under the newer ones).
    previous: Vec<LessSafeKey>,
}

/// Previous token keys tried at most.
pub const MAX_PREVIOUS_TOKEN_KEYS: usize = 8;

fn aead_key(secret: &[u8; 32]) -> LessSafeKey {
    let key = UnboundKey::new(&CHACHA20_POLY1305, secret).expect("a 32-byte key");
    LessSafeKey::new(key)
}

/// The contents of a valid token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TokenContents {
    /// For a Retry token: the original DCID and the Retry's SCID. `None` for NEW_TOKEN.
    pub retry: Option<(ConnectionId, ConnectionId)>,
    /// When it was issued (caller's clock, as a duration since its epoch).
    pub issued: Duration,
}

const KIND_NEW_TOKEN: u8 = 0;
const KIND_RETRY: u8 = 1;
const TAG_LEN: usize = 16;

/// Associated data: kind, the IP address (IPv4 as IPv4-mapped IPv6, so a dual-stack
/// socket's two spellings of one address agree), and for Retry tokens the port.
fn aad(kind: u8, addr: SocketAddr) -> [u8; 19] {
    let ip = match addr.ip().to_canonical() {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    };
    let port = if kind == KIND_RETRY { addr.port() } else { 0 };
    let mut out = [0; 19];
    out[0] = kind;
    out[1..17].copy_from_slice(&ip);
    out[17..].copy_from_slice(&port.to_be_bytes());
    out
}

/// Whether `token` claims to be a Retry token (of a server like this one):
/// one that fails is not answered by another Retry.
pub fn is_retry_token(token: &[u8]) -> bool {
    token.first() == Some(&KIND_RETRY)
}

impl TokenKey {
    /// A key from 32 secret bytes. Use a secret independent of the [`ResetKey`]'s.
    pub fn new(secret: &[u8; 32]) -> Self {
        Self::with_previous(secret, &[])
    }

    /// A key that seals with `secret` and also opens tokens sealed with any of
    /// `previous` (the first [`MAX_PREVIOUS_TOKEN_KEYS`]): a fleet rotating
    /// its key keeps accepting the tokens it gave out before.
    pub fn with_previous(secret: &[u8; 32], previous: &[[u8; 32]]) -> Self {
        TokenKey {
            key: aead_key(secret),
            previous: previous
                .iter()
                .take(MAX_PREVIOUS_TOKEN_KEYS)
                .map(aead_key)
                .collect(),
        }
    }

    /// The key a server configuration names (current and previous secrets).
    pub fn from_config(config: &crate::config::ServerConfig) -> Self {
        Self::with_previous(&config.token_key, &config.previous_token_keys)
    }

    /// Seal a token for `addr`. `nonce` must be unique per token (random 12 bytes).
    ///
    /// Random 96-bit nonces keep the AEAD safe for about 2^32 tokens per key; rotate
    /// the key well before that.
    pub fn seal(&self, addr: SocketAddr, contents: &TokenContents, nonce: [u8; 12]) -> Vec<u8> {
        let kind = if contents.retry.is_some() {
            KIND_RETRY
        } else {
            KIND_NEW_TOKEN
        };
        let mut out = Vec::with_capacity(1 + NONCE_LEN + 12 + 2 * 21 + TAG_LEN);
        out.push(kind);
        out.extend_from_slice(&nonce);
        let body = out.len();
        out.extend_from_slice(&contents.issued.as_secs().to_be_bytes());
        out.extend_from_slice(&contents.issued.subsec_nanos().to_be_bytes());
        if let Some((orig_dst, retry_src)) = &contents.retry {
            for cid in [orig_dst, retry_src] {
                out.push(cid.len() as u8);
                out.extend_from_slice(cid);
            }
        }
        let tag = self
            .key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad(kind, addr)),
                &mut out[body..],
            )
            .expect("a token is far below the AEAD's input limit");
        out.extend_from_slice(tag.as_ref());
        out
    }

    /// Open a token presented by `addr`; `None` if forged, damaged or for another address.
    pub fn open(&self, addr: SocketAddr, token: &[u8]) -> Option<TokenContents> {
        let (&kind, rest) = token.split_first()?;
        if kind != KIND_NEW_TOKEN && kind != KIND_RETRY {
            return None;
        }
        let nonce = rest.get(..NONCE_LEN)?;
        let sealed = rest.get(NONCE_LEN..)?;
        // Peer-supplied: bound the copy before allocating for it.
        if sealed.len() < TAG_LEN || sealed.len() > 64 + TAG_LEN {
            return None;
        }
        let nonce: [u8; NONCE_LEN] = nonce.try_into().ok()?;
        let mut buf = sealed.to_vec();
        let plain = std::iter::once(&self.key)
            .chain(&self.previous)
            .find_map(|key| {
                buf.copy_from_slice(sealed);
                let nonce = Nonce::assume_unique_for_key(nonce);
                key.open_in_place(nonce, Aad::from(aad(kind, addr)), &mut buf)
                    .ok()
                    .map(|plain| plain.len())
            })
            .map(|len| &buf[..len])?;

        let mut r = Reader::new(plain);
        let secs = u64::from_be_bytes(r.array().ok()?);
        let nanos = r.u32().ok()?;
        if nanos >= 1_000_000_000 {
            return None;
        }
        let retry = if kind == KIND_RETRY {
            let mut cid = || {
                let len = usize::from(r.u8().ok()?);
                ConnectionId::new(r.bytes(len).ok()?)
            };
            Some((cid()?, cid()?))
        } else {
            None
        };
        if !r.is_empty() {
            return None;
        }
        Some(TokenContents {
            retry,
            issued: Duration::new(secs, nanos),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    fn retry_contents() -> TokenContents {
        TokenContents {
            retry: Some((
                ConnectionId::new(&[1; 8]).unwrap(),
                ConnectionId::new(&[2; 20]).unwrap(),
            )),
            issued: Duration::new(1_700_000_000, 123),
        }
    }

    #[test]
    fn reset_tokens_are_deterministic_per_key_and_cid() {
        let k = ResetKey::new(&[1; 32]);
        let a = ConnectionId::new(&[1, 2, 3]).unwrap();
        let b = ConnectionId::new(&[1, 2, 4]).unwrap();
        assert_eq!(k.token(&a), k.token(&a));
        assert_ne!(k.token(&a), k.token(&b));
        assert_ne!(k.token(&a), ResetKey::new(&[2; 32]).token(&a));
        // HMAC-SHA256("\x01"*32, 010203) truncated to 16 bytes, via ring's own HMAC
        let full = hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, &[1; 32]), &[1, 2, 3]);
        assert_eq!(k.token(&a).0, full.as_ref()[..16]);
    }

    #[test]
    fn rotated_keys_still_open_old_tokens() {
        let (old, new) = ([1; 32], [2; 32]);
        let from = addr("192.0.2.1:4433");
        let c = retry_contents();
        let t = TokenKey::new(&old).seal(from, &c, [3; 12]);
        let rotated = TokenKey::with_previous(&new, &[old]);
        assert_eq!(rotated.open(from, &t), Some(c.clone()));
        // New tokens use the new key: a server that knows only the old one refuses them.
        let t2 = rotated.seal(from, &c, [4; 12]);
        assert_eq!(TokenKey::new(&old).open(from, &t2), None);
        assert_eq!(TokenKey::new(&new).open(from, &t2), Some(c));
        // Dropped from the list: refused.
        assert_eq!(TokenKey::new(&new).open(from, &t), None);
    }

    #[test]
    fn retry_token_round_trip_and_binding() {
        let k = TokenKey::new(&[7; 32]);
        let c = retry_contents();
        let from = addr("192.0.2.1:4433");
        let t = k.seal(from, &c, [9; 12]);
        assert_eq!(k.open(from, &t), Some(c.clone()));
        // the same address as seen by a dual-stack socket
        assert_eq!(k.open(addr("[::ffff:192.0.2.1]:4433"), &t), Some(c));
        // another IP, another port (Retry binds the port), another key
        assert_eq!(k.open(addr("192.0.2.2:4433"), &t), None);
        assert_eq!(k.open(addr("192.0.2.1:4434"), &t), None);
        assert_eq!(TokenKey::new(&[8; 32]).open(from, &t), None);
        // every single-byte corruption, and every truncation, is refused
        for i in 0..t.len() {
            let mut bad = t.clone();
            bad[i] ^= 0x40;
            assert_eq!(k.open(from, &bad), None, "byte {i}");
            assert_eq!(k.open(from, &t[..i]), None, "cut at {i}");
        }
    }

    #[test]
    fn new_token_ignores_port() {
        let k = TokenKey::new(&[7; 32]);
        let c = TokenContents {
            retry: None,
            issued: Duration::from_secs(5),
        };
        let t = k.seal(addr("[2001:db8::1]:1000"), &c, [1; 12]);
        assert_eq!(k.open(addr("[2001:db8::1]:2000"), &t), Some(c));
        assert_eq!(k.open(addr("[2001:db8::2]:1000"), &t), None);
    }

    proptest! {
        #[test]
        fn open_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..120)) {
            let k = TokenKey::new(&[7; 32]);
            prop_assert_eq!(k.open(addr("10.0.0.1:1"), &bytes), None);
        }
    }
}
