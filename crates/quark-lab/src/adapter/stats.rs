//! Server-side counters: what the server actually saw, so tests and the
//! orchestrator can check that the client did exactly what was asked.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use serde::{Deserialize, Serialize};

/// Live counters shared by a server's tasks.
#[derive(Debug, Default)]
pub struct ServerStats {
    connections: AtomicU64,
    open: AtomicU64,
    peak_open: AtomicU64,
    requests: AtomicU64,
    in_flight: AtomicU64,
    peak_in_flight: AtomicU64,
    bytes_in: AtomicU64,
    bytes_out: AtomicU64,
    datagrams: AtomicU64,
    bad_datagrams: AtomicU64,
    errors: AtomicU64,
    total_requests: AtomicU64,
    die_after: AtomicU64,
}

/// A snapshot of [`ServerStats`] for the current interval.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ServerCounters {
    /// Connections accepted (handshake completed) in the interval.
    pub connections: u64,
    /// Most connections open at once (counting those open at the interval start).
    pub peak_connections: u64,
    /// Requests completed in the interval.
    pub requests: u64,
    /// Most requests being served at once.
    pub peak_in_flight: u64,
    /// Request payload bytes received (bodies and datagram payloads).
    pub bytes_in: u64,
    /// Response payload bytes sent.
    pub bytes_out: u64,
    /// Datagrams received (datagram adapters).
    pub datagrams: u64,
    /// Datagrams whose header or payload was wrong.
    pub bad_datagrams: u64,
    /// Requests or connections that failed on the server side.
    pub errors: u64,
}

/// Keeps a connection counted as open until dropped.
#[derive(Debug)]
pub struct ConnGuard<'a>(&'a ServerStats);

impl Drop for ConnGuard<'_> {
    fn drop(&mut self) {
        self.0.open.fetch_sub(1, Relaxed);
    }
}

/// Keeps a request counted as in flight until finished or dropped.
#[derive(Debug)]
pub struct RequestGuard<'a> {
    stats: &'a ServerStats,
    done: bool,
}

impl RequestGuard<'_> {
    /// The request was served completely.
    pub fn finish(mut self, bytes_in: u64, bytes_out: u64) {
        let s = self.stats;
        s.bytes_in.fetch_add(bytes_in, Relaxed);
        s.bytes_out.fetch_add(bytes_out, Relaxed);
        s.requests.fetch_add(1, Relaxed);
        self.done = true;
    }
}

impl Drop for RequestGuard<'_> {
    fn drop(&mut self) {
        self.stats.in_flight.fetch_sub(1, Relaxed);
        if !self.done {
            self.stats.errors.fetch_add(1, Relaxed);
        }
    }
}

impl ServerStats {
    /// A connection completed its handshake.
    pub fn connection(&self) -> ConnGuard<'_> {
        self.connections.fetch_add(1, Relaxed);
        let open = self.open.fetch_add(1, Relaxed) + 1;
        self.peak_open.fetch_max(open, Relaxed);
        ConnGuard(self)
    }

    /// A request header arrived.
    pub fn request(&self) -> RequestGuard<'_> {
        let n = self.in_flight.fetch_add(1, Relaxed) + 1;
        self.peak_in_flight.fetch_max(n, Relaxed);
        let total = self.total_requests.fetch_add(1, Relaxed) + 1;
        let die = self.die_after.load(Relaxed);
        if die != 0 && total >= die {
            // Fault injection for the orchestrator's tests (lab-server only).
            eprintln!("lab-server: dying on purpose after {total} requests");
            std::process::exit(101);
        }
        RequestGuard {
            stats: self,
            done: false,
        }
    }

    /// Requests being served now.
    pub fn in_flight(&self) -> u64 {
        self.in_flight.load(Relaxed)
    }

    /// A datagram arrived with `payload` bytes; `good` if it verified.
    pub fn datagram(&self, payload: u64, good: bool) {
        self.datagrams.fetch_add(1, Relaxed);
        self.bytes_in.fetch_add(payload, Relaxed);
        if !good {
            self.bad_datagrams.fetch_add(1, Relaxed);
        }
    }

    /// Response bytes sent outside a counted request (a later part of one
    /// the server serves as several, e.g. nginx's range requests).
    pub fn more_bytes_out(&self, n: u64) {
        self.bytes_out.fetch_add(n, Relaxed);
    }

    /// A connection failed outside any request.
    pub fn error(&self) {
        self.errors.fetch_add(1, Relaxed);
    }

    /// Makes the process exit after `n` requests in total (0: never).
    pub fn set_die_after(&self, n: u64) {
        self.die_after.store(n, Relaxed);
    }

    /// Starts a new interval: counters to zero, peaks to the current level.
    pub fn reset(&self) {
        for c in [
            &self.connections,
            &self.requests,
            &self.bytes_in,
            &self.bytes_out,
            &self.datagrams,
            &self.bad_datagrams,
            &self.errors,
        ] {
            c.store(0, Relaxed);
        }
        self.peak_open.store(self.open.load(Relaxed), Relaxed);
        self.peak_in_flight
            .store(self.in_flight.load(Relaxed), Relaxed);
    }

    /// The counters of the current interval.
    pub fn snapshot(&self) -> ServerCounters {
        ServerCounters {
            connections: self.connections.load(Relaxed),
            peak_connections: self.peak_open.load(Relaxed),
            requests: self.requests.load(Relaxed),
            peak_in_flight: self.peak_in_flight.load(Relaxed),
            bytes_in: self.bytes_in.load(Relaxed),
            bytes_out: self.bytes_out.load(Relaxed),
            datagrams: self.datagrams.load(Relaxed),
            bad_datagrams: self.bad_datagrams.load(Relaxed),
            errors: self.errors.load(Relaxed),
        }
    }
}

/// With `QUARK_LAB_CONN_STATS=DIR`, appends the line `line` makes (asked only
/// then) to `DIR/SIDE-PID.txt`: a connection's counters as it closes, a
/// diagnostic. Returns `DIR` when set.
pub(crate) fn append_conn_stats(
    side: &str,
    line: impl FnOnce() -> Option<String>,
) -> Option<std::path::PathBuf> {
    use std::io::Write;
    let dir = std::path::PathBuf::from(std::env::var_os("QUARK_LAB_CONN_STATS")?);
    if let Some(line) = line() {
        let path = dir.join(format!("{side}-{}.txt", std::process::id()));
        if let Ok(mut f) = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
        {
            let _ = writeln!(f, "{line}");
        }
    }
    Some(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guards_count_and_reset_keeps_open_level() {
        let s = ServerStats::default();
        let c1 = s.connection();
        let c2 = s.connection();
        let r = s.request();
        r.finish(3, 4);
        drop(s.request()); // failed request
        drop(c1);
        let snap = s.snapshot();
        assert_eq!(
            (snap.connections, snap.peak_connections, snap.requests),
            (2, 2, 1)
        );
        assert_eq!((snap.bytes_in, snap.bytes_out, snap.errors), (3, 4, 1));
        s.reset();
        let snap = s.snapshot();
        assert_eq!(
            (
                snap.connections,
                snap.peak_connections,
                snap.requests,
                snap.errors
            ),
            (0, 1, 0, 0)
        );
        drop(c2);
    }
}
