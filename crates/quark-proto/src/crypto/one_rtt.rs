//! 1-RTT keys and key updates (RFC 9001 §6).
//!
//! CONTRACT (filled in by the packet/crypto work).
//!
//! Rules this type enforces: header protection keys never change; a packet whose
//! Key Phase differs from the current phase is tried with the next keys when its
//! packet number is above every packet of the current phase, and with the previous
//! keys (while kept) when below; a successful decryption with the next keys rolls
//! both directions forward (a peer-initiated update). We may initiate an update only
//! once a packet sent in the current phase has been acknowledged (§6.1); a peer that
//! updates twice without that is a KEY_UPDATE_ERROR (§6.2).

use crate::crypto::{HeaderProtectionKey, Keys, PacketKey, Secrets};
use crate::error::TransportError;

/// 1-RTT packet protection for one connection.
pub struct OneRttKeys {
    // implementer's fields
    _todo: (),
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

impl OneRttKeys {
    /// From the keys and secrets of `KeyChange::OneRtt`.
    pub fn new(keys: Keys, next: Secrets) -> Self {
        let _ = (keys, next);
        todo!("one_rtt")
    }

    /// Header protection for packets we send.
    pub fn local_header(&self) -> &dyn HeaderProtectionKey {
        todo!("one_rtt")
    }

    /// Header protection for packets we receive.
    pub fn remote_header(&self) -> &dyn HeaderProtectionKey {
        todo!("one_rtt")
    }

    /// Packet key for packets we send now.
    pub fn local_packet(&self) -> &dyn PacketKey {
        todo!("one_rtt")
    }

    /// Key Phase bit for packets we send now.
    pub fn key_phase(&self) -> bool {
        todo!("one_rtt")
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
        let _ = (pn, key_phase, header, payload);
        todo!("one_rtt")
    }

    /// Record that packet `pn` was sent with the current keys.
    pub fn on_packet_sent(&mut self, pn: u64) {
        let _ = pn;
        todo!("one_rtt")
    }

    /// Record the largest packet number the peer acknowledged in the data space.
    pub fn on_ack(&mut self, largest_acked: u64) {
        let _ = largest_acked;
        todo!("one_rtt")
    }

    /// Start a key update if allowed (returns whether it started).
    pub fn initiate_update(&mut self) -> bool {
        todo!("one_rtt")
    }

    /// True when the current local key is near its confidentiality limit, so the
    /// connection should update keys now.
    pub fn should_update(&self) -> bool {
        todo!("one_rtt")
    }

    /// Forget the previous receive keys (call about 3 PTO after an update).
    pub fn discard_previous(&mut self) {
        todo!("one_rtt")
    }

    /// True while previous receive keys are kept (so the caller can arm a timer).
    pub fn has_previous(&self) -> bool {
        todo!("one_rtt")
    }

    /// Number of key updates so far (both initiators).
    pub fn updates(&self) -> u64 {
        todo!("one_rtt")
    }
}
