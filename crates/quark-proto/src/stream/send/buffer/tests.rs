use super::*;
use crate::stream::RecvBuffer;
use proptest::prelude::*;

fn range(offset: u64, len: usize, fin: bool, retransmit: bool) -> SendRange {
    SendRange {
        offset,
        len,
        fin,
        retransmit,
    }
}

fn bytes_of(b: &SendBuffer, r: SendRange) -> Vec<u8> {
    let mut out = Vec::new();
    b.copy_range(r.offset, r.len, &mut out);
    out
}

#[test]
fn new_data_in_pieces_then_fin() {
    let mut b = SendBuffer::new();
    assert!(!b.has_pending());
    assert_eq!(b.next_range(100), None);
    b.write(b"hello ");
    b.write(b"world");
    b.finish();
    assert_eq!(b.written(), 11);
    assert!(b.has_pending());
    let r = b.next_range(4).unwrap();
    assert_eq!(r, range(0, 4, false, false));
    assert_eq!(bytes_of(&b, r), b"hell");
    let r = b.next_range(100).unwrap();
    assert_eq!(r, range(4, 7, true, false));
    assert_eq!(bytes_of(&b, r), b"o world");
    assert!(!b.has_pending());
    assert_eq!(b.next_range(100), None);
    assert!(!b.on_ack(4, 7, true));
    assert_eq!(b.buffered(), 11);
    assert!(b.on_ack(0, 4, false));
    assert_eq!(b.buffered(), 0);
    // Duplicates after completion are harmless.
    assert!(b.on_ack(0, 11, true));
    b.on_lost(0, 11, true);
    assert!(!b.has_pending());
}

#[test]
fn bare_fin_when_only_fin_is_left() {
    let mut b = SendBuffer::new();
    b.write(b"abc");
    assert_eq!(b.next_range(10), Some(range(0, 3, false, false)));
    b.finish();
    assert!(b.has_pending());
    assert_eq!(b.next_range(10), Some(range(3, 0, true, false)));
    assert!(!b.has_pending());
    // The bare FIN is lost: sent again, as a retransmission.
    b.on_lost(3, 0, true);
    assert_eq!(b.next_range(0), Some(range(3, 0, true, true)));
    assert!(!b.on_ack(3, 0, true));
    assert!(b.on_ack(0, 3, false));
}

#[test]
fn empty_stream_fin_only() {
    let mut b = SendBuffer::new();
    b.finish();
    assert_eq!(b.next_range(10), Some(range(0, 0, true, false)));
    assert!(b.on_ack(0, 0, true));
}

#[test]
fn lost_data_goes_first_lowest_offset_first() {
    let mut b = SendBuffer::new();
    b.write(&[7; 300]);
    let r1 = b.next_range(100).unwrap();
    let r2 = b.next_range(100).unwrap();
    let r3 = b.next_range(50).unwrap();
    assert_eq!((r1.offset, r2.offset, r3.offset), (0, 100, 200));
    b.on_lost(r2.offset, r2.len, r2.fin);
    b.on_lost(r1.offset, r1.len, r1.fin);
    assert_eq!(b.next_range(150), Some(range(0, 150, false, true)));
    assert_eq!(b.next_range(150), Some(range(150, 50, false, true)));
    assert_eq!(b.next_range(150), Some(range(250, 50, false, false)));
    assert_eq!(b.next_range(150), None);
}

#[test]
fn lost_fin_rides_on_retransmitted_tail() {
    let mut b = SendBuffer::new();
    b.write(b"0123456789");
    b.finish();
    let r = b.next_range(100).unwrap();
    assert_eq!(r, range(0, 10, true, false));
    b.on_lost(0, 10, true);
    assert_eq!(b.next_range(4), Some(range(0, 4, false, true)));
    assert_eq!(b.next_range(100), Some(range(4, 6, true, true)));
    assert_eq!(b.next_range(100), None);
}

#[test]
fn acked_bytes_are_never_resent() {
    let mut b = SendBuffer::new();
    b.write(&[1; 100]);
    let r = b.next_range(100).unwrap();
    // A retransmission of part of it was acknowledged before the loss was noticed.
    b.on_ack(40, 20, false);
    b.on_lost(r.offset, r.len, r.fin);
    assert_eq!(b.next_range(100), Some(range(0, 40, false, true)));
    assert_eq!(b.next_range(100), Some(range(60, 40, false, true)));
    assert_eq!(b.next_range(100), None);
    // Lost, then acked late: dropped from the lost queue.
    b.on_lost(0, 40, false);
    b.on_ack(0, 40, false);
    assert_eq!(b.next_range(100), None);
    assert_eq!(b.buffered(), 40);
    assert!(b.on_ack(60, 40, false));
    assert_eq!(b.buffered(), 0);
}

#[test]
fn out_of_order_acks_free_when_prefix_completes() {
    let mut b = SendBuffer::new();
    b.write(&[0; 1000]);
    for _ in 0..10 {
        b.next_range(100).unwrap();
    }
    for i in (1..10).rev() {
        b.on_ack(i * 100, 100, false);
        assert_eq!(b.buffered(), 1000);
    }
    assert!(b.on_ack(0, 100, false));
    assert_eq!(b.buffered(), 0);
    assert!(b.acked.is_empty());
}

#[test]
fn stale_notifications_are_harmless() {
    let mut b = SendBuffer::new();
    b.write(&[5; 50]);
    // Never sent: neither an ack nor a loss can touch it.
    assert!(!b.on_ack(0, 50, false));
    b.on_lost(0, 50, true);
    assert_eq!(b.next_range(100), Some(range(0, 50, false, false)));
    b.on_ack(0, 50, false);
    b.on_lost(0, 50, false);
    b.on_lost(u64::MAX - 3, usize::MAX, true);
    assert!(b.on_ack(u64::MAX - 3, usize::MAX, true));
    assert!(!b.has_pending());
}

#[test]
fn copy_range_across_the_ring_wrap() {
    let mut b = SendBuffer::new();
    let data: Vec<u8> = (0..=255).collect();
    b.write(&data[..200]);
    b.next_range(150).unwrap();
    b.on_ack(0, 150, false);
    // Refill so the ring wraps around its end.
    b.write(&data[200..]);
    b.write(&data);
    let r = b.next_range(1000).unwrap();
    assert_eq!((r.offset, r.len), (150, 362));
    let expected: Vec<u8> = data[150..].iter().chain(&data).copied().collect();
    assert_eq!(bytes_of(&b, r), expected);
    for off in 150..512u64 {
        let mut out = Vec::new();
        b.copy_range(off, 3.min(512 - off as usize), &mut out);
        assert_eq!(out, expected[off as usize - 150..][..out.len()]);
    }
}

#[test]
#[should_panic]
fn copy_range_of_freed_bytes_panics() {
    let mut b = SendBuffer::new();
    b.write(b"abc");
    b.next_range(3);
    b.on_ack(0, 3, false);
    b.copy_range(0, 1, &mut Vec::new());
}

#[test]
fn clear_drops_everything() {
    let mut b = SendBuffer::new();
    b.write(&[1; 100]);
    b.next_range(50);
    b.on_lost(0, 50, false);
    b.clear();
    assert_eq!(b.buffered(), 0);
    assert_eq!(b.written(), 100);
    assert!(!b.has_pending());
    assert_eq!(b.next_range(100), None);
    assert!(!b.on_ack(0, 50, false));
}

#[test]
fn no_allocation_per_write_once_grown() {
    let mut b = SendBuffer::new();
    b.write(&[0; 4096]);
    b.next_range(4096);
    b.on_ack(0, 4096, false);
    let cap = b.data.capacity();
    for i in 0..1000u64 {
        b.write(&[1; 100]);
        let r = b.next_range(1200).unwrap();
        b.on_ack(r.offset, r.len, false);
        assert_eq!(r.offset, 4096 + i * 100);
    }
    assert_eq!(b.data.capacity(), cap);
}

/// One step of a simulated sender.
#[derive(Clone, Debug)]
enum Op {
    Write(usize),
    Send(usize),
    /// Resolve the in-flight frame at this index (modulo), acked or lost.
    Resolve(usize, bool),
    /// Declare the frame at this index lost but keep it in flight: it may still be
    /// acknowledged later, while its retransmission is in flight.
    Spurious(usize),
    Finish,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        2 => (0usize..300).prop_map(Op::Write),
        3 => (0usize..200).prop_map(Op::Send),
        4 => (any::<usize>(), any::<bool>()).prop_map(|(i, a)| Op::Resolve(i, a)),
        1 => any::<usize>().prop_map(Op::Spurious),
        1 => Just(Op::Finish),
    ]
}

/// The sender-side model: which bytes were acked, which were ever sent.
struct Sim {
    b: SendBuffer,
    written: Vec<u8>,
    finished: bool,
    in_flight: Vec<(SendRange, Vec<u8>)>,
    acked: Vec<bool>,
    fin_acked: bool,
    rx: RecvBuffer,
    rx_fin: Option<u64>,
}

impl Sim {
    fn send(&mut self, max: usize) {
        let Some(r) = self.b.next_range(max) else {
            assert!(max == 0 || !self.b.has_pending());
            return;
        };
        assert!(r.len <= max || (r.len == 0 && r.fin));
        let end = r.offset as usize + r.len;
        assert!(end <= self.written.len());
        assert!(
            !self.acked[r.offset as usize..end].iter().any(|&a| a),
            "sent acked bytes {r:?}"
        );
        if r.fin {
            assert!(self.finished && end == self.written.len());
            assert!(!self.fin_acked, "sent an acked FIN");
        }
        assert!(r.len > 0 || r.fin, "empty range without FIN");
        let mut bytes = Vec::new();
        self.b.copy_range(r.offset, r.len, &mut bytes);
        assert_eq!(bytes, self.written[r.offset as usize..end]);
        self.in_flight.push((r, bytes));
    }

    fn resolve(&mut self, i: usize, ack: bool) {
        if self.in_flight.is_empty() {
            return;
        }
        let (r, bytes) = self.in_flight.swap_remove(i % self.in_flight.len());
        if ack {
            self.rx.insert(r.offset, &bytes);
            if r.fin {
                self.rx_fin = Some(r.offset + r.len as u64);
                self.fin_acked = true;
            }
            for a in &mut self.acked[r.offset as usize..r.offset as usize + r.len] {
                *a = true;
            }
            let done = self.b.on_ack(r.offset, r.len, r.fin);
            let all = self.acked.iter().all(|&a| a) && (!self.finished || self.fin_acked);
            assert_eq!(done, all);
        } else {
            self.b.on_lost(r.offset, r.len, r.fin);
        }
        // Only what was written and not acked is held.
        let unacked_from = self
            .acked
            .iter()
            .position(|&a| !a)
            .unwrap_or(self.acked.len());
        assert_eq!(self.b.buffered(), self.written.len() - unacked_from);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn random_interleavings_deliver_the_exact_bytes(
        ops in proptest::collection::vec(op(), 0..200),
        seed in any::<u8>(),
    ) {
        let mut sim = Sim {
            b: SendBuffer::new(),
            written: Vec::new(),
            finished: false,
            in_flight: Vec::new(),
            acked: Vec::new(),
            fin_acked: false,
            rx: RecvBuffer::new(),
            rx_fin: None,
        };
        let mut next_byte = seed;
        for op in ops {
            match op {
                Op::Write(n) if !sim.finished => {
                    let data: Vec<u8> = (0..n).map(|_| { next_byte = next_byte.wrapping_add(1); next_byte }).collect();
                    sim.b.write(&data);
                    sim.written.extend_from_slice(&data);
                    sim.acked.resize(sim.written.len(), false);
                }
                Op::Write(_) => {}
                Op::Send(max) => sim.send(max),
                Op::Resolve(i, ack) => sim.resolve(i, ack),
                Op::Spurious(i) if !sim.in_flight.is_empty() => {
                    let (r, _) = &sim.in_flight[i % sim.in_flight.len()];
                    sim.b.on_lost(r.offset, r.len, r.fin);
                }
                Op::Spurious(_) => {}
                Op::Finish => {
                    sim.b.finish();
                    sim.finished = true;
                }
            }
            prop_assert_eq!(sim.b.written(), sim.written.len() as u64);
        }
        // Drain: finish, then send everything and keep losing some until all is acked.
        sim.b.finish();
        sim.finished = true;
        let mut round = 0usize;
        while sim.b.has_pending() || !sim.in_flight.is_empty() {
            while sim.b.has_pending() {
                sim.send(97);
            }
            while !sim.in_flight.is_empty() {
                // Lose some early on, then ack everything.
                let ack = round > 3 || sim.in_flight.len() % 3 != 0;
                sim.resolve(round.wrapping_mul(7), ack);
                round += 1;
            }
        }
        prop_assert_eq!(sim.b.buffered(), 0);
        prop_assert!(sim.b.on_ack(0, 0, false));
        prop_assert_eq!(sim.rx_fin, Some(sim.written.len() as u64));
        let mut out = vec![0; sim.written.len() + 1];
        let n = sim.rx.read(&mut out);
        prop_assert_eq!(&out[..n], &sim.written[..]);
    }
}

/// Probes go on from a cursor through what was lost, then new data, then
/// wrap to the lowest lost offset; acknowledged bytes are never chosen.
#[test]
fn next_range_from_cycles_through_lost_data() {
    let mut b = SendBuffer::new();
    b.write(&[7; 5000]);
    assert_eq!(b.next_range(4000), Some(range(0, 4000, false, false)));
    b.on_ack(1000, 1000, false);
    b.on_lost(0, 1000, false);
    b.on_lost(2000, 2000, false);
    // From inside a lost range: its rest first.
    assert_eq!(
        b.next_range_from(2500, 600),
        Some(range(2500, 600, false, true))
    );
    assert_eq!(
        b.next_range_from(3100, 5000),
        Some(range(3100, 900, false, true))
    );
    // Nothing lost past 4000: the new data.
    assert_eq!(
        b.next_range_from(4000, 5000),
        Some(range(4000, 1000, false, false))
    );
    // Then wrap: the lowest lost bytes, skipping the acknowledged 1000..2000.
    assert_eq!(
        b.next_range_from(5000, 5000),
        Some(range(0, 1000, false, true))
    );
    assert_eq!(
        b.next_range_from(1000, 5000),
        Some(range(2000, 500, false, true))
    );
    assert_eq!(b.next_range_from(0, 5000), None);
}
