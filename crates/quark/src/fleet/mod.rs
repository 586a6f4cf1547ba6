//! Running several quark servers as one (a fleet behind one address): the
//! secrets they must share so each accepts what another issued.
//!
//! - [`KeyFile`]: the stateless-reset key, the Retry/NEW_TOKEN token keys and
//!   the TLS session-ticket keys, read from one file, with rotation (a current
//!   key mints, earlier ones are still accepted).
//! - [`SharedTicketer`]: session tickets sealed with those keys, so a ticket
//!   one server issued resumes on any other (rustls' own ticketer makes a
//!   random key per process).
//!
//! Connection IDs that name the server (QUIC-LB) are
//! [`quark_proto::quic_lb`], set with `EndpointConfig::quic_lb`; steering
//! datagrams among processes on one host by connection ID is
//! `quark_udp::reuseport`.

mod keys;
mod tickets;

/// QUIC-LB connection IDs (the core's module, here for finding).
pub use quark_proto::quic_lb;

pub use keys::{KeyFile, KeyFileError, KeyId, MAX_KEYS_PER_KIND};
pub use tickets::{SharedTicketer, TICKET_LIFETIME_SECS};
