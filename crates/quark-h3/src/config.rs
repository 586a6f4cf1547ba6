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
    /// streams: the cheapest path). Default 4096.
    pub qpack_max_table_capacity: u64,
    /// Streams the peer's encoder may leave blocked on inserts not yet
    /// received (SETTINGS_QPACK_BLOCKED_STREAMS). Default 16.
    pub qpack_blocked_streams: u64,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_field_section_size: 64 * 1024,
            qpack_max_table_capacity: 4096,
            qpack_blocked_streams: 16,
        }
    }
}

impl Config {
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
        }
    }
}
