//! The programs in `crates/quark/examples/`, in full. Each builds with
//! `cargo build -p quark --examples` (CI does) and says at its top how to run it.
//!
//! ## echo_server
//!
//! Accepts connections and echoes every bidirectional stream; writes its
//! self-signed certificate for the client.
//!
#![doc = concat!("```rust,ignore\n", include_str!("../../examples/echo_server.rs"), "```")]
//!
//! ## echo_client
//!
//! Sends each message on a stream of its own and checks the echo.
//!
#![doc = concat!("```rust,ignore\n", include_str!("../../examples/echo_client.rs"), "```")]
//!
//! ## download
//!
//! Fetches a file over hq-interop and prints its SHA-256.
//!
#![doc = concat!("```rust,ignore\n", include_str!("../../examples/download.rs"), "```")]
//!
//! ## datagrams
//!
//! Unreliable datagrams (RFC 9221) echoed and checked byte for byte
//! (`tests/example_datagrams.rs` runs it).
//!
#![doc = concat!("```rust,ignore\n", include_str!("../../examples/datagrams.rs"), "```")]
