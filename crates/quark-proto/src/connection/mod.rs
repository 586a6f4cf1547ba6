//! The connection state machine.
//!
//! Inputs are `handle_*` calls (a datagram, a timeout, an application action);
//! outputs are polled: [`Connection::poll_transmit`] for datagrams,
//! [`Connection::poll_timeout`] for the next deadline, [`Connection::poll_event`]
//! for what the application should know. Time is always a parameter.
//!
//! Where things are:
//! - `app.rs`: what the application asks and does (streams, datagrams, stats)
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
mod app;
mod cids;
mod close;
mod datagrams;
mod frames;
mod handshake;
mod header_bits;
mod icmp;
mod lazy_rng;
mod loss;
mod memory;
mod migration;
mod mtu;
mod mtu_cache;
mod new_token;
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
mod stall;
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
use crate::transport_params::TransportParameters;
use crate::types::{EcnCodepoint, Side, SpaceId};

use ack_frequency::AckFrequencyState;
use cids::{LocalCids, PeerCids};
use close::State;
pub(crate) use icmp::QuotedDst;
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
    /// Client: PINGs sent because a response stalled (`stall_pings`).
    pub stall_pings: u64,
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
    /// We announce grease_quic_bit (RFC 9287): packets with the QUIC bit
    /// cleared are valid.
    pub(crate) grease_quic_bit: bool,
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
    /// Our connection IDs' length (at most 20).
    cid_len: u8,
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
    /// Client: the token for Initials (from NEW_TOKEN or a Retry). Server:
    /// the NEW_TOKEN token for the client's next connection, until
    /// acknowledged.
    token: Vec<u8>,
    /// Server: where the newest NEW_TOKEN frame stands.
    new_token: new_token::NewTokenState,
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
    /// Server: HANDSHAKE_DONE was sent and no packet carrying it is
    /// acknowledged yet.
    handshake_done_unacked: bool,
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
    /// The spin bit and the QUIC bit of our 1-RTT packets (RFC 9000 §17.4,
    /// RFC 9287).
    bits: header_bits::HeaderBits,
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
            cid_len: u8::try_from(p.shared.cid_len).unwrap_or(u8::MAX),
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
            new_token: new_token::NewTokenState::default(),
            retry_src_cid: p.retry_src_cid,
            received_retry: false,
            got_server_initial: false,
            received_any: false,
            handshake_complete: false,
            handshake_confirmed: false,
            handshake_done_pending: false,
            handshake_done_unacked: false,
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
            bits: header_bits::HeaderBits::new(
                p.config.spin_bit,
                p.shared.grease_quic_bit,
                p.shared.rng_seed,
            ),
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
    /// In Initial and Handshake packets, write CRYPTO before ACK (as quinn
    /// does in some: a Finished that ends the peer's Handshake space comes
    /// before the ACK for that space).
    pub crypto_before_ack: bool,
}
