//! `quark lab-client`: runs the phases against a server and reports each one.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};
use tokio::sync::mpsc::UnboundedReceiver;

use super::threads::{self, Pool};
use super::ticker::Ticker;
use super::{ClientArgs, ClientEvent, ClientReport, commands, emit, setup};
use crate::adapter::{Cipher, ClientConfig, find};
use crate::metrics::{Summary, UsageMeter, cdf_points, current_rss};
use crate::workload::{Measured, Phase, Shared, Workload, prepare, run};

/// Points kept of each CDF.
const CDF_POINTS: usize = 200;

/// Runs the client process. Returns the exit code.
pub fn run_client(args: ClientArgs) -> i32 {
    match client(args) {
        Ok(()) => 0,
        Err(e) => {
            emit(&ClientEvent::Error {
                message: format!("{e:#}"),
            });
            1
        }
    }
}

async fn expect(cmds: &mut UnboundedReceiver<String>, want: &str) -> anyhow::Result<()> {
    match cmds.recv().await {
        Some(c) if c == want => Ok(()),
        Some(c) => bail!("expected '{want}', got '{c}'"),
        None => bail!("control channel closed"),
    }
}

fn client(args: ClientArgs) -> anyhow::Result<()> {
    let rt = setup(&args.common)?;
    let adapter = find(&args.common.proto)
        .ok_or_else(|| anyhow!("unknown protocol {}", args.common.proto))?;
    args.common.apply_congestion_control()?;
    let cipher = Cipher::parse(&args.common.cipher)
        .ok_or_else(|| anyhow!("unknown cipher {}", args.common.cipher))?;
    let phases: Vec<Phase> = serde_json::from_str(&args.phases).context("--phases")?;
    let cert = rustls_pki_types::CertificateDer::from(
        std::fs::read(&args.common.cert).context("reading the certificate")?,
    );
    let config = ClientConfig {
        server: args.server,
        cert,
        cipher,
        sockets: args.client_sockets.max(1),
    };
    if args.client_threads > 1 {
        return rt.block_on(threaded(args, adapter, config, phases));
    }
    rt.block_on(async move {
        let client = adapter.client(config).await?;
        let mut cmds = commands();
        for (index, phase) in phases.iter().enumerate() {
            emit(&ClientEvent::Phase { index });
            expect(&mut cmds, "prepare").await?;
            let baseline = current_rss();
            let prepared = prepare(&client, &phase.workload)
                .await
                .with_context(|| phase.label.clone())?;
            emit(&ClientEvent::Ready);
            expect(&mut cmds, "go").await?;
            let meter = UsageMeter::start(baseline);
            let cpu = client.cpu_counters();
            let progress = Arc::new(AtomicU64::new(0));
            let ticker = (args.progress_ms > 0).then(|| {
                Ticker::start(
                    progress.clone(),
                    phase.workload.is_timed(),
                    Duration::from_millis(args.progress_ms),
                )
            });
            let measured = run(&client, &phase.workload, &prepared, &progress)
                .await
                .with_context(|| phase.label.clone());
            let usage = meter.stop();
            drop(ticker);
            let mut report = summarize(measured?, usage);
            report.cores = client_cores(&args.common, 1);
            report.breakdown = cpu
                .zip(client.cpu_counters())
                .and_then(|(a, b)| a.per_unit(&b, report.requests));
            emit(&ClientEvent::Done {
                result: Box::new(report),
            });
            prepared.teardown().await;
            client.wait_idle().await;
        }
        emit(&ClientEvent::Finished);
        // Wait for the orchestrator to close our stdin (which exits the process).
        while cmds.recv().await.is_some() {}
        Ok(())
    })
}

/// The phases over `--client-threads` threads (see [`super::threads`]).
async fn threaded(
    args: ClientArgs,
    adapter: &'static dyn crate::adapter::Adapter,
    config: ClientConfig,
    phases: Vec<Phase>,
) -> anyhow::Result<()> {
    let n = args.client_threads;
    // quark: one RTT estimate per path for every thread's sockets, as for
    // one thread's (the kernel's TCP keeps one per host for all threads).
    crate::adapter::quic::share_path_rtts_across_clients();
    let spin = args.common.busy_poll && !adapter.busy_poll(super::BUSY_POLL);
    let mut pool = Pool::start(adapter, config, n, spin).await?;
    let mut cmds = commands();
    for (index, phase) in phases.iter().enumerate() {
        emit(&ClientEvent::Phase { index });
        expect(&mut cmds, "prepare").await?;
        let baseline = current_rss();
        let shared = Arc::new(Shared::default());
        let progress = Arc::new(AtomicU64::new(0));
        pool.prepare(&phase.workload, &shared, &progress)
            .await
            .with_context(|| phase.label.clone())?;
        emit(&ClientEvent::Ready);
        expect(&mut cmds, "go").await?;
        let meter = UsageMeter::start(baseline);
        let cpu = pool.cpu_counters();
        let ticker = (args.progress_ms > 0).then(|| {
            Ticker::start(
                progress.clone(),
                phase.workload.is_timed(),
                Duration::from_millis(args.progress_ms),
            )
        });
        let go = Instant::now();
        let runs = pool.go().await.with_context(|| phase.label.clone());
        let usage = meter.stop();
        drop(ticker);
        let runs = runs?;
        let thread_cpu_s = runs.iter().map(|r| r.cpu_s).collect();
        let fresh = matches!(phase.workload, Workload::Fresh { .. });
        let mut report = summarize(threads::merge(runs, go, fresh), usage);
        report.cores = client_cores(&args.common, n);
        report.thread_cpu_s = thread_cpu_s;
        report.breakdown = cpu
            .zip(pool.cpu_counters())
            .and_then(|(a, b)| a.per_unit(&b, report.requests));
        emit(&ClientEvent::Done {
            result: Box::new(report),
        });
        pool.teardown().await?;
    }
    emit(&ClientEvent::Finished);
    while cmds.recv().await.is_some() {}
    Ok(())
}

/// Cores the client's runtime can keep busy: one when pinned to a CPU or
/// single-threaded, else its threads (at most the machine's cores);
/// `client_threads` threads each run a runtime of their own.
fn client_cores(common: &super::CommonArgs, client_threads: usize) -> u32 {
    let machine = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    if common.cpu.is_some() {
        1
    } else if client_threads > 1 {
        (client_threads as u32).clamp(1, machine)
    } else {
        common.threads.clamp(1, machine)
    }
}

fn summarize(mut m: Measured, usage: crate::metrics::Usage) -> ClientReport {
    let request_time_s = m.latency_ns.iter().map(|&n| n as f64).sum::<f64>() / 1e9;
    let latency_s = Summary::from_nanos(&mut m.latency_ns);
    let connect_s = Summary::from_nanos(&mut m.connect_ns);
    ClientReport {
        requests: m.requests,
        connections: m.connections,
        bytes_in: m.bytes_in,
        bytes_out: m.bytes_out,
        elapsed_s: m.elapsed.as_secs_f64(),
        request_time_s,
        latency_s,
        connect_s,
        latency_cdf: cdf_points(&m.latency_ns, CDF_POINTS),
        connect_cdf: cdf_points(&m.connect_ns, CDF_POINTS),
        peak_in_flight: m.peak_in_flight,
        peak_connections: m.peak_connections,
        datagrams_sent: m.datagrams_sent,
        lost: m.lost,
        usage,
        breakdown: None,
        cores: 0,
        thread_cpu_s: Vec::new(),
    }
}
