//! The client's side of migration: moving on purpose to a new local address
//! (RFC 9000 §9.2) and to the server's preferred address (§9.6).

use std::net::SocketAddr;
use std::time::Instant;

use super::{MigrateError, same_host};
use crate::connection::{Connection, Path};

impl Connection {
    /// Client: the server's preferred_address parameter. Its ID becomes
    /// the peer's sequence 1 (RFC 9000 §5.1.1); the address of our family is
    /// where we go once the handshake is confirmed.
    pub(crate) fn note_preferred_address(
        &mut self,
        pa: &crate::transport_params::PreferredAddress,
    ) -> Result<(), crate::error::TransportError> {
        if !self.config.active_migration {
            return Ok(());
        }
        let addr = match self.path.remote {
            SocketAddr::V4(_) if !pa.ipv4.ip().is_unspecified() && pa.ipv4.port() != 0 => {
                SocketAddr::V4(pa.ipv4)
            }
            SocketAddr::V6(_) if !pa.ipv6.ip().is_unspecified() && pa.ipv6.port() != 0 => {
                SocketAddr::V6(pa.ipv6)
            }
            _ => return Ok(()),
        };
        let frame = crate::frame::NewConnectionId {
            seq: 1,
            retire_prior_to: 0,
            cid: pa.cid,
            reset_token: pa.reset_token.0,
        };
        self.peer_cids.on_new(&frame, &mut self.cid_events)?;
        if addr != self.path.remote {
            self.migration.preferred = Some(addr);
        }
        Ok(())
    }

    /// Client, handshake confirmed: move to the server's preferred address
    /// with its connection ID, validate it, and go back if that fails.
    pub(crate) fn follow_preferred_address(&mut self, now: Instant) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.6.1
        //# Once the handshake is confirmed, the client SHOULD select one of the
        //# two addresses provided by the server and initiate path validation
        let Some(remote) = self.migration.preferred.take() else {
            return;
        };
        if !self.peer_cids.rotate(&mut self.cid_events) {
            return;
        }
        let new = Path {
            remote,
            local_ip: self.path.local_ip,
            validated: true, // a client is never held to the 3x limit
            bytes_received: 0,
            bytes_sent: 0,
            mtu: self.path.mtu,
        };
        let left = std::mem::replace(&mut self.path, new);
        let old = left.remote;
        self.migration.prev = Some(Box::new(left));
        self.rare_stats().migrations += 1;
        tracing::debug!(%old, %remote, "to the server's preferred address");
        if !same_host(old, remote) {
            self.reset_path_state();
        }
        self.start_validation(now);
        self.ping_pending = true;
    }

    /// Client: move the connection to a new local address (the caller sends
    /// from it from now on). A fresh connection ID of the peer is used and the
    /// path validated; `same_host` says only the port changed, so congestion
    /// state carries over (RFC 9000 §9.4).
    pub fn migrate(&mut self, now: Instant, same_host: bool) -> Result<(), MigrateError> {
        if self.side.is_server() {
            return Err(MigrateError::NotClient);
        }
        if !self.handshake_confirmed || self.is_closed() {
            return Err(MigrateError::NotConfirmed);
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
        //# If this transport parameter is received, an endpoint MUST NOT use a
        //# new local address when sending to the address that the peer used
        //# during the handshake.
        let disabled = self
            .peer_params
            .as_ref()
            .is_some_and(|p| p.disable_active_migration);
        if disabled || !self.config.active_migration {
            return Err(MigrateError::Disabled);
        }
        if !self.peer_cids.has_spare() || !self.peer_cids.rotate(&mut self.cid_events) {
            return Err(MigrateError::NoConnectionId);
        }
        self.rare_stats().migrations += 1;
        if !same_host {
            self.reset_path_state();
        }
        self.start_validation(now);
        // A non-probing frame moves the server to the new address (§9.2).
        self.ping_pending = true;
        Ok(())
    }
}
