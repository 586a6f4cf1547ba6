//! # A guide to quark
//!
//! quark is QUIC (RFC 9000, 9001, 9002; v2: RFC 9369) on tokio, with an API
//! shaped like sockets: an [`Endpoint`] is a bound UDP socket that listens and
//! connects, a [`Connection`] carries streams, and each stream is a pair of
//! byte pipes ([`SendStream`] implements `AsyncWrite`, [`RecvStream`]
//! `AsyncRead`). The protocol itself lives in the sans-IO crate `quark-proto`;
//! this crate drives it from one task per endpoint. Linux only (the UDP I/O
//! batches datagrams with `sendmmsg`/`recvmmsg` and GSO/GRO).
//!
//! Every example below runs as a doctest, on loopback, with a self-signed
//! certificate.
//!
//! ## Endpoints: a server and a client
//!
//! [`Endpoint::server`] binds a socket that accepts connections (the
//! listener); [`Endpoint::client`] binds one that only connects. Both need a
//! tokio runtime. [`Endpoint::accept`] yields connections whose handshake has
//! completed; [`Endpoint::connect`] returns a [`Connecting`] future that does
//! the same for the client. The TLS side comes from [`tls`]: an
//! [`Identity`](tls::Identity) (certificate and key; self-signed, or from PEM
//! files) for the server and a [`Verify`](tls::Verify) policy for the client,
//! plus the ALPN protocols both offer; the handshake fails unless they share
//! one.
//!
//! ```
//! use quark::{Endpoint, tls};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! const ALPN: &[u8] = b"echo";
//! let identity = tls::Identity::self_signed(&["localhost"])?;
//! let server = Endpoint::server(
//!     tls::server_config(&identity, &[ALPN])?,
//!     "127.0.0.1:0".parse()?, // port 0: the kernel picks one
//! )?;
//! let addr = server.local_addr()?;
//!
//! // The server: echo every bidirectional stream of every connection.
//! tokio::spawn(async move {
//!     while let Some(conn) = server.accept().await {
//!         tokio::spawn(async move {
//!             while let Ok((mut send, mut recv)) = conn.accept_bi().await {
//!                 let message = recv.read_to_end(64 * 1024).await?;
//!                 send.write_all(&message).await?;
//!                 send.finish()?;
//!             }
//!             Ok::<_, Box<dyn std::error::Error + Send + Sync>>(())
//!         });
//!     }
//! });
//!
//! // The client trusts the server's own certificate and nothing else.
//! let config = tls::client_config(tls::Verify::Roots(vec![identity.cert.clone()]), &[ALPN])?;
//! let client = Endpoint::client("127.0.0.1:0".parse()?)?;
//! let conn = client.connect(config, addr, "localhost")?.await?;
//!
//! let (mut send, mut recv) = conn.open_bi().await?;
//! send.write_all(b"hello").await?;
//! send.finish()?; // FIN: the server reads to the end, then answers
//! assert_eq!(recv.read_to_end(64 * 1024).await?, b"hello");
//!
//! conn.close(0, b"bye");
//! client.wait_idle().await; // let the CONNECTION_CLOSE leave
//! # Ok(()) }
//! ```
//!
//! An endpoint is cheap to clone. Dropping the last clone stops accepting new
//! connections; [`Endpoint::close`] also closes the open ones, and
//! [`Endpoint::wait_idle`] waits until they are gone.
//! A server that should use every core binds a [`WorkerGroup`]: one socket
//! per thread on the same port (`SO_REUSEPORT`), each with its own
//! connections.
//!
//! ## Connections
//!
//! A [`Connection`] is a handle, cheap to clone; dropping the last clone and
//! all its streams closes it with code 0. [`Connection::close`] closes it
//! with an application error code and reason the peer sees;
//! [`Connection::closed`] waits until it has ended and says why. It also
//! reports what it negotiated and measured: [`Connection::alpn`],
//! [`Connection::cipher_suite`], [`Connection::quic_version`],
//! [`Connection::rtt`], [`Connection::stats`] (packets, bytes, losses, ECN
//! marks) and [`Connection::ecn_state`].
//!
//! A handshake that cannot succeed ends at once when the network says so:
//! an ICMP port unreachable (nothing listens there) or host unreachable
//! about one of its packets fails it with
//! [`ConnectionError::Unreachable`], as `connect(2)` gives ECONNREFUSED,
//! rather than after the handshake timeout. A server drops a half-open
//! connection the same way. The report must quote the packet's connection
//! IDs, so only the path can forge one; after the handshake such reports
//! are ignored (a brief route change must not end a working connection).
//!
//! A server name often has several addresses (`localhost` is `::1` and
//! `127.0.0.1` on many systems, and a server may listen on one of them).
//! [`Endpoint::connect_first`] tries them all, a little apart as RFC 8305
//! does for TCP, and returns the first connection whose handshake completes
//! (bind the client to `[::]:0` to reach both families):
//!
//! ```no_run
//! # use quark::{Endpoint, tls};
//! # async fn demo(config: quark::ClientConfig) -> Result<(), Box<dyn std::error::Error>> {
//! let client = Endpoint::client("[::]:0".parse()?)?;
//! let addrs: Vec<_> = tokio::net::lookup_host("localhost:4433").await?.collect();
//! let conn = client
//!     .connect_first(config, &addrs, "localhost", quark::connect_first::ATTEMPT_DELAY)
//!     .await?;
//! # Ok(()) }
//! ```
//!
//! ## Streams
//!
//! [`Connection::open_bi`] and [`Connection::open_uni`] open streams;
//! the peer takes them with [`Connection::accept_bi`] and
//! [`Connection::accept_uni`]. Opening waits while the peer's stream limit
//! (`MAX_STREAMS`, RFC 9000 §4.6) is reached. Opening sends nothing: the peer
//! learns of a stream from its first frame, so it accepts the stream only once
//! something is written or the stream is finished.
//!
//! Writing: [`SendStream::write_all`], or [`SendStream::write_chunk`] to hand
//! over `Bytes` without a copy; [`SendStream::finish`] ends the stream (FIN),
//! [`SendStream::reset`] abandons it with a code. Reading:
//! [`RecvStream::read`], [`RecvStream::read_chunk`],
//! [`RecvStream::read_to_end`] (with a size limit: the peer decides how much
//! it sends), and [`RecvStream::stop`] to ask the peer to stop sending.
//! Received bytes are credited back to the peer's flow control only as they
//! are read, so a slow reader slows the sender instead of filling memory.
//! Both halves implement tokio's I/O traits, so `tokio::io::copy`,
//! `BufReader` and codecs work on them:
//!
//! ```
//! # use quark::{Endpoint, tls};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! # let identity = tls::Identity::self_signed(&["localhost"])?;
//! # let server = Endpoint::server(tls::server_config(&identity, &[b"t"])?, "127.0.0.1:0".parse()?)?;
//! # let config = tls::client_config(tls::Verify::Roots(vec![identity.cert.clone()]), &[b"t"])?;
//! # let client = Endpoint::client("127.0.0.1:0".parse()?)?;
//! # let connecting = client.connect(config, server.local_addr()?, "localhost")?;
//! # let (conn, incoming) = tokio::join!(connecting, server.accept());
//! # let (conn, incoming) = (conn?, incoming.ok_or("no connection")?);
//! use tokio::io::{AsyncBufReadExt, BufReader};
//!
//! // One side sends lines on a unidirectional stream...
//! let mut send = conn.open_uni().await?;
//! send.write_all(b"first line\nsecond line\n").await?;
//! send.finish()?;
//!
//! // ...the other reads them through tokio's AsyncRead.
//! let recv = incoming.accept_uni().await?;
//! let mut lines = BufReader::new(recv).lines();
//! assert_eq!(lines.next_line().await?.as_deref(), Some("first line"));
//! assert_eq!(lines.next_line().await?.as_deref(), Some("second line"));
//! assert_eq!(lines.next_line().await?, None); // FIN
//! # Ok(()) }
//! ```
//!
//! ## Configuration
//!
//! [`ServerConfig`] and [`ClientConfig`] pair a rustls configuration with a
//! [`TransportConfig`]; [`tls::server_config`] and [`tls::client_config`]
//! build them (TLS 1.3 only, as QUIC requires), and the `_with` variants
//! restrict the cipher suites ([`tls::cipher_suite`]: `aes128`, `aes256`,
//! `chacha20`). [`tls::Verify::CaFile`] trusts the certificates of a PEM
//! file, [`tls::Verify::Insecure`] any certificate (tests and benchmarks
//! only). [`EndpointConfig`] (with [`Endpoint::with_config`]) holds what all
//! of an endpoint's connections share: connection ID length, the QUIC
//! versions accepted ([`VERSION_1`], [`VERSION_2`]) and qlog.
//!
//! Each field of [`TransportConfig`] says what it sets or bounds, and its
//! default. The common changes:
//!
//! ```
//! use std::sync::Arc;
//! use std::time::Duration;
//! use quark::{CcAlgorithm, TransportConfig, tls};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let transport = Arc::new(TransportConfig {
//!     max_idle_timeout: Duration::from_secs(60),
//!     keep_alive: Some(Duration::from_secs(15)), // PINGs keep NAT bindings open
//!     congestion_control: CcAlgorithm::Cubic,     // or NewReno, Bbr (lossy paths)
//!     stream_receive_window: 4 << 20,             // bytes in flight per stream
//!     max_concurrent_bidi_streams: 1000,          // streams the peer may open
//!     max_datagram_frame_size: Some(1200),        // accept RFC 9221 datagrams
//!     ..TransportConfig::default()
//! });
//! let identity = tls::Identity::self_signed(&["localhost"])?;
//! let mut server = tls::server_config(&identity, &[b"app"])?;
//! server.transport = transport.clone();
//! server.retry = true; // validate client addresses with a Retry (RFC 9000 §8.1.2)
//! let mut client = tls::client_config(tls::Verify::Insecure, &[b"app"])?;
//! client.transport = transport;
//! # Ok(()) }
//! ```
//!
//! Each connection also gives its client a token for the next one
//! (NEW_TOKEN, valid for `ServerConfig::new_token_lifetime`, 24 h): a client
//! that comes back with it, from the same address, skips the Retry. Clients
//! keep tokens in `ClientConfig::token_store`, shared by clones of the
//! configuration, so reuse one configuration for a server you return to.
//!
//! What a server holds for its peers is bounded whatever they send: half-open
//! handshakes in total and per source, reassembly and send buffers, and one
//! [`MemoryBudget`] for all connections. SECURITY.md in the repository lists
//! every limit and its default.
//!
//! ### 0-RTT
//!
//! A client that resumes a session can send before the handshake completes.
//! Both sides opt in: [`ServerConfig::with_0rtt`] (single-use tickets, so a
//! replayed ClientHello gets a full handshake) and [`ClientConfig::with_0rtt`].
//! [`Connecting::into_0rtt`] then gives the connection at once; what is
//! written goes out in 0-RTT packets, and if the server rejects them quark
//! sends the data again after the handshake. [`Connection::handshake`] says
//! which happened. 0-RTT data can be replayed by an attacker: send only
//! requests that are safe to repeat.
//!
//! ```
//! # use quark::{Endpoint, tls};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let identity = tls::Identity::self_signed(&["localhost"])?;
//! let server_config = tls::server_config(&identity, &[b"t"])?.with_0rtt(1024);
//! let server = Endpoint::server(server_config, "127.0.0.1:0".parse()?)?;
//! # let addr = server.local_addr()?;
//! # tokio::spawn(async move {
//! #     while let Some(conn) = server.accept().await {
//! #         tokio::spawn(async move {
//! #             while let Ok((mut send, mut recv)) = conn.accept_bi().await {
//! #                 let body = recv.read_to_end(1024).await.unwrap();
//! #                 send.write_all(&body).await.unwrap();
//! #                 send.finish().unwrap();
//! #             }
//! #         });
//! #     }
//! # });
//! let config = tls::client_config(tls::Verify::Roots(vec![identity.cert.clone()]), &[b"t"])?
//!     .with_0rtt();
//! let client = Endpoint::client("127.0.0.1:0".parse()?)?;
//!
//! // A first connection brings the session ticket (a full handshake).
//! let first = client.connect(config.clone(), addr, "localhost")?.await?;
//! # let (mut send, mut recv) = first.open_bi().await?;
//! # send.write_all(b"first").await?;
//! # send.finish()?;
//! # recv.read_to_end(1024).await?;
//! first.close(0, b"");
//!
//! // The second resumes and writes its request before the handshake is done.
//! let conn = match client.connect(config, addr, "localhost")?.into_0rtt() {
//!     Ok(conn) => conn,
//!     Err(connecting) => connecting.await?, // no ticket: a full handshake
//! };
//! let (mut send, mut recv) = conn.open_bi().await?;
//! send.write_all(b"early").await?;
//! send.finish()?;
//! let accepted = conn.handshake().await?;
//! assert_eq!(recv.read_to_end(1024).await?, b"early"); // either way
//! println!("0-RTT accepted: {accepted}");
//! # Ok(()) }
//! ```
//!
//! ### Datagrams (RFC 9221)
//!
//! Unreliable datagrams travel in DATAGRAM frames, under the connection's
//! congestion control but never retransmitted. An endpoint takes them only
//! if it advertises [`TransportConfig::max_datagram_frame_size`]; sending
//! needs only the peer's advertisement. [`Connection::send_datagram`] queues
//! one (dropping the oldest queued when the queue is full),
//! [`Connection::send_datagram_wait`] waits for room instead, and
//! [`Connection::read_datagram`] receives. [`Connection::max_datagram_size`]
//! is the largest that fits a packet now.
//!
//! ```
//! # use std::sync::Arc;
//! # use quark::{Endpoint, TransportConfig, tls};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! let transport = Arc::new(TransportConfig {
//!     max_datagram_frame_size: Some(u16::MAX),
//!     ..TransportConfig::default()
//! });
//! # let identity = tls::Identity::self_signed(&["localhost"])?;
//! # let mut server_config = tls::server_config(&identity, &[b"t"])?;
//! server_config.transport = transport.clone();
//! # let server = Endpoint::server(server_config, "127.0.0.1:0".parse()?)?;
//! # let mut config = tls::client_config(tls::Verify::Roots(vec![identity.cert.clone()]), &[b"t"])?;
//! config.transport = transport;
//! # let client = Endpoint::client("127.0.0.1:0".parse()?)?;
//! # let connecting = client.connect(config, server.local_addr()?, "localhost")?;
//! # let (conn, incoming) = tokio::join!(connecting, server.accept());
//! # let (conn, incoming) = (conn?, incoming.ok_or("no connection")?);
//! assert!(conn.max_datagram_size().is_some_and(|max| max >= 1000));
//! conn.send_datagram(bytes::Bytes::from_static(b"ping"))?;
//! assert_eq!(incoming.read_datagram().await?, &b"ping"[..]);
//! # Ok(()) }
//! ```
//!
//! `examples/datagrams.rs` sends numbered datagrams to an echo server and
//! counts what comes back.
//!
//! ### qlog
//!
//! With [`EndpointConfig::qlog_dir`] set, or the `QLOGDIR` environment
//! variable ([`QLOGDIR_ENV`]) naming a directory, each connection writes
//! `<odcid hex>_<server|client>.sqlog` there (qlog 0.3, JSON-SEQ; open it in
//! qvis): transport parameters, every packet with its frames, losses,
//! congestion window and RTT updates, state changes. A writer thread does the
//! file I/O; with qlog off a connection pays one branch per packet.
//!
//! ```no_run
//! # fn main() -> std::io::Result<()> {
//! use quark::{Endpoint, EndpointConfig};
//!
//! let config = EndpointConfig {
//!     qlog_dir: Some("/tmp/qlog".into()),
//!     ..EndpointConfig::default()
//! };
//! let client = Endpoint::with_config(config, None, "127.0.0.1:0".parse().unwrap())?;
//! # Ok(()) }
//! ```
//!
//! `SSLKEYLOGFILE` names a file for the TLS secrets (NSS key log format), so
//! Wireshark can decrypt captured packets; never set it in production.
//!
//! ## Errors
//!
//! - [`ConnectionError`]: why a connection ended. The peer closed it
//!   (`ApplicationClosed` with its code and reason, or `ConnectionClosed`
//!   with a transport error code), we did (`LocallyClosed`, or
//!   `TransportError` when the peer broke the protocol and we sent the RFC's
//!   CONNECTION_CLOSE code), `TimedOut` (idle timeout), `SendTimedOut` (the
//!   peer let nothing progress), `Reset` (stateless reset),
//!   `VersionMismatch`. Every stream and datagram call returns it once the
//!   connection is gone.
//! - [`WriteError`]: `Stopped(code)` (the peer sent STOP_SENDING),
//!   `ClosedStream`, or `ConnectionLost`.
//! - [`ReadError`]: `Reset(code)` (the peer sent RESET_STREAM), `Stopped`,
//!   `TooLong` (over `read_to_end`'s limit), or `ConnectionLost`.
//!   Both convert into `std::io::Error`, as the I/O traits need.
//! - [`SendDatagramError`]: the peer takes no datagrams, the datagram is too
//!   large, or the connection is not established.
//! - [`ConnectError`] from [`Endpoint::connect`] (bad server name, a version
//!   the endpoint does not support) and [`tls::TlsError`] from building
//!   configurations (unreadable PEM files, unknown cipher suite).
//!
//! ```
//! # use quark::{Endpoint, tls};
//! use quark::{ConnectionError, ReadError};
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
//! # let identity = tls::Identity::self_signed(&["localhost"])?;
//! # let server = Endpoint::server(tls::server_config(&identity, &[b"t"])?, "127.0.0.1:0".parse()?)?;
//! # let config = tls::client_config(tls::Verify::Roots(vec![identity.cert.clone()]), &[b"t"])?;
//! # let client = Endpoint::client("127.0.0.1:0".parse()?)?;
//! # let connecting = client.connect(config, server.local_addr()?, "localhost")?;
//! # let (conn, incoming) = tokio::join!(connecting, server.accept());
//! # let (conn, incoming) = (conn?, incoming.ok_or("no connection")?);
//! // The server abandons a stream with application code 7...
//! let (mut send, mut recv) = conn.open_bi().await?;
//! send.write_all(b"request").await?;
//! let (mut server_send, _server_recv) = incoming.accept_bi().await?;
//! server_send.reset(7)?;
//! assert_eq!(recv.read_to_end(1024).await, Err(ReadError::Reset(7)));
//!
//! // ...then closes the connection with code 42.
//! incoming.close(42, b"going away");
//! match conn.closed().await {
//!     ConnectionError::ApplicationClosed { code, reason } => {
//!         assert_eq!((code, reason.as_str()), (42, "going away"));
//!     }
//!     other => panic!("closed otherwise: {other}"),
//! }
//! # Ok(()) }
//! ```
//!
//! ## Examples
//!
//! Runnable programs in `crates/quark/examples/`, shown in full in
//! [`examples`]:
//!
//! | example | what it shows | run it |
//! |---|---|---|
//! | [`echo_server`](examples#echo_server) | accepting connections and streams; a self-signed certificate written for clients | `cargo run -p quark --example echo_server -- 127.0.0.1:4433 /tmp/echo.pem` |
//! | [`echo_client`](examples#echo_client) | opening streams; trusting one certificate file | `cargo run -p quark --example echo_client -- 127.0.0.1:4433 /tmp/echo.pem hello` |
//! | [`download`](examples#download) | an hq-interop (HTTP/0.9) download hashed as it arrives; serves itself without arguments | `cargo run -p quark --example download` |
//! | [`datagrams`](examples#datagrams) | RFC 9221 datagrams echoed and checked | `cargo run -p quark --example datagrams` |
//!
//! HTTP/3 is in the `quark-h3` crate (examples `h3_server`, `h3_client`); the
//! `quark` command line (`quark serve`, `quark get`, `quark bench`) is in
//! `quark-cli`.

#[cfg(doc)]
use crate::{
    ClientConfig, ConnectError, Connecting, Connection, ConnectionError, Endpoint, EndpointConfig,
    MemoryBudget, QLOGDIR_ENV, ReadError, RecvStream, SendDatagramError, SendStream, ServerConfig,
    TransportConfig, VERSION_1, VERSION_2, WorkerGroup, WriteError, tls,
};

pub mod examples;
