//! The connection state machine.
//!
//! Inputs are `handle_*` calls (a datagram, a timeout, an application action);
//! outputs are polled: [`Connection::poll_transmit`] for datagrams,
//! [`Connection::poll_timeout`] for the next deadline, [`Connection::poll_event`]
//! for what the application should know. Time is always a parameter.
//!
//! Where things are:
//! - `recv.rs`: a datagram in → packets decrypted → frames dispatched
//! - `send.rs`: packets assembled, coalesced and batched for GSO
//! - `handshake.rs`: CRYPTO frames ↔ TLS, key installation and discard, parameters
//! - `zero_rtt.rs`: 0-RTT keys, remembered limits, early packets buffered
//! - `close.rs`: CONNECTION_CLOSE, closing and draining, idle timeout
//! - `timers.rs`: the timer table
//! - `streams/`: streams and their frames; `cids.rs`: connection IDs;
//!   `spaces.rs`: per-space state; `sent.rs`: what each sent packet carried;
//!   `datagrams.rs`: unreliable datagrams (RFC 9221)

mod ack_frequency;
mod cids;
mod close;
mod datagrams;
mod frames;
mod handshake;
mod lazy_rng;
mod memory;
mod migration;
mod mtu;
mod mtu_cache;
mod path_map;
mod path_rtt;
mod qlog;
mod recv;
mod scratch;
mod send;
mod sent;
mod seq_map;
mod skip;
mod spaces;
mod stats;
mod streams;
mod timers;
mod versions;
mod write;
mod zero_rtt;

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;

pub use cids::CidEvent;
pub use close::ConnectionError;
pub use datagrams::{DATAGRAM_OVERHEAD, SendDatagramError};
pub use memory::MemoryBreakdown;
pub use migration::MigrateError;
pub use scratch::scratch_pool_bytes;
pub use streams::{
    Priority, StreamError, StreamEvent, Streams, release_stream_pool, stream_pool_bytes,
};
pub use zero_rtt::ZeroRtt;

use crate::cid::ConnectionId;
use crate::config::TransportConfig;
use crate::crypto::one_rtt::OneRttKeys;
use crate::crypto::tls::TlsSession;
use crate::crypto::tokens::ResetKey;
use crate::recovery::{PathState, Recovery, RecoveryConfig};
use crate::stream::{Append, ReadOutcome, Visit};
use crate::transport_params::TransportParameters;
use crate::types::{Dir, EcnCodepoint, Side, SpaceId, StreamId};

use ack_frequency::AckFrequencyState;
use cids::{LocalCids, PeerCids};
use close::State;
use mtu::MtuDiscovery;
pub(crate) use mtu::PathMtu;
pub(crate) use mtu_cache::MtuCache;
pub use path_rtt::PathRttCache;
use sent::SentFrames;
#[cfg(test)]
use spaces::PacketSpace;
use spaces::{AckPolicy, Spaces};
use streams::StreamLimits;
use timers::Timers;

/// A batch of datagrams written into the caller's buffer by
/// [`Connection::poll_transmit`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Transmit {
    /// Where to send it.
    pub destination: SocketAddr,
    /// Bytes written into the buffer.
    pub size: usize,
    /// With several datagrams: each is this long except the last, which may be
    /// shorter (the UDP GSO layout). `None` for a single datagram.
    pub segment_size: Option<usize>,
    /// ECN codepoint to mark the datagrams with.
    pub ecn: Option<EcnCodepoint>,
    /// Local address to send from (multi-homed servers).
    pub src_ip: Option<IpAddr>,
}

/// Something the application should know.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// The handshake completed: streams can be used.
    Connected,
    /// A stream event.
    Stream(StreamEvent),
    /// The connection ended; no more events follow except `Drained`.
    ConnectionLost(ConnectionError),
    /// All state is gone; the endpoint may forget the connection.
    Drained,
    /// A datagram arrived while none was waiting: read them with
    /// [`Connection::read_datagram`] until it returns `None`.
    DatagramReceived,
    /// A [`Connection::try_send_datagram`] was refused and the send queue has
    /// room again.
    DatagramsWritable,
}

/// Counters about a connection.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ConnectionStats {
    /// UDP datagrams received.
    pub datagrams_in: u64,
    /// UDP datagrams sent.
    pub datagrams_out: u64,
    /// Packets decrypted and processed.
    pub packets_in: u64,
    /// Packets sent.
    pub packets_out: u64,
    /// Packets dropped (undecryptable, duplicate, no keys).
    pub packets_dropped: u64,
    /// UDP payload bytes received.
    pub bytes_in: u64,
    /// UDP payload bytes sent.
    pub bytes_out: u64,
    /// ACK frames received.
    pub acks_in: u64,
    /// ACK frames sent.
    pub acks_out: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// PTOs.
    pub ptos: u64,
    /// Probe packets sent when a PTO fired (RFC 9002 §6.2.4).
    pub probes_out: u64,
    /// Times a due PTO was put off by what the path's other connections
    /// measured (`TransportConfig::shared_path_rtt`).
    pub ptos_put_off: u64,
    /// Key updates.
    pub key_updates: u64,
    /// Packets declared lost and acknowledged afterwards (reordering).
    pub spurious_losses: u64,
    /// PMTU probes sent.
    pub mtu_probes: u64,
    /// Packets sent in ECN-marked datagrams (ECT(0)).
    pub ecn_marked_out: u64,
    /// Packets received in datagrams marked ECT(0).
    pub ecn_ect0_in: u64,
    /// Packets received in datagrams marked ECT(1).
    pub ecn_ect1_in: u64,
    /// Packets received in datagrams marked CE (congestion experienced).
    pub ecn_ce_in: u64,
    /// DATAGRAM frames sent (RFC 9221).
    pub datagram_frames_out: u64,
    /// DATAGRAM frames received.
    pub datagram_frames_in: u64,
    /// DATAGRAM frames in packets declared lost (never sent again).
    pub datagram_frames_lost: u64,
    /// Datagrams dropped before sending: the oldest of a full send queue, or
    /// too large for a path MTU that shrank.
    pub datagram_frames_dropped_out: u64,
    /// Datagrams received and dropped unread: the oldest of a full receive queue.
    pub datagram_frames_dropped_in: u64,
    /// PATH_CHALLENGE frames sent.
    pub path_challenges: u64,
    /// Changes of the path in use (the peer's address, or ours on purpose).
    pub migrations: u64,
    /// Congestion control and RTT reset for a new path (RFC 9000 §9.4).
    pub congestion_resets: u64,
    /// Path validations given up (RFC 9000 §8.2.4).
    pub validation_failures: u64,
}

/// A network path: the peer's address and what we know about it.
pub(crate) struct Path {
    pub(crate) remote: SocketAddr,
    pub(crate) local_ip: Option<IpAddr>,
    /// The peer proved it owns the address (server side; always true for clients).
    pub(crate) validated: bool,
    /// Bytes received from / sent to the path, for the 3× amplification limit.
    pub(crate) bytes_received: u64,
    pub(crate) bytes_sent: u64,
    /// Datagram size we use.
    pub(crate) mtu: u16,
}

impl Path {
    /// Bytes the server may still send before the address is validated
    /// (RFC 9000 §8.1: three times what it received).
    pub(crate) fn amplification_budget(&self) -> u64 {
        if self.validated {
            u64::MAX
        } else {
            (3 * self.bytes_received).saturating_sub(self.bytes_sent)
        }
    }
}

/// The endpoint's part of a new connection: secrets, ID generation, a seed.
pub(crate) struct EndpointShared {
    pub(crate) reset_key: Arc<ResetKey>,
    pub(crate) rng_seed: u64,
    pub(crate) cid_len: usize,
    pub(crate) cid_gen: crate::config::CidGenerator,
    /// Record qlog events.
    pub(crate) qlog: bool,
}

/// Parameters for creating a connection (filled in by the endpoint).
pub(crate) struct ConnectionParams {
    pub(crate) side: Side,
    pub(crate) version: u32,
    /// The version of the client's first Initial (`version` differs after a
    /// compatible upgrade, RFC 9368).
    pub(crate) original_version: u32,
    /// Client: versions it offered as compatible (it may be moved to one).
    pub(crate) compatible_versions: Vec<u32>,
    pub(crate) tls: TlsSession,
    pub(crate) config: Arc<TransportConfig>,
    pub(crate) remote: SocketAddr,
    pub(crate) local_ip: Option<IpAddr>,
    /// The ID we chose for ourselves (sequence 0).
    pub(crate) local_cid: ConnectionId,
    /// The peer's ID (client: random, replaced by the server's; server: the client's SCID).
    pub(crate) peer_cid: ConnectionId,
    /// DCID of the client's first Initial: derives the Initial keys.
    pub(crate) initial_dcid: ConnectionId,
    pub(crate) local_params: TransportParameters,
    /// What every connection of the endpoint shares.
    pub(crate) shared: EndpointShared,
    /// Makes the IDs we issue (they may name a worker).
    /// Client: the token to put in Initials. Server: none.
    pub(crate) token: Vec<u8>,
    /// Server: the client's address was validated (by a Retry token).
    pub(crate) validated: bool,
    /// Server: SCID of the Retry we sent, to check the client's parameters.
    pub(crate) retry_src_cid: Option<ConnectionId>,
    /// Server: accept 0-RTT (`ServerConfig::zero_rtt`); early data is
    /// refused in TLS otherwise.
    pub(crate) zero_rtt: bool,
    /// Server: the address (IP), ID (sequence 1) and reset token of our
    /// preferred_address.
    pub(crate) preferred_cid: Option<(IpAddr, ConnectionId, crate::cid::ResetToken)>,
}

/// The parts of our transport parameters a connection consults later.
struct LocalParams {
    /// We accept ACK_FREQUENCY (RFC 9330 min_ack_delay).
    min_ack_delay: Option<u64>,
    /// We accept DATAGRAM frames up to this size (RFC 9221).
    max_datagram_frame_size: Option<u64>,
    ack_delay_exponent: u8,
}

/// A QUIC connection.
pub struct Connection {
    side: Side,
    version: u32,
    /// Versions seen in the handshake (RFC 9368): see [`versions`].
    versions: versions::Negotiation,
    state: State,
    config: Arc<TransportConfig>,
    tls: TlsSession,
    spaces: Spaces,
    one_rtt: Option<OneRttKeys>,
    recovery: Recovery<SentFrames>,
    path: Path,
    /// Path MTU discovery; `path.mtu` follows its `current()`.
    mtu: MtuDiscovery,
    /// The path left behind, path validation, answers to other paths.
    migration: migration::Migration,
    local_cids: LocalCids,
    peer_cids: PeerCids,
    cid_events: VecDeque<CidEvent>,
    reset_key: Arc<ResetKey>,
    cid_len: usize,
    cid_gen: crate::config::CidGenerator,
    rng: lazy_rng::LazyRng,
    streams: Streams,
    /// Unreliable datagrams queued (RFC 9221).
    datagrams: datagrams::Datagrams,
    /// What the connection reads of our transport parameters after sending
    /// them (the whole set, 336 bytes, went to TLS and qlog at the start).
    local_params: LocalParams,
    peer_params: Option<TransportParameters>,
    /// DCID of the client's first Initial (and after a Retry, the original one).
    orig_dst_cid: ConnectionId,
    /// Client: the token for Initials (from a Retry).
    token: Vec<u8>,
    /// Server: the SCID of our Retry, if we sent one.
    retry_src_cid: Option<ConnectionId>,
    /// Client: a Retry or first server Initial was processed.
    received_retry: bool,
    got_server_initial: bool,
    /// Any packet from the peer was processed.
    received_any: bool,
    handshake_complete: bool,
    handshake_confirmed: bool,
    /// Server: HANDSHAKE_DONE still has to be (re)sent.
    handshake_done_pending: bool,
    /// PATH_RESPONSE payloads owed.
    path_responses: VecDeque<[u8; 8]>,
    /// A PING was requested (keep-alive or application).
    ping_pending: bool,
    /// ECN codepoint for the datagrams being built (from ECN validation).
    tx_ecn: Option<EcnCodepoint>,
    /// An ack-eliciting packet was sent since the last packet was received.
    sent_eliciting_since_recv: bool,
    ack_policy: AckPolicy,
    /// Highest ACK_FREQUENCY sequence number applied.
    ack_frequency_seq: Option<u64>,
    /// What we ask the peer for (ACK_FREQUENCY we send).
    ack_freq: AckFrequencyState,
    timers: Timers,
    events: VecDeque<Event>,
    /// Per-packet counters; the rest are boxed on first use (`stats.rs`).
    stats: stats::HotStats,
    rare_stats: Option<Box<stats::RareStats>>,
    /// The last activity that restarts the idle timer (RFC 9000 §10.1).
    idle_since: Option<Instant>,
    /// When the connection was made: the handshake must end by
    /// `TransportConfig::handshake_timeout` after it.
    started: Instant,
    /// 1-RTT packet numbers skipped to catch optimistic ACKs.
    skipped: skip::Skipped,
    /// When an ACK last gave an Application Data RTT sample not yet reported
    /// to the endpoint's path cache (`path_rtt`).
    rtt_news: Option<Instant>,
    /// Frames to send verbatim (testing a misbehaving peer).
    #[cfg(feature = "testing")]
    raw_frames: Vec<u8>,
    /// How this connection misbehaves (testing a misbehaving peer).
    #[cfg(feature = "testing")]
    misbehave: Misbehave,
    /// 1-RTT packets that failed authentication (RFC 9001 §6.6 integrity limit).
    decrypt_failures: u64,
    /// 1-RTT packets built but not yet encrypted: sealed together just before
    /// `poll_transmit` hands the batch out (the VPP trick). Taken from the
    /// thread's pool for a batch and given back when sealed (`scratch.rs`).
    seal_jobs: Vec<crate::packet::SealJob>,
    /// Reused buffer for handshake bytes.
    crypto_scratch: Vec<u8>,
    /// qlog events waiting for the runtime; `None` when qlog is off.
    qlog: Option<Box<crate::qlog::QlogSink>>,
    /// How 0-RTT went.
    zero_rtt: ZeroRtt,
    /// Server: 0-RTT allowed by its configuration.
    accept_0rtt: bool,
    /// 0-RTT keys, remembered limits, buffered packets (only while 0-RTT runs).
    early: Option<Box<zero_rtt::Early>>,
}

impl Connection {
    pub(crate) fn new(p: ConnectionParams, now: Instant) -> Self {
        let config = p.config.clone();
        let recovery_config = recovery_config(&config);
        let limits = StreamLimits {
            stream_window: config.stream_receive_window,
            stream_window_max: config.stream_receive_window_max,
            connection_window: config.receive_window,
            connection_window_max: config.receive_window_max,
            send_buffer: config.send_buffer,
            send_buffer_max: config.send_buffer_max,
            send_budget: config.send_budget,
            send_budget_max: config.send_budget_max,
            send_timeout: config.send_timeout.filter(|t| !t.is_zero()),
            max_concurrent: [
                config.max_concurrent_bidi_streams,
                config.max_concurrent_uni_streams,
            ],
        };
        let mut spaces = Spaces::new();
        spaces[SpaceId::Initial.index()].keys = Some(crate::crypto::initial_keys_for(
            p.version,
            &p.initial_dcid,
            p.side,
        ));
        let mut versions = versions::Negotiation::new(p.original_version, p.compatible_versions);
        if p.version != p.original_version {
            versions.set_original_initial(crate::crypto::initial_keys_for(
                p.original_version,
                &p.initial_dcid,
                p.side,
            ));
        }
        let mut rng = lazy_rng::LazyRng::new(p.shared.rng_seed);
        let skipped = skip::Skipped::new(&mut rng);
        let mut tls = p.tls;
        if p.side.is_server() && !p.zero_rtt {
            // Refused in the EncryptedExtensions (the ClientHello is not read yet).
            tls.reject_early_data();
        }
        let mut conn = Connection {
            side: p.side,
            version: p.version,
            versions,
            state: State::Handshake,
            tls,
            spaces,
            one_rtt: None,
            recovery: Recovery::new(&recovery_config),
            path: Path {
                remote: p.remote,
                local_ip: p.local_ip,
                validated: p.side.is_client() || p.validated,
                bytes_received: 0,
                bytes_sent: 0,
                mtu: config.initial_mtu,
            },
            mtu: MtuDiscovery::new(
                config.initial_mtu,
                config.max_udp_payload_size,
                config.mtu_discovery,
            ),
            migration: migration::Migration::default(),
            local_cids: LocalCids::new(p.local_cid),
            peer_cids: PeerCids::new(p.peer_cid, config.active_connection_id_limit),
            cid_events: VecDeque::new(),
            reset_key: p.shared.reset_key,
            cid_len: p.shared.cid_len,
            cid_gen: p.shared.cid_gen,
            rng,
            streams: Streams::new(p.side, limits),
            datagrams: datagrams::Datagrams::default(),
            local_params: LocalParams {
                min_ack_delay: p.local_params.min_ack_delay,
                max_datagram_frame_size: p.local_params.max_datagram_frame_size,
                ack_delay_exponent: p.local_params.ack_delay_exponent,
            },
            peer_params: None,
            orig_dst_cid: p.initial_dcid,
            token: p.token,
            retry_src_cid: p.retry_src_cid,
            received_retry: false,
            got_server_initial: false,
            received_any: false,
            handshake_complete: false,
            handshake_confirmed: false,
            handshake_done_pending: false,
            path_responses: VecDeque::new(),
            ping_pending: false,
            tx_ecn: None,
            sent_eliciting_since_recv: false,
            ack_policy: AckPolicy {
                threshold: config.ack_eliciting_threshold,
                max_delay: config.max_ack_delay,
                reordering_threshold: 1,
            },
            ack_frequency_seq: None,
            ack_freq: AckFrequencyState::default(),
            timers: Timers::default(),
            events: VecDeque::new(),
            stats: stats::HotStats::default(),
            rare_stats: None,
            idle_since: None,
            started: now,
            skipped,
            rtt_news: None,
            crypto_scratch: Vec::new(),
            decrypt_failures: 0,
            seal_jobs: Vec::new(),
            qlog: p
                .shared
                .qlog
                .then(|| Box::new(crate::qlog::QlogSink::new(p.side, p.initial_dcid, now))),
            zero_rtt: ZeroRtt::None,
            accept_0rtt: p.side.is_server() && p.zero_rtt,
            early: None,
            #[cfg(feature = "testing")]
            raw_frames: Vec::new(),
            #[cfg(feature = "testing")]
            misbehave: Misbehave::default(),
            config,
        };
        conn.reset_idle_timer(now);
        conn.qlog_start(now, &p.local_params);
        if let Some((ip, cid, _token)) = p.preferred_cid {
            conn.migration.preferred_local = Some((ip, cid));
            conn.local_cids.add_preferred(cid);
            conn.cid_events.push_back(CidEvent::Issued(cid));
        }
        if conn.side.is_client() {
            // The ClientHello goes out in the first Initial.
            if let Err(e) = conn.drive_tls(now) {
                conn.close_on_error(now, e);
            }
            conn.start_0rtt();
        }
        conn
    }

    // ----- application interface -------------------------------------------------

    /// Which side we are.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The peer's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.path.remote
    }

    /// True once the handshake completed (streams usable).
    pub fn is_handshake_complete(&self) -> bool {
        self.handshake_complete
    }

    /// True once the connection is closing, draining or gone.
    pub fn is_closed(&self) -> bool {
        !matches!(self.state, State::Handshake | State::Established)
    }

    /// True once nothing more will ever happen on this connection.
    pub fn is_drained(&self) -> bool {
        matches!(self.state, State::Drained { .. })
    }

    /// Why the connection ended, once it did.
    pub fn error(&self) -> Option<&ConnectionError> {
        self.state.error()
    }

    /// The negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.tls.alpn()
    }

    /// The server name the client asked for (server side).
    pub fn server_name(&self) -> Option<&str> {
        self.tls.server_name()
    }

    /// The QUIC version in use: the client's first, or the one the server
    /// moved the connection to (RFC 9368).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The negotiated TLS cipher suite.
    pub fn cipher_suite(&self) -> Option<rustls::SupportedCipherSuite> {
        self.tls.cipher_suite()
    }

    /// Whether the handshake resumed a TLS session (a session ticket).
    pub fn is_resumed(&self) -> bool {
        self.tls.is_resumed()
    }

    /// The peer's transport parameters, once known.
    pub fn peer_params(&self) -> Option<&TransportParameters> {
        self.peer_params.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.joined_stats();
        let r = self.recovery.stats();
        s.packets_lost = r.lost_packets;
        s.ptos = r.ptos;
        s.key_updates = self.one_rtt.as_ref().map_or(0, |k| k.updates());
        s.spurious_losses = r.spurious_losses;
        s
    }

    /// Where ECN validation of the path stands (RFC 9000 §13.4.2).
    pub fn ecn_state(&self) -> crate::recovery::EcnState {
        self.recovery.ecn_state()
    }

    /// Smoothed RTT estimate.
    pub fn rtt(&self) -> Duration {
        self.recovery.rtt().smoothed()
    }

    /// An estimate of the heap this connection holds, in bytes: its own
    /// state, TLS while it lives, CRYPTO buffers, stream data and the records
    /// of packets in flight. O(streams): for memory budgets, which ask now
    /// and then, not per packet.
    pub fn memory(&self) -> usize {
        self.budget_memory()
    }

    /// Whether any packet from the peer was authenticated and processed.
    pub fn has_received_packet(&self) -> bool {
        self.received_any
    }

    /// Testing only: put `frames` verbatim into the next 1-RTT packet, to play a
    /// misbehaving peer.
    #[cfg(feature = "testing")]
    pub fn inject_raw_frames(&mut self, frames: &[u8]) {
        self.raw_frames.extend_from_slice(frames);
    }

    /// Testing only: the largest 1-RTT packet number received (what a lying
    /// peer bases its optimistic ACKs on).
    #[cfg(feature = "testing")]
    pub fn largest_received_1rtt(&self) -> Option<u64> {
        self.spaces[SpaceId::Data.index()].ack.largest_pn()
    }

    /// Testing only: whether the Initial and Handshake spaces are still held
    /// (an established connection drops them; per-packet paths then look at
    /// the Application space alone).
    #[cfg(feature = "testing")]
    pub fn holds_early_spaces(&self) -> bool {
        !self.spaces.early_dropped()
    }

    /// Testing only: misbehave from now on, as `m` says.
    #[cfg(feature = "testing")]
    pub fn misbehave(&mut self, m: Misbehave) {
        self.misbehave = m;
    }

    /// The path (local and remote address) this connection's MTU is learnt on.
    pub(crate) fn mtu_path(&self) -> (Option<IpAddr>, IpAddr) {
        (self.path.local_ip, self.path.remote.ip())
    }

    /// Whether the endpoint should offer what other connections learnt about
    /// the path: the handshake is confirmed and this connection has not
    /// searched itself.
    pub(crate) fn wants_mtu_offer(&self) -> bool {
        self.handshake_confirmed && self.mtu.open_to_offers()
    }

    /// What other connections on the path learnt about its MTU. A validated
    /// size is taken at once: adopting it costs nothing, unlike probing, so
    /// even a short exchange profits (144 new connections once spent their
    /// first 64 KB each in 1200-byte datagrams). Another connection's probe
    /// in flight only matters from half the probing threshold on, so that
    /// offer arrives before this connection's first probe would go.
    pub(crate) fn offer_mtu(&mut self, hint: PathMtu) {
        if matches!(hint, PathMtu::Known(_)) || self.stats.bytes_out >= mtu::MTU_PROBE_AFTER / 2 {
            self.mtu.offer(hint);
        }
    }

    /// The RTT sample (latest_rtt, when) taken since the last call, for the
    /// endpoint's per-path estimate (`TransportConfig::shared_path_rtt`).
    pub(crate) fn take_rtt_news(&mut self) -> Option<(Duration, Instant)> {
        let at = self.rtt_news.take()?;
        Some((self.recovery.rtt().latest(), at))
    }

    /// Whether a due loss-detection timer should first hear what the path's
    /// other connections measured: then the peer's max_ack_delay.
    pub(crate) fn wants_path_rtt(&self, now: Instant) -> Option<Duration> {
        let due = self
            .recovery
            .loss_detection_timer()
            .is_some_and(|t| t <= now);
        (self.config.shared_path_rtt && self.handshake_confirmed && due)
            .then(|| self.peer_max_ack_delay())
    }

    /// The path's shared PTO base (zero: none fresh); see
    /// `Recovery::offer_path_pto`.
    pub(crate) fn offer_path_pto(&mut self, base: Duration, now: Instant) {
        let path = self.path_state();
        if self.recovery.offer_path_pto(base, now, &path) {
            self.rare_stats().ptos_put_off += 1;
        }
    }

    /// What this connection learnt about its path MTU since the last call.
    pub(crate) fn take_mtu_news(&mut self) -> Option<PathMtu> {
        self.mtu.take_news()
    }

    /// Make the path and congestion control follow the MTU search.
    pub(crate) fn apply_mtu(&mut self) {
        self.path.mtu = self.mtu.current();
        self.recovery
            .set_max_datagram_size(u64::from(self.path.mtu));
    }

    /// Size of the datagrams this connection sends.
    pub fn max_datagram_size(&self) -> usize {
        usize::from(self.path.mtu)
    }

    /// Whether this connection took a path MTU from the endpoint's cache
    /// (what another connection on the path validated) instead of searching.
    pub fn mtu_from_cache(&self) -> bool {
        self.mtu.adopted_once()
    }

    /// Bytes sent and not yet acknowledged or declared lost.
    pub fn bytes_in_flight(&self) -> u64 {
        self.recovery.bytes_in_flight()
    }

    /// Congestion window in bytes.
    pub fn congestion_window(&self) -> u64 {
        self.recovery.congestion_window()
    }

    /// Next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        self.streams.poll_event().map(Event::Stream)
    }

    /// Next change to mirror in the endpoint's routing table.
    pub fn poll_cid_event(&mut self) -> Option<CidEvent> {
        let event = self.cid_events.pop_front();
        if event.is_none() && self.cid_events.capacity() != 0 {
            // Drained: IDs change rarely after the handshake, so the queue
            // is not kept grown on every serving connection (issue #33).
            self.cid_events = VecDeque::new();
        }
        event
    }

    /// Every connection ID currently routed to this connection.
    pub fn local_cids(&self) -> Vec<ConnectionId> {
        self.local_cids.all().collect()
    }

    /// The DCID of the client's first Initial (servers route retransmitted Initials by it).
    pub fn original_dst_cid(&self) -> ConnectionId {
        self.orig_dst_cid
    }

    /// Open a stream; `None` when the peer's stream limit is reached (wait for
    /// `StreamEvent::Available`) or the handshake is not complete (unless
    /// 0-RTT is available: see [`is_0rtt_available`](Self::is_0rtt_available)).
    pub fn open_stream(&mut self, dir: Dir) -> Option<StreamId> {
        if !(self.handshake_complete || self.sending_0rtt()) || self.is_closed() {
            return None;
        }
        self.streams.open(dir)
    }

    /// Take a stream the peer opened.
    pub fn accept_stream(&mut self, dir: Dir) -> Option<StreamId> {
        self.streams.accept(dir)
    }

    /// Write to a stream; returns bytes accepted (0: blocked, wait for Writable).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.write(id, data)
    }

    /// Write `parts` to a stream as if joined (a message's head and body, in
    /// one pass through flow control): how many bytes of them were taken,
    /// as [`write`](Self::write).
    pub fn write_parts(&mut self, id: StreamId, parts: &[&[u8]]) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.write_parts(id, parts)
    }

    /// Write the application's own bytes to a stream: the prefix taken is held
    /// by reference until acknowledged, not copied (chunks under 4 KiB are).
    /// Returns how much was taken, as [`write`](Self::write).
    pub fn write_shared(&mut self, id: StreamId, data: &Bytes) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.write_shared(id, data)
    }

    /// How many bytes, at most `max`, a write to the stream would take now.
    /// They are set aside for its next writes (other streams cannot take
    /// them) until written, or until the stream is finished or reset; a later
    /// call replaces the reservation. 0: blocked, wait for Writable. For an
    /// application that reads from a source only what the stream can take.
    pub fn reserve(&mut self, id: StreamId, max: usize) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.reserve(id, max)
    }

    /// Bytes held in all send buffers (written, not yet acknowledged) and
    /// reserved for writes: at most [`send_budget`](Self::send_budget) when
    /// the budget has not shrunk since they were written (one and a half
    /// times it with streams of different urgencies).
    #[doc(hidden)]
    pub fn send_buffered(&self) -> usize {
        self.streams.send_buffered()
    }

    /// Whether the peer has acknowledged everything written on every stream,
    /// each stream's end (FIN) or reset included: what a graceful close
    /// waits for.
    pub fn all_acked(&self) -> bool {
        self.streams.all_acked()
    }

    /// The send budget now (`TransportConfig::send_budget`).
    #[doc(hidden)]
    pub fn send_budget(&self) -> usize {
        self.streams.send_budget()
    }

    /// Finish a stream's sending side.
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        self.streams.finish(id)
    }

    /// Set (or with `None` clear) the RFC 9218 priority of a stream's
    /// sending side: lower urgency is sent first. Streams without one go
    /// round-robin at the default urgency (3).
    pub fn set_stream_priority(
        &mut self,
        id: StreamId,
        priority: Option<Priority>,
    ) -> Result<(), StreamError> {
        self.streams.set_priority(id, priority)
    }

    /// Reset a stream's sending side.
    pub fn reset_stream(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.reset(id, code)
    }

    /// Read from a stream.
    pub fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<ReadOutcome, StreamError> {
        self.streams.read(id, buf)
    }

    /// Read from a stream, appending at most `max` bytes to `out` (no zeroed
    /// buffer needed first).
    pub fn read_append(
        &mut self,
        id: StreamId,
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<ReadOutcome, StreamError> {
        self.streams.read(id, &mut Append { out, max })
    }

    /// Read from a stream in place: hand at most `max` bytes to `f` (in one or two
    /// pieces) without copying them out first.
    pub fn read_visit(
        &mut self,
        id: StreamId,
        max: usize,
        f: impl FnMut(&[u8]),
    ) -> Result<ReadOutcome, StreamError> {
        self.streams.read(id, &mut Visit { f, max })
    }

    /// [`read_visit`](Self::read_visit) that also ends the stream when it
    /// hands over the last bytes (the FIN is here): `true` then, and the
    /// stream is done as after a `Finished` read.
    pub fn read_visit_to_end(
        &mut self,
        id: StreamId,
        max: usize,
        f: impl FnMut(&[u8]),
    ) -> Result<(ReadOutcome, bool), StreamError> {
        self.streams.read_and_end(id, &mut Visit { f, max }, true)
    }

    /// Bytes a read of the stream would return now (0 for an unknown stream).
    pub fn readable_bytes(&self, id: StreamId) -> usize {
        self.streams.readable_bytes(id)
    }

    /// Whether stream or flow-control frames are queued: after a read, the
    /// transmit path has work only if this is true.
    pub fn has_pending_stream_control(&self) -> bool {
        self.streams.has_control()
    }

    /// Ask the peer to stop sending on a stream.
    pub fn stop_sending(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.stop_sending(id, code)
    }

    /// Whether a write to the stream would take data now.
    pub fn is_writable(&self, id: StreamId) -> bool {
        self.streams.is_writable(id)
    }

    /// Whether a read would return data, the end or an error now.
    pub fn is_readable(&self, id: StreamId) -> bool {
        self.streams.is_readable(id)
    }

    /// Send a PING (e.g. to measure the RTT or keep the path alive).
    pub fn ping(&mut self) {
        self.ping_pending = true;
    }

    /// Start a 1-RTT key update (RFC 9001 §6) if allowed now: the handshake is
    /// confirmed and the previous update has settled.
    pub fn initiate_key_update(&mut self, now: Instant) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9001#section-6
        //# An endpoint MUST NOT initiate a key update prior to having confirmed the
        //# handshake
        if !self.handshake_confirmed {
            return false;
        }
        let started = self.one_rtt.as_mut().is_some_and(|k| k.initiate_update());
        if started {
            self.after_key_update(now, true);
        }
        started
    }

    // ----- shared helpers ----------------------------------------------------------

    fn path_state(&self) -> PathState {
        PathState {
            handshake_confirmed: self.handshake_confirmed,
            // A Handshake packet from the server does not say that ours
            // arrived: the server may still be amplification-limited.
            //= https://www.rfc-editor.org/rfc/rfc9002#section-6.2.2.1
            //# That is, the client MUST set the PTO timer if the client has not
            //# received an acknowledgment for any of its Handshake packets and
            //# the handshake is not confirmed (see Section 4.1.2 of [QUIC-TLS]),
            //# even if there are no packets in flight.
            peer_completed_address_validation: self.side.is_server()
                || self.handshake_confirmed
                || self.recovery.largest_acked(SpaceId::Handshake).is_some(),
            amplification_blocked: self.path.amplification_budget() == 0,
            // Per packet: established connections skip the dropped space.
            has_handshake_keys: !self.spaces.early_dropped()
                && self.spaces[SpaceId::Handshake.index()].keys.is_some(),
            max_ack_delay: self.peer_max_ack_delay(),
        }
    }

    /// The peer's max_ack_delay transport parameter (zero until known).
    #[inline]
    fn peer_max_ack_delay(&self) -> Duration {
        self.peer_params
            .as_ref()
            .map_or(Duration::ZERO, |p| p.max_ack_delay)
    }
}

/// Loss detection and congestion control settings from the transport config.
fn recovery_config(config: &TransportConfig) -> RecoveryConfig {
    RecoveryConfig {
        initial_rtt: config.initial_rtt,
        cc: config.congestion_control,
        max_datagram_size: u64::from(config.initial_mtu),
        pacing: config.pacing,
        ..RecoveryConfig::default()
    }
}

/// Ways a connection can be made to misbehave, to test how its peer copes.
#[cfg(feature = "testing")]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Misbehave {
    /// Never acknowledge anything.
    pub no_acks: bool,
    /// Send whatever the congestion controller and pacer say.
    pub ignore_congestion: bool,
    /// Skip a frame that breaks a rule instead of closing the connection
    /// (to keep attacking a peer that answers with frames we find wrong).
    pub tolerate_violations: bool,
}
