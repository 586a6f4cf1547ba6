//! `quic-go`: hq-interop over quic-go (Go), which cannot run inside quark.
//!
//! Its lab children are a program of their own, `lab/quic-go` (built by
//! `interop/setup.sh` to `target/interop/quicgo-lab`): it takes the command
//! lines of `quark lab-server` / `quark lab-client` and speaks their line
//! protocol (see [`crate::child`]), so the orchestrator starts it instead of
//! quark ([`Adapter::external_child`]) and drives it like any other child.
//! In this process the adapter only names the protocol: serving or dialing
//! it in-process fails.

use std::sync::Arc;

use anyhow::bail;

use super::{Adapter, BoxFuture, Client, ClientConfig, ExternalChild, ServeConfig, Server};

/// The quic-go adapter.
#[derive(Debug)]
pub struct QuicGo;

/// Where `quark bench` finds the quic-go lab program.
pub const CHILD: ExternalChild = ExternalChild {
    file: "quicgo-lab",
    env: "QUARK_QUICGO_LAB",
};

impl Adapter for QuicGo {
    fn name(&self) -> &'static str {
        "quic-go"
    }

    fn about(&self) -> &'static str {
        "quic-go 0.65 QUIC (Go crypto/tls), hq-interop; its own program, built by interop/setup.sh"
    }

    fn external_child(&self) -> Option<ExternalChild> {
        Some(CHILD)
    }

    fn serve(&self, _: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        not_in_quark()
    }

    fn client(&self, _: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        not_in_quark()
    }
}

/// What serving or dialing quic-go in this process gives.
fn not_in_quark<T>() -> BoxFuture<'static, anyhow::Result<T>> {
    Box::pin(async {
        bail!(
            "quic-go runs in its own program ({}), not in quark",
            CHILD.file
        )
    })
}
