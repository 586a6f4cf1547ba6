//! Datagrams per second and CPU per datagram, AF_XDP against kernel UDP, between
//! the same two namespaces. A measurement, not a test (`#[ignore]`d); run it with
//! `cargo test -p quark-udp --release --lib -- --ignored --nocapture measure::`.
//!
//! Each line sends 200 000 datagrams of 1200 bytes from namespace a to b as fast
//! as the sender can (batches of 32), with no flow control: the receiver counts
//! what arrives. CPU is each thread's own user + system time (`RUSAGE_THREAD`);
//! the kernel's receive work in softirq is charged to whichever thread (or
//! ksoftirqd) was running, so the "all CPUs" column adds up the whole machine's
//! busy time over the run (the lab machine is shared: take it as an upper bound).
//! Results are in `BENCHMARKS.md`.

use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, Instant};

use super::{pair, payload, run_in, send_all};
use crate::netns::{Side, ksoftirqd_time, thread_cpu_time};
use crate::xdp::{Attach, XdpConfig, XdpSocket};
use crate::{BATCH_SIZE, RecvMeta, Socket, Transmit};

const TOTAL: usize = 200_000;
const SIZE: usize = 1200;

#[derive(Clone, Copy, Debug)]
enum Backend {
    /// Kernel UDP, one message per datagram (sendmmsg / recvmmsg).
    Udp,
    /// Kernel UDP with GSO on send and GRO on receive.
    UdpGso,
    /// AF_XDP (native XDP where the driver has it: veth does).
    Xdp,
    /// AF_XDP with generic XDP.
    XdpGeneric,
}

fn open(side: &Side, port: u16, backend: Backend) -> Socket {
    let addr = SocketAddr::new(side.ip.into(), port);
    match backend {
        Backend::Udp | Backend::UdpGso => {
            let s = crate::UdpSocket::bind(addr).unwrap();
            let gso = matches!(backend, Backend::UdpGso);
            s.set_gso(gso);
            s.set_gro(gso).unwrap();
            s.into()
        }
        Backend::Xdp | Backend::XdpGeneric => {
            let config = XdpConfig {
                attach: if matches!(backend, Backend::Xdp) {
                    Attach::Auto
                } else {
                    Attach::Generic
                },
                ..XdpConfig::new(&side.interface)
            };
            XdpSocket::bind(addr, &config).unwrap().into()
        }
    }
}

/// This thread's CPU time: (user, system).
fn cpu() -> (Duration, Duration) {
    thread_cpu_time()
}

fn since(start: (Duration, Duration)) -> (Duration, Duration) {
    let now = cpu();
    (now.0 - start.0, now.1 - start.1)
}

fn run(sender: Backend, receiver: Backend) {
    let Some(pair) = pair("bench") else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let to = SocketAddr::new(b.ip.into(), 5000);
    let (ready, wait) = tokio::sync::oneshot::channel();
    let done = Arc::new(AtomicBool::new(false));
    let done_rx = done.clone();
    let rx = run_in(&pair.b.netns, move || async move {
        let sock = open(&b, 5000, receiver);
        ready.send(()).unwrap();
        let mut storage = vec![vec![0u8; 65536]; BATCH_SIZE];
        let mut meta = [RecvMeta::default(); BATCH_SIZE];
        let (mut count, mut first, mut last) = (0usize, None, Instant::now());
        let start_cpu = cpu();
        let before = crate::stats::snapshot();
        loop {
            let mut bufs: Vec<IoSliceMut<'_>> =
                storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            let wait =
                tokio::time::timeout(Duration::from_millis(300), sock.recv(&mut bufs, &mut meta));
            let Ok(got) = wait.await else {
                if done_rx.load(Relaxed) {
                    break;
                }
                continue;
            };
            last = Instant::now();
            first.get_or_insert(last);
            for m in &meta[..got.unwrap()] {
                count += m.len.div_ceil(m.stride);
            }
        }
        let calls = crate::stats::snapshot().since(&before).recv_syscalls;
        (count, last - first.unwrap_or(last), since(start_cpu), calls)
    });
    let tx = run_in(&pair.a.netns, move || async move {
        let sock = open(&a, 0, sender);
        wait.await.unwrap();
        let contents = payload(1, SIZE * BATCH_SIZE);
        let singles: Vec<Transmit<'_>> = contents
            .chunks(SIZE)
            .map(|c| super::datagram(to, c, 0))
            .collect();
        let gso = [Transmit {
            segment_size: Some(SIZE),
            ..super::datagram(to, &contents, 0)
        }];
        let batch: &[Transmit<'_>] = if matches!(sender, Backend::Udp) {
            &singles
        } else {
            &gso
        };
        let start = (Instant::now(), cpu(), crate::stats::snapshot());
        for _ in 0..TOTAL / BATCH_SIZE {
            send_all(&sock, batch).await;
        }
        let calls = crate::stats::snapshot().since(&start.2).send_syscalls;
        let elapsed = (start.0.elapsed(), since(start.1), calls);
        // Keep the socket (and its frames) until the receiver is done.
        (elapsed, sock)
    });
    let soft = ksoftirqd_time();
    let ((send_time, send_cpu, send_calls), sock) = tx.join().unwrap().unwrap();
    done.store(true, Relaxed);
    let (received, recv_time, recv_cpu, recv_calls) = rx.join().unwrap().unwrap();
    let soft_ns = (ksoftirqd_time() - soft).as_nanos() as f64;
    drop(sock);
    let per = |d: Duration, n: usize| d.as_nanos() as f64 / n.max(1) as f64;
    println!(
        "| {sender:?} -> {receiver:?} | {:.0} | {:.0} ({:.1} %) | {:.0} + {:.0} | {:.0} + {:.0} | {:.0} | {:.3} / {:.3} |",
        TOTAL as f64 / send_time.as_secs_f64(),
        received as f64 / recv_time.as_secs_f64().max(1e-9),
        100.0 * received as f64 / TOTAL as f64,
        per(send_cpu.0, TOTAL),
        per(send_cpu.1, TOTAL),
        per(recv_cpu.0, received),
        per(recv_cpu.1, received),
        soft_ns / received.max(1) as f64,
        send_calls as f64 / TOTAL as f64,
        recv_calls as f64 / received.max(1) as f64,
    );
}

#[test]
#[ignore = "measurement"]
fn measure_xdp_against_udp() {
    crate::stats::set_enabled(true);
    println!(
        "| sender -> receiver | sent dgram/s | received dgram/s | sender ns/dgram (user + sys) \
         | receiver ns/dgram (user + sys) | ksoftirqd ns/dgram | syscalls/dgram send / recv |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (s, r) in [
        (Backend::Udp, Backend::Udp),
        (Backend::UdpGso, Backend::UdpGso),
        (Backend::Xdp, Backend::Udp),
        (Backend::Xdp, Backend::UdpGso),
        (Backend::Udp, Backend::Xdp),
        (Backend::UdpGso, Backend::Xdp),
        (Backend::Xdp, Backend::Xdp),
        (Backend::XdpGeneric, Backend::Udp),
        (Backend::UdpGso, Backend::XdpGeneric),
        (Backend::XdpGeneric, Backend::XdpGeneric),
    ] {
        run(s, r);
    }
}
