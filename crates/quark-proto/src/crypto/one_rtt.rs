//! 1-RTT keys and key updates (RFC 9001 §6).
//!
//! Rules this type enforces: header protection keys never change; a packet whose
//! Key Phase differs from the current phase is tried with the next keys when its
//! packet number is above every packet of the current phase, and with the previous
//! keys (while kept) when below; a successful decryption with the next keys rolls
//! both directions forward (a peer-initiated update). We may initiate an update only
//! once a packet sent in the current phase has been acknowledged (§6.1); a peer that
//! updates twice without that is a KEY_UPDATE_ERROR (§6.2).
//!
//! The next keys are derived ahead of need by `prepare_next`, which the connection
//! calls on a timer a PTO after the handshake and after each update (§6.3: not
//! while a packet waits, so a forged Key Phase bit costs the receiver one failed
//! decryption, like any other forged packet; and a connection that ends sooner
//! never pays for them). A packet that needs them before that has them derived on
//! the spot (§6.3 allows it). Only the next *receive* key is kept ahead: the send
//! key is needed only once the update happens, when it is derived (no timing
//! signal: that follows a packet that authenticated). An idle connection gives
//! the next receive key back (`park_next`) and derives it again when its next
//! packet arrives, whatever that packet's Key Phase bit, so the derivation
//! reveals nothing about the bit. With a [`Reserve`] (the current phase's
//! secrets), an idle connection gives back its current keys too (`park`) and
//! derives them again before its next packet is protected or opened (`wake`).
//! Not done here, because it needs frame-level knowledge
//! or a clock: waiting for handshake confirmation before the first update (§6.1),
//! and the ACK-in-old-keys check of §6.2's last paragraph; the connection owns those.

use crate::crypto::reserve::{Asleep, Reserve};
use crate::crypto::{HeaderProtectionKey, Keys, NextSecrets, PacketKey};
use crate::error::TransportError;

/// 1-RTT packet protection for one connection.
pub struct OneRttKeys {
    local_hp: Box<dyn HeaderProtectionKey>,
    remote_hp: Box<dyn HeaderProtectionKey>,
    /// Keys of the current phase.
    local: Box<dyn PacketKey>,
    remote: Box<dyn PacketKey>,
    /// Receive key of the next phase, once derived (see `prepare_next`).
    next: Option<Box<dyn PacketKey>>,
    /// The next key was given back while idle: derive it before the next
    /// packet is opened.
    parked: bool,
    /// Secrets of the next phase (`next` is derived from a copy).
    secrets: NextSecrets,
    /// Secrets of the current phase, to derive the keys above again.
    reserve: Option<Box<Reserve>>,
    /// The four keys above are [`Asleep`] placeholders: `wake` before use.
    asleep: bool,
    /// Receive key of the previous phase, until `discard_previous`.
    prev_remote: Option<Box<dyn PacketKey>>,
    /// Key Phase bit of the current phase.
    phase: bool,
    /// Lowest and highest packet numbers received in the current phase.
    recv_range: Option<(u64, u64)>,
    /// Lowest packet number sent in the current phase.
    first_sent: Option<u64>,
    /// A packet was sent in this phase after one was received in it, so the peer can
    /// have seen an acknowledgment of one of its current-phase packets.
    sent_after_recv: bool,
    /// Largest packet number the peer acknowledged in the data space.
    largest_acked: Option<u64>,
    /// Packets encrypted with the current local key.
    sent_with_key: u64,
    updates: u64,
}

/// Why a 1-RTT packet could not be decrypted.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum OneRttError {
    /// Authentication failed (drop the packet; count toward the integrity limit).
    #[error("decryption failed")]
    Decrypt,
    /// The peer broke the key update rules.
    #[error("{0}")]
    Fatal(TransportError),
}

/// Which receive key a packet calls for.
enum Which {
    Current,
    Next,
    Previous,
    /// Previous keys for a packet numbered above one already received with newer keys.
    PreviousOutOfOrder,
}

impl OneRttKeys {
    /// From the keys and secrets of `KeyChange::OneRtt`.
    pub fn new(keys: Keys, next: impl Into<NextSecrets>) -> Self {
        let next = next.into();
        OneRttKeys {
            local_hp: keys.local.header,
            remote_hp: keys.remote.header,
            local: keys.local.packet,
            remote: keys.remote.packet,
            next: None,
            parked: false,
            secrets: next,
            reserve: None,
            asleep: false,
            prev_remote: None,
            phase: false,
            recv_range: None,
            first_sent: None,
            sent_after_recv: false,
            largest_acked: None,
            sent_with_key: 0,
            updates: 0,
        }
    }

    /// Keep the current phase's secrets so that `park` can give the keys back.
    pub fn with_reserve(mut self, reserve: Option<Reserve>) -> Self {
        self.reserve = reserve.map(Box::new);
        self
    }

    /// Derive the current keys again if `park` gave them back. Call before
    /// protecting or opening a packet (one test when awake).
    #[inline]
    pub fn wake(&mut self) {
        if self.asleep {
            self.wake_up();
        }
    }

    #[cold]
    fn wake_up(&mut self) {
        let Some(reserve) = self.reserve.as_deref() else {
            return;
        };
        let keys = reserve.keys();
        self.local_hp = keys.local.header;
        self.remote_hp = keys.remote.header;
        self.local = keys.local.packet;
        self.remote = keys.remote.packet;
        self.asleep = false;
    }

    /// Idle: give back the next receive key and, with a reserve, the current
    /// keys (1.6 KiB with AES-GCM); `wake` and `decrypt` derive them again.
    /// Not while the previous phase's key is kept (an update settling).
    pub fn park(&mut self) {
        self.park_next();
        if self.asleep || self.reserve.is_none() || self.prev_remote.is_some() {
            return;
        }
        // Boxes of a zero-sized type: no allocation.
        self.local_hp = Box::new(Asleep);
        self.remote_hp = Box::new(Asleep);
        self.local = Box::new(Asleep);
        self.remote = Box::new(Asleep);
        self.asleep = true;
    }

    /// Whether `park` gave the current keys back.
    pub fn is_asleep(&self) -> bool {
        self.asleep
    }

    /// Header protection for packets we send.
    pub fn local_header(&self) -> &dyn HeaderProtectionKey {
        self.local_hp.as_ref()
    }

    /// Header protection for packets we receive.
    pub fn remote_header(&self) -> &dyn HeaderProtectionKey {
        self.remote_hp.as_ref()
    }

    /// Packet key for packets we send now.
    pub fn local_packet(&self) -> &dyn PacketKey {
        self.local.as_ref()
    }

    /// Key Phase bit for packets we send now.
    pub fn key_phase(&self) -> bool {
        self.phase
    }

    /// Decrypt in place a packet with `header` (associated data) and `payload`
    /// (ciphertext + tag). Returns the plaintext length.
    pub fn decrypt(
        &mut self,
        pn: u64,
        key_phase: bool,
        header: &[u8],
        payload: &mut [u8],
    ) -> Result<usize, OneRttError> {
        self.wake();
        if self.parked {
            //= https://www.rfc-editor.org/rfc/rfc9001#section-6.3
            //# Endpoints are generally expected to have current and next
            //# receive packet protection keys available.
            // Derived before the Key Phase bit is looked at: same cost for all.
            self.parked = false;
            self.next_keys();
        }
        let which = self.select(pn, key_phase);
        let key = match which {
            Which::Current => self.remote.as_ref(),
            //= https://www.rfc-editor.org/rfc/rfc9001#section-6.3
            //# An endpoint MAY generate new keys as part of packet processing
            Which::Next => self.next_keys(),
            Which::Previous | Which::PreviousOutOfOrder => match &self.prev_remote {
                Some(key) => key.as_ref(),
                None => return Err(OneRttError::Decrypt),
            },
        };
        let len = key
            .decrypt_in_place(pn, header, payload)
            .map_err(|_| OneRttError::Decrypt)?
            .len();

        match which {
            Which::Current => self.note_received(pn),
            Which::Previous => {}
            //= https://www.rfc-editor.org/rfc/rfc9001#section-6.4
            //# An endpoint that successfully removes protection with old
            //# keys when newer keys were used for packets with lower packet numbers
            //# MUST treat this as a connection error of type KEY_UPDATE_ERROR.
            Which::PreviousOutOfOrder => {
                return Err(OneRttError::Fatal(TransportError::key_update(
                    "packet protected with old keys after newer keys",
                )));
            }
            Which::Next => {
                //= https://www.rfc-editor.org/rfc/rfc9001#section-6.2
                //# If an endpoint detects a second update before it has
                //# sent any packets with updated keys containing an acknowledgment for
                //# the packet that initiated the key update, it indicates that its peer
                //# has updated keys twice without awaiting confirmation.  An endpoint
                //# MAY treat such consecutive key updates as a connection error of type
                //# KEY_UPDATE_ERROR.
                if !self.sent_after_recv {
                    return Err(OneRttError::Fatal(TransportError::key_update(
                        "peer updated keys again before its update was acknowledged",
                    )));
                }
                //# If a packet is successfully processed using the next key and IV, then
                //# the peer has initiated a key update.  The endpoint MUST update its
                //# send keys to the corresponding key phase in response
                self.roll();
                self.note_received(pn);
            }
        }
        Ok(len)
    }

    /// Choose the receive key for a packet (RFC 9001 §6.5).
    //= https://www.rfc-editor.org/rfc/rfc9001#section-6.5
    //# A recovered packet number that is lower than any
    //# packet number from the current key phase uses the previous packet
    //# protection keys; a recovered packet number that is higher than any
    //# packet number from the current key phase requires the use of the next
    //# packet protection keys.
    fn select(&self, pn: u64, key_phase: bool) -> Which {
        if key_phase == self.phase {
            return Which::Current;
        }
        match self.recv_range {
            Some((low, _)) if pn < low => Which::Previous,
            Some((_, high)) if pn < high => Which::PreviousOutOfOrder,
            Some(_) => Which::Next,
            // Nothing received in this phase yet: after our own update, a packet with
            // the other bit is a late one from the previous phase; otherwise the peer
            // is starting an update.
            None if self.prev_remote.is_some() => Which::Previous,
            None => Which::Next,
        }
    }

    fn note_received(&mut self, pn: u64) {
        self.recv_range = Some(match self.recv_range {
            Some((low, high)) => (low.min(pn), high.max(pn)),
            None => (pn, pn),
        });
    }

    /// Move both directions to the next phase and derive the one after it.
    //= https://www.rfc-editor.org/rfc/rfc9001#section-6.1
    //# The endpoint toggles the value of the Key Phase bit and uses the
    //# updated key and IV to protect all subsequent packets.
    fn roll(&mut self) {
        self.wake();
        if let Some(r) = self.reserve.as_mut() {
            r.update();
        }
        // Both keys again: the send key was never kept ahead.
        let next = self.secrets.next_packet_keys();
        self.next = None;
        self.parked = false;
        self.local = next.local;
        self.prev_remote = Some(std::mem::replace(&mut self.remote, next.remote));
        self.phase = !self.phase;
        self.recv_range = None;
        self.first_sent = None;
        self.sent_after_recv = false;
        self.sent_with_key = 0;
        self.updates += 1;
    }

    /// Heap held by the boxed keys (for memory accounting).
    pub fn heap_bytes(&self) -> usize {
        let next = self
            .next
            .as_ref()
            .map_or(0, |k| std::mem::size_of_val(&**k));
        std::mem::size_of_val(&*self.local_hp)
            + std::mem::size_of_val(&*self.remote_hp)
            + std::mem::size_of_val(&*self.local)
            + std::mem::size_of_val(&*self.remote)
            + self
                .prev_remote
                .as_ref()
                .map_or(0, |k| std::mem::size_of_val(&**k))
            + next
            + self
                .reserve
                .as_ref()
                .map_or(0, |r| std::mem::size_of_val(&**r))
    }

    /// Derive the next phase's keys now, if not done yet.
    pub fn prepare_next(&mut self) {
        self.next_keys();
    }

    /// The next phase's receive key, derived now if not done yet.
    fn next_keys(&mut self) -> &dyn PacketKey {
        let secrets = &self.secrets;
        &**self.next.get_or_insert_with(|| secrets.peek_next_remote())
    }

    /// Idle: give back the next receive key; it is derived again before the
    /// next packet is opened.
    pub fn park_next(&mut self) {
        if self.next.take().is_some() {
            self.parked = true;
        }
    }

    /// Whether the next phase's keys are derived.
    pub fn has_next(&self) -> bool {
        self.next.is_some()
    }

    /// Record that packet `pn` was sent with the current keys.
    pub fn on_packet_sent(&mut self, pn: u64) {
        self.first_sent.get_or_insert(pn);
        self.sent_with_key += 1;
        if self.recv_range.is_some() {
            self.sent_after_recv = true;
        }
    }

    /// Record the largest packet number the peer acknowledged in the data space.
    pub fn on_ack(&mut self, largest_acked: u64) {
        self.largest_acked = Some(
            self.largest_acked
                .map_or(largest_acked, |a| a.max(largest_acked)),
        );
    }

    /// Start a key update if allowed (returns whether it started).
    ///
    /// The caller must also have confirmed the handshake (RFC 9001 §6.1). While the
    /// previous receive keys are still kept the update waits, which also gives the
    /// peer the three PTOs of §6.5 to drop its own old keys.
    //= https://www.rfc-editor.org/rfc/rfc9001#section-6.1
    //# An endpoint MUST NOT initiate a
    //# subsequent key update unless it has received an acknowledgment for a
    //# packet that was sent protected with keys from the current key phase.
    //# This ensures that keys are available to both peers before another key
    //# update can be initiated.  This can be implemented by tracking the
    //# lowest packet number sent with each key phase and the highest
    //# acknowledged packet number in the 1-RTT space: once the latter is
    //# higher than or equal to the former, another key update can be
    //# initiated.
    pub fn initiate_update(&mut self) -> bool {
        let acked = matches!(
            (self.first_sent, self.largest_acked),
            (Some(first), Some(acked)) if acked >= first
        );
        if !acked || self.prev_remote.is_some() {
            return false;
        }
        self.roll();
        true
    }

    /// True when the current local key is near its confidentiality limit, so the
    /// connection should update keys now.
    //= https://www.rfc-editor.org/rfc/rfc9001#section-6.6
    //# Endpoints MUST initiate a key update
    //# before sending more protected packets than the confidentiality limit
    //# for the selected AEAD permits.
    pub fn should_update(&self) -> bool {
        let limit = self.local.confidentiality_limit();
        // Three quarters of the limit leaves time for the update to be allowed.
        self.sent_with_key >= limit - limit / 4
    }

    /// Forget the previous receive keys (call about 3 PTO after an update).
    pub fn discard_previous(&mut self) {
        self.prev_remote = None;
    }

    /// True while previous receive keys are kept (so the caller can arm a timer).
    pub fn has_previous(&self) -> bool {
        self.prev_remote.is_some()
    }

    /// Number of key updates so far (both initiators).
    pub fn updates(&self) -> u64 {
        self.updates
    }

    /// Number of packets that may fail authentication on this connection before it
    /// must close with AEAD_LIMIT_REACHED (RFC 9001 §6.6).
    pub fn integrity_limit(&self) -> u64 {
        self.remote.integrity_limit()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crypto::test_pair::{Sealed, handshake, seal as send};
    use crate::error::TransportErrorCode;
    use rustls::SupportedCipherSuite;
    use rustls::crypto::ring::cipher_suite::TLS13_AES_128_GCM_SHA256;

    fn pair(suite: SupportedCipherSuite) -> (OneRttKeys, OneRttKeys) {
        let (client, server) = handshake(suite);
        let (ck, cn) = client.one_rtt.unwrap();
        let (sk, sn) = server.one_rtt.unwrap();
        (OneRttKeys::new(ck, cn), OneRttKeys::new(sk, sn))
    }

    fn recv(to: &mut OneRttKeys, p: &Sealed) -> Result<u64, OneRttError> {
        let mut payload = p.3.clone();
        let len = to.decrypt(p.0, p.1, &p.2, &mut payload)?;
        assert_eq!(len, 8);
        Ok(u64::from_be_bytes(payload[..8].try_into().unwrap()))
    }

    fn key_update_error(r: Result<u64, OneRttError>) -> bool {
        matches!(r, Err(OneRttError::Fatal(e)) if e.code == TransportErrorCode::KEY_UPDATE_ERROR)
    }

    #[test]
    fn client_initiates_server_follows() {
        let (mut c, mut s) = pair(TLS13_AES_128_GCM_SHA256);
        assert!(!c.key_phase() && !s.key_phase());
        // Nothing sent yet, so nothing acknowledged: no update.
        assert!(!c.initiate_update());

        let p0 = send(&mut c, 0);
        let late = send(&mut c, 1); // delayed in the network
        assert_eq!(recv(&mut s, &p0), Ok(0));
        let ack = send(&mut s, 0);
        assert_eq!(recv(&mut c, &ack), Ok(0));
        assert!(!c.initiate_update(), "packet 0 not acknowledged yet");
        c.on_ack(0);
        assert!(c.initiate_update());
        assert!(c.key_phase());
        assert_eq!(c.updates(), 1);
        assert!(c.has_previous());

        // The server notices the new phase and follows.
        let p2 = send(&mut c, 2);
        assert!(p2.1);
        assert_eq!(recv(&mut s, &p2), Ok(2));
        assert!(s.key_phase());
        assert_eq!(s.updates(), 1);
        assert!(s.has_previous());

        // A packet of the old phase still opens with the previous keys...
        assert_eq!(recv(&mut s, &late), Ok(1));
        // ...until they are discarded.
        s.discard_previous();
        assert!(!s.has_previous());
        assert_eq!(recv(&mut s, &late), Err(OneRttError::Decrypt));

        // The server's replies use the new keys and the client reads them.
        let r = send(&mut s, 1);
        assert!(r.1);
        assert_eq!(recv(&mut c, &r), Ok(1));
        assert_eq!(c.updates(), 1, "no further update on the client");
    }

    #[test]
    fn next_keys_wait_until_prepared_or_needed() {
        let (mut c, mut s) = pair(TLS13_AES_128_GCM_SHA256);
        assert!(!c.has_next() && !s.has_next(), "nothing derived up front");
        let p0 = send(&mut c, 0);
        assert_eq!(recv(&mut s, &p0), Ok(0));
        assert!(!s.has_next(), "current-phase packets need no next keys");
        let a = send(&mut s, 0);
        recv(&mut c, &a).unwrap();
        c.on_ack(0);
        // The client prepared its next keys ahead (the connection's timer); the
        // server did not, and derives them when the first updated packet comes.
        c.prepare_next();
        assert!(c.has_next());
        assert!(c.initiate_update());
        assert!(!c.has_next(), "used up by the update");
        let p1 = send(&mut c, 1);
        assert_eq!(recv(&mut s, &p1), Ok(1));
        assert!(s.key_phase() && !s.has_next());
        // Both sides agree on the keys of the phase after, derived on demand.
        let r = send(&mut s, 1);
        assert_eq!(recv(&mut c, &r), Ok(1));
        s.discard_previous();
        c.discard_previous();
        c.on_ack(1);
        assert!(c.initiate_update());
        let p2 = send(&mut c, 2);
        assert_eq!(recv(&mut s, &p2), Ok(2));
        assert_eq!((c.updates(), s.updates()), (2, 2));
        assert!(!c.key_phase() && !s.key_phase());
    }

    #[test]
    fn parked_next_key_comes_back_with_the_next_packet() {
        let (mut c, mut s) = pair(TLS13_AES_128_GCM_SHA256);
        let p0 = send(&mut c, 0);
        assert_eq!(recv(&mut s, &p0), Ok(0));
        let a = send(&mut s, 0);
        recv(&mut c, &a).unwrap();
        c.on_ack(0);
        s.prepare_next();
        let held = s.heap_bytes();
        s.park_next();
        assert!(
            !s.has_next() && s.heap_bytes() < held,
            "idle: next key given back"
        );
        // Any packet brings it back before its phase bit is looked at.
        let p1 = send(&mut c, 1);
        assert_eq!(recv(&mut s, &p1), Ok(1));
        assert!(s.has_next() && !s.key_phase());
        s.park_next();
        // An update after parking still opens, and both sides agree after it.
        assert!(c.initiate_update());
        let p2 = send(&mut c, 2);
        assert_eq!(recv(&mut s, &p2), Ok(2));
        assert!(s.key_phase() && !s.has_next());
        let r = send(&mut s, 1);
        assert_eq!(recv(&mut c, &r), Ok(1));
        // Parking with nothing derived changes nothing.
        c.park_next();
        let p3 = send(&mut c, 3);
        assert_eq!(recv(&mut s, &p3), Ok(3));
        assert!(!s.has_next(), "no derivation without a parked key");
    }

    #[test]
    fn second_update_needs_an_ack_of_the_current_phase() {
        let (mut c, mut s) = pair(TLS13_AES_128_GCM_SHA256);
        let p = send(&mut c, 0);
        recv(&mut s, &p).unwrap();
        let a = send(&mut s, 0);
        recv(&mut c, &a).unwrap();
        c.on_ack(0);
        assert!(c.initiate_update());
        // The previous keys are still kept and nothing of phase 1 is acknowledged.
        assert!(!c.initiate_update());
        c.discard_previous();
        assert!(!c.initiate_update(), "nothing sent in phase 1");
        let p1 = send(&mut c, 1);
        c.on_ack(0);
        assert!(!c.initiate_update(), "only a phase-0 packet acknowledged");
        recv(&mut s, &p1).unwrap();
        c.on_ack(1);
        assert!(c.initiate_update());
        assert!(!c.key_phase());
        assert_eq!(c.updates(), 2);
    }

    #[test]
    fn peer_updating_twice_without_ack_is_key_update_error() {
        let (mut c, mut s) = pair(TLS13_AES_128_GCM_SHA256);
        let p = send(&mut c, 0);
        recv(&mut s, &p).unwrap();
        let a = send(&mut s, 0);
        recv(&mut c, &a).unwrap();
        c.on_ack(0);
        assert!(c.initiate_update());
        let p1 = send(&mut c, 1);
        assert_eq!(recv(&mut s, &p1), Ok(1));
        // A misbehaving client acknowledges itself and updates again before the
        // server has sent anything in phase 1.
        c.discard_previous();
        c.on_ack(1);
        assert!(c.initiate_update());
        let p2 = send(&mut c, 2);
        assert!(key_update_error(recv(&mut s, &p2)));
    }

    #[test]
    fn old_keys_after_newer_keys_is_key_update_error() {
        let (mut c, mut s) = pair(TLS13_AES_128_GCM_SHA256);
        let p = send(&mut c, 0);
        recv(&mut s, &p).unwrap();
        let a = send(&mut s, 0);
        recv(&mut c, &a).unwrap();
        c.on_ack(0);
        let old7 = send(&mut c, 7); // phase 0, numbered above packets of phase 1
        assert!(c.initiate_update());
        let new5 = send(&mut c, 5);
        let new9 = send(&mut c, 9);
        recv(&mut s, &new5).unwrap();
        recv(&mut s, &new9).unwrap();
        assert!(key_update_error(recv(&mut s, &old7)));
    }

    #[test]
    fn forged_phase_bit_does_not_update() {
        let (mut c, mut s) = pair(TLS13_AES_128_GCM_SHA256);
        let p = send(&mut c, 0);
        recv(&mut s, &p).unwrap();
        let mut forged = send(&mut c, 1);
        forged.1 = !forged.1;
        assert_eq!(recv(&mut s, &forged), Err(OneRttError::Decrypt));
        assert!(!s.key_phase());
        assert_eq!(s.updates(), 0);
        // damaged ciphertext
        let mut bad = send(&mut c, 2);
        bad.3[0] ^= 1;
        assert_eq!(recv(&mut s, &bad), Err(OneRttError::Decrypt));
    }

    #[test]
    fn should_update_near_the_confidentiality_limit() {
        let (mut c, _) = pair(TLS13_AES_128_GCM_SHA256);
        let limit = c.local_packet().confidentiality_limit();
        assert_eq!(limit, 1 << 23, "AES-128-GCM in QUIC (RFC 9001 §6.6)");
        let threshold = limit - limit / 4;
        for pn in 0..threshold - 1 {
            c.on_packet_sent(pn);
        }
        assert!(!c.should_update());
        c.on_packet_sent(threshold);
        assert!(c.should_update());
        c.on_ack(0);
        assert!(c.initiate_update());
        assert!(!c.should_update(), "the new key starts from zero");
        assert!(c.integrity_limit() > 0);
    }
}
