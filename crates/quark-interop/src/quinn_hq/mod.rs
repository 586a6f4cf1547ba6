//! An hq-interop (HTTP/0.9 over QUIC) client and server on quinn, the
//! `quinn-hq` binary's engine.
//!
//! hq-interop: the client opens a bidirectional stream, sends `GET /path\r\n`
//! and FIN; the server answers with the file's bytes and FIN, or resets the
//! stream when it will not serve the path.

pub mod client;
pub mod request;
pub mod server;
pub mod tls;
