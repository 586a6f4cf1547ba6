//! Connection IDs: the ones we issue to the peer (it addresses us with them) and
//! the ones the peer issues to us (we address it with them). RFC 9000 §5.1.

use std::collections::{BTreeMap, VecDeque};

use crate::cid::{ConnectionId, ResetToken};
use crate::crypto::tokens::ResetKey;
use crate::error::TransportError;
use crate::frame::NewConnectionId;

/// Most connection IDs we keep issued at once, whatever the peer allows.
const MAX_ISSUED: u64 = 8;

/// A change the endpoint must mirror in its routing table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CidEvent {
    /// Route packets with this ID to the connection.
    Issued(ConnectionId),
    /// Stop routing this ID.
    Retired(ConnectionId),
    /// The peer gave us this stateless reset token (for detecting resets).
    PeerResetToken(ResetToken),
    /// The peer's ID with this token is retired: the token no longer counts.
    PeerResetTokenRetired(ResetToken),
}

/// One ID we issued.
struct Issued {
    cid: ConnectionId,
    reset_token: ResetToken,
    /// NEW_CONNECTION_ID for it still has to be (re)sent.
    announce: bool,
}

/// The IDs we issued.
pub(crate) struct LocalCids {
    issued: BTreeMap<u64, Issued>,
    /// How many of `issued` have `announce` set: asked before every packet, so
    /// counted rather than searched for.
    to_announce: usize,
    next_seq: u64,
    /// How many IDs the peer is willing to hold (its active_connection_id_limit).
    peer_limit: u64,
}

impl LocalCids {
    /// Starts with the handshake ID, sequence number 0.
    pub(crate) fn new(initial: ConnectionId, reset_token: ResetToken) -> Self {
        let mut issued = BTreeMap::new();
        issued.insert(
            0,
            Issued {
                cid: initial,
                reset_token,
                announce: false,
            },
        );
        LocalCids {
            issued,
            to_announce: 0,
            next_seq: 1,
            peer_limit: 2,
        }
    }

    /// The ID used in long headers during the handshake.
    pub(crate) fn handshake_cid(&self) -> ConnectionId {
        self.issued
            .values()
            .next()
            .map(|i| i.cid)
            .unwrap_or(ConnectionId::EMPTY)
    }

    pub(crate) fn set_peer_limit(&mut self, limit: u64) {
        self.peer_limit = limit.min(MAX_ISSUED);
    }

    /// Issue new IDs until the peer holds as many as it allows.
    pub(crate) fn top_up(
        &mut self,
        mut generate: impl FnMut() -> ConnectionId,
        reset_key: &ResetKey,
        events: &mut VecDeque<CidEvent>,
    ) {
        if self.handshake_cid().is_empty() {
            return; // zero-length IDs: nothing to issue
        }
        while (self.issued.len() as u64) < self.peer_limit {
            let cid = generate();
            let reset_token = reset_key.token(&cid);
            self.issued.insert(
                self.next_seq,
                Issued {
                    cid,
                    reset_token,
                    announce: true,
                },
            );
            self.next_seq += 1;
            self.to_announce += 1;
            events.push_back(CidEvent::Issued(cid));
        }
    }

    /// The peer retired one of our IDs. `packet_dcid` is the ID the carrying packet
    /// was addressed to.
    pub(crate) fn on_retire(
        &mut self,
        seq: u64,
        packet_dcid: &ConnectionId,
        events: &mut VecDeque<CidEvent>,
    ) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.16
        //# Receipt of a RETIRE_CONNECTION_ID frame containing a sequence number
        //# greater than any previously sent to the peer MUST be treated as a
        //# connection error of type PROTOCOL_VIOLATION.
        if seq >= self.next_seq {
            return Err(TransportError::protocol_violation(
                "retired an unissued connection ID",
            ));
        }
        if let Some(entry) = self.issued.get(&seq) {
            //# The sequence number specified in a RETIRE_CONNECTION_ID frame MUST NOT
            //# refer to the Destination Connection ID field of the packet in which
            //# the frame is contained.
            if entry.cid == *packet_dcid {
                return Err(TransportError::protocol_violation(
                    "retired the connection ID the packet was sent to",
                ));
            }
            events.push_back(CidEvent::Retired(entry.cid));
            self.to_announce -= usize::from(entry.announce);
            self.issued.remove(&seq);
        }
        Ok(())
    }

    /// The next NEW_CONNECTION_ID to send: (seq, cid, token).
    pub(crate) fn next_announcement(&mut self) -> Option<(u64, ConnectionId, ResetToken)> {
        if self.to_announce == 0 {
            return None;
        }
        let (seq, entry) = self.issued.iter_mut().find(|(_, e)| e.announce)?;
        entry.announce = false;
        self.to_announce -= 1;
        Some((*seq, entry.cid, entry.reset_token))
    }

    /// Whether a NEW_CONNECTION_ID is waiting to be sent.
    pub(crate) fn has_announcement(&self) -> bool {
        debug_assert_eq!(
            self.to_announce,
            self.issued.values().filter(|e| e.announce).count()
        );
        self.to_announce > 0
    }

    /// A NEW_CONNECTION_ID was lost: send it again if the ID is still live.
    pub(crate) fn on_announcement_lost(&mut self, seq: u64) {
        if let Some(entry) = self.issued.get_mut(&seq) {
            self.to_announce += usize::from(!entry.announce);
            entry.announce = true;
        }
    }

    /// All IDs currently routed to us (to unregister when the connection ends).
    pub(crate) fn all(&self) -> impl Iterator<Item = ConnectionId> + '_ {
        self.issued.values().map(|e| e.cid)
    }
}

/// One ID the peer issued.
#[derive(Clone, Copy)]
struct PeerCid {
    cid: ConnectionId,
    reset_token: Option<ResetToken>,
}

/// The IDs the peer issued to us.
pub(crate) struct PeerCids {
    active_seq: u64,
    active: PeerCid,
    spare: BTreeMap<u64, PeerCid>,
    retire_prior_to: u64,
    /// RETIRE_CONNECTION_ID frames to send.
    pub(crate) to_retire: VecDeque<u64>,
    /// Our active_connection_id_limit.
    limit: u64,
}

impl PeerCids {
    pub(crate) fn new(initial: ConnectionId, limit: u64) -> Self {
        PeerCids {
            active_seq: 0,
            active: PeerCid {
                cid: initial,
                reset_token: None,
            },
            spare: BTreeMap::new(),
            retire_prior_to: 0,
            to_retire: VecDeque::new(),
            limit,
        }
    }

    /// The ID to put in packets we send.
    pub(crate) fn active(&self) -> ConnectionId {
        self.active.cid
    }

    /// During the handshake the server's chosen ID replaces the client's random one.
    pub(crate) fn set_initial(&mut self, cid: ConnectionId) {
        self.active.cid = cid;
    }

    /// The server's stateless_reset_token transport parameter (for sequence 0).
    pub(crate) fn set_initial_reset_token(
        &mut self,
        token: ResetToken,
        events: &mut VecDeque<CidEvent>,
    ) {
        if self.active_seq == 0 {
            self.active.reset_token = Some(token);
            events.push_back(CidEvent::PeerResetToken(token));
        }
    }

    /// Whether a live ID of the peer has `token`.
    fn holds(&self, token: ResetToken) -> bool {
        self.active.reset_token == Some(token)
            || self.spare.values().any(|c| c.reset_token == Some(token))
    }

    /// Whether the last 16 bytes of a datagram are a reset token of this peer.
    pub(crate) fn is_reset(&self, tail: &[u8]) -> bool {
        self.active.reset_token.is_some_and(|t| t.matches(tail))
            || self
                .spare
                .values()
                .any(|c| c.reset_token.is_some_and(|t| t.matches(tail)))
    }

    /// NEW_CONNECTION_ID from the peer.
    pub(crate) fn on_new(
        &mut self,
        frame: &NewConnectionId,
        events: &mut VecDeque<CidEvent>,
    ) -> Result<(), TransportError> {
        if self.active.cid.is_empty() {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-19.15
            //# An endpoint that is sending packets with a zero-length Destination
            //# Connection ID MUST treat receipt of a NEW_CONNECTION_ID frame as a
            //# connection error of type PROTOCOL_VIOLATION.
            return Err(TransportError::protocol_violation(
                "NEW_CONNECTION_ID with zero-length IDs",
            ));
        }
        let known = if frame.seq == self.active_seq {
            Some(self.active)
        } else {
            self.spare.get(&frame.seq).copied()
        };
        if let Some(known) = known {
            //# If an endpoint receives a NEW_CONNECTION_ID frame that repeats a
            //# previously issued connection ID with a different Stateless Reset
            //# Token field value or a different Sequence Number field value, or if a
            //# sequence number is used for different connection IDs, the endpoint MAY
            //# treat that receipt as a connection error of type PROTOCOL_VIOLATION.
            if known.cid != frame.cid {
                return Err(TransportError::protocol_violation(
                    "sequence number reused for a new ID",
                ));
            }
            return Ok(());
        }
        if frame.seq < self.retire_prior_to {
            //# An endpoint that receives a NEW_CONNECTION_ID frame with a sequence
            //# number smaller than the Retire Prior To field of a previously received
            //# NEW_CONNECTION_ID frame MUST send a corresponding
            //# RETIRE_CONNECTION_ID frame that retires the newly received connection
            //# ID, unless it has already done so for that sequence number.
            self.to_retire.push_back(frame.seq);
            return Ok(());
        }
        let token = ResetToken(frame.reset_token);
        self.spare.insert(
            frame.seq,
            PeerCid {
                cid: frame.cid,
                reset_token: Some(token),
            },
        );
        events.push_back(CidEvent::PeerResetToken(token));

        if frame.retire_prior_to > self.retire_prior_to {
            self.retire_prior_to = frame.retire_prior_to;
            let stale: Vec<u64> = self
                .spare
                .range(..frame.retire_prior_to)
                .map(|(s, _)| *s)
                .collect();
            let mut dropped = Vec::new();
            for seq in stale {
                dropped.extend(self.spare.remove(&seq).and_then(|c| c.reset_token));
                self.to_retire.push_back(seq);
            }
            if self.active_seq < self.retire_prior_to {
                self.to_retire.push_back(self.active_seq);
                dropped.extend(self.active.reset_token);
                let (&seq, &next) = self.spare.iter().next().ok_or_else(|| {
                    TransportError::protocol_violation("retired every connection ID")
                })?;
                self.spare.remove(&seq);
                self.active_seq = seq;
                self.active = next;
            }
            // The endpoint forgets these tokens, so its table stays as small as
            // the peer's live IDs (unless a live ID shares the token).
            for token in dropped {
                if !self.holds(token) {
                    events.push_back(CidEvent::PeerResetTokenRetired(token));
                }
            }
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-5.1.1
        //# After processing a NEW_CONNECTION_ID frame and adding and retiring
        //# active connection IDs, if the number of active connection IDs exceeds
        //# the value advertised in its active_connection_id_limit transport
        //# parameter, an endpoint MUST close the connection with an error of type
        //# CONNECTION_ID_LIMIT_ERROR.
        if 1 + self.spare.len() as u64 > self.limit {
            return Err(TransportError::connection_id_limit(
                "too many connection IDs",
            ));
        }
        Ok(())
    }

    /// A RETIRE_CONNECTION_ID we sent was lost.
    pub(crate) fn on_retire_lost(&mut self, seq: u64) {
        self.to_retire.push_back(seq);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ncid(seq: u64, retire_prior_to: u64, token: u8) -> NewConnectionId {
        NewConnectionId {
            seq,
            retire_prior_to,
            cid: ConnectionId::new(&[(seq as u8).wrapping_add(1); 8]).unwrap(),
            reset_token: [token; 16],
        }
    }

    /// Tokens the endpoint's table would hold after `events`.
    fn mirror(table: &mut Vec<ResetToken>, events: &mut VecDeque<CidEvent>) {
        for e in events.drain(..) {
            match e {
                CidEvent::PeerResetToken(t) => table.push(t),
                CidEvent::PeerResetTokenRetired(t) => table.retain(|x| *x != t),
                CidEvent::Issued(_) | CidEvent::Retired(_) => {}
            }
        }
    }

    #[test]
    fn a_peer_cycling_its_ids_leaves_only_live_tokens() {
        let mut peer = PeerCids::new(ConnectionId::new(&[9; 8]).unwrap(), 4);
        let (mut events, mut table) = (VecDeque::new(), Vec::new());
        peer.set_initial_reset_token(ResetToken([200; 16]), &mut events);
        // Each new ID retires every older one: the table must not grow.
        for seq in 1..500u64 {
            peer.on_new(&ncid(seq, seq, seq as u8), &mut events)
                .unwrap();
            mirror(&mut table, &mut events);
            assert_eq!(table, vec![ResetToken([seq as u8; 16])], "after {seq}");
            assert!(peer.holds(table[0]));
        }
        assert_eq!(peer.to_retire.len(), 499);
    }

    #[test]
    fn a_token_shared_by_a_live_id_stays() {
        let mut peer = PeerCids::new(ConnectionId::new(&[9; 8]).unwrap(), 4);
        let (mut events, mut table) = (VecDeque::new(), Vec::new());
        peer.on_new(&ncid(1, 0, 7), &mut events).unwrap();
        peer.on_new(&ncid(2, 0, 7), &mut events).unwrap();
        peer.on_new(&ncid(3, 2, 8), &mut events).unwrap();
        mirror(&mut table, &mut events);
        // Seq 1 (token 7) retired, seq 2 (token 7 too) lives on.
        assert!(table.contains(&ResetToken([7; 16])), "{table:?}");
        assert!(peer.holds(ResetToken([7; 16])));
    }
}
