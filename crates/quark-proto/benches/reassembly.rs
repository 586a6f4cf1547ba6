//! `cargo bench -p quark-proto --bench reassembly`: the stream reassembly buffer
//! (`RecvBuffer`) under arrival orders a connection sees. Prints ns per insert
//! (the reads that keep the buffer drained included), the best of a few runs.

use std::hint::black_box;
use std::time::Instant;

use quark_proto::stream::RecvBuffer;

/// Segment size: a full packet's STREAM frame.
const SEG: usize = 1200;
/// Segments per run.
const N: usize = 100_000;

/// Offsets and lengths in arrival order: `SEG`-byte segments where segment `i`
/// for each `i % every == at` arrives `late` segments later than its turn.
fn delayed(every: usize, late: usize) -> Vec<(u64, usize)> {
    let mut order: Vec<usize> = (0..N).collect();
    let mut i = every / 2;
    while i + late < N {
        order[i..=i + late].rotate_left(1);
        i += every;
    }
    order.into_iter().map(|i| ((i * SEG) as u64, SEG)).collect()
}

/// Runs `segs` through a fresh buffer, reading everything readable after each
/// 8 inserts; returns ns per insert.
fn per_insert(segs: &[(u64, usize)], src: &[u8]) -> f64 {
    let mut best = f64::MAX;
    let mut out = vec![0u8; 64 * 1024];
    for _ in 0..5 {
        let mut b = RecvBuffer::new();
        let t = Instant::now();
        for (i, &(o, l)) in segs.iter().enumerate() {
            let at = (o as usize) % (src.len() - l);
            b.insert(o, black_box(&src[at..at + l]));
            if i % 8 == 7 {
                while b.read(&mut out) > 0 {}
            }
        }
        while b.read(&mut out) > 0 {}
        black_box(&out);
        best = best.min(t.elapsed().as_nanos() as f64 / segs.len() as f64);
        assert_eq!(b.read_offset(), b.max_offset());
    }
    best
}

fn main() {
    let src: Vec<u8> = (0..1 << 20).map(|i: u32| (i * 31 % 251) as u8).collect();
    let in_order = delayed(usize::MAX, 0);
    let reorder_01 = delayed(1000, 16);
    let reorder_1 = delayed(100, 16);
    // Every pair of segments swapped.
    let swapped: Vec<(u64, usize)> = (0..N).map(|i| (((i ^ 1) * SEG) as u64, SEG)).collect();
    // An attacker's pattern: 1-byte fragments at every other offset of 1 MiB, then
    // the holes.
    let span = 1 << 20;
    let attack: Vec<(u64, usize)> = (1..span)
        .step_by(2)
        .chain((0..span).step_by(2))
        .map(|o| (o as u64, 1))
        .collect();
    for (name, segs) in [
        ("in order", &in_order),
        ("0.1 % reordered (16 late)", &reorder_01),
        ("1 % reordered (16 late)", &reorder_1),
        ("pairs swapped", &swapped),
    ] {
        println!(
            "reassembly {name}: {:.1} ns per {SEG}-byte insert",
            per_insert(segs, &src)
        );
    }
    println!(
        "reassembly 1-byte fragments, odd offsets then even, 1 MiB: {:.1} ns per insert",
        per_insert(&attack, &src)
    );
}
