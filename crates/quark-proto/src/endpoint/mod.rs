//! The endpoint: routes datagrams to connections by connection ID, creates
//! server connections from Initial packets, and answers what belongs to no
//! connection (Version Negotiation, Retry, stateless reset).
//!
//! `accept`: datagrams no connection owns (new connections, Retry, Version
//! Negotiation, stateless resets); `routes`: which connection a connection ID
//! or a reset token names.

mod accept;
mod admission;
mod early;
mod icmp;
mod new_token;

pub use early::MAX_EARLY_DATAGRAMS;
pub use icmp::ReportBudget;
pub use new_token::MAX_USED_TOKENS;
mod peek;
mod preferred;
mod routes;

use std::collections::VecDeque;
use std::collections::hash_map::RandomState;
use std::net::{IpAddr, SocketAddr};
use std::ops::Range;
use std::sync::Arc;
use std::time::Instant;

use bytes::{Buf, BytesMut};
use rand::SeedableRng;
use rand::rngs::StdRng;
use slab::Slab;

use crate::cid::{ConnectionId, ResetToken};
use crate::config::{CidGenerator, ClientConfig, EndpointConfig, ServerConfig, TransportConfig};
use crate::connection::{CidEvent, Connection, ConnectionParams, MtuCache, PathRttCache, Transmit};
use crate::crypto::tls::{TlsSession, TlsSetupError};
use crate::crypto::tokens::{ResetKey, TokenKey};
use crate::packet::{HeaderType, PacketDecodeError, PartialDecode};
use crate::transport_params::TransportParameters;
use crate::types::{EcnCodepoint, IdMap, PacketKind, Side};

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
    /// Where a server connection whose handshake is under way comes from.
    half_open: Option<admission::Source>,
    /// The connection's memory as last counted against the server's budget.
    memory: usize,
    /// Syncs since it was counted.
    syncs: u32,
    /// Client: where the connection's NEW_TOKEN tokens are kept.
    token_sink: Option<Box<new_token::TokenSink>>,
}

/// A connection's memory is counted again every this many syncs (its
/// estimate walks its streams).
const MEMORY_RECOUNT: u32 = 16;

/// Receives smaller than this are not shared (zero-copy receive): a slice
/// pins its whole receive buffer (64 KiB in quark's driver), so one datagram
/// of a request would pin 45 times its size. Bulk transfers fill buffers:
/// GRO batches of many segments, or loopback's 64 KB datagrams.
pub const MIN_SHARED_RECEIVE: usize = 16 * 1024;

/// A set of connections sharing a socket.
pub struct Endpoint {
    config: Arc<EndpointConfig>,
    server: Option<Arc<ServerConfig>>,
    cids: CidGenerator,
    /// Boxed: a connection is several kilobytes, which a slab slot would keep
    /// after it closed, and which inserting and removing would copy.
    conns: Slab<Box<Connection>>,
    /// Which connection a connection ID names, keyed by the ID's hash under
    /// `route_key`: the ID itself is kept once, in its connection's `owned`
    /// list, which a lookup checks. 16 bytes a slot instead of 32, and the
    /// slots are ~5 per connection with the table's slack (issue #30).
    routes: IdMap<u64, ConnectionHandle>,
    /// The last route looked up: a connection's packets come in runs, and
    /// SipHash over a peer-chosen ID cost more than the rest of routing a packet.
    last_route: Option<(ConnectionId, ConnectionHandle)>,
    /// The peer's reset tokens, keyed the same way (the connection checks a
    /// token itself, in constant time).
    reset_tokens: IdMap<u64, ConnectionHandle>,
    /// SipHash with a random key: a peer cannot aim IDs or tokens at one slot.
    route_key: RandomState,
    /// The keys of `routes` and `reset_tokens` each connection holds, by slab
    /// index: removing a connection touches only its own entries, not every
    /// connection's.
    owned: Vec<Owned>,
    reset_key: Arc<ResetKey>,
    token_key: Option<TokenKey>,
    rng: StdRng,
    responses: VecDeque<Response>,
    accept_queue: VecDeque<ConnectionHandle>,
    /// Half-open server connections, for admission control.
    admission: admission::Admission,
    /// The first `now` seen: token issue times are measured from it, unless
    /// the wall clock is known (`set_wall_clock`).
    epoch: Option<Instant>,
    wall_clock: Option<(Instant, std::time::Duration)>,
    /// NEW_TOKEN tokens already honoured.
    used_tokens: new_token::UsedTokens,
    /// What connections learnt about each path's MTU, offered to the other
    /// connections on the same path, and the paths' traffic.
    mtus: MtuCache,
    /// Each path's RTT from all its connections' samples, offered to a
    /// connection's due PTO (`TransportConfig::shared_path_rtt`).
    rtts: PathRttCache,
    /// 0-RTT datagrams that came before their connection's Initial.
    early: early::EarlyDatagrams,
    /// Searches for the connection a short-header ICMP report quotes, this
    /// second (`icmp`).
    report_searches: ReportBudget,
}

impl Endpoint {
    /// An endpoint; with `server`, it accepts connections.
    pub fn new(config: Arc<EndpointConfig>, server: Option<Arc<ServerConfig>>) -> Self {
        // QUIC-LB IDs have their configuration's length: parse short headers by it.
        let config = match &config.quic_lb {
            Some(lb) if lb.cid_len() != config.cid_len => Arc::new(EndpointConfig {
                cid_len: lb.cid_len(),
                ..(*config).clone()
            }),
            _ => config,
        };
        let rng = match config.rng_seed {
            Some(seed) => StdRng::seed_from_u64(seed),
            None => StdRng::from_os_rng(),
        };
        let token_key = server.as_ref().map(|s| TokenKey::from_config(s));
        Endpoint {
            reset_key: Arc::new(ResetKey::new(&config.reset_key)),
            cids: CidGenerator::new(&config),
            config,
            server,
            conns: Slab::new(),
            routes: IdMap::default(),
            last_route: None,
            route_key: RandomState::new(),
            owned: Vec::new(),
            mtus: MtuCache::default(),
            rtts: PathRttCache::default(),
            early: early::EarlyDatagrams::default(),
            report_searches: ReportBudget::default(),
            reset_tokens: IdMap::default(),
            token_key,
            rng,
            responses: VecDeque::new(),
            accept_queue: VecDeque::new(),
            admission: admission::Admission::default(),
            epoch: None,
            wall_clock: None,
            used_tokens: new_token::UsedTokens::default(),
        }
    }

    /// Start accepting connections (or change how).
    pub fn set_server_config(&mut self, server: Option<Arc<ServerConfig>>) {
        self.token_key = server.as_ref().map(|s| TokenKey::from_config(s));
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
        //= https://www.rfc-editor.org/rfc/rfc9000#section-8.1.3
        //# When connecting to a server for which the client retains an
        //# applicable and unused token, it SHOULD include that token in the
        //# Token field of its Initial packet.
        let token_sink =
            (config.token_store.as_ref()).map(|s| new_token::TokenSink::new(s, server_name));
        let stored = token_sink.as_ref().and_then(|s| s.take());
        let grease_initials = stored.as_ref().is_some_and(|t| t.allows_grease(now));
        if let Some(t) = &stored {
            tracing::debug!(
                server_name,
                len = t.token.len(),
                grease_initials,
                "Initials carry a NEW_TOKEN token"
            );
        }
        let mut params = local_params(&config.transport);
        params.initial_source_connection_id = Some(local_cid);
        params.grease_quic_bit = self.config.grease_quic_bit;
        // Versions we may be moved to (RFC 9368 §2.3): those we support too.
        let offered: Vec<u32> = config
            .compatible_versions
            .iter()
            .copied()
            .filter(|v| *v != config.version && self.config.supported_versions.contains(v))
            .collect();
        params.version_information =
            Some(Connection::version_information(config.version, &offered));
        let tls = if offered.is_empty() {
            TlsSession::client_for(config.version, config.tls.clone(), server_name, &params)?
        } else {
            TlsSession::client_upgradable(config.version, config.tls.clone(), server_name, &params)?
        };
        let mut conn = Connection::new(
            ConnectionParams {
                side: Side::Client,
                version: config.version,
                original_version: config.version,
                compatible_versions: offered.clone(),
                tls,
                config: config.transport.clone(),
                remote,
                local_ip: None,
                local_cid,
                peer_cid: dcid,
                initial_dcid: dcid,
                local_params: params,
                shared: self.connection_shared(),
                token: stored.map(|t| t.token).unwrap_or_default(),
                validated: true,
                retry_src_cid: None,
                zero_rtt: false,
                preferred_cid: None,
            },
            now,
        );
        if grease_initials {
            conn.grease_from_token();
        }
        let h = self.insert(conn, local_cid);
        self.owned[h.0].token_sink = token_sink;
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
        let grease = self.config.grease_quic_bit;
        let pd = match PartialDecode::with_quic_bit(data, self.config.cid_len, grease) {
            Ok(pd) => pd,
            Err(PacketDecodeError::UnsupportedVersion {
                dst_cid, src_cid, ..
            }) => {
                let (dst, src) = (&data[dst_cid], &data[src_cid]);
                return self.version_negotiation(remote, local_ip, data.len(), dst, src);
            }
            Err(PacketDecodeError::Invalid(_)) => return None,
        };
        if let Some(h) = self.lookup(&pd.dst_cid) {
            self.conns[h.0].note_local_ip(local_ip);
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
                // A version quark can parse but this endpoint was told not to
                // speak: as for any unknown version (RFC 9000 §6.1).
                if !self.config.supported_versions.contains(&pd.version) {
                    let (dst, src) = (pd.dst_cid, pd.src_cid);
                    return self.version_negotiation(remote, local_ip, data.len(), &dst, &src);
                }
                self.accept_initial(now, remote, local_ip, ecn, data, &pd)
            }
            HeaderType::Frames(PacketKind::ZeroRtt)
                if self.server.as_ref().is_some_and(|s| s.zero_rtt) =>
            {
                self.early.keep(pd.dst_cid, remote, ecn, data);
                None
            }
            HeaderType::Frames(PacketKind::Handshake) => self.foreign(&pd),
            _ => None,
        }
    }

    /// Process the datagrams of one receive (the segments of a GRO buffer:
    /// `data` cut every `stride` bytes). Consecutive segments for the same
    /// connection are handed over together, so it can decrypt them all before
    /// processing any ([`Connection::handle_run`]). Reports what each did, with
    /// the datagram concerned for those handled alone (to forward it elsewhere on
    /// [`DatagramEvent::Forward`]); an empty slice for a batch.
    ///
    /// `data` is taken: it is left empty, its storage shared with what
    /// connections kept. With `share`, and a receive of at least
    /// [`MIN_SHARED_RECEIVE`] bytes, a connection may keep in-order STREAM
    /// data where it lies, as slices of `data`'s storage, until it is read
    /// ([`Connection::handle_shared`]: zero-copy receive); otherwise every
    /// byte kept is copied and `data`'s storage is free again on return.
    #[allow(clippy::too_many_arguments)]
    pub fn handle_batch(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        local_ip: Option<IpAddr>,
        ecn: Option<EcnCodepoint>,
        data: &mut BytesMut,
        stride: usize,
        share: bool,
        mut on_event: impl FnMut(DatagramEvent, &[u8]),
    ) {
        self.epoch.get_or_insert(now);
        let stride = stride.max(1);
        let share = share && data.len() >= MIN_SHARED_RECEIVE;
        let from = (remote, local_ip, ecn);
        let len = data.len();
        // Offsets into the receive; `taken` bytes of it were split off the
        // front of `data` (shared runs), the rest is still in place.
        let (mut at, mut taken) = (0, 0);
        let mut run = 0..0;
        let mut run_conn = None;
        while at < len {
            let seg = stride.min(len - at);
            let grease = self.config.grease_quic_bit;
            let segment = &data[at - taken..at - taken + seg];
            let route = match PartialDecode::with_quic_bit(segment, self.config.cid_len, grease) {
                Ok(pd) => self.lookup(&pd.dst_cid),
                Err(_) => None,
            };
            if route.is_none() || route != run_conn {
                if let Some(h) = run_conn.take() {
                    taken = self.flush_run(now, from, h, (data, taken), run, (stride, share));
                    on_event(DatagramEvent::Connection(h), &[]);
                }
                run = at..at;
            }
            match route {
                Some(h) => {
                    run_conn = Some(h);
                    run.end = at + seg;
                }
                None => {
                    let segment = &mut data[at - taken..at - taken + seg];
                    if let Some(event) = self.handle_datagram(now, remote, local_ip, ecn, segment) {
                        on_event(event, segment);
                    }
                }
            }
            at += seg;
        }
        if let Some(h) = run_conn {
            self.flush_run(now, from, h, (data, taken), run, (stride, share));
            on_event(DatagramEvent::Connection(h), &[]);
        }
        data.clear();
    }

    /// Hands connection `h` its `run` of the receive (offsets; `taken` bytes
    /// of it are gone from the front of `data`): shared, split off `data`;
    /// else in place. Returns the new `taken`.
    fn flush_run(
        &mut self,
        now: Instant,
        (remote, local_ip, ecn): (SocketAddr, Option<IpAddr>, Option<EcnCodepoint>),
        h: ConnectionHandle,
        (data, taken): (&mut BytesMut, usize),
        run: Range<usize>,
        (stride, share): (usize, bool),
    ) -> usize {
        let conn = &mut self.conns[h.0];
        conn.note_local_ip(local_ip);
        let taken = if share {
            data.advance(run.start - taken);
            conn.handle_shared(now, remote, ecn, data.split_to(run.len()), stride);
            run.end
        } else {
            conn.handle_run(
                now,
                remote,
                ecn,
                &mut data[run.start - taken..run.end - taken],
                stride,
            );
            taken
        };
        self.sync(h);
        taken
    }

    /// `Forward` if the destination ID names another worker.
    fn foreign(&self, pd: &PartialDecode) -> Option<DatagramEvent> {
        let w = self.cids.worker_of(&pd.dst_cid)?;
        (Some(w) != self.cids.worker().map(|me| me.index())).then_some(DatagramEvent::Forward(w))
    }

    /// 0-RTT datagrams kept for connections whose Initial has not come
    /// (at most [`MAX_EARLY_DATAGRAMS`]).
    pub fn early_datagrams(&self) -> usize {
        self.early.len()
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
                CidEvent::NewTokenWanted(at) => self.give_new_token(h, at),
                CidEvent::NewToken(token) => self.keep_token(h, *token),
            }
        }
        if let Some(conn) = self.conns.get_mut(h.0) {
            self.mtus.sync(conn);
            self.rtts.sync(conn);
            let owned = &mut self.owned[h.0];
            if (conn.is_handshake_complete() || conn.is_closed())
                && let Some(source) = owned.half_open.take()
            {
                self.admission.release(source);
            }
            if let Some(server) = &self.server {
                owned.syncs += 1;
                if owned.syncs >= MEMORY_RECOUNT || owned.memory == 0 {
                    owned.syncs = 0;
                    let now = conn.memory();
                    server.memory.update(owned.memory, now);
                    owned.memory = now;
                }
            }
        }
    }

    /// This endpoint's per-path RTT cache (`TransportConfig::shared_path_rtt`).
    pub fn path_rtts(&self) -> PathRttCache {
        self.rtts.clone()
    }

    /// Use `cache` (another endpoint's [`Endpoint::path_rtts`]) for this
    /// endpoint's per-path RTT: endpoints of one process on the same paths
    /// then learn them together.
    pub fn share_path_rtts(&mut self, cache: PathRttCache) {
        self.rtts = cache;
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
            self.rtts.offer(conn, now);
            conn.handle_timeout(now);
            self.sync(h);
        }
    }

    /// Forget a connection (after it drained and the application let go of it).
    pub fn remove(&mut self, h: ConnectionHandle) -> Option<Box<Connection>> {
        let conn = self.conns.try_remove(h.0)?;
        let owned = std::mem::take(&mut self.owned[h.0]);
        if let Some(source) = owned.half_open {
            self.admission.release(source);
        }
        if let Some(server) = &self.server {
            server.memory.update(owned.memory, 0);
        }
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

    /// Testing only: route datagrams addressed to `cid` to `h`, as if `h` had
    /// issued it (an attack client announces IDs its connection never made).
    #[cfg(feature = "testing")]
    pub fn route_for_testing(&mut self, cid: ConnectionId, h: ConnectionHandle) {
        self.route(cid, h);
    }

    /// Server connections whose handshake is under way, and the sources
    /// (addresses, IPv6 /64s) they come from.
    pub fn half_open(&self) -> (usize, usize) {
        self.admission.counts()
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
        disable_active_migration: !config.active_migration,
        active_connection_id_limit: config.active_connection_id_limit,
        //= https://datatracker.ietf.org/doc/html/draft-ietf-quic-ack-frequency
        //# min_ack_delay: the minimum amount of time, in microseconds, that the
        //# endpoint sending this value is willing to delay an acknowledgment.
        min_ack_delay: config.ack_frequency.then_some(1000),
        //= https://www.rfc-editor.org/rfc/rfc9221#section-3
        //# max_datagram_frame_size (0x20):  A variable-length integer that
        //# represents the maximum size of a DATAGRAM frame (including the
        //# frame type, length, and payload) the endpoint is willing to receive
        max_datagram_frame_size: config.max_datagram_frame_size.map(u64::from),
        ..TransportParameters::default()
    }
}

#[cfg(test)]
mod tests;
