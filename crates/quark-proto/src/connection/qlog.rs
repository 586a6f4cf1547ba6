//! The connection's qlog hooks: each is one branch when qlog is off.

use std::time::Instant;

use super::Connection;
use super::close::State;
use crate::qlog::{Metrics, PacketInfo, space_kind};
use crate::transport_params::TransportParameters;
use crate::types::{PacketKind, SpaceId};

impl Connection {
    /// Whether this connection records qlog events
    /// (`EndpointConfig::qlog_dir` was set when it was made).
    pub fn qlog_enabled(&self) -> bool {
        self.qlog.is_some()
    }

    /// The qlog file's name, `<odcid hex>_<server|client>.sqlog`, when qlog is on.
    pub fn qlog_file_name(&self) -> Option<String> {
        let q = self.qlog.as_ref()?;
        Some(format!("{}_{}.sqlog", self.orig_dst_cid, q.side_name()))
    }

    /// Move the qlog records recorded so far to the end of `out` (JSON-SEQ;
    /// the first call starts with the header record). `unix_ms_now` is the
    /// wall-clock time at `now` in milliseconds since the Unix epoch, which
    /// dates the trace. Returns false when qlog is off.
    pub fn take_qlog(&mut self, now: Instant, unix_ms_now: f64, out: &mut Vec<u8>) -> bool {
        match self.qlog.as_mut() {
            Some(q) => {
                q.drain(now, unix_ms_now, out);
                true
            }
            None => false,
        }
    }

    /// The first events: our transport parameters and the first state.
    pub(super) fn qlog_start(&mut self, now: Instant, local_params: &TransportParameters) {
        let side = self.side;
        if let Some(q) = self.qlog.as_mut() {
            q.parameters_set(now, true, local_params);
            let state = if side.is_client() {
                "attempted"
            } else {
                "handshake_started"
            };
            q.state_updated(now, state);
        }
    }

    pub(super) fn qlog_peer_params(&mut self, now: Instant) {
        if let (Some(q), Some(p)) = (self.qlog.as_mut(), self.peer_params.as_ref()) {
            q.parameters_set(now, false, p);
        }
    }

    pub(super) fn qlog_state(&mut self, now: Instant, new: &str) {
        if let Some(q) = self.qlog.as_mut() {
            q.state_updated(now, new);
        }
    }

    /// A long-header packet's frames, kept before they are encrypted in place.
    pub(super) fn qlog_keep_plaintext(&mut self, space: SpaceId, payload: &[u8]) {
        if let (Some(q), false) = (self.qlog.as_mut(), space == SpaceId::Data) {
            q.plaintext.clear();
            q.plaintext.extend_from_slice(payload);
        }
    }

    /// The packet of `size` bytes that ends `buf` was sent.
    pub(super) fn qlog_sent(
        &mut self,
        now: Instant,
        space: SpaceId,
        pn: u64,
        buf: &[u8],
        header_len: usize,
        size: usize,
    ) {
        let Some(q) = self.qlog.as_mut() else {
            return;
        };
        let tag_len = match space {
            SpaceId::Data => self.one_rtt.as_ref().map(|k| k.local_packet().tag_len()),
            _ => self.spaces[space.index()]
                .keys
                .as_ref()
                .map(|k| k.local.packet.tag_len()),
        }
        .unwrap_or(16);
        let start = buf.len() - size;
        let plaintext = std::mem::take(&mut q.plaintext);
        // 1-RTT packets are sealed later: their frames (padding included) are
        // still plaintext in `buf`.
        let (payload, padding) = match space {
            SpaceId::Data => (&buf[start + header_len..buf.len() - tag_len], 0),
            _ => (
                &plaintext[..],
                size.saturating_sub(header_len + plaintext.len() + tag_len),
            ),
        };
        let exponent = match space {
            SpaceId::Data => self.local_params.ack_delay_exponent,
            _ => 3,
        };
        q.packet(
            now,
            &PacketInfo {
                sent: true,
                kind: space_kind(space),
                pn,
                payload,
                raw_len: size,
                padding,
                ack_delay_exponent: exponent,
            },
        );
        q.plaintext = plaintext;
    }

    /// A packet was received and decrypted; `payload` is its plaintext frames.
    pub(super) fn qlog_received(
        &mut self,
        now: Instant,
        kind: PacketKind,
        pn: u64,
        payload: &[u8],
        raw_len: usize,
    ) {
        let Some(q) = self.qlog.as_mut() else {
            return;
        };
        let exponent = match kind {
            PacketKind::OneRtt => self
                .peer_params
                .as_ref()
                .map_or(3, |p| p.ack_delay_exponent),
            _ => 3,
        };
        q.packet(
            now,
            &PacketInfo {
                sent: false,
                kind,
                pn,
                payload,
                raw_len,
                padding: 0,
                ack_delay_exponent: exponent,
            },
        );
    }

    pub(super) fn qlog_lost(&mut self, now: Instant, space: SpaceId, pn: u64) {
        if let Some(q) = self.qlog.as_mut() {
            q.packet_lost(now, space, pn);
        }
    }

    /// `recovery:metrics_updated` if congestion control or RTT moved, and
    /// `connectivity:mtu_updated` if the datagram size did.
    pub(super) fn qlog_metrics(&mut self, now: Instant) {
        if let Some(q) = self.qlog.as_mut() {
            q.mtu(now, self.path.mtu, || !self.mtu.searching());
            let rtt = self.recovery.rtt();
            q.metrics(
                now,
                Metrics {
                    cwnd: self.recovery.congestion_window(),
                    bytes_in_flight: self.recovery.bytes_in_flight(),
                    smoothed_rtt: rtt.smoothed(),
                    latest_rtt: rtt.latest(),
                    rtt_variance: rtt.var(),
                },
            );
        }
    }

    /// The connection is closing, draining or gone: the state and, the first
    /// time, why.
    pub(super) fn qlog_closed(&mut self, now: Instant, new: &str) {
        let Some(q) = self.qlog.as_mut() else {
            return;
        };
        q.state_updated(now, new);
        let Some(error) = self.state.error() else {
            return;
        };
        if matches!(self.state, State::Drained { .. }) && q.close_logged {
            return;
        }
        q.close_logged = true;
        use super::close::ConnectionError as E;
        let (local, code, trigger) = match error {
            E::TransportError(e) => (true, Some((e.code.0, false)), "error"),
            E::ConnectionClosed { code, .. } => (false, Some((code.0, false)), "error"),
            E::ApplicationClosed { code, .. } => (false, Some((*code, true)), "application"),
            E::LocallyClosed => (true, None, "application"),
            E::Reset => (false, None, "stateless_reset"),
            E::TimedOut | E::SendTimedOut => (true, None, "idle_timeout"),
            E::VersionMismatch => (false, None, "version_mismatch"),
            E::DriverStopped | E::Unreachable { .. } => (true, None, "unspecified"),
        };
        let reason = error.to_string();
        q.closed(now, local, code, &reason, trigger);
    }
}
