//! The relabeled keys against the RFC vectors.

use super::*;

fn hex(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

/// RFC 9369 Appendix A.5: the ChaCha20 keys from the 1-RTT secret, and
/// the same derivation with v1 labels gives RFC 9001 A.5's.
#[test]
fn labels_match_the_rfc_vectors() {
    let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
    let suite = Suite::of(CipherSuite::TLS13_CHACHA20_POLY1305_SHA256).unwrap();
    let h = suite.hash;
    //= https://www.rfc-editor.org/rfc/rfc9369#appendix-A.5
    //# key = 0x3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2
    //# iv = 0xa6b5bc6ab7dafce30ffff5dd
    //# hp = 0xd659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2
    //# ku = 0xc69374c49e3d2a9466fa689e49d476db5d0dfbc87d32ceeaa6343fd0ae4c7d88
    let [key, iv, hp, ku] = labels(VERSION_2);
    assert_eq!(
        hex::encode(expand_label(h, &secret, key, 32)),
        "3bfcddd72bcf02541d7fa0dd1f5f9eeea817e09a6963a0e6c7df0f9a1bab90f2"
    );
    assert_eq!(
        hex::encode(expand_label(h, &secret, iv, 12)),
        "a6b5bc6ab7dafce30ffff5dd"
    );
    assert_eq!(
        hex::encode(expand_label(h, &secret, hp, 32)),
        "d659760d2ba434a226fd37b35c69e2da8211d10c4f12538787d65645d5d1b8e2"
    );
    assert_eq!(
        hex::encode(expand_label(h, &secret, ku, 32)),
        "c69374c49e3d2a9466fa689e49d476db5d0dfbc87d32ceeaa6343fd0ae4c7d88"
    );
    //= https://www.rfc-editor.org/rfc/rfc9001#appendix-A.5
    //# key = c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8
    let [key, ..] = labels(crate::packet::VERSION_1);
    assert_eq!(
        hex::encode(expand_label(h, &secret, key, 32)),
        "c6d98ff3441c3fe1b2182094f69caa2ed4b716b65488960a7a984979fb23e1c8"
    );
}

/// Our packet and header protection keys reproduce RFC 9369 A.5's packet
/// byte for byte, and undo it.
#[test]
fn our_keys_seal_and_open() {
    let secret = hex("9ac312a7f877468ebe69422748ad00a15443f18203a07d6060f688f30f21632b");
    let suite = Suite::of(CipherSuite::TLS13_CHACHA20_POLY1305_SHA256).unwrap();
    let keys = directional(suite, &secret, VERSION_2);
    // RFC 9369 A.5: pn 654360564, header 4200bff4, payload 01.
    let mut payload = vec![0x01];
    let tag = keys
        .packet
        .encrypt_in_place(654_360_564, &hex("4200bff4"), &mut payload)
        .unwrap();
    payload.extend_from_slice(tag.as_ref());
    assert_eq!(hex::encode(&payload), "0ae7b6b932bc27d786f4bc2bb20f2162ba");
    let mut first = 0x42;
    let mut pn = hex("00bff4");
    keys.header
        .encrypt_in_place(&payload[1..17], &mut first, &mut pn)
        .unwrap();
    assert_eq!((first, hex::encode(&pn)), (0x55, "58b1c6".to_string()));
    keys.header
        .decrypt_in_place(&payload[1..17], &mut first, &mut pn)
        .unwrap();
    assert_eq!((first, hex::encode(&pn)), (0x42, "00bff4".to_string()));
    let plain = keys
        .packet
        .decrypt_in_place(654_360_564, &hex("4200bff4"), &mut payload)
        .unwrap();
    assert_eq!(plain, [0x01]);
}
