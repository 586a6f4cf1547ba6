//! Connection IDs: the ones we issue to the peer (it addresses us with them) and
//! the ones the peer issues to us (we address it with them). RFC 9000 §5.1.

use std::collections::{BTreeSet, VecDeque};

use super::seq_map::SeqMap;

use crate::cid::{ConnectionId, ResetToken};
use crate::crypto::tokens::ResetKey;
use crate::error::TransportError;
use crate::frame::NewConnectionId;
use crate::range_set::RangeSet;

/// Most connection IDs we keep issued at once, whatever the peer allows.
const MAX_ISSUED: u64 = 8;

/// A change the endpoint must mirror in its routing table, or an address
/// token it seals or keeps.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CidEvent {
    /// Route packets with this ID to the connection.
    Issued(ConnectionId),
    /// Stop routing this ID.
    Retired(ConnectionId),
    /// The peer gave us this stateless reset token (for detecting resets).
    PeerResetToken(ResetToken),
    /// The peer's ID with this token is retired: the token no longer counts.
    PeerResetTokenRetired(ResetToken),
    /// Server: the connection has lasted a PTO past its handshake; the
    /// endpoint, which holds the token key, seals a NEW_TOKEN token for it
    /// as of this time (`Connection::give_new_token`).
    NewTokenWanted(std::time::Instant),
    /// Client: the server gave a token for the next connection, for the
    /// client configuration's token store.
    NewToken(Box<crate::token_store::AddressToken>),
}

/// One ID we issued. Its reset token is not kept: it is derived from the ID
/// (`ResetKey::token`) when a NEW_CONNECTION_ID carries it, so an entry is
/// 32 bytes rather than 48 (issue #30).
struct Issued {
    cid: ConnectionId,
    /// NEW_CONNECTION_ID for it still has to be (re)sent.
    announce: bool,
}

/// The IDs we issued.
pub(crate) struct LocalCids {
    issued: SeqMap<Issued>,
    /// How many of `issued` have `announce` set: asked before every packet, so
    /// counted rather than searched for.
    to_announce: usize,
    next_seq: u64,
    /// One past the highest sequence number announced to the peer (the
    /// handshake ID, sequence 0, counts as announced).
    announced: u64,
    /// How many IDs the peer is willing to hold (its active_connection_id_limit).
    peer_limit: u64,
}

impl LocalCids {
    /// Heap held by the table of IDs issued.
    pub(crate) fn heap_bytes(&self) -> usize {
        self.issued.heap_bytes()
    }

    /// Starts with the handshake ID, sequence number 0.
    pub(crate) fn new(initial: ConnectionId) -> Self {
        let mut issued = SeqMap::new();
        issued.insert(
            0,
            Issued {
                cid: initial,
                announce: false,
            },
        );
        LocalCids {
            issued,
            to_announce: 0,
            next_seq: 1,
            announced: 1,
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

    /// The ID of our preferred_address: sequence 1, announced in the
    /// transport parameters (RFC 9000 §5.1.1).
    pub(crate) fn add_preferred(&mut self, cid: ConnectionId) {
        self.issued.insert(
            1,
            Issued {
                cid,
                announce: false,
            },
        );
        self.next_seq = 2;
        self.announced = 2;
    }

    pub(crate) fn set_peer_limit(&mut self, limit: u64) {
        self.peer_limit = limit.min(MAX_ISSUED);
    }

    /// Issue new IDs until the peer holds as many as it allows.
    pub(crate) fn top_up(
        &mut self,
        mut generate: impl FnMut() -> ConnectionId,
        events: &mut VecDeque<CidEvent>,
    ) {
        if self.handshake_cid().is_empty() {
            return; // zero-length IDs: nothing to issue
        }
        while (self.issued.len() as u64) < self.peer_limit {
            let cid = generate();
            self.issued.insert(
                self.next_seq,
                Issued {
                    cid,
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
        // "Sent", not merely issued: a peer guessing the next numbers could
        // otherwise make us generate and route IDs as fast as it sends frames.
        if seq >= self.announced {
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
    pub(crate) fn next_announcement(
        &mut self,
        reset_key: &ResetKey,
    ) -> Option<(u64, ConnectionId, ResetToken)> {
        if self.to_announce == 0 {
            return None;
        }
        let (seq, entry) = self.issued.iter_mut().find(|(_, e)| e.announce)?;
        entry.announce = false;
        self.to_announce -= 1;
        self.announced = self.announced.max(*seq + 1);
        Some((*seq, entry.cid, reset_key.token(&entry.cid)))
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

/// Most RETIRE_CONNECTION_ID frames we owe at once (queued, or sent and not yet
/// acknowledged), as a multiple of our active_connection_id_limit.
const RETIRING_PER_LIMIT: u64 = 4;

/// Most runs of received sequence numbers remembered. A peer numbers its IDs
/// 0, 1, 2, ...: runs split only around frames still in flight or lost. Past
/// this many the oldest runs are forgotten; a late repeat of one of their
/// numbers is then retired again, which is harmless.
const MAX_SEEN_RUNS: usize = 32;

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
    spare: SeqMap<PeerCid>,
    retire_prior_to: u64,
    /// Sequence numbers received in NEW_CONNECTION_ID frames, live or retired:
    /// a repeated frame for a retired ID is not retired twice.
    seen: RangeSet,
    /// RETIRE_CONNECTION_ID frames to send.
    to_retire: BTreeSet<u64>,
    /// RETIRE_CONNECTION_ID frames sent and not yet acknowledged.
    retiring: BTreeSet<u64>,
    /// Our active_connection_id_limit.
    limit: u64,
}

impl PeerCids {
    /// Heap held by the spare IDs and the retirement bookkeeping.
    pub(crate) fn heap_bytes(&self) -> usize {
        use crate::range_set::btree_bytes;
        self.spare.heap_bytes()
            + btree_bytes(self.to_retire.len(), 8)
            + btree_bytes(self.retiring.len(), 8)
            + self.seen.heap_bytes()
    }
}

impl PeerCids {
    pub(crate) fn new(initial: ConnectionId, limit: u64) -> Self {
        let mut seen = RangeSet::new();
        seen.insert_one(0);
        PeerCids {
            active_seq: 0,
            active: PeerCid {
                cid: initial,
                reset_token: None,
            },
            spare: SeqMap::new(),
            retire_prior_to: 0,
            seen,
            to_retire: BTreeSet::new(),
            retiring: BTreeSet::new(),
            limit,
        }
    }

    /// The ID to put in packets we send.
    pub(crate) fn active(&self) -> ConnectionId {
        self.active.cid
    }

    /// The sequence number of [`active`](Self::active).
    pub(crate) fn active_seq(&self) -> u64 {
        self.active_seq
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
        let token = ResetToken(frame.reset_token);
        let known = if frame.seq == self.active_seq {
            Some(self.active)
        } else {
            self.spare.get(&frame.seq).copied()
        };
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.15
        //# If an endpoint receives a NEW_CONNECTION_ID frame that repeats a
        //# previously issued connection ID with a different Stateless Reset
        //# Token field value or a different Sequence Number field value, or if a
        //# sequence number is used for different connection IDs, the endpoint MAY
        //# treat that receipt as a connection error of type PROTOCOL_VIOLATION.
        if let Some(known) = known {
            if known.cid != frame.cid {
                return Err(TransportError::protocol_violation(
                    "sequence number reused for a new ID",
                ));
            }
            if known.reset_token.is_some_and(|t| t != token) {
                return Err(TransportError::protocol_violation(
                    "connection ID repeated with another reset token",
                ));
            }
            return Ok(());
        }
        if self.active.cid == frame.cid || self.spare.values().any(|c| c.cid == frame.cid) {
            return Err(TransportError::protocol_violation(
                "connection ID repeated with another sequence number",
            ));
        }
        if !self.seen.insert_one(frame.seq) {
            return Ok(()); // an ID retired since: its retirement is owed or done
        }
        self.seen.truncate_low(MAX_SEEN_RUNS);
        if frame.seq < self.retire_prior_to {
            //# An endpoint that receives a NEW_CONNECTION_ID frame with a sequence
            //# number smaller than the Retire Prior To field of a previously received
            //# NEW_CONNECTION_ID frame MUST send a corresponding
            //# RETIRE_CONNECTION_ID frame that retires the newly received connection
            //# ID, unless it has already done so for that sequence number.
            return self.retire(frame.seq);
        }
        self.spare.insert(
            frame.seq,
            PeerCid {
                cid: frame.cid,
                reset_token: Some(token),
            },
        );
        events.push_back(CidEvent::PeerResetToken(token));

        let mut owed = Ok(());
        if frame.retire_prior_to > self.retire_prior_to {
            self.retire_prior_to = frame.retire_prior_to;
            let stale: Vec<u64> = self
                .spare
                .iter()
                .map(|(s, _)| *s)
                .take_while(|&s| s < frame.retire_prior_to)
                .collect();
            let mut dropped = Vec::new();
            for seq in stale {
                dropped.extend(self.spare.remove(&seq).and_then(|c| c.reset_token));
                owed = owed.and(self.retire(seq));
            }
            if self.active_seq < self.retire_prior_to {
                owed = owed.and(self.retire(self.active_seq));
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
        owed?;
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

    /// Whether the peer gave us an ID we have not used yet.
    pub(crate) fn has_spare(&self) -> bool {
        !self.spare.is_empty()
    }

    /// Move to an unused ID of the peer, retiring the one in use: a new path
    /// gets a new ID. False when there is none (or too many retirements are owed).
    pub(crate) fn rotate(&mut self, events: &mut VecDeque<CidEvent>) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-9.5
        //# An endpoint MUST NOT reuse a connection ID when sending from more
        //# than one local address
        let Some((&seq, &next)) = self.spare.iter().next() else {
            return false;
        };
        if self.retirements_owed() as u64 >= RETIRING_PER_LIMIT * self.limit.max(2) {
            return false;
        }
        let old = self.active;
        if self.retire(self.active_seq).is_err() {
            return false;
        }
        self.spare.remove(&seq);
        self.active_seq = seq;
        self.active = next;
        if let Some(token) = old.reset_token.filter(|t| !self.holds(*t)) {
            events.push_back(CidEvent::PeerResetTokenRetired(token));
        }
        true
    }

    /// Owe the peer a RETIRE_CONNECTION_ID for `seq`, once.
    fn retire(&mut self, seq: u64) -> Result<(), TransportError> {
        if self.retiring.contains(&seq) || !self.to_retire.insert(seq) {
            return Ok(());
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-5.1.2
        //# An endpoint SHOULD allow for sending and tracking a number of
        //# RETIRE_CONNECTION_ID frames of at least twice the value of the
        //# active_connection_id_limit transport parameter.  An endpoint MUST NOT
        //# forget a connection ID without retiring it, though it MAY choose to
        //# treat having connection IDs in need of retiring that exceed this limit
        //# as a connection error of type CONNECTION_ID_LIMIT_ERROR.
        if self.retirements_owed() as u64 > RETIRING_PER_LIMIT * self.limit.max(2) {
            return Err(TransportError::connection_id_limit(
                "too many connection IDs waiting to be retired",
            ));
        }
        Ok(())
    }

    /// RETIRE_CONNECTION_ID frames owed: queued, or sent and not yet acknowledged.
    pub(crate) fn retirements_owed(&self) -> usize {
        self.to_retire.len() + self.retiring.len()
    }

    /// Runs of received sequence numbers remembered (for tests of the bound).
    #[cfg(any(test, feature = "testing"))]
    pub(crate) fn seen_runs(&self) -> usize {
        self.seen.len()
    }

    /// The next RETIRE_CONNECTION_ID to send, if any.
    pub(crate) fn next_retirement(&self) -> Option<u64> {
        self.to_retire.first().copied()
    }

    /// A RETIRE_CONNECTION_ID for `seq` went out.
    pub(crate) fn on_retirement_sent(&mut self, seq: u64) {
        if self.to_retire.remove(&seq) {
            self.retiring.insert(seq);
        }
    }

    /// A RETIRE_CONNECTION_ID we sent was acknowledged: nothing more is owed.
    pub(crate) fn on_retire_acked(&mut self, seq: u64) {
        self.retiring.remove(&seq);
    }

    /// A RETIRE_CONNECTION_ID we sent was lost: send it again.
    pub(crate) fn on_retire_lost(&mut self, seq: u64) {
        if self.retiring.remove(&seq) {
            self.to_retire.insert(seq);
        }
    }
}

#[cfg(test)]
#[path = "cids_tests.rs"]
mod tests;
