//! A deterministic bottleneck for BBR's model tests: flows, each a paced
//! [`Recovery`] sender with an immediately-acknowledging receiver, share one
//! FIFO link of fixed rate with a drop-tail buffer and seeded random loss.
//! Everything is virtual time; the same inputs give the same run. Also
//! recovery's bottleneck test.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use crate::cc::CcAlgorithm;
use crate::range_set::RangeSet;
use crate::recovery::{PathState, Recovery, RecoveryConfig, SentPacket, test_epoch};
use crate::types::SpaceId;

pub(crate) const MTU: u16 = 1200;

/// The path.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Link {
    /// Bytes per second.
    pub(crate) rate: u64,
    pub(crate) one_way: Duration,
    /// Packets the bottleneck queue holds.
    pub(crate) buffer: u64,
    /// Random loss on the wire, in parts per million.
    pub(crate) loss_ppm: u64,
    /// The receiver's ACKs: one per this many packets (1: every packet) ...
    pub(crate) ack_every: u64,
    /// ... or this long after the first unacknowledged one arrived, and at
    /// once on a gap (draft-ietf-quic-ack-frequency's immediate ACK).
    pub(crate) ack_delay: Duration,
    /// ACKs are lost at `loss_ppm` too (the lab's links lose both ways).
    pub(crate) ack_loss: bool,
    /// A sender held by its pacer wakes this much late (a loaded machine).
    pub(crate) wake_late: Duration,
}

impl Link {
    /// A link whose receiver acknowledges every packet at once, losing
    /// no ACKs.
    pub(crate) fn new(rate: u64, one_way: Duration, buffer: u64, loss_ppm: u64) -> Link {
        Link {
            rate,
            one_way,
            buffer,
            loss_ppm,
            ack_every: 1,
            ack_delay: Duration::ZERO,
            ack_loss: false,
            wake_late: Duration::ZERO,
        }
    }

    fn tx(&self) -> Duration {
        Duration::from_nanos(u64::from(MTU) * 1_000_000_000 / self.rate)
    }

    /// The bandwidth-delay product in bytes.
    pub(crate) fn bdp(&self) -> u64 {
        (self.rate as f64 * (2 * self.one_way).as_secs_f64()) as u64
    }
}

/// One flow's result.
#[derive(Debug, Default)]
pub(crate) struct FlowStats {
    /// Bytes delivered to the receiver in the measured window, per second.
    pub(crate) goodput: u64,
    pub(crate) sent: u64,
    pub(crate) dropped: u64,
    /// Of `dropped`, those sent before ProbeBW (Startup's overshoot).
    pub(crate) dropped_in_startup: u64,
    /// Mean time the packets sent in the window waited in the queue.
    pub(crate) mean_queue: Duration,
    /// The controller's pacing rate at the end.
    pub(crate) pacing_rate: Option<u64>,
    /// Phases in order, each listed once per entry.
    pub(crate) phases: Vec<&'static str>,
    /// (pacing rate, window) sampled on every ACK in ProbeBW in the window.
    pub(crate) probe_bw: Vec<(u64, u64)>,
}

struct Flow {
    r: Recovery<()>,
    start: Instant,
    pn: u64,
    /// ACK arrivals at the sender: (time, largest pn) → (packets it reports
    /// first, its ACK delay).
    acks: BTreeMap<(Instant, u64), (Vec<u64>, Duration)>,
    /// At the receiver: packets not acknowledged yet (pn, arrival), and the
    /// next packet number expected in order.
    unacked: Vec<(u64, Instant)>,
    /// Packets whose ACK was lost: the next ACK reports them.
    carry: Vec<u64>,
    expect: u64,
    received: RangeSet,
    paced: Option<Instant>,
    delivered: u64,
    /// Queueing of the packets sent in the window: total, count.
    queued: (Duration, u32),
    stats: FlowStats,
}

fn path() -> PathState {
    PathState {
        handshake_confirmed: true,
        peer_completed_address_validation: true,
        amplification_blocked: false,
        has_handshake_keys: true,
        max_ack_delay: Duration::ZERO,
    }
}

/// Runs flows, each with its controller and start offset, through `link`
/// until `end`, measuring goodput over `[from, end)`.
pub(crate) fn run(
    flows: &[(CcAlgorithm, Duration)],
    link: Link,
    from: Duration,
    end: Duration,
) -> Vec<FlowStats> {
    let t0 = test_epoch();
    let (from, end) = (t0 + from, t0 + end);
    let path = path();
    let mut flows: Vec<Flow> = flows
        .iter()
        .map(|&(cc, s)| Flow {
            r: Recovery::new(&RecoveryConfig {
                cc,
                pacing: true,
                ..RecoveryConfig::default()
            }),
            start: t0 + s,
            pn: 0,
            acks: BTreeMap::new(),
            unacked: Vec::new(),
            carry: Vec::new(),
            expect: 0,
            received: RangeSet::new(),
            paced: None,
            delivered: 0,
            queued: (Duration::ZERO, 0),
            stats: FlowStats::default(),
        })
        .collect();
    let tx = link.tx();
    let mut rng: u64 = 0x2545_f491_4f6c_dd1d;
    let (mut now, mut link_free) = (t0, t0);
    let (mut acked, mut lost): (Vec<(u64, SentPacket<()>)>, _) = (Vec::new(), Vec::new());
    while now < end {
        for f in flows.iter_mut().filter(|f| f.start <= now) {
            f.paced = None;
            while f.r.send_allowance() >= u64::from(MTU) {
                if let Some(at) = f.r.pacing_delay(now, u64::from(MTU)) {
                    f.paced = Some(at + link.wake_late);
                    break;
                }
                let early = matches!(f.r.controller().phase(), Some("startup" | "drain"));
                f.r.on_packet_sent(now, SpaceId::Data, f.pn, MTU, true, true, (), &path);
                f.stats.sent += 1;
                let wait = link_free.saturating_duration_since(now);
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                if wait.as_nanos() / tx.as_nanos() >= u128::from(link.buffer) {
                    f.stats.dropped += 1;
                    f.stats.dropped_in_startup += u64::from(early);
                } else {
                    if now >= from {
                        f.queued.0 += wait;
                        f.queued.1 += 1;
                    }
                    link_free = now.max(link_free) + tx;
                    let arrive = link_free + link.one_way;
                    // Lost on the wire after the bottleneck: it used the link.
                    if rng % 1_000_000 < link.loss_ppm {
                        f.stats.dropped += 1;
                    } else {
                        if arrive >= from && arrive < end {
                            f.delivered += u64::from(MTU);
                        }
                        f.receive(f.pn, arrive, &link, &mut rng);
                    }
                }
                f.pn += 1;
            }
        }
        let next = flows
            .iter()
            .flat_map(|f| {
                let started = f.start <= now;
                [
                    (!started).then_some(f.start),
                    f.acks.keys().next().map(|k| k.0),
                    f.ack_deadline(&link),
                    f.r.loss_detection_timer(),
                    f.paced,
                ]
            })
            .flatten()
            .min();
        let Some(t) = next else { break };
        now = t.max(now);
        for f in flows.iter_mut().filter(|f| f.start <= now) {
            if let Some(t) = f.ack_deadline(&link).filter(|&t| t <= now) {
                f.flush_ack(t, &link, &mut rng);
            }
            if let Some(&key) = f.acks.keys().next().filter(|k| k.0 <= now) {
                let (pns, ack_delay) = f.acks.remove(&key).unwrap_or_default();
                for pn in pns {
                    f.received.insert_one(pn);
                }
                f.received.truncate_low(32);
                acked.clear();
                lost.clear();
                let ranges = f.received.iter().rev().map(|r| r.start..=r.end - 1);
                f.r.on_ack_received(
                    now,
                    SpaceId::Data,
                    ranges,
                    ack_delay,
                    None,
                    &path,
                    &mut acked,
                    &mut lost,
                )
                .expect("valid ACK");
            } else if f.r.loss_detection_timer().is_some_and(|t| t <= now) {
                lost.clear();
                f.r.on_timeout(now, &path, &mut lost);
            }
            let c = f.r.controller();
            let phase = c.phase().unwrap_or("none");
            if f.stats.phases.last() != Some(&phase) {
                f.stats.phases.push(phase);
            }
            if phase == "probe_bw" && now >= from {
                let pacing = c.pacing_rate().unwrap_or(0);
                f.stats.probe_bw.push((pacing, c.window()));
            }
        }
    }
    let secs = (end - from).as_secs_f64();
    flows
        .into_iter()
        .map(|f| FlowStats {
            goodput: (f.delivered as f64 / secs) as u64,
            mean_queue: f.queued.0 / f.queued.1.max(1),
            pacing_rate: f.r.controller().pacing_rate(),
            ..f.stats
        })
        .collect()
}

impl Flow {
    /// Packet `pn` reached the receiver at `at`: acknowledge it as `link`'s
    /// receiver would.
    fn receive(&mut self, pn: u64, at: Instant, link: &Link, rng: &mut u64) {
        // The delayed-ACK timer fired before this packet came.
        if let Some(t) = self.ack_deadline(link).filter(|&t| t < at) {
            self.flush_ack(t, link, rng);
        }
        let gap = pn != self.expect;
        self.expect = pn + 1;
        self.unacked.push((pn, at));
        if gap || self.unacked.len() as u64 >= link.ack_every {
            self.flush_ack(at, link, rng);
        }
    }

    /// When the receiver's delayed-ACK timer fires.
    fn ack_deadline(&self, link: &Link) -> Option<Instant> {
        self.unacked.first().map(|&(_, t)| t + link.ack_delay)
    }

    /// The receiver sends an ACK at `at` for what it holds.
    fn flush_ack(&mut self, at: Instant, link: &Link, rng: &mut u64) {
        let Some(&(largest, arrived)) = self.unacked.last() else {
            return;
        };
        self.carry.extend(self.unacked.drain(..).map(|(pn, _)| pn));
        if link.ack_loss {
            *rng ^= *rng << 13;
            *rng ^= *rng >> 7;
            *rng ^= *rng << 17;
            if *rng % 1_000_000 < link.loss_ppm {
                return;
            }
        }
        let pns = std::mem::take(&mut self.carry);
        self.acks
            .insert((at + link.one_way, largest), (pns, at - arrived));
    }
}

/// Jain's fairness index of `x`: (Σx)² / (n Σx²), 1 when all are equal.
pub(crate) fn jain(x: &[u64]) -> f64 {
    let sum: f64 = x.iter().map(|&v| v as f64).sum();
    let squares: f64 = x.iter().map(|&v| (v as f64).powi(2)).sum();
    sum * sum / (x.len() as f64 * squares)
}
