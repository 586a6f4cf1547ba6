//! qlog events (draft-ietf-quic-qlog-main-schema, draft-ietf-quic-qlog-quic-events,
//! qlog_version 0.3, JSON-SEQ).
//!
//! The core stays clock- and I/O-free: a connection with qlog on serialises
//! each event, stamped with the `now` it was given, into a bounded buffer; the
//! runtime drains it with [`crate::Connection::take_qlog`] and writes the
//! bytes to `<odcid hex>_<server|client>.sqlog`. With qlog off a connection
//! holds `None` and every hook costs one branch.

mod frames;
mod json;

pub(crate) use frames::PacketInfo;

use std::fmt::Write;
use std::time::{Duration, Instant};

use crate::cid::ConnectionId;
use crate::transport_params::TransportParameters;
use crate::types::{PacketKind, Side, SpaceId};

use json::{hex, string};

/// Bytes of events held for the runtime at most: a runtime that stops
/// draining (or a peer that makes us log faster than the disk takes it)
/// loses events, counted in the next record, instead of memory.
pub const MAX_PENDING: usize = 4 << 20;

/// The recovery numbers of `recovery:metrics_updated`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Metrics {
    pub(crate) cwnd: u64,
    pub(crate) bytes_in_flight: u64,
    pub(crate) smoothed_rtt: Duration,
    pub(crate) latest_rtt: Duration,
    pub(crate) rtt_variance: Duration,
}

/// One connection's qlog events, serialised and waiting for the runtime.
#[derive(Debug)]
pub struct QlogSink {
    side: Side,
    odcid: ConnectionId,
    /// Event times are relative to this (the connection's creation).
    start: Instant,
    out: String,
    header_written: bool,
    /// Events dropped since the buffer was last drained (it was full).
    dropped: u64,
    last_metrics: Metrics,
    /// The datagram size last logged (`connectivity:mtu_updated`).
    last_mtu: Option<u16>,
    /// A long-header packet's plaintext frames, kept while it is encrypted.
    pub(crate) plaintext: Vec<u8>,
    /// `connectivity:connection_closed` was written.
    pub(crate) close_logged: bool,
}

impl QlogSink {
    pub(crate) fn new(side: Side, odcid: ConnectionId, now: Instant) -> Self {
        QlogSink {
            side,
            odcid,
            start: now,
            out: String::new(),
            header_written: false,
            dropped: 0,
            last_metrics: Metrics::default(),
            last_mtu: None,
            plaintext: Vec::new(),
            close_logged: false,
        }
    }

    /// Append the pending records to `out`, the header record first on the
    /// first call. `unix_ms_now` is the wall clock at `now`, in milliseconds
    /// since the Unix epoch (the core has no clock): it dates the trace.
    pub(crate) fn drain(&mut self, now: Instant, unix_ms_now: f64, out: &mut Vec<u8>) {
        if !self.header_written {
            self.header_written = true;
            let reference = unix_ms_now - ms(now.saturating_duration_since(self.start));
            let mut h = String::new();
            // qlog main schema (0.3), JSON-SEQ (RFC 7464): every record starts
            // with a Record Separator (0x1E) and ends with a Line Feed; the
            // first record is the file's header.
            let _ = write!(
                h,
                "\u{1e}{{\"qlog_version\":\"0.3\",\"qlog_format\":\"JSON-SEQ\",\"title\":\"quark\",\
                 \"trace\":{{\"vantage_point\":{{\"name\":\"quark\",\"type\":\"{}\"}},\
                 \"common_fields\":{{\"ODCID\":\"{}\",\"group_id\":\"{}\",\"protocol_type\":[\"QUIC\"],\
                 \"time_format\":\"relative\",\"reference_time\":{:.3}}}}}}}",
                self.side_name(),
                hex(&self.odcid),
                hex(&self.odcid),
                reference
            );
            h.push('\n');
            out.extend_from_slice(h.as_bytes());
        }
        out.extend_from_slice(self.out.as_bytes());
        self.out.clear();
        if self.out.capacity() > 64 * 1024 {
            // A burst's buffer is not kept for the life of the connection.
            self.out = String::new();
        }
        if self.dropped > 0 {
            let dropped = std::mem::take(&mut self.dropped);
            if self.begin(now, "quark:events_dropped") {
                let _ = write!(self.out, "\"count\":{dropped}");
                self.end();
            }
        }
    }

    /// Heap held for events not yet drained.
    pub(crate) fn memory(&self) -> usize {
        std::mem::size_of::<Self>() + self.out.capacity() + self.plaintext.capacity()
    }

    /// `server` or `client`.
    pub fn side_name(&self) -> &'static str {
        if self.side.is_client() {
            "client"
        } else {
            "server"
        }
    }

    /// Open a record; false (and nothing written) when the buffer is full.
    fn begin(&mut self, now: Instant, name: &str) -> bool {
        if self.out.len() >= MAX_PENDING {
            self.dropped += 1;
            return false;
        }
        let t = ms(now.saturating_duration_since(self.start));
        let _ = write!(
            self.out,
            "\u{1e}{{\"time\":{t:.3},\"name\":\"{name}\",\"data\":{{"
        );
        true
    }

    fn end(&mut self) {
        self.out.push_str("}}\n");
    }

    /// `transport:parameters_set` for our parameters or the peer's.
    pub(crate) fn parameters_set(&mut self, now: Instant, local: bool, p: &TransportParameters) {
        if !self.begin(now, "transport:parameters_set") {
            return;
        }
        let o = &mut self.out;
        let owner = if local { "local" } else { "remote" };
        let _ = write!(
            o,
            "\"owner\":\"{owner}\",\"max_idle_timeout\":{},\"max_udp_payload_size\":{},\
             \"initial_max_data\":{},\"initial_max_stream_data_bidi_local\":{},\
             \"initial_max_stream_data_bidi_remote\":{},\"initial_max_stream_data_uni\":{},\
             \"initial_max_streams_bidi\":{},\"initial_max_streams_uni\":{},\
             \"ack_delay_exponent\":{},\"max_ack_delay\":{},\"disable_active_migration\":{},\
             \"active_connection_id_limit\":{}",
            p.max_idle_timeout.as_millis(),
            p.max_udp_payload_size,
            p.initial_max_data,
            p.initial_max_stream_data_bidi_local,
            p.initial_max_stream_data_bidi_remote,
            p.initial_max_stream_data_uni,
            p.initial_max_streams_bidi,
            p.initial_max_streams_uni,
            p.ack_delay_exponent,
            p.max_ack_delay.as_millis(),
            p.disable_active_migration,
            p.active_connection_id_limit,
        );
        let ids = [
            (
                "original_destination_connection_id",
                p.original_destination_connection_id,
            ),
            (
                "initial_source_connection_id",
                p.initial_source_connection_id,
            ),
            ("retry_source_connection_id", p.retry_source_connection_id),
        ];
        for (name, cid) in ids {
            if let Some(cid) = cid {
                let _ = write!(o, ",\"{name}\":\"{}\"", hex(&cid));
            }
        }
        if let Some(t) = &p.stateless_reset_token {
            let _ = write!(o, ",\"stateless_reset_token\":\"{}\"", hex(&t.0));
        }
        if let Some(size) = p.max_datagram_frame_size {
            let _ = write!(o, ",\"max_datagram_frame_size\":{size}");
        }
        if let Some(delay) = p.min_ack_delay {
            let _ = write!(o, ",\"min_ack_delay\":{delay}");
        }
        if p.grease_quic_bit {
            o.push_str(",\"grease_quic_bit\":true");
        }
        self.end();
    }

    /// `connectivity:connection_state_updated`.
    pub(crate) fn state_updated(&mut self, now: Instant, new: &str) {
        if self.begin(now, "connectivity:connection_state_updated") {
            let _ = write!(self.out, "\"new\":\"{new}\"");
            self.end();
        }
    }

    /// `security:key_updated`, once for each direction's 1-RTT secret: a key
    /// update this side started (`local`) or the peer's; `generation` is the
    /// number of updates so far (the key phase bit flips with each).
    pub(crate) fn key_updated(&mut self, now: Instant, local: bool, generation: u64) {
        let trigger = if local {
            "local_update"
        } else {
            "remote_update"
        };
        for key_type in ["client_1rtt_secret", "server_1rtt_secret"] {
            if self.begin(now, "security:key_updated") {
                let _ = write!(
                    self.out,
                    "\"key_type\":\"{key_type}\",\"trigger\":\"{trigger}\",\"generation\":{generation}"
                );
                self.end();
            }
        }
    }

    /// `connectivity:connection_closed`. `code` is a transport error code
    /// unless `application`.
    pub(crate) fn closed(
        &mut self,
        now: Instant,
        local: bool,
        code: Option<(u64, bool)>,
        reason: &str,
        trigger: &str,
    ) {
        if !self.begin(now, "connectivity:connection_closed") {
            return;
        }
        let owner = if local { "local" } else { "remote" };
        let _ = write!(self.out, "\"owner\":\"{owner}\",\"trigger\":\"{trigger}\"");
        match code {
            Some((code, true)) => {
                let _ = write!(self.out, ",\"application_code\":{code}");
            }
            Some((code, false)) => {
                let _ = write!(self.out, ",\"connection_code\":{code}");
            }
            None => {}
        }
        self.out.push_str(",\"reason\":");
        string(&mut self.out, reason);
        self.end();
    }

    /// `recovery:packet_lost`.
    pub(crate) fn packet_lost(&mut self, now: Instant, space: SpaceId, pn: u64) {
        if self.begin(now, "recovery:packet_lost") {
            let _ = write!(
                self.out,
                "\"header\":{{\"packet_type\":\"{}\",\"packet_number\":{pn}}}",
                packet_type(space_kind(space))
            );
            self.end();
        }
    }

    /// `connectivity:mtu_updated`, only when the size changed (the first
    /// time without `old`); `done` (asked only then) once the search has
    /// nothing left to try.
    pub(crate) fn mtu(&mut self, now: Instant, mtu: u16, done: impl FnOnce() -> bool) {
        let old = self.last_mtu;
        if old == Some(mtu) || !self.begin(now, "connectivity:mtu_updated") {
            return;
        }
        let done = done();
        self.last_mtu = Some(mtu);
        if let Some(old) = old {
            let _ = write!(self.out, "\"old\":{old},");
        }
        let _ = write!(self.out, "\"new\":{mtu},\"done\":{done}");
        self.end();
    }

    /// `recovery:metrics_updated`, only when something changed.
    pub(crate) fn metrics(&mut self, now: Instant, m: Metrics) {
        if m == self.last_metrics || !self.begin(now, "recovery:metrics_updated") {
            return;
        }
        self.last_metrics = m;
        let _ = write!(
            self.out,
            "\"congestion_window\":{},\"bytes_in_flight\":{},\"smoothed_rtt\":{:.3},\
             \"latest_rtt\":{:.3},\"rtt_variance\":{:.3}",
            m.cwnd,
            m.bytes_in_flight,
            ms(m.smoothed_rtt),
            ms(m.latest_rtt),
            ms(m.rtt_variance)
        );
        self.end();
    }
}

/// A duration in (fractional) milliseconds, qlog's time unit.
fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The kind of packet a space's packets are.
pub(crate) fn space_kind(space: SpaceId) -> PacketKind {
    match space {
        SpaceId::Initial => PacketKind::Initial,
        SpaceId::Handshake => PacketKind::Handshake,
        SpaceId::Data => PacketKind::OneRtt,
    }
}

/// qlog's name for a packet type.
fn packet_type(kind: PacketKind) -> &'static str {
    match kind {
        PacketKind::Initial => "initial",
        PacketKind::Handshake => "handshake",
        PacketKind::ZeroRtt => "0RTT",
        PacketKind::OneRtt => "1RTT",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_full_buffer_drops_events_and_says_so() {
        let now = crate::recovery::test_epoch();
        let mut q = QlogSink::new(Side::Server, ConnectionId::EMPTY, now);
        let mut events = 0;
        while q.dropped < 3 {
            q.state_updated(now, "handshake_started");
            events += 1;
        }
        assert!(q.out.len() < MAX_PENDING + 200, "bounded: {}", q.out.len());
        let mut out = Vec::new();
        q.drain(now, 0.0, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert_eq!(
            text.matches('\u{1e}').count(),
            events - 3 + 1,
            "header + kept"
        );
        // The next drain reports the loss.
        let mut out = Vec::new();
        q.drain(now, 0.0, &mut out);
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("\"name\":\"quark:events_dropped\",\"data\":{\"count\":3}"));
    }
}
