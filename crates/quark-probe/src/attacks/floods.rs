//! Control frames that make the server queue answers, sent by a peer that
//! never acknowledges them, and ACKs for packets never sent.

use std::time::Duration;

use quark_proto::connection::Misbehave;
use quark_proto::frame::{Frame, NewConnectionId, encode_ack};
use quark_proto::{ConnectionId, Dir, TransportConfig};
use rand::Rng;

use crate::peer::Peers;
use crate::{Report, Scale, Target};

/// Bytes of frames per packet.
const PACKET_FRAMES: usize = 1_100;

/// One connection that sends `count` frames made by `make`, never
/// acknowledging or even reading what the server sends back; then listens
/// again to learn whether the server closed it.
fn deaf_flood(
    target: &Target,
    count: u64,
    mut make: impl FnMut(u64, &mut Vec<u8>),
) -> anyhow::Result<Report> {
    let transport = TransportConfig {
        max_idle_timeout: Duration::from_secs(120),
        ..TransportConfig::default()
    };
    let mut peers = Peers::new(target, transport)?;
    let h = peers.connect_many(1, Duration::from_secs(5))?[0];
    peers.misbehave(Misbehave {
        no_acks: true,
        ignore_congestion: true,
    });
    peers.deaf = true;
    let mut frames = Vec::with_capacity(PACKET_FRAMES + 64);
    let mut i = 0;
    while i < count {
        while frames.len() < PACKET_FRAMES && i < count {
            make(i, &mut frames);
            i += 1;
        }
        peers.conn(h).inject_raw_frames(&frames);
        frames.clear();
        peers.flush()?;
        if i % (64 * 40) < 40 {
            peers.pump(Duration::ZERO)?; // timers; what arrives is dropped
        }
    }
    // What the server sent meanwhile is dropped; then a PING: a server that
    // closed the connection answers it with its CONNECTION_CLOSE.
    peers.pump(Duration::from_millis(200))?;
    peers.deaf = false;
    peers.conn(h).ping();
    peers.pump(Duration::from_millis(300))?;
    let mut report = Report::default();
    report.count_closes(peers.closes());
    report.sent = peers.sent;
    Ok(report)
}

/// NEW_CONNECTION_ID frames, each retiring every earlier ID: the server owes
/// a RETIRE_CONNECTION_ID for each, which is never acknowledged.
pub(super) fn retire_flood(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let count = scale.pick(200_000, 2_000_000);
    let mut rng = rand::rng();
    deaf_flood(target, count, |i, out| {
        // Far above the sequence numbers our connection issues itself.
        let seq = 1_000 + i;
        let mut cid = [0u8; 8];
        rng.fill(&mut cid);
        Frame::NewConnectionId(NewConnectionId {
            seq,
            retire_prior_to: seq,
            cid: ConnectionId::new(&cid).expect("8 bytes"),
            reset_token: rng.random(),
        })
        .encode(out);
    })
}

/// PATH_CHALLENGE frames by the thousand.
pub(super) fn path_challenge_flood(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let count = scale.pick(200_000, 2_000_000);
    let mut rng = rand::rng();
    deaf_flood(target, count, |_, out| {
        Frame::PathChallenge(rng.random()).encode(out);
    })
}

/// An ACK for ten million packets while the server is sending a file: a
/// sender that believed it would grow its window without bound.
pub(super) fn optimistic_ack(target: &Target, _scale: Scale) -> anyhow::Result<Report> {
    let mut peers = Peers::new(target, TransportConfig::default())?;
    let h = peers.connect_many(1, Duration::from_secs(5))?[0];
    let conn = peers.conn(h);
    let id = conn
        .open_stream(Dir::Bi)
        .ok_or_else(|| anyhow::anyhow!("no stream"))?;
    conn.write(id, format!("GET {}\r\n", target.big).as_bytes())?;
    conn.finish(id)?;
    peers.pump(Duration::from_millis(100))?;
    let mut frame = Vec::new();
    encode_ack(&mut frame, std::iter::once(0..10_000_001), 0, None, 1, 64);
    peers.conn(h).inject_raw_frames(&frame);
    peers.pump(Duration::from_millis(500))?;
    let mut report = Report::default();
    report.count_closes(peers.closes());
    report.sent = peers.sent;
    Ok(report)
}
