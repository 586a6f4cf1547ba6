//! NEW_TOKEN (RFC 9000 §8.1.3, §19.7). A server gives each connection an
//! address-validation token, sealed by the endpoint (which holds the key),
//! for the client's next connection; a token holds only for the address it
//! was given to, so a client that moved to a new address (validated) gets
//! another, up to `MAX_RENEWED_TOKENS` more per connection. The first is
//! sealed at the end of the handshake. A token goes in the next packet
//! without stream data to carry (HANDSHAKE_DONE's, an ACK's), or alone once
//! the connection is quiet: never a packet of its own on a busy connection
//! (sent a PTO after the handshake, it landed in the request bursts of
//! `quark`'s `driver::storm_sim` and fired half as many server PTOs again),
//! nor one more datagram for a short connection's answer. A client hands the
//! tokens it receives to the endpoint, for its token store.

use std::time::Instant;

use super::Connection;
use super::cids::CidEvent;
use super::sent::{Control, SentFrames};
use crate::error::TransportError;
use crate::frame::Frame;
use crate::token_store::{AddressToken, TOKENS_PER_SERVER};

/// Tokens one connection is given after the first, one for each move to a
/// new address: a peer that keeps moving costs the server no more seals
/// than that.
const MAX_RENEWED_TOKENS: u8 = 3;

/// Where a server connection's newest NEW_TOKEN frame stands.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum NewTokenState {
    #[default]
    Unasked,
    /// The endpoint was asked to seal one.
    Asked,
    /// Sealed, in `Connection::token`, to be sent (again).
    Pending,
    InFlight,
    /// Acknowledged (or not to be sent): the token is freed.
    Done,
}

impl Connection {
    /// Server, at the end of the handshake: ask the endpoint for a token
    /// (sealed before the packets of this round are built).
    pub(super) fn ask_new_token(&mut self, now: Instant) {
        if self.side.is_server()
            && self.handshake_confirmed
            && self.new_token == NewTokenState::Unasked
            && !self.is_closed()
        {
            self.new_token = NewTokenState::Asked;
            self.cid_events.push_back(CidEvent::NewTokenWanted(now));
        }
    }

    /// Server: the path to a client at a new IP address was validated. The
    /// token it has (or is being sent) holds only for the address it left:
    /// a new one, sealed for this address, replaces it.
    pub(super) fn renew_new_token(&mut self, now: Instant) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-8.1.3
        //# A server MAY provide clients with an address validation token during
        //# one connection that can be used on a subsequent connection.
        match self.new_token {
            // None asked yet, or one being sealed: the seal takes the
            // address in use when the endpoint makes it.
            NewTokenState::Unasked | NewTokenState::Asked => {}
            NewTokenState::Pending | NewTokenState::InFlight | NewTokenState::Done => {
                if self.migration.tokens_renewed >= MAX_RENEWED_TOKENS {
                    return;
                }
                // Frames of the tokens before carry older numbers.
                self.migration.tokens_renewed += 1;
                self.new_token = NewTokenState::Unasked;
                self.token = Vec::new();
                self.ask_new_token(now);
            }
        }
    }

    /// Client: the Initials carry a token from a server that greases the
    /// QUIC bit, so they may clear it (RFC 9287 §3.1).
    pub(crate) fn grease_from_token(&mut self) {
        self.bits.grease_from_token();
    }

    /// The endpoint sealed the token this connection asked for (`None`: the
    /// server gives none).
    pub(crate) fn give_new_token(&mut self, token: Option<Vec<u8>>) {
        if self.new_token != NewTokenState::Asked {
            return;
        }
        match token {
            Some(t) if !t.is_empty() => {
                self.token = t;
                self.new_token = NewTokenState::Pending;
            }
            _ => self.new_token = NewTokenState::Done,
        }
    }

    /// Whether the NEW_TOKEN frame (sent again after a loss) is reason
    /// enough for a packet of its own: only on a quiet connection. A busy one
    /// sends it with its next packet, so a burst of requests gets no extra
    /// packet to acknowledge.
    #[inline]
    pub(super) fn new_token_alone(&self) -> bool {
        self.new_token == NewTokenState::Pending && self.recovery.bytes_in_flight() == 0
    }

    /// Write the NEW_TOKEN frame if it is due and fits.
    pub(super) fn write_new_token(
        &mut self,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) {
        // Not in a packet with stream data to carry: the token never pushes
        // an answer into a datagram of its own.
        if self.new_token != NewTokenState::Pending || self.streams.wants_to_send() {
            return;
        }
        let f = Frame::NewToken { token: &self.token };
        if buf.len() + f.encoded_len() <= max_end {
            f.encode(buf);
            sent.push_control(Control::NewToken(self.migration.tokens_renewed.into()));
            self.new_token = NewTokenState::InFlight;
        }
    }

    /// A packet with NEW_TOKEN frame number `seq` was acknowledged: if it
    /// carried the newest token, that token is freed.
    pub(super) fn on_new_token_acked(&mut self, seq: u64) {
        if seq == u64::from(self.migration.tokens_renewed)
            && matches!(
                self.new_token,
                NewTokenState::InFlight | NewTokenState::Pending
            )
        {
            self.new_token = NewTokenState::Done;
            self.token = Vec::new();
        }
    }

    /// Client: a NEW_TOKEN frame from the server.
    pub(super) fn on_new_token(
        &mut self,
        now: Instant,
        token: &[u8],
    ) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.7
        //# A server MUST treat receipt of a NEW_TOKEN frame as a connection
        //# error of type PROTOCOL_VIOLATION.
        if self.side.is_server() {
            return Err(TransportError::protocol_violation(
                "NEW_TOKEN sent by a client",
            ));
        }
        // The store keeps a few per server: more from one datagram's frames
        // would only be allocated to be dropped.
        let queued = self
            .cid_events
            .iter()
            .filter(|e| matches!(e, CidEvent::NewToken(_)))
            .count();
        if queued < TOKENS_PER_SERVER {
            let grease_quic_bit = self.peer_params.as_ref().is_some_and(|p| p.grease_quic_bit);
            self.cid_events
                .push_back(CidEvent::NewToken(Box::new(AddressToken {
                    token: token.to_vec(),
                    received: now,
                    grease_quic_bit,
                })));
        }
        Ok(())
    }
}

/// Lost: NEW_TOKEN frame number `seq`, if it carried the newest token and
/// that is still in flight, goes again (with the same token). An older
/// token's frame is not sent again: it was for an address the client left.
pub(super) fn on_new_token_lost(state: &mut NewTokenState, newest: u8, seq: u64) {
    if seq == u64::from(newest) && *state == NewTokenState::InFlight {
        *state = NewTokenState::Pending;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_newest_tokens_frame_goes_again() {
        let mut state = NewTokenState::InFlight;
        // The frame of the token for the address the client left.
        on_new_token_lost(&mut state, 2, 1);
        assert_eq!(state, NewTokenState::InFlight);
        on_new_token_lost(&mut state, 2, 2);
        assert_eq!(state, NewTokenState::Pending);
    }
}
