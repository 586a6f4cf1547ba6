//! The forwarding loop of `quark link up`: IP packets read from one TUN device
//! cross the emulated path and are written to the other.

use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Instant;

use quark_netem::{Counters, Path};
use quark_udp::tun::Tun;
use quark_udp::tun::offload::{self, VNET_HDR_LEN, VnetHeader};
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
    /// Shared with the reader threads, which stay blocked in `read`.
    pub(crate) offloads: Arc<Tally>,
}

/// What the devices' offloads did, both directions together.
#[derive(Default)]
pub(crate) struct Tally {
    /// Super-packets read, and the segments they were cut into.
    pub(crate) cut: AtomicU64,
    pub(crate) cut_into: AtomicU64,
    /// Super-packets written, and the segments they joined.
    pub(crate) joined: AtomicU64,
    pub(crate) joined_from: AtomicU64,
    /// Frames that were not valid IP or used an offload the emulator does
    /// not do (dropped).
    pub(crate) bad: AtomicU64,
}

impl std::fmt::Display for Tally {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = |c: &AtomicU64| c.load(Relaxed);
        write!(
            f,
            "{} super-packets cut into {} segments, {} segments delivered as {} super-packets",
            n(&self.cut),
            n(&self.cut_into),
            n(&self.joined_from),
            n(&self.joined)
        )?;
        if n(&self.bad) > 0 {
            write!(f, ", {} frames could not be segmented", n(&self.bad))?;
        }
        Ok(())
    }
}

/// Which device a packet came from.
#[derive(Clone, Copy)]
enum From {
    A,
    B,
}

/// What a reader hands the forwarding loop: the wire packets of one frame.
type Packets = (From, Vec<Vec<u8>>);

/// Reads frames from `tun` on a thread of its own (TUN reads block), puts them
/// on the wire as a NIC would (segments, checksums) and hands them to `tx`.
fn reader(
    tun: Arc<Tun>,
    from: From,
    tx: mpsc::Sender<Packets>,
    tally: Arc<Tally>,
) -> io::Result<()> {
    std::thread::Builder::new()
        .name(format!("quark-link-{}", tun.name()))
        .spawn(move || {
            // A 64 KB super-packet behind its header.
            let mut buf = vec![0u8; VNET_HDR_LEN + 65_536];
            while let Ok(n) = tun.recv(&mut buf) {
                let mut packets = Vec::new();
                if !tun.offloads() {
                    packets.push(buf[..n].to_vec());
                } else if VnetHeader::split(&buf[..n])
                    .and_then(|(hdr, frame)| offload::to_wire(&hdr, frame, |p| packets.push(p)))
                    .is_err()
                {
                    tally.bad.fetch_add(1, Relaxed);
                    continue;
                } else if packets.len() > 1 {
                    tally.cut.fetch_add(1, Relaxed);
                    tally.cut_into.fetch_add(packets.len() as u64, Relaxed);
                }
                if tx.blocking_send((from, packets)).is_err() {
                    break;
                }
            }
        })?;
    Ok(())
}

/// Writes the packets the link delivered in one round to `tun`; with
/// offloads, as a receiving NIC with GRO would (checksums verified unless
/// `trust`, runs of one flow as one super-packet). Returns the failed writes.
fn deliver(tun: &Tun, packets: &mut Vec<Vec<u8>>, trust: bool, tally: &Tally) -> u64 {
    let mut errors = 0;
    if tun.offloads() {
        offload::coalesce(packets, !trust, |parts| {
            // The header, then one packet, or a super-packet's headers and
            // each segment's payload.
            if parts.len() > 2 {
                tally.joined.fetch_add(1, Relaxed);
                tally.joined_from.fetch_add(parts.len() as u64 - 2, Relaxed);
            }
            errors += u64::from(tun.send_parts(parts).is_err());
        });
    } else {
        for p in packets.iter() {
            errors += u64::from(tun.send(p).is_err());
        }
    }
    packets.clear();
    errors
}

/// Forwards between `a` (server side) and `b` (client side) until a signal.
/// The reader threads stay blocked in `read` until the process exits.
pub(crate) async fn forward(a: Tun, b: Tun, imp: &Impairment) -> io::Result<Outcome> {
    let (a, b) = (Arc::new(a), Arc::new(b));
    let (tx, mut rx) = mpsc::channel(4096);
    let tally = Arc::new(Tally::default());
    reader(a.clone(), From::A, tx.clone(), tally.clone())?;
    reader(b.clone(), From::B, tx, tally.clone())?;
    // A packet leaves the link as it entered (good checksums) unless the link
    // corrupts: then the receiving side checks, as a NIC would.
    let (trust_up, trust_down) = (imp.up.corrupt == 0.0, imp.down.corrupt == 0.0);
    let mut path: Path = Path::new(imp.up.clone(), imp.down.clone(), imp.seed);
    path.up.set_max_queued(MAX_QUEUED);
    path.down.set_max_queued(MAX_QUEUED);
    let timer = Timer::new()?;
    let mut int = signal(SignalKind::interrupt())?;
    let mut term = signal(SignalKind::terminate())?;
    let mut hup = signal(SignalKind::hangup())?;
    let mut write_errors = 0u64;
    let mut batch = Vec::with_capacity(256);
    let mut due = Vec::with_capacity(256);
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
        for (from, packets) in batch.drain(..) {
            let link = match from {
                From::A => &mut path.down,
                From::B => &mut path.up,
            };
            for p in packets {
                link.send(now, p);
            }
        }
        while let Some(p) = path.up.poll(now) {
            due.push(p);
        }
        write_errors += deliver(&a, &mut due, trust_up, &tally);
        while let Some(p) = path.down.poll(now) {
            due.push(p);
        }
        write_errors += deliver(&b, &mut due, trust_down, &tally);
    };
    Ok(Outcome {
        why,
        up: *path.up.counters(),
        down: *path.down.counters(),
        write_errors,
        offloads: tally,
    })
}
