//! quark's link emulator (`tc netem` is not available everywhere, and a test
//! network must replay exactly).
//!
//! A sans-IO, clock-free impairment engine: a [`Link`] takes datagrams with
//! [`Link::send`]`(now, datagram)` and hands them back with [`Link::poll`]`(now)`
//! once they are due; [`Link::next_deadline`] says when to poll next. Time is a
//! parameter, so the same engine runs
//!
//! - in quark-proto's deterministic simulated network (simulated clock),
//! - in `quark relay`, a UDP relay between real processes (wall clock), and
//! - in `quark link`, between two network namespaces joined by TUN devices, so
//!   TCP and QUIC cross the very same impairments.
//!
//! Per direction ([`LinkConfig`]): delay, jitter (FIFO unless asked to reorder),
//! random loss, burst loss ([`GilbertElliott`]), reordering with a rate and a
//! depth ([`ReorderDepth`]), duplication, corruption (one flipped byte), a rate
//! limit with a bounded tail-drop queue ([`RateLimit`]) and blackhole periods
//! ([`Blackhole`]). A [`Path`] is two links. Each link draws its randomness
//! from a ChaCha8 stream seeded with a `u64`: same seed, same inputs, same outcome.
//! [`Counters`] say what happened, by cause. (What NICs do to the packets of
//! `quark link`, segmentation and checksums, is beside its TUN devices, in
//! `quark_udp::tun::offload`.)
//!
//! Named networks ([`Profile`]): `lan`, `interop`, `blackhole`, `reorder0.1`,
//! `reorder1` and the grammar `rtt<ms>-loss<pct>[-reorder<pct>][-rate<mbit>]`
//! for the papers' grid (see [`profile`]). [`parse`] reads values people type
//! (`10ms`, `1%`, `100mbit`, `64KB`, `5s/2s`).
//!
//! ```
//! use std::time::{Duration, Instant};
//! use quark_netem::{Link, LinkConfig};
//!
//! let mut link = Link::new(LinkConfig::with_delay(Duration::from_millis(10)), 7);
//! let t0 = Instant::now();
//! link.send(t0, b"hello".to_vec());
//! assert_eq!(link.poll(t0), None);
//! assert_eq!(link.next_deadline(), Some(t0 + Duration::from_millis(10)));
//! assert_eq!(link.poll(t0 + Duration::from_millis(10)), Some(b"hello".to_vec()));
//! ```

#![warn(missing_docs)]

mod config;
mod counters;
mod link;
pub mod parse;
mod path;
pub mod profile;

pub use config::{
    Blackhole, ConfigError, GilbertElliott, LinkConfig, QueueLimit, RateLimit, ReorderDepth,
};
pub use counters::Counters;
pub use link::Link;
pub use path::Path;
pub use profile::Profile;
