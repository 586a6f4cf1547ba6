//! QPACK with the dynamic table: arbitrary bytes as the peer's encoder
//! stream (in pieces) interleaved with field sections on several streams,
//! and as a decoder stream for our encoder. No panics, the blocked-stream
//! limit holds, and whatever decodes goes through a fresh encoder/decoder
//! pair (inserts, references, acknowledgments) back to the same fields.

#![no_main]

use libfuzzer_sys::fuzz_target;
use quark_qpack::{Decoder, Encoder};

fuzz_target!(|data: &[u8]| {
    let Some((&ctl, rest)) = data.split_first() else {
        return;
    };
    // Capacity 0, 220 or 4096 from the first byte; blocked streams 0..=3.
    let capacity = [0u64, 220, 4096, 4096][usize::from(ctl & 3)];
    let blocked = u64::from((ctl >> 2) & 3);
    let mut dec = Decoder::new(capacity, blocked);
    let mut echo_enc = Encoder::new(4096, 2, 4096);
    let mut echo_dec = Decoder::new(4096, 2);
    // Records: [kind, len, bytes...]; kind even = encoder stream, odd = a
    // section on stream (kind / 2) * 4.
    let mut r = rest;
    while let [kind, len, tail @ ..] = r {
        let n = usize::from(*len).min(tail.len());
        let (chunk, next) = tail.split_at(n);
        r = next;
        if kind & 1 == 0 {
            if dec.feed_encoder_stream(chunk).is_err() {
                return;
            }
            continue;
        }
        let stream = u64::from(kind / 2) * 4;
        match dec.decode_section(stream, chunk, 16 * 1024) {
            Err(_) => return,
            Ok(None) => assert!(dec.blocked_streams() as u64 <= blocked),
            Ok(Some(fields)) => {
                let pairs: Vec<(&[u8], &[u8])> =
                    fields.iter().map(|f| (&f.name[..], &f.value[..])).collect();
                let mut block = Vec::new();
                echo_enc.encode_section(stream, &pairs, &mut block);
                let mut ins = Vec::new();
                echo_enc.take_instructions(&mut ins);
                echo_dec.feed_encoder_stream(&ins).expect("our own inserts");
                let again = echo_dec
                    .decode_section(stream, &block, 1 << 20)
                    .expect("our own section")
                    .expect("all inserts delivered");
                assert_eq!(again, fields);
                let mut acks = Vec::new();
                echo_dec.take_instructions(&mut acks);
                echo_enc.feed_decoder_stream(&acks).expect("our own acks");
            }
        }
        let mut out = Vec::new();
        dec.take_instructions(&mut out);
    }
    // The same bytes as a decoder stream for an encoder that inserted.
    let mut enc = Encoder::new(4096, 4, 4096);
    let mut block = Vec::new();
    enc.encode_section(0, &[(b":authority", b"example.com")], &mut block);
    let _ = enc.feed_decoder_stream(rest);
});
