//! The send order of streams with and without priorities.

use super::*;
use crate::connection::streams::StreamLimits;
use crate::transport_params::TransportParameters;
use crate::types::{Dir, Side, SpaceId};

const MB: usize = 1 << 20;

fn streams() -> Streams {
    let limits = StreamLimits {
        stream_window: MB as u64,
        stream_window_max: MB as u64,
        connection_window: MB as u64,
        connection_window_max: MB as u64,
        send_buffer: 4 * MB,
        send_buffer_max: 4 * MB,
        send_budget: 64 * MB,
        send_budget_max: 64 * MB,
        send_timeout: None,
        max_concurrent: [100, 100],
    };
    let mut s = Streams::new(Side::Client, limits);
    let p = TransportParameters {
        initial_max_data: 64 * MB as u64,
        initial_max_stream_data_bidi_remote: 64 * MB as u64,
        initial_max_streams_bidi: 100,
        ..TransportParameters::default()
    };
    s.set_peer_params(&p);
    s
}

/// Opens a stream and writes `len` bytes to it.
fn stream_with(s: &mut Streams, len: usize) -> StreamId {
    let id = s.open(Dir::Bi).unwrap();
    assert_eq!(s.write(id, &vec![7u8; len]).unwrap(), len);
    id
}

/// The stream of each STREAM frame of the next `packets` 1200-byte packets.
fn order(s: &mut Streams, packets: usize) -> Vec<StreamId> {
    let mut out = Vec::new();
    for _ in 0..packets {
        let mut buf = Vec::with_capacity(1200);
        let mut sent = SentFrames::new(SpaceId::Data);
        s.write_stream_frames(&mut buf, 1200, &mut sent);
        out.extend(sent.streams().map(|c| c.id));
    }
    out
}

/// Collapses runs of one stream: the order in which streams got turns.
fn turns(ids: &[StreamId]) -> Vec<StreamId> {
    let mut out: Vec<StreamId> = Vec::new();
    for &id in ids {
        if out.last() != Some(&id) {
            out.push(id);
        }
    }
    out
}

fn prio(urgency: u8, incremental: bool) -> Option<Priority> {
    Some(Priority {
        urgency,
        incremental,
    })
}

#[test]
fn without_priorities_streams_go_round_robin_packet_by_packet() {
    let mut s = streams();
    let (a, b) = (stream_with(&mut s, 5000), stream_with(&mut s, 5000));
    assert!(s.send_queue.levels.is_none());
    let t = turns(&order(&mut s, 4));
    assert_eq!(t, [a, b, a, b]);
}

#[test]
fn lower_urgency_goes_first_even_when_queued_later() {
    let mut s = streams();
    let big = stream_with(&mut s, 20_000);
    s.set_priority(big, prio(7, false)).unwrap();
    assert_eq!(turns(&order(&mut s, 2)), [big]);
    let urgent = stream_with(&mut s, 3000);
    s.set_priority(urgent, prio(0, false)).unwrap();
    // The urgent stream's 3000 bytes take the next three packets whole
    // (the third shared with the big one), before the big one resumes.
    let ids = order(&mut s, 3);
    assert_eq!(turns(&ids), [urgent, big]);
    assert_eq!(turns(&order(&mut s, 2)), [big]);
}

#[test]
fn non_incremental_streams_of_one_urgency_go_whole_in_id_order() {
    let mut s = streams();
    let c = stream_with(&mut s, 3000);
    let a_b: Vec<_> = (0..2).map(|_| stream_with(&mut s, 3000)).collect();
    // Priorities set in reverse: the order is still by stream ID.
    for &id in a_b.iter().rev() {
        s.set_priority(id, prio(1, false)).unwrap();
    }
    s.set_priority(c, prio(1, false)).unwrap();
    let t = turns(&order(&mut s, 10));
    assert_eq!(t, [c, a_b[0], a_b[1]]);
}

#[test]
fn incremental_streams_of_one_urgency_share_round_robin() {
    let mut s = streams();
    let seq = stream_with(&mut s, 2000);
    let (a, b) = (stream_with(&mut s, 5000), stream_with(&mut s, 5000));
    s.set_priority(a, prio(2, true)).unwrap();
    s.set_priority(b, prio(2, true)).unwrap();
    s.set_priority(seq, prio(2, false)).unwrap();
    let t = turns(&order(&mut s, 6));
    // The non-incremental one of the urgency first, then a and b in turns.
    assert_eq!(&t[..3], [seq, a, b]);
    assert_eq!(&t[3..5], [a, b]);
}

#[test]
fn streams_without_priority_count_as_urgency_3() {
    let mut s = streams();
    let plain = stream_with(&mut s, 3000);
    let low = stream_with(&mut s, 3000);
    let high = stream_with(&mut s, 3000);
    s.set_priority(low, prio(5, false)).unwrap();
    s.set_priority(high, prio(2, true)).unwrap();
    assert_eq!(turns(&order(&mut s, 10)), [high, plain, low]);
}

#[test]
fn a_new_priority_moves_a_queued_stream() {
    let mut s = streams();
    let (a, b) = (stream_with(&mut s, 5000), stream_with(&mut s, 5000));
    s.set_priority(a, prio(4, false)).unwrap();
    s.set_priority(b, prio(5, false)).unwrap();
    assert_eq!(turns(&order(&mut s, 1)), [a]);
    s.set_priority(b, prio(0, false)).unwrap();
    assert_eq!(turns(&order(&mut s, 6)), [b, a]);
    // Cleared: back among the plain streams, nothing lost.
    s.set_priority(a, None).unwrap();
    assert_eq!(s.send_queue.plain, [a]);
    assert_eq!(turns(&order(&mut s, 10)), [a]);
    assert!(s.send_queue.is_empty());
    assert_eq!(s.priority(a), None);
}

#[test]
fn every_byte_is_sent_once_under_priorities() {
    let mut s = streams();
    let lens = [4000usize, 7000, 1000, 12_000, 300];
    let ids: Vec<_> = lens.iter().map(|&l| stream_with(&mut s, l)).collect();
    for (i, &id) in ids.iter().enumerate() {
        if i != 2 {
            s.set_priority(id, prio(i as u8 * 2, i % 2 == 1)).unwrap();
        }
    }
    let mut got = vec![0usize; ids.len()];
    for _ in 0..100 {
        let mut buf = Vec::with_capacity(1200);
        let mut sent = SentFrames::new(SpaceId::Data);
        s.write_stream_frames(&mut buf, 1200, &mut sent);
        for c in sent.streams() {
            let i = ids.iter().position(|&id| id == c.id).unwrap();
            got[i] += c.len as usize;
        }
    }
    assert_eq!(got, lens);
    assert!(s.send_queue.is_empty());
}

#[test]
fn a_more_urgent_stream_may_write_past_a_budget_less_urgent_ones_filled() {
    let mut s = streams();
    let budget = 64 * 1024;
    s.limits.send_budget = budget;
    s.limits.send_budget_max = budget;
    let open = |s: &mut Streams, urgency| {
        let id = s.open(Dir::Bi).unwrap();
        s.set_priority(id, prio(urgency, false)).unwrap();
        id
    };
    let big = open(&mut s, 7);
    assert_eq!(s.write(big, &[7; 100_000]).unwrap(), budget);
    // Of the same urgency: it would be sent after the big one anyway.
    let same = open(&mut s, 7);
    assert!(!s.is_writable(same));
    assert_eq!(s.write(same, &[1; 1000]).unwrap(), 0);
    // More urgent: half the budget more, and no further.
    let urgent = open(&mut s, 0);
    assert!(s.is_writable(urgent));
    assert_eq!(s.write(urgent, &[2; 100_000]).unwrap(), budget / 2);
    assert!(!s.is_writable(urgent));
    assert_eq!(turns(&order(&mut s, 100)), [urgent, big]);
    // Nothing less urgent queued now: the budget alone, and it is full.
    let later = open(&mut s, 0);
    assert_eq!(s.write(later, &[3; 1000]).unwrap(), 0);
}
