//! Initial packet keys (RFC 9001 §5.2), derived with ring's HKDF directly.
//!
//! Every connection derives them from the client's first Destination
//! Connection ID, on both sides. rustls' `Keys::initial` sets up a new HMAC
//! key for every HKDF-Expand-Label (six for the packet keys alone); here the
//! salt's HMAC key is made once per process and each secret's once per
//! connection, which keeps the same outputs (the RFC's test vectors in
//! `packet/vectors*` check them) for about a third of the instructions.

use std::sync::LazyLock;

use ring::{aead, hkdf};
use rustls::CipherSuite;
use rustls::quic::{DirectionalKeys, Keys};

use super::relabel::{Header, Len, Packet, Suite, labels};
use crate::packet::VERSION_2;
use crate::types::Side;

//= https://www.rfc-editor.org/rfc/rfc9001#section-5.2
//# initial_salt = 0x38762cf7f55934b34d179ae6a4c80cadccbb7f0a
const SALT_V1: [u8; 20] = [
    0x38, 0x76, 0x2c, 0xf7, 0xf5, 0x59, 0x34, 0xb3, 0x4d, 0x17, 0x9a, 0xe6, 0xa4, 0xc8, 0x0c, 0xad,
    0xcc, 0xbb, 0x7f, 0x0a,
];

//= https://www.rfc-editor.org/rfc/rfc9369#section-3.3.1
//# initial_salt = 0x0dede3def700a6db819381be6e269dcbf9bd2ed9
const SALT_V2: [u8; 20] = [
    0x0d, 0xed, 0xe3, 0xde, 0xf7, 0x00, 0xa6, 0xdb, 0x81, 0x93, 0x81, 0xbe, 0x6e, 0x26, 0x9d, 0xcb,
    0xf9, 0xbd, 0x2e, 0xd9,
];

/// The salts' HMAC keys, v1 then v2: made once.
static SALTS: LazyLock<[hkdf::Salt; 2]> = LazyLock::new(|| {
    [
        hkdf::Salt::new(hkdf::HKDF_SHA256, &SALT_V1),
        hkdf::Salt::new(hkdf::HKDF_SHA256, &SALT_V2),
    ]
});

//= https://www.rfc-editor.org/rfc/rfc9001#section-5.2
//# This secret is determined by using HKDF-Extract (see Section 2.2 of
//# [HKDF]) with a salt and the Destination Connection ID, using the hash
//# function specified for TLS_AES_128_GCM_SHA256 and AEAD_AES_128_GCM.
fn suite() -> Suite {
    Suite::of(CipherSuite::TLS13_AES_128_GCM_SHA256).expect("AES-128-GCM is a QUIC suite")
}

//= https://www.rfc-editor.org/rfc/rfc8446#section-7.1
//# HKDF-Expand-Label(Secret, Label, Context, Length) =
//#      HKDF-Expand(Secret, HkdfLabel, Length)
/// HKDF-Expand-Label with an empty context, into `out`.
fn expand(prk: &hkdf::Prk, label: &[u8], out: &mut [u8]) {
    let length = (out.len() as u16).to_be_bytes();
    let label_len = [(b"tls13 ".len() + label.len()) as u8];
    let info: [&[u8]; 5] = [&length, &label_len, b"tls13 ", label, &[0]];
    prk.expand(&info, Len(out.len()))
        .and_then(|okm| okm.fill(out))
        .expect("HKDF output lengths here are far below the limit");
}

/// One direction's packet and header protection keys from its secret.
fn directional(secret: &[u8; 32], version: u32) -> DirectionalKeys {
    let suite = suite();
    let prk = hkdf::Prk::new_less_safe(hkdf::HKDF_SHA256, secret);
    let [key_label, iv_label, hp_label, _] = labels(version);
    let (mut key, mut iv, mut hp) = ([0; 16], [0; 12], [0; 16]);
    expand(&prk, key_label, &mut key);
    expand(&prk, iv_label, &mut iv);
    expand(&prk, hp_label, &mut hp);
    let key = aead::UnboundKey::new(suite.aead, &key).expect("a 16-byte AES-128 key");
    let hp = aead::quic::HeaderProtectionKey::new(suite.hp, &hp).expect("a 16-byte AES key");
    DirectionalKeys {
        header: Box::new(Header(hp)),
        packet: Box::new(Packet {
            key: aead::LessSafeKey::new(key),
            iv,
            suite,
        }),
    }
}

/// The Initial keys of `side` for `version` (v2's salt and labels for
/// QUIC v2, v1's for every other version).
pub(super) fn keys(version: u32, client_dst_cid: &[u8], side: Side) -> Keys {
    let salt = &SALTS[usize::from(version == VERSION_2)];
    let initial = salt.extract(client_dst_cid);
    //= https://www.rfc-editor.org/rfc/rfc9001#section-5.2
    //# client_initial_secret = HKDF-Expand-Label(initial_secret,
    //#                                           "client in", "",
    //#                                           Hash.length)
    //# server_initial_secret = HKDF-Expand-Label(initial_secret,
    //#                                           "server in", "",
    //#                                           Hash.length)
    let (mut client, mut server) = ([0; 32], [0; 32]);
    expand(&initial, b"client in", &mut client);
    expand(&initial, b"server in", &mut server);
    let (client, server) = (directional(&client, version), directional(&server, version));
    match side {
        Side::Client => Keys {
            local: client,
            remote: server,
        },
        Side::Server => Keys {
            local: server,
            remote: client,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::packet::VERSION_1;

    /// The same keys as rustls' derivation: a packet sealed by one opens
    /// with the other, and the header masks agree.
    #[test]
    fn same_keys_as_rustls() {
        for version in [VERSION_1, VERSION_2] {
            for side in [Side::Client, Side::Server] {
                let dcid = [0x83, 0x94, 0xc8, 0xf0, 0x3e, 0x51, 0x57, 0x08, 0x42];
                let ours = keys(version, &dcid, side);
                let suite = rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256
                    .tls13()
                    .unwrap();
                let theirs = Keys::initial(
                    crate::packet::rustls_version(version),
                    suite,
                    suite.quic.unwrap(),
                    &dcid,
                    super::super::rustls_side(side),
                );
                let header = [0xc3, 1, 2, 3];
                let mut payload = *b"sixteen byte msg";
                let tag = ours
                    .local
                    .packet
                    .encrypt_in_place(7, &header, &mut payload)
                    .unwrap();
                let mut sealed = payload.to_vec();
                sealed.extend_from_slice(tag.as_ref());
                let plain = theirs
                    .local
                    .packet
                    .decrypt_in_place(7, &header, &mut sealed)
                    .unwrap();
                assert_eq!(plain, b"sixteen byte msg");
                let sample = [0x55; 16];
                let (mut a, mut b) = ((0xc3, [1, 2, 3, 4]), (0xc3, [1, 2, 3, 4]));
                ours.remote
                    .header
                    .encrypt_in_place(&sample, &mut a.0, &mut a.1)
                    .unwrap();
                theirs
                    .remote
                    .header
                    .encrypt_in_place(&sample, &mut b.0, &mut b.1)
                    .unwrap();
                assert_eq!(a, b);
            }
        }
    }
}
