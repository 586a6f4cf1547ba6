//! A path: two links, one per direction.

use std::time::Instant;

use crate::config::LinkConfig;
use crate::counters::Counters;
use crate::link::Link;

/// Two links between two hosts: `up` carries what the first host (the client)
/// sends, `down` what the second (the server) sends. Each has its own random
/// stream, derived from the path's seed.
#[derive(Debug)]
pub struct Path<T = Vec<u8>> {
    /// Client → server.
    pub up: Link<T>,
    /// Server → client.
    pub down: Link<T>,
}

/// The two directions' random streams must differ even for a symmetric config.
const DOWN_SEED_MIX: u64 = 0x9e37_79b9_7f4a_7c15;

impl<T: AsRef<[u8]> + AsMut<[u8]> + Clone> Path<T> {
    /// A path with these impairments per direction.
    pub fn new(up: LinkConfig, down: LinkConfig, seed: u64) -> Self {
        Path {
            up: Link::new(up, seed),
            down: Link::new(down, seed ^ DOWN_SEED_MIX),
        }
    }

    /// The same impairments both ways.
    pub fn symmetric(config: LinkConfig, seed: u64) -> Self {
        Self::new(config.clone(), config, seed)
    }

    /// The earlier of both directions' next deadlines.
    pub fn next_deadline(&self) -> Option<Instant> {
        match (self.up.next_deadline(), self.down.next_deadline()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Both directions' counters added up.
    pub fn counters(&self) -> Counters {
        let mut c = *self.up.counters();
        c += *self.down.counters();
        c
    }
}
