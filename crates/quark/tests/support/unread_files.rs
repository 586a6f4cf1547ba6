//! Shared by quark's `file_server_memory` (hq-interop) and quark-h3's
//! `files_memory` (HTTP/3): a file server under a client that asks for much
//! and reads nothing. The counting allocator lives here, so a binary that
//! includes this module has it and should hold no other test.

use std::alloc::System;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use quark::{Connection, TransportConfig};
use stats_alloc::{INSTRUMENTED_SYSTEM, StatsAlloc};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

/// Requests for the file on one connection.
pub(crate) const REQUESTS: usize = 256;
/// The file's size.
pub(crate) const FILE: usize = 4_000_000;
/// The client's connection window, never raised.
pub(crate) const WINDOW: u64 = 1 << 20;

/// Bytes on the heap now.
pub(crate) fn heap() -> i64 {
    let s = GLOBAL.stats();
    // stats_alloc counts a realloc's change in these two already.
    s.bytes_allocated as i64 - s.bytes_deallocated as i64
}

/// The client's transport settings: a connection window of [`WINDOW`].
pub(crate) fn fixed_window() -> Arc<TransportConfig> {
    TransportConfig {
        receive_window: WINDOW,
        receive_window_max: WINDOW,
        ..TransportConfig::default()
    }
    .into()
}

/// A directory with one file, `big`, removed on drop.
pub(crate) struct Root(pub(crate) PathBuf);

impl Root {
    pub(crate) fn new(name: &str, body: &[u8]) -> Self {
        let dir = std::env::temp_dir().join(format!("{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("big"), body).unwrap();
        Root(dir)
    }
}

impl Drop for Root {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The server fills the window and the client acknowledges it all; then
/// every request waits for credit. Samples the heap (grown since `before`)
/// and what the server's connection `s` holds for sending until then and a
/// while after: what it holds stays within its send budget, and the heap
/// grows by less than 12 MiB.
pub(crate) async fn watch_until_settled(s: &Connection, before: i64) {
    let (mut most, mut settled, mut most_held) = (0, 0, 0);
    for _ in 0..3_000 {
        tokio::time::sleep(Duration::from_millis(10)).await;
        let (held, budget) = s.send_buffered();
        assert!(held <= budget, "{held} bytes held, budget {budget}");
        most_held = most_held.max(held);
        most = most.max(heap() - before);
        if s.stats().bytes_out > WINDOW && held == 0 {
            settled += 1;
            if settled == 50 {
                break;
            }
        }
    }
    assert_eq!(settled, 50, "the server never filled the window");
    eprintln!(
        "{REQUESTS} requests: the heap grew by {most} bytes at most, \
         {most_held} bytes held for sending at most"
    );
    assert!(
        most < 12 << 20,
        "the heap grew by {most} bytes for {REQUESTS} waiting requests"
    );
}
