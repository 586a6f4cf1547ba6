//! Transport parameters (RFC 9000 §18), carried in the TLS handshake.
//!
//! Decoding validates every rule of §18.2 (values, lengths, duplicates, server-only
//! parameters) and returns TRANSPORT_PARAMETER_ERROR. The checks that need the
//! connection's context — §7.3's connection ID authentication, including the
//! presence of initial_source_connection_id and original_destination_connection_id —
//! belong to the connection.
//!
//= https://www.rfc-editor.org/rfc/rfc9000#section-18
//# Transport Parameter { Transport Parameter ID (i),
//# Transport Parameter Length (i), Transport Parameter Value (..) }

mod decode;
mod encode;
#[cfg(test)]
mod tests;
mod version_info;

use std::net::{SocketAddrV4, SocketAddrV6};
use std::time::Duration;

use crate::cid::{ConnectionId, ResetToken};

pub use version_info::{MAX_AVAILABLE_VERSIONS, VersionInformation};

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
    /// 0x11 (RFC 9368 §3): the version in use and the versions offered.
    pub version_information: Option<VersionInformation>,
    /// 0x2ab2 (RFC 9287): the sender accepts packets with the QUIC bit
    /// cleared, so its peer may grease it.
    pub grease_quic_bit: bool,
}

/// preferred_address (RFC 9000 §18.2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PreferredAddress {
    /// IPv4 address and port (0.0.0.0:0 when absent).
    pub ipv4: SocketAddrV4,
    /// IPv6 address and port (`[::]:0` when absent).
    pub ipv6: SocketAddrV6,
    /// Connection ID for the new address (1..=20 bytes).
    pub cid: ConnectionId,
    /// Its stateless reset token.
    pub reset_token: ResetToken,
}

/// Transport parameter ids (RFC 9000 §18.2, RFC 9221 §3, draft-ietf-quic-ack-frequency §3).
mod id {
    pub(super) const ORIGINAL_DESTINATION_CONNECTION_ID: u64 = 0x00;
    pub(super) const MAX_IDLE_TIMEOUT: u64 = 0x01;
    pub(super) const STATELESS_RESET_TOKEN: u64 = 0x02;
    pub(super) const MAX_UDP_PAYLOAD_SIZE: u64 = 0x03;
    pub(super) const INITIAL_MAX_DATA: u64 = 0x04;
    pub(super) const INITIAL_MAX_STREAM_DATA_BIDI_LOCAL: u64 = 0x05;
    pub(super) const INITIAL_MAX_STREAM_DATA_BIDI_REMOTE: u64 = 0x06;
    pub(super) const INITIAL_MAX_STREAM_DATA_UNI: u64 = 0x07;
    pub(super) const INITIAL_MAX_STREAMS_BIDI: u64 = 0x08;
    pub(super) const INITIAL_MAX_STREAMS_UNI: u64 = 0x09;
    pub(super) const ACK_DELAY_EXPONENT: u64 = 0x0a;
    pub(super) const MAX_ACK_DELAY: u64 = 0x0b;
    pub(super) const DISABLE_ACTIVE_MIGRATION: u64 = 0x0c;
    pub(super) const PREFERRED_ADDRESS: u64 = 0x0d;
    pub(super) const ACTIVE_CONNECTION_ID_LIMIT: u64 = 0x0e;
    pub(super) const INITIAL_SOURCE_CONNECTION_ID: u64 = 0x0f;
    pub(super) const RETRY_SOURCE_CONNECTION_ID: u64 = 0x10;
    pub(super) const MAX_DATAGRAM_FRAME_SIZE: u64 = 0x20;
    pub(super) const MIN_ACK_DELAY: u64 = 0xff04de1b;
    pub(super) const VERSION_INFORMATION: u64 = 0x11;
    pub(super) const GREASE_QUIC_BIT: u64 = 0x2ab2;
}

/// Default max_udp_payload_size: the largest UDP payload.
const DEFAULT_MAX_UDP_PAYLOAD_SIZE: u64 = 65527;
/// Default ack_delay_exponent.
const DEFAULT_ACK_DELAY_EXPONENT: u8 = 3;
/// Default max_ack_delay.
const DEFAULT_MAX_ACK_DELAY: Duration = Duration::from_millis(25);
/// Default (and minimum) active_connection_id_limit.
const DEFAULT_ACTIVE_CONNECTION_ID_LIMIT: u64 = 2;

impl Default for TransportParameters {
    /// The RFC's defaults for absent parameters (not quark's configuration).
    //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
    //# Transport parameters have a default value of 0 if the transport
    //# parameter is absent, unless otherwise stated.
    fn default() -> Self {
        TransportParameters {
            original_destination_connection_id: None,
            max_idle_timeout: Duration::ZERO,
            stateless_reset_token: None,
            max_udp_payload_size: DEFAULT_MAX_UDP_PAYLOAD_SIZE,
            initial_max_data: 0,
            initial_max_stream_data_bidi_local: 0,
            initial_max_stream_data_bidi_remote: 0,
            initial_max_stream_data_uni: 0,
            initial_max_streams_bidi: 0,
            initial_max_streams_uni: 0,
            ack_delay_exponent: DEFAULT_ACK_DELAY_EXPONENT,
            max_ack_delay: DEFAULT_MAX_ACK_DELAY,
            disable_active_migration: false,
            preferred_address: None,
            active_connection_id_limit: DEFAULT_ACTIVE_CONNECTION_ID_LIMIT,
            initial_source_connection_id: None,
            retry_source_connection_id: None,
            max_datagram_frame_size: None,
            min_ack_delay: None,
            version_information: None,
            grease_quic_bit: false,
        }
    }
}
