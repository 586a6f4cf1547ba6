//! qlog: a simulated transfer with qlog on; every record must parse as JSON
//! and agree with the connection's own counters and with the bytes moved.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::app::{Echo, run_echo};
use common::{Sim, Tls, payload, seed};
use quark_proto::{ConnectionHandle, EndpointConfig, ServerConfig};
use serde_json::Value;

fn qlog_sim(seed: u64) -> (Sim, Tls) {
    let tls = Tls::new();
    let server = ServerConfig::new(tls.server_config(None));
    let config = EndpointConfig {
        qlog_dir: Some("unused-by-the-core".into()),
        ..EndpointConfig::default()
    };
    (Sim::new(seed, server, config), tls)
}

/// Drain a connection's qlog and parse every JSON-SEQ record.
fn records(sim: &mut Sim, client: bool, h: ConnectionHandle) -> Vec<Value> {
    let now = sim.now;
    let ep = if client {
        &mut sim.client
    } else {
        &mut sim.server
    };
    let conn = ep.connection_mut(h).unwrap();
    let mut out = Vec::new();
    assert!(conn.take_qlog(now, 1.7e12, &mut out), "qlog is on");
    let text = String::from_utf8(out).expect("qlog is UTF-8");
    assert!(text.starts_with('\u{1e}'), "JSON-SEQ starts with RS");
    text.split('\u{1e}')
        .skip(1)
        .map(|r| {
            assert!(r.ends_with('\n'), "record ends with LF: {r}");
            serde_json::from_str(r).unwrap_or_else(|e| panic!("{e}: {r}"))
        })
        .collect()
}

fn named<'a>(records: &'a [Value], name: &str) -> Vec<&'a Value> {
    records.iter().filter(|r| r["name"] == name).collect()
}

/// Stream frames of the named packet events: stream id → (offset, length) list.
fn stream_frames(records: &[Value], name: &str) -> BTreeMap<u64, Vec<(u64, u64)>> {
    let mut out: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for r in named(records, name) {
        for f in r["data"]["frames"].as_array().unwrap() {
            if f["frame_type"] == "stream" {
                let id = f["stream_id"].as_u64().unwrap();
                let at = (f["offset"].as_u64().unwrap(), f["length"].as_u64().unwrap());
                out.entry(id).or_default().push(at);
            }
        }
    }
    out
}

fn check_header(first: &Value, side: &str) {
    assert_eq!(first["qlog_version"], "0.3");
    assert_eq!(first["qlog_format"], "JSON-SEQ");
    assert_eq!(first["trace"]["vantage_point"]["type"], side);
    assert!(
        first["trace"]["common_fields"]["reference_time"]
            .as_f64()
            .unwrap()
            > 1e12
    );
    assert!(
        first.get("name").is_none(),
        "the first record is the header"
    );
}

#[test]
fn qlog_of_a_transfer_matches_the_connection() {
    let (mut sim, tls) = qlog_sim(seed(71));
    sim.set_delay(Duration::from_millis(5));
    let c = sim.connect(&tls);
    let request = payload(300_000, 3);
    let mut echo = Echo::new(c, vec![request.clone()]);
    run_echo(&mut sim, &mut echo, 200_000);
    assert!(echo.done());
    let s = sim.server_handles[0];
    let now = sim.now;
    sim.client.connection_mut(c).unwrap().close(now, 0, b"done");
    sim.run_until(100_000, |sim| {
        sim.client.connection(c).unwrap().is_drained()
            && sim.server.connection(s).unwrap().is_drained()
    });

    for (client, h) in [(true, c), (false, s)] {
        let side = if client { "client" } else { "server" };
        let conn = if client {
            sim.client.connection(h).unwrap()
        } else {
            sim.server.connection(h).unwrap()
        };
        let stats = conn.stats();
        let name = conn.qlog_file_name().unwrap();
        assert_eq!(
            name,
            format!("{}_{side}.sqlog", conn.original_dst_cid()),
            "file name"
        );
        let recs = records(&mut sim, client, h);
        check_header(&recs[0], side);
        assert_eq!(
            named(&recs, "transport:packet_sent").len() as u64,
            stats.packets_out,
            "{side}: one packet_sent per packet"
        );
        assert_eq!(
            named(&recs, "transport:packet_received").len() as u64,
            stats.packets_in,
            "{side}: one packet_received per packet processed"
        );
        // Without loss every stream byte is sent once: the frames sum to the
        // bytes transferred, and tile each stream from 0.
        let sent = stream_frames(&recs, "transport:packet_sent");
        assert_eq!(sent.len(), 1, "{side}: one stream");
        let mut ranges = sent.into_values().next().unwrap();
        let total: u64 = ranges.iter().map(|r| r.1).sum();
        assert_eq!(total, request.len() as u64, "{side}: stream bytes");
        ranges.sort();
        let mut next = 0;
        for (offset, len) in ranges {
            assert_eq!(offset, next, "{side}: stream frames tile the stream");
            next += len;
        }
        let params = named(&recs, "transport:parameters_set");
        let owners: Vec<_> = params.iter().map(|p| &p["data"]["owner"]).collect();
        assert_eq!(owners, ["local", "remote"], "{side}: parameters");
        // Both ends announce grease_quic_bit (RFC 9287) by default.
        assert!(params.iter().all(|p| p["data"]["grease_quic_bit"] == true));
        let states: Vec<_> = named(&recs, "connectivity:connection_state_updated")
            .iter()
            .map(|r| r["data"]["new"].as_str().unwrap().to_string())
            .collect();
        assert!(
            states.contains(&"handshake_complete".into())
                && states.contains(&"handshake_confirmed".into())
                && states.last().unwrap() == "closed",
            "{side}: states {states:?}"
        );
        let closed = named(&recs, "connectivity:connection_closed");
        assert_eq!(closed.len(), 1, "{side}: one close");
        assert_eq!(
            closed[0]["data"]["owner"],
            if client { "local" } else { "remote" }
        );
        let metrics = named(&recs, "recovery:metrics_updated");
        assert!(!metrics.is_empty(), "{side}: metrics");
        assert!(
            metrics
                .iter()
                .all(|m| m["data"]["congestion_window"].as_u64() > Some(0))
        );
        assert!(
            metrics.last().unwrap()["data"]["smoothed_rtt"]
                .as_f64()
                .unwrap()
                >= 10.0,
            "{side}: the RTT is two 5 ms delays"
        );
        // ACK frames carry their ranges; times never go backwards.
        assert!(
            recs.iter().any(|r| r["data"]["frames"]
                .as_array()
                .is_some_and(|f| f.iter().any(|f| f["frame_type"] == "ack"
                    && f["acked_ranges"].as_array().is_some_and(|a| !a.is_empty()))))
        );
        let times: Vec<f64> = recs[1..]
            .iter()
            .map(|r| r["time"].as_f64().unwrap())
            .collect();
        assert!(times.windows(2).all(|w| w[0] <= w[1]), "{side}: time order");
    }
}

#[test]
fn qlog_records_losses_and_retransmissions() {
    let (mut sim, tls) = qlog_sim(seed(72));
    sim.set_delay(Duration::from_millis(10));
    sim.set_loss(0.05);
    let c = sim.connect(&tls);
    let request = payload(200_000, 4);
    let mut echo = Echo::new(c, vec![request.clone()]);
    run_echo(&mut sim, &mut echo, 400_000);
    assert!(echo.done());
    let stats = sim.client.connection(c).unwrap().stats();
    let recs = records(&mut sim, true, c);
    assert!(stats.packets_lost > 0, "the network lost packets");
    assert_eq!(
        named(&recs, "recovery:packet_lost").len() as u64,
        stats.packets_lost,
        "one packet_lost per loss"
    );
    assert_eq!(
        named(&recs, "transport:packet_sent").len() as u64,
        stats.packets_out
    );
    // Retransmissions send some bytes twice: the frames cover the stream
    // exactly once and sum to at least its length.
    let sent = stream_frames(&recs, "transport:packet_sent");
    let ranges = sent.into_values().next().unwrap();
    let total: u64 = ranges.iter().map(|r| r.1).sum();
    assert!(total >= request.len() as u64);
    let mut covered = vec![false; request.len()];
    for (offset, len) in ranges {
        covered[offset as usize..(offset + len) as usize].fill(true);
    }
    assert!(covered.iter().all(|&b| b), "every byte was sent");
}

#[test]
fn qlog_off_records_nothing() {
    let (mut sim, tls) = Sim::pair(seed(73));
    let c = sim.connect(&tls);
    sim.handshake(c);
    let now = sim.now;
    let conn = sim.client.connection_mut(c).unwrap();
    assert!(!conn.qlog_enabled());
    assert_eq!(conn.qlog_file_name(), None);
    let mut out = Vec::new();
    assert!(!conn.take_qlog(now, 0.0, &mut out));
    assert!(out.is_empty());
}

/// Key updates, one started by each side: each side's qlog says which it
/// started and which its peer did, for both directions' secrets, and as
/// many as its stats count.
#[test]
fn qlog_records_key_updates_and_who_started_them() {
    let (mut sim, tls) = qlog_sim(seed(74));
    sim.set_delay(Duration::from_millis(5));
    let c = sim.connect(&tls);
    let mut echo = Echo::new(c, vec![payload(20_000, 1)]);
    run_echo(&mut sim, &mut echo, 200_000);
    let s = sim.server_handles[0];
    for (by_client, seed) in [(true, 2u8), (false, 3)] {
        // The previous update settles (its old keys dropped) first.
        sim.now += Duration::from_secs(5);
        let now = sim.now;
        sim.client.connection_mut(c).unwrap().handle_timeout(now);
        sim.server.connection_mut(s).unwrap().handle_timeout(now);
        let started = match by_client {
            true => sim
                .client
                .connection_mut(c)
                .unwrap()
                .initiate_key_update(now),
            false => sim
                .server
                .connection_mut(s)
                .unwrap()
                .initiate_key_update(now),
        };
        assert!(
            started,
            "update by the {}",
            if by_client { "client" } else { "server" }
        );
        let mut echo = Echo::new(c, vec![payload(20_000, seed)]);
        run_echo(&mut sim, &mut echo, 200_000);
        assert!(echo.done());
    }
    for (client, h) in [(true, c), (false, s)] {
        let updates = match client {
            true => sim.client.connection(h).unwrap().stats().key_updates,
            false => sim.server.connection(h).unwrap().stats().key_updates,
        };
        assert_eq!(updates, 2);
        let recs = records(&mut sim, client, h);
        let events = named(&recs, "security:key_updated");
        let seen: Vec<(String, String, u64)> = events
            .iter()
            .map(|r| {
                let d = &r["data"];
                let text = |k: &str| d[k].as_str().unwrap().to_string();
                (
                    text("trigger"),
                    text("key_type"),
                    d["generation"].as_u64().unwrap(),
                )
            })
            .collect();
        let (first, second) = match client {
            true => ("local_update", "remote_update"),
            false => ("remote_update", "local_update"),
        };
        let want: Vec<(String, String, u64)> = [(first, 1), (second, 2)]
            .into_iter()
            .flat_map(|(trigger, generation)| {
                ["client_1rtt_secret", "server_1rtt_secret"]
                    .map(|k| (trigger.to_string(), k.to_string(), generation))
            })
            .collect();
        assert_eq!(seen, want, "client: {client}");
    }
}

/// A connection that times out logs its close at the moment the idle
/// timeout fired, not at its last packet: the server's close of a silent
/// peer in the runner's handshakeloss qlogs read as if it came 30 s early.
#[test]
fn qlog_stamps_an_idle_close_with_its_own_time() {
    let (mut sim, tls) = qlog_sim(seed(75));
    sim.set_delay(Duration::from_millis(5));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(500));
    // The client goes silent: everything it sends from now on is lost.
    sim.filter = Some(Box::new(|to_server, _| !to_server));
    let silent = sim.now;
    sim.run_until(100_000, |sim| sim.server.connection(s).unwrap().is_closed());
    let idle = sim.now - silent;
    let recs = records(&mut sim, false, s);
    let closed = named(&recs, "connectivity:connection_closed");
    assert_eq!(closed.len(), 1);
    assert_eq!(closed[0]["data"]["trigger"], "idle_timeout");
    let last_packet = named(&recs, "transport:packet_received").last().unwrap()["time"]
        .as_f64()
        .unwrap();
    let at = closed[0]["time"].as_f64().unwrap();
    assert!(
        at - last_packet >= 0.9 * idle.as_secs_f64() * 1e3,
        "closed at {at} ms, last packet at {last_packet} ms, idle for {idle:?}"
    );
}

/// `connectivity:mtu_updated` follows the datagram size: the base size
/// first, then each size the search validated, the last marked done, and
/// the last `new` is the size the connection uses.
#[test]
fn qlog_records_the_path_mtu_search() {
    let (mut sim, tls) = qlog_sim(seed(74));
    sim.path_mtu = 1472;
    sim.report_too_big = true;
    sim.set_delay(Duration::from_millis(5));
    let c = sim.connect(&tls);
    let mut echo = Echo::new(c, vec![payload(1_000_000, 5)]);
    run_echo(&mut sim, &mut echo, 400_000);
    assert!(echo.done());
    sim.run_for(Duration::from_secs(1));
    let size = sim.client.connection(c).unwrap().max_datagram_size();
    assert_eq!(size, 1472, "the reported size");
    let recs = records(&mut sim, true, c);
    let updates = named(&recs, "connectivity:mtu_updated");
    let sizes: Vec<u64> = updates
        .iter()
        .map(|r| r["data"]["new"].as_u64().unwrap())
        .collect();
    assert_eq!(sizes, [1200, 1472], "{updates:?}");
    assert_eq!(updates[0]["data"].get("old"), None);
    assert_eq!(updates[1]["data"]["old"], 1200);
    assert_eq!(updates[1]["data"]["done"], true);
}
