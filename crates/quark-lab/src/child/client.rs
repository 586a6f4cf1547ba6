//! `quark lab-client`: runs the phases against a server and reports each one.

use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use tokio::sync::mpsc::UnboundedReceiver;

use super::ticker::Ticker;
use super::{ClientArgs, ClientEvent, ClientReport, commands, emit, setup};
use crate::adapter::{Cipher, ClientConfig, find};
use crate::metrics::{Summary, UsageMeter, cdf_points, current_rss};
use crate::workload::{Measured, Phase, prepare, run};

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
    rt.block_on(async move {
        let client = adapter
            .client(ClientConfig {
                server: args.server,
                cert,
                cipher,
                sockets: args.client_sockets.max(1),
            })
            .await?;
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
            report.cores = client_cores(&args.common);
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

/// Cores the client's runtime can keep busy: one when pinned to a CPU or
/// single-threaded, else its threads (at most the machine's cores).
fn client_cores(common: &super::CommonArgs) -> u32 {
    let machine = std::thread::available_parallelism().map_or(1, |n| n.get()) as u32;
    if common.cpu.is_some() {
        1
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
    }
}
