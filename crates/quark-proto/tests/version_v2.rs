//! QUIC v2 (RFC 9369) end to end in the simulated network, and the
//! downgrade protection of version_information (RFC 9368 §4).

mod common;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::app::{Echo, run_echo};
use common::{Sim, Tls, payload, seed};
use quark_proto::crypto::initial_keys_for;
use quark_proto::frame::{Frame, Iter};
use quark_proto::packet::craft::{client_initial, open_server_initial};
use quark_proto::packet::{
    HeaderType, PartialDecode, VERSION_1, VERSION_2, decrypt_payload, remove_header_protection,
    write_version_negotiation,
};
use quark_proto::{
    ClientConfig, ConnectionError, ConnectionHandle, Endpoint, EndpointConfig, PacketKind,
    ServerConfig, Side, TransportErrorCode,
};

/// The versions of every long-header packet seen, each way.
#[derive(Default)]
struct Seen {
    to_server: Vec<u32>,
    to_client: Vec<u32>,
    retries: Vec<u32>,
}

/// Record the version of the first packet of each long-header datagram.
fn watch(sim: &mut Sim) -> Rc<RefCell<Seen>> {
    let seen = Rc::new(RefCell::new(Seen::default()));
    let s = seen.clone();
    sim.filter = Some(Box::new(move |to_server, d| {
        // Long headers may have the QUIC bit greased (RFC 9287).
        if let Ok(pd) = PartialDecode::with_quic_bit(d, 8, true) {
            if pd.is_long() {
                let mut s = s.borrow_mut();
                if pd.ty == HeaderType::Retry {
                    s.retries.push(pd.version);
                }
                if to_server {
                    s.to_server.push(pd.version);
                } else {
                    s.to_client.push(pd.version);
                }
            }
        }
        true
    }));
    seen
}

fn v2_client(tls: &Tls) -> ClientConfig {
    let mut config = ClientConfig::new(tls.client_config(None));
    config.version = VERSION_2;
    config
}

#[test]
fn v2_connection_transfers_byte_exact() {
    let (mut sim, tls) = Sim::pair(seed(90));
    let seen = watch(&mut sim);
    let c = sim.connect_with(v2_client(&tls));
    // Echo checks every byte that comes back against what was sent.
    let mut echo = Echo::new(c, vec![payload(300_000, 1), payload(5_000, 2)]);
    run_echo(&mut sim, &mut echo, 200_000);
    assert!(echo.done());
    let seen = seen.borrow();
    assert!(!seen.to_server.is_empty() && !seen.to_client.is_empty());
    assert!(
        seen.to_server.iter().all(|&v| v == VERSION_2),
        "{:x?}",
        seen.to_server
    );
    assert!(
        seen.to_client.iter().all(|&v| v == VERSION_2),
        "{:x?}",
        seen.to_client
    );
    let client = sim.client.connection(c).unwrap();
    assert!(!client.is_closed());
    // The server declared the version it uses and both it supports.
    let info = client
        .peer_params()
        .unwrap()
        .version_information
        .clone()
        .unwrap();
    assert_eq!(info.chosen, VERSION_2);
    assert!(info.available.contains(&VERSION_1) && info.available.contains(&VERSION_2));
}

#[test]
fn v1_stays_v1_when_the_client_offers_nothing_else() {
    let (mut sim, tls) = Sim::pair(seed(91));
    let seen = watch(&mut sim);
    let mut config = ClientConfig::new(tls.client_config(None));
    config.compatible_versions.clear();
    let c = sim.connect_with(config);
    let mut echo = Echo::new(c, vec![payload(20_000, 3)]);
    run_echo(&mut sim, &mut echo, 100_000);
    assert!(echo.done());
    let seen = seen.borrow();
    assert!(
        seen.to_server
            .iter()
            .chain(&seen.to_client)
            .all(|&v| v == VERSION_1)
    );
}

#[test]
fn retry_in_v2() {
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None));
    server.retry = true;
    let mut sim = Sim::new(seed(92), server, EndpointConfig::default());
    let seen = watch(&mut sim);
    let c = sim.connect_with(v2_client(&tls));
    let mut echo = Echo::new(c, vec![payload(50_000, 4)]);
    run_echo(&mut sim, &mut echo, 100_000);
    assert!(echo.done());
    // One Retry, in v2 (its own type bits and integrity key), then a connection.
    assert_eq!(seen.borrow().retries, vec![VERSION_2]);
    assert_eq!(sim.server_handles.len(), 1);
}

/// Handshake, then a key update started by the client with `first` echoed
/// under the new keys, then one started by the server (after the 3 PTO wait
/// RFC 9001 §6.5 asks for) with `second` echoed: every byte checked.
fn two_key_updates(sim: &mut Sim, c: ConnectionHandle, first: Vec<Vec<u8>>, second: Vec<Vec<u8>>) {
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(100));
    let now = sim.now;
    assert!(
        sim.client
            .connection_mut(c)
            .unwrap()
            .initiate_key_update(now)
    );
    let mut echo = Echo::new(c, first);
    run_echo(sim, &mut echo, 200_000);
    assert!(echo.done());
    sim.now += Duration::from_secs(5);
    let now = sim.now;
    sim.server.connection_mut(s).unwrap().handle_timeout(now);
    sim.client.connection_mut(c).unwrap().handle_timeout(now);
    assert!(
        sim.server
            .connection_mut(s)
            .unwrap()
            .initiate_key_update(now)
    );
    let mut echo = Echo::new(c, second);
    run_echo(sim, &mut echo, 200_000);
    assert!(echo.done());
}

#[test]
fn key_update_in_v2() {
    let (mut sim, tls) = Sim::pair(seed(93));
    sim.set_delay(Duration::from_millis(2));
    let c = sim.connect_with(v2_client(&tls));
    two_key_updates(
        &mut sim,
        c,
        vec![payload(300_000, 5)],
        vec![payload(100_000, 6)],
    );
    // Both sides derived the next keys with "quicv2 ku": the transfers
    // decrypted after each update.
    assert!(sim.client.connection(c).unwrap().stats().key_updates >= 2);
    assert!(!sim.client.connection(c).unwrap().is_closed());
}

#[test]
fn a_server_told_v1_only_answers_v2_with_version_negotiation() {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let endpoint = EndpointConfig {
        supported_versions: vec![VERSION_1],
        ..EndpointConfig::default()
    };
    let mut sim = Sim::new(seed(94), server, endpoint);
    // The client endpoint (same settings in `Sim::new`) must allow v2.
    sim.client = Endpoint::new(
        Arc::new(EndpointConfig {
            rng_seed: Some(94),
            ..EndpointConfig::default()
        }),
        None,
    );
    let seen = watch(&mut sim);
    let c = sim.connect_with(v2_client(&tls));
    sim.run_until(10_000, |s| {
        s.client.connection(c).is_none_or(|c| c.is_closed())
    });
    // A Version Negotiation packet came back; no v1 fallback behind the
    // application's back: the attempt ends.
    assert!(
        seen.borrow().to_client.contains(&0),
        "no Version Negotiation"
    );
    assert!(sim.server_handles.is_empty());
    assert!(
        sim.client.connection(c).is_none_or(|c| c.is_closed()),
        "client still waiting"
    );
}

/// An on-path attacker rewrites the client's v2 Initials as v1 Initials (the
/// Initial keys are public); the server sees the client's version_information
/// still saying v2 and refuses with VERSION_NEGOTIATION_ERROR. (The server
/// itself prefers v2, so it answers, and closes, in v2: the client hears it.)
#[test]
fn rewritten_initial_version_closes_with_version_negotiation_error() {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let mut sim = Sim::new(seed(95), server, preferring_v2());
    let close_codes = Rc::new(RefCell::new(Vec::new()));
    let codes = close_codes.clone();
    let mut orig_dcid = None;
    sim.filter = Some(Box::new(move |to_server, d| {
        let Ok(pd) = PartialDecode::with_quic_bit(d, 8, true) else {
            return true;
        };
        if to_server && pd.version == VERSION_2 && pd.ty == HeaderType::Frames(PacketKind::Initial)
        {
            let dcid = *orig_dcid.get_or_insert(pd.dst_cid);
            let keys = initial_keys_for(VERSION_2, &dcid, Side::Server);
            let mut packet = d[..pd.len].to_vec();
            let Ok(h) =
                remove_header_protection(&mut packet, &pd, keys.remote.header.as_ref(), None)
            else {
                return false;
            };
            let Ok(frames) = decrypt_payload(&mut packet, &h, keys.remote.packet.as_ref()) else {
                return false;
            };
            let token = d[pd.token.clone()].to_vec();
            *d = client_initial(
                VERSION_1,
                &pd.dst_cid,
                &pd.src_cid,
                &token,
                h.pn,
                &packet[frames],
            );
        } else if !to_server && pd.ty == HeaderType::Frames(PacketKind::Initial) {
            if let Some(dcid) = orig_dcid {
                if let Some((packet, frames)) = open_server_initial(d, &dcid, 8) {
                    for frame in Iter::new(&packet[frames], PacketKind::Initial).flatten() {
                        if let Frame::Close(close) = frame {
                            codes.borrow_mut().push(close.error_code);
                        }
                    }
                }
            }
        }
        true
    }));
    let c = sim.connect_with(v2_client(&tls));
    sim.run_until(2_000, |_| !close_codes.borrow().is_empty());
    assert_eq!(
        close_codes.borrow().first(),
        Some(&TransportErrorCode::VERSION_NEGOTIATION_ERROR.0)
    );
    // The client never completes a handshake; it learns why.
    sim.run_until(2_000, |s| s.client.connection(c).unwrap().is_closed());
    let client = sim.client.connection(c).unwrap();
    assert!(!client.is_handshake_complete());
    assert!(
        matches!(
            client.error(),
            Some(ConnectionError::ConnectionClosed { code, .. })
                if *code == TransportErrorCode::VERSION_NEGOTIATION_ERROR
        ),
        "{:?}",
        client.error()
    );
}

/// A client that starts in v1 (the default) offering v2, against a server
/// that prefers v2 (the default): the server's first Initial is already v2,
/// the client follows, and the rest of the connection, key updates included
/// (keys the client derives itself: its TLS session began as v1), is v2.
/// Endpoints that put v2 first, so a server moves v1 clients offering v2 to v2
/// (the default puts v1 first and moves nobody).
fn preferring_v2() -> EndpointConfig {
    EndpointConfig {
        supported_versions: vec![VERSION_2, VERSION_1],
        ..EndpointConfig::default()
    }
}

fn upgrade(seed_value: u64, suites: Option<&[rustls::SupportedCipherSuite]>, retry: bool) {
    let tls = Tls::new();
    let mut server = ServerConfig::new(tls.server_config(None));
    server.retry = retry;
    let mut sim = Sim::new(seed(seed_value), server, preferring_v2());
    sim.set_delay(Duration::from_millis(2));
    let seen = watch(&mut sim);
    let c = sim.connect_with(ClientConfig::new(tls.client_config(suites)));
    two_key_updates(
        &mut sim,
        c,
        vec![payload(300_000, 7), payload(1_000, 8)],
        vec![payload(100_000, 9)],
    );
    let client = sim.client.connection(c).unwrap();
    assert!(!client.is_closed());
    assert!(client.stats().key_updates >= 2);
    let info = client
        .peer_params()
        .unwrap()
        .version_information
        .clone()
        .unwrap();
    assert_eq!(info.chosen, VERSION_2);

    let seen = seen.borrow();
    // The client's first Initial (and, with a Retry, its second) is v1.
    let v1_starts = if retry { 2 } else { 1 };
    assert!(
        seen.to_server[..v1_starts].iter().all(|&v| v == VERSION_1),
        "{:x?}",
        seen.to_server
    );
    if retry {
        assert_eq!(
            seen.retries,
            vec![VERSION_1],
            "the Retry answers in the client's version"
        );
    }
    // Everything the server sent in a connection was v2...
    let from_conn: Vec<u32> = seen
        .to_client
        .iter()
        .copied()
        .filter(|&v| v != 0)
        .skip(usize::from(retry))
        .collect();
    assert!(
        !from_conn.is_empty() && from_conn.iter().all(|&v| v == VERSION_2),
        "{:x?}",
        seen.to_client
    );
    // ... and the client switched once it heard from the server.
    assert!(
        seen.to_server.last() == Some(&VERSION_2),
        "{:x?}",
        seen.to_server
    );
    let first_v2 = seen.to_server.iter().position(|&v| v == VERSION_2).unwrap();
    assert!(
        seen.to_server[first_v2..].iter().all(|&v| v == VERSION_2),
        "{:x?}",
        seen.to_server
    );
}

#[test]
fn v1_to_v2_compatible_upgrade() {
    upgrade(96, None, false);
}

#[test]
fn v1_to_v2_upgrade_with_each_cipher_suite() {
    use rustls::crypto::ring::cipher_suite as cs;
    for (i, suite) in [
        cs::TLS13_AES_128_GCM_SHA256,
        cs::TLS13_AES_256_GCM_SHA384,
        cs::TLS13_CHACHA20_POLY1305_SHA256,
    ]
    .into_iter()
    .enumerate()
    {
        upgrade(97 + i as u64, Some(&[suite]), false);
    }
}

#[test]
fn v1_to_v2_upgrade_after_a_retry() {
    upgrade(100, None, true);
}

#[test]
fn a_server_preferring_v1_does_not_upgrade() {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let endpoint = EndpointConfig {
        supported_versions: vec![VERSION_1, VERSION_2],
        ..EndpointConfig::default()
    };
    let mut sim = Sim::new(seed(101), server, endpoint);
    let seen = watch(&mut sim);
    let c = sim.connect_with(ClientConfig::new(tls.client_config(None)));
    let mut echo = Echo::new(c, vec![payload(20_000, 10)]);
    run_echo(&mut sim, &mut echo, 100_000);
    assert!(echo.done());
    let seen = seen.borrow();
    assert!(
        seen.to_server
            .iter()
            .chain(&seen.to_client)
            .all(|&v| v == VERSION_1)
    );
}

/// A forged Version Negotiation packet listing only v1 (a downgrade attempt
/// against a v2 client) that arrives once the client has heard from the
/// server is ignored (RFC 9000 §6.2, RFC 9368 §4): the connection stays v2.
#[test]
fn late_forged_version_negotiation_is_ignored() {
    let (mut sim, tls) = Sim::pair(seed(102));
    let mut ids = None;
    let mut from_server = 0;
    sim.filter = Some(Box::new(move |to_server, d| {
        let Ok(pd) = PartialDecode::with_quic_bit(d, 8, true) else {
            return true;
        };
        if to_server {
            ids.get_or_insert((pd.src_cid, pd.dst_cid));
            return true;
        }
        from_server += 1;
        if from_server == 2 {
            let (client_cid, orig_dcid) = ids.unwrap();
            d.clear();
            write_version_negotiation(d, &orig_dcid, &client_cid, &[VERSION_1], 0x5a);
        }
        true
    }));
    let c = sim.connect_with(v2_client(&tls));
    let mut echo = Echo::new(c, vec![payload(30_000, 11)]);
    run_echo(&mut sim, &mut echo, 100_000);
    assert!(echo.done());
    let client = sim.client.connection(c).unwrap();
    assert!(!client.is_closed());
    assert_eq!(client.version(), VERSION_2);
}

/// A server Initial whose version an attacker changed to v2 (so it does not
/// open with v2 keys) does not move a client that offered v2: the client
/// only follows a packet that authenticates in the new version.
#[test]
fn an_unauthenticated_v2_initial_does_not_move_the_client() {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let endpoint = EndpointConfig {
        supported_versions: vec![VERSION_1, VERSION_2],
        ..EndpointConfig::default()
    };
    let mut sim = Sim::new(seed(103), server, endpoint);
    let mut first = true;
    sim.filter = Some(Box::new(move |to_server, d| {
        if !to_server && std::mem::take(&mut first) {
            d[1..5].copy_from_slice(&VERSION_2.to_be_bytes());
        }
        true
    }));
    let c = sim.connect_with(ClientConfig::new(tls.client_config(None)));
    let mut echo = Echo::new(c, vec![payload(20_000, 12)]);
    run_echo(&mut sim, &mut echo, 100_000);
    assert!(echo.done());
    let client = sim.client.connection(c).unwrap();
    assert_eq!(client.version(), VERSION_1);
    assert!(!client.is_closed());
}
