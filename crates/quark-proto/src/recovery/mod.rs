//! Loss detection and recovery (RFC 9002): RTT estimation, per-space tracking of sent
//! packets, packet- and time-threshold loss detection with RACK-style adaptive
//! thresholds, spurious-loss undo, PTO, persistent congestion, ECN validation
//! (RFC 9000 §13.4.2), delivery-rate sampling, and the congestion controller and
//! pacer it drives.
//!
//! Sent packets carry an opaque `T` (what the connection put in them, for
//! retransmission); acknowledged and lost packets are handed back through caller-owned
//! vectors so nothing allocates per packet.

mod ack;
mod delivery;
mod ecn;
mod loss;
pub mod pacer;
mod reorder;
pub mod rtt;
mod send;
mod sent;
mod space_set;
mod spurious;
mod timer;

use std::time::{Duration, Instant};

pub use delivery::RateSample;
pub use ecn::EcnState;
pub use pacer::Pacer;
pub use rtt::RttEstimator;

use crate::cc::{CcAlgorithm, Controller};
use crate::types::{EcnCodepoint, SpaceId};
use delivery::{DeliveryRate, DeliveryStamp};
use ecn::EcnValidator;
use reorder::Reordering;
use sent::SentStore;
use space_set::SpaceSet;
use spurious::{Episodes, LostHistory, LostRecord};

/// Recovery settings.
#[derive(Clone, Debug)]
pub struct RecoveryConfig {
    /// RTT assumed before the first sample (RFC 9002: 333 ms).
    pub initial_rtt: Duration,
    /// Initial packet reordering threshold (RFC 9002 kPacketThreshold: 3).
    pub packet_threshold: u64,
    /// Initial time reordering threshold as a fraction of RTT (kTimeThreshold: 9/8).
    pub time_threshold: f64,
    /// Raise the thresholds when losses turn out spurious (RACK-style), and let
    /// them decay back when reordering stops.
    pub adaptive_reordering: bool,
    /// Mark packets ECT(0) when [`Recovery::ecn_codepoint`] says so, validating the
    /// path (RFC 9000 §13.4.2). Off: never mark.
    pub ecn: bool,
    /// Congestion controller.
    pub cc: CcAlgorithm,
    /// Maximum datagram size used for window arithmetic.
    pub max_datagram_size: u64,
    /// Whether to pace.
    pub pacing: bool,
}

impl Default for RecoveryConfig {
    fn default() -> Self {
        RecoveryConfig {
            initial_rtt: Duration::from_millis(333),
            packet_threshold: 3,
            time_threshold: 9.0 / 8.0,
            adaptive_reordering: true,
            ecn: true,
            cc: CcAlgorithm::Cubic,
            max_datagram_size: 1200,
            pacing: true,
        }
    }
}

/// One packet in flight.
#[derive(Clone, Debug)]
pub struct SentPacket<T> {
    /// When it was sent.
    pub time_sent: Instant,
    /// Bytes on the wire (UDP payload).
    pub size: u16,
    /// Contains a frame other than ACK, PADDING or CONNECTION_CLOSE.
    pub ack_eliciting: bool,
    /// Counts toward bytes in flight (ack-eliciting or PADDING).
    pub in_flight: bool,
    /// The ECN codepoint of the datagram that carried it.
    pub ecn: Option<EcnCodepoint>,
    /// A PMTU probe: its loss is no congestion signal.
    pub mtu_probe: bool,
    /// Delivery-rate state when it was sent.
    /// Only when the controller samples the delivery rate (else `NONE`).
    pub(crate) delivery: DeliveryStamp,
    /// What the connection put in it.
    pub data: T,
}

/// How a packet was sent, for [`Recovery::on_packet_sent_with`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SendFlags {
    /// Contains a frame other than ACK, PADDING or CONNECTION_CLOSE.
    pub ack_eliciting: bool,
    /// Counts toward bytes in flight (ack-eliciting or PADDING).
    pub in_flight: bool,
    /// The ECN codepoint the datagram was sent with (what
    /// [`Recovery::ecn_codepoint`] said when the datagram was built, if the socket
    /// applied it).
    pub ecn: Option<EcnCodepoint>,
    /// A PMTU probe (RFC 9000 §14.4): losing it is no congestion signal.
    pub mtu_probe: bool,
}

/// Facts about the connection that PTO arming depends on (RFC 9002 §6.2.2.1, A.8).
#[derive(Clone, Copy, Debug, Default)]
pub struct PathState {
    /// The handshake is confirmed (HANDSHAKE_DONE received / sent and acked).
    pub handshake_confirmed: bool,
    /// Client: the server has validated our address (we received a Handshake packet
    /// or an ACK in the Handshake space). Always true on the server.
    pub peer_completed_address_validation: bool,
    /// Server: the anti-amplification limit leaves no room to send.
    pub amplification_blocked: bool,
    /// We have Handshake keys (the client arms PTO for Handshake without in-flight data).
    pub has_handshake_keys: bool,
    /// The peer's max_ack_delay (applies to the Data space only).
    pub max_ack_delay: Duration,
}

/// What an ACK frame did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AckSummary {
    /// The largest packet number newly acknowledged, if any.
    pub largest_newly_acked: Option<u64>,
    /// An RTT sample was taken.
    pub rtt_sample: bool,
    /// The congestion controller saw a CE increase.
    pub ecn_ce: bool,
    /// Packets this ACK acknowledged that had been declared lost.
    pub spurious_losses: u32,
}

/// What the loss-detection timer asks for when it fires.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TimeoutAction {
    /// Packets were declared lost (handed back); nothing more to do.
    Lost,
    /// Probe timeout: send `count` (1 or 2) ack-eliciting packets in `space`.
    Probe {
        /// Space to probe.
        space: SpaceId,
        /// How many probe packets.
        count: u8,
    },
    /// The timer was not due.
    None,
}

/// Counters kept by [`Recovery`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    /// Packets declared lost (spurious ones included).
    pub lost_packets: u64,
    /// Bytes declared lost.
    pub lost_bytes: u64,
    /// Probe timeouts.
    pub ptos: u64,
    /// Congestion signals (losses or ECN-CE increases) passed to the controller,
    /// at most one per ACK frame or timeout; the controller ignores those that fall
    /// inside its current recovery period.
    pub congestion_events: u64,
    /// Persistent congestion episodes.
    pub persistent_congestion: u64,
    /// Packets declared lost and acknowledged afterwards (reordered, not lost).
    pub spurious_losses: u64,
    /// Congestion window reductions undone because every loss behind them turned
    /// out spurious.
    pub spurious_congestion_events: u64,
}

/// Per packet-number-space state (RFC 9002 A.3).
struct Space<T> {
    sent: SentStore<T>,
    largest_acked: Option<u64>,
    /// When the next packet may be declared lost by the time threshold.
    loss_time: Option<Instant>,
    time_of_last_ack_eliciting: Option<Instant>,
    /// Latest send time of any packet acknowledged here, for the cross-space
    /// persistent-congestion check.
    latest_acked_sent: Option<Instant>,
    /// Recently lost packets, to recognise spurious losses.
    lost: LostHistory,
}

impl<T> Space<T> {
    fn new() -> Self {
        Space {
            sent: SentStore::new(),
            largest_acked: None,
            loss_time: None,
            time_of_last_ack_eliciting: None,
            latest_acked_sent: None,
            lost: LostHistory::default(),
        }
    }
}

/// Loss detection and congestion control for one connection (all three spaces).
///
/// Drive it with [`on_packet_sent`](Self::on_packet_sent) (or
/// [`on_packet_sent_with`](Self::on_packet_sent_with) for ECN-marked packets and
/// PMTU probes), [`on_ack_received`](Self::on_ack_received) and, when
/// [`loss_detection_timer`](Self::loss_detection_timer) has passed,
/// [`on_timeout`](Self::on_timeout). When a server that was blocked by the
/// anti-amplification limit receives a datagram, call
/// [`update_timer`](Self::update_timer) and then `on_timeout` if the timer is already
/// due (RFC 9002 A.6).
pub struct Recovery<T> {
    spaces: SpaceSet<Space<T>>,
    rtt: RttEstimator,
    /// The least PTO base (smoothed + 4·var) for the Application Data space,
    /// from other connections' samples on the same path (`offer_path_pto`):
    /// zero unless offered, cleared by this connection's next own sample.
    path_pto: Duration,
    /// When the first RTT sample was taken (A.3 first_rtt_sample).
    first_rtt_sample: Option<Instant>,
    pto_count: u32,
    timer: Option<Instant>,
    /// No space has a loss time and only Application Data can have
    /// ack-eliciting packets in flight: a Data send may re-arm the timer
    /// without the full A.8 walk (send.rs). Set after a full walk on send;
    /// cleared when a loss time is set (loss.rs) or other spaces send.
    timer_data_only: bool,
    cc: Box<dyn Controller>,
    /// The controller's window, noted after every change to it: read several
    /// times per packet, it would otherwise cost a virtual call (and for CUBIC
    /// a float conversion) each time. See [`Self::window`].
    window: u64,
    pacer: Pacer,
    pacing: bool,
    /// Set by `on_app_limited`, cleared once a send fills the window.
    app_limited: bool,
    reorder: Reordering,
    episodes: Episodes,
    ecn: EcnValidator,
    /// Delivery-rate sampling, for controllers that want it.
    /// Boxed: only controllers that sample the rate (BBR) have one.
    delivery: Option<Box<DeliveryRate>>,
    /// Reused buffer for the lost packets an ACK turns out to cover.
    spurious_scratch: Vec<LostRecord>,
    stats: RecoveryStats,
}

impl<T> Recovery<T> {
    /// A fresh state.
    pub fn new(config: &RecoveryConfig) -> Self {
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-B.2
        //# An endpoint sets the value of this variable based on its Path
        //# Maximum Transmission Unit (PMTU; see Section 14.2 of
        //# [QUIC-TRANSPORT]), with a minimum value of 1200 bytes.
        let mtu = config.max_datagram_size.max(1200);
        let time_threshold = if config.time_threshold.is_finite() {
            config.time_threshold.clamp(1.0, 8.0)
        } else {
            9.0 / 8.0
        };
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.7
        //# senders SHOULD limit bursts to the initial congestion window
        let burst = crate::cc::initial_window(mtu) / mtu;
        let cc = config.cc.build(mtu);
        let delivery = cc.wants_rate_samples().then(Box::<DeliveryRate>::default);
        Recovery {
            spaces: SpaceSet::new(Space::new),
            rtt: RttEstimator::new(config.initial_rtt),
            path_pto: Duration::ZERO,
            first_rtt_sample: None,
            pto_count: 0,
            timer: None,
            timer_data_only: false,
            window: cc.window(),
            cc,
            pacer: Pacer::new(mtu, burst),
            pacing: config.pacing,
            app_limited: false,
            reorder: Reordering::new(
                config.packet_threshold.max(1),
                time_threshold,
                config.adaptive_reordering,
            ),
            episodes: Episodes::default(),
            ecn: EcnValidator::new(config.ecn),
            delivery,
            spurious_scratch: Vec::new(),
            stats: RecoveryStats::default(),
        }
    }

    /// When the loss-detection timer should fire (A.8), given the path state.
    pub fn loss_detection_timer(&self) -> Option<Instant> {
        self.timer
    }

    /// Re-arm the timer after something changed (keys, address validation,
    /// amplification), without a packet being sent or acknowledged.
    ///
    /// The client's anti-deadlock PTO counts from the time of the call, so call
    /// this when something changed, not on every datagram.
    pub fn update_timer(&mut self, now: Instant, path: &PathState) {
        self.set_timer(now, path);
    }

    /// What other connections on the same path measured: `base` is their
    /// shared smoothed_rtt + max(4·rttvar, kGranularity), the least the
    /// Application Data PTO base may be until this connection's own next RTT
    /// sample (zero: none). Re-arms the timer if that changes it; returns
    /// whether it did.
    ///
    /// Why: a connection's estimate from an idle path (a PTO of ~26 ms)
    /// knows nothing of the queue that 5 000 connections bursting at once
    /// build at their common peer; the others' answers measure it, and RFC
    /// 9040 (TCP control block interdependence) shares RTT among concurrent
    /// connections to one host for that reason. The PTO keeps its meaning
    /// (RFC 9002 §6.2.1: no acknowledgment within the path's expected RTT)
    /// with a better estimate of that RTT; it can only grow.
    pub fn offer_path_pto(&mut self, base: Duration, now: Instant, path: &PathState) -> bool {
        if base == self.path_pto {
            return false;
        }
        self.path_pto = base;
        let before = self.timer;
        self.set_timer(now, path);
        self.timer != before
    }

    /// Keys for `space` were discarded: forget its packets (removing them from bytes in
    /// flight without a congestion event) and hand them back in `dropped`.
    pub fn discard_space(
        &mut self,
        space: SpaceId,
        now: Instant,
        path: &PathState,
        dropped: &mut Vec<(u64, SentPacket<T>)>,
    ) {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.4
        //# The sender MUST discard all recovery state associated with those
        //# packets and MUST remove them from the count of bytes in flight.
        //
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.11
        //# RemoveFromBytesInFlight(sent_packets[pn_space])
        //# sent_packets[pn_space].clear()
        //# // Reset the loss detection and PTO timer
        //# time_of_last_ack_eliciting_packet[pn_space] = 0
        //# loss_time[pn_space] = 0
        //# pto_count = 0
        //# SetLossDetectionTimer()
        let sp = self.spaces.get_mut(space.index(), Space::new);
        // The space is over for good: its stores' capacity goes too (a
        // handshake's records, about 2 KB an idle connection kept).
        sp.sent.drain_for_good(dropped);
        sp.lost = LostHistory::default();
        sp.time_of_last_ack_eliciting = None;
        sp.loss_time = None;
        self.spaces.discarded(space.index());
        self.pto_count = 0;
        self.set_timer(now, path);
    }

    /// The connection moved to a new network path (RFC 9000 §9.4): congestion
    /// control, pacing and the RTT estimate start over; packets in flight stay.
    pub fn reset_path(&mut self, config: &RecoveryConfig, mtu: u64) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.4
        //# the endpoint MUST reset the congestion controller and round-trip
        //# time estimator for the new path to initial values
        let mtu = mtu.max(1200);
        self.rtt = RttEstimator::new(config.initial_rtt);
        self.first_rtt_sample = None;
        self.cc = config.cc.build(mtu);
        self.window = self.cc.window();
        self.pacer = Pacer::new(mtu, crate::cc::initial_window(mtu) / mtu);
        self.delivery = self
            .cc
            .wants_rate_samples()
            .then(Box::<DeliveryRate>::default);
        self.app_limited = false;
        self.pto_count = 0;
        self.ecn.restart();
    }

    /// The connection closed: nothing will be acknowledged, retransmitted or
    /// paced any more. Forget the packets in flight and the loss history (with
    /// what each packet carried, most of a closed connection's memory) and stop
    /// the loss timer. The RTT estimate stays for the closing period's length.
    pub fn shed(&mut self) {
        for sp in self.spaces.iter_mut() {
            sp.sent = SentStore::new();
            sp.lost = LostHistory::default();
            sp.loss_time = None;
            sp.time_of_last_ack_eliciting = None;
        }
        self.spurious_scratch = Vec::new();
        self.timer = None;
    }

    /// Congestion window in bytes.
    pub fn congestion_window(&self) -> u64 {
        self.window()
    }

    /// The window as last noted; every path that changes the controller notes it.
    fn window(&self) -> u64 {
        debug_assert_eq!(self.window, self.cc.window(), "window not noted");
        self.window
    }

    /// The controller may have changed its window: note it.
    fn note_window(&mut self) {
        self.window = self.cc.window();
    }

    /// Bytes in flight.
    pub fn bytes_in_flight(&self) -> u64 {
        self.spaces.iter().map(|s| s.sent.bytes_in_flight()).sum()
    }

    /// RTT estimates.
    pub fn rtt(&self) -> &RttEstimator {
        &self.rtt
    }

    /// The PTO duration for `space` without backoff (RFC 9002 §6.2.1), for timers
    /// such as draining (3×PTO) and key discard.
    pub fn pto_base(&self, space: SpaceId, path: &PathState) -> Duration {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.1
        //# When the PTO is armed for Initial or Handshake packet number spaces,
        //# the max_ack_delay in the PTO period computation is set to 0, since
        //# the peer is expected to not delay these packets intentionally;
        let base = self.rtt.pto_base();
        if space == SpaceId::Data {
            base.saturating_add(path.max_ack_delay)
        } else {
            base
        }
    }

    /// Current PTO backoff exponent.
    pub fn pto_count(&self) -> u32 {
        self.pto_count
    }

    /// Largest packet number the peer acknowledged in `space`.
    pub fn largest_acked(&self, space: SpaceId) -> Option<u64> {
        self.spaces.get(space.index())?.largest_acked
    }

    /// Ack-eliciting packets still unacknowledged in `space`.
    pub fn has_ack_eliciting_in_flight(&self, space: SpaceId) -> bool {
        self.spaces
            .get(space.index())
            .is_some_and(|s| s.sent.ack_eliciting_in_flight() > 0)
    }

    /// Iterate over packets still in flight in `space` (to pick probe contents).
    pub fn in_flight(&self, space: SpaceId) -> impl Iterator<Item = (u64, &SentPacket<T>)> + '_ {
        self.spaces
            .get(space.index())
            .into_iter()
            .flat_map(|s| s.sent.iter())
            .filter(|(_, p)| p.in_flight)
    }

    /// The packet reordering threshold in use (3 until reordering raises it). Also
    /// the natural Reordering Threshold to ask the peer for in ACK_FREQUENCY
    /// (draft-ietf-quic-ack-frequency: kPacketThreshold − 1).
    pub fn packet_threshold(&self) -> u64 {
        self.reorder.packet()
    }

    /// The time reordering threshold in use, in RTTs (9/8 until raised).
    pub fn time_threshold(&self) -> f64 {
        self.reorder.time()
    }

    /// The ECN codepoint to put on datagrams built now (`None`: send them unmarked).
    /// Report what was actually sent with
    /// [`on_packet_sent_with`](Self::on_packet_sent_with).
    pub fn ecn_codepoint(&self) -> Option<EcnCodepoint> {
        self.ecn.codepoint()
    }

    /// Where ECN validation stands.
    pub fn ecn_state(&self) -> EcnState {
        self.ecn.state()
    }

    /// Validate ECN again from the start: on a new path (migration, preferred
    /// address), or to retry after a failure.
    pub fn restart_ecn_validation(&mut self) {
        self.ecn.restart();
    }

    /// Counters: packets and bytes declared lost, PTOs fired, congestion signals.
    pub fn stats(&self) -> RecoveryStats {
        self.stats
    }

    /// The congestion controller (for logs and tests).
    pub fn controller(&self) -> &dyn Controller {
        &*self.cc
    }
}

/// A real instant for tests to offset from; the protocol core never reads the clock.
#[cfg(test)]
#[allow(clippy::disallowed_methods)]
pub(crate) fn test_epoch() -> Instant {
    Instant::now()
}

#[cfg(test)]
mod tests;

impl<T> Recovery<T> {
    /// Heap held by the sent-packet records (their slots' capacity, frames
    /// kept inline), lost-packet history and the congestion controller.
    pub(crate) fn heap_bytes(&self) -> usize {
        let spaces: usize = self
            .spaces
            .iter()
            .map(|s| s.sent.heap_bytes() + s.lost.heap_bytes())
            .sum();
        spaces
            + std::mem::size_of_val(&*self.cc)
            + self
                .delivery
                .as_ref()
                .map_or(0, |d| std::mem::size_of_val(&**d))
            + self.spurious_scratch.capacity() * std::mem::size_of::<LostRecord>()
    }

    /// Give back the capacity of empty records (an idle connection).
    /// Returns whether all records went (none is left in flight).
    pub(crate) fn shrink_idle(&mut self) -> bool {
        let mut all = true;
        for s in self.spaces.iter_mut() {
            all &= s.sent.shrink_idle();
            s.lost.shrink_idle();
        }
        self.spurious_scratch = Vec::new();
        all
    }
}
