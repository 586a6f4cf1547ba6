//! Loss detection and recovery (RFC 9002): RTT estimation, per-space tracking of sent
//! packets, packet- and time-threshold loss detection, PTO, persistent congestion, and
//! the congestion controller and pacer it drives.
//!
//! CONTRACT (filled in by the recovery work): public items fixed; bodies, private
//! items and further submodules the implementer's.
//!
//! Sent packets carry an opaque `T` (what the connection put in them, for
//! retransmission); acknowledged and lost packets are handed back through caller-owned
//! vectors so nothing allocates per packet.

pub mod pacer;
pub mod rtt;

use std::ops::RangeInclusive;
use std::time::{Duration, Instant};

pub use pacer::Pacer;
pub use rtt::RttEstimator;

use crate::cc::CcAlgorithm;
use crate::error::TransportError;
use crate::frame::EcnCounts;
use crate::types::SpaceId;

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

/// Loss detection and congestion control for one connection (all three spaces).
pub struct Recovery<T> {
    // implementer's fields
    _todo: std::marker::PhantomData<T>,
}

impl<T> Recovery<T> {
    /// A fresh state.
    pub fn new(config: &RecoveryConfig) -> Self {
        let _ = config;
        todo!("recovery")
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
        let _ = (now, space, pn, size, ack_eliciting, in_flight, data, path);
        todo!("recovery")
    }

    /// Process an ACK frame (RFC 9002 A.7): ranges highest first; `ack_delay` already
    /// scaled by the peer's exponent. Newly acknowledged packets are appended to
    /// `acked`, packets now deemed lost to `lost`; the congestion controller is updated.
    /// Acknowledging a packet number never sent is PROTOCOL_VIOLATION.
    #[allow(clippy::too_many_arguments)]
    pub fn on_ack_received(
        &mut self,
        now: Instant,
        space: SpaceId,
        ranges: impl Iterator<Item = RangeInclusive<u64>>,
        ack_delay: Duration,
        ecn: Option<EcnCounts>,
        path: &PathState,
        acked: &mut Vec<(u64, SentPacket<T>)>,
        lost: &mut Vec<(u64, SentPacket<T>)>,
    ) -> Result<AckSummary, TransportError> {
        let _ = (now, space, ranges, ack_delay, ecn, path, acked, lost);
        todo!("recovery")
    }

    /// When the loss-detection timer should fire (A.8), given the path state.
    pub fn loss_detection_timer(&self) -> Option<Instant> {
        todo!("recovery")
    }

    /// Re-arm the timer after something changed (keys, address validation,
    /// amplification), without a packet being sent or acknowledged.
    pub fn update_timer(&mut self, now: Instant, path: &PathState) {
        let _ = (now, path);
        todo!("recovery")
    }

    /// The loss-detection timer fired (A.9). Lost packets are appended to `lost`.
    pub fn on_timeout(
        &mut self,
        now: Instant,
        path: &PathState,
        lost: &mut Vec<(u64, SentPacket<T>)>,
    ) -> TimeoutAction {
        let _ = (now, path, lost);
        todo!("recovery")
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
        let _ = (space, now, path, dropped);
        todo!("recovery")
    }

    /// Bytes the congestion controller allows to be sent now (window minus in flight).
    pub fn send_allowance(&self) -> u64 {
        todo!("recovery")
    }

    /// When the pacer allows the next packet of `bytes` (None: now).
    pub fn pacing_delay(&mut self, now: Instant, bytes: u64) -> Option<Instant> {
        let _ = (now, bytes);
        todo!("recovery")
    }

    /// The application had nothing more to send while the window was open (RFC 9002
    /// §7.8): the window must not grow on the ACKs of what was sent.
    pub fn on_app_limited(&mut self) {
        todo!("recovery")
    }

    /// Congestion window in bytes.
    pub fn congestion_window(&self) -> u64 {
        todo!("recovery")
    }

    /// Bytes in flight.
    pub fn bytes_in_flight(&self) -> u64 {
        todo!("recovery")
    }

    /// RTT estimates.
    pub fn rtt(&self) -> &RttEstimator {
        todo!("recovery")
    }

    /// The PTO duration for `space` without backoff (RFC 9002 §6.2.1), for timers
    /// such as draining (3×PTO) and key discard.
    pub fn pto_base(&self, space: SpaceId, path: &PathState) -> Duration {
        let _ = (space, path);
        todo!("recovery")
    }

    /// Current PTO backoff exponent.
    pub fn pto_count(&self) -> u32 {
        todo!("recovery")
    }

    /// Largest packet number the peer acknowledged in `space`.
    pub fn largest_acked(&self, space: SpaceId) -> Option<u64> {
        let _ = space;
        todo!("recovery")
    }

    /// Ack-eliciting packets still unacknowledged in `space`.
    pub fn has_ack_eliciting_in_flight(&self, space: SpaceId) -> bool {
        let _ = space;
        todo!("recovery")
    }

    /// Iterate over packets still in flight in `space` (to pick probe contents).
    pub fn in_flight(&self, space: SpaceId) -> impl Iterator<Item = (u64, &SentPacket<T>)> + '_ {
        let _ = space;
        todo!("recovery");
        #[allow(unreachable_code)]
        std::iter::empty()
    }

    /// Counters: packets declared lost, spurious losses detected, PTOs fired.
    pub fn stats(&self) -> RecoveryStats {
        todo!("recovery")
    }
}

/// Counters kept by [`Recovery`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RecoveryStats {
    /// Packets declared lost.
    pub lost_packets: u64,
    /// Bytes declared lost.
    pub lost_bytes: u64,
    /// Probe timeouts.
    pub ptos: u64,
    /// Congestion events.
    pub congestion_events: u64,
    /// Persistent congestion episodes.
    pub persistent_congestion: u64,
}
