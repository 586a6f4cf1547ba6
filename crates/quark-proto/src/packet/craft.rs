//! Initial packets with frames of the caller's choosing, and reading a
//! server's Initial back: what probes of a server's defences (attack clients,
//! tests) need before any handshake exists. A connection never uses these.

use std::ops::Range;

use super::{
    HeaderParams, HeaderType, MIN_INITIAL_SIZE, PacketBuilder, PartialDecode, decrypt_payload,
    remove_header_protection,
};
use crate::cid::ConnectionId;
use crate::crypto::initial_keys_for;
use crate::types::{PacketKind, Side};

/// A client's Initial datagram to `dst_cid`, carrying `frames` (encoded) and
/// padded to 1200 bytes, protected with the Initial keys `dst_cid` gives.
pub fn client_initial(
    version: u32,
    dst_cid: &ConnectionId,
    src_cid: &ConnectionId,
    token: &[u8],
    pn: u64,
    frames: &[u8],
) -> Vec<u8> {
    let keys = initial_keys_for(version, dst_cid, Side::Client);
    let header = HeaderParams {
        kind: PacketKind::Initial,
        version,
        dst_cid,
        src_cid,
        token,
        pn,
        largest_acked: None,
        key_phase: false,
        spin: false,
    };
    let tag_len = keys.local.packet.tag_len();
    let size = MIN_INITIAL_SIZE.max(frames.len() + 100);
    let mut out = Vec::with_capacity(size);
    let builder = PacketBuilder::start(&mut out, &header, size, tag_len);
    out.extend_from_slice(frames);
    builder.finish(
        &mut out,
        MIN_INITIAL_SIZE,
        keys.local.packet.as_ref(),
        keys.local.header.as_ref(),
    );
    out
}

/// The frames of the first packet of a server's datagram, if it is an Initial
/// protected with the keys of the client's first `client_dst_cid`: the
/// decrypted packet and where its frames lie in it.
pub fn open_server_initial(
    datagram: &[u8],
    client_dst_cid: &ConnectionId,
    cid_len: usize,
) -> Option<(Vec<u8>, Range<usize>)> {
    let mut packet = datagram.to_vec();
    // The QUIC bit may be greased (RFC 9287): readers of any peer accept it.
    let pd = PartialDecode::with_quic_bit(&packet, cid_len, true).ok()?;
    if pd.ty != HeaderType::Frames(PacketKind::Initial) {
        return None;
    }
    let keys = initial_keys_for(pd.version, client_dst_cid, Side::Client);
    let header =
        remove_header_protection(&mut packet, &pd, keys.remote.header.as_ref(), None).ok()?;
    let frames =
        decrypt_payload(&mut packet[..pd.len], &header, keys.remote.packet.as_ref()).ok()?;
    Some((packet, frames))
}

/// The frames of the first packet of a client's datagram, if it is an Initial
/// protected with the keys its own destination connection ID gives (every
/// client Initial before the server's first answer): the decrypted packet and
/// where its frames lie in it.
pub fn open_client_initial(datagram: &[u8], cid_len: usize) -> Option<(Vec<u8>, Range<usize>)> {
    let mut packet = datagram.to_vec();
    // The QUIC bit may be greased (RFC 9287): readers of any peer accept it.
    let pd = PartialDecode::with_quic_bit(&packet, cid_len, true).ok()?;
    if pd.ty != HeaderType::Frames(PacketKind::Initial) {
        return None;
    }
    let keys = initial_keys_for(pd.version, &pd.dst_cid, Side::Server);
    let header =
        remove_header_protection(&mut packet, &pd, keys.remote.header.as_ref(), None).ok()?;
    let frames =
        decrypt_payload(&mut packet[..pd.len], &header, keys.remote.packet.as_ref()).ok()?;
    Some((packet, frames))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::initial_keys;
    use crate::frame::{Frame, Iter};
    use crate::packet::VERSION_1;

    #[test]
    fn a_crafted_initial_reads_back() {
        let dcid = ConnectionId::new(&[7; 8]).unwrap();
        let scid = ConnectionId::new(&[9; 5]).unwrap();
        let mut frames = Vec::new();
        Frame::Ping.encode(&mut frames);
        let datagram = client_initial(VERSION_1, &dcid, &scid, b"tok", 3, &frames);
        assert_eq!(datagram.len(), MIN_INITIAL_SIZE);
        let pd = PartialDecode::new(&datagram, 8).unwrap();
        assert_eq!((pd.dst_cid, pd.src_cid), (dcid, scid));
        assert_eq!(&datagram[pd.token.clone()], b"tok");
        // The server's keys open it.
        let mut packet = datagram.clone();
        let keys = initial_keys(&dcid, Side::Server);
        let header =
            remove_header_protection(&mut packet, &pd, keys.remote.header.as_ref(), None).unwrap();
        assert_eq!(header.pn, 3);
        let range =
            decrypt_payload(&mut packet[..pd.len], &header, keys.remote.packet.as_ref()).unwrap();
        let mut iter = Iter::new(&packet[range], PacketKind::Initial);
        assert_eq!(iter.next().unwrap().unwrap(), Frame::Ping);
        assert!(iter.all(|f| matches!(f, Ok(Frame::Padding { .. }))));
    }
}
