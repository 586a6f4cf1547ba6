//! What one direction of a link does to the datagrams that cross it.

use std::time::Duration;

/// The impairments of one direction of a link. `Default` is a perfect link:
/// no delay, nothing lost, unlimited rate.
///
/// A datagram goes through the stages in this order (as netem does):
/// blackhole → loss (random, then burst) → duplication → per copy: corruption →
/// rate limit and its queue (tail drop) → delay and jitter → reordering.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LinkConfig {
    /// Fixed one-way delay.
    pub delay: Duration,
    /// Each datagram's delay is drawn uniformly from `delay ± jitter`
    /// (never below zero).
    pub jitter: Duration,
    /// Whether jitter may reorder datagrams. When false (the default) a datagram
    /// is never delivered before one sent earlier: its time is raised to the
    /// previous datagram's, as on a real FIFO path with variable delay.
    pub jitter_reorders: bool,
    /// Probability in [0, 1] that a datagram is lost, independently of the others.
    pub loss: f64,
    /// Bursty loss (Gilbert–Elliott), applied after `loss`.
    pub burst: Option<GilbertElliott>,
    /// Probability in [0, 1] that a datagram is held back and overtaken.
    pub reorder: f64,
    /// How far a held-back datagram falls behind.
    pub reorder_depth: ReorderDepth,
    /// Probability in [0, 1] that a datagram is delivered twice.
    pub duplicate: f64,
    /// Probability in [0, 1] that one random byte of a datagram is flipped.
    pub corrupt: f64,
    /// Bottleneck rate in bits per second, with its queue.
    pub rate: Option<RateLimit>,
    /// Periods when everything is dropped.
    pub blackhole: Option<Blackhole>,
}

impl LinkConfig {
    /// A link with only a fixed delay.
    pub fn with_delay(delay: Duration) -> Self {
        LinkConfig {
            delay,
            ..LinkConfig::default()
        }
    }

    /// Checks probabilities are in [0, 1] and rates and queues are non-zero.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let probabilities = [
            ("loss", self.loss),
            ("reorder", self.reorder),
            ("duplicate", self.duplicate),
            ("corrupt", self.corrupt),
        ];
        for (what, p) in probabilities {
            probability(what, p)?;
        }
        if let Some(ge) = &self.burst {
            probability("burst p(good→bad)", ge.p_enter)?;
            probability("burst p(bad→good)", ge.p_exit)?;
            probability("burst loss in the bad state", ge.loss_bad)?;
            probability("burst loss in the good state", ge.loss_good)?;
        }
        if let ReorderDepth::Packets(0) = self.reorder_depth {
            return Err(ConfigError::Invalid(
                "reorder depth must be at least 1 packet",
            ));
        }
        if let Some(r) = &self.rate {
            if r.bits_per_second == 0 {
                return Err(ConfigError::Invalid("rate must be above 0"));
            }
            match r.queue {
                QueueLimit::Bytes(0) | QueueLimit::Packets(0) => {
                    return Err(ConfigError::Invalid(
                        "queue must hold at least 1 byte or packet",
                    ));
                }
                _ => {}
            }
        }
        if let Some(b) = &self.blackhole {
            if b.on.is_zero() && b.off.is_zero() {
                return Err(ConfigError::Invalid("blackhole on and off can't both be 0"));
            }
            if b.repeat == Some(0) {
                return Err(ConfigError::Invalid("blackhole repeat must be at least 1"));
            }
        }
        Ok(())
    }

    /// Whether this direction changes anything at all.
    pub fn is_perfect(&self) -> bool {
        *self == LinkConfig::default()
    }
}

fn probability(what: &'static str, p: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&p) {
        Ok(())
    } else {
        Err(ConfigError::Probability { what, value: p })
    }
}

/// A configuration that can't work.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ConfigError {
    /// A probability outside [0, 1] (or NaN).
    #[error("{what} must be between 0 and 100 % (got {value})")]
    Probability {
        /// Which one.
        what: &'static str,
        /// The value, as a fraction.
        value: f64,
    },
    /// Another impossible setting.
    #[error("{0}")]
    Invalid(&'static str),
}

/// The Gilbert–Elliott two-state loss model: a Markov chain between a good and a
/// bad state, stepped once per datagram, each state with its own loss probability.
/// The long-run loss rate is `π_bad · loss_bad + (1 − π_bad) · loss_good`
/// with `π_bad = p_enter / (p_enter + p_exit)`; bursts last `1 / p_exit`
/// datagrams on average.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct GilbertElliott {
    /// p: probability of moving from good to bad, per datagram.
    pub p_enter: f64,
    /// r: probability of moving from bad to good, per datagram.
    pub p_exit: f64,
    /// 1 − h: loss probability in the bad state (1 for the plain Gilbert model).
    pub loss_bad: f64,
    /// 1 − k: loss probability in the good state (usually 0).
    pub loss_good: f64,
}

impl GilbertElliott {
    /// The long-run fraction of datagrams lost.
    pub fn mean_loss(&self) -> f64 {
        let total = self.p_enter + self.p_exit;
        if total == 0.0 {
            return self.loss_good; // never leaves the initial, good state
        }
        let bad = self.p_enter / total;
        bad * self.loss_bad + (1.0 - bad) * self.loss_good
    }
}

/// How far a reordered datagram falls behind the ones sent after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReorderDepth {
    /// Held back by this much extra delay.
    Delay(Duration),
    /// Held back until this many datagrams sent after it were delivered (or,
    /// should traffic stop, until one more one-way delay (at least 1 ms) has passed).
    Packets(u32),
}

impl Default for ReorderDepth {
    /// 1 ms: the setting of the reordering experiments in seed 001.
    fn default() -> Self {
        ReorderDepth::Delay(Duration::from_millis(1))
    }
}

/// A bottleneck: datagrams leave one after the other at `bits_per_second`;
/// those waiting form a FIFO queue that drops arrivals when full (tail drop).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Link rate.
    pub bits_per_second: u64,
    /// Most data waiting, not counting the datagram being transmitted.
    pub queue: QueueLimit,
    /// Bytes added to each datagram's size for the rate (e.g. 28 for the IPv4 and
    /// UDP headers when the link carries UDP payloads).
    pub overhead: u32,
}

impl RateLimit {
    /// A rate with a queue of one bandwidth-delay product for `rtt`, at least
    /// 64 KB: the usual rule of thumb for a buffer that neither starves nor bloats.
    pub fn with_bdp_queue(bits_per_second: u64, rtt: Duration) -> Self {
        let bdp = (bits_per_second as u128 * rtt.as_nanos() / 8 / 1_000_000_000) as usize;
        RateLimit {
            bits_per_second,
            queue: QueueLimit::Bytes(bdp.max(64_000)),
            overhead: 0,
        }
    }
}

/// The size of a rate limiter's queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueueLimit {
    /// At most this many bytes waiting.
    Bytes(usize),
    /// At most this many datagrams waiting.
    Packets(usize),
}

/// Blackhole periods: the link carries traffic for `on`, then drops everything
/// for `off`, and so on, counted from the first datagram the link sees. This is
/// the `--on` / `--off` / `--repeat` of the QUIC interop runner's `blackhole`
/// scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Blackhole {
    /// How long traffic flows.
    pub on: Duration,
    /// How long traffic is dropped.
    pub off: Duration,
    /// Number of on/off cycles, after which traffic flows for good; `None`: forever.
    pub repeat: Option<u32>,
}

impl Blackhole {
    /// Whether a datagram sent `since_start` after the link's first one is dropped.
    pub fn is_dark(&self, since_start: Duration) -> bool {
        let cycle = self.on + self.off;
        if cycle.is_zero() {
            return false;
        }
        let n = since_start.as_nanos() / cycle.as_nanos();
        if self.repeat.is_some_and(|r| n >= u128::from(r)) {
            return false;
        }
        let into = since_start.as_nanos() % cycle.as_nanos();
        into >= self.on.as_nanos()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn validation_catches_impossible_settings() {
        assert!(LinkConfig::default().validate().is_ok());
        let bad = [
            LinkConfig {
                loss: 1.5,
                ..Default::default()
            },
            LinkConfig {
                duplicate: f64::NAN,
                ..Default::default()
            },
            LinkConfig {
                reorder_depth: ReorderDepth::Packets(0),
                ..Default::default()
            },
            LinkConfig {
                rate: Some(RateLimit {
                    bits_per_second: 0,
                    queue: QueueLimit::Packets(1),
                    overhead: 0,
                }),
                ..Default::default()
            },
            LinkConfig {
                rate: Some(RateLimit {
                    bits_per_second: 1,
                    queue: QueueLimit::Bytes(0),
                    overhead: 0,
                }),
                ..Default::default()
            },
            LinkConfig {
                burst: Some(GilbertElliott {
                    p_enter: -0.1,
                    p_exit: 0.5,
                    loss_bad: 1.0,
                    loss_good: 0.0,
                }),
                ..Default::default()
            },
        ];
        for c in bad {
            assert!(c.validate().is_err(), "{c:?}");
        }
    }

    #[test]
    fn blackhole_phases() {
        let ms = Duration::from_millis;
        let b = Blackhole {
            on: ms(5000),
            off: ms(2000),
            repeat: None,
        };
        assert!(!b.is_dark(ms(0)));
        assert!(!b.is_dark(ms(4999)));
        assert!(b.is_dark(ms(5000)));
        assert!(b.is_dark(ms(6999)));
        assert!(!b.is_dark(ms(7000)));
        assert!(b.is_dark(ms(12_500)));
        let once = Blackhole {
            repeat: Some(1),
            ..b
        };
        assert!(once.is_dark(ms(6000)));
        assert!(!once.is_dark(ms(12_500)));
    }

    #[test]
    fn gilbert_elliott_mean() {
        let ge = GilbertElliott {
            p_enter: 0.01,
            p_exit: 0.24,
            loss_bad: 1.0,
            loss_good: 0.0,
        };
        assert!((ge.mean_loss() - 0.04).abs() < 1e-12);
    }

    #[test]
    fn bdp_queue() {
        let r = RateLimit::with_bdp_queue(100_000_000, Duration::from_millis(100));
        assert_eq!(r.queue, QueueLimit::Bytes(1_250_000));
        let r = RateLimit::with_bdp_queue(1_000_000, Duration::from_millis(10));
        assert_eq!(r.queue, QueueLimit::Bytes(64_000));
    }
}
