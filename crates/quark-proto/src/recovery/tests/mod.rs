//! RFC 9002 rules, one test each, with the rule quoted next to the check, on a
//! small harness that drives [`Recovery`] with millisecond timestamps.

mod bottleneck;
mod congestion;
mod ecn;
mod loss;
mod pto;
mod reorder;
mod sim;
mod timer_cache;

use super::*;
use crate::error::{TransportError, TransportErrorCode};
use crate::frame::EcnCounts;
use std::ops::RangeInclusive;

pub(super) const MS: Duration = Duration::from_millis(1);
const SIZE: u16 = 1200;

pub(super) type Packets = Vec<(u64, SentPacket<u64>)>;

/// A confirmed, validated path with a 25 ms max_ack_delay.
pub(super) fn confirmed() -> PathState {
    PathState {
        handshake_confirmed: true,
        peer_completed_address_validation: true,
        amplification_blocked: false,
        has_handshake_keys: true,
        max_ack_delay: 25 * MS,
    }
}

/// A client early in the handshake: nothing confirmed or validated, no keys.
pub(super) fn early_client() -> PathState {
    PathState {
        handshake_confirmed: false,
        peer_completed_address_validation: false,
        amplification_blocked: false,
        has_handshake_keys: false,
        max_ack_delay: 25 * MS,
    }
}

pub(super) struct H {
    pub(super) r: Recovery<u64>,
    pub(super) t0: Instant,
    pub(super) path: PathState,
    pub(super) acked: Packets,
    pub(super) lost: Packets,
}

impl H {
    pub(super) fn new(cc: CcAlgorithm, path: PathState) -> Self {
        let config = RecoveryConfig {
            cc,
            pacing: false,
            ..RecoveryConfig::default()
        };
        Self::with_config(&config, path)
    }

    pub(super) fn with_config(config: &RecoveryConfig, path: PathState) -> Self {
        H {
            r: Recovery::new(config),
            t0: test_epoch(),
            path,
            acked: Vec::new(),
            lost: Vec::new(),
        }
    }

    pub(super) fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    pub(super) fn send(&mut self, ms: u64, space: SpaceId, pn: u64) {
        let now = self.at(ms);
        self.r
            .on_packet_sent(now, space, pn, SIZE, true, true, pn, &self.path);
    }

    pub(super) fn send_with(&mut self, ms: u64, space: SpaceId, pn: u64, flags: SendFlags) {
        let now = self.at(ms);
        self.r
            .on_packet_sent_with(now, space, pn, SIZE, flags, pn, &self.path);
    }

    pub(super) fn ack(
        &mut self,
        ms: u64,
        space: SpaceId,
        ranges: &[RangeInclusive<u64>],
    ) -> Result<AckSummary, TransportError> {
        self.ack_ecn(ms, space, ranges, None)
    }

    pub(super) fn ack_ecn(
        &mut self,
        ms: u64,
        space: SpaceId,
        ranges: &[RangeInclusive<u64>],
        ecn: Option<EcnCounts>,
    ) -> Result<AckSummary, TransportError> {
        self.acked.clear();
        self.lost.clear();
        let now = self.at(ms);
        self.r.on_ack_received(
            now,
            space,
            ranges.iter().cloned(),
            Duration::ZERO,
            ecn,
            &self.path,
            &mut self.acked,
            &mut self.lost,
        )
    }

    pub(super) fn timeout(&mut self, ms: u64) -> TimeoutAction {
        self.lost.clear();
        let now = self.at(ms);
        self.r.on_timeout(now, &self.path, &mut self.lost)
    }

    /// The loss-detection timer, in µs since the start.
    pub(super) fn timer_us(&self) -> Option<u128> {
        self.r
            .loss_detection_timer()
            .map(|t| (t - self.t0).as_micros())
    }

    pub(super) fn acked_pns(&self) -> Vec<u64> {
        let mut v: Vec<u64> = self.acked.iter().map(|a| a.0).collect();
        v.sort_unstable();
        v
    }

    pub(super) fn lost_pns(&self) -> Vec<u64> {
        self.lost.iter().map(|a| a.0).collect()
    }
}
