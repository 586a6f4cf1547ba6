//! Configuration of endpoints and connections.

use std::sync::Arc;
use std::time::Duration;

use crate::cc::CcAlgorithm;
use crate::packet::VERSION_1;

/// Transport settings shared by both sides of a connection.
#[derive(Clone, Debug)]
pub struct TransportConfig {
    /// Close the connection after this long without activity (0: never).
    pub max_idle_timeout: Duration,
    /// Send a PING when idle this long (keeps NATs and idle timers alive).
    pub keep_alive: Option<Duration>,
    /// Credit given to the peer per stream (MAX_STREAM_DATA window).
    pub stream_receive_window: u64,
    /// Credit given to the peer across all streams (MAX_DATA window).
    pub receive_window: u64,
    /// Unacknowledged bytes we buffer per sending stream.
    pub send_buffer: usize,
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
    /// Upper bound on CRYPTO data buffered out of order per space.
    pub crypto_buffer: usize,
}

impl Default for TransportConfig {
    fn default() -> Self {
        TransportConfig {
            max_idle_timeout: Duration::from_secs(30),
            keep_alive: None,
            stream_receive_window: 4 * 1024 * 1024,
            receive_window: 16 * 1024 * 1024,
            send_buffer: 4 * 1024 * 1024,
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
            crypto_buffer: 64 * 1024,
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
    /// Versions we accept.
    pub supported_versions: Vec<u32>,
    /// Seed for the endpoint's random number generator (`None`: from the OS).
    /// Seeding makes connection IDs and packet contents reproducible in simulations.
    pub rng_seed: Option<u64>,
    /// Stateless responses (Version Negotiation, Retry, reset) queued at most.
    pub max_stateless_responses: usize,
}

impl Default for EndpointConfig {
    fn default() -> Self {
        let mut reset_key = [0; 32];
        rand::Rng::fill(&mut rand::rng(), &mut reset_key);
        EndpointConfig {
            cid_len: 8,
            reset_key,
            supported_versions: vec![VERSION_1],
            rng_seed: None,
            max_stateless_responses: 256,
        }
    }
}

/// What a server needs to accept connections.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// TLS 1.3 configuration (certificate, ALPN); must have `max_early_data_size` 0 or
    /// `u32::MAX` as rustls' QUIC support requires.
    pub tls: Arc<rustls::ServerConfig>,
    /// Transport settings for accepted connections.
    pub transport: Arc<TransportConfig>,
    /// Demand address validation with a Retry before creating any connection state.
    pub retry: bool,
    /// Secret for address-validation tokens.
    pub token_key: [u8; 32],
    /// How long a Retry token stays valid.
    pub retry_token_lifetime: Duration,
    /// Connections accepted at most (further Initials are refused).
    pub max_connections: usize,
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
            retry_token_lifetime: Duration::from_secs(15),
            max_connections: 100_000,
        }
    }
}

/// What a client needs to open a connection.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// TLS 1.3 configuration (roots or verifier, ALPN).
    pub tls: Arc<rustls::ClientConfig>,
    /// Transport settings.
    pub transport: Arc<TransportConfig>,
    /// Version to offer.
    pub version: u32,
}

impl ClientConfig {
    /// A client configuration with default transport settings.
    pub fn new(tls: Arc<rustls::ClientConfig>) -> Self {
        ClientConfig {
            tls,
            transport: Arc::new(TransportConfig::default()),
            version: VERSION_1,
        }
    }
}
