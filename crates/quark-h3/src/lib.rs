//! # quark-h3: HTTP/3 (RFC 9114) over quark
//!
//! A client sends requests on new bidirectional streams; a server accepts
//! them. Field sections are QPACK-encoded (`quark-qpack`); with a dynamic
//! table capacity in [`Config`] (off by default, [`Config::dynamic_qpack`]:
//! 4096 bytes, 16 blocked streams) the table is used both ways: our encoder
//! and decoder streams carry the inserts and acknowledgments, and a request
//! stream whose field section needs inserts not yet received waits for them.
//! Capacity 0 is the static table only, with no QPACK streams. The table
//! is off by default because every section referencing it costs an
//! acknowledgment on the decoder stream: 13-16 % fewer requests per
//! CPU-second for a benchmark's 4-field heads (a browser's heads get 3-5 %
//! more, and their header bytes cut to a fifth;
//! `docs/results/2026-11-29-qpack/NOTES.md`).
//!
//! ```no_run
//! # async fn demo(conn: quark::Connection) -> Result<(), quark_h3::Error> {
//! let client = quark_h3::Client::new(conn).await?;
//! let req = http::Request::get("https://localhost/index.html").body(()).unwrap();
//! let mut stream = client.send_request(&req).await?;
//! stream.finish()?;
//! let resp = stream.recv_response().await?;
//! while let Some(chunk) = stream.recv_data().await? { /* ... */ }
//! # Ok(()) }
//! ```
//!
//! Runnable examples in `crates/quark-h3/examples/` (`cargo build --examples`):
//! `h3_server.rs` answers `GET` with a greeting and echoes `POST` bodies;
//! `h3_client.rs` sends one request and prints the response;
//! `qpack_cost.rs` measures requests per CPU-second with and without QPACK's
//! dynamic table.
//!
//! ```sh
//! cargo run -p quark-h3 --example h3_server -- 127.0.0.1:4443 /tmp/h3-cert.pem &
//! cargo run -p quark-h3 --example h3_client -- 127.0.0.1:4443 /tmp/h3-cert.pem /hello
//! ```
//!
//! | module | what lives there |
//! |---|---|
//! | `frame` | frame types, headers, GOAWAY |
//! | `settings` | the SETTINGS frame |
//! | `config` | [`Config`]: what we announce and allow |
//! | `qpack` | the connection's QPACK encoder, decoder and their streams |
//! | `reader` | frames read from a stream (bounded buffers) |
//! | `message` | HTTP messages to and from field lines, and their rules |
//! | [`head`] | [`RequestHead`], [`ResponseHead`]: heads without the `http` types |
//! | `pool` | buffers a connection reuses |
//! | [`priority`] | RFC 9218: the Priority field, PRIORITY_UPDATE, applying them |
//! | `connect` | Extended CONNECT (RFC 9220) and HTTP Datagrams (RFC 9297), both off by default |
//! | `conn` | control stream, the peer's unidirectional streams, connection errors |
//! | `request` | a request stream: HEADERS, DATA, trailers |
//! | `client`, `server` | the two ends' APIs |
//! | [`files`] | a file server and a fetch (`quark serve --h3`, `quark get --h3`) |
//! | `error` | HTTP/3 error codes |

#![warn(missing_docs)]

mod client;
mod config;
mod conn;
mod connect;
pub mod error;
pub mod files;
pub mod frame;
pub mod head;
mod message;
mod pool;
pub mod priority;
mod qpack;
mod reader;
mod request;
mod server;
pub mod settings;

pub use client::Client;
pub use config::{Config, QPACK_BLOCKED_STREAMS, QPACK_CAPACITY};
pub use connect::Protocol;
pub use error::Error;
pub use head::{Fields, RequestHead, ResponseHead};
pub use priority::Priority;
pub use request::RequestStream;
pub use server::Server;

/// The ALPN protocol name of HTTP/3.
pub const ALPN: &[u8] = b"h3";
