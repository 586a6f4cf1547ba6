//! The Retry Integrity Tag (RFC 9001 §5.8): AES-128-GCM over the Retry
//! pseudo-packet with a fixed key and nonce, computed with ring.

use std::sync::LazyLock;

use ring::aead::{AES_128_GCM, Aad, LessSafeKey, Nonce, UnboundKey};

//= https://www.rfc-editor.org/rfc/rfc9001#section-5.8
//# *  The secret key, K, is 128 bits equal to
//#    0xbe0c690b9f66575a1d766b54e368c84e.
//#
//# *  The nonce, N, is 96 bits equal to 0x461599d35d632bf2239825bb.
//#
//# *  The plaintext, P, is empty.
const KEY: [u8; 16] = [
    0xbe, 0x0c, 0x69, 0x0b, 0x9f, 0x66, 0x57, 0x5a, 0x1d, 0x76, 0x6b, 0x54, 0xe3, 0x68, 0xc8, 0x4e,
];
const NONCE: [u8; 12] = [
    0x46, 0x15, 0x99, 0xd3, 0x5d, 0x63, 0x2b, 0xf2, 0x23, 0x98, 0x25, 0xbb,
];

//= https://www.rfc-editor.org/rfc/rfc9369#section-3.3.3
//# The key and nonce used for the Retry Integrity Tag (Section 5.8 of
//# [QUIC-TLS]) change to:
//#
//# secret_key = 0x8fb4b01b56ac48e260fbcbcead7ccc92
//#
//# nonce = 0xd86969bc2d7c6d9990efb04a
const KEY_V2: [u8; 16] = [
    0x8f, 0xb4, 0xb0, 0x1b, 0x56, 0xac, 0x48, 0xe2, 0x60, 0xfb, 0xcb, 0xce, 0xad, 0x7c, 0xcc, 0x92,
];
const NONCE_V2: [u8; 12] = [
    0xd8, 0x69, 0x69, 0xbc, 0x2d, 0x7c, 0x6d, 0x99, 0x90, 0xef, 0xb0, 0x4a,
];

fn key(bytes: &[u8; 16]) -> LessSafeKey {
    LessSafeKey::new(UnboundKey::new(&AES_128_GCM, bytes).expect("AES-128 takes a 16-byte key"))
}

static RETRY_KEY: LazyLock<LessSafeKey> = LazyLock::new(|| key(&KEY));
static RETRY_KEY_V2: LazyLock<LessSafeKey> = LazyLock::new(|| key(&KEY_V2));

/// The Retry key and nonce of `version`.
fn key_nonce(version: u32) -> (&'static LessSafeKey, [u8; 12]) {
    if version == crate::packet::VERSION_2 {
        (&RETRY_KEY_V2, NONCE_V2)
    } else {
        (&RETRY_KEY, NONCE)
    }
}

/// Length of the tag.
pub(crate) const TAG_LEN: usize = 16;

//= https://www.rfc-editor.org/rfc/rfc9001#section-5.8
//# Retry Pseudo-Packet {
//#   ODCID Length (8),
//#   Original Destination Connection ID (0..160),
//#   Header Form (1) = 1,
//#   Fixed Bit (1) = 1,
//#   Long Packet Type (2) = 3,
//#   Unused (4),
//#   Version (32),
//#   DCID Len (8),
//#   Destination Connection ID (0..160),
//#   SCID Len (8),
//#   Source Connection ID (0..160),
//#   Retry Token (..),
//# }
fn pseudo_packet(orig_dst_cid: &[u8], retry_without_tag: &[u8]) -> Vec<u8> {
    // Retry packets are rare and ring wants the associated data contiguous, so one
    // small allocation here is the simple choice.
    let mut aad = Vec::with_capacity(1 + orig_dst_cid.len() + retry_without_tag.len());
    aad.push(orig_dst_cid.len() as u8);
    aad.extend_from_slice(orig_dst_cid);
    aad.extend_from_slice(retry_without_tag);
    aad
}

/// The tag for a Retry packet whose bytes (without the tag) are `retry_without_tag`.
pub(crate) fn integrity_tag(
    version: u32,
    orig_dst_cid: &[u8],
    retry_without_tag: &[u8],
) -> [u8; TAG_LEN] {
    let aad = pseudo_packet(orig_dst_cid, retry_without_tag);
    let (key, nonce) = key_nonce(version);
    let tag = key
        .seal_in_place_separate_tag(
            Nonce::assume_unique_for_key(nonce),
            Aad::from(&aad[..]),
            &mut [],
        )
        .expect("an empty plaintext is always accepted");
    let mut out = [0; TAG_LEN];
    out.copy_from_slice(tag.as_ref());
    out
}

/// Whether `tag` authenticates `retry_without_tag` for `orig_dst_cid`. The check is
/// the AEAD's own (constant-time) tag verification of an empty ciphertext.
pub(crate) fn integrity_tag_ok(
    version: u32,
    orig_dst_cid: &[u8],
    retry_without_tag: &[u8],
    tag: &[u8],
) -> bool {
    let Ok(mut tag) = <[u8; TAG_LEN]>::try_from(tag) else {
        return false;
    };
    let aad = pseudo_packet(orig_dst_cid, retry_without_tag);
    let (key, nonce) = key_nonce(version);
    key.open_in_place(
        Nonce::assume_unique_for_key(nonce),
        Aad::from(&aad[..]),
        &mut tag,
    )
    .is_ok()
}
