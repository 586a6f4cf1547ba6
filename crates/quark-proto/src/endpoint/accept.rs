//! Datagrams no connection owns: a client's first Initial (a new connection,
//! or a Retry first), a version we do not speak (Version Negotiation), and short
//! headers for a connection we do not know (a stateless reset, ours or theirs).

use std::hash::BuildHasher;
use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use rand::Rng;

use super::admission::{Source, Verdict};
use super::new_token::TokenCheck;
use super::{DatagramEvent, Endpoint, Response, local_params};
use crate::cid::ResetToken;
use crate::connection::{Connection, ConnectionParams};
use crate::crypto::tls::TlsSession;
use crate::crypto::tokens::TokenContents;
use crate::error::TransportErrorCode;
use crate::frame::{Close, Frame};
use crate::packet::{self, MIN_INITIAL_SIZE, PartialDecode};
use crate::packet::{HeaderParams, PacketBuilder};
use crate::types::PacketKind;
use crate::types::{EcnCodepoint, Side};

impl Endpoint {
    /// A short-header datagram for no known connection: maybe a stateless reset
    /// for one of ours, or a packet for a connection we forgot (answer with one).
    pub(super) fn unroutable_short(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        ecn: Option<EcnCodepoint>,
        data: &mut [u8],
        pd: &PartialDecode,
    ) -> Option<DatagramEvent> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-10.3
        //# the endpoint ... MUST use at least 21 bytes
        if data.len() < 21 {
            return None;
        }
        let tail: [u8; 16] = data[data.len() - 16..].try_into().ok()?;
        let key = self.route_key.hash_one(ResetToken(tail));
        if let Some(&h) = self.reset_tokens.get(&key) {
            // Let the connection check the token itself (constant time).
            self.conns[h.0].handle_datagram(now, remote, ecn, data);
            self.sync(h);
            return Some(DatagramEvent::Connection(h));
        }
        // Another worker's connection: its packets are no reason for a reset.
        if let Some(forward) = self.foreign(pd) {
            return Some(forward);
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-10.3
        //# An endpoint MUST NOT send a Stateless Reset that is three times or
        //# more larger than the packet it receives to avoid being used for
        //# amplification.
        //# ... An endpoint that sends a Stateless Reset in response to a packet that
        //# is 43 bytes or shorter SHOULD send a Stateless Reset that is one byte
        //# shorter than the packet it responds to.
        if self.responses.len() >= self.config.max_stateless_responses {
            return None;
        }
        let len = if data.len() <= 43 {
            data.len() - 1
        } else {
            43.max(data.len() / 2).min(64)
        };
        if len < 21 {
            return None;
        }
        let token = self.reset_key.token(&pd.dst_cid);
        let mut random = [0u8; 64];
        self.rng.fill(&mut random[..]);
        let mut out = Vec::with_capacity(len);
        packet::write_stateless_reset(&mut out, &token, len, &random[..len]);
        self.queue_response(remote, local_ip, out);
        Some(DatagramEvent::Response)
    }

    pub(super) fn version_negotiation(
        &mut self,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        len: usize,
        dst_cid: &[u8],
        src_cid: &[u8],
    ) -> Option<DatagramEvent> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-6.1
        //# A server MUST NOT send more than one Version Negotiation packet in
        //# response to a single UDP datagram. ... servers SHOULD NOT [respond to]
        //# ... datagrams smaller than the smallest allowed maximum datagram size
        if self.server.is_none()
            || len < MIN_INITIAL_SIZE
            || self.responses.len() >= self.config.max_stateless_responses
        {
            return None;
        }
        let mut out = Vec::new();
        let versions = self.config.supported_versions.clone();
        packet::write_version_negotiation(&mut out, dst_cid, src_cid, &versions, self.rng.random());
        self.queue_response(remote, local_ip, out);
        Some(DatagramEvent::Response)
    }

    pub(super) fn accept_initial(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        ecn: Option<EcnCodepoint>,
        data: &mut [u8],
        pd: &PartialDecode,
    ) -> Option<DatagramEvent> {
        let server = self.server.clone()?;
        //= https://www.rfc-editor.org/rfc/rfc9000#section-14.1
        //# A server MUST discard an Initial packet that is carried in a UDP
        //# datagram with a payload that is smaller than the smallest allowed
        //# maximum datagram size of 1200 bytes.
        if data.len() < MIN_INITIAL_SIZE || pd.dst_cid.len() < 8 {
            return None;
        }
        let token = &data[pd.token.clone()];
        let (retry_token, new_token) = match self.check_token(now, remote, pd, token, &server) {
            TokenCheck::Retry(orig, retry_scid) => (Some((orig, retry_scid)), None),
            TokenCheck::NewToken(tag) => {
                tracing::debug!(%remote, "address validated by a NEW_TOKEN token");
                (None, Some(tag))
            }
            // A Retry token we cannot honour is reason enough only when we
            // demand one: the client would not take a second Retry.
            TokenCheck::BadRetry if server.retry => return None,
            TokenCheck::BadRetry | TokenCheck::Unvalidated => (None, None),
        };
        let source = Source::of(&remote);
        let verdict = if self.conns.len() >= server.max_connections || server.memory.exceeded() {
            Verdict::Refuse
        } else {
            self.admission.verdict(
                &server.handshakes,
                source,
                retry_token.is_some() || new_token.is_some(),
                server.retry,
            )
        };
        match verdict {
            Verdict::Accept => {}
            Verdict::Retry => return self.send_retry(now, remote, local_ip, pd),
            Verdict::Refuse => {
                tracing::debug!(%remote, "Initial refused: connection, handshake or memory limit");
                return self.refuse(remote, local_ip, pd);
            }
        }
        let (orig_dcid, retry_scid, validated) = match retry_token {
            Some((orig, retry_scid)) => (orig, Some(retry_scid), true),
            None => (pd.dst_cid, None, new_token.is_some()),
        };
        let local_cid = self.new_cid();
        let mut params = local_params(&server.transport);
        params.original_destination_connection_id = Some(orig_dcid);
        params.initial_source_connection_id = Some(local_cid);
        params.retry_source_connection_id = retry_scid;
        params.grease_quic_bit = self.config.grease_quic_bit;
        params.stateless_reset_token = Some(self.reset_key.token(&local_cid));
        let preferred_cid = server.preferred_address.map(|addr| {
            let cid = self.new_cid();
            let token = self.reset_key.token(&cid);
            params.preferred_address = Some(super::preferred::param(addr, cid, token));
            (addr.ip(), cid, token)
        });
        let version = self.negotiate_version(data, pd);
        params.version_information = Some(Connection::version_information(
            version,
            &self.config.supported_versions,
        ));
        let tls = match TlsSession::server_for(version, server.tls.clone(), &params) {
            Ok(tls) => tls,
            Err(e) => {
                tracing::warn!(%e, "server TLS setup failed");
                return None;
            }
        };
        let conn = Connection::new(
            ConnectionParams {
                side: Side::Server,
                version,
                original_version: pd.version,
                compatible_versions: Vec::new(),
                tls,
                config: server.transport.clone(),
                remote,
                local_ip,
                local_cid,
                peer_cid: pd.src_cid,
                initial_dcid: pd.dst_cid,
                local_params: params,
                shared: self.connection_shared(),
                token: Vec::new(),
                validated,
                retry_src_cid: retry_scid,
                zero_rtt: server.zero_rtt,
                preferred_cid,
            },
            now,
        );
        let h = self.insert(conn, local_cid);
        self.route(pd.dst_cid, h);
        self.conns[h.0].handle_datagram(now, remote, ecn, data);
        let conn = &mut self.conns[h.0];
        if conn.is_closed() && conn.has_received_packet() {
            // The ClientHello was refused (bad parameters, no common ALPN...):
            // answer with the connection's CONNECTION_CLOSE, then forget it.
            let mut out = Vec::new();
            if let Some(t) = conn.poll_transmit(now, 1, &mut out) {
                self.queue_response(remote, t.src_ip.or(local_ip), out);
            }
            self.remove(h);
            return Some(DatagramEvent::Response);
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-21.1.1.1
        //# Endpoints MUST NOT commit more resources to a connection than
        //# the peer has committed.
        if !conn.client_hello_begun() {
            // Nothing authenticated, or no ClientHello (an Initial of PINGs
            // alone): keep no state. A later piece of a ClientHello split
            // over several Initials (quic-go's, any post-quantum key share)
            // keeps the connection like its start, under the same half-open
            // limits: acknowledged, the client resends the lost start at
            // once rather than at its next PTO.
            self.remove(h);
            return None;
        }
        if let Some(tag) = new_token {
            self.spend_token(tag);
        }
        self.owned[h.0].half_open = Some(source);
        self.admission.open(source);
        for (mut early, ecn) in self.early.take(&pd.dst_cid, remote) {
            self.conns[h.0].handle_datagram(now, remote, ecn, &mut early);
        }
        self.sync(h);
        self.accept_queue.push_back(h);
        Some(DatagramEvent::NewConnection(h))
    }

    /// The version for a new connection whose first Initial is `pd`: our most
    /// preferred version among those the client offered as compatible (RFC
    /// 9368 §2.3), if we prefer it to the client's; else the client's.
    fn negotiate_version(&self, data: &[u8], pd: &PartialDecode) -> u32 {
        let ours = &self.config.supported_versions;
        if ours.first().is_none_or(|&v| v == pd.version) {
            return pd.version;
        }
        let Some(offered) = super::peek::client_versions(data, pd) else {
            return pd.version;
        };
        for &v in ours {
            if v == pd.version {
                break;
            }
            if offered.available.contains(&v) && super::peek::compatible(pd.version, v) {
                return v;
            }
        }
        pd.version
    }

    /// Refuse a client's first Initial without keeping state: an Initial
    /// packet of ours carrying CONNECTION_CLOSE with CONNECTION_REFUSED,
    /// protected with the Initial keys its Destination Connection ID gives.
    //= https://www.rfc-editor.org/rfc/rfc9000#section-10.2.3
    //# When sending a CONNECTION_CLOSE frame in an Initial packet ... the
    //# frame MUST be a CONNECTION_CLOSE of type 0x1c
    fn refuse(
        &mut self,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        pd: &PartialDecode,
    ) -> Option<DatagramEvent> {
        if self.responses.len() >= self.config.max_stateless_responses {
            return None;
        }
        let keys = crate::crypto::initial_keys_for(pd.version, &pd.dst_cid, Side::Server);
        let header = HeaderParams {
            kind: PacketKind::Initial,
            version: pd.version,
            dst_cid: &pd.src_cid,
            src_cid: &pd.dst_cid,
            token: &[],
            pn: 0,
            largest_acked: None,
            key_phase: false,
            spin: false,
        };
        let mut out = Vec::with_capacity(64);
        let tag_len = keys.local.packet.tag_len();
        let builder = PacketBuilder::start(&mut out, &header, MIN_INITIAL_SIZE, tag_len);
        Frame::Close(Close {
            error_code: TransportErrorCode::CONNECTION_REFUSED.0,
            frame_type: Some(0),
            reason: b"server busy",
        })
        .encode(&mut out);
        builder.finish(
            &mut out,
            0,
            keys.local.packet.as_ref(),
            keys.local.header.as_ref(),
        );
        self.queue_response(remote, local_ip, out);
        Some(DatagramEvent::Response)
    }

    fn queue_response(&mut self, destination: SocketAddr, src_ip: Option<IpAddr>, data: Vec<u8>) {
        self.responses.push_back(Response {
            destination,
            src_ip,
            data,
        });
    }

    pub(super) fn send_retry(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        pd: &PartialDecode,
    ) -> Option<DatagramEvent> {
        if self.responses.len() >= self.config.max_stateless_responses {
            return None;
        }
        let retry_scid = self.new_cid();
        let mut nonce = [0u8; 12];
        self.rng.fill(&mut nonce);
        let contents = TokenContents {
            retry: Some((pd.dst_cid, retry_scid)),
            issued: self.token_time(now),
        };
        let token = self.token_key.as_ref()?.seal(remote, &contents, nonce);
        let mut out = Vec::new();
        packet::write_retry(
            &mut out,
            pd.version,
            &pd.src_cid,
            &retry_scid,
            &pd.dst_cid,
            &token,
            self.rng.random(),
        );
        self.queue_response(remote, local_ip, out);
        Some(DatagramEvent::Response)
    }
}
