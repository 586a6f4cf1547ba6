//! One connection of `quark get`: its handshake (in 0-RTT when it can), the
//! URLs fetched in parallel as its streams, and its summary line.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail};
use quark::{ClientConfig, Endpoint};
use tokio::io::AsyncWriteExt;

use super::dial::dial;
use super::fetch::{Fetched, Sink, Via, fetch_one, progress_bar};
use super::{GetArgs, Url, output_name};
use crate::get_http::RequestOptions;

/// What every connection of one run shares.
pub(super) struct Plan<'a> {
    pub(super) args: &'a GetArgs,
    pub(super) endpoint: Endpoint,
    /// The URLs' host and port (all name the same server).
    pub(super) server: &'a Url,
    pub(super) request: Option<RequestOptions>,
    /// `-o -`: bodies to standard output, in the order of the URLs.
    pub(super) to_stdout: bool,
    pub(super) out_dir: PathBuf,
    /// With one URL, the file `-o` named instead of a directory.
    pub(super) out_file: Option<PathBuf>,
    pub(super) timeout: Duration,
}

/// Where a connection stands in a run.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Role {
    /// The run's only connection.
    Only,
    /// `--resume`'s first: it gets the session ticket the next resumes.
    Ticket,
    /// `--resume`'s second: its summary says whether it resumed.
    Resuming,
}

/// Fetch `urls` over one new connection to the first of `addrs` to answer
/// and print its summary line. Returns the address that answered.
pub(super) async fn fetch(
    plan: &Plan<'_>,
    config: ClientConfig,
    addrs: &[SocketAddr],
    urls: &[Url],
    role: Role,
) -> anyhow::Result<SocketAddr> {
    let (args, server) = (plan.args, plan.server);
    let start = Instant::now();
    let (conn, early) = dial(&plan.endpoint, config, addrs, &server.host, plan.timeout).await?;
    let addr = conn.remote_address();
    // With 0-RTT the requests go before the handshake ends: time it apart.
    let handshake = {
        let conn = conn.clone();
        tokio::spawn(async move {
            let accepted = conn.handshake().await.unwrap_or(false);
            (start.elapsed(), accepted)
        })
    };
    let via = match args.h3 {
        true => {
            let h3 = quark_h3::Config {
                qpack_max_table_capacity: args.qpack_capacity,
                qpack_blocked_streams: args.qpack_blocked_streams,
                ..Default::default()
            };
            let client = quark_h3::Client::with_config(conn.clone(), &h3)
                .await
                .map_err(|e| anyhow!("{addr}: HTTP/3 failed to start: {e}"))?;
            let authority = match server.host.contains(':') {
                true => format!("[{}]:{}", server.host, server.port),
                false => format!("{}:{}", server.host, server.port),
            };
            // With -i/-H/-X/-d the request is built from the options: the
            // priority goes in as its header field, unless -H set one.
            let request = plan.request.clone().map(|mut opts| {
                if let Some(p) = args.priority {
                    let name = http::HeaderName::from_static(quark_h3::priority::PRIORITY);
                    if !opts.headers.iter().any(|(n, _)| *n == name) {
                        if let Ok(v) = http::HeaderValue::from_str(&quark_h3::priority::format(p)) {
                            opts.headers.push((name, v));
                        }
                    }
                }
                Arc::new(opts)
            });
            Via::H3(client, authority.into(), request, args.priority)
        }
        false => Via::Hq(conn.clone()),
    };

    if args.key_update {
        // Confirmed once HANDSHAKE_DONE arrives, a round trip or so later.
        let conn = conn.clone();
        tokio::spawn(async move {
            for _ in 0..500 {
                if conn.initiate_key_update() {
                    return;
                }
                tokio::time::sleep(Duration::from_millis(2)).await;
            }
        });
    }
    let bar = progress_bar(args.quiet, urls.len());
    let mut tasks = Vec::new();
    for (i, url) in urls.iter().enumerate() {
        let (via, path, bar) = (via.clone(), url.path.clone(), bar.clone());
        // To stdout the first body streams straight through; later ones wait in
        // memory for their turn, so the output follows the order of the URLs.
        let dest = match (plan.to_stdout, i) {
            (true, 0) => Sink::Stdout,
            (true, _) => Sink::Memory,
            (false, _) => match &plan.out_file {
                // The user's file: kept if the fetch fails (it may be a
                // device, or have been there before).
                Some(file) => Sink::File(file.clone(), false),
                None => Sink::File(plan.out_dir.join(output_name(&url.path)), true),
            },
        };
        tasks.push(tokio::spawn(async move {
            fetch_one(via, path, dest, bar).await
        }));
    }
    let mut total = 0u64;
    let mut failures = 0;
    let mut stdout = tokio::io::stdout();
    for (url, task) in urls.iter().zip(tasks) {
        match task.await? {
            Ok(Fetched::File(n)) => total += n,
            Ok(Fetched::Memory(body)) => {
                total += body.len() as u64;
                stdout.write_all(&body).await?;
            }
            Err(e) => {
                failures += 1;
                bar.suspend(|| eprintln!("error: {}: {e}", url.path));
            }
        }
    }
    stdout.flush().await?;
    bar.finish_and_clear();
    let elapsed = start.elapsed();
    let code = if args.h3 {
        quark_h3::error::H3_NO_ERROR
    } else {
        0
    };
    let (handshake, accepted) = handshake.await?;
    // The first connection's 0-RTT is never available: only the one that
    // resumes reports it.
    let zero_rtt = match (args.zero_rtt && role != Role::Ticket, early, accepted) {
        (false, ..) => "",
        (true, false, _) => ", 0-RTT unavailable",
        (true, true, true) => ", 0-RTT accepted",
        (true, true, false) => ", 0-RTT rejected",
    };
    let resumed = match (role, conn.is_resumed()) {
        (Role::Resuming, true) => ", resumed",
        (Role::Resuming, false) => ", full handshake (no resumption)",
        _ => "",
    };
    if role == Role::Ticket && failures == 0 {
        super::zero_rtt::await_tickets(&conn).await;
    }
    let (stats, ecn) = (conn.stats(), conn.ecn_state());
    let key_updates = stats.key_updates;
    conn.close(code, b"done");
    if role != Role::Ticket {
        let _ = tokio::time::timeout(Duration::from_secs(1), plan.endpoint.wait_idle()).await;
        // The files must be complete when the process exits.
        plan.endpoint.flush_qlog();
    }
    if !args.quiet {
        let secs = elapsed.as_secs_f64();
        let updates = match key_updates {
            0 => String::new(),
            n => format!(", {n} key update{}", if n == 1 { "" } else { "s" }),
        };
        let version = match conn.quic_version() {
            Some(quark::VERSION_2) => ", QUIC v2",
            _ => "",
        };
        eprintln!(
            "{} of {} files, {} bytes in {:.3} s (handshake {:.1} ms), goodput {:.1} Mbit/s [{}{}{updates}{version}{zero_rtt}{resumed}]",
            urls.len() - failures,
            urls.len(),
            total,
            secs,
            handshake.as_secs_f64() * 1e3,
            total as f64 * 8.0 / secs / 1e6,
            conn.cipher_suite().unwrap_or_default(),
            ecn_summary(&stats, ecn),
        );
    }
    if failures > 0 {
        bail!("{failures} of {} downloads failed", urls.len());
    }
    Ok(addr)
}

/// `, ECN capable (ECT(0) in 90, CE 0, marked out 96)`: what the path did
/// with ECN marks, as the summary line shows it.
fn ecn_summary(stats: &quark::ConnectionStats, state: Option<quark::EcnState>) -> String {
    let state = match state {
        Some(quark::EcnState::Testing) => "testing",
        Some(quark::EcnState::Unknown) => "unknown",
        Some(quark::EcnState::Capable) => "capable",
        Some(quark::EcnState::Failed) | None => "off",
    };
    let mut s = format!(
        ", ECN {state} (ECT(0) in {}, CE {}, marked out {}",
        stats.ecn_ect0_in, stats.ecn_ce_in, stats.ecn_marked_out
    );
    if stats.ecn_ect1_in > 0 {
        s += &format!(", ECT(1) in {}", stats.ecn_ect1_in);
    }
    s.push(')');
    s
}
