use super::*;

fn opts() -> CloudOptions {
    CloudOptions {
        placements: Placement::ALL.to_vec(),
        vcpu_hour_price: DEFAULT_VCPU_HOUR_PRICE,
        quick: false,
        placement_label: None,
        agents: false,
    }
}

#[test]
fn placements_parse_in_order_without_duplicates() {
    let p = Placement::parse_list("cross-zone, same-host,cross-zone").unwrap();
    assert_eq!(p, [Placement::CrossZone, Placement::SameHost]);
    assert!(Placement::parse_list("moon").is_err());
    assert!(Placement::parse_list(",").is_err());
    // Every placement's network is one the lab knows.
    let nets: Vec<String> = Placement::ALL.iter().map(|p| p.net().into()).collect();
    crate::bench::net::validate(&nets[..1]).unwrap();
    quark_netem::Profile::parse(CROSS_ZONE_NET).unwrap();
}

#[test]
fn the_full_plan_is_the_seeds_matrix() {
    let plan = plan(&opts(), &Overrides::default()).unwrap();
    assert_eq!(plan.protocols.len(), 9);
    assert_eq!(plan.net, "loopback,veth,rtt1.5-loss0");
    let names: Vec<_> = plan.scenarios.iter().map(|(s, _)| s.name()).collect();
    assert_eq!(names, ["persistent", "ephemeral", "parallel"]);
    for (s, p) in &plan.scenarios {
        assert_eq!(p.sizes, [2 << 10, 8 << 10, 32 << 10, 128 << 10, 512 << 10]);
        assert_eq!(p.requests, 10_000);
        let in_flight = if *s == Scenario::Parallel { 100 } else { 1 };
        assert_eq!(p.in_flight, in_flight);
    }
    let s = &plan.section;
    assert_eq!(s.reference, "tcp+tls");
    assert_eq!(s.price_source, DEFAULT_PRICE_SOURCE);
    assert_eq!(s.placements[2].seed_name.as_deref(), Some("Multi-AZ"));
}

#[test]
fn quick_shrinks_and_the_users_flags_win() {
    let o = CloudOptions {
        quick: true,
        vcpu_hour_price: 0.1,
        ..opts()
    };
    let user = Overrides {
        requests: Some(7),
        ..Default::default()
    };
    let plan = plan(&o, &user).unwrap();
    for (s, p) in &plan.scenarios {
        assert_eq!(p.sizes, QUICK_SIZES);
        assert_eq!(p.requests, 7, "{}", s.name());
    }
    assert_eq!(plan.section.price_source, "--vcpu-hour-price");
    for bad in [0.0, -1.0, f64::NAN] {
        let o = CloudOptions {
            vcpu_hour_price: bad,
            ..opts()
        };
        assert!(super::plan(&o, &user).is_err(), "{bad}");
    }
}

#[test]
fn with_agents_one_placement_named_by_the_label() {
    let o = CloudOptions {
        agents: true,
        placement_label: Some("two-hosts".into()),
        ..opts()
    };
    let plan = plan(&o, &Overrides::default()).unwrap();
    assert_eq!(plan.net, "loopback");
    assert_eq!(plan.section.placements.len(), 1);
    assert_eq!(plan.section.placements[0].name, "two-hosts");
    assert!(!plan.section.placements[0].emulated);
}

fn row(placement: &str, protocol: &str, p90: f64, cpu: f64) -> CloudRow {
    CloudRow {
        placement: placement.into(),
        scenario: "persistent".into(),
        protocol: protocol.into(),
        size_bytes: 2048,
        status: Status::Ok,
        error: None,
        values: Some(CloudValues {
            latency_p50_s: p90 / 2.0,
            latency_p90_s: p90,
            latency_p99_s: p90 * 2.0,
            connect_p50_s: None,
            connect_p90_s: None,
            throughput_bps: 1e9,
            cpu_s_per_request: cpu,
            cpu_s_per_gb: 1.0,
            client_rss_bytes: 1,
            server_rss_bytes: 1,
            usd_per_million_requests: 0.0,
            usd_per_tb: 0.0,
            p90_vs_ref: None,
            cpu_vs_ref: None,
        }),
    }
}

#[test]
fn ratios_compare_within_one_placement() {
    let mut rows = vec![
        row("same-host", "tcp+tls", 1e-4, 2e-5),
        row("same-host", "quic", 2e-4, 3e-5),
        row("cross-zone", "tcp+tls", 2e-3, 4e-5),
        row("cross-zone", "quic", 1e-3, 2e-5),
        row("same-zone", "quic", 1e-3, 2e-5),
    ];
    ratios(&mut rows, REFERENCE);
    let v = |i: usize| rows[i].values.clone().unwrap();
    assert_eq!(v(0).p90_vs_ref, None, "the reference has no ratio");
    assert!((v(1).p90_vs_ref.unwrap() - 2.0).abs() < 1e-9);
    assert!((v(1).cpu_vs_ref.unwrap() - 1.5).abs() < 1e-9);
    assert!((v(3).p90_vs_ref.unwrap() - 0.5).abs() < 1e-9);
    assert_eq!(v(4).p90_vs_ref, None, "no reference in that placement");
}
