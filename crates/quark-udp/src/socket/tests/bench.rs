//! Measurements, not assertions (`#[ignore]`d; run them with
//! `cargo test -p quark-udp --release --lib -- --ignored --nocapture bench::`).
//!
//! One run on the lab machine (2 shared vCPUs, load average ~9, so only the ratios
//! mean much), 1200-byte datagrams, 32 per send call, 200 000 datagrams:
//!
//! | GSO | GRO | sent dgram/s | received dgram/s | send / recv syscalls |
//! |---|---|---|---|---|
//! | off | off | 72 000 | 72 000 | 6 250 / 80 000 |
//! | on | off | 231 000 | 183 000 (81 % of sent) | 6 250 / 5 000 |
//! | off | on | 75 000 | 75 000 | 6 250 / 81 000 |
//! | on | on | 2 124 000 | 2 396 000 (all) | 6 250 / 3 700 |

use std::io::IoSliceMut;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::{bind, datagram, payload};
use crate::stats::{self, Timer};
use crate::{BATCH_SIZE, RecvMeta, Transmit};

const SIZE: usize = 1200;

/// Sends `total` datagrams of 1200 bytes as fast as possible (32 per system call)
/// while another task receives; prints datagrams per second both ways.
async fn throughput(gso: bool, gro: bool, total: usize) {
    let rx = Arc::new(bind("127.0.0.1:0"));
    let tx = bind("127.0.0.1:0");
    rx.set_gro(gro).unwrap();
    tx.set_gso(gso);
    let to = rx.local_addr().unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let receiver = tokio::spawn({
        let (rx, done) = (rx.clone(), done.clone());
        async move {
            let mut storage = vec![vec![0u8; 65536]; BATCH_SIZE];
            let mut meta = [RecvMeta::default(); BATCH_SIZE];
            let (mut datagrams, mut start, mut last) = (0usize, None, Instant::now());
            loop {
                let mut bufs: Vec<IoSliceMut<'_>> =
                    storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
                let wait =
                    tokio::time::timeout(Duration::from_millis(300), rx.recv(&mut bufs, &mut meta));
                let Ok(got) = wait.await else {
                    if done.load(Relaxed) {
                        break;
                    }
                    continue;
                };
                last = Instant::now();
                start.get_or_insert(last);
                for m in &meta[..got.unwrap()] {
                    datagrams += m.len.div_ceil(m.stride);
                }
            }
            (datagrams, last - start.unwrap_or(last))
        }
    });
    let contents = payload(1, SIZE * BATCH_SIZE);
    let singles: Vec<Transmit<'_>> = contents.chunks(SIZE).map(|c| datagram(to, c)).collect();
    let one_gso = [Transmit {
        segment_size: Some(SIZE),
        ..datagram(to, &contents)
    }];
    let batch: &[Transmit<'_>] = if gso { &one_gso } else { &singles };
    let before = stats::snapshot();
    let start = Instant::now();
    let mut sent = 0;
    while sent < total {
        let mut done_now = 0;
        while done_now < batch.len() {
            done_now += tx.send(&batch[done_now..]).await.unwrap();
        }
        sent += BATCH_SIZE;
    }
    let send_time = start.elapsed();
    done.store(true, Relaxed);
    let (received, recv_time) = receiver.await.unwrap();
    let d = stats::snapshot().since(&before);
    println!(
        "gso={gso:5} gro={gro:5}: sent {:>9.0} dgram/s, received {:>9.0} dgram/s ({:.1} % of sent), \
         {} send / {} recv syscalls",
        sent as f64 / send_time.as_secs_f64(),
        received as f64 / recv_time.as_secs_f64().max(1e-9),
        100.0 * received as f64 / sent as f64,
        d.send_syscalls,
        d.recv_syscalls,
    );
}

#[test]
#[ignore = "measurement"]
fn bench_throughput() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    stats::set_enabled(true);
    rt.block_on(async {
        for (gso, gro) in [(false, false), (true, false), (false, true), (true, true)] {
            throughput(gso, gro, 200_000).await;
        }
    });
}

/// Cost of the counters: `Instant::now()` pairs, and `try_send` of one datagram with
/// counting off and on.
#[test]
#[ignore = "measurement"]
fn bench_stats_overhead() {
    const N: u32 = 200_000;
    let start = Instant::now();
    for _ in 0..N {
        std::hint::black_box(Instant::now().elapsed());
    }
    println!("Instant::now() pair: {:?}", start.elapsed() / N);
    let was = stats::enabled();
    for enabled in [false, true] {
        stats::set_enabled(enabled);
        let start = Instant::now();
        for _ in 0..N {
            Timer::start().stop().sent(1, 1, SIZE);
        }
        println!(
            "counter bookkeeping per system call, stats {enabled:5}: {:?}",
            start.elapsed() / N
        );
    }
    stats::set_enabled(was);

    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let rx = bind("127.0.0.1:0");
        let tx = bind("127.0.0.1:0");
        let p = payload(0, SIZE);
        let t = [datagram(rx.local_addr().unwrap(), &p)];
        for round in 0..3 {
            for enabled in [false, true] {
                stats::set_enabled(enabled);
                let start = Instant::now();
                for _ in 0..N {
                    // The receiver never reads: its queue overflows and the kernel
                    // drops, which costs the sender nothing extra.
                    tx.try_send(&t).unwrap();
                }
                println!(
                    "round {round}: try_send of one datagram, stats {enabled:5}: {:?}",
                    start.elapsed() / N
                );
            }
        }
        stats::set_enabled(was);
    });
}
