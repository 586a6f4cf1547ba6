//! A sender and a receiver joined by a lossy, reordering channel, with stream- and
//! connection-level flow control: everything written arrives exactly, and no limit is
//! ever violated.

use super::*;
use proptest::prelude::*;

struct Pair {
    tx: SendStream,
    tx_flow: SendFlow,
    rx: RecvStream,
    rx_flow: RecvFlow,
    /// Frames on the wire: range and its bytes.
    wire: Vec<(SendRange, Vec<u8>)>,
    written: usize,
    got: Vec<u8>,
}

impl Pair {
    fn write(&mut self, data: &[u8]) {
        if self.tx.state() != SendState::Send {
            return;
        }
        let n = self
            .tx
            .write(&data[self.written..], self.tx_flow.credit())
            .unwrap();
        self.tx_flow.consume(n as u64);
        if self.written + n < data.len() && n as u64 == self.tx_flow.credit() {
            self.tx_flow.set_blocked();
        }
        self.written += n;
        if self.written == data.len() && self.tx.state() == SendState::Send {
            self.tx.finish().unwrap();
        }
    }

    fn send(&mut self, max: usize) {
        if let Some(r) = self.tx.next_range(max) {
            let mut bytes = Vec::new();
            self.tx.copy_range(r.offset, r.len, &mut bytes);
            self.wire.push((r, bytes));
        }
    }

    /// One frame leaves the wire: delivered (and acked) or lost.
    fn deliver(&mut self, pick: usize, lose: bool) {
        if self.wire.is_empty() {
            return;
        }
        let (r, bytes) = self.wire.swap_remove(pick % self.wire.len());
        if lose {
            self.tx.on_lost(r.offset, r.len, r.fin);
            return;
        }
        let grown = self.rx.on_data(r.offset, &bytes, r.fin).unwrap();
        self.rx_flow.on_received(grown).unwrap();
        self.tx.on_ack(r.offset, r.len, r.fin);
    }

    fn read(&mut self, max: usize) -> bool {
        let before = self.rx.read_offset();
        let mut buf = vec![0; max];
        let finished = match self.rx.read(&mut buf).unwrap() {
            ReadOutcome::Data(n) => {
                self.got.extend_from_slice(&buf[..n]);
                false
            }
            ReadOutcome::Blocked => false,
            ReadOutcome::Finished => true,
        };
        self.rx_flow.on_consumed(self.rx.read_offset() - before);
        if let Some(limit) = self.rx.take_max_stream_data(None) {
            self.tx.on_max_stream_data(limit);
        }
        if let Some(limit) = self.rx_flow.take_max_data(None) {
            self.tx_flow.on_max_data(limit);
        }
        finished
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn lossy_reordering_transfer_with_flow_control(
        len in 0usize..20_000,
        stream_window in 1u64..5000,
        conn_window in 1u64..5000,
        buffer_limit in 1usize..5000,
        steps in proptest::collection::vec((0usize..1500, any::<usize>(), 0u8..10, 1usize..3000), 1..50),
    ) {
        let data: Vec<u8> = (0..len).map(|i| (i * 13 % 256) as u8).collect();
        let mut p = Pair {
            tx: SendStream::new(stream_window, buffer_limit),
            tx_flow: SendFlow::new(conn_window),
            rx: RecvStream::new(stream_window),
            rx_flow: RecvFlow::new(conn_window, conn_window),
            wire: Vec::new(),
            written: 0,
            got: Vec::new(),
        };
        let mut finished = false;
        for i in 0..100_000usize {
            let (max, pick, loss, read) = steps[i % steps.len()];
            // Lose frames only early on, so the transfer always completes.
            let lose = i < 2000 && loss < 2;
            p.write(&data);
            p.send(max);
            p.send(max / 2 + 1);
            p.deliver(pick.wrapping_add(i), lose);
            if p.read(read) {
                finished = true;
                break;
            }
            prop_assert!(p.rx.buffer().buffered() as u64 <= stream_window);
        }
        prop_assert!(finished, "transfer stalled");
        while !p.wire.is_empty() {
            p.deliver(0, false);
        }
        prop_assert_eq!(p.got, data);
        prop_assert_eq!(p.tx.state(), SendState::DataRecvd);
        prop_assert_eq!(p.rx.state(), RecvState::DataRead);
        prop_assert_eq!(p.tx.buffered(), 0);
    }
}
