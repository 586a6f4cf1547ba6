//! The endpoint: routes datagrams to connections by connection ID, creates
//! server connections from Initial packets, and answers what belongs to no
//! connection (Version Negotiation, Retry, stateless reset).

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use slab::Slab;
use smallvec::SmallVec;

use crate::cid::{ConnectionId, ResetToken};
use crate::config::{CidGenerator, ClientConfig, EndpointConfig, ServerConfig, TransportConfig};
use crate::connection::{
    CidEvent, Connection, ConnectionParams, EndpointShared, MtuCache, Transmit,
};
use crate::crypto::tls::{TlsSession, TlsSetupError};
use crate::crypto::tokens::{ResetKey, TokenContents, TokenKey};
use crate::packet::{self, HeaderType, MIN_INITIAL_SIZE, PacketDecodeError, PartialDecode};
use crate::transport_params::TransportParameters;
use crate::types::{EcnCodepoint, PacketKind, Side};

/// Identifies a connection within its endpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConnectionHandle(pub usize);

/// What a datagram did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DatagramEvent {
    /// A new server connection was created; it is also queued for [`Endpoint::accept`].
    NewConnection(ConnectionHandle),
    /// The datagram went to this existing connection.
    Connection(ConnectionHandle),
    /// A stateless response was queued (Version Negotiation, Retry, reset).
    Response,
    /// The datagram is for a connection of another worker (this index; see
    /// [`EndpointConfig::worker`]). It was not looked at beyond its header: hand it
    /// to that worker unchanged.
    Forward(usize),
}

/// Why `connect` failed.
#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    /// TLS could not be set up (bad server name, configuration).
    #[error(transparent)]
    Tls(#[from] TlsSetupError),
    /// The version is not one this endpoint supports.
    #[error("unsupported QUIC version {0:#x}")]
    UnsupportedVersion(u32),
}

/// A stateless datagram waiting to be sent.
struct Response {
    destination: SocketAddr,
    src_ip: Option<IpAddr>,
    data: Vec<u8>,
}

/// One connection's entries in the endpoint's maps (a handful each: the IDs
/// it issued, which it limits, and the peer's live reset tokens).
#[derive(Default)]
struct Owned {
    cids: Vec<ConnectionId>,
    tokens: Vec<ResetToken>,
}

/// A set of connections sharing a socket.
pub struct Endpoint {
    config: Arc<EndpointConfig>,
    server: Option<Arc<ServerConfig>>,
    cids: CidGenerator,
    /// Boxed: a connection is several kilobytes, which a slab slot would keep
    /// after it closed, and which inserting and removing would copy.
    conns: Slab<Box<Connection>>,
    routes: HashMap<ConnectionId, ConnectionHandle>,
    /// The last route looked up: a connection's packets come in runs, and
    /// SipHash over a peer-chosen ID cost more than the rest of routing a packet.
    last_route: Option<(ConnectionId, ConnectionHandle)>,
    reset_tokens: HashMap<ResetToken, ConnectionHandle>,
    /// The keys of `routes` and `reset_tokens` each connection holds, by slab
    /// index: removing a connection touches only its own entries, not every
    /// connection's.
    owned: Vec<Owned>,
    reset_key: Arc<ResetKey>,
    token_key: Option<TokenKey>,
    rng: StdRng,
    responses: VecDeque<Response>,
    accept_queue: VecDeque<ConnectionHandle>,
    /// The first `now` seen: token issue times are measured from it.
    epoch: Option<Instant>,
    /// What connections learnt about each path's MTU, offered to the other
    /// connections on the same path, and the paths' traffic.
    mtus: MtuCache,
}

impl Endpoint {
    /// An endpoint; with `server`, it accepts connections.
    pub fn new(config: Arc<EndpointConfig>, server: Option<Arc<ServerConfig>>) -> Self {
        let rng = match config.rng_seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_os_rng(),
        };
        let token_key = server.as_ref().map(|s| TokenKey::new(&s.token_key));
        Endpoint {
            reset_key: Arc::new(ResetKey::new(&config.reset_key)),
            cids: CidGenerator::new(&config),
            config,
            server,
            conns: Slab::new(),
            routes: HashMap::new(),
            last_route: None,
            owned: Vec::new(),
            mtus: MtuCache::default(),
            reset_tokens: HashMap::new(),
            token_key,
            rng,
            responses: VecDeque::new(),
            accept_queue: VecDeque::new(),
            epoch: None,
        }
    }

    /// Start accepting connections (or change how).
    pub fn set_server_config(&mut self, server: Option<Arc<ServerConfig>>) {
        self.token_key = server.as_ref().map(|s| TokenKey::new(&s.token_key));
        self.server = server;
    }

    /// Open a client connection to `remote`, verifying the server as `server_name`.
    pub fn connect(
        &mut self,
        now: Instant,
        config: &ClientConfig,
        remote: SocketAddr,
        server_name: &str,
    ) -> Result<ConnectionHandle, ConnectError> {
        if !self.config.supported_versions.contains(&config.version) {
            return Err(ConnectError::UnsupportedVersion(config.version));
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-7.2
        //# When an Initial packet is sent by a client that has not previously
        //# received an Initial or Retry packet from the server, the client
        //# populates the Destination Connection ID field with an unpredictable
        //# value.  This Destination Connection ID MUST be at least 8 bytes in length.
        let dcid = ConnectionId::random(&mut self.rng, 16);
        let local_cid = self.new_cid();
        let mut params = local_params(&config.transport);
        params.initial_source_connection_id = Some(local_cid);
        let tls = TlsSession::client(config.tls.clone(), server_name, &params)?;
        let conn = Connection::new(
            ConnectionParams {
                side: Side::Client,
                version: config.version,
                tls,
                config: config.transport.clone(),
                remote,
                local_ip: None,
                local_cid,
                peer_cid: dcid,
                initial_dcid: dcid,
                local_params: params,
                shared: self.connection_shared(),
                token: Vec::new(),
                validated: true,
                retry_src_cid: None,
            },
            now,
        );
        let h = self.insert(conn, local_cid);
        self.sync(h);
        Ok(h)
    }

    /// Process a datagram received from `remote` (sent to our `local_ip`).
    pub fn handle_datagram(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        ecn: Option<EcnCodepoint>,
        data: &mut [u8],
    ) -> Option<DatagramEvent> {
        self.epoch.get_or_insert(now);
        let pd = match PartialDecode::new(data, self.config.cid_len) {
            Ok(pd) => pd,
            Err(PacketDecodeError::UnsupportedVersion {
                dst_cid, src_cid, ..
            }) => {
                return self.version_negotiation(remote, local_ip, data.len(), &dst_cid, &src_cid);
            }
            Err(PacketDecodeError::Invalid(_)) => return None,
        };
        if let Some(h) = self.lookup(&pd.dst_cid) {
            self.conns[h.0].handle_datagram(now, remote, ecn, data);
            self.sync(h);
            return Some(DatagramEvent::Connection(h));
        }
        if !pd.is_long() {
            return self.unroutable_short(now, remote, local_ip, ecn, data, &pd);
        }
        match pd.ty {
            // Initial and 0-RTT carry the client's choice of ID until it hears from
            // us: they stay where they arrived, even if that ID looks like another
            // worker's.
            HeaderType::Frames(PacketKind::Initial) if self.server.is_some() => {
                self.accept_initial(now, remote, local_ip, ecn, data, &pd)
            }
            HeaderType::Frames(PacketKind::Handshake) => self.foreign(&pd),
            _ => None,
        }
    }

    /// Process the datagrams of one receive (the segments of a GRO buffer:
    /// `data` cut every `stride` bytes). Consecutive segments for the same
    /// connection are handed over together, so it can decrypt them all before
    /// processing any ([`Connection::handle_batch`]). Reports what each did, with
    /// the datagram concerned for those handled alone (to forward it elsewhere on
    /// [`DatagramEvent::Forward`]); an empty slice for a batch.
    #[allow(clippy::too_many_arguments)]
    pub fn handle_batch(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        ecn: Option<EcnCodepoint>,
        data: &mut [u8],
        stride: usize,
        mut on_event: impl FnMut(DatagramEvent, &[u8]),
    ) {
        self.epoch.get_or_insert(now);
        let mut run: SmallVec<[&mut [u8]; 64]> = SmallVec::new();
        let mut run_conn = None;
        for segment in data.chunks_mut(stride.max(1)) {
            let route = match PartialDecode::new(segment, self.config.cid_len) {
                Ok(pd) => self.lookup(&pd.dst_cid),
                Err(_) => None,
            };
            if route.is_none() || route != run_conn {
                self.flush_run(now, remote, ecn, run_conn.take(), &mut run, &mut on_event);
            }
            match route {
                Some(h) => {
                    run_conn = Some(h);
                    run.push(segment);
                }
                None => {
                    if let Some(event) = self.handle_datagram(now, remote, local_ip, ecn, segment) {
                        on_event(event, segment);
                    }
                }
            }
        }
        self.flush_run(now, remote, ecn, run_conn, &mut run, &mut on_event);
    }

    fn flush_run(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        conn: Option<ConnectionHandle>,
        run: &mut SmallVec<[&mut [u8]; 64]>,
        on_event: &mut impl FnMut(DatagramEvent, &[u8]),
    ) {
        if let Some(h) = conn {
            self.conns[h.0].handle_batch(now, remote, ecn, run);
            self.sync(h);
            on_event(DatagramEvent::Connection(h), &[]);
        }
        run.clear();
    }

    /// `Forward` if the destination ID names another worker.
    fn foreign(&self, pd: &PartialDecode) -> Option<DatagramEvent> {
        let w = self.cids.worker_of(&pd.dst_cid)?;
        (Some(w) != self.cids.worker().map(|me| me.index())).then_some(DatagramEvent::Forward(w))
    }

    /// A short-header datagram for no known connection: maybe a stateless reset
    /// for one of ours, or a packet for a connection we forgot (answer with one).
    fn unroutable_short(
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

    fn version_negotiation(
        &mut self,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        len: usize,
        dst_cid: &ConnectionId,
        src_cid: &ConnectionId,
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

    fn accept_initial(
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

    fn send_retry(
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

    /// The endpoint's part of a new connection.
    fn connection_shared(&mut self) -> EndpointShared {
        EndpointShared {
            reset_key: self.reset_key.clone(),
            rng_seed: self.rng.random(),
            cid_len: self.config.cid_len,
            cid_gen: self.cids.clone(),
        }
    }

    /// Keep a new connection and route its first connection ID to it.
    fn insert(&mut self, conn: Connection, local_cid: ConnectionId) -> ConnectionHandle {
        let h = ConnectionHandle(self.conns.insert(Box::new(conn)));
        if self.owned.len() <= h.0 {
            self.owned.resize_with(h.0 + 1, Owned::default);
        }
        self.route(local_cid, h);
        h
    }

    /// The connection packets addressed to `cid` go to.
    fn lookup(&mut self, cid: &ConnectionId) -> Option<ConnectionHandle> {
        if let Some((last, h)) = &self.last_route
            && last == cid
        {
            return Some(*h);
        }
        let h = *self.routes.get(cid)?;
        self.last_route = Some((*cid, h));
        Some(h)
    }

    /// Route packets addressed to `cid` to `h`.
    fn route(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        self.forget_last_route(&cid);
        self.routes.insert(cid, h);
        let owned = &mut self.owned[h.0].cids;
        if !owned.contains(&cid) {
            owned.push(cid);
        }
    }

    /// Stop routing `cid` to `h` (if it still goes there).
    fn unroute(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        if self.routes.get(&cid) == Some(&h) {
            self.routes.remove(&cid);
            self.forget_last_route(&cid);
        }
        self.owned[h.0].cids.retain(|c| *c != cid);
    }

    fn forget_last_route(&mut self, cid: &ConnectionId) {
        if self.last_route.is_some_and(|(last, _)| last == *cid) {
            self.last_route = None;
        }
    }

    /// Take `token` at the end of a datagram as a reset of `h`.
    fn add_token(&mut self, token: ResetToken, h: ConnectionHandle) {
        self.reset_tokens.insert(token, h);
        let owned = &mut self.owned[h.0].tokens;
        if !owned.contains(&token) {
            owned.push(token);
        }
    }

    /// Stop taking `token` as a reset of `h` (if it still is).
    fn forget_token(&mut self, token: ResetToken, h: ConnectionHandle) {
        if self.reset_tokens.get(&token) == Some(&h) {
            self.reset_tokens.remove(&token);
        }
        self.owned[h.0].tokens.retain(|t| *t != token);
    }

    fn elapsed(&self, now: Instant) -> Duration {
        self.epoch
            .map_or(Duration::ZERO, |e| now.saturating_duration_since(e))
    }

    fn new_cid(&mut self) -> ConnectionId {
        loop {
            let cid = self.cids.generate(&mut self.rng);
            if !self.routes.contains_key(&cid) {
                return cid;
            }
        }
    }

    /// Next stateless datagram to send (Version Negotiation, Retry, reset).
    pub fn poll_transmit(&mut self, buf: &mut Vec<u8>) -> Option<Transmit> {
        let r = self.responses.pop_front()?;
        buf.clear();
        buf.extend_from_slice(&r.data);
        Some(Transmit {
            destination: r.destination,
            size: buf.len(),
            segment_size: None,
            ecn: None,
            src_ip: r.src_ip,
        })
    }

    /// Mirror a connection's connection-ID changes in the routing table. Call after
    /// anything that may have changed them (the endpoint's own calls do it).
    pub fn sync(&mut self, h: ConnectionHandle) {
        while let Some(event) = self.conns.get_mut(h.0).and_then(|c| c.poll_cid_event()) {
            match event {
                CidEvent::Issued(cid) => self.route(cid, h),
                CidEvent::Retired(cid) => self.unroute(cid, h),
                CidEvent::PeerResetToken(token) => self.add_token(token, h),
                CidEvent::PeerResetTokenRetired(token) => self.forget_token(token, h),
            }
        }
        if let Some(conn) = self.conns.get_mut(h.0) {
            self.mtus.sync(conn);
        }
    }

    /// Next server connection not yet accepted.
    pub fn accept(&mut self) -> Option<ConnectionHandle> {
        while let Some(h) = self.accept_queue.pop_front() {
            if self.conns.contains(h.0) {
                return Some(h);
            }
        }
        None
    }

    /// A connection.
    pub fn connection(&self, h: ConnectionHandle) -> Option<&Connection> {
        self.conns.get(h.0).map(|c| &**c)
    }

    /// A connection, for application calls (streams, close). Calls that may
    /// change connection IDs (`handle_*`) should go through the endpoint or be
    /// followed by [`Endpoint::sync`].
    pub fn connection_mut(&mut self, h: ConnectionHandle) -> Option<&mut Connection> {
        self.conns.get_mut(h.0).map(|c| &mut **c)
    }

    /// Let a connection's due timers fire.
    pub fn handle_timeout(&mut self, h: ConnectionHandle, now: Instant) {
        if let Some(conn) = self.conns.get_mut(h.0) {
            conn.handle_timeout(now);
            self.sync(h);
        }
    }

    /// Forget a connection (after it drained and the application let go of it).
    pub fn remove(&mut self, h: ConnectionHandle) -> Option<Box<Connection>> {
        let conn = self.conns.try_remove(h.0)?;
        let owned = std::mem::take(&mut self.owned[h.0]);
        owned.cids.into_iter().for_each(|cid| self.unroute(cid, h));
        owned
            .tokens
            .into_iter()
            .for_each(|t| self.forget_token(t, h));
        Some(conn)
    }

    /// Handles of all live connections.
    pub fn handles(&self) -> impl Iterator<Item = ConnectionHandle> + '_ {
        self.conns.iter().map(|(i, _)| ConnectionHandle(i))
    }

    /// Entries in the routing table (connection IDs) and the reset-token table:
    /// what tests check stays bounded.
    #[doc(hidden)]
    pub fn table_sizes(&self) -> (usize, usize) {
        (self.routes.len(), self.reset_tokens.len())
    }

    /// Number of connections.
    pub fn len(&self) -> usize {
        self.conns.len()
    }

    /// True with no connections.
    pub fn is_empty(&self) -> bool {
        self.conns.is_empty()
    }

    /// Length of the connection IDs this endpoint issues.
    pub fn cid_len(&self) -> usize {
        self.config.cid_len
    }
}

/// The transport parameters we announce for a configuration.
pub fn local_params(config: &TransportConfig) -> TransportParameters {
    TransportParameters {
        max_idle_timeout: config.max_idle_timeout,
        max_udp_payload_size: u64::from(config.max_udp_payload_size),
        initial_max_data: config.receive_window,
        initial_max_stream_data_bidi_local: config.stream_receive_window,
        initial_max_stream_data_bidi_remote: config.stream_receive_window,
        initial_max_stream_data_uni: config.stream_receive_window,
        initial_max_streams_bidi: config.max_concurrent_bidi_streams,
        initial_max_streams_uni: config.max_concurrent_uni_streams,
        ack_delay_exponent: config.ack_delay_exponent,
        max_ack_delay: config.max_ack_delay,
        disable_active_migration: true,
        active_connection_id_limit: config.active_connection_id_limit,
        //= https://datatracker.ietf.org/doc/html/draft-ietf-quic-ack-frequency
        //# min_ack_delay: the minimum amount of time, in microseconds, that the
        //# endpoint sending this value is willing to delay an acknowledgment.
        min_ack_delay: config.ack_frequency.then_some(1000),
        ..TransportParameters::default()
    }
}

#[cfg(test)]
mod tests {
    use std::net::Ipv4Addr;

    use rand::SeedableRng;

    use super::*;
    use crate::config::Worker;

    fn worker(index: usize) -> Endpoint {
        let config = EndpointConfig {
            reset_key: [3; 32],
            rng_seed: Some(index as u64),
            worker: Worker::new(index, 2),
            ..EndpointConfig::default()
        };
        Endpoint::new(Arc::new(config), None)
    }

    #[allow(clippy::disallowed_methods)] // any instant will do: no timers run
    fn start() -> Instant {
        Instant::now()
    }

    fn remote() -> SocketAddr {
        (Ipv4Addr::LOCALHOST, 5000).into()
    }

    /// A short-header datagram of `len` bytes to `dcid`.
    fn short(dcid: &ConnectionId, len: usize) -> Vec<u8> {
        let mut d = vec![0x41];
        d.extend_from_slice(dcid);
        d.resize(len, 0xab);
        d
    }

    /// A long-header datagram of type `ty` (0 Initial, 2 Handshake) to `dcid`.
    fn long(ty: u8, dcid: &ConnectionId, payload: usize) -> Vec<u8> {
        let mut d = vec![0xc0 | (ty << 4)];
        d.extend_from_slice(&crate::packet::VERSION_1.to_be_bytes());
        d.push(dcid.len() as u8);
        d.extend_from_slice(dcid);
        d.push(0); // SCID length
        if ty == 0 {
            d.push(0); // token length
        }
        d.extend_from_slice(&(0x4000 | payload as u16).to_be_bytes());
        d.resize(d.len() + payload, 0xcd);
        d
    }

    #[test]
    fn another_workers_ids_are_forwarded_not_reset() {
        let mut w0 = worker(0);
        let w1 = worker(1);
        let mut rng = StdRng::seed_from_u64(9);
        let now = start();
        for _ in 0..20 {
            let theirs = w1.cids.generate(&mut rng);
            let mut d = short(&theirs, 60);
            let before = d.clone();
            let ev = w0.handle_datagram(now, remote(), None, None, &mut d);
            assert_eq!(ev, Some(DatagramEvent::Forward(1)));
            assert_eq!(d, before, "forwarded untouched");
            let mut d = long(2, &theirs, 100);
            let ev = w0.handle_datagram(now, remote(), None, None, &mut d);
            assert_eq!(ev, Some(DatagramEvent::Forward(1)));
        }
        assert!(w0.poll_transmit(&mut Vec::new()).is_none(), "no reset sent");
        // An unknown ID of its own gets the usual stateless reset.
        let ours = w0.new_cid();
        let ev = w0.handle_datagram(now, remote(), None, None, &mut short(&ours, 60));
        assert_eq!(ev, Some(DatagramEvent::Response));
    }

    #[test]
    fn initials_stay_where_they_arrive() {
        let w1 = worker(1);
        let mut w0 = worker(0);
        w0.set_server_config(None);
        let mut rng = StdRng::seed_from_u64(10);
        let now = start();
        for _ in 0..20 {
            // An Initial whose (client-chosen) ID happens to look like worker 1's.
            let dcid = w1.cids.generate(&mut rng);
            let ev = w0.handle_datagram(now, remote(), None, None, &mut long(0, &dcid, 1200));
            assert_eq!(ev, None);
        }
    }

    #[test]
    fn without_workers_nothing_is_forwarded() {
        let mut plain = Endpoint::new(Arc::new(EndpointConfig::default()), None);
        let w1 = worker(1);
        let mut rng = StdRng::seed_from_u64(11);
        let theirs = w1.cids.generate(&mut rng);
        let ev = plain.handle_datagram(start(), remote(), None, None, &mut short(&theirs, 60));
        assert_eq!(ev, Some(DatagramEvent::Response));
    }
}
