//! What an HTTP/3 endpoint announces and allows: [`Config`].

use crate::settings::Settings;

/// Settings of a [`Client`](crate::Client) or [`Server`](crate::Server).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Config {
    /// The largest field section we accept (SETTINGS_MAX_FIELD_SECTION_SIZE,
    /// RFC 9114 §4.2.2 size). Default 64 KiB.
    pub max_field_section_size: u64,
    /// QPACK dynamic table capacity in bytes (RFC 9204 §3.2.3): we announce
    /// it as SETTINGS_QPACK_MAX_TABLE_CAPACITY for the peer's encoder, and our
    /// own encoder uses at most this much of what the peer announces. 0
    /// turns the dynamic table off both ways (static table only, no QPACK
    /// streams: the cheapest path). Default 0; [`Config::dynamic_qpack`]
    /// sets [`QPACK_CAPACITY`].
    pub qpack_max_table_capacity: u64,
    /// Streams the peer's encoder may leave blocked on inserts not yet
    /// received (SETTINGS_QPACK_BLOCKED_STREAMS); only announced with a
    /// table. Default [`QPACK_BLOCKED_STREAMS`].
    pub qpack_blocked_streams: u64,
    /// Accept Extended CONNECT (RFC 9220: SETTINGS_ENABLE_CONNECT_PROTOCOL,
    /// requests with `:protocol`, see [`Protocol`](crate::Protocol)). A server
    /// setting. Default off.
    pub extended_connect: bool,
    /// HTTP Datagrams (RFC 9297: SETTINGS_H3_DATAGRAM) on CONNECT streams,
    /// carried in QUIC DATAGRAM frames: the QUIC connection needs
    /// `TransportConfig::max_datagram_frame_size`. Default off.
    pub h3_datagram: bool,
}

/// The dynamic table capacity browsers and most servers announce.
pub const QPACK_CAPACITY: u64 = 4096;
/// The blocked streams browsers and most servers allow.
pub const QPACK_BLOCKED_STREAMS: u64 = 16;

/// Static table only by default, as hyperium h3 and quic-go: the dynamic
/// table saves header bytes (a browsing session's to a fifth, see
/// `quark-qpack`'s `browsing_session` example) but costs each request a
/// Section Acknowledgment on the decoder stream: 13-16 % fewer requests per
/// CPU-second with a benchmark's minimal heads (`examples/qpack_cost.rs`).
/// `quark serve --h3` and `quark get --h3` turn it on.
impl Default for Config {
    fn default() -> Self {
        Config {
            max_field_section_size: 64 * 1024,
            qpack_max_table_capacity: 0,
            qpack_blocked_streams: QPACK_BLOCKED_STREAMS,
            extended_connect: false,
            h3_datagram: false,
        }
    }
}

impl Config {
    /// The default with QPACK's dynamic table on: [`QPACK_CAPACITY`] bytes,
    /// [`QPACK_BLOCKED_STREAMS`] blocked streams.
    pub fn dynamic_qpack() -> Config {
        Config {
            qpack_max_table_capacity: QPACK_CAPACITY,
            ..Config::default()
        }
    }

    /// The SETTINGS we announce. Blocked streams mean nothing without a
    /// table, so they are announced only with one.
    pub(crate) fn settings(&self) -> Settings {
        let dynamic = self.qpack_max_table_capacity > 0;
        Settings {
            max_field_section_size: Some(self.max_field_section_size),
            qpack_max_table_capacity: self.qpack_max_table_capacity,
            qpack_blocked_streams: if dynamic {
                self.qpack_blocked_streams
            } else {
                0
            },
            enable_connect_protocol: self.extended_connect,
            h3_datagram: self.h3_datagram,
        }
    }
}
