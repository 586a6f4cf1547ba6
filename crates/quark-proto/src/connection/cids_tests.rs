//! Connection ID bookkeeping against a peer that cycles, repeats and floods.

use super::*;
use crate::error::TransportErrorCode as Code;

fn ncid(seq: u64, retire_prior_to: u64, token: u8) -> NewConnectionId {
    NewConnectionId {
        seq,
        retire_prior_to,
        cid: ConnectionId::new(&seq.to_be_bytes()).unwrap(),
        reset_token: [token; 16],
    }
}

fn peer() -> PeerCids {
    PeerCids::new(ConnectionId::new(&[0xee; 9]).unwrap(), 4)
}

/// Tokens the endpoint's table would hold after `events`.
fn mirror(table: &mut Vec<ResetToken>, events: &mut VecDeque<CidEvent>) {
    for e in events.drain(..) {
        match e {
            CidEvent::PeerResetToken(t) => table.push(t),
            CidEvent::PeerResetTokenRetired(t) => table.retain(|x| *x != t),
            _ => {}
        }
    }
}

/// Send every RETIRE_CONNECTION_ID owed and have it acknowledged; returns the
/// sequence numbers retired.
fn send_and_ack(peer: &mut PeerCids) -> Vec<u64> {
    let mut sent = Vec::new();
    while let Some(seq) = peer.next_retirement() {
        peer.on_retirement_sent(seq);
        peer.on_retire_acked(seq);
        sent.push(seq);
    }
    sent
}

#[test]
fn a_peer_cycling_its_ids_leaves_only_live_tokens() {
    let mut peer = peer();
    let (mut events, mut table) = (VecDeque::new(), Vec::new());
    peer.set_initial_reset_token(ResetToken([200; 16]), &mut events);
    // Each new ID retires every older one: the table must not grow.
    for seq in 1..500u64 {
        peer.on_new(&ncid(seq, seq, seq as u8), &mut events)
            .unwrap();
        mirror(&mut table, &mut events);
        assert_eq!(table, vec![ResetToken([seq as u8; 16])], "after {seq}");
        assert!(peer.holds(table[0]));
        assert_eq!(send_and_ack(&mut peer), vec![seq - 1]);
    }
    assert_eq!(peer.retirements_owed(), 0);
}

#[test]
fn a_token_shared_by_a_live_id_stays() {
    let mut peer = peer();
    let (mut events, mut table) = (VecDeque::new(), Vec::new());
    peer.on_new(&ncid(1, 0, 7), &mut events).unwrap();
    peer.on_new(&ncid(2, 0, 7), &mut events).unwrap();
    peer.on_new(&ncid(3, 2, 8), &mut events).unwrap();
    mirror(&mut table, &mut events);
    // Seq 1 (token 7) retired, seq 2 (token 7 too) lives on.
    assert!(table.contains(&ResetToken([7; 16])), "{table:?}");
    assert!(peer.holds(ResetToken([7; 16])));
}

#[test]
fn retirements_never_acknowledged_end_the_connection() {
    // Limit 4: at most 16 retirements owed, queued or in flight.
    let mut peer = peer();
    let mut events = VecDeque::new();
    for seq in 1..1_000u64 {
        match peer.on_new(&ncid(seq, seq, 1), &mut events) {
            Ok(()) => assert!(peer.retirements_owed() <= 16),
            Err(e) => {
                assert_eq!(e.code, Code::CONNECTION_ID_LIMIT_ERROR, "{e}");
                assert_eq!(seq, 17, "the 17th retirement owed is one too many");
                return;
            }
        }
        // Every other one is sent (and never acknowledged): it still counts.
        if seq % 2 == 0 {
            let s = peer.next_retirement().unwrap();
            peer.on_retirement_sent(s);
        }
    }
    panic!("a flood of retirements was accepted");
}

#[test]
fn a_lost_retirement_is_sent_again_once() {
    let mut peer = peer();
    let mut events = VecDeque::new();
    peer.on_new(&ncid(1, 1, 1), &mut events).unwrap();
    assert_eq!(peer.next_retirement(), Some(0));
    peer.on_retirement_sent(0);
    assert_eq!(peer.next_retirement(), None);
    peer.on_retire_lost(0);
    peer.on_retire_lost(0); // reported twice: still one frame to send
    assert_eq!(peer.next_retirement(), Some(0));
    assert_eq!(peer.retirements_owed(), 1);
    peer.on_retirement_sent(0);
    peer.on_retire_acked(0);
    peer.on_retire_lost(0); // a stale loss after the ack re-queues nothing
    assert_eq!(peer.retirements_owed(), 0);
    assert_eq!(peer.next_retirement(), None);
}

#[test]
fn a_repeated_old_id_is_retired_once() {
    let mut peer = peer();
    let mut events = VecDeque::new();
    peer.on_new(&ncid(10, 10, 1), &mut events).unwrap();
    // Seq 3 arrives late, below Retire Prior To: retire it, once, however often
    // the peer repeats it, before and after our retirement is acknowledged.
    for _ in 0..100_000 {
        peer.on_new(&ncid(3, 0, 3), &mut events).unwrap();
    }
    assert_eq!(peer.retirements_owed(), 2, "seq 0 and seq 3");
    assert_eq!(send_and_ack(&mut peer), vec![0, 3]);
    for _ in 0..100_000 {
        peer.on_new(&ncid(3, 0, 3), &mut events).unwrap();
    }
    assert_eq!(peer.retirements_owed(), 0);
    assert_eq!(peer.active(), ncid(10, 0, 0).cid);
}

#[test]
fn scattered_sequence_numbers_are_remembered_in_bounded_space() {
    let mut peer = peer();
    let mut events = VecDeque::new();
    peer.on_new(&ncid(1 << 40, 1 << 40, 1), &mut events)
        .unwrap();
    send_and_ack(&mut peer);
    // Every other old sequence number: each needs its own run.
    for seq in (1..200_000u64).step_by(2) {
        peer.on_new(&ncid(seq, 0, 2), &mut events).unwrap();
        assert_eq!(send_and_ack(&mut peer), vec![seq]);
        assert!(peer.seen_runs() <= MAX_SEEN_RUNS);
    }
}

#[test]
fn repeats_with_other_contents_are_violations() {
    let mut events = VecDeque::new();
    let check = |second: NewConnectionId, what: &str| {
        let mut peer = peer();
        let mut events = VecDeque::new();
        peer.on_new(&ncid(1, 0, 1), &mut events).unwrap();
        let e = peer.on_new(&second, &mut events).unwrap_err();
        assert_eq!(e.code, Code::PROTOCOL_VIOLATION, "{what}: {e}");
    };
    let mut other_cid = ncid(1, 0, 1);
    other_cid.cid = ConnectionId::new(&[5; 8]).unwrap();
    check(other_cid, "same sequence number, other ID");
    check(ncid(1, 0, 2), "same ID, other reset token");
    let mut other_seq = ncid(2, 0, 1);
    other_seq.cid = ncid(1, 0, 1).cid;
    check(other_seq, "same ID, other sequence number");
    // An exact repeat is a retransmission.
    let mut peer = peer();
    peer.on_new(&ncid(1, 0, 1), &mut events).unwrap();
    peer.on_new(&ncid(1, 0, 1), &mut events).unwrap();
}

#[test]
fn more_live_ids_than_our_limit_is_an_error() {
    let mut peer = peer();
    let mut events = VecDeque::new();
    for seq in 1..4 {
        peer.on_new(&ncid(seq, 0, 1), &mut events).unwrap();
    }
    let e = peer.on_new(&ncid(4, 0, 1), &mut events).unwrap_err();
    assert_eq!(e.code, Code::CONNECTION_ID_LIMIT_ERROR);
}

#[test]
fn only_announced_ids_can_be_retired() {
    let key = ResetKey::new(&[3; 32]);
    let first = ConnectionId::new(&[1; 8]).unwrap();
    let mut local = LocalCids::new(first);
    local.set_peer_limit(4);
    let mut events = VecDeque::new();
    let mut n = 1u8;
    local.top_up(
        || {
            n += 1;
            ConnectionId::new(&[n; 8]).unwrap()
        },
        &mut events,
    );
    // Issued 1..=3, none announced yet: the peer cannot know them.
    let other = ConnectionId::new(&[9; 8]).unwrap();
    let e = local.on_retire(1, &other, &mut events).unwrap_err();
    assert_eq!(e.code, Code::PROTOCOL_VIOLATION);
    let (seq, cid, token) = local.next_announcement(&key).unwrap();
    assert_eq!(seq, 1);
    // The token is derived from the ID, as the endpoint's resets are.
    assert_eq!(token, key.token(&cid));
    local.on_retire(1, &other, &mut events).unwrap();
    assert!(local.on_retire(2, &other, &mut events).is_err());
}
