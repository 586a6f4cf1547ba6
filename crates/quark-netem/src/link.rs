//! One direction of an emulated link: datagrams in at `send(now, …)`, out at
//! `poll(now)` once due. No clock and no I/O: time is a parameter.

use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};
use std::time::{Duration, Instant};

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

use crate::config::{LinkConfig, QueueLimit, ReorderDepth};
use crate::counters::Counters;

/// One direction of an emulated link.
///
/// `T` is the datagram: anything with bytes to corrupt (`Vec<u8>`,
/// `bytes::BytesMut`, or a caller's type that tags the bytes with where they go).
/// Every random choice comes from one ChaCha8 stream seeded by `seed`, drawn in
/// the order datagrams are sent, so the same seed, configuration and sequence of
/// `send`/`poll` calls give the same outcome.
#[derive(Debug)]
pub struct Link<T = Vec<u8>> {
    config: LinkConfig,
    rng: ChaCha8Rng,
    /// The first datagram's time: blackhole periods count from it.
    start: Option<Instant>,
    /// Gilbert–Elliott state.
    bad: bool,
    /// When the rate limiter's transmitter becomes idle.
    tx_free: Option<Instant>,
    /// Datagrams in the rate limiter (the first one is being transmitted):
    /// (end of its transmission, bytes).
    backlog: VecDeque<(Instant, usize)>,
    backlog_bytes: usize,
    /// Latest delivery time given to a datagram that must not be overtaken.
    last_in_order: Option<Instant>,
    scheduled: BinaryHeap<Scheduled<T>>,
    /// Held back until enough later datagrams were delivered.
    held: VecDeque<Held<T>>,
    /// Released from `held`, delivered before anything else: (since, datagram).
    ready: VecDeque<(Instant, T)>,
    next_seq: u64,
    /// Highest sequence number delivered from `scheduled`.
    max_delivered: Option<u64>,
    max_queued: usize,
    counters: Counters,
}

#[derive(Debug)]
struct Scheduled<T> {
    at: Instant,
    seq: u64,
    data: T,
}

impl<T> PartialEq for Scheduled<T> {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl<T> Eq for Scheduled<T> {}
impl<T> PartialOrd for Scheduled<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T> Ord for Scheduled<T> {
    /// Reversed: `BinaryHeap` is a max-heap and the earliest must come first.
    fn cmp(&self, o: &Self) -> Ordering {
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

#[derive(Debug)]
struct Held<T> {
    /// Released once a datagram with this sequence number or higher is delivered.
    release_after: u64,
    /// Released at this time anyway (traffic may stop).
    deadline: Instant,
    data: T,
}

impl<T: AsRef<[u8]> + AsMut<[u8]> + Clone> Link<T> {
    /// A link with these impairments and random stream. Probabilities outside
    /// [0, 1] are clamped (NaN counts as 0); use [`LinkConfig::validate`] to
    /// reject them instead.
    pub fn new(config: LinkConfig, seed: u64) -> Self {
        Link {
            config,
            rng: ChaCha8Rng::seed_from_u64(seed),
            start: None,
            bad: false,
            tx_free: None,
            backlog: VecDeque::new(),
            backlog_bytes: 0,
            last_in_order: None,
            scheduled: BinaryHeap::new(),
            held: VecDeque::new(),
            ready: VecDeque::new(),
            next_seq: 0,
            max_delivered: None,
            max_queued: usize::MAX,
            counters: Counters::default(),
        }
    }

    /// The impairments.
    pub fn config(&self) -> &LinkConfig {
        &self.config
    }

    /// Changes the impairments from the next datagram on; datagrams already in
    /// the link keep their fate.
    pub fn config_mut(&mut self) -> &mut LinkConfig {
        &mut self.config
    }

    /// Bounds the datagrams inside the link (waiting, in flight or held); beyond
    /// it arrivals are dropped and counted as `queue_dropped`. Unbounded by default.
    pub fn set_max_queued(&mut self, n: usize) {
        self.max_queued = n;
    }

    /// What happened so far.
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Datagrams inside the link.
    pub fn queued(&self) -> usize {
        self.scheduled.len() + self.held.len() + self.ready.len()
    }

    /// Hands a datagram to the link at `now`.
    pub fn send(&mut self, now: Instant, data: T) {
        let start = *self.start.get_or_insert(now);
        self.counters.sent += 1;
        self.counters.sent_bytes += data.as_ref().len() as u64;
        if let Some(b) = &self.config.blackhole
            && b.is_dark(now.saturating_duration_since(start))
        {
            self.counters.blackholed += 1;
            return;
        }
        if self.chance(self.config.loss) {
            self.counters.lost += 1;
            return;
        }
        if let Some(ge) = self.config.burst {
            let flip = if self.bad { ge.p_exit } else { ge.p_enter };
            if self.chance(flip) {
                self.bad = !self.bad;
            }
            if self.chance(if self.bad { ge.loss_bad } else { ge.loss_good }) {
                self.counters.burst_lost += 1;
                return;
            }
        }
        if self.chance(self.config.duplicate) {
            self.counters.duplicated += 1;
            let copy = data.clone();
            self.admit(now, data);
            self.admit(now, copy);
        } else {
            self.admit(now, data);
        }
    }

    /// Corruption, rate limit, delay, reordering for one copy.
    fn admit(&mut self, now: Instant, mut data: T) {
        if self.queued() >= self.max_queued {
            self.counters.queue_dropped += 1;
            return;
        }
        let len = data.as_ref().len();
        if len > 0 && self.chance(self.config.corrupt) {
            let i = self.rng.random_range(0..len);
            let flip: u8 = self.rng.random_range(1..=255);
            data.as_mut()[i] ^= flip;
            self.counters.corrupted += 1;
        }
        let Some(depart) = self.transmit(now, len) else {
            self.counters.queue_dropped += 1;
            return;
        };
        let mut at = depart + self.config.delay;
        let jitter = self.config.jitter.as_nanos().min(i64::MAX as u128) as i64;
        if jitter > 0 {
            let j = self.rng.random_range(-jitter..=jitter);
            at = if j >= 0 {
                at + Duration::from_nanos(j as u64)
            } else {
                at.checked_sub(Duration::from_nanos(j.unsigned_abs()))
                    .map_or(depart, |t| t.max(depart))
            };
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        if self.chance(self.config.reorder) {
            self.counters.reordered += 1;
            match self.config.reorder_depth {
                ReorderDepth::Delay(d) => self.scheduled.push(Scheduled {
                    at: at + d,
                    seq,
                    data,
                }),
                ReorderDepth::Packets(n) => self.held.push_back(Held {
                    release_after: seq + u64::from(n),
                    deadline: at + self.config.delay.max(Duration::from_millis(1)),
                    data,
                }),
            }
            return;
        }
        if !self.config.jitter_reorders {
            if let Some(last) = self.last_in_order {
                at = at.max(last);
            }
            self.last_in_order = Some(at);
        }
        self.scheduled.push(Scheduled { at, seq, data });
    }

    /// The rate limiter: when the datagram has left the bottleneck, or `None`
    /// when the queue is full.
    fn transmit(&mut self, now: Instant, len: usize) -> Option<Instant> {
        let Some(rate) = self.config.rate else {
            return Some(now);
        };
        while let Some(&(end, bytes)) = self.backlog.front() {
            if end > now {
                break;
            }
            self.backlog.pop_front();
            self.backlog_bytes -= bytes;
        }
        // The first datagram in the backlog is on the wire, the rest wait.
        if let Some(&(_, sending)) = self.backlog.front() {
            let full = match rate.queue {
                // (len - 1 waiting >= n)
                QueueLimit::Packets(n) => self.backlog.len() > n,
                QueueLimit::Bytes(n) => self.backlog_bytes - sending + len > n,
            };
            if full {
                return None;
            }
        }
        let bits = (len as u128 + u128::from(rate.overhead)) * 8;
        let nanos = bits * 1_000_000_000 / u128::from(rate.bits_per_second.max(1));
        let begin = self.tx_free.map_or(now, |t| t.max(now));
        let end = begin + Duration::from_nanos(nanos.min(u64::MAX as u128) as u64);
        self.tx_free = Some(end);
        self.backlog.push_back((end, len));
        self.backlog_bytes += len;
        Some(end)
    }

    /// A draw with probability `p` (clamped to [0, 1]); draws nothing when `p` is 0,
    /// so an unused impairment doesn't shift the random stream.
    fn chance(&mut self, p: f64) -> bool {
        if p > 0.0 {
            self.rng.random::<f64>() < p.min(1.0)
        } else {
            false
        }
    }

    /// The next datagram due at or before `now`, if any. Call until `None`.
    #[must_use]
    pub fn poll(&mut self, now: Instant) -> Option<T> {
        let data = self.poll_inner(now)?;
        self.counters.delivered += 1;
        self.counters.delivered_bytes += data.as_ref().len() as u64;
        Some(data)
    }

    fn poll_inner(&mut self, now: Instant) -> Option<T> {
        if let Some((_, d)) = self.ready.pop_front() {
            return Some(d);
        }
        let held = self
            .held
            .iter()
            .enumerate()
            .min_by_key(|(_, h)| h.deadline)
            .map(|(i, h)| (i, h.deadline));
        let top = self.scheduled.peek().map(|s| s.at);
        match (held, top) {
            (Some((i, deadline)), top) if deadline <= now && top.is_none_or(|t| deadline < t) => {
                return self.held.remove(i).map(|h| h.data);
            }
            (_, Some(at)) if at <= now => {}
            _ => return None,
        }
        let s = self.scheduled.pop()?;
        let max = self.max_delivered.map_or(s.seq, |m| m.max(s.seq));
        self.max_delivered = Some(max);
        if self.held.iter().any(|h| h.release_after <= max) {
            let mut keep = VecDeque::with_capacity(self.held.len());
            for h in self.held.drain(..) {
                if h.release_after <= max {
                    self.ready.push_back((s.at, h.data));
                } else {
                    keep.push_back(h);
                }
            }
            self.held = keep;
        }
        Some(s.data)
    }

    /// When the next datagram is due (it may already be), or `None` when empty.
    pub fn next_deadline(&self) -> Option<Instant> {
        let ready = self.ready.front().map(|(t, _)| *t);
        let held = self.held.iter().map(|h| h.deadline).min();
        let top = self.scheduled.peek().map(|s| s.at);
        [ready, held, top].into_iter().flatten().min()
    }
}

#[cfg(test)]
#[path = "link_tests.rs"]
mod tests;
