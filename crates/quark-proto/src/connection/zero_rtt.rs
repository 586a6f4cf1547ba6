//! 0-RTT (RFC 9000 §7.4.1, RFC 9001 §4.6): a resuming client sends stream
//! data before the handshake completes, under the limits it remembered from
//! the session; a server configured for it decrypts that data with the early
//! keys TLS gives it. When the server rejects early data, the client declares
//! every 0-RTT packet lost, so their stream data goes again in 1-RTT.

use std::time::Instant;

use super::Connection;
use crate::crypto::DirectionalKeys;
use crate::error::TransportError;
use crate::packet::{self, PartialDecode, Unprotected};
use crate::transport_params::TransportParameters;
use crate::types::{EcnCodepoint, PacketKind, SpaceId};

/// 0-RTT packets a server buffers while it cannot decrypt them yet (they
/// overtook the ClientHello), and the bytes one may hold.
pub(crate) const MAX_BUFFERED_PACKETS: usize = 16;
const MAX_BUFFERED_PACKET_SIZE: usize = 1500;

/// How 0-RTT went on a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ZeroRtt {
    /// Not attempted (no resumable session allowing it, or a server that
    /// saw none).
    #[default]
    None,
    /// Client: sending 0-RTT; the server's answer comes with the handshake.
    Pending,
    /// The server accepted the early data.
    Accepted,
    /// The server rejected it; the client sent its data again in 1-RTT.
    Rejected,
}

/// What only a connection doing 0-RTT holds.
pub(crate) struct Early {
    /// Client: to send; server: to receive. Gone once 1-RTT takes over.
    keys: Option<DirectionalKeys>,
    /// Client: the server's parameters remembered with the session.
    remembered: Option<TransportParameters>,
    /// Server: 0-RTT packets that arrived before their keys.
    buffered: Vec<(Vec<u8>, Option<EcnCodepoint>)>,
}

impl Connection {
    /// Client, at creation: if TLS offers early data for a resumed session,
    /// take its keys and open the streams under the remembered limits.
    pub(super) fn start_0rtt(&mut self) {
        let Some(keys) = self.tls.zero_rtt_keys() else {
            return;
        };
        //= https://www.rfc-editor.org/rfc/rfc9000#section-7.4.1
        //# Remembered transport parameters apply to the new connection until
        //# the handshake completes and the client starts sending 1-RTT
        //# packets.
        // While resuming, rustls reports the parameters kept with the ticket.
        let Ok(Some(remembered)) = self.tls.peer_params(self.side) else {
            return;
        };
        // Only the stream limits are used; the client uses none of the
        // remembered connection IDs, reset token, ACK delay values.
        self.streams.set_peer_params(&remembered);
        self.early = Some(Box::new(Early {
            keys: Some(keys),
            remembered: Some(remembered),
            buffered: Vec::new(),
        }));
        self.zero_rtt = ZeroRtt::Pending;
    }

    /// How 0-RTT went (or goes).
    pub fn zero_rtt(&self) -> ZeroRtt {
        self.zero_rtt
    }

    /// Whether the server accepted the 0-RTT data (client: known once the
    /// handshake completed; server: from the ClientHello on).
    pub fn is_0rtt_accepted(&self) -> bool {
        self.zero_rtt == ZeroRtt::Accepted
    }

    /// Client: whether streams can be opened and written now, before the
    /// handshake completes (their data goes in 0-RTT packets).
    pub fn is_0rtt_available(&self) -> bool {
        self.sending_0rtt()
    }

    /// Whether the packets this client builds in the data space are 0-RTT.
    pub(super) fn sending_0rtt(&self) -> bool {
        self.side.is_client()
            && self.one_rtt.is_none()
            && self.early.as_ref().is_some_and(|e| e.keys.is_some())
    }

    /// Whether the congestion window leaves room for a 0-RTT datagram and
    /// still two for the handshake. The server acknowledges 0-RTT only once
    /// the handshake completes: 0-RTT filling the window would leave the
    /// client's Finished waiting with no PTO to send it (the application
    /// space arms none before confirmation, RFC 9002 §6.2.1).
    //= https://www.rfc-editor.org/rfc/rfc9001#section-5.6
    //# A client MAY wish to apply additional restrictions on what data it
    //# sends prior to the completion of the TLS handshake.
    pub(super) fn room_for_0rtt(&self) -> bool {
        self.recovery.send_allowance() >= 3 * u64::from(self.path.mtu)
    }

    /// The 0-RTT keys, for sending (client) or receiving (server).
    pub(super) fn zero_rtt_keys(&self) -> Option<&DirectionalKeys> {
        self.early.as_ref()?.keys.as_ref()
    }

    /// Server, after TLS read the ClientHello: take the 0-RTT keys if the
    /// early data was accepted.
    pub(super) fn install_server_0rtt(&mut self) {
        if self.zero_rtt != ZeroRtt::None || !self.accept_0rtt {
            return;
        }
        let Some(keys) = self.tls.zero_rtt_keys() else {
            return;
        };
        let early = self.early.get_or_insert_with(|| {
            Box::new(Early {
                keys: None,
                remembered: None,
                buffered: Vec::new(),
            })
        });
        early.keys = Some(keys);
        self.zero_rtt = ZeroRtt::Accepted;
    }

    /// Server: a 0-RTT packet it has no keys for. Kept (a copy, bounded) if
    /// the keys may still come, to be opened once they do. Returns whether
    /// it was kept.
    // Reordering can put 0-RTT packets ahead of the ClientHello's Initial
    // (RFC 9001 §5.7 lets a receiver buffer packets it cannot decrypt yet).
    pub(super) fn buffer_0rtt(&mut self, packet: &[u8], ecn: Option<EcnCodepoint>) -> bool {
        if !self.accept_0rtt
            || self.handshake_complete
            || self.zero_rtt != ZeroRtt::None
            || packet.len() > MAX_BUFFERED_PACKET_SIZE
        {
            return false;
        }
        let early = self.early.get_or_insert_with(|| {
            Box::new(Early {
                keys: None,
                remembered: None,
                buffered: Vec::new(),
            })
        });
        if early.buffered.len() >= MAX_BUFFERED_PACKETS {
            return false;
        }
        early.buffered.push((packet.to_vec(), ecn));
        true
    }

    /// Heap held for 0-RTT (buffered packets), for the memory estimate.
    pub(super) fn early_memory(&self) -> usize {
        self.early.as_ref().map_or(0, |e| {
            std::mem::size_of::<Early>() + e.buffered.iter().map(|(p, _)| p.len()).sum::<usize>()
        })
    }

    /// 0-RTT packets buffered now (for tests and stats).
    pub fn buffered_0rtt_packets(&self) -> usize {
        self.early.as_ref().map_or(0, |e| e.buffered.len())
    }

    /// Server, after a batch: open the buffered 0-RTT packets once their
    /// keys came; forget them once they never will.
    pub(super) fn flush_buffered_0rtt(&mut self, now: Instant) {
        let Some(early) = self.early.as_mut() else {
            return;
        };
        if early.buffered.is_empty() {
            return;
        }
        if early.keys.is_none() {
            if self.handshake_complete || self.tls.is_shed() {
                early.buffered = Vec::new();
            }
            return;
        }
        let buffered = std::mem::take(&mut early.buffered);
        for (mut packet, ecn) in buffered {
            let grease = self.bits.accepts_cleared();
            let Ok(pd) = PartialDecode::with_quic_bit(&packet, self.cid_len.into(), grease) else {
                continue;
            };
            if pd.len != packet.len() {
                packet.truncate(pd.len);
            }
            self.on_protected(now, ecn, PacketKind::ZeroRtt, &mut packet, &pd, None);
            if self.is_closed() {
                return;
            }
        }
    }

    /// Remove a 0-RTT packet's protection (server).
    pub(super) fn open_0rtt(
        &self,
        packet: &mut [u8],
        pd: &PartialDecode,
        largest: Option<u64>,
    ) -> Option<(Unprotected, std::ops::Range<usize>)> {
        if self.side.is_client() {
            return None;
        }
        let keys = self.zero_rtt_keys()?;
        let hdr =
            packet::remove_header_protection(packet, pd, keys.header.as_ref(), largest).ok()?;
        let range = packet::decrypt_payload(packet, &hdr, keys.packet.as_ref()).ok()?;
        Some((hdr, range))
    }

    /// Server: a 1-RTT packet arrived, so the client sends no more 0-RTT.
    //= https://www.rfc-editor.org/rfc/rfc9001#section-4.9.3
    //# Additionally, a server MAY discard 0-RTT keys as soon as it receives
    //# a 1-RTT packet.
    pub(super) fn on_one_rtt_received(&mut self) {
        if self.side.is_server() {
            self.early = None;
        }
    }

    /// Client, the handshake complete: settle 0-RTT with the server's real
    /// parameters `params`, applied to the streams here.
    pub(super) fn finish_0rtt(
        &mut self,
        now: Instant,
        params: &TransportParameters,
    ) -> Result<(), TransportError> {
        let mut early = match self.early.take() {
            Some(early) if self.side.is_client() => early,
            None => {
                self.streams.set_peer_params(params);
                return Ok(());
            }
            server => {
                // Streams the client opened in 0-RTT have send halves made
                // before its limits were known.
                self.early = server;
                self.streams.set_peer_params(params);
                self.streams.replace_peer_params(params);
                return Ok(());
            }
        };
        //= https://www.rfc-editor.org/rfc/rfc9001#section-5.6
        //# Once a client has installed 1-RTT keys, it MUST NOT send any more
        //# 0-RTT packets.
        early.keys = None;
        let remembered = early.remembered.take().unwrap_or_default();
        if self.tls.is_early_data_accepted() {
            self.zero_rtt = ZeroRtt::Accepted;
            //= https://www.rfc-editor.org/rfc/rfc9000#section-7.4.1
            //# If 0-RTT data is accepted by the server, the server MUST NOT reduce
            //# any limits or alter any values that might be violated by the client
            //# with its 0-RTT data.
            if crate::connection::Streams::reduces(&remembered, params) {
                return Err(TransportError::protocol_violation(
                    "0-RTT accepted with reduced limits",
                ));
            }
        } else {
            self.zero_rtt = ZeroRtt::Rejected;
            //= https://www.rfc-editor.org/rfc/rfc9001#section-4.6.2
            //# When 0-RTT is rejected, all connection characteristics that the
            //# client assumed might be incorrect.
            // The data written stays: every 0-RTT packet counts as lost (not
            // as congestion) and its frames go again in 1-RTT, under the new
            // limits, which must hold what was written.
            if !self.streams.fits_committed(params) {
                return Err(TransportError::new(
                    crate::error::TransportErrorCode::INTERNAL_ERROR,
                    "0-RTT rejected and the server's limits cannot hold its data",
                ));
            }
            let path = self.path_state();
            let (acked, mut dropped) = super::scratch::take_ack();
            self.recovery
                .discard_space(SpaceId::Data, now, &path, &mut dropped);
            for (pn, pkt) in dropped.drain(..) {
                self.on_packet_lost(SpaceId::Data, pn, &pkt.data);
            }
            super::scratch::put_ack(acked, dropped);
        }
        self.streams.replace_peer_params(params);
        Ok(())
    }
}
