//! RFC 9001 Appendix A: sample packet protection, byte for byte, both ways.

use rustls::crypto::cipher::{AeadKey, Iv};
use rustls::quic::{HeaderProtectionKey, PacketKey};

use super::*;
use crate::crypto::initial_keys;
use crate::types::Side;

mod v2;

fn hex(s: &str) -> Vec<u8> {
    hex::decode(s.split_whitespace().collect::<String>()).unwrap()
}

fn cid(s: &str) -> ConnectionId {
    ConnectionId::new(&hex(s)).unwrap()
}

//= https://www.rfc-editor.org/rfc/rfc9001#appendix-A
//# These packets use an 8-byte client-chosen Destination Connection ID
//# of 0x8394c8f03e515708.
const DCID: &str = "8394c8f03e515708";

//= https://www.rfc-editor.org/rfc/rfc9001#appendix-A.2
//# The unprotected payload of this
//# packet contains the following CRYPTO frame, plus enough PADDING
//# frames to make a 1162-byte payload:
const CLIENT_CRYPTO: &str = "
    060040f1010000ed0303ebf8fa56f129 39b9584a3896472ec40bb863cfd3e868
    04fe3a47f06a2b69484c000004130113 02010000c000000010000e00000b6578
    616d706c652e636f6dff01000100000a 00080006001d00170018001000070005
    04616c706e0005000501000000000033 00260024001d00209370b2c9caa47fba
    baf4559fedba753de171fa71f50f1ce1 5d43e994ec74d748002b000302030400
    0d0010000e0403050306030203080408 050806002d00020101001c0002400100
    3900320408ffffffffffffffff050480 00ffff07048000ffff08011001048000
    75300901100f088394c8f03e51570806 048000ffff";

//# The resulting protected packet is:
const CLIENT_PROTECTED: &str = "
    c000000001088394c8f03e5157080000 449e7b9aec34d1b1c98dd7689fb8ec11
    d242b123dc9bd8bab936b47d92ec356c 0bab7df5976d27cd449f63300099f399
    1c260ec4c60d17b31f8429157bb35a12 82a643a8d2262cad67500cadb8e7378c
    8eb7539ec4d4905fed1bee1fc8aafba1 7c750e2c7ace01e6005f80fcb7df6212
    30c83711b39343fa028cea7f7fb5ff89 eac2308249a02252155e2347b63d58c5
    457afd84d05dfffdb20392844ae81215 4682e9cf012f9021a6f0be17ddd0c208
    4dce25ff9b06cde535d0f920a2db1bf3 62c23e596d11a4f5a6cf3948838a3aec
    4e15daf8500a6ef69ec4e3feb6b1d98e 610ac8b7ec3faf6ad760b7bad1db4ba3
    485e8a94dc250ae3fdb41ed15fb6a8e5 eba0fc3dd60bc8e30c5c4287e53805db
    059ae0648db2f64264ed5e39be2e20d8 2df566da8dd5998ccabdae053060ae6c
    7b4378e846d29f37ed7b4ea9ec5d82e7 961b7f25a9323851f681d582363aa5f8
    9937f5a67258bf63ad6f1a0b1d96dbd4 faddfcefc5266ba6611722395c906556
    be52afe3f565636ad1b17d508b73d874 3eeb524be22b3dcbc2c7468d54119c74
    68449a13d8e3b95811a198f3491de3e7 fe942b330407abf82a4ed7c1b311663a
    c69890f4157015853d91e923037c227a 33cdd5ec281ca3f79c44546b9d90ca00
    f064c99e3dd97911d39fe9c5d0b23a22 9a234cb36186c4819e8b9c5927726632
    291d6a418211cc2962e20fe47feb3edf 330f2c603a9d48c0fcb5699dbfe58964
    25c5bac4aee82e57a85aaf4e2513e4f0 5796b07ba2ee47d80506f8d2c25e50fd
    14de71e6c418559302f939b0e1abd576 f279c4b2e0feb85c1f28ff18f58891ff
    ef132eef2fa09346aee33c28eb130ff2 8f5b766953334113211996d20011a198
    e3fc433f9f2541010ae17c1bf202580f 6047472fb36857fe843b19f5984009dd
    c324044e847a4f4a0ab34f719595de37 252d6235365e9b84392b061085349d73
    203a4a13e96f5432ec0fd4a1ee65accd d5e3904df54c1da510b0ff20dcc0c77f
    cb2c0e0eb605cb0504db87632cf3d8b4 dae6e705769d1de354270123cb11450e
    fc60ac47683d7b8d0f811365565fd98c 4c8eb936bcab8d069fc33bd801b03ade
    a2e1fbc5aa463d08ca19896d2bf59a07 1b851e6c239052172f296bfb5e724047
    90a2181014f3b94a4e97d117b4381303 68cc39dbb2d198065ae3986547926cd2
    162f40a29f0c3c8745c0f50fba3852e5 66d44575c29d39a03f0cda721984b6f4
    40591f355e12d439ff150aab7613499d bd49adabc8676eef023b15b65bfc5ca0
    6948109f23f350db82123535eb8a7433 bdabcb909271a6ecbcb58b936a88cd4e
    8f2e6ff5800175f113253d8fa9ca8885 c2f552e657dc603f252e1a8e308f76f0
    be79e2fb8f5d5fbbe2e30ecadd220723 c8c0aea8078cdfcb3868263ff8f09400
    54da48781893a7e49ad5aff4af300cd8 04a6b6279ab3ff3afb64491c85194aab
    760d58a606654f9f4400e8b38591356f bf6425aca26dc85244259ff2b19c41b9
    f96f3ca9ec1dde434da7d2d392b905dd f3d1f9af93d1af5950bd493f5aa731b4
    056df31bd267b6b90a079831aaf579be 0a39013137aac6d404f518cfd4684064
    7e78bfe706ca4cf5e9c5453e9f7cfd2b 8b4c8d169a44e55c88d4a9a7f9474241
    e221af44860018ab0856972e194cd934";

//= https://www.rfc-editor.org/rfc/rfc9001#appendix-A.3
//# The server sends the following payload in response, including an ACK
//# frame, a CRYPTO frame, and no PADDING frames:
const SERVER_PAYLOAD: &str = "
    02000000000600405a020000560303ee fce7f7b37ba1d1632e96677825ddf739
    88cfc79825df566dc5430b9a045a1200 130100002e00330024001d00209d3c94
    0d89690b84d08a60993c144eca684d10 81287c834d5311bcf32bb9da1a002b00
    020304";

//# The final protected packet is then:
const SERVER_PROTECTED: &str = "
    cf000000010008f067a5502a4262b500 4075c0d95a482cd0991cd25b0aac406a
    5816b6394100f37a1c69797554780bb3 8cc5a99f5ede4cf73c3ec2493a1839b3
    dbcba3f6ea46c5b7684df3548e7ddeb9 c3bf9c73cc3f3bded74b562bfb19fb84
    022f8ef4cdd93795d77d06edbb7aaf2f 58891850abbdca3d20398c276456cbc4
    2158407dd074ee";

/// Build a packet with the given keys, forcing the RFC's packet number length.
#[allow(clippy::too_many_arguments)]
fn protect(
    h: &HeaderParams<'_>,
    pn_len: usize,
    payload: &[u8],
    min_size: usize,
    key: &dyn PacketKey,
    hp: &dyn HeaderProtectionKey,
) -> Vec<u8> {
    let mut buf = Vec::new();
    let b = PacketBuilder::start_with_pn_len(&mut buf, h, pn_len, 1500, key.tag_len());
    assert!(b.remaining(&buf) >= payload.len());
    buf.extend_from_slice(payload);
    let size = b.finish(&mut buf, min_size, key, hp);
    assert_eq!(size, buf.len());
    buf
}

/// Parse, unprotect and decrypt; returns the packet number and the plaintext.
fn unprotect(
    packet: &[u8],
    cid_len: usize,
    largest: Option<u64>,
    key: &dyn PacketKey,
    hp: &dyn HeaderProtectionKey,
) -> (PartialDecode, Unprotected, Vec<u8>) {
    let mut packet = packet.to_vec();
    let pd = PartialDecode::new(&packet, cid_len).unwrap();
    assert_eq!(pd.len, packet.len());
    let h = remove_header_protection(&mut packet[..pd.len], &pd, hp, largest).unwrap();
    let range = decrypt_payload(&mut packet[..pd.len], &h, key).unwrap();
    (pd, h, packet[range].to_vec())
}

#[test]
fn a2_client_initial() {
    let client = initial_keys(&hex(DCID), Side::Client);
    let dcid = cid(DCID);
    let h = HeaderParams {
        kind: PacketKind::Initial,
        version: VERSION_1,
        dst_cid: &dcid,
        src_cid: &ConnectionId::EMPTY,
        token: &[],
        pn: 2,
        largest_acked: None,
        key_phase: false,
        spin: false,
    };
    // Only the CRYPTO frame goes in: finish() adds the PADDING up to 1200 bytes.
    let crypto = hex(CLIENT_CRYPTO);
    let packet = protect(
        &h,
        4,
        &crypto,
        MIN_INITIAL_SIZE,
        client.local.packet.as_ref(),
        client.local.header.as_ref(),
    );
    assert_eq!(hex::encode(&packet), hex::encode(hex(CLIENT_PROTECTED)));

    // The server, with its own derivation of the same keys, reads it back.
    let server = initial_keys(&hex(DCID), Side::Server);
    let (pd, h, plain) = unprotect(
        &packet,
        0,
        None,
        server.remote.packet.as_ref(),
        server.remote.header.as_ref(),
    );
    assert_eq!(pd.ty, HeaderType::Frames(PacketKind::Initial));
    assert_eq!(pd.dst_cid, dcid);
    assert_eq!(h.pn, 2);
    assert_eq!(h.header_len, 22);
    assert!(h.reserved_bits_zero);
    let mut expected = crypto;
    expected.resize(1162, 0);
    assert_eq!(plain, expected);
}

#[test]
fn a3_server_initial() {
    let server = initial_keys(&hex(DCID), Side::Server);
    let scid = cid("f067a5502a4262b5");
    let h = HeaderParams {
        kind: PacketKind::Initial,
        version: VERSION_1,
        dst_cid: &ConnectionId::EMPTY,
        src_cid: &scid,
        token: &[],
        pn: 1,
        largest_acked: None,
        key_phase: false,
        spin: false,
    };
    let payload = hex(SERVER_PAYLOAD);
    let packet = protect(
        &h,
        2,
        &payload,
        0,
        server.local.packet.as_ref(),
        server.local.header.as_ref(),
    );
    assert_eq!(hex::encode(&packet), hex::encode(hex(SERVER_PROTECTED)));

    let client = initial_keys(&hex(DCID), Side::Client);
    let (pd, h, plain) = unprotect(
        &packet,
        0,
        Some(0),
        client.remote.packet.as_ref(),
        client.remote.header.as_ref(),
    );
    assert_eq!(pd.src_cid, scid);
    assert_eq!(h.pn, 1);
    assert_eq!(plain, payload);
}

#[test]
fn initial_keys_are_directional() {
    // A client's own key does not open what it sent as if it came from the server.
    let client = initial_keys(&hex(DCID), Side::Client);
    let mut packet = hex(CLIENT_PROTECTED);
    let pd = PartialDecode::new(&packet, 0).unwrap();
    let h = remove_header_protection(&mut packet, &pd, client.remote.header.as_ref(), None);
    if let Ok(h) = h {
        assert!(decrypt_payload(&mut packet, &h, client.remote.packet.as_ref()).is_err());
    }
}

//= https://www.rfc-editor.org/rfc/rfc9001#appendix-A.4
//# This shows a Retry packet that might be sent in response to the
//# Initial packet in Appendix A.2.  The integrity check includes the
//# client-chosen connection ID value of 0x8394c8f03e515708, but that
//# value is not included in the final Retry packet:
//#
//# ff000000010008f067a5502a4262b574 6f6b656e04a265ba2eff4d829058fb3f
//# 0f2496ba
#[test]
fn a4_retry() {
    check_retry(
        VERSION_1,
        "ff000000010008f067a5502a4262b5746f6b656e04a265ba2eff4d829058fb3f0f2496ba",
    );
}

/// Builds Appendix A.4's Retry for `version`, compares it with `expected`,
/// and checks that its integrity tag catches every flipped bit.
fn check_retry(version: u32, expected: &str) -> Vec<u8> {
    let mut buf = Vec::new();
    let odcid = cid(DCID);
    write_retry(
        &mut buf,
        version,
        &ConnectionId::EMPTY,
        &cid("f067a5502a4262b5"),
        &odcid,
        b"token",
        0x0f,
    );
    assert_eq!(hex::encode(&buf), hex::encode(hex(expected)));
    assert!(retry_integrity_ok(&odcid, &buf));
    for bit in 0..buf.len() * 8 {
        let mut flipped = buf.clone();
        flipped[bit / 8] ^= 1 << (bit % 8);
        assert!(!retry_integrity_ok(&odcid, &flipped), "bit {bit}");
    }
    buf
}

//= https://www.rfc-editor.org/rfc/rfc9001#appendix-A.5
//# pn                 = 654360564 (decimal)
//# nonce              = e0459b3474bdd0e46d417eb0
//# unprotected header = 4200bff4
//# payload plaintext  = 01
//# payload ciphertext = 655e5cd55c41f69080575d7999c25a5bfb
//# [...]
//# packet = 4cfe4189655e5cd55c41f69080575d7999c25a5bfb
#[test]
fn a5_chacha20_short_header() {
    let (buf, h, plain) = chacha20_short_header(
        VERSION_1,
        "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8",
        "e0459b3474bdd0e44a41c144",
        "25a282b9e82f06f21f488917a4fc8f1b73573685608597d0efcb076b0ab7a7a4",
        "4cfe4189655e5cd55c41f69080575d7999c25a5bfb",
    );
    assert_eq!(
        buf.len(),
        21,
        "the smallest possible packet needs no padding"
    );
    assert_eq!(h.header_len, 4);
    assert!(!h.key_phase && !h.spin && h.reserved_bits_zero);
    assert_eq!(plain, [0x01]);
}

/// Appendix A.5's one-byte PING in a short-header packet with packet number
/// 654360564 under ChaCha20-Poly1305 (`key`, `iv`, `hp` in hex): built and
/// compared with `expected`, then opened again.
fn chacha20_short_header(
    version: u32,
    key: &str,
    iv: &str,
    hp: &str,
    expected: &str,
) -> (Vec<u8>, Unprotected, Vec<u8>) {
    let key: [u8; 32] = hex(key).try_into().unwrap();
    let iv: [u8; 12] = hex(iv).try_into().unwrap();
    let hp: [u8; 32] = hex(hp).try_into().unwrap();
    let alg = rustls::crypto::ring::cipher_suite::TLS13_CHACHA20_POLY1305_SHA256
        .tls13()
        .unwrap()
        .quic
        .unwrap();
    let packet_key = alg.packet_key(AeadKey::from(key), Iv::from(iv));
    let hp_key = alg.header_protection_key(AeadKey::from(hp));

    let pn = 654_360_564;
    let h = HeaderParams {
        kind: PacketKind::OneRtt,
        version,
        dst_cid: &ConnectionId::EMPTY,
        src_cid: &ConnectionId::EMPTY,
        token: &[],
        pn,
        // far enough behind that three bytes are the shortest safe encoding
        largest_acked: Some(pn - 0x1_0000),
        key_phase: false,
        spin: false,
    };
    let mut buf = Vec::new();
    let b = PacketBuilder::start(&mut buf, &h, 1500, packet_key.tag_len());
    assert_eq!(b.pn_len, 3);
    buf.push(0x01); // PING
    b.finish(&mut buf, 0, packet_key.as_ref(), hp_key.as_ref());
    assert_eq!(hex::encode(&buf), expected);

    let (pd, h, plain) = unprotect(&buf, 0, Some(pn - 1), packet_key.as_ref(), hp_key.as_ref());
    assert_eq!(pd.ty, HeaderType::Frames(PacketKind::OneRtt));
    assert_eq!(h.pn, pn);
    (buf, h, plain)
}
