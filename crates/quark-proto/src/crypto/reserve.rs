//! What an idle connection keeps instead of its 1-RTT keys (issue #30).
//!
//! ring's AES-GCM packet key is 576 bytes and its header protection key 256,
//! both ways: 1.6 KiB of every idle connection. The connection keeps the
//! current phase's traffic secrets and the header protection keys' bytes
//! instead (under 0.25 KiB) and derives the keys again with ring when its
//! next packet comes or goes. rustls hands out only the keys of the first
//! phase and the secrets of the next, so the first phase's secrets come
//! from the key log (`Capture`).

use rustls::CipherSuite;
use rustls::quic::Tag;

use crate::crypto::relabel::{
    Capture, Suite, header_key, header_key_bytes, next_secret, packet_key,
};
use crate::crypto::{DirectionalKeys, HeaderProtectionKey, Keys, PacketKey};
use crate::types::Side;

/// Up to 48 bytes (a SHA-384 secret; HP keys are 16 or 32).
#[derive(Clone, Copy)]
struct Bytes {
    buf: [u8; 48],
    len: u8,
}

impl Bytes {
    fn new(b: &[u8]) -> Option<Self> {
        let mut buf = [0; 48];
        buf.get_mut(..b.len())?.copy_from_slice(b);
        Some(Bytes {
            buf,
            len: b.len() as u8,
        })
    }

    fn get(&self) -> &[u8] {
        &self.buf[..usize::from(self.len)]
    }
}

/// The secrets behind the current 1-RTT keys.
pub struct Reserve {
    suite: Suite,
    version: u32,
    /// Traffic secrets of the current phase, ours and the peer's.
    local: Bytes,
    remote: Bytes,
    /// Header protection keys: they do not change with key updates (RFC 9001 §6).
    local_hp: Bytes,
    remote_hp: Bytes,
}

impl Reserve {
    /// From the captured first-phase 1-RTT secrets (`None` if they are not
    /// there or the suite is unknown).
    pub(crate) fn from_capture(
        capture: &Capture,
        suite: CipherSuite,
        version: u32,
        side: Side,
    ) -> Option<Self> {
        let suite = Suite::of(suite)?;
        let (client, server) = (capture.get(2)?, capture.get(3)?);
        let (local, remote) = match side {
            Side::Client => (client, server),
            Side::Server => (server, client),
        };
        Some(Reserve {
            suite,
            version,
            local_hp: Bytes::new(&header_key_bytes(suite, &local, version))?,
            remote_hp: Bytes::new(&header_key_bytes(suite, &remote, version))?,
            local: Bytes::new(&local)?,
            remote: Bytes::new(&remote)?,
        })
    }

    /// The current phase's packet and header protection keys.
    pub fn keys(&self) -> Keys {
        let (s, v) = (self.suite, self.version);
        Keys {
            local: DirectionalKeys {
                header: header_key(s, self.local_hp.get()),
                packet: packet_key(s, self.local.get(), v),
            },
            remote: DirectionalKeys {
                header: header_key(s, self.remote_hp.get()),
                packet: packet_key(s, self.remote.get(), v),
            },
        }
    }

    /// Move to the next phase (a key update, RFC 9001 §6.1).
    pub fn update(&mut self) {
        let (s, v) = (self.suite, self.version);
        let local = next_secret(s, self.local.get(), v);
        let remote = next_secret(s, self.remote.get(), v);
        // Same length as before: the hash's output.
        self.local = Bytes::new(&local).expect("a secret's length");
        self.remote = Bytes::new(&remote).expect("a secret's length");
    }
}

/// Stands in for a key given back while idle. Never used to protect or
/// open a packet (`OneRttKeys::wake` comes first): it fails if it is.
pub(crate) struct Asleep;

impl PacketKey for Asleep {
    fn encrypt_in_place(&self, _: u64, _: &[u8], _: &mut [u8]) -> Result<Tag, rustls::Error> {
        Err(rustls::Error::EncryptError)
    }

    fn decrypt_in_place<'a>(
        &self,
        _: u64,
        _: &[u8],
        _: &'a mut [u8],
    ) -> Result<&'a [u8], rustls::Error> {
        Err(rustls::Error::DecryptError)
    }

    fn tag_len(&self) -> usize {
        // Every TLS 1.3 AEAD QUIC uses has a 16-byte tag (RFC 9001 §5.3).
        16
    }

    fn confidentiality_limit(&self) -> u64 {
        u64::MAX
    }

    fn integrity_limit(&self) -> u64 {
        u64::MAX
    }
}

impl HeaderProtectionKey for Asleep {
    fn encrypt_in_place(&self, _: &[u8], _: &mut u8, _: &mut [u8]) -> Result<(), rustls::Error> {
        Err(rustls::Error::EncryptError)
    }

    fn decrypt_in_place(&self, _: &[u8], _: &mut u8, _: &mut [u8]) -> Result<(), rustls::Error> {
        Err(rustls::Error::DecryptError)
    }

    fn sample_len(&self) -> usize {
        16
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::one_rtt::OneRttKeys;
    use crate::crypto::test_pair::{Sealed, handshake, seal, suites};

    /// One packet `from` → `to`, header protection included, checked.
    fn one_way(from: &mut OneRttKeys, to: &mut OneRttKeys, pn: u64) {
        from.wake();
        let Sealed(_, _, header, mut payload) = seal(from, pn);
        let sample = payload[..16].to_vec();
        let (mut first, mut pn_byte) = (header[0], [header[1]]);
        from.local_header()
            .encrypt_in_place(&sample, &mut first, &mut pn_byte)
            .unwrap();
        to.wake();
        to.remote_header()
            .decrypt_in_place(&sample, &mut first, &mut pn_byte)
            .unwrap();
        assert_eq!((first, pn_byte[0]), (header[0], header[1]), "header keys");
        let n = to
            .decrypt(pn, header[0] & 0x04 != 0, &header, &mut payload)
            .expect("packet keys agree");
        assert_eq!(&payload[..n], &pn.to_be_bytes());
    }

    /// The client sleeps before every packet, the server never: the keys it
    /// derives again match the server's in every phase, whoever updates, for
    /// every suite.
    #[test]
    fn woken_keys_match_a_peer_that_never_slept() {
        for suite in suites() {
            let (client, server) = handshake(suite);
            let reserve = client.tls.one_rtt_reserve(Side::Client);
            assert!(reserve.is_some(), "secrets captured");
            let (ck, cn) = client.one_rtt.unwrap();
            let (sk, sn) = server.one_rtt.unwrap();
            let mut c = OneRttKeys::new(ck, cn).with_reserve(reserve);
            let mut s = OneRttKeys::new(sk, sn);
            let mut pn = 0;
            for phase in 0..4 {
                // The last update settled (a connection sleeps only then).
                c.discard_previous();
                s.discard_previous();
                for _ in 0..2 {
                    c.park();
                    assert!(c.is_asleep(), "phase {phase}");
                    one_way(&mut c, &mut s, pn);
                    c.park();
                    one_way(&mut s, &mut c, pn);
                    pn += 1;
                }
                c.on_ack(pn - 1);
                s.on_ack(pn - 1);
                c.park();
                // The client starts while asleep; the server's update
                // reaches a sleeping client.
                let by_client = phase % 2 == 0;
                let started = if by_client {
                    c.initiate_update()
                } else {
                    s.initiate_update()
                };
                assert!(started);
                if by_client {
                    one_way(&mut c, &mut s, pn);
                } else {
                    one_way(&mut s, &mut c, pn);
                }
                pn += 1;
                assert_eq!(c.key_phase(), s.key_phase());
            }
            assert_eq!((c.updates(), s.updates()), (4, 4));
        }
    }

    /// A connection without a reserve keeps its keys.
    #[test]
    fn without_a_reserve_the_keys_stay() {
        let (client, _) = handshake(suites()[0]);
        let (ck, cn) = client.one_rtt.unwrap();
        let mut c = OneRttKeys::new(ck, cn);
        let held = c.heap_bytes();
        c.park();
        assert!(!c.is_asleep());
        assert_eq!(c.heap_bytes(), held);
    }
}
