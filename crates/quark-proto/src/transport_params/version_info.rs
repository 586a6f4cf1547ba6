//! The version_information transport parameter (RFC 9368 §3).

use smallvec::SmallVec;

use crate::coding::Reader;
use crate::varint::put_varint;

/// Most Available Versions kept from a peer. A longer list is refused
/// (TRANSPORT_PARAMETER_ERROR) rather than stored: the list is peer input.
pub const MAX_AVAILABLE_VERSIONS: usize = 32;

//= https://www.rfc-editor.org/rfc/rfc9368#section-3
//# Version Information {
//#   Chosen Version (32),
//#   Available Versions (32) ...,
//# }
/// What an endpoint says about versions in its handshake.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VersionInformation {
    /// The version the sender uses for this connection.
    pub chosen: u32,
    /// The versions the sender supports (client: the ones compatible with
    /// `chosen` it would accept; server: the ones it accepts), most
    /// preferred first.
    pub available: SmallVec<[u32; 4]>,
}

impl VersionInformation {
    pub(super) fn encode(&self, buf: &mut Vec<u8>, id: u64) {
        put_varint(buf, id);
        put_varint(buf, 4 * (1 + self.available.len() as u64));
        buf.extend_from_slice(&self.chosen.to_be_bytes());
        for v in &self.available {
            buf.extend_from_slice(&v.to_be_bytes());
        }
    }

    pub(super) fn decode(value: &[u8]) -> Result<Self, &'static str> {
        // RFC 9368 §4: a version_information that cannot be parsed closes the
        // connection with TRANSPORT_PARAMETER_ERROR (the caller's code).
        if value.is_empty() || value.len() % 4 != 0 {
            return Err("version_information length is not a positive multiple of 4");
        }
        if value.len() / 4 - 1 > MAX_AVAILABLE_VERSIONS {
            return Err("version_information lists too many versions");
        }
        let mut r = Reader::new(value);
        let mut next = || r.u32().map_err(|_| "truncated version_information");
        // RFC 9368 §4: a Chosen or Available Version of zero is a parsing failure.
        let chosen = next()?;
        if chosen == 0 {
            return Err("version_information chooses version 0");
        }
        let mut available = SmallVec::new();
        for _ in 1..value.len() / 4 {
            match next()? {
                0 => return Err("version_information offers version 0"),
                v => available.push(v),
            }
        }
        Ok(VersionInformation { chosen, available })
    }
}
