//! What `quark relay` sees on the wire, for the interop runner's checks that
//! need a packet capture: the ECN codepoint of every datagram per direction,
//! the version and type of every long-header packet (cleartext in QUIC), the
//! amplification factor before the client's first Handshake packet (RFC 9000
//! §8.1), the client paths the server answered on (rebinding), and the RTT
//! an on-path observer reads from the latency spin bit (RFC 9000 §17.4).
//! Printed as one JSON line (`relay-report {...}`) when the relay stops.

use std::collections::{BTreeMap, VecDeque};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

const V1: u32 = 1;
/// RFC 9369 §3.1.
const V2: u32 = 0x6b33_43cf;
/// ECN codepoints of the last short-header datagrams kept per direction:
/// whether a sender still marks at the end (after ECN validation).
const TAIL: usize = 16;

/// One direction of the relay.
#[derive(Default)]
pub(crate) struct Direction {
    datagrams: u64,
    bytes: u64,
    /// Datagrams by the two ECN bits: Not-ECT, ECT(1), ECT(0), CE.
    ecn: [u64; 4],
    /// Long-header packets by (type, version); versions other than v1 and v2
    /// count as one, so any sender keeps this small.
    long: BTreeMap<(&'static str, &'static str), u64>,
    /// The ECN bits of the last `TAIL` datagrams starting with a short header.
    tail: VecDeque<u8>,
    spin: Spin,
    /// The Destination Connection ID length of the last long header: the
    /// length short headers in this direction use once the handshake is done.
    dcid_len: Option<usize>,
    /// Short-header datagrams with the QUIC bit cleared (greased, RFC 9287).
    quic_bit_cleared: u64,
    /// Long-header packets with the QUIC bit cleared (RFC 9287 greases them
    /// too once the peer's parameters are in); Version Negotiation's bit
    /// means nothing and is not counted.
    long_quic_bit_cleared: u64,
}

/// Spin bit samples kept at most (the first ones; a long run stops adding).
const MAX_SPIN_SAMPLES: usize = 4096;

/// Connections whose spin bit is followed at once; a new one past it takes
/// the place of the one seen longest ago.
const MAX_SPIN_CONNECTIONS: usize = 64;

/// The latency spin bit of one direction's short-header packets: a client's
/// flips once per round trip when both ends spin, so the time between two
/// flips is an RTT sample (RFC 9000 §17.4). Followed per connection, by the
/// packets' Destination Connection ID, so that connections through the relay
/// at once do not mix their flips; its length is read from the long headers
/// the same direction carried (unknown before any: the flips mix then).
#[derive(Default)]
struct Spin {
    /// Per connection ID: the last bit seen, and when it last changed; the
    /// most recently seen last.
    last: VecDeque<(Vec<u8>, bool, Option<Instant>)>,
    flips: u64,
    /// Times between flips.
    samples: Vec<Duration>,
}

impl Spin {
    fn saw(&mut self, dcid: &[u8], bit: bool, now: Instant) {
        let at = self.last.iter().rposition(|(id, ..)| id == dcid);
        let Some(at) = at else {
            // A connection's first packet: its bit is no flip.
            if self.last.len() == MAX_SPIN_CONNECTIONS {
                self.last.pop_front();
            }
            self.last.push_back((dcid.to_vec(), bit, None));
            return;
        };
        if at + 1 != self.last.len() {
            let entry = self.last.remove(at).expect("found");
            self.last.push_back(entry);
        }
        let (_, prev, edge) = self.last.back_mut().expect("just pushed");
        if *prev == bit {
            return;
        }
        self.flips += 1;
        if let Some(edge) = *edge
            && self.samples.len() < MAX_SPIN_SAMPLES
        {
            self.samples.push(now - edge);
        }
        *prev = bit;
        *edge = Some(now);
    }

    fn report(&self) -> Value {
        let mut ms: Vec<f64> = self.samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let median = ms.get(ms.len() / 2).map(|m| (m * 100.0).round() / 100.0);
        json!({"flips": self.flips, "rtt_ms_median": median})
    }
}

impl Direction {
    /// Records one datagram as its sender put it on the wire at `now`.
    pub(crate) fn saw(&mut self, data: &[u8], ecn: u8, now: Instant) {
        self.datagrams += 1;
        self.bytes += data.len() as u64;
        self.ecn[usize::from(ecn & 3)] += 1;
        if let Some(&first) = data.first().filter(|b| *b & 0x80 == 0) {
            if self.tail.len() == TAIL {
                self.tail.pop_front();
            }
            self.tail.push_back(ecn & 3);
            // 0x40 and 0x20 of a short header (the QUIC bit and the spin bit)
            // are outside header protection.
            self.quic_bit_cleared += u64::from(first & 0x40 == 0);
            let dcid = data.get(1..1 + self.dcid_len.unwrap_or(0)).unwrap_or(&[]);
            self.spin.saw(dcid, first & 0x20 != 0, now);
        }
        if let Some(&len) = data.get(5).filter(|_| data[0] & 0x80 != 0) {
            self.dcid_len = Some(usize::from(len).min(20));
        }
        for_each_long(data, |kind, version, first| {
            *self.long.entry((kind, version_name(version))).or_default() += 1;
            self.long_quic_bit_cleared += u64::from(kind != "negotiation" && first & 0x40 == 0);
        });
    }

    fn report(&self) -> Value {
        let long: BTreeMap<String, u64> = self
            .long
            .iter()
            .map(|((kind, v), n)| (format!("{kind} {v}"), *n))
            .collect();
        let tail_ect = self.tail.iter().filter(|&&e| e == 1 || e == 2).count();
        json!({
            "datagrams": self.datagrams, "bytes": self.bytes,
            "not_ect": self.ecn[0], "ect1": self.ecn[1], "ect0": self.ecn[2], "ce": self.ecn[3],
            "long": long,
            "tail_short": self.tail.len(), "tail_ect": tail_ect,
            "spin": self.spin.report(), "quic_bit_cleared": self.quic_bit_cleared,
            "long_quic_bit_cleared": self.long_quic_bit_cleared,
        })
    }
}

/// Bytes each way before the client's first Handshake packet reached the
/// server (then its address is validated, RFC 9000 §8.1), counted at the
/// server: what the client delivered, what the server sent.
#[derive(Default)]
pub(crate) struct Amplification {
    client: u64,
    server: u64,
    validated: bool,
    /// Largest `server - 3 * client` seen after a server datagram.
    worst_excess: i64,
    /// The same over 4x (the runner fails only past 4x).
    worst_excess4: i64,
}

impl Amplification {
    pub(crate) fn client_sent(&mut self, data: &[u8]) {
        if self.validated {
            return;
        }
        let mut handshake = false;
        for_each_long(data, |kind, _, _| handshake |= kind == "handshake");
        if handshake {
            self.validated = true;
        } else {
            self.client += data.len() as u64;
        }
    }

    pub(crate) fn server_sent(&mut self, len: usize) {
        if self.validated {
            return;
        }
        self.server += len as u64;
        let excess = self.server as i64 - 3 * self.client as i64;
        self.worst_excess = self.worst_excess.max(excess);
        self.worst_excess4 = self.worst_excess4.max(excess - self.client as i64);
    }

    fn report(&self) -> Value {
        json!({
            "client_bytes": self.client, "server_bytes": self.server,
            "validated": self.validated, "worst_excess": self.worst_excess,
            "worst_excess4": self.worst_excess4,
        })
    }
}

/// One upstream socket (a client path as the server sees it).
pub(crate) struct PathSeen {
    pub(crate) local: String,
    pub(crate) to_server: u64,
    pub(crate) from_server: u64,
}

/// Everything the relay reports.
#[derive(Default)]
pub(crate) struct Watch {
    pub(crate) up: Direction,
    pub(crate) down: Direction,
    /// Of the first client (the cases that read it have one connection).
    pub(crate) amplification: Amplification,
    pub(crate) paths: Vec<PathSeen>,
}

/// Client paths recorded at most (a relay rebinding every few milliseconds
/// for hours must not grow without bound); later ones add to the last.
pub(crate) const MAX_PATHS: usize = 1000;

impl Watch {
    pub(crate) fn report(&self) -> String {
        let paths: Vec<Value> = self
            .paths
            .iter()
            .map(|p| json!({"local": p.local, "to_server": p.to_server, "from_server": p.from_server}))
            .collect();
        let v = json!({
            "client_to_server": self.up.report(),
            "server_to_client": self.down.report(),
            "amplification": self.amplification.report(),
            "paths": paths,
        });
        format!("relay-report {v}")
    }
}

fn version_name(v: u32) -> &'static str {
    match v {
        V1 => "v1",
        V2 => "v2",
        0 => "negotiation",
        _ => "other",
    }
}

/// The long-header packet type (RFC 9000 §17.2; v2 renumbers them, RFC 9369 §3.2).
fn kind(first: u8, version: u32) -> &'static str {
    let bits = (first >> 4) & 3;
    match (version, bits) {
        (0, _) => "negotiation",
        (V2, 1) | (V1, 0) => "initial",
        (V2, 2) | (V1, 1) => "0rtt",
        (V2, 3) | (V1, 2) => "handshake",
        (V2, 0) | (V1, 3) => "retry",
        _ => "unknown",
    }
}

/// Calls `f(kind, version, first byte)` for each coalesced long-header
/// packet at the start of `d` (RFC 9000 §12.2); stops at a short header or
/// anything malformed.
fn for_each_long(mut d: &[u8], mut f: impl FnMut(&'static str, u32, u8)) {
    while d.len() >= 7 && d[0] & 0x80 != 0 {
        let version = u32::from_be_bytes([d[1], d[2], d[3], d[4]]);
        let k = kind(d[0], version);
        f(k, version, d[0]);
        if matches!(k, "negotiation" | "retry" | "unknown") {
            return;
        }
        let Some(next) = skip_long(d, k == "initial") else {
            return;
        };
        d = &d[next..];
    }
}

/// The length of the long-header packet at the start of `d`.
fn skip_long(d: &[u8], initial: bool) -> Option<usize> {
    let mut i = 5;
    i += 1 + usize::from(*d.get(i)?);
    i += 1 + usize::from(*d.get(i)?);
    if initial {
        let (token, n) = varint(d.get(i..)?)?;
        i = i.checked_add(n)?.checked_add(token)?;
    }
    let (len, n) = varint(d.get(i..)?)?;
    let end = i.checked_add(n)?.checked_add(len)?;
    (end <= d.len()).then_some(end)
}

/// A QUIC variable-length integer (RFC 9000 §16) and its encoded length.
fn varint(d: &[u8]) -> Option<(usize, usize)> {
    let first = *d.first()?;
    let n = 1usize << (first >> 6);
    let bytes = d.get(..n)?;
    let mut v = u64::from(first & 0x3f);
    for b in &bytes[1..] {
        v = (v << 8) | u64::from(*b);
    }
    Some((usize::try_from(v).ok()?, n))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long-header packet: type bits, version, 8-byte CIDs, payload length.
    fn packet(bits: u8, version: u32, initial: bool, payload: usize) -> Vec<u8> {
        let mut p = vec![0xc0 | (bits << 4)];
        p.extend_from_slice(&version.to_be_bytes());
        p.push(8);
        p.extend_from_slice(&[1; 8]);
        p.push(8);
        p.extend_from_slice(&[2; 8]);
        if initial {
            p.push(0);
        }
        p.extend_from_slice(&[0x40 | (payload >> 8) as u8, payload as u8]);
        p.extend(std::iter::repeat_n(0, payload));
        p
    }

    #[test]
    fn coalesced_packets_and_versions() {
        let mut d = packet(0, V1, true, 300);
        d.extend(packet(2, V1, false, 100));
        d.extend([0x40, 1, 2, 3]); // a short-header packet
        let mut w = Direction::default();
        let now = Instant::now();
        w.saw(&d, 2, now);
        w.saw(&packet(1, V2, true, 50), 1, now);
        w.saw(&packet(3, V2, false, 50), 3, now);
        let r = w.report();
        assert_eq!(r["long"]["initial v1"], 1);
        assert_eq!(r["long"]["handshake v1"], 1);
        assert_eq!(r["long"]["initial v2"], 1);
        assert_eq!(r["long"]["handshake v2"], 1);
        assert_eq!(
            (r["ect0"].clone(), r["ect1"].clone(), r["ce"].clone()),
            (1.into(), 1.into(), 1.into())
        );
        // A truncated packet stops the walk without a panic.
        w.saw(&d[..30], 0, now);
        assert_eq!(w.report()["long"]["initial v1"], 2);
        assert_eq!(w.report()["long_quic_bit_cleared"], 0);
        // Greased long headers (RFC 9287) are counted, each coalesced packet.
        let mut greased = packet(0, V1, true, 300);
        greased[0] &= !0x40;
        let mut second = packet(2, V1, false, 100);
        second[0] &= !0x40;
        greased.extend(second);
        w.saw(&greased, 0, now);
        let r = w.report();
        assert_eq!(r["long_quic_bit_cleared"], 2);
        assert_eq!(r["long"]["handshake v1"], 2);
    }

    #[test]
    fn the_spin_bit_gives_the_time_between_flips() {
        let mut w = Direction::default();
        let start = Instant::now();
        // Flips every 40 ms, five packets a flip; long headers do not count.
        // Every other short header has its QUIC bit cleared.
        for i in 0..40u64 {
            let bit = (i / 5) % 2 == 1;
            let at = start + Duration::from_millis(8 * i);
            let quic_bit = if i % 2 == 0 { 0x40 } else { 0 };
            w.saw(&[quic_bit | if bit { 0x20 } else { 0 }, 1, 2, 3], 0, at);
            w.saw(&packet(2, V1, false, 10), 0, at);
        }
        let spin = &w.report()["spin"];
        assert_eq!(
            w.report()["quic_bit_cleared"],
            20,
            "every other one greased"
        );
        assert_eq!(spin["flips"], 7);
        assert_eq!(spin["rtt_ms_median"], 40.0);
        assert!(Direction::default().report()["spin"]["rtt_ms_median"].is_null());
    }

    #[test]
    fn the_spin_bit_is_followed_per_connection() {
        let mut w = Direction::default();
        let start = Instant::now();
        // The long headers give the ID length (8).
        w.saw(&packet(2, V1, false, 10), 0, start);
        // Two connections at once, each flipping every 40 ms, 20 ms apart:
        // mixed, their flips would read 20 ms.
        for tick in 0..40u64 {
            let at = start + Duration::from_millis(10 * tick);
            for (id, phase) in [(1u8, 0), (2u8, 20)] {
                let bit = ((10 * tick + phase) / 40) % 2 == 1;
                let mut d = vec![0x40 | if bit { 0x20 } else { 0 }];
                d.extend_from_slice(&[id; 8]);
                d.extend_from_slice(&[0; 20]);
                w.saw(&d, 0, at);
            }
        }
        let spin = &w.report()["spin"];
        assert_eq!(spin["rtt_ms_median"], 40.0, "{spin}");
        assert_eq!(spin["flips"], 19, "{spin}");
        // Many connections: the oldest are forgotten, within the bound.
        for id in 0..200u8 {
            let mut d = vec![0x40];
            d.extend_from_slice(&[id, 9, 9, 9, 9, 9, 9, 9]);
            w.saw(&d, 0, start);
        }
        assert_eq!(w.spin.last.len(), MAX_SPIN_CONNECTIONS);
    }

    #[test]
    fn amplification_until_the_first_handshake_packet() {
        let mut a = Amplification::default();
        let first = packet(0, V1, true, 1180);
        a.client_sent(&first);
        a.server_sent(1200);
        a.server_sent(1200);
        a.server_sent(1200);
        assert!(3600 <= 3 * first.len(), "three datagrams are within 3x");
        assert_eq!(a.worst_excess, 0);
        a.server_sent(1200);
        assert!(a.worst_excess > 0, "a fourth datagram is over 3x");
        a.client_sent(&packet(2, V1, false, 100));
        a.server_sent(50_000);
        assert!(a.validated);
        assert_eq!(a.server, 4800);
    }
}
