//! Which connection a connection ID or a stateless reset token names, and the
//! bookkeeping that lets a connection's entries go with it.

use std::hash::BuildHasher;

use rand::Rng;

use super::{ConnectionHandle, Endpoint, Owned};
use crate::cid::{ConnectionId, ResetToken};
use crate::connection::{Connection, EndpointShared};

impl Endpoint {
    /// The endpoint's part of a new connection.
    pub(super) fn connection_shared(&mut self) -> EndpointShared {
        EndpointShared {
            reset_key: self.reset_key.clone(),
            rng_seed: self.rng.random(),
            cid_len: self.config.cid_len,
            cid_gen: self.cids.clone(),
            qlog: self.config.qlog_dir.is_some(),
            grease_quic_bit: self.config.grease_quic_bit,
        }
    }

    /// Keep a new connection and route its first connection ID to it.
    pub(super) fn insert(&mut self, conn: Connection, local_cid: ConnectionId) -> ConnectionHandle {
        let h = ConnectionHandle(self.conns.insert(Box::new(conn)));
        if self.owned.len() <= h.0 {
            self.owned.resize_with(h.0 + 1, Owned::default);
        }
        self.route(local_cid, h);
        h
    }

    /// The connection packets addressed to `cid` go to.
    pub(super) fn lookup(&mut self, cid: &ConnectionId) -> Option<ConnectionHandle> {
        if let Some((last, h)) = &self.last_route
            && last == cid
        {
            return Some(*h);
        }
        let h = *self.routes.get(&self.route_key.hash_one(cid))?;
        // The table holds hashes: the ID must be one `h` was given.
        if !self.owned[h.0].cids.contains(cid) {
            return None;
        }
        self.last_route = Some((*cid, h));
        Some(h)
    }

    /// Route packets addressed to `cid` to `h`.
    pub(super) fn route(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        self.forget_last_route(&cid);
        // Two IDs with one hash (2^-64 under the secret key; never for IDs
        // we make, see `new_cid`): the later one wins, and packets to the
        // other find no connection.
        self.routes.insert(self.route_key.hash_one(cid), h);
        let owned = &mut self.owned[h.0].cids;
        if !owned.contains(&cid) {
            owned.push(cid);
        }
    }

    /// Stop routing `cid` to `h` (if it still goes there).
    pub(super) fn unroute(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        let key = self.route_key.hash_one(cid);
        if self.routes.get(&key) == Some(&h) {
            self.routes.remove(&key);
            self.forget_last_route(&cid);
        }
        self.owned[h.0].cids.retain(|c| *c != cid);
    }

    pub(super) fn forget_last_route(&mut self, cid: &ConnectionId) {
        if self.last_route.is_some_and(|(last, _)| last == *cid) {
            self.last_route = None;
        }
    }

    /// Take `token` at the end of a datagram as a reset of `h`.
    pub(super) fn add_token(&mut self, token: ResetToken, h: ConnectionHandle) {
        self.reset_tokens.insert(self.route_key.hash_one(token), h);
        let owned = &mut self.owned[h.0].tokens;
        if !owned.contains(&token) {
            owned.push(token);
        }
    }

    /// Stop taking `token` as a reset of `h` (if it still is).
    pub(super) fn forget_token(&mut self, token: ResetToken, h: ConnectionHandle) {
        let key = self.route_key.hash_one(token);
        if self.reset_tokens.get(&key) == Some(&h) {
            self.reset_tokens.remove(&key);
        }
        self.owned[h.0].tokens.retain(|t| *t != token);
    }

    pub(super) fn new_cid(&mut self) -> ConnectionId {
        loop {
            let cid = self.cids.generate(&mut self.rng);
            // No other ID of ours has its hash (see `route`).
            if !self.routes.contains_key(&self.route_key.hash_one(cid)) {
                return cid;
            }
        }
    }
}
