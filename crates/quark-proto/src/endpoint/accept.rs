//! Datagrams no connection owns: a client's first Initial (a new connection,
//! or a Retry first), a version we do not speak (Version Negotiation), and short
//! headers for a connection we do not know (a stateless reset, ours or theirs).

use std::net::{IpAddr, SocketAddr};
use std::time::Instant;

use rand::Rng;

use super::{DatagramEvent, Endpoint, Response, local_params};
use crate::cid::ResetToken;
use crate::connection::{Connection, ConnectionParams};
use crate::crypto::tls::TlsSession;
use crate::crypto::tokens::TokenContents;
use crate::packet::{self, MIN_INITIAL_SIZE, PartialDecode};
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
        if let Some(&h) = self.reset_tokens.get(&ResetToken(tail)) {
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
        self.responses.push_back(Response {
            destination: remote,
            src_ip: local_ip,
            data: out,
        });
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
        self.responses.push_back(Response {
            destination: remote,
            src_ip: local_ip,
            data: out,
        });
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
        if self.conns.len() >= server.max_connections {
            tracing::debug!(%remote, "connection limit reached; Initial dropped");
            return None;
        }
        let token = &data[pd.token.clone()];
        let (orig_dcid, retry_scid, validated) = if server.retry {
            if token.is_empty() {
                return self.send_retry(now, remote, local_ip, pd);
            }
            let key = self.token_key.as_ref()?;
            let contents = key.open(remote, token)?;
            let (orig, retry_scid) = contents.retry?;
            let age = self.elapsed(now).saturating_sub(contents.issued);
            if retry_scid != pd.dst_cid || age > server.retry_token_lifetime {
                return None;
            }
            (orig, Some(retry_scid), true)
        } else {
            (pd.dst_cid, None, false)
        };
        let local_cid = self.new_cid();
        let mut params = local_params(&server.transport);
        params.original_destination_connection_id = Some(orig_dcid);
        params.initial_source_connection_id = Some(local_cid);
        params.retry_source_connection_id = retry_scid;
        params.stateless_reset_token = Some(self.reset_key.token(&local_cid));
        let tls = match TlsSession::server(server.tls.clone(), &params) {
            Ok(tls) => tls,
            Err(e) => {
                tracing::warn!(%e, "server TLS setup failed");
                return None;
            }
        };
        let conn = Connection::new(
            ConnectionParams {
                side: Side::Server,
                version: pd.version,
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
            },
            now,
        );
        let h = self.insert(conn, local_cid);
        self.route(pd.dst_cid, h);
        self.conns[h.0].handle_datagram(now, remote, ecn, data);
        if !self.conns[h.0].has_received_packet() {
            // Nothing authenticated: keep no state for unverifiable input.
            self.remove(h);
            return None;
        }
        self.sync(h);
        self.accept_queue.push_back(h);
        Some(DatagramEvent::NewConnection(h))
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
            issued: self.elapsed(now),
        };
        let token = self.token_key.as_ref()?.seal(remote, &contents, nonce);
        let mut out = Vec::new();
        packet::write_retry(
            &mut out,
            &pd.src_cid,
            &retry_scid,
            &pd.dst_cid,
            &token,
            self.rng.random(),
        );
        self.responses.push_back(Response {
            destination: remote,
            src_ip: local_ip,
            data: out,
        });
        Some(DatagramEvent::Response)
    }
}
