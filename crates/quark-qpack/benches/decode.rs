//! `cargo bench -p quark-qpack`: decoding a request's field section with
//! Huffman-coded strings, against the same fields sent raw (the baseline, in
//! the same run). Prints ns per section and the ratio.

use std::hint::black_box;
use std::time::Instant;

/// A raw-string section of `fields`, built by hand: name reference or
/// literal name, H bit clear.
fn raw_section(fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = vec![0, 0];
    for (name, value) in fields {
        // Literal field line with literal name, 3-bit length prefix.
        put_len(&mut out, 0x20, 3, name.len());
        out.extend_from_slice(name);
        put_len(&mut out, 0x00, 7, value.len());
        out.extend_from_slice(value);
    }
    out
}

/// An RFC 7541 §5.1 prefix integer (lengths here are small).
fn put_len(out: &mut Vec<u8>, flags: u8, bits: u32, mut n: usize) {
    let max = (1usize << bits) - 1;
    if n < max {
        out.push(flags | n as u8);
        return;
    }
    out.push(flags | max as u8);
    n -= max;
    while n >= 128 {
        out.push((n % 128) as u8 | 0x80);
        n /= 128;
    }
    out.push(n as u8);
}

fn per_decode(block: &[u8]) -> f64 {
    let n = 200_000;
    let t = Instant::now();
    for _ in 0..n {
        black_box(quark_qpack::decode_section(black_box(block), 1 << 16).unwrap());
    }
    t.elapsed().as_nanos() as f64 / n as f64
}

fn main() {
    let fields: &[(&[u8], &[u8])] = &[
        (b"user-agent", b"mozilla/5.0 (x11; linux x86_64) applewebkit/537.36 (khtml, like gecko) chrome/120.0.0.0 safari/537.36"),
        (b"accept-language", b"en-us,en;q=0.9,de;q=0.8,fr;q=0.7"),
        (b"x-request-identifier", b"5f0c2a9e-7d41-4b8a-9c3e-1a2b3c4d5e6f"),
    ];
    let mut huffman = Vec::new();
    quark_qpack::encode_section(fields, &mut huffman);
    let raw = raw_section(fields);
    assert_eq!(
        quark_qpack::decode_section(&raw, 1 << 16),
        quark_qpack::decode_section(&huffman, 1 << 16)
    );
    let (h, r) = (per_decode(&huffman), per_decode(&raw));
    println!(
        "field section decode: Huffman {} B {h:.0} ns, raw {} B {r:.0} ns, ratio {:.2}",
        huffman.len(),
        raw.len(),
        h / r
    );
}
