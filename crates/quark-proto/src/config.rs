//! Configuration of endpoints and connections.

use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use ring::hmac;

use crate::cc::CcAlgorithm;
use crate::cid::{ConnectionId, MAX_CID_LEN};
use crate::packet::{VERSION_1, VERSION_2};

/// Transport settings shared by both sides of a connection.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// Close the connection after this long without activity (0: never).
    pub max_idle_timeout: Duration,
    /// Send a PING when idle this long (keeps NATs and idle timers alive).
    pub keep_alive: Option<Duration>,
    /// Client: while a stream we opened waits for the peer's data and
    /// nothing ack-eliciting has come for 3 PTOs, send a PING (then after 6
    /// and 12; at most 3 until the peer sends again). A NAT that moved us
    /// while everything the server had in flight went to the old address
    /// leaves the server unable to reach us until we send.
    pub stall_pings: bool,
    /// Credit given to the peer per stream (MAX_STREAM_DATA window) at first.
    pub stream_receive_window: u64,
    /// What a stream's window may grow to while its reader keeps up and the
    /// window, not the path, limits the sender (credit returned within two
    /// RTTs doubles it).
    pub stream_receive_window_max: u64,
    /// Credit given to the peer across all streams (MAX_DATA window) at first.
    pub receive_window: u64,
    /// What the connection's window may grow to (as the stream window; it is
    /// also kept at 1.5 × the largest stream window).
    pub receive_window_max: u64,
    /// Unacknowledged bytes we buffer per sending stream, at least.
    pub send_buffer: usize,
    /// ... and at most: the buffer follows twice the congestion window (as
    /// Linux sizes a TCP socket's send buffer), so a long fat path is not
    /// held to `send_buffer` in flight.
    pub send_buffer_max: usize,
    /// Bytes the connection holds for sending across all its streams (written
    /// and not yet acknowledged, plus room set aside by
    /// [`Connection::reserve`](crate::Connection::reserve)), at least: a write
    /// that would exceed the budget takes 0 bytes and the stream is woken
    /// (`StreamEvent::Writable`, streams in the order they were refused) as
    /// acknowledgements free room. Without it every stream could hold its own
    /// buffer, and a peer that opens many streams and acknowledges slowly made
    /// a server hold hundreds of MB. Also bounded by the peer's flow-control
    /// credit, which every written byte consumes. A stream more urgent
    /// (RFC 9218) than some stream with data queued may go past the budget
    /// by half of it, so that less urgent unsent bytes do not hold it back.
    pub send_budget: usize,
    /// ... and at most: the budget follows twice the congestion window (as
    /// the per-stream buffer does), so a long fat path is not held to
    /// `send_budget` in flight.
    pub send_budget_max: usize,
    /// Close the connection (CONNECTION_CLOSE with NO_ERROR,
    /// [`ConnectionError::SendTimedOut`](crate::ConnectionError::SendTimedOut))
    /// when it has data to send -- bytes held, or a write refused for want of
    /// the peer's credit -- and makes no progress for this long: no new data
    /// acknowledged and no flow-control credit granted (nginx's
    /// `send_timeout`). A connection with nothing to send is left to the idle
    /// timeout. Keep it well above the path's round trip: progress takes one
    /// to show. `None` or zero: never.
    pub send_timeout: Option<Duration>,
    /// Bidirectional streams the peer may have open at once.
    pub max_concurrent_bidi_streams: u64,
    /// Unidirectional streams the peer may have open at once.
    pub max_concurrent_uni_streams: u64,
    /// RTT assumed before the first sample.
    pub initial_rtt: Duration,
    /// Congestion controller.
    pub congestion_control: CcAlgorithm,
    /// Pace packets over the RTT.
    pub pacing: bool,
    /// Largest UDP payload we accept (max_udp_payload_size).
    pub max_udp_payload_size: u16,
    /// Datagram size used from the start (1200 is always safe).
    pub initial_mtu: u16,
    /// Probe for larger datagrams after the handshake (DPLPMTUD, RFC 8899), up to
    /// `max_udp_payload_size` and the peer's limit.
    pub mtu_discovery: bool,
    /// Exponent for the ACK Delay field we send.
    pub ack_delay_exponent: u8,
    /// Longest we delay an ACK (max_ack_delay).
    pub max_ack_delay: Duration,
    /// How many ack-eliciting packets we receive before acknowledging (RFC 9000: 2).
    pub ack_eliciting_threshold: u64,
    /// Peer connection IDs we are willing to store (active_connection_id_limit).
    pub active_connection_id_limit: u64,
    /// Advertise the ACK Frequency extension (min_ack_delay) so peers may tune our ACK rate.
    pub ack_frequency: bool,
    /// Probe packets sent when a PTO fires in the application data space
    /// (RFC 9002 §6.2.4 allows one or two; 0 counts as 1). One by default:
    /// most PTOs there are a busy peer's queueing, not loss (issue #33).
    pub data_pto_probes: u8,
    /// Share RTT samples among the endpoint's connections on one path (local
    /// and remote IP): a connection's Application Data PTO is at least what
    /// the others measure lately (RFC 9040's ensemble sharing), so a burst
    /// of connections set up on an idle path does not fire a PTO each while
    /// their peer works through the queue they made (issue #33).
    pub shared_path_rtt: bool,
    /// Upper bound on CRYPTO data buffered out of order per space.
    pub crypto_buffer: usize,
    /// Give up on a handshake that has not completed this long after it began
    /// (a peer that starts handshakes and never finishes them holds state only
    /// this long, not a whole idle timeout). Default 10 s, which bounds how
    /// long half-open state lives under a handshake flood; under 30 % loss a
    /// handshake can need the PTOs at 1, 3, 7 and 15 s (backoff from the
    /// initial 1 s PTO), and about 1 in 1 000 is cut short at 10 s (10 of
    /// 10 000 seeds in simulation, the slowest 20 s).
    pub handshake_timeout: Duration,
    /// Accept unreliable datagrams (RFC 9221): the max_datagram_frame_size we
    /// advertise, the largest DATAGRAM frame we take. `None`: not advertised,
    /// and a DATAGRAM frame from the peer is a PROTOCOL_VIOLATION. Sending
    /// datagrams only needs the peer's advertisement.
    pub max_datagram_frame_size: Option<u16>,
    /// Bytes of received datagrams held until the application reads them, each
    /// charged its length plus [`crate::connection::DATAGRAM_OVERHEAD`]; when
    /// full, the oldest are dropped.
    pub datagram_receive_buffer: usize,
    /// Bytes of datagrams queued for sending, charged the same way; when full,
    /// `send_datagram` drops the oldest and `try_send_datagram` refuses.
    pub datagram_send_buffer: usize,
    /// Let the peer move the connection to a new address, and allow
    /// [`Connection::migrate`](crate::Connection::migrate) (RFC 9000 §9).
    /// Off: disable_active_migration is announced.
    pub active_migration: bool,
    /// After this long without activity, an established connection gives
    /// back what only a busy one needs: stream table and kept buffers,
    /// sent-packet records, scratch space (0: never). Issue #30.
    pub idle_trim: Duration,
    /// Derive the next key phase's receive key a PTO after the handshake and
    /// after each key update, and keep it (576 bytes with AES-128-GCM), so
    /// that a packet with the other Key Phase bit costs no derivation: RFC
    /// 9001 §6.3 and §9.5 advise it (a derivation inline is a timing signal
    /// that tells when keys update). Off: derived when the first such packet
    /// comes (§6.3 allows it) and kept from then on. Issue #33.
    pub next_keys_ahead: bool,
    /// Take part in the latency spin bit (RFC 9000 §17.4), which lets an
    /// observer on the path measure the RTT from one bit of the 1-RTT header:
    /// one connection in sixteen still never spins, as the RFC requires. Off:
    /// no connection spins, and the bit is random for each connection ID.
    pub spin_bit: bool,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            max_idle_timeout: Duration::from_secs(30),
            keep_alive: None,
            stall_pings: true,
            stream_receive_window: 4 * 1024 * 1024,
            stream_receive_window_max: 16 * 1024 * 1024,
            receive_window: 16 * 1024 * 1024,
            receive_window_max: 32 * 1024 * 1024,
            send_buffer: 4 * 1024 * 1024,
            send_buffer_max: 32 * 1024 * 1024,
            send_budget: 256 * 1024,
            send_budget_max: 32 * 1024 * 1024,
            send_timeout: Some(Duration::from_secs(60)),
            max_concurrent_bidi_streams: 256,
            max_concurrent_uni_streams: 256,
            initial_rtt: Duration::from_millis(333),
            congestion_control: CcAlgorithm::Cubic,
            pacing: true,
            // Below the 65 507-byte IPv4 limit, so a loopback or jumbo path is found
            // with the first MTU probe.
            max_udp_payload_size: 65_000,
            initial_mtu: 1200,
            mtu_discovery: true,
            ack_delay_exponent: 3,
            max_ack_delay: Duration::from_millis(25),
            ack_eliciting_threshold: 2,
            active_connection_id_limit: 4,
            ack_frequency: true,
            data_pto_probes: 1,
            shared_path_rtt: true,
            crypto_buffer: 64 * 1024,
            handshake_timeout: Duration::from_secs(10),
            max_datagram_frame_size: None,
            datagram_receive_buffer: 1024 * 1024,
            datagram_send_buffer: 1024 * 1024,
            active_migration: true,
            idle_trim: Duration::from_secs(1),
            next_keys_ahead: true,
            spin_bit: true,
        }
    }
}

/// Settings of an endpoint (shared by all its connections).
#[derive(Clone, Debug)]
pub struct EndpointConfig {
    /// Length of the connection IDs we issue (4..=20).
    pub cid_len: usize,
    /// Secret for stateless reset tokens; keep it across restarts to reset stale peers.
    pub reset_key: [u8; 32],
    /// Versions we accept, most preferred first: a server answers Initials of
    /// these versions, lists them in Version Negotiation packets and in its
    /// version_information (RFC 9368); a client may start in any of them.
    /// Default: v1 then v2 ([`VERSION_1`], [`VERSION_2`]): clients that start
    /// in either are served in it, and none is moved (an upgrade costs the
    /// server a second look at the first Initial and the client its own key
    /// derivation, and 0-RTT packets of the original version cannot follow).
    /// Put v2 first to move clients that start in v1 and offer v2 to v2 in
    /// the server's first Initial (RFC 9368 §2.3; no extra round trip).
    pub supported_versions: Vec<u32>,
    /// Seed for the endpoint's random number generator (`None`: from the OS).
    /// Seeding makes connection IDs and packet contents reproducible in simulations.
    pub rng_seed: Option<u64>,
    /// Stateless responses (Version Negotiation, Retry, reset) queued at most.
    pub max_stateless_responses: usize,
    /// This endpoint's place among several sharing one UDP port (SO_REUSEPORT
    /// workers): the connection IDs it issues then name it, and datagrams for
    /// another worker's IDs come out as [`crate::DatagramEvent::Forward`].
    pub worker: Option<Worker>,
    /// Where the runtime writes a qlog file per connection
    /// (`<odcid hex>_<server|client>.sqlog`). When set, each connection
    /// records qlog events (see [`crate::qlog`]); the core itself writes nothing.
    pub qlog_dir: Option<PathBuf>,
    /// Issue QUIC-LB connection IDs naming this server (one of a fleet behind
    /// a CID-aware load balancer, see [`crate::quic_lb`]). Overrides `cid_len`
    /// with the configuration's length, and `worker` tagging.
    pub quic_lb: Option<Arc<crate::quic_lb::CidEncoder>>,
    /// Greasing the QUIC bit (RFC 9287): announce the grease_quic_bit
    /// transport parameter and so accept packets with the QUIC (fixed) bit
    /// cleared, and make that bit of our 1-RTT packets unpredictable toward
    /// peers that announce it, so that no middlebox comes to rely on it.
    /// Off: packets with the bit cleared are dropped (RFC 9000 §17.2).
    pub grease_quic_bit: bool,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        let mut reset_key = [0; 32];
        rand::Rng::fill(&mut rand::rng(), &mut reset_key);
        EndpointConfig {
            cid_len: 8,
            reset_key,
            supported_versions: vec![VERSION_1, VERSION_2],
            rng_seed: None,
            max_stateless_responses: 256,
            worker: None,
            qlog_dir: None,
            quic_lb: None,
            grease_quic_bit: true,
        }
    }
}

/// One of `count` endpoints serving the same address, each with its own
/// connections (at most 255 of them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Worker {
    index: u8,
    count: u8,
}

impl Worker {
    /// Worker `index` of `count`; `None` unless `index < count <= 255`.
    pub fn new(index: usize, count: usize) -> Option<Self> {
        let count = u8::try_from(count).ok()?;
        let index = u8::try_from(index).ok().filter(|&i| i < count)?;
        Some(Worker { index, count })
    }

    /// This worker's index.
    pub fn index(&self) -> usize {
        usize::from(self.index)
    }

    /// How many workers share the address.
    pub fn count(&self) -> usize {
        usize::from(self.count)
    }
}

/// Makes the connection IDs an endpoint and its connections issue: random bytes,
/// and with a [`Worker`], a first byte from which the workers (and only they) can
/// recover the issuing worker's index.
///
/// The first byte is `tag ^ mask`, where `tag % count == index` and `mask` is the
/// first byte of HMAC-SHA256 over the remaining bytes with a key derived from the
/// endpoints' shared reset key. Without the key the byte looks random, so IDs of
/// one connection cannot be linked by the worker they name:
//= https://www.rfc-editor.org/rfc/rfc9000#section-5.1
//# Connection IDs MUST NOT contain any information that can be used by an
//# external observer (that is, one that does not cooperate with the issuer) to
//# correlate them with other connection IDs for the same connection.
#[derive(Clone)]
pub struct CidGenerator {
    len: usize,
    worker: Option<(Worker, Arc<hmac::Key>)>,
    quic_lb: Option<Arc<crate::quic_lb::CidEncoder>>,
}

impl CidGenerator {
    /// The generator an endpoint with `config` uses.
    pub fn new(config: &EndpointConfig) -> Self {
        if let Some(lb) = &config.quic_lb {
            return CidGenerator {
                len: lb.cid_len(),
                worker: None,
                quic_lb: Some(lb.clone()),
            };
        }
        let len = config.cid_len.min(MAX_CID_LEN);
        // Tagging needs at least one byte to mask the tag with.
        let worker = config.worker.filter(|_| len >= 2).map(|w| {
            let root = hmac::Key::new(hmac::HMAC_SHA256, &config.reset_key);
            let derived = hmac::sign(&root, b"quark worker connection id");
            (
                w,
                Arc::new(hmac::Key::new(hmac::HMAC_SHA256, derived.as_ref())),
            )
        });
        CidGenerator {
            len,
            worker,
            quic_lb: None,
        }
    }

    /// Length of the IDs made.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the IDs made are zero-length.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// A fresh connection ID.
    pub fn generate<R: rand::Rng + ?Sized>(&self, rng: &mut R) -> ConnectionId {
        let Some((w, key)) = &self.worker else {
            if let Some(lb) = &self.quic_lb {
                return lb.generate(rng);
            }
            return ConnectionId::random(rng, self.len);
        };
        let mut bytes = [0u8; MAX_CID_LEN];
        let bytes = &mut bytes[..self.len];
        rng.fill(&mut bytes[1..]);
        // Any byte value congruent to the index, so the tag itself is spread out.
        let steps = (255 - w.index) / w.count;
        let tag = w.index + w.count * rng.random_range(0..=steps);
        bytes[0] = tag ^ mask(key, &bytes[1..]);
        ConnectionId::new(bytes).unwrap_or(ConnectionId::EMPTY)
    }

    /// The worker that issued `cid`, if this endpoint is one of several and the ID
    /// has the length ours have. Meaningless (but harmless) for IDs we did not issue.
    pub fn worker_of(&self, cid: &[u8]) -> Option<usize> {
        let (w, key) = self.worker.as_ref()?;
        if cid.len() != self.len {
            return None;
        }
        let tag = cid[0] ^ mask(key, &cid[1..]);
        Some(usize::from(tag % w.count))
    }

    /// The worker this generator tags IDs with.
    pub fn worker(&self) -> Option<Worker> {
        self.worker.as_ref().map(|(w, _)| *w)
    }
}

fn mask(key: &hmac::Key, rest: &[u8]) -> u8 {
    hmac::sign(key, rest).as_ref()[0]
}

impl fmt::Debug for CidGenerator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CidGenerator")
            .field("len", &self.len)
            .field("worker", &self.worker())
            .finish()
    }
}

/// The memory a server's connections may hold unless told otherwise: well
/// within a small machine, and under a 1 GiB container limit with room for
/// what the estimates miss.
pub const DEFAULT_MEMORY_BUDGET: usize = 512 << 20;

/// What a server needs to accept connections.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// TLS 1.3 configuration (certificate, ALPN); must have `max_early_data_size` 0 or
    /// `u32::MAX` as rustls' QUIC support requires (see [`ServerConfig::with_0rtt`]).
    pub tls: Arc<rustls::ServerConfig>,
    /// Transport settings for accepted connections.
    pub transport: Arc<TransportConfig>,
    /// Demand address validation with a Retry before creating any connection state.
    pub retry: bool,
    /// Secret for address-validation tokens.
    pub token_key: [u8; 32],
    /// Earlier token secrets: tokens they sealed are still accepted (key
    /// rotation across a fleet), new ones are sealed with `token_key`.
    pub previous_token_keys: Vec<[u8; 32]>,
    /// How long a Retry token stays valid.
    pub retry_token_lifetime: Duration,
    /// How long a NEW_TOKEN token stays valid (RFC 9000 §8.1.3): a client
    /// that comes back within it, from the same IP address, skips the Retry
    /// and the 3x amplification limit, once per token. Zero: none is sent.
    /// Tokens' times are the endpoint's wall clock when it has one
    /// ([`crate::Endpoint::set_wall_clock`]: a fleet, or a restarted
    /// server, judges another's tokens by it).
    pub new_token_lifetime: Duration,
    /// Connections accepted at most (further Initials are refused).
    pub max_connections: usize,
    /// How many handshakes may be in progress before the server protects itself.
    pub handshakes: HandshakeLimits,
    /// Memory the server's connections may hold, shared by every endpoint
    /// given this configuration (the workers of one server): past it, new
    /// connections are refused (CONNECTION_REFUSED) and existing ones keep
    /// what they have.
    pub memory: Arc<MemoryBudget>,
    /// Accept 0-RTT data from resuming clients (off by default; see
    /// [`ServerConfig::with_0rtt`] and SECURITY.md for the replay policy).
    /// Off, early data is refused even when the TLS configuration allows it.
    pub zero_rtt: bool,
    /// An address clients should move to after the handshake, announced in
    /// the preferred_address transport parameter (RFC 9000 §9.6). The server
    /// must receive there too; `None`: no preferred address.
    pub preferred_address: Option<std::net::SocketAddr>,
}

/// A budget of memory shared by the connections of one or more endpoints,
/// counted from each connection's own estimate ([`crate::Connection::memory`]).
#[derive(Debug)]
pub struct MemoryBudget {
    limit: usize,
    used: AtomicUsize,
}

impl MemoryBudget {
    /// A budget of `limit` bytes.
    pub fn new(limit: usize) -> Arc<Self> {
        Arc::new(MemoryBudget {
            limit,
            used: AtomicUsize::new(0),
        })
    }

    /// The limit, in bytes.
    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes the connections hold now, by their estimates.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }

    /// Whether the connections hold more than the limit.
    pub fn exceeded(&self) -> bool {
        self.used() > self.limit
    }

    /// A connection's estimate changed from `old` to `new`.
    pub(crate) fn update(&self, old: usize, new: usize) {
        if new >= old {
            self.used.fetch_add(new - old, Ordering::Relaxed);
        } else {
            self.used.fetch_sub(old - new, Ordering::Relaxed);
        }
    }
}

/// Bounds on server connections whose handshake is not complete ("half-open"):
/// the state an unauthenticated peer can make a server hold. Sources are IPv4
/// addresses and IPv6 /64 prefixes (one host usually holds a whole /64).
///
/// Past `retry_above` half-open connections, Initials that carry no valid
/// address-validation token get a Retry (stateless, RFC 9000 §8.1.2) instead
/// of a connection: a client that can receive at its address comes back with
/// a token, one that spoofed its address cannot. The server returns to
/// accepting directly once the count falls below it again. Past the hard
/// limits, validated or not, new connections are refused (CONNECTION_REFUSED).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct HandshakeLimits {
    /// Half-open connections at most, from all sources.
    pub max_half_open: usize,
    /// Half-open connections at most from one source.
    pub max_half_open_per_source: usize,
    /// From this many half-open connections on, demand address validation.
    pub retry_above: usize,
}

impl Default for HandshakeLimits {
    fn default() -> Self {
        // A half-open connection holds about 20 KB and costs about 250 µs of
        // handshake CPU. One source (a NAT, a load generator) may start a few
        // hundred handshakes at once.
        HandshakeLimits {
            max_half_open: 4096,
            max_half_open_per_source: 256,
            retry_above: 512,
        }
    }
}

impl ServerConfig {
    /// A server configuration with default transport settings.
    pub fn new(tls: Arc<rustls::ServerConfig>) -> Self {
        let mut token_key = [0; 32];
        rand::Rng::fill(&mut rand::rng(), &mut token_key);
        ServerConfig {
            tls,
            transport: Arc::new(TransportConfig::default()),
            retry: false,
            token_key,
            previous_token_keys: Vec::new(),
            retry_token_lifetime: Duration::from_secs(15),
            new_token_lifetime: Duration::from_secs(24 * 3600),
            max_connections: 100_000,
            handshakes: HandshakeLimits::default(),
            memory: MemoryBudget::new(DEFAULT_MEMORY_BUDGET),
            zero_rtt: false,
            preferred_address: None,
        }
    }

    /// Accept 0-RTT: tickets allow early data (`max_early_data_size`
    /// 2^32-1, as RFC 9001 §4.6.1 requires) and are single-use, kept in a
    /// server-side store of `tickets` entries of this configuration's own
    /// (rustls takes a ticket out of it when a client uses it, so a replayed
    /// ClientHello finds none and gets a full handshake). Stateless
    /// (encrypted) tickets cannot be single-use, so they are turned off.
    /// The transport limits must not shrink while tickets live (RFC 9000
    /// §7.4.1): keep `transport` as it is for the life of this configuration.
    pub fn with_0rtt(mut self, tickets: usize) -> Self {
        let mut tls = (*self.tls).clone();
        //= https://www.rfc-editor.org/rfc/rfc9001#section-4.6.1
        //# Servers MUST NOT send the early_data extension with a
        //# max_early_data_size field set to any value other than 0xffffffff.
        tls.max_early_data_size = u32::MAX;
        tls.session_storage = rustls::server::ServerSessionMemoryCache::new(tickets.max(1));
        tls.ticketer = Arc::new(NoTickets);
        self.tls = Arc::new(tls);
        self.zero_rtt = true;
        self
    }
}

/// A ticketer that is off: rustls then issues stateful, single-use tickets
/// from its session store.
#[derive(Debug)]
struct NoTickets;

impl rustls::server::ProducesTickets for NoTickets {
    fn enabled(&self) -> bool {
        false
    }
    fn lifetime(&self) -> u32 {
        0
    }
    fn encrypt(&self, _plain: &[u8]) -> Option<Vec<u8>> {
        None
    }
    fn decrypt(&self, _cipher: &[u8]) -> Option<Vec<u8>> {
        None
    }
}

/// What a client needs to open a connection.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// TLS 1.3 configuration (roots or verifier, ALPN).
    pub tls: Arc<rustls::ClientConfig>,
    /// Transport settings.
    pub transport: Arc<TransportConfig>,
    /// The version of the first Initial. Default QUIC v1: every QUIC server
    /// speaks it, so no round trip goes to Version Negotiation with any
    /// server. Set [`crate::packet::VERSION_2`] to speak v2 from the first
    /// packet.
    pub version: u32,
    /// Versions the server may move the connection to during the handshake
    /// (RFC 9368 compatible version negotiation), listed with `version` in
    /// the client's version_information. Default: v2, so a server that
    /// prefers v2 upgrades a v1 start at no cost in round trips, and one that
    /// does not simply stays in v1. Empty: stay in `version`.
    pub compatible_versions: Vec<u32>,
    /// Where tokens from servers' NEW_TOKEN frames are kept for the next
    /// connection to the same server name (RFC 9000 §8.1.3). Default: in
    /// memory, for 256 servers, shared by clones of this configuration.
    /// `None`: no token is kept or sent.
    pub token_store: Option<Arc<dyn crate::token_store::TokenStore>>,
}

impl ClientConfig {
    /// A client configuration with default transport settings.
    pub fn new(tls: Arc<rustls::ClientConfig>) -> Self {
        ClientConfig {
            tls,
            transport: Arc::new(TransportConfig::default()),
            version: VERSION_1,
            compatible_versions: vec![VERSION_2],
            token_store: Some(Arc::new(crate::token_store::TokenMemoryCache::new(256))),
        }
    }

    /// Send 0-RTT when resuming a session whose ticket allows it (TLS
    /// `enable_early_data`). Tickets live in the rustls configuration's
    /// session store (in memory, 256 by default): connections made with
    /// clones of this configuration share them. The application decides
    /// what goes in 0-RTT (it can be replayed, RFC 9001 §9.2): it opens
    /// streams before the handshake completes only when it means to.
    pub fn with_0rtt(mut self) -> Self {
        let mut tls = (*self.tls).clone();
        tls.enable_early_data = true;
        self.tls = Arc::new(tls);
        self
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;
    use rand::rngs::StdRng;

    use super::*;

    fn config(worker: Option<Worker>, cid_len: usize) -> EndpointConfig {
        EndpointConfig {
            cid_len,
            reset_key: [9; 32],
            worker,
            ..EndpointConfig::default()
        }
    }

    #[test]
    fn worker_bounds() {
        assert_eq!(Worker::new(0, 0), None);
        assert_eq!(Worker::new(2, 2), None);
        assert_eq!(Worker::new(0, 256), None);
        let w = Worker::new(254, 255).unwrap();
        assert_eq!((w.index(), w.count()), (254, 255));
    }

    #[test]
    fn ids_name_their_worker() {
        let mut rng = StdRng::seed_from_u64(1);
        for count in [1, 2, 3, 7, 64, 255] {
            for index in [0, count / 2, count - 1] {
                let g = CidGenerator::new(&config(Worker::new(index, count), 8));
                for _ in 0..50 {
                    let cid = g.generate(&mut rng);
                    assert_eq!(cid.len(), 8);
                    assert_eq!(g.worker_of(&cid), Some(index), "{index}/{count}");
                }
                // Every worker decodes the same way (same reset key).
                let other = CidGenerator::new(&config(Worker::new(0, count), 8));
                assert_eq!(other.worker_of(&g.generate(&mut rng)), Some(index));
            }
        }
    }

    #[test]
    fn first_byte_does_not_reveal_the_worker() {
        // Without the key, the first byte of worker 0's IDs takes odd values as
        // often as even ones: the index is not readable in clear.
        let g = CidGenerator::new(&config(Worker::new(0, 2), 8));
        let mut rng = StdRng::seed_from_u64(2);
        let odd = (0..1000)
            .filter(|_| g.generate(&mut rng)[0] % 2 == 1)
            .count();
        assert!((350..650).contains(&odd), "{odd}");
        // Another key reads a random worker.
        let stranger = CidGenerator::new(&EndpointConfig {
            reset_key: [1; 32],
            ..config(Worker::new(0, 2), 8)
        });
        let ones = (0..1000)
            .filter(|_| stranger.worker_of(&g.generate(&mut rng)) == Some(1))
            .count();
        assert!((350..650).contains(&ones), "{ones}");
    }

    #[test]
    fn no_worker_no_tag() {
        let mut rng = StdRng::seed_from_u64(3);
        let g = CidGenerator::new(&config(None, 8));
        assert_eq!(g.worker_of(&g.generate(&mut rng)), None);
        // One byte leaves nothing to mask the tag with: plain random IDs.
        let g = CidGenerator::new(&config(Worker::new(1, 2), 1));
        assert_eq!(g.worker(), None);
        assert_eq!(g.generate(&mut rng).len(), 1);
        let g = CidGenerator::new(&config(Worker::new(1, 2), 8));
        assert_eq!(g.worker_of(&[0; 4]), None, "wrong length");
        assert_eq!(g.worker_of(&[]), None);
    }
}
