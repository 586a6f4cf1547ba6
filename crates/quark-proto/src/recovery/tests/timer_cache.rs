//! The loss timer re-armed on a Data send without the full A.8 walk
//! (send.rs `rearm_after_send`) must equal the eagerly computed one.

use super::*;

/// After every send, the timer equals what `set_timer` computes from scratch
/// (`update_timer`; with ack-eliciting packets in flight `now` does not enter).
fn check(h: &mut H, ms: u64) {
    let lazy = h.r.loss_detection_timer();
    h.r.update_timer(h.at(ms), &h.path);
    assert_eq!(
        lazy,
        h.r.loss_detection_timer(),
        "timer after a send at {ms} ms"
    );
}

#[test]
fn timer_after_sends_equals_eager() {
    let mut path = early_client();
    path.has_handshake_keys = true;
    let mut h = H::new(CcAlgorithm::NewReno, path);
    let mut ms = 0;
    // Handshake: Initial and Handshake packets in flight, Data not yet armed.
    h.send(ms, SpaceId::Initial, 0);
    check(&mut h, ms);
    h.send(ms, SpaceId::Handshake, 0);
    check(&mut h, ms);
    h.send(ms, SpaceId::Data, 0);
    check(&mut h, ms);
    ms += 30;
    h.ack(ms, SpaceId::Initial, &[0..=0]).unwrap();
    h.send(ms, SpaceId::Data, 1);
    check(&mut h, ms);
    // Confirmed, the Handshake packet still in flight: its PTO is the earlier.
    h.path = confirmed();
    h.send(ms, SpaceId::Data, 2);
    check(&mut h, ms);
    h.ack(ms + 1, SpaceId::Handshake, &[0..=0]).unwrap();
    let mut pn = 3;
    for round in 0..40u64 {
        // A burst of sends, one every 100 µs.
        for i in 0..20 {
            let now = h.at(ms) + Duration::from_micros(100 * i);
            h.r.on_packet_sent(now, SpaceId::Data, pn, 1200, true, true, pn, &h.path);
            check(&mut h, ms);
            pn += 1;
        }
        ms += 20;
        match round % 4 {
            // All acknowledged but the last.
            0 => {
                h.ack(ms, SpaceId::Data, &[0..=pn - 2]).unwrap();
            }
            // A gap: the packets above it are lost by threshold or get a loss time.
            1 => {
                h.ack(ms, SpaceId::Data, &[pn - 1..=pn - 1]).unwrap();
            }
            // The PTO fires: backoff, then sends at pto_count > 0.
            2 => {
                // (A loss time may come first: fire until the probe.)
                for _ in 0..3 {
                    let at = h.r.loss_detection_timer().unwrap();
                    ms = (at - h.t0).as_millis() as u64 + 1;
                    if matches!(h.timeout(ms), TimeoutAction::Probe { .. }) {
                        break;
                    }
                }
            }
            // Back to normal.
            _ => {
                h.ack(ms, SpaceId::Data, &[0..=pn - 1]).unwrap();
            }
        }
        // Now and then the path's other connections offer a PTO base larger
        // than this one's own (path_rtt.rs), until its next RTT sample.
        if round % 5 == 3 {
            let base = Duration::from_millis(40 + round);
            h.r.offer_path_pto(base, h.at(ms), &h.path);
        }
        // The path changes under the sender now and then.
        h.path.max_ack_delay = Duration::from_millis(5 + round % 3 * 10);
        h.path.amplification_blocked = round == 7;
    }
    let s = h.r.stats();
    assert!(s.ptos > 0 && s.lost_packets > 0, "{s:?}");
}
