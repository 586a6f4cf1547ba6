//! `cargo bench -p quark-proto --bench reassembly`: the stream reassembly buffer
//! (`RecvBuffer`) under arrival orders a connection sees. Prints ns per insert
//! (the reads that keep the buffer drained included), the best of a few runs.
//! Arguments select the patterns whose names contain them; `RUNS=1` runs each
//! once (for counting instructions under callgrind).

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
/// 8 inserts; returns ns per insert. Not inlined, so that callgrind can count
/// its instructions alone (`--toggle-collect='*per_insert*'`).
#[inline(never)]
fn per_insert(segs: &[(u64, usize)], src: &[u8], runs: usize) -> f64 {
    let mut best = f64::MAX;
    let mut out = vec![0u8; 64 * 1024];
    for _ in 0..runs {
        let mut b = RecvBuffer::new();
        // A benchmark measures time: the clock-free rule is for the library.
        #[allow(clippy::disallowed_methods)]
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
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let runs = std::env::var("RUNS").map_or(5, |r| r.parse().unwrap());
    let wanted = |name: &str| filters.is_empty() || filters.iter().any(|f| name.contains(f));
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
        ("1-byte fragments, odd offsets then even, 1 MiB", &attack),
    ] {
        if wanted(name) {
            let ns = per_insert(segs, &src, runs);
            println!("reassembly {name}: {ns:.1} ns per insert");
        }
    }
}
