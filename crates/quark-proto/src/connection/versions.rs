//! Compatible version negotiation (RFC 9368): a server may answer a v1
//! Initial in v2 when the client offered v2; the client follows. And the
//! downgrade protection of the version_information transport parameter (§4).

use super::Connection;
use crate::crypto::Keys;
use crate::error::{TransportError, TransportErrorCode};
use crate::transport_params::{TransportParameters, VersionInformation};
use crate::types::{PacketKind, Side, SpaceId};

/// What a connection remembers of the versions of its handshake.
pub(crate) struct Negotiation {
    /// The version of the client's first Initial.
    original: u32,
    /// Client: the versions it offered to be moved to.
    compatible: Vec<u32>,
    /// Initial keys of the other version: server after an upgrade, the
    /// original version's (to open the client's Initials sent before it heard
    /// from us); client, the new version's while trying the server's first
    /// Initial in it.
    /// Boxed: most connections never have them.
    original_initial: Option<Box<Keys>>,
}

impl Negotiation {
    pub(crate) fn new(original: u32, compatible: Vec<u32>) -> Self {
        Negotiation {
            original,
            compatible,
            original_initial: None,
        }
    }

    pub(crate) fn set_original_initial(&mut self, keys: Keys) {
        self.original_initial = Some(Box::new(keys));
    }

    /// The handshake is over: the original version's Initials are no more.
    pub(crate) fn forget_original_initial(&mut self) {
        self.original_initial = None;
    }
}

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
            // A peer without RFC 9368 support: nothing to validate, unless
            // it moved us to another version, which only RFC 9368 allows.
            if self.version != self.versions.original {
                return Err(TransportError::new(
                    TransportErrorCode::VERSION_NEGOTIATION_ERROR,
                    "version changed without version_information",
                ));
            }
            return Ok(());
        };
        // RFC 9368 §4: the server checks the client's Chosen Version against
        // the long header of the Initial it arrived in; the client checks the
        // server's against the version the connection uses. A mismatch is a
        // version downgrade attempt: VERSION_NEGOTIATION_ERROR.
        let expected = match self.side {
            Side::Server => self.versions.original,
            Side::Client => self.version,
        };
        if info.chosen != expected {
            return Err(TransportError::new(
                TransportErrorCode::VERSION_NEGOTIATION_ERROR,
                format!(
                    "peer's chosen version {:#x} is not the version in use {:#x}",
                    info.chosen, expected
                ),
            ));
        }
        Ok(())
    }
}

impl Connection {
    /// A long-header packet of another version than ours arrived. Client: the
    /// server's first Initial in a version we offered moves us to it (RFC
    /// 9368 §2.3). Server: the client's Initials in the original version are
    /// still opened, with the original keys (`swap_original_initial`).
    /// Returns whether to try opening the packet with the other keys.
    pub(super) fn on_other_version(&mut self, kind: PacketKind, version: u32) -> bool {
        if kind != PacketKind::Initial {
            return false;
        }
        match self.side {
            Side::Server => {
                version == self.versions.original
                    && self.versions.original_initial.is_some()
                    && self.spaces[SpaceId::Initial.index()].keys.is_some()
            }
            Side::Client => {
                if self.got_server_initial
                    || self.received_any
                    || !self.versions.compatible.contains(&version)
                    || !self.tls.can_switch_version()
                {
                    return false;
                }
                // Candidate Initial keys from the ID our Initials go to (the
                // random one, or the Retry's), with the new version's salt;
                // adopted only if the packet opens with them.
                let cid = self.peer_cids.active();
                self.versions
                    .set_original_initial(crate::crypto::initial_keys_for(
                        version, &cid, self.side,
                    ));
                true
            }
        }
    }

    /// Client, after trying a packet of `version` with the candidate keys:
    /// if it opened, the server has moved us to `version`. Either way the
    /// keys not in use go.
    pub(super) fn after_other_version(&mut self, version: u32, opened: bool) {
        if self.side.is_client() {
            if opened && self.tls.switch_version(version) {
                tracing::debug!(
                    version = format_args!("{version:#x}"),
                    "server moved us to another version"
                );
                self.swap_original_initial();
                self.version = version;
            }
            self.versions.forget_original_initial();
        }
    }

    /// Exchange the Initial keys with the other version's, around opening an
    /// Initial of that version.
    pub(super) fn swap_original_initial(&mut self) {
        let Some(original) = self.versions.original_initial.as_mut() else {
            return;
        };
        if let Some(keys) = self.spaces[SpaceId::Initial.index()].keys.as_mut() {
            std::mem::swap(keys, &mut **original);
        }
    }
}
