//! Loss detection and recovery (RFC 9002): RTT estimation, per-space tracking of sent
//! packets, packet- and time-threshold loss detection, PTO, persistent congestion, and
//! the congestion controller and pacer it drives.
//!
//! Sent packets carry an opaque `T` (what the connection put in them, for
//! retransmission); acknowledged and lost packets are handed back through caller-owned
//! vectors so nothing allocates per packet.

mod ack;
mod loss;
pub mod pacer;
pub mod rtt;
mod sent;
mod timer;

use std::time::{Duration, Instant};

pub use pacer::Pacer;
pub use rtt::RttEstimator;

use crate::cc::{CcAlgorithm, Controller};
use crate::types::SpaceId;
use sent::SentStore;

/// Recovery settings.
#[derive(Clone, Debug)]
pub struct RecoveryConfig {
    /// RTT assumed before the first sample (RFC 9002: 333 ms).
    pub initial_rtt: Duration,
    /// Packet reordering threshold (RFC 9002 kPacketThreshold: 3).
    pub packet_threshold: u64,
    /// Time reordering threshold as a fraction of RTT (kTimeThreshold: 9/8).
    pub time_threshold: f64,
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
    /// What the connection put in it.
    pub data: T,
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

/// Per packet-number-space state (RFC 9002 A.3).
struct Space<T> {
    sent: SentStore<T>,
    largest_acked: Option<u64>,
    /// When the next packet may be declared lost by the time threshold.
    loss_time: Option<Instant>,
    time_of_last_ack_eliciting: Option<Instant>,
    /// Highest ECN-CE count the peer reported (B.2 ecn_ce_counters).
    ecn_ce: u64,
    /// Latest send time of any packet acknowledged here, for the cross-space
    /// persistent-congestion check.
    latest_acked_sent: Option<Instant>,
}

impl<T> Space<T> {
    fn new() -> Self {
        Space {
            sent: SentStore::new(),
            largest_acked: None,
            loss_time: None,
            time_of_last_ack_eliciting: None,
            ecn_ce: 0,
            latest_acked_sent: None,
        }
    }
}

/// Loss detection and congestion control for one connection (all three spaces).
///
/// Drive it with [`on_packet_sent`](Self::on_packet_sent),
/// [`on_ack_received`](Self::on_ack_received) and, when
/// [`loss_detection_timer`](Self::loss_detection_timer) has passed,
/// [`on_timeout`](Self::on_timeout). When a server that was blocked by the
/// anti-amplification limit receives a datagram, call
/// [`update_timer`](Self::update_timer) and then `on_timeout` if the timer is already
/// due (RFC 9002 A.6).
pub struct Recovery<T> {
    spaces: [Space<T>; 3],
    rtt: RttEstimator,
    /// When the first RTT sample was taken (A.3 first_rtt_sample).
    first_rtt_sample: Option<Instant>,
    pto_count: u32,
    timer: Option<Instant>,
    cc: Box<dyn Controller>,
    pacer: Pacer,
    pacing: bool,
    /// Set by `on_app_limited`, cleared once a send fills the window.
    app_limited: bool,
    packet_threshold: u64,
    time_threshold: f64,
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
        Recovery {
            spaces: std::array::from_fn(|_| Space::new()),
            rtt: RttEstimator::new(config.initial_rtt),
            first_rtt_sample: None,
            pto_count: 0,
            timer: None,
            cc: config.cc.build(mtu),
            pacer: Pacer::new(mtu, burst),
            pacing: config.pacing,
            app_limited: false,
            packet_threshold: config.packet_threshold.max(1),
            time_threshold,
            stats: RecoveryStats::default(),
        }
    }

    /// Record a sent packet (RFC 9002 A.5). Packet numbers per space increase.
    #[allow(clippy::too_many_arguments)]
    pub fn on_packet_sent(
        &mut self,
        now: Instant,
        space: SpaceId,
        pn: u64,
        size: u16,
        ack_eliciting: bool,
        in_flight: bool,
        data: T,
        path: &PathState,
    ) {
        let sp = &mut self.spaces[space.index()];
        let packet = SentPacket {
            time_sent: now,
            size,
            ack_eliciting,
            in_flight,
            data,
        };
        let recorded = sp.sent.push(pn, packet);
        debug_assert!(recorded, "packet numbers must increase");
        if !recorded || !in_flight {
            return;
        }
        //= https://www.rfc-editor.org/rfc/rfc9002#appendix-A.5
        //# if (in_flight):
        //#   if (ack_eliciting):
        //#     time_of_last_ack_eliciting_packet[pn_space] = now()
        //#   OnPacketSentCC(sent_bytes)
        //#   SetLossDetectionTimer()
        if ack_eliciting {
            sp.time_of_last_ack_eliciting = Some(now);
        }
        if self.pacing {
            self.pacer.on_sent(now, u64::from(size));
        }
        // A send that fills the window ends an app-limited period (§7.8).
        if self.bytes_in_flight() >= self.cc.window() {
            self.app_limited = false;
        }
        self.set_timer(now, path);
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
        let sp = &mut self.spaces[space.index()];
        sp.sent.drain(dropped);
        sp.time_of_last_ack_eliciting = None;
        sp.loss_time = None;
        self.pto_count = 0;
        self.set_timer(now, path);
    }

    /// The datagram size changed (path MTU discovery): windows and pacing follow.
    pub fn set_max_datagram_size(&mut self, mtu: u64) {
        self.cc.set_max_datagram_size(mtu);
        self.pacer.set_mtu(mtu);
    }

    /// Bytes the congestion controller allows to be sent now (window minus in flight).
    pub fn send_allowance(&self) -> u64 {
        self.cc.window().saturating_sub(self.bytes_in_flight())
    }

    /// When the pacer allows the next packet of `bytes` (None: now).
    pub fn pacing_delay(&mut self, now: Instant, bytes: u64) -> Option<Instant> {
        if !self.pacing {
            return None;
        }
        self.pacer
            .delay(now, bytes, self.cc.window(), self.rtt.smoothed())
    }

    /// The application had nothing more to send while the window was open (RFC 9002
    /// §7.8): the window must not grow on the ACKs of what was sent.
    pub fn on_app_limited(&mut self) {
        //= https://www.rfc-editor.org/rfc/rfc9002#section-7.8
        //# When bytes in flight is smaller than the congestion window and
        //# sending is not pacing limited, the congestion window is
        //# underutilized.
        if self.bytes_in_flight() < self.cc.window() {
            self.app_limited = true;
        }
    }

    /// Congestion window in bytes.
    pub fn congestion_window(&self) -> u64 {
        self.cc.window()
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
        self.spaces[space.index()].largest_acked
    }

    /// Ack-eliciting packets still unacknowledged in `space`.
    pub fn has_ack_eliciting_in_flight(&self, space: SpaceId) -> bool {
        self.spaces[space.index()].sent.ack_eliciting_in_flight() > 0
    }

    /// Iterate over packets still in flight in `space` (to pick probe contents).
    pub fn in_flight(&self, space: SpaceId) -> impl Iterator<Item = (u64, &SentPacket<T>)> + '_ {
        self.spaces[space.index()]
            .sent
            .iter()
            .filter(|(_, p)| p.in_flight)
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

/// Counters kept by [`Recovery`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    /// Packets declared lost.
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
}
