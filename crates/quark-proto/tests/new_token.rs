//! Address validation for future connections (RFC 9000 §8.1.3): a server
//! gives each connection a NEW_TOKEN token, and a client that comes back
//! with it (from the same address, within its lifetime, once) skips the
//! Retry; any other token leaves the client unvalidated, never refused.
//! And the QUIC bit greased in long headers (RFC 9287 §3.1): after the
//! peer's parameters, and in a client's first Initials when its token comes
//! from a server that greases.

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Duration;

use common::app::{Echo, run_echo};
use common::{Sim, Tls, about_half, initial_token, packet_types, payload, seed};
use quark_proto::{
    AddressToken, ClientConfig, ConnectionHandle, Endpoint, EndpointConfig, ServerConfig,
    TokenMemoryCache, TokenStore,
};

/// What the path saw of one connection's first packets.
#[derive(Default)]
struct Seen {
    /// Retry packets to the client.
    retries: usize,
    /// The token of each client Initial.
    tokens: Vec<Vec<u8>>,
    /// First bytes of long-header packets: (to_server, packet type, byte).
    long: Vec<(bool, &'static str, u8)>,
}

fn watch(sim: &mut Sim) -> Rc<RefCell<Seen>> {
    let seen: Rc<RefCell<Seen>> = Rc::default();
    let log = seen.clone();
    sim.watch = Some(Box::new(move |_, to_server, d| {
        let mut s = log.borrow_mut();
        let types = packet_types(d);
        if types.first() == Some(&"retry") {
            s.retries += 1;
        }
        if to_server && types.first() == Some(&"initial") {
            let token = initial_token(d).unwrap_or_default();
            s.tokens.push(token);
        }
        // The first packet of the datagram (coalesced ones are not parsed).
        if let Some(&kind) = types.first().filter(|k| **k != "1rtt") {
            s.long.push((to_server, kind, d[0]));
        }
    }));
    seen
}

fn server_config(tls: &Tls, retry: bool) -> ServerConfig {
    let mut server = ServerConfig::new(tls.server_config(None));
    server.retry = retry;
    server
}

/// One connection with `config`: the handshake, an echo of 20 KB checked
/// byte for byte, a second for the server's NEW_TOKEN to arrive, then both
/// ends closed and removed. What the path saw.
fn connection(sim: &mut Sim, config: &ClientConfig) -> (Seen, ConnectionHandle) {
    let seen = watch(sim);
    sim.server_handles.clear();
    let c = sim.connect_with(config.clone());
    let mut echo = Echo::new(c, vec![payload(20_000, 3)]);
    run_echo(sim, &mut echo, 50_000);
    assert!(echo.done(), "echo incomplete");
    sim.run_for(Duration::from_secs(1));
    sim.close_all_and_remove(&[c], 50_000);
    sim.watch = None;
    let seen = Rc::try_unwrap(seen).ok().unwrap().into_inner();
    (seen, c)
}

fn client(tls: &Tls) -> (ClientConfig, Arc<TokenMemoryCache>) {
    let store = Arc::new(TokenMemoryCache::new(8));
    let mut config = ClientConfig::new(tls.client_config(None));
    config.token_store = Some(store.clone());
    (config, store)
}

/// A pair whose server always asks for a Retry (unless a token validates the
/// client), `delay_ms` each way.
fn retry_pair(tls: &Tls, s: u64, delay_ms: u64) -> Sim {
    let mut sim = Sim::new(seed(s), server_config(tls, true), EndpointConfig::default());
    sim.set_delay(Duration::from_millis(delay_ms));
    sim
}

#[test]
fn a_returning_client_skips_the_retry_once() {
    let tls = Tls::new();
    let mut sim = retry_pair(&tls, 1, 20);
    let (config, _) = client(&tls);

    let (first, _) = connection(&mut sim, &config);
    assert_eq!(
        first.retries, 1,
        "a first connection is validated by a Retry"
    );
    assert!(first.tokens[0].is_empty());

    let (second, _) = connection(&mut sim, &config);
    assert_eq!(
        second.retries, 0,
        "the token from the first validated the second"
    );
    let token = second.tokens[0].clone();
    assert!(!token.is_empty());
    assert!(
        second.tokens.iter().all(|t| *t == token),
        "every Initial carries it"
    );

    // The same token again (a replay, or a client that reuses it): the server
    // honours it once only, and asks for a Retry instead.
    let replay = Arc::new(TokenMemoryCache::new(8));
    replay.insert("localhost", stored(token));
    let mut again = config.clone();
    again.token_store = Some(replay);
    let (third, _) = connection(&mut sim, &again);
    assert_eq!(third.retries, 1, "a used token is not honoured again");

    // The token the second connection received works for the next one.
    let (fourth, _) = connection(&mut sim, &config);
    assert_eq!(fourth.retries, 0);
}

fn stored(token: Vec<u8>) -> AddressToken {
    #[allow(clippy::disallowed_methods)]
    let received = std::time::Instant::now();
    AddressToken {
        token,
        received,
        grease_quic_bit: false,
    }
}

#[test]
fn tokens_hold_only_for_their_address_and_lifetime() {
    let tls = Tls::new();
    let mut server = server_config(&tls, true);
    server.new_token_lifetime = Duration::from_secs(60);
    let mut sim = Sim::new(seed(2), server, EndpointConfig::default());
    // Token times by the wall clock, as `quark`'s endpoints keep them: the
    // Retry's tokens too.
    sim.server
        .set_wall_clock(sim.now, Duration::from_secs(1_800_000_000));
    let (config, _) = client(&tls);
    connection(&mut sim, &config);
    // From another address: a Retry, and the connection goes on.
    sim.client_addr = "10.0.0.9:6000".parse().unwrap();
    let (moved, _) = connection(&mut sim, &config);
    assert_eq!(moved.retries, 1, "a token is bound to its address");
    assert!(!moved.tokens[0].is_empty(), "the token was offered");
    // Past its lifetime: the same.
    sim.now += Duration::from_secs(61);
    let (late, _) = connection(&mut sim, &config);
    assert_eq!(late.retries, 1, "an expired token is not honoured");
    assert!(!late.tokens[0].is_empty());
    // In time, from the address it was given to.
    let (back, _) = connection(&mut sim, &config);
    assert_eq!(back.retries, 0);
}

#[test]
fn a_token_not_ours_is_no_reason_to_refuse() {
    let tls = Tls::new();
    for retry in [false, true] {
        let mut sim = Sim::new(
            seed(3),
            server_config(&tls, retry),
            EndpointConfig::default(),
        );
        let store = Arc::new(TokenMemoryCache::new(8));
        // Another server's token, or one sealed under a key since retired.
        store.insert("localhost", stored(vec![0; 60]));
        let mut config = ClientConfig::new(tls.client_config(None));
        config.token_store = Some(store);
        let (seen, _) = connection(&mut sim, &config);
        assert_eq!(seen.retries, usize::from(retry), "retry {retry}");
    }
}

#[test]
fn a_lost_new_token_frame_goes_again() {
    let tls = Tls::new();
    let endpoint = EndpointConfig {
        qlog_dir: Some("unused-by-the-core".into()),
        ..EndpointConfig::default()
    };
    let mut sim = Sim::new(seed(4), server_config(&tls, true), endpoint);
    sim.set_delay(Duration::from_millis(10));
    let (config, store) = client(&tls);
    // Everything to the client is lost for 400 ms from the end of the
    // handshake: the NEW_TOKEN frame, sent a PTO (~100 ms) later, with it.
    let blackout = Rc::new(Cell::new(false));
    let lost = Rc::new(Cell::new(0u32));
    let (b, l) = (blackout.clone(), lost.clone());
    sim.filter = Some(Box::new(move |to_server, _| {
        if !to_server && b.get() {
            l.set(l.get() + 1);
            return false;
        }
        true
    }));
    let c = sim.connect_with(config.clone());
    let s = sim.handshake(c);
    blackout.set(true);
    sim.run_for(Duration::from_millis(400));
    blackout.set(false);
    sim.run_for(Duration::from_secs(3));
    assert!(lost.get() > 0);
    let now = sim.now;
    let mut out = Vec::new();
    let conn = sim.server.connection_mut(s).unwrap();
    assert!(conn.take_qlog(now, 1.7e12, &mut out));
    let qlog = String::from_utf8(out).unwrap();
    let sent = qlog
        .split('\u{1e}')
        .filter(|r| r.contains("\"transport:packet_sent\"") && r.contains("\"new_token\""))
        .count();
    assert!(sent >= 2, "NEW_TOKEN sent {sent} times");
    assert!(
        store.take("localhost").is_some(),
        "the token arrived after all"
    );
}

#[test]
fn no_token_without_a_lifetime_or_a_store() {
    let tls = Tls::new();
    let mut server = server_config(&tls, true);
    server.new_token_lifetime = Duration::ZERO;
    let mut sim = Sim::new(seed(5), server, EndpointConfig::default());
    let (config, store) = client(&tls);
    connection(&mut sim, &config);
    assert_eq!(store.take("localhost"), None, "the server sent none");

    let mut sim = Sim::new(
        seed(5),
        server_config(&tls, true),
        EndpointConfig::default(),
    );
    let mut config = ClientConfig::new(tls.client_config(None));
    config.token_store = None;
    connection(&mut sim, &config);
    let (again, _) = connection(&mut sim, &config);
    assert_eq!(again.retries, 1, "a client without a store keeps none");
}

/// Long-header packets with the QUIC bit cleared, and all of them, to the
/// server and to the client, over all the connections seen.
fn cleared(seen: &[Seen]) -> ((usize, usize), (usize, usize)) {
    let count = |to_server: bool| {
        let way = seen
            .iter()
            .flat_map(|s| &s.long)
            .filter(|(dir, ..)| *dir == to_server);
        (
            way.clone().filter(|(.., b)| b & 0x40 == 0).count(),
            way.count(),
        )
    };
    (count(true), count(false))
}

#[test]
fn long_headers_are_greased_once_parameters_are_in() {
    let tls = Tls::new();
    for grease in [true, false] {
        let endpoint = EndpointConfig {
            grease_quic_bit: grease,
            ..EndpointConfig::default()
        };
        let mut sim = Sim::new(seed(6), server_config(&tls, false), endpoint);
        sim.set_delay(Duration::from_millis(5));
        let mut config = ClientConfig::new(tls.client_config(None));
        config.token_store = None;
        // Enough connections that "about half" can be told whatever the seed.
        let seen: Vec<Seen> = (0..40).map(|_| connection(&mut sim, &config).0).collect();
        // A client without a token sets the bit in its first Initial.
        for s in &seen {
            let first = s.long.iter().find(|(to_server, ..)| *to_server).unwrap();
            assert_eq!(first.2 & 0x40, 0x40);
        }
        let (up, down) = cleared(&seen);
        if grease {
            assert!(up.0 > 0, "cleared: {up:?} up");
            assert!(about_half(down), "cleared: {down:?} down");
        } else {
            assert_eq!((up.0, down.0), (0, 0));
        }
    }
}

#[test]
fn a_token_from_a_greasing_server_greases_the_first_initials() {
    let tls = Tls::new();
    let server = server_config(&tls, false);
    let mut sim = Sim::new(seed(7), server.clone(), EndpointConfig::default());
    let (config, _) = client(&tls);
    connection(&mut sim, &config);
    let first_initials: Vec<u8> = (0..40)
        .map(|_| {
            let (s, _) = connection(&mut sim, &config);
            assert!(!s.tokens[0].is_empty());
            s.long.iter().find(|l| l.0).unwrap().2
        })
        .collect();
    let clear = first_initials.iter().filter(|b| *b & 0x40 == 0).count();
    assert!(
        about_half((clear, first_initials.len())),
        "{clear} of 40 first Initials cleared"
    );

    // The server stops greasing (same token key, new configuration): the
    // client's cleared Initials are dropped, and its probes set the bit.
    let plain = EndpointConfig {
        grease_quic_bit: false,
        ..EndpointConfig::default()
    };
    // Each client clears its first Initial or not at random: go on until one
    // has (and at least 8 ran), so that the case is met whatever the seed.
    let mut cleared_first = 0;
    for s in 0..32 {
        if s >= 8 && cleared_first > 0 {
            break;
        }
        let mut sim = Sim::new(seed(8) + s, server.clone(), plain.clone());
        // The client still greases (announces it, and may use the token).
        let greasing = EndpointConfig {
            rng_seed: Some(seed(8) + s),
            ..EndpointConfig::default()
        };
        sim.client = Endpoint::new(Arc::new(greasing), None);
        // Tokens are bound to the address: the same client address.
        connection_with_token(&mut sim, &config, &server);
        let (seen, _) = connection(&mut sim, &config);
        let first = seen.long.iter().find(|l| l.0).unwrap().2;
        if first & 0x40 == 0 {
            cleared_first += 1;
            // Dropped by the server: the client's probe sets the bit again.
            let initials = seen.long.iter().filter(|l| l.0 && l.1 == "initial");
            let probe = initials.clone().nth(1).expect("the Initial went again");
            assert_eq!(probe.2 & 0x40, 0x40, "the probe sets the QUIC bit");
        }
    }
    assert!(
        cleared_first > 0,
        "no first Initial was cleared: the case was not met"
    );
}

/// Give `config`'s store a token from a server that greases (a simulation
/// with grease on and `server`'s token key), as if from an earlier visit.
fn connection_with_token(sim: &mut Sim, config: &ClientConfig, server: &ServerConfig) {
    let mut earlier = Sim::new(seed(9), server.clone(), EndpointConfig::default());
    earlier.client_addr = sim.client_addr;
    connection(&mut earlier, config);
}

/// Tokens a client's connections received, in order (a store that keeps
/// every one, to count them).
#[derive(Debug, Default)]
struct Kept(std::sync::Mutex<Vec<Vec<u8>>>);

impl TokenStore for Kept {
    fn insert(&self, _: &str, token: AddressToken) {
        self.0.lock().unwrap().push(token.token);
    }
    fn take(&self, _: &str) -> Option<AddressToken> {
        self.0.lock().unwrap().pop().map(stored)
    }
}

/// One connection whose client moves to each of `addrs` in turn, echoing
/// 20 KB from each (so the server follows it and validates the new path),
/// then closes. The store gets every token the server gave.
fn moving_connection(sim: &mut Sim, config: &ClientConfig, addrs: &[&str]) {
    sim.server_handles.clear();
    let c = sim.connect_with(config.clone());
    let mut echo = Echo::new(c, vec![payload(20_000, 3)]);
    run_echo(sim, &mut echo, 50_000);
    sim.run_for(Duration::from_secs(1));
    for (i, addr) in addrs.iter().enumerate() {
        sim.client_addr = addr.parse().unwrap();
        let mut echo = Echo::new(c, vec![payload(20_000, 4 + i as u8)]);
        run_echo(sim, &mut echo, 50_000);
        assert!(echo.done(), "echo from {addr} incomplete");
        sim.run_for(Duration::from_secs(1));
        let s = sim.server_handles[0];
        assert_eq!(
            sim.server.connection(s).unwrap().remote_address(),
            sim.client_addr
        );
    }
    sim.close_all_and_remove(&[c], 50_000);
}

#[test]
fn a_client_that_moved_gets_a_token_for_its_new_address() {
    let tls = Tls::new();
    let mut sim = retry_pair(&tls, 9, 10);
    let (config, store) = client(&tls);
    // A port change alone (NAT rebinding) keeps the address the token holds
    // for: no new token. A new IP address gets one.
    moving_connection(&mut sim, &config, &["10.0.0.1:6001"]);
    let (back, _) = connection(&mut sim, &config);
    assert_eq!(back.retries, 0, "the first token holds after a port change");
    // That connection's own token, then the move.
    moving_connection(&mut sim, &config, &["10.0.0.9:6000"]);
    let (moved, _) = connection(&mut sim, &config);
    assert_eq!(
        moved.retries, 0,
        "the token given after the move holds for the new address"
    );
    assert!(store.take("localhost").is_some());
}

/// Tokens the client got over one connection that moved to each of `addrs`.
fn tokens_over_moves(s: u64, addrs: &[&str]) -> Vec<Vec<u8>> {
    let tls = Tls::new();
    let mut sim = retry_pair(&tls, s, 10);
    let kept = Arc::new(Kept::default());
    let mut config = ClientConfig::new(tls.client_config(None));
    config.token_store = Some(kept.clone());
    moving_connection(&mut sim, &config, addrs);
    let tokens = kept.0.lock().unwrap().clone();
    let distinct: std::collections::HashSet<_> = tokens.iter().collect();
    assert_eq!(distinct.len(), tokens.len(), "each token sealed anew");
    tokens
}

#[test]
fn a_new_token_for_a_new_address_only_and_at_most_four() {
    // From 10.0.0.1:5000: a port change, then a new address.
    let tokens = tokens_over_moves(10, &["10.0.0.1:6001", "10.0.2.1:6000"]);
    assert_eq!(tokens.len(), 2, "the first, then one for the new address");
    let addrs: Vec<String> = (1..=6).map(|i| format!("10.0.{i}.1:6000")).collect();
    let addrs: Vec<&str> = addrs.iter().map(String::as_str).collect();
    let tokens = tokens_over_moves(11, &addrs);
    assert_eq!(tokens.len(), 4, "one token, then one per move up to four");
}
