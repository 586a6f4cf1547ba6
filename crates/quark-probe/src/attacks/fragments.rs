//! STREAM data in 1-byte fragments at every other offset: nothing ever
//! becomes readable, and a receiver that keeps each fragment as its own
//! entry holds far more than the bytes it was sent.

use std::time::Duration;

use quark_proto::connection::Misbehave;
use quark_proto::frame::{Frame, Stream};
use quark_proto::{Dir, TransportConfig};

use crate::peer::Peers;
use crate::{Report, Scale, Target};

/// Bytes of frames per packet.
const PACKET_FRAMES: usize = 1_100;

pub(super) fn stream_fragments(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    // Quick: part of one stream's window on one connection; full: every
    // connection's whole window, spread over streams, on three connections.
    let (connections, quick_span) = scale.pick((1, Some(1 << 20)), (3, None));
    let mut peers = Peers::new(target, TransportConfig::default())?;
    let hs = peers.connect_many(connections, Duration::from_secs(5))?;
    peers.misbehave(Misbehave {
        ignore_congestion: true,
        ..Misbehave::default()
    });
    let mut report = Report::default();
    let mut frames = Vec::with_capacity(PACKET_FRAMES + 64);
    for &h in &hs {
        let params = peers
            .conn(h)
            .peer_params()
            .cloned()
            .ok_or_else(|| anyhow::anyhow!("no transport parameters from the server"))?;
        let stream_window = params.initial_max_stream_data_bidi_remote;
        let mut left = quick_span.unwrap_or(params.initial_max_data);
        let mut packets = 0u64;
        while left > 1 {
            let Some(id) = peers.conn(h).open_stream(Dir::Bi) else {
                report
                    .notes
                    .push("the server's stream limit was reached".into());
                break;
            };
            let span = stream_window.min(left);
            left -= span;
            // Offset 0 never comes, so nothing is ever readable.
            let mut offset = 1;
            while offset < span {
                while frames.len() < PACKET_FRAMES && offset < span {
                    Frame::Stream(Stream {
                        id,
                        offset,
                        fin: false,
                        data: &[0x5a],
                    })
                    .encode(&mut frames);
                    offset += 2;
                }
                peers.conn(h).inject_raw_frames(&frames);
                frames.clear();
                peers.flush()?;
                packets += 1;
                // Take the server's ACKs in now and then, as a client would.
                if packets % 64 == 0 {
                    peers.pump(Duration::ZERO)?;
                    if peers.conn(h).is_closed() {
                        break;
                    }
                }
            }
        }
    }
    // Hold the connections while the server's memory is watched.
    peers.pump(Duration::from_millis(500))?;
    report.count_closes(peers.closes());
    report.sent = peers.sent;
    Ok(report)
}
