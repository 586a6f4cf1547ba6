//! `quark lab-server`: serves one protocol and measures itself between
//! `start` and `end`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, anyhow};

use super::{ServerArgs, ServerEvent, commands, emit, setup};
use crate::adapter::{Cipher, Identity, Kind, ServeConfig, ServerStats, find};
use crate::metrics::{UsageMeter, current_rss};

/// Runs the server process until stdin closes or `quit`. Returns the exit code.
pub fn run_server(args: ServerArgs) -> i32 {
    match serve(args) {
        Ok(()) => 0,
        Err(e) => {
            emit(&ServerEvent::Error {
                message: format!("{e:#}"),
            });
            1
        }
    }
}

fn serve(args: ServerArgs) -> anyhow::Result<()> {
    let adapter = find(&args.common.proto)
        .ok_or_else(|| anyhow!("unknown protocol {}", args.common.proto))?;
    let mut common = args.common.clone();
    let mut workers = args.server_workers;
    if !adapter.own_workers()
        && let Some(n) = workers.take()
    {
        // Spread this server over n runtime threads instead.
        common.threads = common.threads.max(n as u32);
    }
    let rt = setup(&common)?;
    args.common.apply_congestion_control()?;
    let cipher = Cipher::parse(&args.common.cipher)
        .ok_or_else(|| anyhow!("unknown cipher {}", args.common.cipher))?;
    let identity =
        Identity::load(&args.common.cert, &args.key).context("reading the certificate")?;
    rt.block_on(async move {
        let stats = Arc::new(ServerStats::default());
        if let Some(n) = args.die_after {
            stats.set_die_after(n);
        }
        let server = adapter
            .serve(ServeConfig {
                listen: args.listen,
                identity,
                cipher,
                stats: stats.clone(),
                workers,
            })
            .await?;
        emit(&ServerEvent::Listening {
            addr: server.local_addr().to_string(),
        });
        let mut cmds = commands();
        let mut baseline = current_rss();
        let mut meter = None;
        while let Some(cmd) = cmds.recv().await {
            match cmd.as_str() {
                "mark" => {
                    baseline = current_rss();
                    emit(&ServerEvent::Marked);
                }
                "start" => {
                    if adapter.kind() == Kind::Datagram {
                        // Count the warm-up's datagrams before the interval.
                        drain(&stats).await;
                    }
                    // A client sees a response complete before the server task
                    // that wrote it counts it: let earlier requests finish
                    // counting, or one lands in the interval (201 of 200).
                    settle(&stats).await;
                    server.sync_counters();
                    stats.reset();
                    meter = Some((
                        UsageMeter::start(baseline),
                        server.cpu_counters(),
                        server.helper_cpu(),
                    ));
                    emit(&ServerEvent::Started);
                }
                "end" => {
                    if adapter.kind() == Kind::Datagram {
                        drain(&stats).await;
                    }
                    // The same race as at "start": the client has the last
                    // response before its task counts it (199 of 200).
                    settle(&stats).await;
                    server.sync_counters();
                    let (m, cpu, helper) = meter
                        .take()
                        .ok_or_else(|| anyhow!("'end' without 'start'"))?;
                    let mut usage = m.stop();
                    // A server's own processes (nginx's) count as the server.
                    if let Some(((u0, s0), (u1, s1))) = helper.zip(server.helper_cpu()) {
                        usage.user_s += u1.saturating_sub(u0).as_secs_f64();
                        usage.sys_s += s1.saturating_sub(s0).as_secs_f64();
                    }
                    let counters = stats.snapshot();
                    let breakdown = cpu
                        .zip(server.cpu_counters())
                        .and_then(|(a, b)| a.per_unit(&b, counters.requests));
                    emit(&ServerEvent::Report {
                        usage,
                        counters,
                        breakdown,
                    });
                }
                "quit" => break,
                other => return Err(anyhow!("unknown command '{other}'")),
            }
        }
        drop(server);
        Ok(())
    })
}

/// Lets datagrams still queued in the socket be counted: waits until none
/// arrived for 50 ms (at most 2 s).
/// Waits (at most 2 s) until no request is being served.
async fn settle(stats: &ServerStats) {
    for _ in 0..2000 {
        if stats.in_flight() == 0 {
            return;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

async fn drain(stats: &ServerStats) {
    let mut last = stats.snapshot().datagrams;
    for _ in 0..40 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let now = stats.snapshot().datagrams;
        if now == last {
            return;
        }
        last = now;
    }
}
