//! # quark-proto: the sans-IO QUIC transport (v1, RFC 9000, and v2, RFC 9369)
//!
//! No sockets, no clocks, no threads: datagrams and the current time go in,
//! datagrams, timer deadlines and events come out. Everything here is therefore
//! testable in a deterministic simulated network.
//!
//! A map of the crate, in the order a packet meets it:
//!
//! | module | what lives there |
//! |---|---|
//! | [`endpoint`] | datagram → connection routing, new connections, Version Negotiation (and RFC 9368's compatible kind), Retry, NEW_TOKEN tokens (sealed, checked once), stateless reset, 0-RTT that overtook its Initial |
//! | [`packet`] | long/short headers, packet numbers, header protection, packet building |
//! | [`crypto`] | Initial keys, the TLS handshake (rustls), 1-RTT key updates, keys for a version changed mid-handshake, tokens |
//! | [`frame`] | every frame's encoding and decoding |
//! | [`connection`] | the connection state machine: handshake, frames in, packets out, streams (sent in RFC 9218 priority order once any has one), close |
//! | [`stream`] | send buffers, receive reassembly, per-stream state, flow control |
//! | [`recovery`] | RTT, loss detection, PTO (RFC 9002) |
//! | [`token_store`] | a client's NEW_TOKEN tokens, kept for its next connection to a server |
//! | [`cc`] | congestion controllers (NewReno, CUBIC, BBR experimental) |
//! | [`transport_params`] | transport parameters |
//! | [`qlog`] | qlog events, serialised for the runtime to write (off by default) |
//! | [`quic_lb`] | QUIC-LB connection IDs (draft-ietf-quic-load-balancers): server IDs a load balancer reads, and its decoder; set with `EndpointConfig::quic_lb` |
//! | [`cpu`] | counters for the per-packet CPU breakdown (off by default) |
//! | [`range_set`] | the range set behind ACK frames and stream bookkeeping |
//! | [`varint`], [`coding`], [`cid`], [`types`], [`error`] | shared vocabulary |

#![warn(missing_docs)]

pub mod cc;
pub mod cid;
pub mod coding;
pub mod config;
pub mod connection;
pub mod cpu;
pub mod crypto;
pub mod endpoint;
pub mod error;
pub mod frame;
pub mod packet;
pub mod qlog;
pub mod quic_lb;
pub mod range_set;
pub mod recovery;
pub mod stream;
pub mod token_store;
pub mod transport_params;
pub mod types;
pub mod varint;

pub use cid::{ConnectionId, ResetToken};
pub use config::{ClientConfig, EndpointConfig, MemoryBudget, ServerConfig, TransportConfig};
pub use connection::{
    Connection, ConnectionError, ConnectionStats, Event, MemoryBreakdown, MigrateError,
    PathRttCache, Priority, SendDatagramError, StreamError, StreamEvent, Transmit, ZeroRtt,
    release_stream_pool, scratch_pool_bytes, stream_pool_bytes,
};
pub use endpoint::{ConnectError, ConnectionHandle, DatagramEvent, Endpoint, MIN_SHARED_RECEIVE};
pub use error::{TransportError, TransportErrorCode};
pub use stream::{ReadError, ReadOutcome, WriteError};
pub use token_store::{AddressToken, TokenMemoryCache, TokenStore};
pub use types::{Dir, EcnCodepoint, IdHasher, IdMap, PacketKind, Side, SpaceId, StreamId};
pub use varint::VarInt;
