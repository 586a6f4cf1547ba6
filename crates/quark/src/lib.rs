//! # quark: QUIC on tokio with a socket-like API
//!
//! Listeners, connections and streams, as the VPP and in-kernel QUIC papers
//! describe them. **Start with the [`guide`]**: endpoints, connections,
//! streams, configuration (TLS, 0-RTT, datagrams, qlog) and errors, each with
//! a runnable example.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use quark::{Endpoint, tls};
//! let identity = tls::Identity::self_signed(&["localhost"])?;
//! let server = Endpoint::server(tls::server_config(&identity, &[b"hq-interop"])?, "127.0.0.1:4433".parse()?)?;
//! let client = Endpoint::client("127.0.0.1:0".parse()?)?;
//! let config = tls::client_config(tls::Verify::Roots(vec![identity.cert.clone()]), &[b"hq-interop"])?;
//! let conn = client.connect(config, server.local_addr()?, "localhost")?.await?;
//! let (mut send, mut recv) = conn.open_bi().await?;
//! # Ok(()) }
//! ```
//!
//! | module | what lives there |
//! |---|---|
//! | [`guide`] | the guide: how the pieces fit, with runnable examples |
//! | [`endpoint`] | `Endpoint`: bind, `accept` (the listener), `connect` |
//! | [`connect_first`] | `Endpoint::connect_first`: the first of a name's addresses to answer (RFC 8305) |
//! | [`connection`] | `Connection`: open / accept streams, close |
//! | [`stream`] | `SendStream` (`AsyncWrite`), `RecvStream` (`AsyncRead`) |
//! | [`counters`] | the per-packet CPU breakdown (crypto, ACK handling, system calls) |
//! | [`tls`] | certificates and rustls configurations (CA file, `--insecure`, cipher suites) |
//! | [`workers`] | `WorkerGroup`: one address served by N threads (`SO_REUSEPORT`), a connection per core |
//! | `busy_poll` | the driver's optional busy polling (`Endpoint::set_busy_poll`) |
//! | `datagram` | unreliable datagrams on a `Connection` (RFC 9221): send, send with backpressure, read |
//! | `wakeup` | the driver's alarm: a `timerfd` (tokio's wheel only if the kernel refuses one) |
//! | `driver` | the task that moves datagrams between the socket and the protocol core |
//! | [`Drive`] | an endpoint's driver polled by the caller instead of a task (`Endpoint::caller_driven`) |
//! | `events` | protocol events to task wake-ups (readable, writable, connected, ...) |
//! | `forward` | datagrams passed between workers when the kernel put them on the wrong one |
//!
//! ## Examples
//!
//! Runnable programs in `crates/quark/examples/` (`cargo build --examples`),
//! shown in full in [`guide::examples`]:
//!
//! | example | what it shows |
//! |---|---|
//! | [`echo_server.rs`](guide::examples#echo_server), [`echo_client.rs`](guide::examples#echo_client) | a server accepting connections and streams, a client opening them; trusting a self-signed certificate |
//! | [`download.rs`](guide::examples#download) | an hq-interop (HTTP/0.9) file download with its SHA-256; without arguments it serves the file itself |
//! | [`datagrams.rs`](guide::examples#datagrams) | unreliable datagrams (RFC 9221) echoed by a server and checked by the client, in one process |
//!
//! ```sh
//! cargo run -p quark --example echo_server -- 127.0.0.1:4433 /tmp/echo-cert.pem &
//! cargo run -p quark --example echo_client -- 127.0.0.1:4433 /tmp/echo-cert.pem hello
//! cargo run -p quark --example download
//! cargo run -p quark --example datagrams
//! ```
//!
//! HTTP/3 examples are in `quark-h3` (`crates/quark-h3/examples/`).
//!
//! Environment switches: `QUARK_NO_GSO=1` / `QUARK_NO_GRO=1` run the datagram I/O
//! without segmentation offload or receive coalescing (for tests and benchmarks).
//!
//! qlog: with `EndpointConfig::qlog_dir` set, or the [`QLOGDIR_ENV`]
//! (`QLOGDIR`) environment variable naming a directory, every connection
//! writes `<odcid hex>_<server|client>.sqlog` there (qlog 0.3, JSON-SEQ, for
//! qvis) from a writer thread.

#![warn(missing_docs)]

mod alarm;
mod busy_poll;
pub mod connect_first;
pub mod connection;
pub mod counters;
mod datagram;
mod deadlines;
mod drive;
mod driver;
pub mod endpoint;
mod events;
pub mod fleet;
mod forward;
pub mod guide;
pub mod hq;
mod qlog;
mod shared;
pub mod stream;
pub mod tls;
mod wakeup;
pub mod workers;

#[cfg(test)]
mod tests;

pub use connect_first::ConnectFirstError;
pub use connection::{Connecting, Connection};
pub use drive::Drive;
pub use endpoint::Endpoint;
pub use qlog::QLOGDIR_ENV;
pub use quark_proto::cc::CcAlgorithm;
pub use quark_proto::packet::{VERSION_1, VERSION_2};
pub use quark_proto::recovery::EcnState;
pub use quark_proto::{
    ClientConfig, ConnectError, ConnectionError, ConnectionStats, Dir, EndpointConfig,
    MemoryBudget, Priority, SendDatagramError, ServerConfig, StreamId, TransportConfig,
};
pub use stream::{ReadError, RecvStream, SendStream, WriteError};
pub use workers::{WorkerGroup, WorkerStats};
