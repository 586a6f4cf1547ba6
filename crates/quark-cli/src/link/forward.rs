//! The forwarding loop of `quark link up`: IP packets read from one TUN device
//! cross the emulated path and are written to the other.

use std::io;
use std::sync::Arc;
use std::time::Instant;

use quark_netem::{Counters, Path};
use quark_udp::tun::Tun;
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use crate::impair::Impairment;
use crate::timer::Timer;

/// Most datagrams inside the emulated path per direction (bounds memory).
const MAX_QUEUED: usize = 100_000;

/// What the link did.
pub(crate) struct Outcome {
    pub(crate) why: &'static str,
    /// b → a (client to server).
    pub(crate) up: Counters,
    /// a → b.
    pub(crate) down: Counters,
    pub(crate) write_errors: u64,
}

/// Which device a packet came from.
#[derive(Clone, Copy)]
enum From {
    A,
    B,
}

/// Reads packets from `tun` on a thread of its own (TUN reads block) into `tx`.
fn reader(tun: Arc<Tun>, from: From, tx: mpsc::Sender<(From, Vec<u8>)>) -> io::Result<()> {
    std::thread::Builder::new()
        .name(format!("quark-link-{}", tun.name()))
        .spawn(move || {
            let mut buf = vec![0u8; 65_536];
            while let Ok(n) = tun.recv(&mut buf) {
                if tx.blocking_send((from, buf[..n].to_vec())).is_err() {
                    break;
                }
            }
        })?;
    Ok(())
}

/// Forwards between `a` (server side) and `b` (client side) until a signal.
/// The reader threads stay blocked in `read` until the process exits.
pub(crate) async fn forward(a: Tun, b: Tun, imp: &Impairment) -> io::Result<Outcome> {
    let (a, b) = (Arc::new(a), Arc::new(b));
    let (tx, mut rx) = mpsc::channel(4096);
    reader(a.clone(), From::A, tx.clone())?;
    reader(b.clone(), From::B, tx)?;
    let mut path: Path = Path::new(imp.up.clone(), imp.down.clone(), imp.seed);
    path.up.set_max_queued(MAX_QUEUED);
    path.down.set_max_queued(MAX_QUEUED);
    let timer = Timer::new()?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut write_errors = 0u64;
    let mut batch = Vec::with_capacity(256);
    let why = loop {
        let deadline = path.next_deadline();
        tokio::select! {
            n = rx.recv_many(&mut batch, 256) => if n == 0 {
                break "the devices went away";
            },
            () = timer.sleep_until(deadline) => {}
            _ = int.recv() => break "interrupted",
            _ = term.recv() => break "terminated",
            _ = hup.recv() => break "hung up",
        }
        let now = Instant::now();
        for (from, packet) in batch.drain(..) {
            match from {
                From::A => path.down.send(now, packet),
                From::B => path.up.send(now, packet),
            }
        }
        while let Some(p) = path.up.poll(now) {
            write_errors += u64::from(a.send(&p).is_err());
        }
        while let Some(p) = path.down.poll(now) {
            write_errors += u64::from(b.send(&p).is_err());
        }
    };
    Ok(Outcome {
        why,
        up: *path.up.counters(),
        down: *path.down.counters(),
        write_errors,
    })
}
