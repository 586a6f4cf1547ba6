//! Path MTU discovery over the simulated network: the largest size the path
//! carries is found, nothing larger is used for data, and a path whose MTU
//! shrinks mid-connection is survived.

mod common;

use std::time::Duration;

use common::app::{Echo, run_echo};
use common::{Sim, payload, seed};

fn discovered(path_mtu: usize) -> usize {
    let (mut sim, tls) = Sim::pair(seed(60));
    sim.path_mtu = path_mtu;
    sim.set_delay(Duration::from_millis(5));
    let c = sim.connect(&tls);
    let mut echo = Echo::new(c, vec![payload(2_000_000, 1)]);
    run_echo(&mut sim, &mut echo, 400_000);
    sim.run_for(Duration::from_secs(2));
    sim.client.connection(c).unwrap().max_datagram_size()
}

#[test]
fn finds_the_path_mtu() {
    for path_mtu in [1200, 1472, 4000, 9000, 65_000] {
        let found = discovered(path_mtu);
        assert!(found <= path_mtu, "{found} > path MTU {path_mtu}");
        assert!(
            found + 64 > path_mtu || path_mtu > 65_000,
            "found {found} for path MTU {path_mtu}"
        );
    }
}

#[test]
fn survives_a_shrinking_path() {
    let (mut sim, tls) = Sim::pair(seed(61));
    sim.path_mtu = 9000;
    sim.set_delay(Duration::from_millis(5));
    let c = sim.connect(&tls);
    let mut echo = Echo::new(c, vec![payload(1_000_000, 2)]);
    run_echo(&mut sim, &mut echo, 400_000);
    sim.run_for(Duration::from_secs(1));
    assert!(sim.client.connection(c).unwrap().max_datagram_size() > 8000);
    // The path now drops anything above 1300 bytes: a black hole for the
    // discovered size. The transfer must still complete.
    sim.path_mtu = 1300;
    let mut echo = Echo::new(c, vec![payload(500_000, 3)]);
    run_echo(&mut sim, &mut echo, 400_000);
    assert!(sim.client.connection(c).unwrap().max_datagram_size() <= 1300);
}
