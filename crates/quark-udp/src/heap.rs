//! Giving freed heap memory back to the system. After a peak of connections
//! (or an attack) has gone, glibc's allocator keeps the freed pages mapped: a
//! server's RSS stays at the peak although the memory is free. Trimming
//! returns whole free pages with `madvise`, wherever they are in the heap.

/// Return the heap's free pages to the system; whether any were returned.
/// A no-op (false) where the allocator is not glibc's.
pub fn release_free_memory() -> bool {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: malloc_trim takes a plain integer and only walks the
        // allocator's own free lists under its locks; no Rust invariant is
        // involved and the process's allocations stay valid.
        unsafe { libc::malloc_trim(0) == 1 }
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trimming_after_a_peak_is_safe_and_repeatable() {
        // Many mid-sized blocks (below the mmap threshold: they come from the
        // heap), freed but for one at the end that pins the heap's top.
        let blocks: Vec<Vec<u8>> = (0..2_000).map(|i| vec![i as u8; 60_000]).collect();
        let pin = vec![1u8; 1000];
        drop(blocks);
        let _ = release_free_memory();
        // Nothing it freed was still in use: allocation works as before.
        let again: Vec<Vec<u8>> = (0..100).map(|i| vec![i as u8; 60_000]).collect();
        assert!(
            again
                .iter()
                .enumerate()
                .all(|(i, b)| b.iter().all(|&x| x == i as u8))
        );
        assert_eq!(pin[999], 1);
    }
}
