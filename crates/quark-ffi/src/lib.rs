//! # libquark: quark's QUIC behind a blocking, socket-like C API
//!
//! The C header is `include/quark.h`, generated from this crate by cbindgen
//! (`tests/header.rs` fails when it is stale; `QUARK_BLESS=1` rewrites it).
//!
//! | call | like |
//! |---|---|
//! | `quark_listen` (PEM files), `quark_listen_pem` (PEM in memory) / `quark_accept` | `bind` + `listen` / `accept` on an endpoint |
//! | `quark_connect` (`quark_connect_with`: chosen cipher suites) | `connect`: handshake done when it returns |
//! | `quark_stream_open` / `quark_stream_accept` | a bidirectional stream |
//! | `quark_stream_read` / `quark_stream_write` / `quark_stream_shutdown` | `read` / `write` / `shutdown(SHUT_WR)` |
//! | `quark_close` | `close` for any handle |
//! | `quark_close_nowait` | `close` without `SO_LINGER`: a connection lingers in the endpoint, not in the call |
//! | `quark_stream_open_uni` / `quark_stream_accept_uni` | a unidirectional stream (write-only / read-only) |
//! | `quark_set_nonblocking` | `O_NONBLOCK`: `QUARK_ERROR_AGAIN` instead of waiting |
//! | `quark_ready_fd` / `quark_ready` | an fd for poll / epoll / select, and which handles are ready |
//! | `quark_listen_flags` / `quark_listen_pem_flags` / `quark_connect_flags` | the same with options: `QUARK_FLAG_CALLER_DRIVEN`, `QUARK_FLAG_NO_RESUMPTION`, `QUARK_FLAG_NO_SPIN_BIT` |
//! | `quark_process` | caller-driven mode: run the endpoint's I/O and timers on the calling thread |
//! | `quark_client` / `quark_connect_on` (`_pem`: the CA roots in memory) | a client endpoint shared by many connections (one socket); on a non-blocking endpoint the connect returns before the handshake |
//! | `quark_connected` | `getsockopt(SO_ERROR)` after a non-blocking connect: is the handshake done |
//! | `quark_resumed` | `SSL_session_reused`: did the handshake resume a TLS session |
//! | `quark_stream_write_ref` / `quark_stream_read_with` | a write that lends the buffer, a read that visits the data in place (no copy at the boundary) |
//! | `quark_process_ready` / `quark_stream_write_ref_fin` | `quark_process` + `quark_ready`, `quark_stream_write_ref` + `quark_stream_shutdown`: one call each instead of two |
//! | `quark_stream_read_with_fin` / `QUARK_FLAG_NONBLOCKING` | a read that also says the stream ended (no read for the end); every handle of an endpoint non-blocking from the start (`SOCK_NONBLOCK`) |
//! | `quark_stream_writev` | `writev` (+ `shutdown(SHUT_WR)` with `fin`): a message's head, body and end in one call |
//! | `quark_on_work` | caller-driven mode: a callback when the endpoint gets work for `quark_process` |
//! | `quark_conn_stats` | `getsockopt(TCP_INFO)`: a connection's datagram size, PMTU probes, PTOs, losses |
//!
//! Handles are positive `int64_t`s indexing a table with generation
//! counters: a closed or stale handle gives `QUARK_ERROR_BAD_HANDLE`, never
//! undefined behaviour. Every call returns a negative `QuarkError` on
//! failure, and a panic inside is caught and returned as
//! `QUARK_ERROR_INTERNAL`. By default calls block on one tokio runtime the
//! library makes on first use (its thread drives every endpoint); do not
//! call them from inside an async runtime's task. An endpoint made with
//! `QUARK_FLAG_CALLER_DRIVEN` has no library thread: the caller's thread
//! runs it inside `quark_process` (module `driven`), so no call crosses
//! threads.
//!
//! Rust callers that may not use `unsafe` reach the pointer-taking calls
//! through [`call`] (slices and C strings, same entry points). The lab's
//! `quic-c` protocol (`quark bench -p quic,quic-c`) uses it to measure what
//! this boundary costs: the lab's shared hq-interop workload driven through
//! these functions only, with non-blocking handles and `quark_ready_fd` as an
//! event-loop C program would, against `quic` (quark's Rust API) in one run;
//! CPU per GB and per request in `docs/results/2026-11-29-quic-c/`.

#![warn(missing_docs)]

pub mod call;
mod client;
mod conn;
mod driven;
mod error;
mod handshake;
mod lend;
mod nowait;
mod object;
mod options;
mod ready;
mod stats;
mod stream;
mod table;
mod tls_cache;

pub use client::{
    quark_client, quark_connect_on, quark_connect_on_pem, quark_connected, quark_resumed,
};
pub use conn::{
    quark_accept, quark_close, quark_connect, quark_connect_with, quark_listen, quark_listen_pem,
    quark_local_port, quark_set_nonblocking, quark_stream_accept, quark_stream_accept_uni,
    quark_stream_open, quark_stream_open_uni,
};
pub use error::{QuarkError, quark_strerror};
pub use lend::{
    quark_stream_read_with, quark_stream_read_with_fin, quark_stream_write_ref,
    quark_stream_write_ref_fin,
};
pub use nowait::quark_close_nowait;
pub use options::{
    QUARK_FLAG_CALLER_DRIVEN, QUARK_FLAG_NO_RESUMPTION, QUARK_FLAG_NO_SPIN_BIT,
    QUARK_FLAG_NONBLOCKING, quark_connect_flags, quark_listen_flags, quark_listen_pem_flags,
    quark_on_work, quark_process, quark_process_ready,
};
pub use ready::{quark_ready, quark_ready_fd};
pub use stats::{QuarkConnStats, quark_conn_stats};
pub use stream::{
    QUARK_IOV_MAX, QuarkIovec, quark_stream_read, quark_stream_shutdown, quark_stream_write,
    quark_stream_writev,
};
