//! Header bytes on the wire for a browser loading one page (30 requests
//! and responses, `session_data.rs`), QPACK with the static table only
//! against the dynamic table (4096 bytes, 16 blocked streams):
//! `cargo run -p quark-qpack --example browsing_session`.
//!
//! The page loads as browsers do: the document alone, then its resources in
//! waves of 10 requests sent before any answer (and acknowledgment) comes.

mod session_data;

use std::time::Instant;

use quark_qpack::{Decoder, Encoder};
use session_data::run;

/// CPU time per request head, encode and decode (and acknowledgments), in
/// steady state: the session's requests over and over on one connection.
fn cost(capacity: u64, sets: &[session_data::Fields]) -> f64 {
    let mut enc = Encoder::new(capacity, 16, capacity);
    let mut dec = Decoder::new(capacity, 16);
    let fields: Vec<Vec<(&[u8], &[u8])>> = sets
        .iter()
        .map(|s| {
            s.iter()
                .map(|(k, v)| (k.as_bytes(), v.as_bytes()))
                .collect()
        })
        .collect();
    let rounds = 20_000;
    let (mut block, mut ins, mut acks) = (Vec::new(), Vec::new(), Vec::new());
    let start = Instant::now();
    for r in 0..rounds {
        let stream = r as u64 * 4;
        block.clear();
        enc.encode_section(stream, &fields[r % fields.len()], &mut block);
        ins.clear();
        enc.take_instructions(&mut ins);
        dec.feed_encoder_stream(&ins).unwrap();
        let got = dec
            .decode_section(stream, &block, 1 << 20)
            .unwrap()
            .unwrap();
        std::hint::black_box(got);
        acks.clear();
        dec.take_instructions(&mut acks);
        enc.feed_decoder_stream(&acks).unwrap();
    }
    start.elapsed().as_nanos() as f64 / rounds as f64
}

fn main() {
    let n = session_data::len();
    let requests: Vec<_> = (0..n).map(session_data::request).collect();
    let responses: Vec<_> = (0..n).map(session_data::response).collect();
    let waves = [1, 10, 10, 9];
    let raw: usize = requests
        .iter()
        .chain(&responses)
        .flatten()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    println!("{n} requests + {n} responses, {raw} bytes of names and values uncompressed\n");
    println!("| direction | table | field sections | encoder stream | decoder stream | total |");
    println!("|---|---|---:|---:|---:|---:|");
    let mut totals = [0usize; 2];
    for (name, sets) in [("requests", &requests), ("responses", &responses)] {
        for (t, cap) in [0u64, 4096].into_iter().enumerate() {
            let w = run(cap, sets, &waves);
            let total = w.sections + w.encoder + w.decoder;
            totals[t] += total;
            let table = if cap == 0 {
                "static only"
            } else {
                "dynamic 4096"
            };
            println!(
                "| {name} | {table} | {} | {} | {} | {total} |",
                w.sections, w.encoder, w.decoder
            );
        }
    }
    println!(
        "\nCPU per request head (encode + decode): static {:.0} ns, dynamic {:.0} ns",
        cost(0, &requests),
        cost(4096, &requests)
    );
    // A benchmark's minimal head, as the lab's rps runs send.
    let minimal: Vec<session_data::Fields> = (0..30)
        .map(|i| {
            [
                (":method", "GET"),
                (":scheme", "https"),
                (":authority", "localhost:4433"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .chain([(":path".to_string(), format!("/bytes/{}", 2048 + i))])
            .collect()
        })
        .collect();
    println!(
        "CPU per minimal head (4 fields): static {:.0} ns, dynamic {:.0} ns",
        cost(0, &minimal),
        cost(4096, &minimal)
    );
    println!(
        "\nall header bytes: static only {}, dynamic {} ({:.1} % of static)",
        totals[0],
        totals[1],
        totals[1] as f64 * 100.0 / totals[0] as f64
    );
}
