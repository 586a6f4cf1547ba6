//! Interop testing for quark: `quinn-hq` (an hq-interop peer on quinn) and
//! the harness that runs client/server pairs of quark, quinn, aioquic and
//! quic-go against each other and compares every downloaded file by SHA-256.

#![warn(missing_docs)]

pub mod harness;
pub mod quinn_hq;
