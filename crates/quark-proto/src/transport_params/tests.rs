use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::time::Duration;

use proptest::prelude::*;

use super::*;
use crate::error::TransportErrorCode;
use crate::types::Side;
use crate::varint::put_varint;

fn param(out: &mut Vec<u8>, id: u64, value: &[u8]) {
    put_varint(out, id);
    put_varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

fn int_param(out: &mut Vec<u8>, id: u64, value: u64) {
    let mut v = Vec::new();
    put_varint(&mut v, value);
    param(out, id, &v);
}

fn one_int(id: u64, value: u64) -> Vec<u8> {
    let mut out = Vec::new();
    int_param(&mut out, id, value);
    out
}

fn rejected(sender: Side, bytes: &[u8]) -> String {
    let e = TransportParameters::decode(sender, bytes).expect_err("accepted");
    assert_eq!(e.code, TransportErrorCode::TRANSPORT_PARAMETER_ERROR, "{e}");
    // The reason goes to the peer in CONNECTION_CLOSE: never left empty.
    assert!(!e.reason.is_empty(), "no reason for {bytes:02x?}");
    e.reason
}

fn accepted(sender: Side, bytes: &[u8]) -> TransportParameters {
    TransportParameters::decode(sender, bytes).unwrap_or_else(|e| panic!("{bytes:02x?}: {e}"))
}

fn round_trip(sender: Side, p: &TransportParameters) {
    let mut out = Vec::new();
    p.encode(&mut out);
    assert_eq!(&accepted(sender, &out), p);
}

fn preferred() -> PreferredAddress {
    PreferredAddress {
        ipv4: SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 443),
        ipv6: SocketAddrV6::new(Ipv6Addr::LOCALHOST, 4433, 0, 0),
        cid: ConnectionId::new(&[1, 2, 3, 4, 5, 6, 7, 8]).unwrap(),
        reset_token: ResetToken([0x5a; 16]),
    }
}

fn server_params() -> TransportParameters {
    TransportParameters {
        original_destination_connection_id: Some(ConnectionId::new(&[9; 8]).unwrap()),
        max_idle_timeout: Duration::from_secs(30),
        stateless_reset_token: Some(ResetToken([7; 16])),
        max_udp_payload_size: 1472,
        initial_max_data: 10_000_000,
        initial_max_stream_data_bidi_local: 1 << 20,
        initial_max_stream_data_bidi_remote: 1 << 21,
        initial_max_stream_data_uni: 1 << 19,
        initial_max_streams_bidi: 100,
        initial_max_streams_uni: 1 << 60,
        ack_delay_exponent: 20,
        max_ack_delay: Duration::from_millis(16383),
        disable_active_migration: true,
        preferred_address: Some(preferred()),
        active_connection_id_limit: 8,
        initial_source_connection_id: Some(ConnectionId::new(&[3; 20]).unwrap()),
        retry_source_connection_id: Some(ConnectionId::new(&[4; 5]).unwrap()),
        max_datagram_frame_size: Some(65535),
        min_ack_delay: Some(1000),
        version_information: Some(VersionInformation {
            chosen: 0x6b33_43cf,
            available: smallvec::smallvec![0x6b33_43cf, 1, 0x1a2a_3a4a],
        }),
        grease_quic_bit: true,
    }
}

#[test]
fn defaults_are_the_rfc_defaults() {
    let d = TransportParameters::default();
    assert_eq!(d.max_udp_payload_size, 65527);
    assert_eq!(d.ack_delay_exponent, 3);
    assert_eq!(d.max_ack_delay, Duration::from_millis(25));
    assert_eq!(d.active_connection_id_limit, 2);
    assert_eq!(d.max_idle_timeout, Duration::ZERO);
    assert_eq!(d.initial_max_data, 0);
    assert!(!d.disable_active_migration);
    assert!(d.preferred_address.is_none() && d.min_ack_delay.is_none());
    // An empty list decodes to the defaults.
    assert_eq!(accepted(Side::Client, &[]), d);
}

#[test]
fn defaults_are_omitted() {
    let mut out = Vec::new();
    TransportParameters::default().encode(&mut out);
    // Only the grease parameter: id 31 * N + 27, then up to 7 bytes.
    let mut r = crate::coding::Reader::new(&out);
    let id = r.varint().unwrap();
    let value = r.varint_bytes().unwrap();
    assert!(r.is_empty());
    assert_eq!(id % 31, 27);
    assert!(value.len() <= 7);
    assert_eq!(accepted(Side::Server, &out), TransportParameters::default());
}

#[test]
fn full_round_trips() {
    round_trip(Side::Server, &server_params());
    let client = TransportParameters {
        original_destination_connection_id: None,
        stateless_reset_token: None,
        preferred_address: None,
        retry_source_connection_id: None,
        initial_source_connection_id: Some(ConnectionId::EMPTY),
        ..server_params()
    };
    round_trip(Side::Client, &client);
}

#[test]
fn byte_exact_encoding() {
    let p = TransportParameters {
        initial_max_data: 1_000_000,
        initial_source_connection_id: Some(ConnectionId::new(&[0xab, 0xcd]).unwrap()),
        ..TransportParameters::default()
    };
    let mut out = Vec::new();
    p.encode(&mut out);
    // initial_max_data: id 0x04, length 4, 0x800f4240; initial_source_connection_id:
    // id 0x0f, length 2, the bytes; then the grease parameter.
    let expected = [0x04, 0x04, 0x80, 0x0f, 0x42, 0x40, 0x0f, 0x02, 0xab, 0xcd];
    assert_eq!(out[..expected.len()], expected);
    assert_eq!(accepted(Side::Client, &out), p);
}

#[test]
fn server_only_parameters_from_a_client() {
    let mut pa = Vec::new();
    server_params().encode(&mut pa);
    rejected(Side::Client, &pa);
    for (id, value) in [
        (0x00, vec![1, 2, 3, 4]),
        (0x02, vec![0; 16]),
        (0x10, vec![1]),
    ] {
        let mut out = Vec::new();
        param(&mut out, id, &value);
        rejected(Side::Client, &out);
        accepted(Side::Server, &out);
    }
}

#[test]
fn value_limits() {
    let cases: [(u64, u64, u64); 6] = [
        // (id, largest or smallest valid, first invalid)
        (0x03, 1200, 1199),
        (0x08, 1 << 60, (1 << 60) + 1),
        (0x09, 1 << 60, (1 << 60) + 1),
        (0x0a, 20, 21),
        (0x0b, (1 << 14) - 1, 1 << 14),
        (0x0e, 2, 1),
    ];
    for (id, ok, bad) in cases {
        accepted(Side::Client, &one_int(id, ok));
        rejected(Side::Client, &one_int(id, bad));
    }
    rejected(Side::Client, &one_int(0x0e, 0));
    rejected(Side::Client, &one_int(0x03, 0));
}

#[test]
fn lengths_are_checked() {
    for len in [0, 15, 17] {
        let mut out = Vec::new();
        param(&mut out, 0x02, &[0u8; 17][..len]);
        rejected(Side::Server, &out);
    }
    // Integers: empty, or a varint followed by more bytes.
    let mut out = Vec::new();
    param(&mut out, 0x04, &[]);
    rejected(Side::Client, &out);
    let mut out = Vec::new();
    param(&mut out, 0x04, &[0x01, 0x02]);
    rejected(Side::Client, &out);
    // A longer-than-necessary varint is fine for values.
    let mut out = Vec::new();
    param(&mut out, 0x01, &[0x40, 0x0a]);
    assert_eq!(
        accepted(Side::Client, &out).max_idle_timeout,
        Duration::from_millis(10)
    );
    // Connection IDs longer than 20 bytes.
    for id in [0x00, 0x0f, 0x10] {
        let mut out = Vec::new();
        param(&mut out, id, &[0; 21]);
        rejected(Side::Server, &out);
    }
    // disable_active_migration carries no value.
    let mut out = Vec::new();
    param(&mut out, 0x0c, &[0]);
    rejected(Side::Client, &out);
    let mut out = Vec::new();
    param(&mut out, 0x0c, &[]);
    assert!(accepted(Side::Client, &out).disable_active_migration);
    // So does grease_quic_bit (RFC 9287 §3).
    let mut out = Vec::new();
    param(&mut out, 0x2ab2, &[1]);
    rejected(Side::Server, &out);
    let mut out = Vec::new();
    param(&mut out, 0x2ab2, &[]);
    assert!(accepted(Side::Server, &out).grease_quic_bit);
    param(&mut out, 0x2ab2, &[]);
    rejected(Side::Server, &out);
}

#[test]
fn malformed_lists() {
    // Id with no length; length beyond the end; truncated id varint.
    rejected(Side::Client, &[0x04]);
    rejected(Side::Client, &[0x04, 0x05, 0x01]);
    rejected(Side::Client, &[0x40]);
    // Unknown parameter with a length beyond the end.
    rejected(Side::Client, &[0x1b, 0x02, 0x00]);
}

#[test]
fn duplicates_are_rejected() {
    let mut out = one_int(0x04, 1);
    int_param(&mut out, 0x04, 1);
    rejected(Side::Client, &out);
    let mut out = one_int(0xff04de1b, 1);
    int_param(&mut out, 0xff04de1b, 1);
    rejected(Side::Client, &out);
    // Unknown and reserved (GREASE, 31 * N + 27) ids too, however far apart.
    for id in [0x21, 31 * 5 + 27, 0x3fff_ffff_ffff_ffff] {
        let mut out = Vec::new();
        param(&mut out, id, &[1]);
        int_param(&mut out, 0x04, 1);
        param(&mut out, 0x22, &[]);
        param(&mut out, id, &[2, 3]);
        assert_eq!(
            rejected(Side::Server, &out),
            "duplicate transport parameter",
            "{id:#x}"
        );
    }
}

#[test]
fn unknown_parameters_are_capped() {
    let list = |n: u64| {
        let mut out = one_int(0x04, 9);
        // Descending ids: every one lands at the front of the sorted list.
        for i in (0..n).rev() {
            param(&mut out, 0x1000 + i, &[]);
        }
        out
    };
    assert_eq!(accepted(Side::Client, &list(128)).initial_max_data, 9);
    assert_eq!(
        rejected(Side::Client, &list(129)),
        "too many unknown transport parameters"
    );
    // A list as long as a TLS extension allows is refused, not sorted.
    rejected(Side::Client, &list(30_000));
}

#[test]
fn unknown_and_grease_parameters_are_skipped() {
    let mut out = Vec::new();
    param(&mut out, 27, &[1, 2, 3]);
    int_param(&mut out, 0x04, 77);
    param(&mut out, 31 * 1000 + 27, &[0xff; 40]);
    param(&mut out, 0x21, &[]);
    param(&mut out, 0x4000, &[9; 3]);
    param(&mut out, 31 * 5 + 27, &[]);
    param(&mut out, u64::MAX >> 2, &[0; 5]);
    let p = accepted(Side::Client, &out);
    assert_eq!(
        p,
        TransportParameters {
            initial_max_data: 77,
            ..TransportParameters::default()
        }
    );
}

#[test]
fn min_ack_delay_against_max_ack_delay() {
    // Compared in microseconds; max_ack_delay defaults to 25 ms.
    accepted(Side::Client, &one_int(0xff04de1b, 25_000));
    rejected(Side::Client, &one_int(0xff04de1b, 25_001));
    let mut out = one_int(0x0b, 10);
    int_param(&mut out, 0xff04de1b, 10_000);
    assert_eq!(accepted(Side::Client, &out).min_ack_delay, Some(10_000));
    // Order does not matter.
    let mut out = one_int(0xff04de1b, 10_001);
    int_param(&mut out, 0x0b, 10);
    rejected(Side::Client, &out);
    let mut out = one_int(0x0b, 0);
    int_param(&mut out, 0xff04de1b, 1);
    rejected(Side::Client, &out);
}

fn preferred_bytes(cid_len: u8, extra: &[u8]) -> Vec<u8> {
    let mut v = vec![192, 0, 2, 1, 0x01, 0xbb];
    v.extend_from_slice(&[0; 16]);
    v.extend_from_slice(&[0x11, 0x51]);
    v.push(cid_len);
    v.extend(std::iter::repeat_n(0xcc, usize::from(cid_len)));
    v.extend_from_slice(&[0x5a; 16]);
    v.extend_from_slice(extra);
    let mut out = Vec::new();
    param(&mut out, 0x0d, &v);
    out
}

#[test]
fn preferred_address_rules() {
    let p = accepted(Side::Server, &preferred_bytes(4, &[]));
    let pa = p.preferred_address.unwrap();
    assert_eq!(pa.ipv4, SocketAddrV4::new(Ipv4Addr::new(192, 0, 2, 1), 443));
    assert_eq!(
        pa.ipv6,
        SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 4433, 0, 0)
    );
    assert_eq!(&*pa.cid, &[0xcc; 4]);
    assert_eq!(pa.reset_token, ResetToken([0x5a; 16]));
    accepted(Side::Server, &preferred_bytes(20, &[]));
    rejected(Side::Server, &preferred_bytes(0, &[]));
    rejected(Side::Server, &preferred_bytes(21, &[]));
    rejected(Side::Server, &preferred_bytes(4, &[0]));
    rejected(Side::Client, &preferred_bytes(4, &[]));
    // Truncated.
    let full = preferred_bytes(4, &[]);
    let mut short = Vec::new();
    param(&mut short, 0x0d, &full[2..full.len() - 1]);
    rejected(Side::Server, &short);
    // A server using a zero-length connection ID cannot offer a preferred address.
    let mut out = preferred_bytes(4, &[]);
    param(&mut out, 0x0f, &[]);
    rejected(Side::Server, &out);
}

fn arb_cid(min: usize) -> impl Strategy<Value = ConnectionId> {
    proptest::collection::vec(any::<u8>(), min..=20).prop_map(|b| ConnectionId::new(&b).unwrap())
}

fn arb_params() -> impl Strategy<Value = (Side, TransportParameters)> {
    let varint = 0..=crate::VarInt::MAX.into_inner();
    (
        (
            any::<bool>(),
            proptest::option::of(arb_cid(0)),
            0..1u64 << 40,
            proptest::option::of(any::<[u8; 16]>()),
            1200..=crate::VarInt::MAX.into_inner(),
            proptest::array::uniform4(varint.clone()),
            proptest::array::uniform2(0..=1u64 << 60),
        ),
        (
            0..=20u8,
            0..1u64 << 14,
            any::<bool>(),
            proptest::option::of((
                any::<[u8; 4]>(),
                any::<u16>(),
                any::<[u8; 16]>(),
                any::<u16>(),
                arb_cid(1),
                any::<[u8; 16]>(),
            )),
            2..=crate::VarInt::MAX.into_inner(),
            proptest::option::of(arb_cid(0)),
            proptest::option::of(arb_cid(0)),
            proptest::option::of(varint),
            proptest::option::of(any::<u64>()),
        ),
    )
        .prop_map(|(a, b)| {
            let (server, odcid, idle, token, udp, data, streams) = a;
            let (exp, ack_ms, migration, pa, cid_limit, iscid, rscid, dgram, min_ack) = b;
            let side = if server { Side::Server } else { Side::Client };
            let mut p = TransportParameters {
                original_destination_connection_id: odcid,
                max_idle_timeout: Duration::from_millis(idle),
                stateless_reset_token: token.map(ResetToken),
                max_udp_payload_size: udp,
                initial_max_data: data[0],
                initial_max_stream_data_bidi_local: data[1],
                initial_max_stream_data_bidi_remote: data[2],
                initial_max_stream_data_uni: data[3],
                initial_max_streams_bidi: streams[0],
                initial_max_streams_uni: streams[1],
                ack_delay_exponent: exp,
                max_ack_delay: Duration::from_millis(ack_ms),
                disable_active_migration: migration,
                preferred_address: pa.map(|(ip4, p4, ip6, p6, cid, token)| PreferredAddress {
                    ipv4: SocketAddrV4::new(ip4.into(), p4),
                    ipv6: SocketAddrV6::new(ip6.into(), p6, 0, 0),
                    cid,
                    reset_token: ResetToken(token),
                }),
                active_connection_id_limit: cid_limit,
                initial_source_connection_id: iscid,
                retry_source_connection_id: rscid,
                max_datagram_frame_size: dgram,
                min_ack_delay: min_ack.map(|m| m % (ack_ms * 1000 + 1)),
                version_information: None,
                // Drawn from a bit of another field: the tuples are full.
                grease_quic_bit: idle % 2 == 1,
            };
            if p.initial_source_connection_id.is_some_and(|c| c.is_empty()) {
                p.preferred_address = None;
            }
            if side == Side::Client {
                p.original_destination_connection_id = None;
                p.stateless_reset_token = None;
                p.preferred_address = None;
                p.retry_source_connection_id = None;
            }
            (side, p)
        })
}

proptest! {
    #[test]
    fn valid_parameters_round_trip((side, p) in arb_params()) {
        let mut out = Vec::new();
        p.encode(&mut out);
        prop_assert_eq!(TransportParameters::decode(side, &out), Ok(p));
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..128)) {
        for side in [Side::Client, Side::Server] {
            if let Ok(p) = TransportParameters::decode(side, &bytes) {
                let mut out = Vec::new();
                p.encode(&mut out);
                prop_assert_eq!(TransportParameters::decode(side, &out), Ok(p));
            }
        }
    }
}

//= https://www.rfc-editor.org/rfc/rfc9368#section-3
//# Version Information {
//#   Chosen Version (32),
//#   Available Versions (32) ...,
//# }
#[test]
fn version_information_round_trip_and_bytes() {
    for available in [vec![], vec![1], vec![0x6b33_43cf, 1]] {
        let p = TransportParameters {
            version_information: Some(VersionInformation {
                chosen: 1,
                available: available.into_iter().collect(),
            }),
            ..TransportParameters::default()
        };
        round_trip(Side::Client, &p);
        round_trip(Side::Server, &p);
    }
    // id 0x11, length 12: chosen v2, available v2 and v1
    let p = accepted(Side::Server, &hex_bytes("11 0c 6b3343cf 6b3343cf 00000001"));
    let info = p.version_information.unwrap();
    assert_eq!(info.chosen, 0x6b33_43cf);
    assert_eq!(info.available.as_slice(), &[0x6b33_43cf, 1]);
}

#[test]
fn version_information_errors() {
    for bad in [
        "11 00",                         // empty: no chosen version
        "11 03 000001",                  // not a multiple of 4
        "11 06 00000001 0000",           // trailing half version
        "11 04 00000000",                // chosen version 0
        "11 08 00000001 00000000",       // available version 0
        "11 04 00000001 11 04 00000001", // twice
    ] {
        rejected(Side::Client, &hex_bytes(bad));
    }
    // A list longer than the cap is refused, not stored.
    let mut long = Vec::new();
    let mut value = 1u32.to_be_bytes().to_vec();
    for v in 0..=MAX_AVAILABLE_VERSIONS as u32 {
        value.extend_from_slice(&(v + 1).to_be_bytes());
    }
    param(&mut long, 0x11, &value);
    assert!(rejected(Side::Server, &long).contains("too many"));
    value.truncate(value.len() - 4);
    let mut at_cap = Vec::new();
    param(&mut at_cap, 0x11, &value);
    let p = accepted(Side::Server, &at_cap);
    assert_eq!(
        p.version_information.unwrap().available.len(),
        MAX_AVAILABLE_VERSIONS
    );
}

fn hex_bytes(s: &str) -> Vec<u8> {
    hex::decode(s.split_whitespace().collect::<String>()).unwrap()
}
