//! Packet keys for a QUIC version the TLS session was not started in.
//!
//! RFC 9368 §2.3 lets a server answer a client's v1 Initial in v2. The
//! client's rustls session chose its HKDF labels ("quic key" or "quicv2 key",
//! RFC 9369 §3.3.2) when it wrote the ClientHello and cannot change them, so
//! a client that offers such an upgrade keeps the TLS traffic secrets (rustls
//! hands them out through its key log) and derives the keys of the new
//! version itself: HKDF-Expand-Label from ring, the AEAD and header
//! protection from ring too. No primitive is written here.

use std::sync::{Arc, Mutex};

use ring::{aead, hkdf};
use rustls::quic::{DirectionalKeys, PacketKeySet, Tag};
use rustls::{CipherSuite, KeyLog};

use crate::crypto::{HeaderProtectionKey, Keys, PacketKey};
use crate::packet::VERSION_2;
use crate::types::Side;

/// The traffic secrets the connection needs, by NSS key log label.
const LABELS: [&str; 4] = [
    "CLIENT_HANDSHAKE_TRAFFIC_SECRET",
    "SERVER_HANDSHAKE_TRAFFIC_SECRET",
    "CLIENT_TRAFFIC_SECRET_0",
    "SERVER_TRAFFIC_SECRET_0",
];

/// A key log that keeps this connection's four traffic secrets (fixed
/// slots: bounded) and passes every line on to the configured log.
#[derive(Debug)]
pub(crate) struct Capture {
    inner: Arc<dyn KeyLog>,
    secrets: Mutex<[Option<Vec<u8>>; 4]>,
}

impl Capture {
    pub(crate) fn new(inner: Arc<dyn KeyLog>) -> Self {
        Capture {
            inner,
            secrets: Mutex::new(Default::default()),
        }
    }

    pub(super) fn get(&self, label: usize) -> Option<Vec<u8>> {
        self.secrets.lock().ok()?[label].clone()
    }
}

impl KeyLog for Capture {
    fn log(&self, label: &str, client_random: &[u8], secret: &[u8]) {
        if self.inner.will_log(label) {
            self.inner.log(label, client_random, secret);
        }
        if let Some(i) = LABELS.iter().position(|&l| l == label) {
            if let Ok(mut s) = self.secrets.lock() {
                s[i] = Some(secret.to_vec());
            }
        }
    }

    fn will_log(&self, label: &str) -> bool {
        LABELS.contains(&label) || self.inner.will_log(label)
    }
}

/// The algorithms of one TLS 1.3 cipher suite.
#[derive(Clone, Copy)]
pub(super) struct Suite {
    hash: hkdf::Algorithm,
    aead: &'static aead::Algorithm,
    hp: &'static aead::quic::Algorithm,
    /// RFC 9001 §6.6: packets per key, and forgeries tolerated.
    confidentiality: u64,
    integrity: u64,
}

impl Suite {
    pub(super) fn of(suite: CipherSuite) -> Option<Self> {
        //= https://www.rfc-editor.org/rfc/rfc9001#section-6.6
        //# For AEAD_AES_128_GCM and AEAD_AES_256_GCM, the confidentiality limit
        //# is 2^23 encrypted packets
        //# For AEAD_AES_128_GCM and AEAD_AES_256_GCM, the integrity limit is
        //# 2^52 invalid packets
        //# For AEAD_CHACHA20_POLY1305, the integrity limit is 2^36 invalid
        //# packets
        let aes = |hash, aead, hp| Suite {
            hash,
            aead,
            hp,
            confidentiality: 1 << 23,
            integrity: 1 << 52,
        };
        Some(match suite {
            CipherSuite::TLS13_AES_128_GCM_SHA256 => {
                aes(hkdf::HKDF_SHA256, &aead::AES_128_GCM, &aead::quic::AES_128)
            }
            CipherSuite::TLS13_AES_256_GCM_SHA384 => {
                aes(hkdf::HKDF_SHA384, &aead::AES_256_GCM, &aead::quic::AES_256)
            }
            CipherSuite::TLS13_CHACHA20_POLY1305_SHA256 => Suite {
                hash: hkdf::HKDF_SHA256,
                aead: &aead::CHACHA20_POLY1305,
                hp: &aead::quic::CHACHA20,
                confidentiality: u64::MAX,
                integrity: 1 << 36,
            },
            _ => return None,
        })
    }
}

/// The labels of `version` (RFC 9001 §5.1, RFC 9369 §3.3.2).
pub(super) fn labels(version: u32) -> [&'static [u8]; 4] {
    if version == VERSION_2 {
        [b"quicv2 key", b"quicv2 iv", b"quicv2 hp", b"quicv2 ku"]
    } else {
        [b"quic key", b"quic iv", b"quic hp", b"quic ku"]
    }
}

struct Len(usize);

impl hkdf::KeyType for Len {
    fn len(&self) -> usize {
        self.0
    }
}

//= https://www.rfc-editor.org/rfc/rfc8446#section-7.1
//# HKDF-Expand-Label(Secret, Label, Context, Length) =
//#      HKDF-Expand(Secret, HkdfLabel, Length)
/// HKDF-Expand-Label with an empty context.
pub(super) fn expand_label(
    hash: hkdf::Algorithm,
    secret: &[u8],
    label: &[u8],
    len: usize,
) -> Vec<u8> {
    let prk = hkdf::Prk::new_less_safe(hash, secret);
    let length = (len as u16).to_be_bytes();
    let label_len = [(b"tls13 ".len() + label.len()) as u8];
    let info: [&[u8]; 5] = [&length, &label_len, b"tls13 ", label, &[0]];
    let mut out = vec![0; len];
    prk.expand(&info, Len(len))
        .and_then(|okm| okm.fill(&mut out))
        .expect("HKDF output lengths here are far below the limit");
    out
}

/// AEAD packet protection with a key and IV of ours.
struct Packet {
    key: aead::LessSafeKey,
    iv: [u8; 12],
    suite: Suite,
}

impl Packet {
    fn nonce(&self, pn: u64) -> aead::Nonce {
        //= https://www.rfc-editor.org/rfc/rfc9001#section-5.3
        //# The exclusive OR of the padded packet number and the IV forms the
        //# AEAD nonce.
        let mut nonce = self.iv;
        for (n, p) in nonce[4..].iter_mut().zip(pn.to_be_bytes()) {
            *n ^= p;
        }
        aead::Nonce::assume_unique_for_key(nonce)
    }
}

impl PacketKey for Packet {
    fn encrypt_in_place(
        &self,
        packet_number: u64,
        header: &[u8],
        payload: &mut [u8],
    ) -> Result<Tag, rustls::Error> {
        let tag = self
            .key
            .seal_in_place_separate_tag(self.nonce(packet_number), aead::Aad::from(header), payload)
            .map_err(|_| rustls::Error::EncryptError)?;
        Ok(Tag::from(tag.as_ref()))
    }

    fn decrypt_in_place<'a>(
        &self,
        packet_number: u64,
        header: &[u8],
        payload: &'a mut [u8],
    ) -> Result<&'a [u8], rustls::Error> {
        let plain = self
            .key
            .open_in_place(self.nonce(packet_number), aead::Aad::from(header), payload)
            .map_err(|_| rustls::Error::DecryptError)?;
        Ok(plain)
    }

    fn tag_len(&self) -> usize {
        self.suite.aead.tag_len()
    }

    fn confidentiality_limit(&self) -> u64 {
        self.suite.confidentiality
    }

    fn integrity_limit(&self) -> u64 {
        self.suite.integrity
    }
}

/// Header protection with a key of ours (RFC 9001 §5.4).
struct Header(aead::quic::HeaderProtectionKey);

impl Header {
    fn xor(
        &self,
        sample: &[u8],
        first: &mut u8,
        pn: &mut [u8],
        masked: bool,
    ) -> Result<(), rustls::Error> {
        let mask = self
            .0
            .new_mask(sample)
            .map_err(|_| rustls::Error::General("header protection sample".into()))?;
        //= https://www.rfc-editor.org/rfc/rfc9001#section-5.4.1
        //# if (packet[0] & 0x80) == 0x80:
        //#    # Long header: 4 bits masked
        //#    packet[0] ^= mask[0] & 0x0f
        //# else:
        //#    # Short header: 5 bits masked
        //#    packet[0] ^= mask[0] & 0x1f
        let bits = if *first & 0x80 != 0 { 0x0f } else { 0x1f };
        let plain_first = if masked {
            *first ^ (mask[0] & bits)
        } else {
            *first
        };
        let pn_len = usize::from(plain_first & 0x03) + 1;
        if pn.len() < pn_len {
            return Err(rustls::Error::General(
                "packet number field too short".into(),
            ));
        }
        *first ^= mask[0] & bits;
        for (b, m) in pn.iter_mut().zip(&mask[1..]).take(pn_len) {
            *b ^= m;
        }
        Ok(())
    }
}

impl HeaderProtectionKey for Header {
    fn encrypt_in_place(
        &self,
        sample: &[u8],
        first: &mut u8,
        pn: &mut [u8],
    ) -> Result<(), rustls::Error> {
        self.xor(sample, first, pn, false)
    }

    fn decrypt_in_place(
        &self,
        sample: &[u8],
        first: &mut u8,
        pn: &mut [u8],
    ) -> Result<(), rustls::Error> {
        self.xor(sample, first, pn, true)
    }

    fn sample_len(&self) -> usize {
        self.0.algorithm().sample_len()
    }
}

pub(super) fn packet_key(suite: Suite, secret: &[u8], version: u32) -> Box<dyn PacketKey> {
    let [key, iv, _, _] = labels(version);
    let key = expand_label(suite.hash, secret, key, suite.aead.key_len());
    let iv = expand_label(suite.hash, secret, iv, 12);
    Box::new(Packet {
        key: aead::LessSafeKey::new(
            aead::UnboundKey::new(suite.aead, &key).expect("key of the AEAD's length"),
        ),
        iv: iv.try_into().expect("12 bytes"),
        suite,
    })
}

pub(super) fn directional(suite: Suite, secret: &[u8], version: u32) -> DirectionalKeys {
    DirectionalKeys {
        header: header_key(suite, &header_key_bytes(suite, secret, version)),
        packet: packet_key(suite, secret, version),
    }
}

/// The header protection key's bytes from a traffic secret (RFC 9001 §5.1).
pub(super) fn header_key_bytes(suite: Suite, secret: &[u8], version: u32) -> Vec<u8> {
    expand_label(suite.hash, secret, labels(version)[2], suite.hp.key_len())
}

/// Header protection with `key` (from [`header_key_bytes`]).
pub(super) fn header_key(suite: Suite, key: &[u8]) -> Box<dyn HeaderProtectionKey> {
    Box::new(Header(
        aead::quic::HeaderProtectionKey::new(suite.hp, key).expect("key of the HP's length"),
    ))
}

/// The traffic secret of the next phase (RFC 9001 §6.1, "quic ku").
pub(super) fn next_secret(suite: Suite, secret: &[u8], version: u32) -> Vec<u8> {
    expand_label(suite.hash, secret, labels(version)[3], secret.len())
}

/// The 1-RTT secrets of the phase after the current keys, for key updates.
#[derive(Clone)]
pub struct Secrets {
    suite: Suite,
    version: u32,
    side: Side,
    client: Vec<u8>,
    server: Vec<u8>,
}

impl Secrets {
    //= https://www.rfc-editor.org/rfc/rfc9369#section-3.3.2
    //# The labels used in [QUIC-TLS] to derive packet protection keys
    //# (Section 5.1), header protection keys (Section 5.4), Retry Integrity
    //# Tag keys (Section 5.8), and key updates (Section 6.1) change from
    //# "quic key" to "quicv2 key", from "quic iv" to "quicv2 iv", from "quic
    //# hp" to "quicv2 hp", and from "quic ku" to "quicv2 ku", to meet the
    //# guidance for new versions in Section 9.6 of that document.
    fn update(&mut self) {
        self.client = next_secret(self.suite, &self.client, self.version);
        self.server = next_secret(self.suite, &self.server, self.version);
    }

    /// The packet keys of this phase; then move to the next one.
    pub fn next_packet_keys(&mut self) -> PacketKeySet {
        let (local, remote) = match self.side {
            Side::Client => (&self.client, &self.server),
            Side::Server => (&self.server, &self.client),
        };
        let keys = PacketKeySet {
            local: packet_key(self.suite, local, self.version),
            remote: packet_key(self.suite, remote, self.version),
        };
        self.update();
        keys
    }
}

/// Keys of `version` from the captured secrets of one level: `one_rtt`
/// false for Handshake, true for 1-RTT (with the next phase's secrets).
pub(crate) fn keys(
    capture: &Capture,
    suite: CipherSuite,
    version: u32,
    side: Side,
    one_rtt: bool,
) -> Option<(Keys, Secrets)> {
    let suite = Suite::of(suite)?;
    let at = if one_rtt { 2 } else { 0 };
    let (client, server) = (capture.get(at)?, capture.get(at + 1)?);
    let (local, remote) = match side {
        Side::Client => (&client, &server),
        Side::Server => (&server, &client),
    };
    let keys = Keys {
        local: directional(suite, local, version),
        remote: directional(suite, remote, version),
    };
    let mut next = Secrets {
        suite,
        version,
        side,
        client,
        server,
    };
    next.update();
    Some((keys, next))
}

#[cfg(test)]
#[path = "relabel_tests.rs"]
mod tests;
