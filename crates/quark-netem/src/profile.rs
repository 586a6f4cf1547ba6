//! Named network profiles and the grammar for a grid of them.
//!
//! | name | what | from |
//! |---|---|---|
//! | `lan` | 0.2 ms RTT | a switched LAN |
//! | `rtt<ms>-loss<pct>[-reorder<pct>][-rate<mbit>][-jitter<ms>][-queue<pkts>]` | e.g. `rtt10-loss0.1`, `rtt30-loss1`, `rtt100-loss10` | the RTT × loss grid of seed 002 |
//! | `reorder0.1`, `reorder1` | 10 ms RTT, 0.1 % / 1 % of datagrams held back 1 ms | seed 001 (‰ reordering, 1 ms) on seed 002's base RTT |
//! | `interop` | 15 ms one-way delay (30 ms RTT), 10 Mbit/s, a queue of 25 packets | the QUIC interop runner's `simple-p2p --delay=15ms --bandwidth=10Mbps --queue=25` |
//! | `blackhole` | `interop`, plus traffic flows 5 s, is dropped for 2 s, then flows for good | the interop runner's `blackhole … --on=5s --off=2s` (its `--repeat` defaults to 1) |
//!
//! Every profile is symmetric: both directions get the same impairments (so
//! `loss1` loses 1 % of the data and 1 % of the ACKs), with half the RTT as each
//! direction's delay. Loss and reordering rates are per datagram. Rates count the
//! IPv4 + UDP headers (28 bytes) on top of each datagram, as a real link would.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use crate::config::{Blackhole, LinkConfig, QueueLimit, RateLimit, ReorderDepth};
use crate::parse::ParseError;
use crate::path::Path;

/// The named profiles (the grammar adds any `rtt…` combination).
pub const NAMED: &[&str] = &["lan", "reorder0.1", "reorder1", "interop", "blackhole"];

/// The papers' grid: RTT 10/30/100 ms × loss 0/0.1/1 % (seed 002).
pub const PAPER_GRID: &[&str] = &[
    "rtt10-loss0",
    "rtt10-loss0.1",
    "rtt10-loss1",
    "rtt30-loss0",
    "rtt30-loss0.1",
    "rtt30-loss1",
    "rtt100-loss0",
    "rtt100-loss0.1",
    "rtt100-loss1",
];

/// IPv4 (20) + UDP (8) header bytes a rate limiter adds to each UDP payload.
pub const UDP_IPV4_OVERHEAD: u32 = 28;

/// A network: the impairments of each direction, and its name.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The name it was parsed from.
    pub name: String,
    /// Client → server.
    pub up: LinkConfig,
    /// Server → client.
    pub down: LinkConfig,
}

impl Profile {
    /// Parses a named profile or the `rtt…` grammar.
    pub fn parse(s: &str) -> Result<Profile, ParseError> {
        let name = s.trim();
        let link = match name {
            "lan" => LinkConfig::with_delay(Duration::from_micros(100)),
            "reorder0.1" | "reorder1" => {
                let pct: f64 = name["reorder".len()..].parse().unwrap_or(0.0);
                LinkConfig {
                    reorder: pct / 100.0,
                    reorder_depth: ReorderDepth::Delay(Duration::from_millis(1)),
                    ..LinkConfig::with_delay(Duration::from_millis(5))
                }
            }
            "interop" => interop(),
            "blackhole" => LinkConfig {
                blackhole: Some(Blackhole {
                    on: Duration::from_secs(5),
                    off: Duration::from_secs(2),
                    repeat: Some(1),
                }),
                ..interop()
            },
            _ => grammar(name)?,
        };
        Ok(Profile {
            name: name.to_string(),
            up: link.clone(),
            down: link,
        })
    }

    /// The round-trip time without queueing: both directions' fixed delays.
    pub fn rtt(&self) -> Duration {
        self.up.delay + self.down.delay
    }

    /// A path with these impairments.
    pub fn path<T: AsRef<[u8]> + AsMut<[u8]> + Clone>(&self, seed: u64) -> Path<T> {
        Path::new(self.up.clone(), self.down.clone(), seed)
    }

    /// One line for people: `rtt30-loss1: RTT 30 ms, loss 1 %`.
    pub fn describe(&self) -> String {
        describe(&self.name, &self.up, self.rtt())
    }
}

impl FromStr for Profile {
    type Err = ParseError;
    fn from_str(s: &str) -> Result<Self, ParseError> {
        Profile::parse(s)
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

fn interop() -> LinkConfig {
    LinkConfig {
        rate: Some(RateLimit {
            bits_per_second: 10_000_000,
            queue: QueueLimit::Packets(25),
            overhead: UDP_IPV4_OVERHEAD,
        }),
        ..LinkConfig::with_delay(Duration::from_millis(15))
    }
}

fn unknown(s: &str) -> ParseError {
    ParseError(format!(
        "unknown network profile '{s}' (named: {}; or rtt<ms>-loss<pct>[-reorder<pct>][-rate<mbit>][-jitter<ms>][-queue<pkts>], e.g. rtt30-loss1)",
        NAMED.join(", ")
    ))
}

/// `rtt<ms>[-loss<pct>][-reorder<pct>][-rate<mbit>][-jitter<ms>][-queue<pkts>]`.
fn grammar(s: &str) -> Result<LinkConfig, ParseError> {
    let mut tokens = s.split('-');
    let rtt = tokens
        .next()
        .and_then(|t| t.strip_prefix("rtt"))
        .and_then(number)
        .ok_or_else(|| unknown(s))?;
    let one_way = Duration::from_secs_f64(rtt / 2e3);
    let mut link = LinkConfig::with_delay(one_way);
    let mut seen = Vec::new();
    let mut rate = None;
    let mut queue = None;
    for t in tokens {
        let key = t.trim_end_matches(|c: char| c.is_ascii_digit() || c == '.');
        let v = number(&t[key.len()..]).ok_or_else(|| unknown(s))?;
        if seen.contains(&key) {
            return Err(ParseError(format!("profile '{s}' sets {key} twice")));
        }
        seen.push(key);
        match key {
            "loss" | "reorder" if v > 100.0 => {
                return Err(ParseError(format!("profile '{s}': {key} above 100 %")));
            }
            "loss" => link.loss = v / 100.0,
            "reorder" => link.reorder = v / 100.0,
            "jitter" => link.jitter = Duration::from_secs_f64(v / 1e3),
            "rate" if v > 0.0 => rate = Some((v * 1e6) as u64),
            "queue" if v >= 1.0 => queue = Some(QueueLimit::Packets(v as usize)),
            _ => return Err(unknown(s)),
        }
    }
    match (rate, queue) {
        (Some(bps), q) => {
            let mut r = RateLimit::with_bdp_queue(bps, one_way * 2);
            r.overhead = UDP_IPV4_OVERHEAD;
            if let Some(q) = q {
                r.queue = q;
            }
            link.rate = Some(r);
        }
        (None, Some(_)) => {
            return Err(ParseError(format!("profile '{s}': a queue needs a rate")));
        }
        (None, None) => {}
    }
    Ok(link)
}

/// A plain decimal number below a million.
fn number(s: &str) -> Option<f64> {
    if s.is_empty() || !s.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return None;
    }
    s.parse::<f64>().ok().filter(|v| *v < 1e6)
}

/// One line for people describing a direction's impairments.
pub fn describe(name: &str, l: &LinkConfig, rtt: Duration) -> String {
    let mut parts = vec![format!("RTT {}", ms(rtt))];
    if !l.jitter.is_zero() {
        parts.push(format!("jitter ±{}", ms(l.jitter)));
    }
    if l.loss > 0.0 {
        parts.push(format!("loss {} %", l.loss * 100.0));
    }
    if let Some(ge) = &l.burst {
        parts.push(format!("burst loss {:.3} % mean", ge.mean_loss() * 100.0));
    }
    if l.reorder > 0.0 {
        let depth = match l.reorder_depth {
            ReorderDepth::Delay(d) => ms(d),
            ReorderDepth::Packets(n) => format!("{n} packets"),
        };
        parts.push(format!("reorder {} % by {depth}", l.reorder * 100.0));
    }
    if l.duplicate > 0.0 {
        parts.push(format!("duplicate {} %", l.duplicate * 100.0));
    }
    if l.corrupt > 0.0 {
        parts.push(format!("corrupt {} %", l.corrupt * 100.0));
    }
    if let Some(r) = &l.rate {
        let q = match r.queue {
            QueueLimit::Bytes(b) => format!("{b} B"),
            QueueLimit::Packets(p) => format!("{p} packets"),
        };
        parts.push(format!(
            "{} Mbit/s, queue {q}",
            r.bits_per_second as f64 / 1e6
        ));
    }
    if let Some(b) = &l.blackhole {
        let times = b.repeat.map_or(String::new(), |n| format!(" ×{n}"));
        parts.push(format!(
            "blackhole: on {}, off {}{times}",
            ms(b.on),
            ms(b.off)
        ));
    }
    format!("{name}: {}", parts.join(", "))
}

fn ms(d: Duration) -> String {
    let v = d.as_secs_f64() * 1e3;
    if v >= 1000.0 && v % 1000.0 == 0.0 {
        format!("{} s", v / 1e3)
    } else {
        format!("{v} ms")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_profiles() {
        for name in NAMED.iter().chain(PAPER_GRID) {
            let p = Profile::parse(name).unwrap();
            p.up.validate().unwrap();
            assert_eq!(p.up, p.down, "{name} is symmetric");
        }
        assert_eq!(
            Profile::parse("lan").unwrap().rtt(),
            Duration::from_micros(200)
        );
        let i = Profile::parse("interop").unwrap();
        assert_eq!(i.up.delay, Duration::from_millis(15));
        let r = i.up.rate.unwrap();
        assert_eq!(r.bits_per_second, 10_000_000);
        assert_eq!(r.queue, QueueLimit::Packets(25));
        let b = Profile::parse("blackhole").unwrap();
        assert_eq!(b.up.blackhole.unwrap().on, Duration::from_secs(5));
        assert_eq!(b.up.blackhole.unwrap().off, Duration::from_secs(2));
        let r = Profile::parse("reorder1").unwrap();
        assert_eq!((r.up.reorder, r.rtt()), (0.01, Duration::from_millis(10)));
        assert_eq!(Profile::parse("reorder0.1").unwrap().up.reorder, 0.001);
    }

    #[test]
    fn grammar_grid() {
        let p: Profile = "rtt30-loss1".parse().unwrap();
        assert_eq!(p.rtt(), Duration::from_millis(30));
        assert_eq!(p.up.loss, 0.01);
        let p = Profile::parse("rtt100-loss10").unwrap();
        assert_eq!((p.up.delay, p.up.loss), (Duration::from_millis(50), 0.1));
        let p = Profile::parse("rtt10-loss0.1-reorder1-rate100").unwrap();
        assert_eq!((p.up.loss, p.up.reorder), (0.001, 0.01));
        let r = p.up.rate.unwrap();
        assert_eq!(r.bits_per_second, 100_000_000);
        assert_eq!(r.queue, QueueLimit::Bytes(125_000), "one BDP");
        let p = Profile::parse("rtt20-rate10-queue25-jitter1").unwrap();
        assert_eq!(p.up.rate.unwrap().queue, QueueLimit::Packets(25));
        assert_eq!(p.up.jitter, Duration::from_millis(1));
        assert_eq!(Profile::parse("rtt0").unwrap().rtt(), Duration::ZERO);
    }

    #[test]
    fn bad_profiles() {
        for bad in [
            "",
            "wifi",
            "rtt",
            "loss1",
            "rtt10-loss",
            "rtt10-loss101",
            "rtt10-loss1-loss2",
            "rtt10-queue25",
            "rtt10-rate0",
            "rtt-10",
            "rtt10-foo3",
            "rtt1e3",
            "rtt10-loss-1",
            "reorder2",
        ] {
            assert!(Profile::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn descriptions() {
        assert_eq!(
            Profile::parse("rtt30-loss1").unwrap().describe(),
            "rtt30-loss1: RTT 30 ms, loss 1 %"
        );
        let d = Profile::parse("blackhole").unwrap().describe();
        assert!(d.contains("10 Mbit/s, queue 25 packets"), "{d}");
        assert!(d.contains("on 5 s, off 2 s ×1"), "{d}");
    }
}
