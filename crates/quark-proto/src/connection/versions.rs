//! Downgrade protection with the version_information transport parameter
//! (RFC 9368 §4). quark does not change versions within a connection (no
//! compatible upgrade yet), so the version in use is the one the client chose
//! in its first Initial, and both sides' Chosen Version must say so.

use super::Connection;
use crate::error::{TransportError, TransportErrorCode};
use crate::transport_params::{TransportParameters, VersionInformation};

impl Connection {
    /// What we declare: the version in use, and the versions we accept
    /// (client: only the one in use, since quark cannot switch mid-handshake;
    /// server: every version it supports).
    pub(crate) fn version_information(version: u32, supported: &[u32]) -> VersionInformation {
        let mut available = smallvec::SmallVec::new();
        available.push(version);
        for &v in supported {
            if v != version {
                available.push(v);
            }
        }
        VersionInformation {
            chosen: version,
            available,
        }
    }

    /// Check the peer's version_information against the version in use.
    pub(super) fn check_version_information(
        &self,
        params: &TransportParameters,
    ) -> Result<(), TransportError> {
        let Some(info) = &params.version_information else {
            // A peer without RFC 9368 support: nothing to validate.
            return Ok(());
        };
        // RFC 9368 §4: the server checks the client's Chosen Version against
        // the long header of the Initial it arrived in; the client checks the
        // server's against the version the connection uses. A mismatch is a
        // version downgrade attempt: VERSION_NEGOTIATION_ERROR.
        if info.chosen != self.version {
            return Err(TransportError::new(
                TransportErrorCode::VERSION_NEGOTIATION_ERROR,
                format!(
                    "peer's chosen version {:#x} is not the version in use {:#x}",
                    info.chosen, self.version
                ),
            ));
        }
        Ok(())
    }
}
