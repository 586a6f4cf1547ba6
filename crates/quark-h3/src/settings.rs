//! The SETTINGS frame (RFC 9114 §7.2.4; QPACK's settings from RFC 9204 §5).

use quark_proto::coding::Reader;
use quark_proto::varint::put_varint;

use crate::error::{Error, H3_SETTINGS_ERROR};

/// SETTINGS_QPACK_MAX_TABLE_CAPACITY.
pub const QPACK_MAX_TABLE_CAPACITY: u64 = 0x01;
/// SETTINGS_MAX_FIELD_SECTION_SIZE.
pub const MAX_FIELD_SECTION_SIZE: u64 = 0x06;
/// SETTINGS_QPACK_BLOCKED_STREAMS.
pub const QPACK_BLOCKED_STREAMS: u64 = 0x07;
/// SETTINGS_ENABLE_CONNECT_PROTOCOL (RFC 9220 §3, from RFC 8441 §3).
pub const ENABLE_CONNECT_PROTOCOL: u64 = 0x08;
/// SETTINGS_H3_DATAGRAM (RFC 9297 §2.1.1).
pub const H3_DATAGRAM: u64 = 0x33;

/// Most settings we keep track of in one frame; the rest are ignored, but the
/// frame's length is bounded by the reader (duplicates are found among these).
const MAX_SEEN: usize = 64;

/// The settings an endpoint announces. Unknown identifiers are ignored, as
/// the RFC requires.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Settings {
    /// The largest field section (RFC 9114 §4.2.2 size) the sender accepts.
    pub max_field_section_size: Option<u64>,
    /// The QPACK dynamic table capacity the sender's decoder allows.
    pub qpack_max_table_capacity: u64,
    /// Streams the sender's decoder lets block.
    pub qpack_blocked_streams: u64,
    /// The sender accepts Extended CONNECT (`:protocol`, RFC 9220).
    pub enable_connect_protocol: bool,
    /// The sender accepts HTTP Datagrams (RFC 9297).
    pub h3_datagram: bool,
}

impl Settings {
    /// The payload of a SETTINGS frame announcing these settings.
    pub fn encode(&self, out: &mut Vec<u8>) {
        if let Some(max) = self.max_field_section_size {
            put_varint(out, MAX_FIELD_SECTION_SIZE);
            put_varint(out, max);
        }
        // Zero is the default for both QPACK settings: leave them out.
        for (id, v) in [
            (QPACK_MAX_TABLE_CAPACITY, self.qpack_max_table_capacity),
            (QPACK_BLOCKED_STREAMS, self.qpack_blocked_streams),
        ] {
            if v != 0 {
                put_varint(out, id);
                put_varint(out, v);
            }
        }
        for (id, on) in [
            (ENABLE_CONNECT_PROTOCOL, self.enable_connect_protocol),
            (H3_DATAGRAM, self.h3_datagram),
        ] {
            if on {
                put_varint(out, id);
                put_varint(out, 1);
            }
        }
    }

    /// Parses a SETTINGS payload: a duplicate identifier or an HTTP/2 setting is
    /// H3_SETTINGS_ERROR, a truncated pair H3_FRAME_ERROR.
    pub fn decode(payload: &[u8]) -> Result<Settings, Error> {
        let mut r = Reader::new(payload);
        let mut out = Settings::default();
        let mut seen = [0u64; MAX_SEEN];
        let mut n_seen = 0;
        while !r.is_empty() {
            let (Ok(id), Ok(value)) = (r.varint(), r.varint()) else {
                return Err(Error::conn(
                    crate::error::H3_FRAME_ERROR,
                    "truncated setting",
                ));
            };
            if seen[..n_seen].contains(&id) {
                return Err(Error::conn(H3_SETTINGS_ERROR, "duplicate setting"));
            }
            if n_seen < MAX_SEEN {
                seen[n_seen] = id;
                n_seen += 1;
            }
            match id {
                // HTTP/2's SETTINGS_ENABLE_PUSH, MAX_CONCURRENT_STREAMS,
                // INITIAL_WINDOW_SIZE, MAX_FRAME_SIZE (and 0x00) are reserved.
                0x00 | 0x02..=0x05 => {
                    return Err(Error::conn(H3_SETTINGS_ERROR, "an HTTP/2 setting"));
                }
                MAX_FIELD_SECTION_SIZE => out.max_field_section_size = Some(value),
                QPACK_MAX_TABLE_CAPACITY => out.qpack_max_table_capacity = value,
                QPACK_BLOCKED_STREAMS => out.qpack_blocked_streams = value,
                // RFC 9220 §3 and RFC 9297 §2.1.1: 0 or 1, anything else is
                // H3_SETTINGS_ERROR.
                ENABLE_CONNECT_PROTOCOL | H3_DATAGRAM => {
                    let on = match value {
                        0 => false,
                        1 => true,
                        _ => return Err(Error::conn(H3_SETTINGS_ERROR, "a flag not 0 or 1")),
                    };
                    if id == H3_DATAGRAM {
                        out.h3_datagram = on;
                    } else {
                        out.enable_connect_protocol = on;
                    }
                }
                _ => {}
            }
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_ignores_unknown_and_refuses_duplicates_and_http2() {
        let s = Settings {
            max_field_section_size: Some(16 << 10),
            qpack_max_table_capacity: 4096,
            qpack_blocked_streams: 16,
            enable_connect_protocol: true,
            h3_datagram: true,
        };
        let mut p = Vec::new();
        s.encode(&mut p);
        // A greased identifier (0x1f * N + 0x21) must be ignored.
        put_varint(&mut p, 0x1f * 2 + 0x21);
        put_varint(&mut p, 7);
        assert_eq!(Settings::decode(&p).unwrap(), s);

        let mut dup = p.clone();
        put_varint(&mut dup, MAX_FIELD_SECTION_SIZE);
        put_varint(&mut dup, 1);
        let code = |r: Result<Settings, Error>| match r {
            Err(Error::Connection { code, .. }) => code,
            other => panic!("{other:?}"),
        };
        assert_eq!(code(Settings::decode(&dup)), H3_SETTINGS_ERROR);
        assert_eq!(code(Settings::decode(&[0x02, 0x01])), H3_SETTINGS_ERROR);
        assert_eq!(
            code(Settings::decode(&[0x06])),
            crate::error::H3_FRAME_ERROR
        );
        assert_eq!(Settings::decode(&[]).unwrap(), Settings::default());
        assert_eq!(code(Settings::decode(&[0x08, 0x02])), H3_SETTINGS_ERROR);
        assert_eq!(code(Settings::decode(&[0x33, 0x02])), H3_SETTINGS_ERROR);
        assert!(!Settings::decode(&[0x33, 0x00]).unwrap().h3_datagram);
    }
}
