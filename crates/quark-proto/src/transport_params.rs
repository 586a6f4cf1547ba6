//! Transport parameters (RFC 9000 §18), carried in the TLS handshake.
//!
//! CONTRACT (filled in by the frame-codec work): the struct is fixed; bodies are the
//! implementer's. Decoding validates every rule of §18.2 and §7.4 and returns
//! TRANSPORT_PARAMETER_ERROR (or PROTOCOL_VIOLATION where the RFC says so).

use std::net::{SocketAddrV4, SocketAddrV6};
use std::time::Duration;

use crate::cid::{ConnectionId, ResetToken};
use crate::error::TransportError;
use crate::types::Side;

/// The parameters one endpoint declares to the other.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransportParameters {
    /// 0x00, server only.
    pub original_destination_connection_id: Option<ConnectionId>,
    /// 0x01; zero means no idle timeout.
    pub max_idle_timeout: Duration,
    /// 0x02, server only.
    pub stateless_reset_token: Option<ResetToken>,
    /// 0x03; at least 1200; default 65527.
    pub max_udp_payload_size: u64,
    /// 0x04
    pub initial_max_data: u64,
    /// 0x05
    pub initial_max_stream_data_bidi_local: u64,
    /// 0x06
    pub initial_max_stream_data_bidi_remote: u64,
    /// 0x07
    pub initial_max_stream_data_uni: u64,
    /// 0x08; at most 2^60.
    pub initial_max_streams_bidi: u64,
    /// 0x09; at most 2^60.
    pub initial_max_streams_uni: u64,
    /// 0x0a; at most 20; default 3.
    pub ack_delay_exponent: u8,
    /// 0x0b; below 2^14 ms; default 25 ms.
    pub max_ack_delay: Duration,
    /// 0x0c
    pub disable_active_migration: bool,
    /// 0x0d, server only.
    pub preferred_address: Option<PreferredAddress>,
    /// 0x0e; at least 2; default 2.
    pub active_connection_id_limit: u64,
    /// 0x0f
    pub initial_source_connection_id: Option<ConnectionId>,
    /// 0x10, server only.
    pub retry_source_connection_id: Option<ConnectionId>,
    /// 0x20 (RFC 9221)
    pub max_datagram_frame_size: Option<u64>,
    /// 0xff04de1b (draft-ietf-quic-ack-frequency): min_ack_delay in microseconds.
    /// Must not exceed max_ack_delay.
    pub min_ack_delay: Option<u64>,
}

/// preferred_address (RFC 9000 §18.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredAddress {
    /// IPv4 address and port (0.0.0.0:0 when absent).
    pub ipv4: SocketAddrV4,
    /// IPv6 address and port ([::]:0 when absent).
    pub ipv6: SocketAddrV6,
    /// Connection ID for the new address (1..=20 bytes).
    pub cid: ConnectionId,
    /// Its stateless reset token.
    pub reset_token: ResetToken,
}

impl Default for TransportParameters {
    /// The RFC's defaults for absent parameters (not quark's configuration).
    fn default() -> Self {
        todo!("transport parameters")
    }
}

impl TransportParameters {
    /// Append the encoding (ids and lengths as varints). Parameters equal to their
    /// default are omitted. Also writes one reserved "grease" parameter
    /// (id 31 * N + 27) so peers keep ignoring unknown ids.
    pub fn encode(&self, buf: &mut Vec<u8>) {
        let _ = buf;
        todo!("transport parameters")
    }

    /// Decode parameters sent by `sender`. Unknown ids are ignored; duplicates,
    /// out-of-range values, bad lengths, and server-only parameters sent by a
    /// client are TRANSPORT_PARAMETER_ERROR.
    pub fn decode(sender: Side, data: &[u8]) -> Result<Self, TransportError> {
        let _ = (sender, data);
        todo!("transport parameters")
    }
}
