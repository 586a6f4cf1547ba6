//! The search of `mtu.rs` driven by hand: probes acknowledged, lost or
//! reported too big, outages and black holes, offers from the endpoint.

use super::*;

fn now() -> Instant {
    #[allow(clippy::disallowed_methods)]
    Instant::now()
}

/// A search up to `ceiling` whose first probe (that size, packet 1, expiring
/// after `ms`) is out, and the time it went.
fn probe_out(ceiling: u16, ms: u64) -> (MtuDiscovery, Instant) {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, ceiling, true);
    d.on_probe_sent(ceiling, 1, t, Duration::from_millis(ms));
    (d, t)
}

/// Drive the search against a path that carries up to `path_mtu`.
fn search(path_mtu: u16, ceiling: u16) -> (u16, usize) {
    let mut d = MtuDiscovery::new(BASE_MTU, ceiling, true);
    let t = now();
    let mut probes = 0;
    let mut pn = 0;
    while let Some(size) = d.probe_due(t) {
        probes += 1;
        pn += 1;
        d.on_probe_sent(size, pn, t, Duration::from_millis(10));
        // Ordinary packets sent after the probe get through.
        pn += 1;
        d.on_acked(pn);
        if size <= path_mtu {
            d.on_probe_acked(pn - 1);
        } else {
            d.on_probe_failed(pn - 1);
        }
        assert!(probes < 200, "search does not end");
    }
    (d.current(), probes)
}

#[test]
fn loopback_finds_the_ceiling_in_one_probe() {
    assert_eq!(search(65_000, 65_000), (65_000, 1));
}

#[test]
fn ethernet_path() {
    let (mtu, probes) = search(1472, 65_000);
    assert!(
        mtu <= 1472 && mtu + SEARCH_GRANULARITY > 1472,
        "found {mtu}"
    );
    assert!(probes < 40, "{probes} probes");
}

#[test]
fn base_only_path_stays_at_the_base() {
    assert_eq!(search(1200, 65_000).0, BASE_MTU);
}

#[test]
fn peer_limit_bounds_the_search() {
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, true);
    d.set_peer_max(9000);
    assert_eq!(d.probe_due(now()), Some(9000));
}

#[test]
fn timeouts_count_as_failures_and_black_holes_reset() {
    let mut d = MtuDiscovery::new(BASE_MTU, 10_000, true);
    let t = now();
    let size = d.probe_due(t).unwrap();
    d.on_probe_sent(size, 1, t, Duration::from_millis(5));
    d.on_acked(2); // the path carries smaller packets
    d.on_timeout(t + Duration::from_millis(6));
    assert!(d.timer().is_none());
    assert_eq!(d.probe_due(t), Some(size), "retried after a timeout");
    d.on_probe_sent(size, 3, t, Duration::from_millis(5));
    assert!(d.on_probe_acked(3));
    assert_eq!(d.current(), 10_000);
    assert!(d.on_black_hole());
    assert_eq!(d.current(), BASE_MTU);
    assert_eq!(d.probe_due(t), Some(10_000), "the old size is tried first");
}

#[test]
fn an_outage_does_not_shrink_the_search() {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, 9000, true);
    let size = d.probe_due(t).unwrap();
    d.on_probe_sent(size, 1, t, Duration::from_millis(5));
    assert!(d.on_probe_acked(1));
    assert!(d.on_black_hole(), "a 2 s outage looks like a black hole");
    d.on_pto();
    assert_eq!(d.probe_due(t), None, "no probe into a silent path");
    // A probe sent just before is lost like everything else.
    d.on_acked(9);
    for pn in 10..20 {
        let size = d.probe_due(t).unwrap();
        assert_eq!(size, 9000);
        d.on_probe_sent(size, pn, t, Duration::from_millis(5));
        if pn % 2 == 0 {
            d.on_pto();
        } else {
            d.on_sent(pn + 1); // what follows it is lost as well
        }
        d.on_probe_failed(pn);
        d.on_acked(pn); // (the path answers for a moment)
    }
    // The path is back: the old size with the first probe.
    d.on_probe_sent(9000, 30, t, Duration::from_millis(5));
    assert!(d.on_probe_acked(30));
    assert_eq!(d.current(), 9000);
}

#[test]
fn a_size_that_stopped_working_is_searched_down() {
    let (mut d, t) = probe_out(9000, 5);
    assert!(d.on_probe_acked(1));
    assert!(d.on_black_hole());
    // Small packets get through, 9000-byte probes do not.
    let mut pn = 10;
    while let Some(size) = d.probe_due(t) {
        d.on_probe_sent(size, pn, t, Duration::from_millis(5));
        d.on_acked(pn + 1);
        if size <= 1500 {
            assert!(d.on_probe_acked(pn));
        } else {
            d.on_probe_failed(pn);
        }
        pn += 2;
        assert!(pn < 200, "the search ends");
    }
    assert!((1452..=1500).contains(&d.current()), "{}", d.current());
}

#[test]
fn a_known_size_replaces_the_search_once_and_is_capped() {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, 9000, true);
    d.offer(PathMtu::Known(65_000));
    assert_eq!(d.use_offer(t), Some(Offer::Adopted));
    // Capped by this connection's own ceiling, and the search is over.
    assert_eq!(d.current(), 9000);
    assert_eq!(d.probe_due(t), None);
    assert_eq!(d.take_news(), None, "an adopted size is not news");
    d.offer(PathMtu::Known(9000));
    assert_eq!(d.use_offer(t), None);
}

#[test]
fn another_probe_in_flight_defers_ours_until_it_expires() {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, true);
    d.offer(PathMtu::Probing(t + Duration::from_millis(30)));
    assert_eq!(d.use_offer(t), Some(Offer::Wait));
    assert_eq!(
        d.use_offer(t + Duration::from_millis(29)),
        Some(Offer::Wait)
    );
    // The other probe's answer never came: search ourselves.
    assert_eq!(d.use_offer(t + Duration::from_millis(30)), None);
    assert_eq!(d.probe_due(t + Duration::from_millis(30)), Some(65_000));
}

#[test]
fn offers_are_ignored_once_the_search_began() {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, true);
    let size = d.probe_due(t).unwrap();
    d.on_probe_sent(size, 1, t, Duration::from_millis(10));
    assert_eq!(
        d.take_news(),
        Some(PathMtu::Probing(t + Duration::from_millis(10)))
    );
    d.offer(PathMtu::Known(9000));
    assert_eq!(d.use_offer(t), None);
    assert!(d.on_probe_acked(1));
    assert_eq!(d.take_news(), Some(PathMtu::Known(65_000)));
    assert!(d.on_black_hole());
    assert_eq!(d.take_news(), None, "not news before an ACK");
    d.on_acked(2);
    assert_eq!(d.take_news(), Some(PathMtu::Known(BASE_MTU)));
}

#[test]
fn a_peer_that_went_away_is_no_black_hole_for_the_path() {
    let (mut d, _) = probe_out(65_000, 10);
    assert!(d.on_probe_acked(1));
    assert_eq!(d.take_news(), Some(PathMtu::Known(65_000)));
    // The peer stops answering: PTOs until the fallback, and silence.
    d.on_pto();
    assert!(d.on_black_hole());
    assert_eq!(d.current(), BASE_MTU);
    assert_eq!(d.take_news(), None, "the endpoint keeps 65 000 for others");
    assert!(!d.open_to_offers(), "but does not offer it back here");
}

#[test]
fn an_adopted_size_follows_the_search_upwards_only() {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, true);
    d.offer(PathMtu::Known(1452));
    assert_eq!(d.use_offer(t), Some(Offer::Adopted));
    assert!(d.open_to_offers(), "a later step of the search is welcome");
    d.offer(PathMtu::Probing(t + Duration::from_millis(30)));
    assert_eq!(
        d.use_offer(t),
        None,
        "no need to wait: this one never probes"
    );
    d.offer(PathMtu::Known(1300));
    assert_eq!(d.use_offer(t), None);
    d.offer(PathMtu::Known(8896));
    assert_eq!(d.use_offer(t), Some(Offer::Adopted));
    assert_eq!(d.current(), 8896);
    assert_eq!(d.probe_due(t), None);
    assert!(d.on_black_hole());
    assert!(d.fresh(), "a black hole restarts the search");
}

#[test]
fn too_big_for_the_probe_makes_its_size_the_next_probe() {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, true);
    assert_eq!(d.probe_due(t), Some(65_000));
    d.on_probe_sent(65_000, 1, t, Duration::from_millis(10));
    // Above the probe, or below the base size: not about our packets.
    assert_eq!(d.on_too_big(65_001), TooBig::Ignored);
    assert_eq!(d.on_too_big(1000), TooBig::Ignored);
    assert!(d.timer().is_some(), "the probe is still out");
    assert_eq!(d.on_too_big(1472), TooBig::ProbeFailed);
    assert!(d.timer().is_none(), "the probe failed at once");
    assert_eq!(d.current(), BASE_MTU);
    assert_eq!(
        d.probe_due(t),
        Some(1472),
        "the reported size is probed next"
    );
    d.on_probe_sent(1472, 2, t, Duration::from_millis(10));
    assert!(d.on_probe_acked(2));
    assert_eq!(d.current(), 1472);
    assert_eq!(d.probe_due(t), None, "the search is over");
}

/// The acknowledgements of packets sent after a probe can outrun the
/// router's report about it: the probe is declared lost first, and the report
/// that follows still ends the search at its size.
#[test]
fn too_big_after_the_probe_was_declared_lost_still_applies() {
    let t = now();
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, true);
    d.on_probe_sent(65_000, 1, t, Duration::from_millis(10));
    d.on_sent(2);
    d.on_acked(2);
    d.on_probe_failed(1);
    assert_eq!(d.on_too_big(65_000), TooBig::Ignored, "not below the probe");
    assert_eq!(d.on_too_big(1472), TooBig::ProbeFailed);
    assert_eq!(d.probe_due(t), Some(1472), "the report, not a second try");
    // The same with the second try out: the first one's report fails it too.
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, true);
    d.on_probe_sent(65_000, 1, t, Duration::from_millis(10));
    d.on_acked(2);
    d.on_probe_failed(1);
    assert_eq!(d.probe_due(t), Some(65_000));
    d.on_probe_sent(65_000, 3, t, Duration::from_millis(10));
    assert_eq!(d.on_too_big(1472), TooBig::ProbeFailed);
    assert!(d.timer().is_none(), "the second try is given up");
    assert_eq!(d.probe_due(t), Some(1472));
    d.on_probe_sent(1472, 4, t, Duration::from_millis(10));
    assert!(d.on_probe_acked(4));
    // Once a probe is acknowledged, older losses say nothing: a report about
    // a size above the one in use cannot be about anything still out.
    assert_eq!(d.on_too_big(1480), TooBig::Ignored);
    assert_eq!(d.current(), 1472);
}

#[test]
fn too_big_for_the_size_in_use_falls_back_and_probes_the_report() {
    let (mut d, t) = probe_out(9000, 10);
    assert!(d.on_probe_acked(1));
    assert_eq!(d.on_too_big(9000), TooBig::Ignored, "the size in use fits");
    assert_eq!(d.on_too_big(1400), TooBig::Fell);
    assert_eq!(d.current(), BASE_MTU);
    assert_eq!(d.probe_due(t), Some(1400), "confirmed by a probe first");
    d.on_probe_sent(1400, 2, t, Duration::from_millis(10));
    assert!(d.on_probe_acked(2));
    assert_eq!(d.current(), 1400);
    assert_eq!(
        d.on_too_big(1100),
        TooBig::Ignored,
        "never below the base size"
    );
    assert_eq!(d.current(), 1400);
}

#[test]
fn after_a_too_big_report_its_own_probe_s_claim_holds_nothing_back() {
    let (mut d, t) = probe_out(65_000, 10);
    // The endpoint hears of the probe and offers the claim back.
    let claim = d.take_news().unwrap();
    assert_eq!(d.on_too_big(1472), TooBig::ProbeFailed);
    d.offer(claim);
    assert_eq!(d.use_offer(t), None, "no wait for a probe already refused");
    assert_eq!(d.probe_due(t), Some(1472));
    // Nor does a size the endpoint knew replace the reported one.
    d.offer(PathMtu::Known(9000));
    assert_eq!(d.use_offer(t), None);
    assert_eq!(d.probe_due(t), Some(1472));
}

#[test]
fn too_big_changes_nothing_when_disabled() {
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, false);
    assert_eq!(d.on_too_big(1300), TooBig::Ignored);
    assert_eq!(d.probe_due(now()), None);
}

#[test]
fn disabled_never_probes() {
    let mut d = MtuDiscovery::new(BASE_MTU, 65_000, false);
    assert_eq!(d.probe_due(now()), None);
}
