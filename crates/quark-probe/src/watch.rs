//! What the server does while it is attacked: its resident memory (sampled
//! from /proc when it runs on this machine) and how long a legitimate
//! client's fetch takes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::Target;

/// Resident set size of process `pid` in bytes (VmRSS), if readable.
pub fn rss(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Samples a process's RSS every few milliseconds and keeps the peak.
pub struct MemoryWatch {
    stop: Arc<AtomicBool>,
    peak: Arc<AtomicU64>,
    thread: Option<JoinHandle<()>>,
}

impl MemoryWatch {
    /// Start sampling `pid` (nothing is sampled without one).
    pub fn start(pid: Option<u32>) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let peak = Arc::new(AtomicU64::new(0));
        let thread = pid.map(|pid| {
            let (stop, peak) = (stop.clone(), peak.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    if let Some(now) = rss(pid) {
                        peak.fetch_max(now, Ordering::Relaxed);
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        });
        MemoryWatch { stop, peak, thread }
    }

    /// Stop sampling; the peak RSS seen.
    pub fn finish(mut self) -> Option<u64> {
        self.stop.store(true, Ordering::Relaxed);
        let thread = self.thread.take()?;
        let _ = thread.join();
        Some(self.peak.load(Ordering::Relaxed))
    }
}

/// A legitimate client fetching the target's file again and again, each time
/// on a new connection (so handshakes are measured too), until stopped.
pub struct Fetcher {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<Vec<Result<Duration, String>>>>,
}

impl Fetcher {
    /// Start fetching `target.fetch` from the legitimate client's address.
    pub fn start(target: &Target) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let target = target.clone();
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a tokio runtime");
            let mut results = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                let r = runtime.block_on(fetch_once(&target));
                results.push(r);
                std::thread::sleep(Duration::from_millis(200));
            }
            results
        });
        Fetcher {
            stop,
            thread: Some(thread),
        }
    }

    /// Stop after the fetch under way; how each went.
    pub fn finish(mut self) -> Vec<Result<Duration, String>> {
        self.stop.store(true, Ordering::Relaxed);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

/// One fetch of the target's file on a fresh connection: how long it took
/// (handshake included), or why it failed. Gives up after 10 s.
pub async fn fetch_once(target: &Target) -> Result<Duration, String> {
    let start = Instant::now();
    let attempt = async {
        let bind: SocketAddr = match target.addr {
            SocketAddr::V4(_) => "0.0.0.0:0".parse().expect("an address"),
            SocketAddr::V6(_) => "[::]:0".parse().expect("an address"),
        };
        let endpoint = quark::Endpoint::client(bind).map_err(|e| e.to_string())?;
        let config = target.client_config().map_err(|e| e.to_string())?;
        let conn = endpoint
            .connect(config, target.addr, &target.server_name)
            .map_err(|e| e.to_string())?
            .await
            .map_err(|e| format!("handshake: {e}"))?;
        let mut sink = tokio::io::sink();
        let n = if target.h3() {
            let client = quark_h3::Client::new(conn.clone())
                .await
                .map_err(|e| e.to_string())?;
            let n = quark_h3::files::fetch(
                &client,
                &target.server_name,
                &target.fetch,
                &mut sink,
                |_| {},
            )
            .await
            .map_err(|e| e.to_string())?;
            conn.close(quark_h3::error::H3_NO_ERROR, b"");
            n
        } else {
            let n = quark::hq::fetch(&conn, &target.fetch, &mut sink, |_| {})
                .await
                .map_err(|e| e.describe())?;
            conn.close(0, b"");
            n
        };
        if n == 0 {
            return Err(format!("{}: empty response", target.fetch));
        }
        Ok(start.elapsed())
    };
    match tokio::time::timeout(Duration::from_secs(10), attempt).await {
        Ok(r) => r,
        Err(_) => Err("no answer within 10 s".into()),
    }
}
