//! Reading and validating transport parameters.

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddrV4, SocketAddrV6};
use std::time::Duration;

use smallvec::SmallVec;

use super::{PreferredAddress, TransportParameters, id};
use crate::cid::{ConnectionId, MAX_CID_LEN, RESET_TOKEN_LEN, ResetToken};
use crate::coding::Reader;
use crate::error::TransportError;
use crate::types::Side;

/// Why a parameter list was rejected; always TRANSPORT_PARAMETER_ERROR.
type Reason = &'static str;

/// Most parameters of ids this decoder does not know (GREASE, extensions) taken
/// in one list. Their ids are kept sorted to find duplicates; the cap keeps
/// that small and linear in the list, however long a list the peer sends.
const MAX_UNKNOWN: usize = 128;

impl TransportParameters {
    /// Decode parameters sent by `sender`. Unknown ids are ignored (up to
    /// 128 of them); duplicates of any id, out-of-range values,
    /// bad lengths, and server-only parameters sent by a client are
    /// TRANSPORT_PARAMETER_ERROR.
    pub fn decode(sender: Side, data: &[u8]) -> Result<Self, TransportError> {
        decode(sender, data).map_err(TransportError::transport_parameter)
    }
}

fn decode(sender: Side, data: &[u8]) -> Result<TransportParameters, Reason> {
    let mut params = TransportParameters::default();
    let mut seen = 0u32;
    let mut unknown: SmallVec<[u64; 8]> = SmallVec::new();
    let mut r = Reader::new(data);
    while !r.is_empty() {
        let id = r.varint().map_err(|_| "truncated parameter id")?;
        let value = r
            .varint_bytes()
            .map_err(|_| "parameter value beyond the end")?;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-7.4
        //# An endpoint MUST NOT send a parameter more than once in a given
        //# transport parameters extension.  An endpoint SHOULD treat receipt of
        //# duplicate transport parameters as a connection error of type
        //# TRANSPORT_PARAMETER_ERROR.
        // Known ids are tracked in a bit set; unknown ones, reserved ones
        // included, in a short sorted list, and otherwise skipped.
        let Some(bit) = known_bit(id) else {
            match unknown.binary_search(&id) {
                Ok(_) => return Err("duplicate transport parameter"),
                Err(_) if unknown.len() == MAX_UNKNOWN => {
                    return Err("too many unknown transport parameters");
                }
                Err(at) => unknown.insert(at, id),
            }
            continue;
        };
        if seen & bit != 0 {
            return Err("duplicate transport parameter");
        }
        seen |= bit;
        apply(&mut params, sender, id, value)?;
    }
    check_combined(&params)?;
    Ok(params)
}

/// A distinct bit for each parameter this decoder knows.
fn known_bit(id: u64) -> Option<u32> {
    match id {
        0x00..=0x11 => Some(1 << id),
        id::MAX_DATAGRAM_FRAME_SIZE => Some(1 << 18),
        id::MIN_ACK_DELAY => Some(1 << 19),
        id::GREASE_QUIC_BIT => Some(1 << 20),
        _ => None,
    }
}

fn apply(p: &mut TransportParameters, sender: Side, id: u64, value: &[u8]) -> Result<(), Reason> {
    //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
    //# A client MUST NOT include any server-only transport parameter:
    //# original_destination_connection_id, preferred_address,
    //# retry_source_connection_id, or stateless_reset_token.  A server MUST
    //# treat receipt of any of these transport parameters as a connection
    //# error of type TRANSPORT_PARAMETER_ERROR.
    if sender == Side::Client
        && matches!(
            id,
            id::ORIGINAL_DESTINATION_CONNECTION_ID
                | id::PREFERRED_ADDRESS
                | id::RETRY_SOURCE_CONNECTION_ID
                | id::STATELESS_RESET_TOKEN
        )
    {
        return Err("server-only transport parameter sent by a client");
    }
    match id {
        id::ORIGINAL_DESTINATION_CONNECTION_ID => {
            p.original_destination_connection_id = Some(cid(value)?);
        }
        id::MAX_IDLE_TIMEOUT => p.max_idle_timeout = Duration::from_millis(int(value)?),
        //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
        //# This parameter is a sequence of 16 bytes.
        id::STATELESS_RESET_TOKEN => {
            let token = <[u8; RESET_TOKEN_LEN]>::try_from(value)
                .map_err(|_| "stateless_reset_token is not 16 bytes")?;
            p.stateless_reset_token = Some(ResetToken(token));
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
        //# The default for this parameter is the maximum permitted UDP payload
        //# of 65527.  Values below 1200 are invalid.
        id::MAX_UDP_PAYLOAD_SIZE => {
            p.max_udp_payload_size = int(value)?;
            if p.max_udp_payload_size < 1200 {
                return Err("max_udp_payload_size below 1200");
            }
        }
        id::INITIAL_MAX_DATA => p.initial_max_data = int(value)?,
        id::INITIAL_MAX_STREAM_DATA_BIDI_LOCAL => {
            p.initial_max_stream_data_bidi_local = int(value)?;
        }
        id::INITIAL_MAX_STREAM_DATA_BIDI_REMOTE => {
            p.initial_max_stream_data_bidi_remote = int(value)?;
        }
        id::INITIAL_MAX_STREAM_DATA_UNI => p.initial_max_stream_data_uni = int(value)?,
        id::INITIAL_MAX_STREAMS_BIDI => p.initial_max_streams_bidi = stream_count(value)?,
        id::INITIAL_MAX_STREAMS_UNI => p.initial_max_streams_uni = stream_count(value)?,
        //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
        //# If this value is absent, a default value of 3 is assumed (indicating
        //# a multiplier of 8).  Values above 20 are invalid.
        id::ACK_DELAY_EXPONENT => {
            p.ack_delay_exponent = match int(value)? {
                v @ 0..=20 => v as u8,
                _ => return Err("ack_delay_exponent above 20"),
            };
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
        //# If this value is absent, a default of 25 milliseconds is assumed.
        //# Values of 2^14 or greater are invalid.
        id::MAX_ACK_DELAY => {
            let ms = int(value)?;
            if ms >= 1 << 14 {
                return Err("max_ack_delay of 2^14 ms or more");
            }
            p.max_ack_delay = Duration::from_millis(ms);
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
        //# This parameter is a zero-length value.
        id::DISABLE_ACTIVE_MIGRATION => {
            if !value.is_empty() {
                return Err("disable_active_migration has a value");
            }
            p.disable_active_migration = true;
        }
        id::PREFERRED_ADDRESS => p.preferred_address = Some(preferred_address(value)?),
        //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
        //# The value of the active_connection_id_limit parameter MUST be at
        //# least 2.  An endpoint that receives a value less than 2 MUST close
        //# the connection with an error of type TRANSPORT_PARAMETER_ERROR.
        id::ACTIVE_CONNECTION_ID_LIMIT => {
            p.active_connection_id_limit = int(value)?;
            if p.active_connection_id_limit < 2 {
                return Err("active_connection_id_limit below 2");
            }
        }
        id::INITIAL_SOURCE_CONNECTION_ID => p.initial_source_connection_id = Some(cid(value)?),
        id::RETRY_SOURCE_CONNECTION_ID => p.retry_source_connection_id = Some(cid(value)?),
        id::MAX_DATAGRAM_FRAME_SIZE => p.max_datagram_frame_size = Some(int(value)?),
        id::MIN_ACK_DELAY => p.min_ack_delay = Some(int(value)?),
        id::VERSION_INFORMATION => {
            p.version_information = Some(super::VersionInformation::decode(value)?);
        }
        //= https://www.rfc-editor.org/rfc/rfc9287#section-3
        //# An endpoint that receives the grease_quic_bit transport parameter
        //# with a non-zero-length value MUST treat that as a connection error
        //# of type TRANSPORT_PARAMETER_ERROR.
        id::GREASE_QUIC_BIT => {
            if !value.is_empty() {
                return Err("grease_quic_bit has a value");
            }
            p.grease_quic_bit = true;
        }
        _ => {}
    }
    Ok(())
}

/// Rules that involve more than one parameter.
fn check_combined(p: &TransportParameters) -> Result<(), Reason> {
    // draft-ietf-quic-ack-frequency §3: an endpoint's min_ack_delay MUST NOT be
    // greater than its max_ack_delay [...] MUST treat receipt of a min_ack_delay
    // that is greater than the max_ack_delay as a connection error of type
    // TRANSPORT_PARAMETER_ERROR. (min_ack_delay is in µs, max_ack_delay in ms.)
    if let Some(min) = p.min_ack_delay {
        if u128::from(min) > p.max_ack_delay.as_micros() {
            return Err("min_ack_delay exceeds max_ack_delay");
        }
    }
    //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
    //# A server that chooses a zero-length connection ID MUST NOT provide a
    //# preferred address.
    if p.preferred_address.is_some()
        && p.initial_source_connection_id
            .is_some_and(|cid| cid.is_empty())
    {
        return Err("preferred_address with a zero-length connection ID");
    }
    Ok(())
}

/// An integer parameter: exactly one varint filling the value.
fn int(value: &[u8]) -> Result<u64, Reason> {
    let mut r = Reader::new(value);
    match r.varint() {
        Ok(v) if r.is_empty() => Ok(v),
        _ => Err("integer parameter of the wrong length"),
    }
}

//= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
//# The initial maximum bidirectional streams parameter is an integer value
//# [...] Setting this parameter is equivalent to sending a MAX_STREAMS
//# of the corresponding type with the same value.
//
// And MAX_STREAMS cannot exceed 2^60 (§19.11).
fn stream_count(value: &[u8]) -> Result<u64, Reason> {
    let v = int(value)?;
    if v > 1 << 60 {
        return Err("initial_max_streams above 2^60");
    }
    Ok(v)
}

fn cid(value: &[u8]) -> Result<ConnectionId, Reason> {
    ConnectionId::new(value).ok_or("connection ID longer than 20 bytes")
}

fn preferred_address(value: &[u8]) -> Result<PreferredAddress, Reason> {
    const SHORT: Reason = "truncated preferred_address";
    let mut r = Reader::new(value);
    let ip4 = Ipv4Addr::from(r.array::<4>().map_err(|_| SHORT)?);
    let ipv4 = SocketAddrV4::new(ip4, r.u16().map_err(|_| SHORT)?);
    let ip6 = Ipv6Addr::from(r.array::<16>().map_err(|_| SHORT)?);
    let ipv6 = SocketAddrV6::new(ip6, r.u16().map_err(|_| SHORT)?, 0, 0);
    //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
    //# Similarly, a server MUST NOT include a zero-length connection ID in
    //# this transport parameter.  A client MUST treat violation of these
    //# requirements as a connection error of type TRANSPORT_PARAMETER_ERROR.
    let len = usize::from(r.u8().map_err(|_| SHORT)?);
    if !(1..=MAX_CID_LEN).contains(&len) {
        return Err("bad preferred_address connection ID length");
    }
    let cid = cid(r.bytes(len).map_err(|_| SHORT)?)?;
    let reset_token = ResetToken(r.array().map_err(|_| SHORT)?);
    if !r.is_empty() {
        return Err("trailing bytes in preferred_address");
    }
    Ok(PreferredAddress {
        ipv4,
        ipv6,
        cid,
        reset_token,
    })
}
