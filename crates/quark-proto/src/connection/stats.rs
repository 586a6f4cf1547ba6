//! The connection's counters, kept as two parts (issue #33: memory per
//! connection while serving). Those bumped per datagram or packet live in
//! the connection; the rest (migration, path validation, PMTU probes, PTO
//! probes, DATAGRAM frames) in a box made at their first event, which most
//! connections never see: 120 bytes less in every `Connection`.
//! [`Connection::stats`](super::Connection::stats) puts them together.

use super::{Connection, ConnectionStats};

/// Counters bumped on the per-packet path (names as in [`ConnectionStats`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HotStats {
    pub(crate) datagrams_in: u64,
    pub(crate) datagrams_out: u64,
    pub(crate) packets_in: u64,
    pub(crate) packets_out: u64,
    pub(crate) packets_dropped: u64,
    pub(crate) bytes_in: u64,
    pub(crate) bytes_out: u64,
    pub(crate) acks_in: u64,
    pub(crate) acks_out: u64,
    pub(crate) ecn_marked_out: u64,
    pub(crate) ecn_ect0_in: u64,
    pub(crate) ecn_ect1_in: u64,
    pub(crate) ecn_ce_in: u64,
}

/// Counters of rarer events (names as in [`ConnectionStats`]).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RareStats {
    pub(crate) probes_out: u64,
    pub(crate) ptos_put_off: u64,
    pub(crate) mtu_probes: u64,
    pub(crate) datagram_frames_out: u64,
    pub(crate) datagram_frames_in: u64,
    pub(crate) datagram_frames_lost: u64,
    pub(crate) datagram_frames_dropped_out: u64,
    pub(crate) datagram_frames_dropped_in: u64,
    pub(crate) path_challenges: u64,
    pub(crate) migrations: u64,
    pub(crate) congestion_resets: u64,
    pub(crate) validation_failures: u64,
    pub(crate) stall_pings: u64,
}

impl Connection {
    /// The rare counters, boxed on first use.
    pub(super) fn rare_stats(&mut self) -> &mut RareStats {
        self.rare_stats.get_or_insert_with(Box::default)
    }

    /// Both parts as the public [`ConnectionStats`] (the recovery's and the
    /// keys' counters are added by the caller).
    pub(super) fn joined_stats(&self) -> ConnectionStats {
        let h = &self.stats;
        let r = self.rare_stats.as_deref().copied().unwrap_or_default();
        ConnectionStats {
            datagrams_in: h.datagrams_in,
            datagrams_out: h.datagrams_out,
            packets_in: h.packets_in,
            packets_out: h.packets_out,
            packets_dropped: h.packets_dropped,
            bytes_in: h.bytes_in,
            bytes_out: h.bytes_out,
            acks_in: h.acks_in,
            acks_out: h.acks_out,
            packets_lost: 0,
            ptos: 0,
            probes_out: r.probes_out,
            ptos_put_off: r.ptos_put_off,
            key_updates: 0,
            spurious_losses: 0,
            mtu_probes: r.mtu_probes,
            ecn_marked_out: h.ecn_marked_out,
            ecn_ect0_in: h.ecn_ect0_in,
            ecn_ect1_in: h.ecn_ect1_in,
            ecn_ce_in: h.ecn_ce_in,
            datagram_frames_out: r.datagram_frames_out,
            datagram_frames_in: r.datagram_frames_in,
            datagram_frames_lost: r.datagram_frames_lost,
            datagram_frames_dropped_out: r.datagram_frames_dropped_out,
            datagram_frames_dropped_in: r.datagram_frames_dropped_in,
            path_challenges: r.path_challenges,
            migrations: r.migrations,
            congestion_resets: r.congestion_resets,
            validation_failures: r.validation_failures,
            stall_pings: r.stall_pings,
        }
    }
}
