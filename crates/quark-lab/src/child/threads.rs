//! `--client-threads N`: the lab client spread over N threads, each with its
//! own single-threaded runtime, its own client (its sockets or TCP
//! connections) and a share of the phase's connections or workers. Requests
//! come from one ticket counter shared by all threads, so exactly the phase's
//! count is issued, and every request's time is kept: the latency
//! distribution is the union of the threads' samples, not an average. Each
//! thread measures its own CPU time, so the report can say which thread was
//! at its core's limit.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::adapter::{Adapter, Client, ClientConfig, CpuCounters};
use crate::workload::{Measured, Prepared, Shared, Workload, prepare, run_shared};

/// What the main thread asks a client thread.
enum Cmd {
    /// Prepare this share of the phase (`None`: nothing for this thread).
    Prepare {
        share: Option<Workload>,
        shared: Arc<Shared>,
        progress: Arc<AtomicU64>,
    },
    /// Run the prepared share.
    Go,
    /// Close the share's connections and wait until the client is idle.
    Teardown,
}

/// One thread's measured share.
pub(super) struct ThreadRun {
    /// What it measured.
    pub(super) measured: Measured,
    /// When it started measuring.
    pub(super) started: Instant,
    /// Its own CPU time (user + system) while measuring, in seconds.
    pub(super) cpu_s: f64,
}

enum Reply {
    Started(anyhow::Result<Arc<dyn Client>>),
    Ready(anyhow::Result<()>),
    Done(anyhow::Result<ThreadRun>),
    Idle,
}

/// N client threads and the channels to drive them.
pub(super) struct Pool {
    cmds: Vec<UnboundedSender<Cmd>>,
    replies: UnboundedReceiver<(usize, Reply)>,
    /// Thread 0's client: the stacks' CPU counters are per process.
    first: Arc<dyn Client>,
}

impl Pool {
    /// Starts `n` threads, each making its client from `config` with its
    /// share of `config.sockets` (at least one each).
    pub(super) async fn start(
        adapter: &'static dyn Adapter,
        config: ClientConfig,
        n: usize,
        spin: bool,
    ) -> anyhow::Result<Pool> {
        let (reply_tx, mut replies) = unbounded_channel();
        let mut cmds = Vec::with_capacity(n);
        for i in 0..n {
            let (tx, rx) = unbounded_channel();
            cmds.push(tx);
            let mut cfg = config.clone();
            cfg.sockets = part(config.sockets as u64, i, n).max(1) as usize;
            let replies = reply_tx.clone();
            std::thread::Builder::new()
                .name(format!("lab-client-{i}"))
                .spawn(move || worker(i, adapter, cfg, spin, rx, replies))
                .context("starting a client thread")?;
        }
        let mut clients: Vec<Option<Arc<dyn Client>>> = vec![None; n];
        for _ in 0..n {
            match replies.recv().await {
                Some((i, Reply::Started(c))) => {
                    clients[i] = Some(c.with_context(|| format!("client thread {i}"))?)
                }
                _ => return Err(anyhow!("a client thread ended while starting")),
            }
        }
        let first = clients[0]
            .take()
            .ok_or_else(|| anyhow!("client thread 0"))?;
        Ok(Pool {
            cmds,
            replies,
            first,
        })
    }

    /// The stack's CPU counters (process-wide).
    pub(super) fn cpu_counters(&self) -> Option<CpuCounters> {
        self.first.cpu_counters()
    }

    fn send_all(&self, mut cmd: impl FnMut(usize) -> Cmd) -> anyhow::Result<()> {
        for (i, tx) in self.cmds.iter().enumerate() {
            tx.send(cmd(i))
                .map_err(|_| anyhow!("client thread {i} is gone"))?;
        }
        Ok(())
    }

    /// One reply from every thread, in thread order.
    async fn gather(&mut self) -> anyhow::Result<Vec<Reply>> {
        let mut got: Vec<Option<Reply>> = (0..self.cmds.len()).map(|_| None).collect();
        for _ in 0..got.len() {
            let (i, r) = self
                .replies
                .recv()
                .await
                .ok_or_else(|| anyhow!("client threads are gone"))?;
            got[i] = Some(r);
        }
        Ok(got.into_iter().flatten().collect())
    }

    /// Every thread prepares its share of `w` (opens its connections).
    pub(super) async fn prepare(
        &mut self,
        w: &Workload,
        shared: &Arc<Shared>,
        progress: &Arc<AtomicU64>,
    ) -> anyhow::Result<()> {
        let n = self.cmds.len();
        self.send_all(|i| Cmd::Prepare {
            share: share(w, i, n),
            shared: shared.clone(),
            progress: progress.clone(),
        })?;
        for (i, r) in self.gather().await?.into_iter().enumerate() {
            match r {
                Reply::Ready(r) => r.with_context(|| format!("client thread {i}"))?,
                _ => return Err(anyhow!("client thread {i}: unexpected reply")),
            }
        }
        Ok(())
    }

    /// Every thread runs its share; their measurements, in thread order.
    pub(super) async fn go(&mut self) -> anyhow::Result<Vec<ThreadRun>> {
        self.send_all(|_| Cmd::Go)?;
        let mut runs = Vec::with_capacity(self.cmds.len());
        for (i, r) in self.gather().await?.into_iter().enumerate() {
            match r {
                Reply::Done(r) => runs.push(r.with_context(|| format!("client thread {i}"))?),
                _ => return Err(anyhow!("client thread {i}: unexpected reply")),
            }
        }
        Ok(runs)
    }

    /// Every thread closes its connections and waits until its client is idle.
    pub(super) async fn teardown(&mut self) -> anyhow::Result<()> {
        self.send_all(|_| Cmd::Teardown)?;
        self.gather().await.map(drop)
    }
}

/// Thread `i` of `n`'s part of `total`: as even as possible, the first
/// `total % n` threads one more.
fn part(total: u64, i: usize, n: usize) -> u64 {
    let (i, n) = (i as u64, n.max(1) as u64);
    total / n + u64::from(i < total % n)
}

/// Thread `i` of `n`'s share of a phase: its part of the connections (or
/// workers, senders) and of the warm-up; the request count stays whole, as the
/// threads draw from shared tickets. `None`: nothing for this thread.
pub(super) fn share(w: &Workload, i: usize, n: usize) -> Option<Workload> {
    let p32 = |t: u32| part(u64::from(t), i, n) as u32;
    let mut w = w.clone();
    let units = match &mut w {
        Workload::Fresh {
            workers, warmup, ..
        } => {
            *workers = p32(*workers);
            *warmup = part(*warmup, i, n);
            *workers
        }
        Workload::Persistent {
            connections,
            warmup,
            ..
        } => {
            *connections = p32(*connections);
            *warmup = part(*warmup, i, n);
            *connections
        }
        Workload::Streams { connections, .. } => {
            *connections = p32(*connections);
            *connections
        }
        // Blasts one after another: one thread does them all.
        Workload::Blast { .. } => u32::from(i == 0),
        Workload::BlastFor { senders, .. } => {
            *senders = p32(*senders);
            *senders
        }
    };
    (units > 0).then_some(w)
}

/// This thread's CPU time so far (user + system).
fn thread_cpu() -> Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    getrusage(UsageWho::RUSAGE_THREAD).map_or(Duration::ZERO, |u| {
        let us = |t: nix::sys::time::TimeVal| {
            Duration::new(t.tv_sec().max(0) as u64, (t.tv_usec().max(0) as u32) * 1000)
        };
        us(u.user_time()) + us(u.system_time())
    })
}

/// A client thread: its own runtime and client, driven by `cmds`.
fn worker(
    i: usize,
    adapter: &'static dyn Adapter,
    cfg: ClientConfig,
    spin: bool,
    mut cmds: UnboundedReceiver<Cmd>,
    replies: UnboundedSender<(usize, Reply)>,
) {
    let rt = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            let _ = replies.send((i, Reply::Started(Err(e.into()))));
            return;
        }
    };
    let reply = |r| replies.send((i, r)).is_ok();
    rt.block_on(async {
        if spin {
            // As the main runtime does with --busy-poll for stacks that do
            // not poll themselves (see `setup`).
            tokio::spawn(async {
                loop {
                    tokio::task::yield_now().await;
                }
            });
        }
        let client = match adapter.client(cfg).await {
            Ok(c) => c,
            Err(e) => {
                reply(Reply::Started(Err(e)));
                return;
            }
        };
        if !reply(Reply::Started(Ok(client.clone()))) {
            return;
        }
        let mut phase: Option<(Workload, Prepared, Arc<Shared>, Arc<AtomicU64>)> = None;
        while let Some(cmd) = cmds.recv().await {
            let ok = match cmd {
                Cmd::Prepare {
                    share,
                    shared,
                    progress,
                } => {
                    let r = match share {
                        Some(w) => prepare(&client, &w).await.map(|p| {
                            phase = Some((w, p, shared, progress));
                        }),
                        None => Ok(()),
                    };
                    reply(Reply::Ready(r))
                }
                Cmd::Go => {
                    let started = Instant::now();
                    let cpu = thread_cpu();
                    let measured = match &phase {
                        Some((w, p, shared, progress)) => {
                            run_shared(&client, w, p, progress, shared).await
                        }
                        None => Ok(Measured::default()),
                    };
                    let cpu_s = thread_cpu().saturating_sub(cpu).as_secs_f64();
                    reply(Reply::Done(measured.map(|measured| ThreadRun {
                        measured,
                        started,
                        cpu_s,
                    })))
                }
                Cmd::Teardown => {
                    if let Some((_, p, _, _)) = phase.take() {
                        p.teardown().await;
                    }
                    client.wait_idle().await;
                    reply(Reply::Idle)
                }
            };
            if !ok {
                return;
            }
        }
    });
}

/// The threads' measurements as one: counts summed, every request time kept,
/// the interval from `go` to the last thread's end. `peak_in_flight` is the
/// shared gauge's (every thread reports it); connections are summed, except
/// fresh-connection workloads, whose peak is the peak in flight.
pub(super) fn merge(runs: Vec<ThreadRun>, go: Instant, fresh: bool) -> Measured {
    let mut m = Measured::default();
    let mut end = go;
    for r in runs {
        let t = r.measured;
        end = end.max(r.started + t.elapsed);
        m.requests += t.requests;
        m.connections += t.connections;
        m.bytes_in += t.bytes_in;
        m.bytes_out += t.bytes_out;
        m.latency_ns.extend(t.latency_ns);
        m.connect_ns.extend(t.connect_ns);
        m.peak_in_flight = m.peak_in_flight.max(t.peak_in_flight);
        m.peak_connections = if fresh {
            m.peak_connections.max(t.peak_connections)
        } else {
            m.peak_connections + t.peak_connections
        };
        m.datagrams_sent = match (m.datagrams_sent, t.datagrams_sent) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
        };
        m.lost += t.lost;
    }
    m.elapsed = end - go;
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up_and_keep_the_request_count() {
        let w = Workload::Persistent {
            connections: 5_001,
            in_flight: 1,
            requests: 200_000,
            response_len: 2048,
            body_len: 0,
            warmup: 7,
        };
        let shares: Vec<_> = (0..3).filter_map(|i| share(&w, i, 3)).collect();
        let (mut conns, mut warm) = (0, 0);
        for s in &shares {
            let Workload::Persistent {
                connections,
                requests,
                warmup,
                ..
            } = *s
            else {
                panic!("{s:?}");
            };
            assert_eq!(requests, 200_000);
            conns += connections;
            warm += warmup;
        }
        assert_eq!((conns, warm), (5_001, 7));
        // One connection for two threads: the second has nothing to do.
        let one = Workload::Streams {
            connections: 1,
            streams: 4,
            duration_ms: 10,
            chunk: 1,
        };
        assert!(share(&one, 0, 2).is_some());
        assert!(share(&one, 1, 2).is_none());
    }

    #[test]
    fn merged_runs_keep_every_sample() {
        let go = Instant::now();
        let run = |n: u64, ms: u64| ThreadRun {
            measured: Measured {
                requests: n,
                latency_ns: (0..n).collect(),
                peak_connections: 3,
                peak_in_flight: 6,
                elapsed: Duration::from_millis(ms),
                ..Measured::default()
            },
            started: go,
            cpu_s: 0.0,
        };
        let m = merge(vec![run(4, 10), run(6, 30)], go, false);
        assert_eq!(m.requests, 10);
        assert_eq!(m.latency_ns.len(), 10);
        assert_eq!(m.peak_connections, 6);
        assert_eq!(m.peak_in_flight, 6);
        assert_eq!(m.elapsed, Duration::from_millis(30));
    }
}
