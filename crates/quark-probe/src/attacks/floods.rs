//! Control frames that make the server queue answers, sent by a peer that
//! never acknowledges them, and ACKs for packets never sent.

use std::time::{Duration, Instant};

use quark_proto::connection::Misbehave;
use quark_proto::frame::{Frame, NewConnectionId, encode_ack};
use quark_proto::{ConnectionHandle, ConnectionId, Dir, TransportConfig};
use rand::Rng;

use crate::peer::Peers;
use crate::{Report, Scale, Target};

/// Bytes of frames per packet.
const PACKET_FRAMES: usize = 1_100;

/// One connection that sends `count` frames made by `make`, never
/// acknowledging what the server sends back and taking no offence at it
/// (the server's answers name IDs this connection never issued, say).
fn unacked_flood(
    target: &Target,
    count: u64,
    mut make: impl FnMut(u64, &mut Vec<u8>, &mut Peers, ConnectionHandle),
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
        tolerate_violations: true,
        ..Misbehave::default()
    });
    let mut frames = Vec::with_capacity(PACKET_FRAMES + 64);
    let mut i = 0;
    while i < count && !peers.conn(h).is_closed() {
        while frames.len() < PACKET_FRAMES && i < count {
            make(i, &mut frames, &mut peers, h);
            i += 1;
        }
        peers.conn(h).inject_raw_frames(&frames);
        frames.clear();
        peers.flush()?;
        // Take in what the server says now and then: a close, above all.
        if i % 2_048 < 40 {
            peers.pump(Duration::ZERO)?;
        }
    }
    peers.pump(Duration::from_millis(300))?;
    let mut report = Report::default();
    report.count_closes(peers.closes());
    report.notes.push(format!("{i} frames sent"));
    report.sent = peers.sent;
    Ok(report)
}

/// NEW_CONNECTION_ID frames, each retiring every earlier ID: the server owes
/// a RETIRE_CONNECTION_ID for each, which is never acknowledged.
pub(super) fn retire_flood(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let count = scale.pick(200_000, 2_000_000);
    let mut rng = rand::rng();
    unacked_flood(target, count, |i, out, peers, h| {
        // Far above the sequence numbers our connection issues itself.
        let seq = 1_000 + i;
        let mut cid = [0u8; 8];
        rng.fill(&mut cid);
        let cid = ConnectionId::new(&cid).expect("8 bytes");
        // The server will send to it: its packets must still reach us.
        peers.route(cid, h);
        Frame::NewConnectionId(NewConnectionId {
            seq,
            retire_prior_to: seq,
            cid,
            reset_token: rng.random(),
        })
        .encode(out);
    })
}

/// PATH_CHALLENGE frames by the thousand.
pub(super) fn path_challenge_flood(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let count = scale.pick(200_000, 2_000_000);
    let mut rng = rand::rng();
    unacked_flood(target, count, |_, out, _, _| {
        Frame::PathChallenge(rng.random()).encode(out);
    })
}

/// While the server sends a file, acknowledge a little ahead of what has
/// arrived (16 packets past the count received), never honestly: a server
/// that believed it would send faster than the path allows. Only a server
/// that skips packet numbers can tell (RFC 9000 §21.4).
pub(super) fn optimistic_ack(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let mut peers = Peers::new(target, TransportConfig::default())?;
    let h = peers.connect_many(1, Duration::from_secs(5))?[0];
    let conn = peers.conn(h);
    let id = conn
        .open_stream(Dir::Bi)
        .ok_or_else(|| anyhow::anyhow!("no stream"))?;
    conn.write(id, format!("GET {}\r\n", target.big).as_bytes())?;
    conn.finish(id)?;
    peers.misbehave(Misbehave {
        no_acks: true,
        ..Misbehave::default()
    });
    let end = Instant::now() + scale.pick(Duration::from_secs(3), Duration::from_secs(10));
    let mut frame = Vec::new();
    while Instant::now() < end && !peers.conn(h).is_closed() {
        peers.pump(Duration::from_millis(2))?;
        // The server's 1-RTT packet numbers run from about the count the
        // handshake left behind; a few past what arrived is a plausible lie.
        let ahead = peers.conn(h).stats().packets_in + 16;
        frame.clear();
        encode_ack(&mut frame, std::iter::once(0..ahead), 0, None, 1, 64);
        peers.conn(h).inject_raw_frames(&frame);
    }
    peers.pump(Duration::from_millis(300))?;
    let mut report = Report::default();
    report.count_closes(peers.closes());
    report.sent = peers.sent;
    Ok(report)
}
