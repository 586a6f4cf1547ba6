//! Version Negotiation for versions whose connection IDs are longer than
//! version 1 allows: RFC 8999 §5.1 lets a long header carry IDs of up to 255
//! bytes, and the server echoes them (RFC 9000 §17.2.1).

mod common;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Instant;

use common::Tls;
use quark_proto::packet::{VERSION_1, VERSION_2};
use quark_proto::{DatagramEvent, Endpoint, EndpointConfig, ServerConfig};

const UNKNOWN: u32 = 0x1a2a_3a4a;

fn server() -> Endpoint {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    Endpoint::new(Arc::new(EndpointConfig::default()), Some(Arc::new(server)))
}

/// A long-header datagram of `version` with these IDs, padded to `len`.
fn datagram(version: u32, dcid: &[u8], scid: &[u8], len: usize) -> Vec<u8> {
    let mut d = vec![0xc0];
    d.extend_from_slice(&version.to_be_bytes());
    d.push(dcid.len() as u8);
    d.extend_from_slice(dcid);
    d.push(scid.len() as u8);
    d.extend_from_slice(scid);
    d.resize(len, 0x55);
    d
}

/// Hand `data` to `ep`; return the datagram it answers with, if any.
fn answer(ep: &mut Endpoint, mut data: Vec<u8>) -> Option<Vec<u8>> {
    #[allow(clippy::disallowed_methods)]
    let now = Instant::now();
    let from: SocketAddr = "10.0.0.1:5000".parse().unwrap();
    let event = ep.handle_datagram(now, from, None, None, &mut data);
    let mut buf = Vec::new();
    let t = ep.poll_transmit(&mut buf);
    assert_eq!(event.is_some(), t.is_some());
    if let Some(t) = t {
        assert_eq!(event, Some(DatagramEvent::Response));
        assert_eq!(t.destination, from);
        return Some(buf);
    }
    None
}

/// The IDs and versions of a Version Negotiation packet.
fn parse_vn(p: &[u8]) -> (Vec<u8>, Vec<u8>, Vec<u32>) {
    assert_eq!(p[0] & 0x80, 0x80, "long header");
    assert_eq!(&p[1..5], &[0; 4], "version 0");
    let dlen = usize::from(p[5]);
    let dcid = p[6..6 + dlen].to_vec();
    let slen = usize::from(p[6 + dlen]);
    let scid = p[7 + dlen..7 + dlen + slen].to_vec();
    let versions = p[7 + dlen + slen..]
        .chunks_exact(4)
        .map(|v| u32::from_be_bytes(v.try_into().unwrap()))
        .collect();
    (dcid, scid, versions)
}

#[test]
fn long_ids_of_an_unknown_version_are_echoed() {
    let mut ep = server();
    let (dcid, scid) = (vec![0xd1; 255], vec![0x5c; 100]);
    let vn = answer(&mut ep, datagram(UNKNOWN, &dcid, &scid, 1200)).expect("no answer");
    let (got_dcid, got_scid, versions) = parse_vn(&vn);
    // The client's source ID comes back as the destination, and vice versa.
    assert_eq!(got_dcid, scid);
    assert_eq!(got_scid, dcid);
    assert!(versions.contains(&VERSION_1), "{versions:x?}");
    // RFC 9369 §5: a server that speaks v2 lists it too.
    assert!(versions.contains(&VERSION_2), "{versions:x?}");
    assert!(ep.is_empty(), "no state for an unknown version");
}

#[test]
fn ids_just_over_twenty_bytes_and_empty_ones() {
    let mut ep = server();
    for (dcid, scid) in [
        (vec![1; 21], vec![2; 21]),
        (vec![], vec![3; 200]),
        (vec![4; 8], vec![]),
    ] {
        let vn = answer(&mut ep, datagram(UNKNOWN, &dcid, &scid, 1200)).expect("no answer");
        let (got_dcid, got_scid, _) = parse_vn(&vn);
        assert_eq!((got_dcid, got_scid), (scid, dcid));
    }
}

#[test]
fn what_gets_no_version_negotiation() {
    let mut ep = server();
    // Below the smallest allowed maximum datagram size.
    assert_eq!(
        answer(&mut ep, datagram(UNKNOWN, &[1; 255], &[2; 100], 1199)),
        None
    );
    // Version 1 with a 21-byte ID: dropped, not negotiated.
    assert_eq!(
        answer(&mut ep, datagram(VERSION_1, &[1; 21], &[2; 8], 1200)),
        None
    );
}
