//! Field sections through the public API: RFC vectors, error cases, and
//! property tests.

use proptest::prelude::*;
use quark_qpack::{DecodeError, Field, decode_section, encode_section, static_entry};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn field(name: &[u8], value: &[u8]) -> Field {
    Field {
        name: name.to_vec().into(),
        value: value.to_vec().into(),
    }
}

fn encode(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    encode_section(fields, &mut out);
    out
}

//= https://www.rfc-editor.org/rfc/rfc9204#appendix-B.1
#[test]
fn rfc9204_b1_literal_with_static_name_reference() {
    let block = hex("0000 510b 2f69 6e64 6578 2e68 746d 6c");
    let fields = decode_section(&block, u64::MAX).unwrap();
    assert_eq!(fields, [field(b":path", b"/index.html")]);
    // Our encoder picks the same form, and leaves so short a value raw.
    assert_eq!(encode(&[(b":path", b"/index.html")]), block);
}

//= https://www.rfc-editor.org/rfc/rfc9204#appendix-B.4
#[test]
fn static_indexed_line_from_b4() {
    // B.4's c1 is Indexed Field Line, static index 1 (:path=/); alone with
    // Required Insert Count 0 it is a valid static-only section.
    assert_eq!(
        decode_section(&[0x00, 0x00, 0xc1], 100).unwrap(),
        [field(b":path", b"/")]
    );
}

/// What comes from the static table is borrowed from it: decoding an
/// indexed line allocates neither name nor value, a name reference only the
/// value, a literal both.
#[test]
fn static_table_strings_are_borrowed_not_copied() {
    use std::borrow::Cow;
    let block = encode(&[
        (b":method", b"GET"),
        (b":path", b"/a-long-enough-path"),
        (b"x-custom", b"v"),
    ]);
    let fields = decode_section(&block, u64::MAX).unwrap();
    let borrowed = |c: &Cow<'static, [u8]>| matches!(c, Cow::Borrowed(_));
    let kinds: Vec<(bool, bool)> = fields
        .iter()
        .map(|f| (borrowed(&f.name), borrowed(&f.value)))
        .collect();
    assert_eq!(kinds, [(true, true), (true, false), (false, false)]);
    assert_eq!(
        fields,
        [
            field(b":method", b"GET"),
            field(b":path", b"/a-long-enough-path"),
            field(b"x-custom", b"v")
        ]
    );
}

#[test]
fn encoder_representations() {
    // Indexed static: :method GET (17) = 0b11_010001; :status 200 (25).
    assert_eq!(encode(&[(b":method", b"GET")]), [0, 0, 0xd1]);
    assert_eq!(encode(&[(b":status", b"200")]), [0, 0, 0xd9]);
    // Index 98 needs a continuation byte: 0xff then 98 - 63 = 35.
    assert_eq!(
        encode(&[(b"x-frame-options", b"sameorigin")]),
        [0, 0, 0xff, 35]
    );
    // Name reference :status (24 → 0x5f, 24 - 15 = 9), raw value "418"
    // (Huffman would not be shorter than 3 bytes).
    assert_eq!(
        encode(&[(b":status", b"418")]),
        [0, 0, 0x5f, 0x09, 0x03, b'4', b'1', b'8']
    );
    // Literal name "ab" raw (Huffman "ab" is 11 bits: 2 bytes, not shorter).
    assert_eq!(encode(&[(b"ab", b"")]), [0, 0, 0x22, b'a', b'b', 0x00]);
    // Strings under 16 bytes stay raw even where Huffman is shorter: literal
    // name "custom-key" (10 bytes: 0x27 then 3 in the 3-bit prefix).
    let out = encode(&[(b"custom-key", b"custom-value")]);
    assert_eq!(out[2..4], [0x27, 0x03]);
    assert_eq!(&out[4..14], b"custom-key");
    assert_eq!(&out[14..], b"\x0ccustom-value");
    // Longer ones are Huffman-coded when shorter: "https://www.example.com"
    // (23 bytes) codes to 17 (RFC 7541 C.6.1), after `location`'s static
    // name reference (index 12: 0x5c).
    let out = encode(&[(b"location", b"https://www.example.com")]);
    assert_eq!(out[2], 0x5c);
    assert_eq!(
        &out[3..],
        hex("91 9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3")
    );
}

#[test]
fn request_round_trip_and_size() {
    let req: &[(&[u8], &[u8])] = &[
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"www.example.com"),
        (b":path", b"/"),
        (b"user-agent", b"quark/0.1"),
        (b"x-custom", b"\x00\xff\x80 caf\xc3\xa9"),
        (b"", b""),
    ];
    let block = encode(req);
    let fields = decode_section(&block, u64::MAX).unwrap();
    let expect: Vec<Field> = req.iter().map(|(n, v)| field(n, v)).collect();
    assert_eq!(fields, expect);

    // The limit is inclusive: exactly the section size decodes.
    let size: u64 = expect.iter().map(Field::size).sum();
    assert_eq!(decode_section(&block, size).unwrap(), expect);
    assert_eq!(decode_section(&block, size - 1), Err(DecodeError::TooLarge));
    assert_eq!(decode_section(&block, 0), Err(DecodeError::TooLarge));
}

#[test]
fn too_large_before_allocation() {
    // A raw 1000-byte value against a 100-byte limit.
    let value = vec![0u8; 1000];
    let block = encode(&[(b"x", &value)]);
    assert_eq!(decode_section(&block, 100), Err(DecodeError::TooLarge));
    // Huffman value: "aaaa…" codes to 5 bits a byte.
    let value = vec![b'a'; 1000];
    let block = encode(&[(b"x", &value)]);
    assert!(block.len() < 700);
    assert_eq!(decode_section(&block, 1000), Err(DecodeError::TooLarge));
    assert!(decode_section(&block, 1033).is_ok());
    // Many small indexed fields: the 32-byte overhead adds up.
    let many = vec![0xd1; 100];
    let block = [&[0u8, 0][..], &many].concat();
    assert_eq!(
        decode_section(&block, 100 * 42 - 1),
        Err(DecodeError::TooLarge)
    );
    assert_eq!(decode_section(&block, 100 * 42).unwrap().len(), 100);
}

#[test]
fn dynamic_references_rejected() {
    use DecodeError::DynamicReference as Dyn;
    // RFC 9204 B.2's section: Required Insert Count 2, post-Base indexes.
    assert_eq!(decode_section(&hex("0381 10 11"), 1000), Err(Dyn));
    // B.4's section: Required Insert Count 4.
    assert_eq!(decode_section(&hex("0500 80 c1 81"), 1000), Err(Dyn));
    // Sign bit set with Required Insert Count 0.
    assert_eq!(decode_section(&[0x00, 0x80], 1000), Err(Dyn));
    // Indexed, T = 0.
    assert_eq!(decode_section(&[0x00, 0x00, 0x80], 1000), Err(Dyn));
    // Name reference, T = 0.
    assert_eq!(decode_section(&[0x00, 0x00, 0x40, 0x00], 1000), Err(Dyn));
    // Post-Base index and post-Base name reference.
    assert_eq!(decode_section(&[0x00, 0x00, 0x10], 1000), Err(Dyn));
    assert_eq!(decode_section(&[0x00, 0x00, 0x00, 0x00], 1000), Err(Dyn));
    // A positive Delta Base is fine without dynamic references.
    assert_eq!(decode_section(&[0x00, 0x05, 0xd1], 1000).unwrap().len(), 1);
}

#[test]
fn other_errors() {
    assert_eq!(decode_section(&[], 1000), Err(DecodeError::Truncated));
    assert_eq!(decode_section(&[0x00], 1000), Err(DecodeError::Truncated));
    assert_eq!(decode_section(&[0x00, 0x00], 1000).unwrap(), []);
    // Index 99: 0xff, 99 - 63 = 36.
    assert_eq!(
        decode_section(&[0, 0, 0xff, 36], 1000),
        Err(DecodeError::BadStaticIndex(99))
    );
    // Name reference to index 200: 0x5f, 200 - 15 = 185 = 0xb9 0x01.
    assert_eq!(
        decode_section(&[0, 0, 0x5f, 0xb9, 0x01, 0x00], 1000),
        Err(DecodeError::BadStaticIndex(200))
    );
    // Value length runs past the block.
    assert_eq!(
        decode_section(&[0, 0, 0x51, 0x05, b'/'], 1000),
        Err(DecodeError::Truncated)
    );
    // Literal name without its value.
    assert_eq!(
        decode_section(&[0, 0, 0x21, b'a'], 1000),
        Err(DecodeError::Truncated)
    );
    // Prefix integer overflow in the Required Insert Count.
    let mut big = vec![0xff];
    big.extend([0xff; 10]);
    big.push(0x01);
    assert_eq!(
        decode_section(&big, 1000),
        Err(DecodeError::IntegerOverflow)
    );
    // Huffman value of one byte of ones: 8 bits of padding.
    assert_eq!(
        decode_section(&[0, 0, 0x51, 0x81, 0xff], 1000),
        Err(DecodeError::BadHuffman)
    );
    // Huffman value "0" padded with 000.
    assert_eq!(
        decode_section(&[0, 0, 0x51, 0x81, 0x00], 1000),
        Err(DecodeError::BadHuffman)
    );
    assert_eq!(DecodeError::TooLarge.code(), 0x0200);
}

#[test]
fn every_static_entry_round_trips_as_one_byte_or_two() {
    for i in 0..quark_qpack::STATIC_TABLE_LEN {
        let (n, v) = static_entry(i).unwrap();
        let block = encode(&[(n, v)]);
        assert!(block.len() <= 4, "index {i}");
        assert_eq!(decode_section(&block, 1000).unwrap(), [field(n, v)]);
    }
}

#[test]
fn all_byte_values_round_trip() {
    let all: Vec<u8> = (0..=255).collect();
    let rev: Vec<u8> = (0..=255).rev().collect();
    let lower: Vec<u8> = (0..=255).map(|_| b'e').collect();
    let block = encode(&[(&all, &rev), (b"content-type", &all), (b"x", &lower)]);
    let fields = decode_section(&block, u64::MAX).unwrap();
    assert_eq!(
        fields,
        [
            field(&all, &rev),
            field(b"content-type", &all),
            field(b"x", &lower)
        ]
    );
}

fn any_name() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        // Static names, to exercise the reference forms.
        (0..quark_qpack::STATIC_TABLE_LEN).prop_map(|i| static_entry(i).unwrap().0.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..40),
        "[a-z0-9-]{0,20}".prop_map(String::into_bytes),
    ]
}

fn any_value() -> impl Strategy<Value = Vec<u8>> {
    prop_oneof![
        (0..quark_qpack::STATIC_TABLE_LEN).prop_map(|i| static_entry(i).unwrap().1.to_vec()),
        proptest::collection::vec(any::<u8>(), 0..300),
        "[ -~]{0,60}".prop_map(String::into_bytes),
    ]
}

proptest! {
    #[test]
    fn round_trip(fields in proptest::collection::vec((any_name(), any_value()), 0..12)) {
        let pairs: Vec<(&[u8], &[u8])> =
            fields.iter().map(|(n, v)| (n.as_slice(), v.as_slice())).collect();
        let block = encode(&pairs);
        let expect: Vec<Field> = fields.iter().map(|(n, v)| field(n, v)).collect();
        let size: u64 = expect.iter().map(Field::size).sum();
        prop_assert_eq!(decode_section(&block, size), Ok(expect));
        if size > 0 {
            prop_assert_eq!(decode_section(&block, size - 1), Err(DecodeError::TooLarge));
        }
    }

    #[test]
    fn decode_never_panics(block in proptest::collection::vec(any::<u8>(), 0..200),
                           limit in prop_oneof![Just(u64::MAX), 0..5000u64]) {
        let _ = decode_section(&block, limit);
        // Static-only prefix, so the body is actually parsed.
        let with_prefix = [&[0u8, 0][..], &block].concat();
        if let Ok(fields) = decode_section(&with_prefix, limit) {
            let size: u64 = fields.iter().map(Field::size).sum();
            prop_assert!(size <= limit);
        }
    }

    #[test]
    fn stream_checks_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64)) {
        if let Ok(n) = quark_qpack::check_encoder_stream(&data) {
            prop_assert!(n <= data.len());
        }
        if let Ok(n) = quark_qpack::check_decoder_stream(&data) {
            prop_assert!(n <= data.len());
            // What is left is a strict prefix of one instruction.
            prop_assert_eq!(quark_qpack::check_decoder_stream(&data[n..]), Ok(0));
        }
    }
}
