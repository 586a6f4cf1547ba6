//! Per packet-number-space state: keys, packet numbers, the CRYPTO stream and
//! what we owe the peer in ACK frames.

use std::ops::{Index, IndexMut};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use crate::crypto::Keys;
use crate::frame::EcnCounts;
use crate::range_set::RangeSet;
use crate::stream::{RecvBuffer, SendBuffer};
use crate::types::{EcnCodepoint, SpaceId};

/// Most ACK ranges we remember per space; older ones are forgotten (the peer will
/// have declared those packets lost or received their acknowledgement long ago).
const MAX_ACK_RANGES: usize = 256;

/// One packet-number space.
pub(crate) struct PacketSpace {
    /// Initial and Handshake keys (1-RTT keys live in the connection).
    pub(crate) keys: Option<Keys>,
    /// Next packet number to send.
    pub(crate) next_pn: u64,
    /// The CRYPTO stream, allocated on first use and dropped with the
    /// space's keys: an established connection holds only the 1-RTT one,
    /// and only if it carried data (tickets).
    pub(crate) crypto: Option<Box<CryptoStreams>>,
    /// Where the CRYPTO stream's two directions ended when it was parked
    /// (send, receive): an idle connection whose tickets were acknowledged
    /// keeps only these.
    crypto_parked: [u64; 2],
    /// What we must acknowledge.
    pub(crate) ack: AckState,
    /// Probe packets requested by a PTO.
    pub(crate) probes: u8,
    /// Where the last CRYPTO data sent ended: a probe goes on from there
    /// (RFC 9002 §6.2.4).
    pub(crate) probe_cursor: u64,
    /// The space's keys were dropped for good.
    pub(crate) discarded: bool,
    /// Server, Initial space: times our handshake data went again early,
    /// on a client's Initial that showed it missing (RFC 9002 §6.2.3).
    pub(crate) early_resends: u8,
}

/// The three packet spaces. Initial and Handshake share one box, dropped once
/// both are discarded (RFC 9001 §4.9): an established connection keeps only
/// the Application space, inline, so the 1-RTT path stays a field access.
pub(crate) struct Spaces {
    data: PacketSpace,
    early: Option<Box<[PacketSpace; 2]>>,
}

/// What a dropped Initial or Handshake space reads as.
static DISCARDED: LazyLock<PacketSpace> = LazyLock::new(PacketSpace::discarded);

impl Spaces {
    pub(crate) fn new() -> Self {
        Spaces {
            data: PacketSpace::new(),
            early: Some(Box::new([PacketSpace::new(), PacketSpace::new()])),
        }
    }

    /// Free the Initial and Handshake spaces if both are discarded.
    pub(crate) fn release_early(&mut self) {
        if self
            .early
            .as_ref()
            .is_some_and(|e| e.iter().all(|s| s.discarded))
        {
            self.early = None;
        }
    }

    /// Whether the Initial and Handshake spaces are still held.
    #[cfg(test)]
    pub(crate) fn holds_early(&self) -> bool {
        self.early.is_some()
    }

    pub(crate) fn iter(&self) -> impl Iterator<Item = &PacketSpace> {
        self.early
            .iter()
            .flat_map(|e| e.iter())
            .chain(std::iter::once(&self.data))
    }

    pub(crate) fn iter_mut(&mut self) -> impl Iterator<Item = &mut PacketSpace> {
        self.early
            .iter_mut()
            .flat_map(|e| e.iter_mut())
            .chain(std::iter::once(&mut self.data))
    }
}

// Inline with the Application space first: every 1-RTT packet in and out
// indexes it several times, and an out-of-line call per access cost ~100
// instructions per request (callgrind, persistent h3).
impl Index<usize> for Spaces {
    type Output = PacketSpace;

    #[inline]
    fn index(&self, i: usize) -> &PacketSpace {
        if i == SpaceId::Data.index() {
            return &self.data;
        }
        self.early_space(i)
    }
}

impl IndexMut<usize> for Spaces {
    #[inline]
    fn index_mut(&mut self, i: usize) -> &mut PacketSpace {
        if i == SpaceId::Data.index() {
            return &mut self.data;
        }
        self.early_space_mut(i)
    }
}

impl Spaces {
    /// Whether the Initial and Handshake spaces are both gone (read as
    /// discarded): an established connection's only space is Application.
    #[inline]
    pub(crate) fn early_dropped(&self) -> bool {
        self.early.is_none()
    }

    #[cold]
    fn early_space(&self, i: usize) -> &PacketSpace {
        match &self.early {
            Some(e) => &e[i],
            None => &DISCARDED,
        }
    }

    #[cold]
    fn early_space_mut(&mut self, i: usize) -> &mut PacketSpace {
        // Rare: a write to a space already gone. It comes back discarded
        // and goes again at the next discard or idle trim.
        let e = self
            .early
            .get_or_insert_with(|| Box::new([PacketSpace::discarded(), PacketSpace::discarded()]));
        &mut e[i]
    }
}

/// A space's CRYPTO stream, both directions.
pub(crate) struct CryptoStreams {
    /// Outgoing handshake bytes.
    pub(crate) send: SendBuffer,
    /// Incoming handshake bytes, reassembled.
    pub(crate) recv: RecvBuffer,
}

impl PacketSpace {
    /// The CRYPTO stream, allocated now if it is not yet.
    pub(crate) fn crypto_mut(&mut self) -> &mut CryptoStreams {
        let [send, recv] = self.crypto_parked;
        self.crypto.get_or_insert_with(|| {
            Box::new(CryptoStreams {
                send: SendBuffer::resumed_at(send),
                recv: RecvBuffer::resumed_at(recv),
            })
        })
    }

    /// Keep only the CRYPTO stream's offsets if nothing in it is in flight,
    /// unacknowledged or unread; otherwise only give back empty storage.
    pub(crate) fn park_crypto(&mut self) {
        let Some(c) = self.crypto.as_mut() else {
            return;
        };
        match (c.send.all_acked_at(), c.recv.all_read_at()) {
            (Some(send), Some(recv)) => {
                self.crypto_parked = [send, recv];
                self.crypto = None;
            }
            _ => c.send.shrink_empty(),
        }
    }

    /// Whether CRYPTO data waits to be sent.
    pub(crate) fn crypto_pending(&self) -> bool {
        self.crypto.as_ref().is_some_and(|c| c.send.has_pending())
    }

    /// Whether CRYPTO data we sent is not all acknowledged.
    pub(crate) fn crypto_unacked(&self) -> bool {
        self.crypto.as_ref().is_some_and(|c| c.send.buffered() > 0)
    }

    /// Heap held by the CRYPTO stream.
    pub(crate) fn crypto_memory(&self) -> usize {
        self.crypto.as_ref().map_or(0, |c| {
            std::mem::size_of::<CryptoStreams>() + c.recv.allocated() + c.send.allocated()
        })
    }

    /// A space whose keys were dropped for good.
    fn discarded() -> Self {
        PacketSpace {
            discarded: true,
            ..PacketSpace::new()
        }
    }

    pub(crate) fn new() -> Self {
        PacketSpace {
            keys: None,
            next_pn: 0,
            crypto: None,
            crypto_parked: [0; 2],
            ack: AckState::new(),
            probes: 0,
            probe_cursor: 0,
            discarded: false,
            early_resends: 0,
        }
    }
}

/// Receive-side ACK bookkeeping (RFC 9000 §13.2).
pub(crate) struct AckState {
    /// Packet numbers to report.
    pub(crate) ranges: RangeSet,
    /// Largest packet number received and when (for ACK Delay).
    pub(crate) largest: Option<(u64, Instant)>,
    /// Packets below this are treated as duplicates: their acknowledgement was
    /// itself acknowledged and the ranges forgotten.
    pub(crate) floor: u64,
    /// Ack-eliciting packets received since we last sent an ACK.
    pub(crate) unacked_eliciting: u64,
    /// New packet numbers arrived since the last ACK we sent.
    pub(crate) dirty: bool,
    /// An ACK must go out in the next packet.
    pub(crate) immediate: bool,
    /// Send an ACK by this time at the latest.
    pub(crate) deadline: Option<Instant>,
    /// ECN counts of received packets.
    pub(crate) ecn: EcnCounts,
    /// Whether any ECN-marked packet was received (send ACK_ECN then).
    pub(crate) ecn_seen: bool,
}

/// How eagerly to acknowledge, as negotiated (RFC 9000 defaults, or ACK_FREQUENCY).
#[derive(Clone, Copy, Debug)]
pub(crate) struct AckPolicy {
    /// Ack-eliciting packets received before an ACK is due.
    pub(crate) threshold: u64,
    /// Longest an ACK may be delayed.
    pub(crate) max_delay: Duration,
    /// Out-of-order arrivals trigger an immediate ACK when the gap exceeds this
    /// (0: never; 1: any gap, the RFC 9000 default).
    pub(crate) reordering_threshold: u64,
}

impl AckState {
    pub(crate) fn new() -> Self {
        AckState {
            ranges: RangeSet::new(),
            largest: None,
            floor: 0,
            unacked_eliciting: 0,
            dirty: false,
            immediate: false,
            deadline: None,
            ecn: EcnCounts::default(),
            ecn_seen: false,
        }
    }

    /// Largest packet number received, for packet-number decoding.
    pub(crate) fn largest_pn(&self) -> Option<u64> {
        self.largest.map(|(pn, _)| pn)
    }

    /// Whether `pn` was already received (or is too old to tell).
    pub(crate) fn is_duplicate(&self, pn: u64) -> bool {
        pn < self.floor || self.ranges.contains(pn)
    }

    /// Record a packet that decrypted and whose frames were processed.
    pub(crate) fn on_packet(
        &mut self,
        space: SpaceId,
        pn: u64,
        ack_eliciting: bool,
        ecn: Option<EcnCodepoint>,
        now: Instant,
        policy: &AckPolicy,
    ) {
        let previous_largest = self.largest_pn();
        self.ranges.insert_one(pn);
        if self.ranges.len() > MAX_ACK_RANGES {
            self.ranges.truncate_low(MAX_ACK_RANGES);
        }
        self.dirty = true;
        if previous_largest.is_none_or(|l| pn > l) {
            self.largest = Some((pn, now));
        }
        match ecn {
            Some(EcnCodepoint::Ect0) => self.ecn.ect0 += 1,
            Some(EcnCodepoint::Ect1) => self.ecn.ect1 += 1,
            Some(EcnCodepoint::Ce) => {
                self.ecn.ce += 1;
                //= https://www.rfc-editor.org/rfc/rfc9000#section-13.2.1
                //# An endpoint SHOULD immediately acknowledge ... packets marked with ECN CE
                self.immediate |= ack_eliciting;
            }
            None => {}
        }
        self.ecn_seen |= ecn.is_some();
        if !ack_eliciting {
            return;
        }
        self.unacked_eliciting += 1;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-13.2.1
        //# When the ACK frame is sent, an endpoint SHOULD ... [acknowledge] Initial and
        //# Handshake packets immediately.
        if space != SpaceId::Data || self.unacked_eliciting >= policy.threshold {
            self.immediate = true;
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-13.2.1
        //# In order to assist loss detection at the sender, an endpoint SHOULD
        //# generate and send an ACK frame without delay when it receives an ack-
        //# eliciting packet either: when the received packet has a packet number
        //# less than another ack-eliciting packet that has been received, or when
        //# the packet has a packet number larger than the highest-numbered ack-
        //# eliciting packet that has been received and there are missing packets
        //# between that packet and this packet.
        if policy.reordering_threshold > 0 {
            if let Some(l) = previous_largest {
                let out_of_order = pn < l || pn - l > policy.reordering_threshold;
                self.immediate |= out_of_order;
            }
        }
        if self.deadline.is_none() {
            self.deadline = Some(now + policy.max_delay);
        }
    }

    /// Whether an ACK-only packet is due now.
    pub(crate) fn due(&self, now: Instant) -> bool {
        self.dirty && (self.immediate || self.deadline.is_some_and(|d| d <= now))
    }

    /// An ACK frame was written: reset the triggers.
    pub(crate) fn on_ack_sent(&mut self) {
        self.unacked_eliciting = 0;
        self.immediate = false;
        self.deadline = None;
        self.dirty = false;
    }

    /// The peer acknowledged a packet carrying our ACK whose largest value was
    /// `largest`: it knows about everything up to there, so stop repeating it.
    pub(crate) fn on_ack_acked(&mut self, largest: u64) {
        if largest < self.floor {
            return;
        }
        self.ranges.remove(0..largest + 1);
        self.floor = largest + 1;
    }

    /// The delayed-ACK timer.
    pub(crate) fn timer(&self) -> Option<Instant> {
        if self.dirty && !self.immediate {
            self.deadline
        } else {
            None
        }
    }
}

#[cfg(test)]
mod spaces_tests {
    use super::*;

    #[test]
    fn early_spaces_go_once_both_are_discarded() {
        let mut s = Spaces::new();
        s[SpaceId::Data.index()].next_pn = 9;
        s[SpaceId::Initial.index()].discarded = true;
        s.release_early();
        assert!(s.holds_early(), "Handshake still in use");
        s[SpaceId::Handshake.index()].discarded = true;
        s.release_early();
        assert!(!s.holds_early());
        // Dropped spaces read as discarded, without keys.
        for id in [SpaceId::Initial, SpaceId::Handshake] {
            assert!(s[id.index()].discarded && s[id.index()].keys.is_none());
        }
        assert_eq!(s[SpaceId::Data.index()].next_pn, 9);
        assert_eq!(s.iter().count(), 1);
        // A late write brings them back, discarded; the next trim drops them.
        s[SpaceId::Initial.index()].probes = 1;
        assert!(s.holds_early() && s[SpaceId::Initial.index()].discarded);
        assert_eq!(s.iter_mut().count(), 3);
        s.release_early();
        assert!(!s.holds_early());
    }

    #[test]
    fn a_parked_crypto_stream_comes_back_at_its_offsets() {
        let mut s = PacketSpace::new();
        let c = s.crypto_mut();
        c.send.write(&[7; 300]);
        c.recv.insert(0, &[1; 40]);
        let r = c.send.next_range(1000).unwrap();
        assert_eq!((r.offset, r.len), (0, 300));
        // In flight and unread: only empty storage may go.
        s.park_crypto();
        assert!(s.crypto.is_some());
        let c = s.crypto_mut();
        c.send.on_ack(0, 300, false);
        c.recv.read(&mut [0; 64]);
        s.park_crypto();
        assert!(s.crypto.is_none(), "only the offsets are kept");
        let c = s.crypto_mut();
        assert_eq!(c.recv.read_offset(), 40);
        assert!(!c.send.has_pending());
        c.send.write(&[8; 10]);
        let r = c.send.next_range(1000).unwrap();
        assert_eq!((r.offset, r.len), (300, 10), "new tickets go on from 300");
        assert_eq!(c.recv.insert(40, &[2; 5]), 5);
    }
}
