//! Writing transport parameters.

use std::time::Duration;

use super::{PreferredAddress, TransportParameters, id};
use crate::varint::{VarInt, put_varint, varint_size};

impl TransportParameters {
    /// Append the encoding (ids and lengths as varints). Parameters equal to their
    /// default are omitted. Also writes one reserved "grease" parameter
    /// (id 31 * N + 27) so peers keep ignoring unknown ids.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        let start = buf.len();
        let d = TransportParameters::default();
        if let Some(cid) = &self.original_destination_connection_id {
            put_bytes(buf, id::ORIGINAL_DESTINATION_CONNECTION_ID, cid);
        }
        if self.max_idle_timeout != d.max_idle_timeout {
            put_int(buf, id::MAX_IDLE_TIMEOUT, millis(self.max_idle_timeout));
        }
        if let Some(token) = &self.stateless_reset_token {
            put_bytes(buf, id::STATELESS_RESET_TOKEN, &token.0);
        }
        let ints = [
            (
                id::MAX_UDP_PAYLOAD_SIZE,
                self.max_udp_payload_size,
                d.max_udp_payload_size,
            ),
            (id::INITIAL_MAX_DATA, self.initial_max_data, 0),
            (
                id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL,
                self.initial_max_stream_data_bidi_local,
                0,
            ),
            (
                id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE,
                self.initial_max_stream_data_bidi_remote,
                0,
            ),
            (
                id::INITIAL_MAX_STREAM_DATA_UNI,
                self.initial_max_stream_data_uni,
                0,
            ),
            (
                id::INITIAL_MAX_STREAMS_BIDI,
                self.initial_max_streams_bidi,
                0,
            ),
            (id::INITIAL_MAX_STREAMS_UNI, self.initial_max_streams_uni, 0),
            (
                id::ACK_DELAY_EXPONENT,
                u64::from(self.ack_delay_exponent),
                u64::from(d.ack_delay_exponent),
            ),
            (
                id::MAX_ACK_DELAY,
                millis(self.max_ack_delay),
                millis(d.max_ack_delay),
            ),
        ];
        for (id, value, default) in ints {
            if value != default {
                put_int(buf, id, value);
            }
        }
        if self.disable_active_migration {
            put_bytes(buf, id::DISABLE_ACTIVE_MIGRATION, &[]);
        }
        if let Some(pa) = &self.preferred_address {
            put_preferred_address(buf, pa);
        }
        if self.active_connection_id_limit != d.active_connection_id_limit {
            put_int(
                buf,
                id::ACTIVE_CONNECTION_ID_LIMIT,
                self.active_connection_id_limit,
            );
        }
        if let Some(cid) = &self.initial_source_connection_id {
            put_bytes(buf, id::INITIAL_SOURCE_CONNECTION_ID, cid);
        }
        if let Some(cid) = &self.retry_source_connection_id {
            put_bytes(buf, id::RETRY_SOURCE_CONNECTION_ID, cid);
        }
        if let Some(size) = self.max_datagram_frame_size {
            put_int(buf, id::MAX_DATAGRAM_FRAME_SIZE, size);
        }
        if let Some(delay) = self.min_ack_delay {
            put_int(buf, id::MIN_ACK_DELAY, delay);
        }
        if let Some(info) = &self.version_information {
            info.encode(buf, id::VERSION_INFORMATION);
        }
        if self.grease_quic_bit {
            put_bytes(buf, id::GREASE_QUIC_BIT, &[]);
        }
        put_grease(buf, start);
    }
}

/// Milliseconds, saturating at the largest varint.
fn millis(d: Duration) -> u64 {
    d.as_millis().min(u128::from(VarInt::MAX.into_inner())) as u64
}

fn put_int(buf: &mut Vec<u8>, id: u64, value: u64) {
    let value = value.min(VarInt::MAX.into_inner());
    put_varint(buf, id);
    put_varint(buf, varint_size(value) as u64);
    put_varint(buf, value);
}

fn put_bytes(buf: &mut Vec<u8>, id: u64, value: &[u8]) {
    put_varint(buf, id);
    put_varint(buf, value.len() as u64);
    buf.extend_from_slice(value);
}

//= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
//# Preferred Address { IPv4 Address (32), IPv4 Port (16),
//# IPv6 Address (128), IPv6 Port (16), Connection ID Length (8),
//# Connection ID (..), Stateless Reset Token (128) }
fn put_preferred_address(buf: &mut Vec<u8>, pa: &PreferredAddress) {
    put_varint(buf, id::PREFERRED_ADDRESS);
    put_varint(buf, (4 + 2 + 16 + 2 + 1 + pa.cid.len() + 16) as u64);
    buf.extend_from_slice(&pa.ipv4.ip().octets());
    buf.extend_from_slice(&pa.ipv4.port().to_be_bytes());
    buf.extend_from_slice(&pa.ipv6.ip().octets());
    buf.extend_from_slice(&pa.ipv6.port().to_be_bytes());
    buf.push(pa.cid.len() as u8);
    buf.extend_from_slice(&pa.cid);
    buf.extend_from_slice(&pa.reset_token.0);
}

//= https://www.rfc-editor.org/rfc/rfc9000#section-18.1
//# Transport parameters with an identifier of the form 31 * N + 27 for
//# integer values of N are reserved to exercise the requirement that
//# unknown transport parameters be ignored.  These transport parameters
//# have no semantics and can carry arbitrary values.
//
// N and the value (0..=7 bytes) come from a hash of the parameters written so far:
// they vary between connections (connection IDs are random) yet stay reproducible
// in a seeded simulation, and the core needs no random number generator here.
fn put_grease(buf: &mut Vec<u8>, start: usize) {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in &buf[start..] {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    let n = h & 0xffff;
    let len = ((h >> 16) & 0x7) as usize;
    put_bytes(buf, 31 * n + 27, &h.to_be_bytes()[..len]);
}
