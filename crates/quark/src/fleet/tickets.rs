//! TLS 1.3 session tickets sealed with the fleet's shared keys.
//!
//! Wire form: `key id (4, big-endian) | nonce (12) | ChaCha20-Poly1305(state) | tag (16)`.
//! The key id picks the key, so an old key opens only its own tickets (no
//! trial decryption), and a server that lacks the key refuses the ticket
//! (the client then does a full handshake).

use std::sync::{Arc, RwLock};

use ring::aead::{Aad, CHACHA20_POLY1305, LessSafeKey, NONCE_LEN, Nonce, UnboundKey};
use ring::rand::{SecureRandom, SystemRandom};

use super::keys::{KeyId, MAX_KEYS_PER_KIND};

/// Lifetime announced for tickets (RFC 8446 §4.6.1 allows up to 7 days);
/// rotate the ticket key at least this often for forward secrecy.
pub const TICKET_LIFETIME_SECS: u32 = 12 * 3600;

const ID_LEN: usize = 4;
const TAG_LEN: usize = 16;

/// Seals tickets with the current shared key, opens them with any listed key.
/// [`SharedTicketer::replace`] swaps the keys in place (a reload).
pub struct SharedTicketer {
    keys: RwLock<Arc<Vec<(KeyId, LessSafeKey)>>>,
    rng: SystemRandom,
}

impl SharedTicketer {
    /// A ticketer with `keys` (newest first; at most [`MAX_KEYS_PER_KIND`] used).
    pub fn new(keys: &[(KeyId, [u8; 32])]) -> Self {
        SharedTicketer {
            keys: RwLock::new(Arc::new(Self::build(keys))),
            rng: SystemRandom::new(),
        }
    }

    fn build(keys: &[(KeyId, [u8; 32])]) -> Vec<(KeyId, LessSafeKey)> {
        keys.iter()
            .take(MAX_KEYS_PER_KIND)
            .map(|(id, secret)| {
                let key = UnboundKey::new(&CHACHA20_POLY1305, secret)
                    .expect("ChaCha20-Poly1305 takes a 32-byte key");
                (*id, LessSafeKey::new(key))
            })
            .collect()
    }

    /// Use `keys` from now on (newest first).
    pub fn replace(&self, keys: &[(KeyId, [u8; 32])]) {
        let keys = Arc::new(Self::build(keys));
        *self.keys.write().unwrap_or_else(|e| e.into_inner()) = keys;
    }

    fn current(&self) -> Arc<Vec<(KeyId, LessSafeKey)>> {
        self.keys.read().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

impl std::fmt::Debug for SharedTicketer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<KeyId> = self.current().iter().map(|k| k.0).collect();
        f.debug_struct("SharedTicketer")
            .field("keys", &ids)
            .finish()
    }
}

impl rustls::server::ProducesTickets for SharedTicketer {
    fn enabled(&self) -> bool {
        true
    }

    fn lifetime(&self) -> u32 {
        TICKET_LIFETIME_SECS
    }

    fn encrypt(&self, plain: &[u8]) -> Option<Vec<u8>> {
        let keys = self.current();
        let (id, key) = keys.first()?;
        let mut nonce = [0u8; NONCE_LEN];
        self.rng.fill(&mut nonce).ok()?;
        let mut out = Vec::with_capacity(ID_LEN + NONCE_LEN + plain.len() + TAG_LEN);
        out.extend_from_slice(&id.to_be_bytes());
        out.extend_from_slice(&nonce);
        let body = out.len();
        out.extend_from_slice(plain);
        let aad = id.to_be_bytes();
        let tag = key
            .seal_in_place_separate_tag(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(aad),
                &mut out[body..],
            )
            .ok()?;
        out.extend_from_slice(tag.as_ref());
        Some(out)
    }

    fn decrypt(&self, cipher: &[u8]) -> Option<Vec<u8>> {
        // Attacker-controlled: every slice is checked, nothing panics.
        let id = KeyId::from_be_bytes(cipher.get(..ID_LEN)?.try_into().ok()?);
        let nonce: [u8; NONCE_LEN] = cipher.get(ID_LEN..ID_LEN + NONCE_LEN)?.try_into().ok()?;
        let sealed = cipher.get(ID_LEN + NONCE_LEN..)?;
        if sealed.len() < TAG_LEN {
            return None;
        }
        let keys = self.current();
        let (_, key) = keys.iter().find(|(k, _)| *k == id)?;
        let mut buf = sealed.to_vec();
        let len = key
            .open_in_place(
                Nonce::assume_unique_for_key(nonce),
                Aad::from(id.to_be_bytes()),
                &mut buf,
            )
            .ok()?
            .len();
        buf.truncate(len);
        Some(buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rustls::server::ProducesTickets;

    #[test]
    fn another_instance_with_the_keys_opens_tickets() {
        let a = SharedTicketer::new(&[(1, [7; 32])]);
        let b = SharedTicketer::new(&[(1, [7; 32])]);
        let t = a.encrypt(b"session state").unwrap();
        assert_eq!(b.decrypt(&t).as_deref(), Some(&b"session state"[..]));
        assert_eq!(SharedTicketer::new(&[(1, [8; 32])]).decrypt(&t), None);
    }

    #[test]
    fn rotation_mints_new_accepts_old() {
        let old = SharedTicketer::new(&[(1, [1; 32])]);
        let t_old = old.encrypt(b"x").unwrap();
        let rotated = SharedTicketer::new(&[(2, [2; 32]), (1, [1; 32])]);
        assert_eq!(rotated.decrypt(&t_old).as_deref(), Some(&b"x"[..]));
        let t_new = rotated.encrypt(b"y").unwrap();
        assert_eq!(&t_new[..4], &2u32.to_be_bytes());
        assert_eq!(old.decrypt(&t_new), None);
        rotated.replace(&[(2, [2; 32])]);
        assert_eq!(rotated.decrypt(&t_old), None);
        assert_eq!(rotated.decrypt(&t_new).as_deref(), Some(&b"y"[..]));
    }

    #[test]
    fn damaged_tickets_are_refused_without_panic() {
        let k = SharedTicketer::new(&[(1, [1; 32])]);
        let t = k.encrypt(b"state").unwrap();
        for i in 0..t.len() {
            let mut bad = t.clone();
            bad[i] ^= 1;
            assert_eq!(k.decrypt(&bad), None);
            assert_eq!(k.decrypt(&t[..i]), None);
        }
    }
}
