//! What a link did, by cause.

use std::fmt;
use std::ops::AddAssign;

/// Datagram counts of one direction of a link.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counters {
    /// Datagrams handed to the link.
    pub sent: u64,
    /// Their bytes.
    pub sent_bytes: u64,
    /// Datagrams that came out (duplicates included).
    pub delivered: u64,
    /// Their bytes.
    pub delivered_bytes: u64,
    /// Dropped by random loss.
    pub lost: u64,
    /// Dropped by burst (Gilbert–Elliott) loss.
    pub burst_lost: u64,
    /// Dropped because the rate limiter's queue was full.
    pub queue_dropped: u64,
    /// Dropped during a blackhole period.
    pub blackholed: u64,
    /// Extra copies made.
    pub duplicated: u64,
    /// Datagrams with a flipped byte.
    pub corrupted: u64,
    /// Datagrams held back to be overtaken.
    pub reordered: u64,
}

impl Counters {
    /// Datagrams dropped for any cause.
    pub fn dropped(&self) -> u64 {
        self.lost + self.burst_lost + self.queue_dropped + self.blackholed
    }
}

impl AddAssign for Counters {
    fn add_assign(&mut self, o: Counters) {
        self.sent += o.sent;
        self.sent_bytes += o.sent_bytes;
        self.delivered += o.delivered;
        self.delivered_bytes += o.delivered_bytes;
        self.lost += o.lost;
        self.burst_lost += o.burst_lost;
        self.queue_dropped += o.queue_dropped;
        self.blackholed += o.blackholed;
        self.duplicated += o.duplicated;
        self.corrupted += o.corrupted;
        self.reordered += o.reordered;
    }
}

impl fmt::Display for Counters {
    /// One line: `sent 10 (12000 B), delivered 9 (...), dropped 1 (loss 1, ...)`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "sent {} ({} B), delivered {} ({} B), dropped {} (loss {}, burst {}, queue {}, blackhole {}), duplicated {}, corrupted {}, reordered {}",
            self.sent,
            self.sent_bytes,
            self.delivered,
            self.delivered_bytes,
            self.dropped(),
            self.lost,
            self.burst_lost,
            self.queue_dropped,
            self.blackholed,
            self.duplicated,
            self.corrupted,
            self.reordered
        )
    }
}
