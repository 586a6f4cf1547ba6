//! What a client does in one measured phase, and how it is timed.
//!
//! A phase is prepared (warm-up, long-lived connections opened: not measured),
//! then run (measured). Request counts come from one shared ticket counter, so
//! exactly `requests` requests are issued however many workers share them.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;

use crate::adapter::{Blast, Client, Connection, Request};

/// The shape of a phase's traffic.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Workload {
    /// `workers` concurrent workers share `requests`; each request runs on a
    /// fresh connection (connect, request, close). Used by goodput (1 worker),
    /// response-time and ephemeral. `warmup` extra requests run before measuring.
    Fresh {
        /// Requests to measure.
        requests: u64,
        /// Concurrent workers.
        workers: u32,
        /// Response size.
        response_len: u64,
        /// Request body size.
        body_len: u64,
        /// Unmeasured requests first.
        warmup: u64,
    },
    /// `connections` long-lived connections opened before measuring, each with
    /// `in_flight` concurrent requesters sharing `requests`. Used by rps,
    /// persistent and parallel.
    Persistent {
        /// Connections.
        connections: u32,
        /// Concurrent requests per connection.
        in_flight: u32,
        /// Requests to measure.
        requests: u64,
        /// Response size.
        response_len: u64,
        /// Request body size.
        body_len: u64,
        /// Unmeasured requests first (on the same connections).
        warmup: u64,
    },
    /// `connections` × `streams` requesters download `chunk`-sized responses
    /// back to back until `duration_ms` passed (the VPP iperf-like tool).
    Streams {
        /// Connections.
        connections: u32,
        /// Concurrent streams per connection.
        streams: u32,
        /// How long to keep starting requests.
        duration_ms: u64,
        /// Response size of each request.
        chunk: u64,
    },
    /// Datagram adapters: `runs` blasts of `bytes` each after `warmup` blasts.
    Blast {
        /// Payload bytes per blast.
        bytes: u64,
        /// Measured blasts.
        runs: u32,
        /// Unmeasured blasts first.
        warmup: u32,
        /// Payload bytes per datagram.
        payload: u32,
    },
    /// Datagram adapters: `senders` sockets blast for `duration_ms`.
    BlastFor {
        /// Sending sockets.
        senders: u32,
        /// Duration.
        duration_ms: u64,
        /// Payload bytes per datagram.
        payload: u32,
    },
}

/// A named phase: one row of results.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Phase {
    /// Label in tables (`2MB`, `144 conns`, ...).
    pub label: String,
    /// The traffic.
    pub workload: Workload,
}

impl Workload {
    /// Units the progress counter counts towards (requests, blasts or milliseconds).
    pub fn progress_total(&self) -> u64 {
        match *self {
            Workload::Fresh { requests, .. } | Workload::Persistent { requests, .. } => requests,
            Workload::Blast { runs, .. } => u64::from(runs),
            Workload::Streams { duration_ms, .. } | Workload::BlastFor { duration_ms, .. } => {
                duration_ms
            }
        }
    }

    /// Whether progress is measured in elapsed milliseconds.
    pub fn is_timed(&self) -> bool {
        matches!(self, Workload::Streams { .. } | Workload::BlastFor { .. })
    }
}

/// What the client observed in one measured phase.
#[derive(Debug, Default)]
pub struct Measured {
    /// Requests completed (or blasts for datagram workloads).
    pub requests: u64,
    /// Connections opened during the measurement.
    pub connections: u64,
    /// Response payload bytes received.
    pub bytes_in: u64,
    /// Request payload bytes sent (bodies, datagram payloads).
    pub bytes_out: u64,
    /// Wall time from start to the last completion.
    pub elapsed: Duration,
    /// Request times in ns: request sent to last response byte.
    pub latency_ns: Vec<u64>,
    /// Connection establishment times in ns (fresh-connection workloads).
    pub connect_ns: Vec<u64>,
    /// Most requests in flight at once.
    pub peak_in_flight: u64,
    /// Most connections open at once.
    pub peak_connections: u64,
    /// Datagrams sent (datagram workloads).
    pub datagrams_sent: Option<u64>,
    /// Requests lost for good (udp: no retransmission), not in `requests`.
    pub lost: u64,
}

/// Whether a request's error is a loss to count rather than the phase's end.
fn lost(e: &anyhow::Error) -> bool {
    e.is::<crate::adapter::udp_rr::Lost>()
}

/// State set up by [`prepare`] and used by [`run`].
#[derive(Default)]
pub struct Prepared {
    conns: Vec<Arc<dyn Connection>>,
}

impl Prepared {
    /// Opens `n` connections and completes one 1-byte request on each, so the
    /// server has accepted them all before the measurement starts.
    async fn open(&mut self, client: &Arc<dyn Client>, n: u32) -> anyhow::Result<()> {
        for _ in 0..n {
            self.conns
                .push(client.connect().await.context("opening connections")?);
        }
        for c in &self.conns {
            c.request(Request {
                response_len: 1,
                body_len: 0,
            })
            .await
            .context("first request")?;
        }
        Ok(())
    }

    /// Closes the phase's long-lived connections.
    pub async fn teardown(self) {
        for c in self.conns {
            c.close().await.ok();
        }
    }
}

/// Counters the client threads of one phase share (`--client-threads`), so
/// that exactly `requests` requests are issued in all and the peak in flight
/// is the process's, not a sum of the threads' peaks.
#[derive(Default)]
pub struct Shared {
    tickets: AtomicU64,
    gauge: Gauge,
}

/// A gauge that remembers its peak.
#[derive(Default)]
struct Gauge {
    now: AtomicU64,
    peak: AtomicU64,
}

impl Gauge {
    fn inc(&self) {
        let n = self.now.fetch_add(1, Relaxed) + 1;
        self.peak.fetch_max(n, Relaxed);
    }
    fn dec(&self) {
        self.now.fetch_sub(1, Relaxed);
    }
}

async fn fresh_request(client: &dyn Client, req: Request) -> anyhow::Result<(u64, u64)> {
    let t0 = Instant::now();
    let conn = client.connect().await?;
    let t1 = Instant::now();
    conn.request(req).await?;
    let t2 = Instant::now();
    conn.close().await?;
    Ok(((t1 - t0).as_nanos() as u64, (t2 - t1).as_nanos() as u64))
}

/// Warms up and opens long-lived connections (not measured).
pub async fn prepare(client: &Arc<dyn Client>, w: &Workload) -> anyhow::Result<Prepared> {
    let mut p = Prepared::default();
    match *w {
        Workload::Fresh {
            warmup,
            response_len,
            body_len,
            ..
        } => {
            for _ in 0..warmup {
                fresh_request(
                    &**client,
                    Request {
                        response_len,
                        body_len,
                    },
                )
                .await
                .context("warm-up")?;
            }
        }
        Workload::Persistent {
            connections,
            warmup,
            response_len,
            body_len,
            ..
        } => {
            p.open(client, connections).await?;
            // Every connection at once, as the measurement will run them: the
            // RTT estimates (and so the PTOs) then reflect the loaded path.
            let n = p.conns.len() as u64;
            let warm = p.conns.iter().enumerate().map(|(i, c)| async move {
                let mine = warmup / n + u64::from((i as u64) < warmup % n);
                for _ in 0..mine {
                    c.request(Request {
                        response_len,
                        body_len,
                    })
                    .await
                    .context("warm-up")?;
                }
                anyhow::Ok(())
            });
            for r in futures_util::future::join_all(warm).await {
                r?;
            }
        }
        Workload::Streams { connections, .. } => p.open(client, connections).await?,
        Workload::Blast {
            bytes,
            warmup,
            payload,
            ..
        } => {
            for _ in 0..warmup {
                let b = Blast {
                    bytes: Some(bytes),
                    until: None,
                    payload: payload as usize,
                };
                client.blast(b).await.context("warm-up")?;
            }
        }
        Workload::BlastFor { .. } => {}
    }
    Ok(p)
}

#[derive(Default)]
struct TaskOut {
    latency: Vec<u64>,
    connect: Vec<u64>,
    bytes_in: u64,
    bytes_out: u64,
    requests: u64,
    datagrams: u64,
    lost: u64,
}

impl TaskOut {
    /// Room for a fair share of `requests` among `tasks`, and a half more:
    /// growing while measuring would reallocate (and page-fault) in every
    /// task at about the same request, since they move in step, stalling
    /// the client for all of them at once.
    fn sized(requests: u64, tasks: usize, connect: bool) -> Self {
        let share = requests.div_ceil(tasks.max(1) as u64);
        let cap = (share + share / 2) as usize;
        TaskOut {
            latency: Vec::with_capacity(cap),
            connect: if connect {
                Vec::with_capacity(cap)
            } else {
                Vec::new()
            },
            ..TaskOut::default()
        }
    }
}

/// Runs the measured part of a phase. `progress` counts completed units.
pub async fn run(
    client: &Arc<dyn Client>,
    w: &Workload,
    prepared: &Prepared,
    progress: &Arc<AtomicU64>,
) -> anyhow::Result<Measured> {
    run_shared(client, w, prepared, progress, &Arc::default()).await
}

/// [`run`] with ticket and in-flight counters shared with other client
/// threads running their share of the same phase.
pub async fn run_shared(
    client: &Arc<dyn Client>,
    w: &Workload,
    prepared: &Prepared,
    progress: &Arc<AtomicU64>,
    shared: &Arc<Shared>,
) -> anyhow::Result<Measured> {
    let mut set: JoinSet<anyhow::Result<TaskOut>> = JoinSet::new();
    let start = Instant::now();
    let mut fresh_conns = false;
    match *w {
        Workload::Fresh {
            requests,
            workers,
            response_len,
            body_len,
            ..
        } => {
            fresh_conns = true;
            for _ in 0..workers {
                let (client, shared, progress) = (client.clone(), shared.clone(), progress.clone());
                let mut out = TaskOut::sized(requests, workers as usize, true);
                set.spawn(async move {
                    while shared.tickets.fetch_add(1, Relaxed) < requests {
                        shared.gauge.inc();
                        let req = Request {
                            response_len,
                            body_len,
                        };
                        let (c, l) = match fresh_request(&*client, req).await {
                            Err(e) if lost(&e) => {
                                shared.gauge.dec();
                                out.lost += 1;
                                continue;
                            }
                            r => r?,
                        };
                        shared.gauge.dec();
                        out.connect.push(c);
                        out.latency.push(l);
                        out.requests += 1;
                        out.bytes_in += response_len;
                        out.bytes_out += body_len;
                        progress.fetch_add(1, Relaxed);
                    }
                    Ok(out)
                });
            }
        }
        Workload::Persistent {
            in_flight,
            requests,
            response_len,
            body_len,
            ..
        } => {
            for conn in &prepared.conns {
                for _ in 0..in_flight {
                    let (conn, shared, progress) = (conn.clone(), shared.clone(), progress.clone());
                    let tasks = prepared.conns.len() * in_flight as usize;
                    let mut out = TaskOut::sized(requests, tasks, false);
                    set.spawn(async move {
                        while shared.tickets.fetch_add(1, Relaxed) < requests {
                            shared.gauge.inc();
                            let t = Instant::now();
                            let req = Request {
                                response_len,
                                body_len,
                            };
                            match conn.request(req).await {
                                Err(e) if lost(&e) => {
                                    shared.gauge.dec();
                                    out.lost += 1;
                                    continue;
                                }
                                r => r?,
                            }
                            out.latency.push(t.elapsed().as_nanos() as u64);
                            shared.gauge.dec();
                            out.requests += 1;
                            out.bytes_in += response_len;
                            out.bytes_out += body_len;
                            progress.fetch_add(1, Relaxed);
                        }
                        Ok(out)
                    });
                }
            }
        }
        Workload::Streams {
            streams,
            duration_ms,
            chunk,
            ..
        } => {
            let until = start + Duration::from_millis(duration_ms);
            for conn in &prepared.conns {
                for _ in 0..streams {
                    let (conn, shared) = (conn.clone(), shared.clone());
                    set.spawn(async move {
                        let mut out = TaskOut::default();
                        while Instant::now() < until {
                            shared.gauge.inc();
                            let t = Instant::now();
                            conn.request(Request {
                                response_len: chunk,
                                body_len: 0,
                            })
                            .await?;
                            out.latency.push(t.elapsed().as_nanos() as u64);
                            shared.gauge.dec();
                            out.requests += 1;
                            out.bytes_in += chunk;
                        }
                        Ok(out)
                    });
                }
            }
        }
        Workload::Blast {
            bytes,
            runs,
            payload,
            ..
        } => {
            let mut out = TaskOut::default();
            for _ in 0..runs {
                let t = Instant::now();
                let r = client
                    .blast(Blast {
                        bytes: Some(bytes),
                        until: None,
                        payload: payload as usize,
                    })
                    .await?;
                out.latency.push(t.elapsed().as_nanos() as u64);
                out.requests += 1;
                out.bytes_out += r.bytes;
                out.datagrams += r.datagrams;
                progress.fetch_add(1, Relaxed);
            }
            set.spawn(async move { Ok(out) });
        }
        Workload::BlastFor {
            senders,
            duration_ms,
            payload,
        } => {
            let until = start + Duration::from_millis(duration_ms);
            for _ in 0..senders {
                let client = client.clone();
                set.spawn(async move {
                    let r = client
                        .blast(Blast {
                            bytes: None,
                            until: Some(until),
                            payload: payload as usize,
                        })
                        .await?;
                    Ok(TaskOut {
                        bytes_out: r.bytes,
                        datagrams: r.datagrams,
                        ..TaskOut::default()
                    })
                });
            }
        }
    }
    let mut m = Measured::default();
    let mut datagrams = 0;
    while let Some(res) = set.join_next().await {
        // The first failure ends the phase; dropping the set cancels the rest.
        let out = res.context("client task panicked")??;
        m.latency_ns.extend(out.latency);
        m.connect_ns.extend(out.connect);
        m.bytes_in += out.bytes_in;
        m.bytes_out += out.bytes_out;
        m.requests += out.requests;
        m.lost += out.lost;
        datagrams += out.datagrams;
    }
    m.elapsed = start.elapsed();
    m.peak_in_flight = shared.gauge.peak.load(Relaxed);
    match w {
        Workload::Blast { .. } | Workload::BlastFor { .. } => m.datagrams_sent = Some(datagrams),
        Workload::Streams { .. } => m.peak_connections = prepared.conns.len() as u64,
        _ if fresh_conns => {
            m.connections = m.requests;
            m.peak_connections = m.peak_in_flight;
        }
        _ => m.peak_connections = prepared.conns.len() as u64,
    }
    Ok(m)
}
