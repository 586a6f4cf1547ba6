//! Per-space store of sent packets, indexed by packet number.
//!
//! Packet numbers only grow, so the store is a `VecDeque` whose slot `i` holds packet
//! `base + i`: appending is a push, lookup is an index, and acknowledged or lost
//! packets leave tombstones that are popped once they reach the front.
//!
//! Cost of an ACK: the ranges are clipped to `[base, largest sent]`, and after every
//! loss detection no live packet more than `packet_threshold` below the largest
//! acknowledged survives (it is lost), so `base` trails the largest acknowledged by
//! at most that much. An ACK therefore walks only its newly acknowledged packets,
//! the few reordering holes, and one slot per range — never the whole window, even
//! though every ACK repeats old ranges.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::SentPacket;

/// Non-in-flight packets (ACK-only) beyond this many tracked slots are forgotten
/// from the front: a peer that never acknowledges them must not grow the store.
const MAX_IDLE_SLOTS: usize = 1024;

enum Slot<T> {
    Sent(SentPacket<T>),
    Acked,
    Lost,
    /// A packet number the connection skipped (never sent).
    Skipped,
}

/// What one loss-detection pass found.
#[derive(Debug, Default)]
pub(super) struct LossScan {
    /// When the next packet could be declared lost by the time threshold.
    pub(super) loss_time: Option<Instant>,
    /// Send time of the latest in-flight lost packet.
    pub(super) largest_lost_sent: Option<Instant>,
    /// In-flight bytes declared lost (PMTU probes aside).
    pub(super) lost_bytes: u64,
    /// The longest span of ack-eliciting lost packets, sent after `first_sample`,
    /// with no acknowledged packet between them (persistent-congestion candidate).
    pub(super) pc_span: Option<(Instant, Instant)>,
}

pub(super) struct SentStore<T> {
    slots: VecDeque<Slot<T>>,
    /// Packet number of `slots[0]`.
    base: u64,
    /// One past the largest packet number sent.
    next_pn: u64,
    ack_eliciting_in_flight: usize,
    bytes_in_flight: u64,
}

impl<T> SentStore<T> {
    /// Heap held by the slots.
    pub(super) fn heap_bytes(&self) -> usize {
        self.slots.capacity() * std::mem::size_of::<Slot<T>>()
    }

    /// An idle connection: forget the records at the front that no longer
    /// matter (packets not in flight, i.e. ACK-only ones, which a peer need
    /// never acknowledge), then free the storage if nothing is left.
    /// Returns whether nothing is left.
    pub(super) fn shrink_idle(&mut self) -> bool {
        while let Some(Slot::Sent(p)) = self.slots.front() {
            if p.in_flight {
                break;
            }
            self.slots.pop_front();
            self.base += 1;
            self.compact();
        }
        self.compact();
        if self.slots.is_empty() {
            self.slots = VecDeque::new();
            return true;
        }
        false
    }

    pub(super) fn new() -> Self {
        SentStore {
            slots: VecDeque::new(),
            base: 0,
            next_pn: 0,
            ack_eliciting_in_flight: 0,
            bytes_in_flight: 0,
        }
    }

    /// One past the largest packet number sent (0 if none).
    pub(super) fn next_pn(&self) -> u64 {
        self.next_pn
    }

    pub(super) fn bytes_in_flight(&self) -> u64 {
        self.bytes_in_flight
    }

    pub(super) fn ack_eliciting_in_flight(&self) -> usize {
        self.ack_eliciting_in_flight
    }

    /// Record packet `pn`; numbers must increase. Returns false (dropping nothing
    /// but the call) if `pn` does not.
    pub(super) fn push(&mut self, pn: u64, packet: SentPacket<T>) -> bool {
        if pn < self.next_pn {
            return false;
        }
        if self.slots.is_empty() {
            self.base = pn;
        } else {
            // Numbers the connection skipped (RFC 9000 §21.4) stay as Skipped so an
            // ACK for them is detectably bogus.
            for _ in self.next_pn..pn {
                self.slots.push_back(Slot::Skipped);
            }
        }
        self.next_pn = pn + 1;
        if packet.in_flight {
            self.bytes_in_flight += u64::from(packet.size);
            if packet.ack_eliciting {
                self.ack_eliciting_in_flight += 1;
            }
        }
        self.slots.push_back(Slot::Sent(packet));
        self.expire_idle();
        true
    }

    /// Forget untracked-by-CC packets at the front once the store is long.
    fn expire_idle(&mut self) {
        while self.slots.len() > MAX_IDLE_SLOTS {
            match self.slots.front() {
                Some(Slot::Sent(p)) if !p.in_flight => {
                    self.slots.pop_front();
                    self.base += 1;
                    self.compact();
                }
                _ => break,
            }
        }
    }

    fn take(&mut self, index: usize, tombstone: Slot<T>) -> Option<SentPacket<T>> {
        let slot = self.slots.get_mut(index)?;
        if !matches!(slot, Slot::Sent(_)) {
            return None;
        }
        let Slot::Sent(p) = std::mem::replace(slot, tombstone) else {
            return None;
        };
        if p.in_flight {
            self.bytes_in_flight -= u64::from(p.size);
            if p.ack_eliciting {
                self.ack_eliciting_in_flight -= 1;
            }
        }
        Some(p)
    }

    /// Acknowledge `lo..=hi` (already checked to be below `next_pn`), appending
    /// newly acknowledged packets. Err(pn) if the range covers a skipped number.
    pub(super) fn ack_range(
        &mut self,
        lo: u64,
        hi: u64,
        acked: &mut Vec<(u64, SentPacket<T>)>,
    ) -> Result<(), u64> {
        // Numbers below `base` were all resolved (acked, lost or expired) already.
        let lo = lo.max(self.base);
        if lo > hi {
            return Ok(());
        }
        for pn in lo..=hi {
            let index = (pn - self.base) as usize;
            let Some(slot) = self.slots.get_mut(index) else {
                continue;
            };
            match slot {
                Slot::Sent(p) => {
                    if p.in_flight {
                        self.bytes_in_flight -= u64::from(p.size);
                        if p.ack_eliciting {
                            self.ack_eliciting_in_flight -= 1;
                        }
                    }
                    // Moved once into `acked`, not through `take`'s return
                    // value as well (~30 instructions a packet acknowledged).
                    if let Slot::Sent(p) = std::mem::replace(slot, Slot::Acked) {
                        acked.push((pn, p));
                    }
                }
                Slot::Skipped => return Err(pn),
                // Already acknowledged, or acknowledged after being declared lost.
                Slot::Acked | Slot::Lost => {}
            }
        }
        Ok(())
    }

    /// RFC 9002 A.10 for packets up to `largest_acked`: declare lost what is past
    /// either threshold, and find when the next one will be.
    pub(super) fn detect_lost(
        &mut self,
        largest_acked: u64,
        now: Instant,
        loss_delay: Duration,
        packet_threshold: u64,
        first_sample: Option<Instant>,
        lost: &mut Vec<(u64, SentPacket<T>)>,
    ) -> LossScan {
        let mut scan = LossScan::default();
        let mut run: Option<(Instant, Instant)> = None;
        let end = largest_acked.saturating_add(1).min(self.next_pn);
        for pn in self.base..end {
            let index = (pn - self.base) as usize;
            let Some(slot) = self.slots.get(index) else {
                break;
            };
            let time_sent = match slot {
                Slot::Sent(p) => p.time_sent,
                //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
                //# across all packet number spaces, none of the packets sent between
                //# the send times of these two packets are acknowledged;
                Slot::Acked => {
                    run = None;
                    continue;
                }
                Slot::Lost | Slot::Skipped => continue,
            };
            //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.10
            //# if (unacked.time_sent <= lost_send_time ||
            //#     largest_acked_packet[pn_space] >=
            //#       unacked.packet_number + kPacketThreshold):
            let too_old = now.saturating_duration_since(time_sent) >= loss_delay;
            if !too_old && largest_acked < pn.saturating_add(packet_threshold) {
                //= https://www.rfc-editor.org/rfc/rfc9002#section-6.1.2
                //# If packets sent prior to the largest acknowledged packet cannot
                //# yet be declared lost, then a timer SHOULD be set for the
                //# remaining time.
                if let Some(at) = time_sent.checked_add(loss_delay) {
                    scan.loss_time = Some(scan.loss_time.map_or(at, |t| t.min(at)));
                }
                continue;
            }
            let Some(p) = self.take(index, Slot::Lost) else {
                continue;
            };
            //= https://www.rfc-editor.org/rfc/rfc9000#section-14.4
            //# Loss of
            //# a QUIC packet that is carried in a PMTU probe is therefore not a
            //# reliable indication of congestion and SHOULD NOT trigger a congestion
            //# control reaction; see Item 7 in Section 3 of [DPLPMTUD].
            let congestion = p.in_flight && !p.mtu_probe;
            if congestion {
                scan.lost_bytes += u64::from(p.size);
                scan.largest_lost_sent = Some(p.time_sent);
            }
            //= https://www.rfc-editor.org/rfc/rfc9002#section-7.6.2
            //# These two packets MUST be ack-eliciting, since a receiver is required
            //# to acknowledge only ack-eliciting packets within its acknowledgment
            //# delay;
            if congestion && p.ack_eliciting && first_sample.is_some_and(|f| p.time_sent > f) {
                let first = run.map_or(p.time_sent, |(first, _)| first);
                run = Some((first, p.time_sent));
                let span = p.time_sent.saturating_duration_since(first);
                let longer = scan
                    .pc_span
                    .is_none_or(|(a, b)| span > b.saturating_duration_since(a));
                if longer {
                    scan.pc_span = run;
                }
            }
            lost.push((pn, p));
        }
        scan
    }

    /// Pop resolved slots off the front.
    pub(super) fn compact(&mut self) {
        while let Some(front) = self.slots.front() {
            if matches!(front, Slot::Sent(_)) {
                break;
            }
            self.slots.pop_front();
            self.base += 1;
        }
        if self.slots.is_empty() {
            self.base = self.next_pn;
        }
    }

    /// Remove every unresolved packet (keys discarded).
    pub(super) fn drain(&mut self, out: &mut Vec<(u64, SentPacket<T>)>) {
        let base = self.base;
        for (i, slot) in self.slots.drain(..).enumerate() {
            if let Slot::Sent(p) = slot {
                out.push((base + i as u64, p));
            }
        }
        self.base = self.next_pn;
        self.bytes_in_flight = 0;
        self.ack_eliciting_in_flight = 0;
    }

    /// [`drain`](Self::drain) for a space that is over for good: its storage
    /// goes too (the numbers sent are still known, so a late ACK finds them
    /// resolved rather than never sent).
    pub(super) fn drain_for_good(&mut self, out: &mut Vec<(u64, SentPacket<T>)>) {
        self.drain(out);
        self.slots = VecDeque::new();
    }

    /// Unresolved packets in packet-number order.
    pub(super) fn iter(&self) -> impl Iterator<Item = (u64, &SentPacket<T>)> + '_ {
        let base = self.base;
        self.slots
            .iter()
            .enumerate()
            .filter_map(move |(i, slot)| match slot {
                Slot::Sent(p) => Some((base + i as u64, p)),
                _ => None,
            })
    }

    /// Slots held, resolved or not.
    #[cfg(test)]
    pub(super) fn tracked(&self) -> usize {
        self.slots.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::recovery::delivery::DeliveryRate;
    use crate::recovery::test_epoch;

    fn packet(t: Instant, in_flight: bool) -> SentPacket<u64> {
        SentPacket {
            time_sent: t,
            size: 1000,
            ack_eliciting: in_flight,
            in_flight,
            ecn: None,
            mtu_probe: false,
            delivery: DeliveryRate::default().on_sent(t, true),
            data: 7,
        }
    }

    #[test]
    fn append_ack_compact() {
        let t = test_epoch();
        let mut s = SentStore::new();
        for pn in 0..10 {
            assert!(s.push(pn, packet(t, true)));
        }
        assert_eq!(
            (s.bytes_in_flight(), s.ack_eliciting_in_flight()),
            (10_000, 10)
        );
        let mut acked = Vec::new();
        s.ack_range(0, 4, &mut acked).unwrap();
        s.ack_range(0, 4, &mut acked).unwrap(); // repeated: nothing new
        assert_eq!(
            acked.iter().map(|a| a.0).collect::<Vec<_>>(),
            vec![0, 1, 2, 3, 4]
        );
        s.compact();
        assert_eq!((s.base, s.tracked()), (5, 5));
        s.ack_range(7, 7, &mut acked).unwrap();
        s.compact();
        assert_eq!(
            (s.base, s.tracked()),
            (5, 5),
            "hole at 5 keeps the tombstone"
        );
        assert_eq!(s.iter().map(|p| p.0).collect::<Vec<_>>(), vec![5, 6, 8, 9]);
        assert_eq!(s.bytes_in_flight(), 4000);
    }

    #[test]
    fn skipped_numbers_are_detected() {
        let t = test_epoch();
        let mut s = SentStore::new();
        s.push(0, packet(t, true));
        s.push(2, packet(t, true));
        assert!(!s.push(1, packet(t, true)), "numbers must grow");
        let mut acked = Vec::new();
        assert_eq!(s.ack_range(0, 2, &mut acked), Err(1));
    }

    #[test]
    fn ack_only_packets_cannot_grow_the_store() {
        let t = test_epoch();
        let mut s = SentStore::new();
        for pn in 0..10_000 {
            s.push(pn, packet(t, false));
        }
        assert_eq!(s.tracked(), MAX_IDLE_SLOTS);
        assert_eq!(s.base, 10_000 - MAX_IDLE_SLOTS as u64);
        // In-flight packets at the front are never expired.
        let mut s = SentStore::new();
        s.push(0, packet(t, true));
        for pn in 1..2000 {
            s.push(pn, packet(t, false));
        }
        assert_eq!(s.tracked(), 2000);
        let mut acked = Vec::new();
        s.ack_range(0, 0, &mut acked).unwrap();
        s.compact();
        s.push(2000, packet(t, false));
        assert_eq!(s.tracked(), MAX_IDLE_SLOTS);
    }
}
