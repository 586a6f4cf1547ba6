//! A server's look at the client's version_information before it answers
//! (RFC 9368 §2.3): the server picks the connection's version from the
//! versions the client offered, so it has to read them from the ClientHello
//! before it makes the TLS session (whose key labels depend on the version).
//! Only the first Initial is read; if the transport parameters are not all in
//! it, the connection stays in the client's version, which is always allowed.

use crate::coding::Reader;
use crate::crypto::initial_keys_for;
use crate::frame::{Frame, Iter};
use crate::packet::{
    PartialDecode, VERSION_1, VERSION_2, decrypt_payload, remove_header_protection,
};
use crate::transport_params::{TransportParameters, VersionInformation};
use crate::types::{PacketKind, Side};

/// TLS HandshakeType client_hello and the quic_transport_parameters
/// extension (RFC 8446 §4, RFC 9001 §8.2).
const CLIENT_HELLO: u8 = 1;
const QUIC_TRANSPORT_PARAMETERS: u16 = 0x39;

/// Whether a connection started in `from` may continue in `to`: v1 and v2
/// share the first flight's format (RFC 9369 §4).
pub(super) fn compatible(from: u32, to: u32) -> bool {
    let known = |v| v == VERSION_1 || v == VERSION_2;
    known(from) && known(to)
}

/// The version_information of the ClientHello in the datagram's first
/// packet, if it can be read from it alone.
pub(super) fn client_versions(datagram: &[u8], pd: &PartialDecode) -> Option<VersionInformation> {
    let mut packet = datagram.get(..pd.len)?.to_vec();
    let keys = initial_keys_for(pd.version, &pd.dst_cid, Side::Server);
    let header =
        remove_header_protection(&mut packet, pd, keys.remote.header.as_ref(), None).ok()?;
    let range = decrypt_payload(&mut packet, &header, keys.remote.packet.as_ref()).ok()?;
    // The CRYPTO data from offset 0 on, as far as it is contiguous.
    let mut pieces: Vec<(u64, &[u8])> = Iter::new(&packet[range], PacketKind::Initial)
        .filter_map(|f| match f {
            Ok(Frame::Crypto(c)) => Some((c.offset, c.data)),
            _ => None,
        })
        .collect();
    pieces.sort_unstable_by_key(|p| p.0);
    let mut hello = Vec::new();
    for (offset, data) in pieces {
        let end = offset.checked_add(data.len() as u64)?;
        if offset > hello.len() as u64 {
            break;
        }
        if end > hello.len() as u64 {
            let skip = (hello.len() as u64 - offset) as usize;
            hello.extend_from_slice(&data[skip..]);
        }
    }
    let params = transport_parameters(&hello)?;
    TransportParameters::decode(Side::Client, params)
        .ok()?
        .version_information
}

//= https://www.rfc-editor.org/rfc/rfc8446#section-4.1.2
//# struct {
//#     ProtocolVersion legacy_version = 0x0303;    /* TLS v1.2 */
//#     Random random;
//#     opaque legacy_session_id<0..32>;
//#     CipherSuite cipher_suites<2..2^16-2>;
//#     opaque legacy_compression_methods<1..2^8-1>;
//#     Extension extensions<8..2^16-1>;
//# } ClientHello;
/// The quic_transport_parameters extension's body in a (possibly cut)
/// ClientHello handshake message.
fn transport_parameters(hello: &[u8]) -> Option<&[u8]> {
    let mut r = Reader::new(hello);
    if r.u8().ok()? != CLIENT_HELLO {
        return None;
    }
    r.bytes(3).ok()?; // message length: the walk below stays in bounds anyway
    r.bytes(2 + 32).ok()?;
    let session_id = usize::from(r.u8().ok()?);
    r.bytes(session_id).ok()?;
    let suites = usize::from(r.u16().ok()?);
    r.bytes(suites).ok()?;
    let compression = usize::from(r.u8().ok()?);
    r.bytes(compression).ok()?;
    let total = usize::from(r.u16().ok()?);
    let mut ext = Reader::new(r.bytes(total).ok().or_else(|| Some(r.rest()))?);
    while !ext.is_empty() {
        let ty = ext.u16().ok()?;
        let len = usize::from(ext.u16().ok()?);
        let body = ext.bytes(len).ok()?;
        if ty == QUIC_TRANSPORT_PARAMETERS {
            return Some(body);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_extension_and_stops_on_cut_hellos() {
        let mut hello = vec![CLIENT_HELLO, 0, 0, 0, 3, 3];
        hello.extend_from_slice(&[0x11; 32]);
        hello.extend_from_slice(&[0, 0, 2, 0x13, 0x01, 1, 0]);
        let exts = [
            0x00, 0x2b, 0x00, 0x02, 0x03, 0x04, 0x00, 0x39, 0x00, 0x03, 0x0f, 0x01, 0xaa,
        ];
        hello.extend_from_slice(&(exts.len() as u16).to_be_bytes());
        hello.extend_from_slice(&exts);
        assert_eq!(transport_parameters(&hello), Some(&[0x0f, 0x01, 0xaa][..]));
        for cut in 0..hello.len() {
            assert_eq!(transport_parameters(&hello[..cut]), None, "cut at {cut}");
        }
        assert!(compatible(VERSION_1, VERSION_2) && !compatible(VERSION_1, 0x1a2a_3a4a));
    }
}
