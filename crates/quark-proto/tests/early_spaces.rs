//! Once the handshake is confirmed both sides drop the Initial and Handshake
//! spaces (RFC 9001 §4.9) and keep them dropped while busy: timers firing
//! (delayed ACKs, the post-handshake work) used to bring the spaces back, and
//! with them a look at all three spaces on every packet sent and received.

mod common;

use std::time::Duration;

use common::app::{Echo, run_echo};
use common::{Sim, payload, seed};

#[test]
fn early_spaces_stay_dropped_through_timers_and_requests() {
    let (mut sim, tls) = Sim::pair(seed(91));
    let c = sim.connect(&tls);
    let s = sim.handshake(c);
    let mut echo = Echo::new(c, vec![payload(2048, 1), payload(2048, 2)]);
    echo.set_server(s);
    run_echo(&mut sim, &mut echo, 100_000);
    assert!(echo.done());
    // Long enough for delayed ACKs and the post-handshake timer to fire,
    // shorter than the idle trim (which would drop the spaces anyway).
    sim.run_for(Duration::from_millis(300));
    let mut again = Echo::new(c, vec![payload(2048, 3), payload(30_000, 4)]);
    again.set_server(s);
    run_echo(&mut sim, &mut again, 100_000);
    assert!(again.done(), "requests answered byte for byte");
    assert!(!sim.client.connection(c).unwrap().holds_early_spaces());
    assert!(!sim.server.connection(s).unwrap().holds_early_spaces());
}
