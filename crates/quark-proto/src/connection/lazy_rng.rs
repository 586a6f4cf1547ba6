//! The connection's random numbers (PATH_CHALLENGE data, skipped packet
//! numbers, connection IDs), kept small while idle (issue #30).
//!
//! `StdRng` (ChaCha12 with its block buffer) is 320 bytes and an idle
//! connection draws nothing from it, so it lives in a box made on first use
//! and is folded back into a 32-byte seed by `park`. The seed is drawn from
//! the generator itself, so the stream stays unpredictable and, for a given
//! endpoint seed and sequence of events, deterministic (the simulator's tests).

use rand::rngs::StdRng;
use rand::{Rng, RngCore, SeedableRng};

pub(crate) struct LazyRng {
    /// Seeds the generator when it is next needed (unused while `rng` is set).
    seed: [u8; 32],
    rng: Option<Box<StdRng>>,
}

impl LazyRng {
    pub(crate) fn new(seed: u64) -> Self {
        LazyRng {
            seed: [0; 32],
            rng: Some(Box::new(StdRng::seed_from_u64(seed))),
        }
    }

    /// Idle: keep only a seed for what comes next.
    pub(crate) fn park(&mut self) {
        if let Some(mut rng) = self.rng.take() {
            self.seed = rng.random();
        }
    }

    /// Heap held (for memory accounting).
    pub(crate) fn heap_bytes(&self) -> usize {
        self.rng.as_ref().map_or(0, |_| size_of::<StdRng>())
    }

    fn get(&mut self) -> &mut StdRng {
        let seed = self.seed;
        self.rng
            .get_or_insert_with(|| Box::new(StdRng::from_seed(seed)))
    }
}

impl RngCore for LazyRng {
    fn next_u32(&mut self) -> u32 {
        self.get().next_u32()
    }

    fn next_u64(&mut self) -> u64 {
        self.get().next_u64()
    }

    fn fill_bytes(&mut self, dst: &mut [u8]) {
        self.get().fill_bytes(dst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parked_generator_goes_on_with_fresh_numbers() {
        let mut a = LazyRng::new(7);
        let mut b = LazyRng::new(7);
        let first: u64 = a.random();
        assert_eq!(first, b.random::<u64>(), "deterministic for a seed");
        a.park();
        assert_eq!(a.heap_bytes(), 0);
        let after: [u64; 4] = a.random();
        assert!(a.heap_bytes() > 0);
        assert!(!after.contains(&first));
        // The same events give the same numbers.
        b.park();
        assert_eq!(after, b.random::<[u64; 4]>());
        // Parking changes what follows (not a replay of the old stream).
        let mut c = LazyRng::new(7);
        let _: u64 = c.random();
        assert_ne!(after, c.random::<[u64; 4]>());
    }
}
