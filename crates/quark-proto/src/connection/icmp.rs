//! ICMP reports about packets this connection sent (the driver reads them
//! from the socket's error queue; `Endpoint::handle_unreachable` and
//! `handle_too_big` find the connection): an unreachable peer ends a
//! handshake, a Packet Too Big guides path MTU discovery.

use std::net::SocketAddr;
use std::time::Instant;

use super::mtu::TooBig;
use super::{Connection, State};
use crate::ConnectionError;
use crate::cid::ConnectionId;

impl Connection {
    /// An ICMP error quoted a packet we sent to `remote` with `dst_cid` as
    /// its destination ID (its source ID routed it here). Ends the connection
    /// if it is still in its handshake, on its only path, and `dst_cid` is
    /// the peer's ID in use; returns whether it did.
    ///
    /// During the handshake nothing better is coming: a client at a closed
    /// port would wait out its timeout, a server keep a half-open connection
    /// for a client that is gone. Forging the message needs both IDs, which
    /// only the path sees. After the handshake the report is ignored: loss
    /// recovery and the idle timeout decide, as a brief route change or a
    /// NAT's stale binding must not end a working connection.
    pub(crate) fn handle_unreachable(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        dst_cid: &ConnectionId,
        port_closed: bool,
    ) -> bool {
        let applies = matches!(self.state, State::Handshake)
            && !self.handshake_complete
            && remote == self.path.remote
            && *dst_cid == self.peer_cids.active();
        if applies {
            tracing::debug!(side = ?self.side, %remote, port_closed, "peer unreachable");
            // No CONNECTION_CLOSE: there is no one to read it.
            self.enter_drained(now, ConnectionError::Unreachable { port_closed });
        }
        applies
    }

    /// An ICMP Packet Too Big quoted a packet we sent to `remote`, whose
    /// destination ID is `dst`, and said the path carries at most `size`
    /// bytes of UDP payload. Applies if `remote` is the path in use and `dst`
    /// names the peer's ID in use (long or short header: an off-path attacker
    /// would have to guess it); the search for the path's MTU then takes it
    /// as a hint. Returns whether the report applied.
    pub(crate) fn handle_too_big(&mut self, remote: SocketAddr, dst: QuotedDst, size: u16) -> bool {
        if remote != self.path.remote || !dst.names(&self.peer_cids.active()) {
            return false;
        }
        self.on_too_big(size);
        true
    }

    /// This host refused a datagram to the path's peer as larger than
    /// `size` bytes of UDP payload (`Endpoint::handle_local_too_big`): the
    /// same hint as a network's report. Returns whether it changed the search.
    pub(crate) fn handle_local_too_big(&mut self, size: u16) -> bool {
        self.on_too_big(size) != TooBig::Ignored
    }

    /// Whether the destination ID `dst` quotes is the peer's ID in use on
    /// the path in use.
    pub(crate) fn is_named_by(&self, dst: QuotedDst) -> bool {
        dst.names(&self.peer_cids.active())
    }

    fn on_too_big(&mut self, size: u16) -> TooBig {
        let done = self.mtu.on_too_big(size);
        if done == TooBig::Fell {
            self.apply_mtu();
            tracing::debug!(mtu = self.path.mtu, size, "path MTU fell (packet too big)");
        }
        done
    }
}

/// The destination ID of a packet an ICMP message quotes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum QuotedDst<'a> {
    /// A long header gives its length.
    Exact(&'a ConnectionId),
    /// A short header does not (the receiver chose it): the bytes that
    /// start with it.
    Prefix(&'a [u8]),
}

impl QuotedDst<'_> {
    fn names(self, id: &ConnectionId) -> bool {
        match self {
            QuotedDst::Exact(dst) => dst == id,
            QuotedDst::Prefix(bytes) => bytes.starts_with(id),
        }
    }
}
