//! Slow peers: they ask for much and take little. A server that buffers
//! ahead of what the peer accepts, or keeps a request's state forever while
//! it is being sent a byte at a time, holds memory no bound covers.

use std::time::{Duration, Instant};

use quark_proto::{ConnectionHandle, Dir, TransportConfig};

use crate::peer::Peers;
use crate::{Report, Scale, Target};

/// Connections that each request the large file on every stream the server
/// allows, with a 1 MiB connection window.
fn request_everything(
    target: &Target,
    scale: Scale,
) -> anyhow::Result<(Peers, Vec<ConnectionHandle>)> {
    let connections = scale.pick(3, 15);
    let transport = TransportConfig {
        receive_window: 1 << 20,
        receive_window_max: 1 << 20,
        stream_receive_window: 1 << 20,
        stream_receive_window_max: 1 << 20,
        max_idle_timeout: Duration::from_secs(120),
        ..TransportConfig::default()
    };
    let mut peers = Peers::new(target, transport)?;
    let hs = peers.connect_many(connections, Duration::from_secs(5))?;
    let request = format!("GET {}\r\n", target.big);
    for &h in &hs {
        let conn = peers.conn(h);
        while let Some(id) = conn.open_stream(Dir::Bi) {
            conn.write(id, request.as_bytes())?;
            conn.finish(id)?;
        }
    }
    Ok((peers, hs))
}

/// Acknowledge everything, read nothing: the server may send one window per
/// connection and no more, ever.
pub(super) fn slow_ack(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let (mut peers, _) = request_everything(target, scale)?;
    peers.pump(scale.pick(Duration::from_secs(5), Duration::from_secs(20)))?;
    let mut report = Report::default();
    report.count_closes(peers.closes());
    report.sent = peers.sent;
    Ok(report)
}

/// Request, take a little, then go silent: no reads, no ACKs.
pub(super) fn slow_read(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let (mut peers, _) = request_everything(target, scale)?;
    peers.pump(Duration::from_millis(300))?;
    peers.deaf = true;
    peers.pump(scale.pick(Duration::from_secs(5), Duration::from_secs(20)))?;
    Ok(Report {
        sent: peers.sent,
        ..Report::default()
    })
}

/// Every stream the server allows, each with a request whose end never
/// comes: a byte every second.
pub(super) fn slow_loris(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let connections = scale.pick(5, 50);
    let transport = TransportConfig {
        max_idle_timeout: Duration::from_secs(120),
        ..TransportConfig::default()
    };
    let mut peers = Peers::new(target, transport)?;
    let hs = peers.connect_many(connections, Duration::from_secs(5))?;
    let mut streams = Vec::new();
    for &h in &hs {
        let conn = peers.conn(h);
        while let Some(id) = conn.open_stream(Dir::Bi) {
            conn.write(id, b"GET /")?;
            streams.push((h, id));
        }
    }
    let end = Instant::now() + scale.pick(Duration::from_secs(5), Duration::from_secs(30));
    while Instant::now() < end {
        peers.pump(Duration::from_secs(1))?;
        for &(h, id) in &streams {
            // A stream the server reset refuses writes; that is its answer.
            let _ = peers.conn(h).write(id, b"a");
        }
    }
    let mut report = Report::default();
    report
        .notes
        .push(format!("{} streams held open", streams.len()));
    report.count_closes(peers.closes());
    report.sent = peers.sent;
    Ok(report)
}
