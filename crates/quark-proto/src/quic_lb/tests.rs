//! The draft's test vectors (Appendix "Load Balancer Test Vectors" and the
//! §4.5.2.4 encryption example), round trips and malformed IDs.

use super::*;
use rand::SeedableRng;

fn h(s: &str) -> Vec<u8> {
    hex::decode(s).unwrap()
}

fn key(s: &str) -> [u8; 16] {
    h(s).try_into().unwrap()
}

/// Encodes `sid` + `nonce` under codepoint `cr`, checks the ID, and that the
/// load balancer's decoder gets `sid` back.
fn check(cr: u8, key: Option<[u8; 16]>, sid: &str, nonce: &str, cid: &str) {
    let (sid, nonce) = (h(sid), h(nonce));
    let config = LbConfig::new(cr, sid.len(), nonce.len(), key).unwrap();
    let encoder = CidEncoder::new(config.clone(), &sid).unwrap();
    let made = encoder.encode(&nonce, 0);
    assert_eq!(
        hex::encode(&*made),
        cid,
        "cr {cr} sid {}",
        hex::encode(&sid)
    );
    let mut lb = Decoder::new();
    lb.add(config);
    assert_eq!(&*lb.server_id(&made).unwrap(), &sid[..]);
}

#[test]
fn plaintext_vectors() {
    check(0, None, "c4605e", "4504cc4f", "07c4605e4504cc4f");
    // The draft's second row is garbled (a nine-digit nonce "3487d970b" and
    // the ID "20a350d28b4203487d970b"); read as nonce 03487d970b, the ID of
    // codepoint 1 with the length encoded is this.
    check(
        1,
        None,
        "350d28b420",
        "03487d970b",
        "2a350d28b42003487d970b",
    );
}

#[test]
fn encryption_example_section_4_5_2_4() {
    let k = key("fdf726a9893ec05c0632d3956680baf0");
    check(0, Some(k), "31441a", "9c69c275", "0767947d29be054a");
}

#[test]
fn encrypted_vectors() {
    let k = key("8f95f09245765f80256934e50c66207f");
    // Four passes, odd length (7).
    check(0, Some(k), "ed793a", "ee080dbf", "0720b1d07b359d3c");
    // Four passes, server ID longer than the nonce (a fourth decryption pass).
    check(
        1,
        Some(k),
        "ed793a51d49b8f5fab65",
        "ee080dbf48",
        "2fcc381bc74cb4fbad2823a3d1f8fed2",
    );
    // Exactly 16 bytes: the single-pass case.
    check(
        2,
        Some(k),
        "ed793a51d49b8f5f",
        "ee080dbf48c0d1e5",
        "504dd2d05a7b0de9b2b9907afb5ecf8cc3",
    );
    // The draft lists this row under cr_bits 3, but its first octet 0x12 is
    // codepoint 0 (length 18); the encrypted 18 bytes are what is checked.
    check(
        0,
        Some(k),
        "ed793a51d49b8f5fab",
        "ee080dbf48c0d1e55d",
        "125779c9cc86beb3a3a4a3ca96fce4bfe0cdbc",
    );
}

#[test]
fn round_trips_every_length() {
    let mut rng = rand::rngs::StdRng::seed_from_u64(7);
    let k = key("000102030405060708090a0b0c0d0e0f");
    for key in [None, Some(k)] {
        for sid_len in 1..=15 {
            for nonce_len in 4..=(19 - sid_len) {
                let config = LbConfig::new(5, sid_len, nonce_len, key).unwrap();
                let sid: Vec<u8> = (0..sid_len).map(|i| 0xa0 ^ i as u8).collect();
                let encoder = CidEncoder::new(config.clone(), &sid).unwrap();
                let mut lb = Decoder::new();
                lb.add(config);
                for _ in 0..4 {
                    let cid = encoder.generate(&mut rng);
                    assert_eq!(cid.len(), 1 + sid_len + nonce_len);
                    assert_eq!(cid[0] >> 5, 5);
                    assert_eq!(usize::from(cid[0] & 0x1f), sid_len + nonce_len);
                    assert_eq!(&*lb.server_id(&cid).unwrap(), &sid[..]);
                    if key.is_some() && sid_len >= 4 {
                        // Encrypted: the server ID is not in clear.
                        assert_ne!(&cid[1..1 + sid_len], &sid[..]);
                    }
                }
            }
        }
    }
}

#[test]
fn nonces_make_distinct_ids() {
    let config = LbConfig::new(0, 2, 6, Some([9; 16])).unwrap();
    let encoder = CidEncoder::new(config, &[1, 2]).unwrap();
    let a = encoder.encode(&[0, 0, 0, 0, 0, 1], 0);
    let b = encoder.encode(&[0, 0, 0, 0, 0, 2], 0);
    assert_ne!(a, b);
}

#[test]
fn random_first_bits_when_length_not_encoded() {
    let config = LbConfig::new(3, 1, 4, None)
        .unwrap()
        .with_length_encoding(false);
    let encoder = CidEncoder::new(config, &[7]).unwrap();
    assert_eq!(encoder.encode(&[1, 2, 3, 4], 0x1b)[0], (3 << 5) | 0x1b);
}

#[test]
fn bad_configurations_are_typed_errors() {
    assert!(matches!(
        LbConfig::new(7, 1, 4, None),
        Err(QuicLbError::Config(_))
    ));
    assert!(matches!(
        LbConfig::new(0, 0, 4, None),
        Err(QuicLbError::Config(_))
    ));
    assert!(matches!(
        LbConfig::new(0, 1, 3, None),
        Err(QuicLbError::Config(_))
    ));
    assert!(matches!(
        LbConfig::new(0, 10, 10, None),
        Err(QuicLbError::Config(_))
    ));
    let config = LbConfig::new(0, 2, 4, None).unwrap();
    assert_eq!(
        CidEncoder::new(config, &[1]).unwrap_err(),
        QuicLbError::ServerIdLength { want: 2, got: 1 }
    );
}

#[test]
fn malformed_ids_are_typed_errors() {
    let mut lb = Decoder::new();
    lb.add(LbConfig::new(1, 3, 4, Some([1; 16])).unwrap());
    assert_eq!(lb.server_id(&[]), Err(QuicLbError::Empty));
    assert_eq!(lb.server_id(&[0xe7; 8]), Err(QuicLbError::Unroutable));
    assert_eq!(lb.server_id(&[0x07; 8]), Err(QuicLbError::UnknownConfig(0)));
    assert_eq!(
        lb.server_id(&[0x27; 5]),
        Err(QuicLbError::Length {
            rotation: 1,
            want: 8,
            got: 5
        })
    );
    lb.remove(1);
    lb.remove(9); // out of range: ignored
    assert_eq!(lb.server_id(&[0x27; 8]), Err(QuicLbError::UnknownConfig(1)));
}

proptest::proptest! {
    #[test]
    fn any_bytes_decode_without_panic(bytes in proptest::collection::vec(0u8.., 0..24)) {
        let mut lb = Decoder::new();
        for cr in 0..7 {
            let key = (cr % 2 == 0).then_some([cr; 16]);
            lb.add(LbConfig::new(cr, 1 + usize::from(cr), 4 + usize::from(cr), key).unwrap());
        }
        let _ = lb.server_id(&bytes);
    }
}

#[test]
fn endpoint_generator_issues_quic_lb_ids() {
    let config = LbConfig::new(2, 2, 6, Some([5; 16])).unwrap();
    let encoder = CidEncoder::new(config.clone(), &[0xbe, 0xef]).unwrap();
    let endpoint = crate::config::EndpointConfig {
        quic_lb: Some(std::sync::Arc::new(encoder)),
        ..Default::default()
    };
    let cids = crate::config::CidGenerator::new(&endpoint);
    assert_eq!(cids.len(), 9);
    let mut lb = Decoder::new();
    lb.add(config);
    let mut rng = rand::rngs::StdRng::seed_from_u64(1);
    for _ in 0..8 {
        let cid = cids.generate(&mut rng);
        assert_eq!(&*lb.server_id(&cid).unwrap(), &[0xbe, 0xef]);
    }
}
