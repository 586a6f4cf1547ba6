//! `quark get --0rtt` and `--resume`: rustls keeps session tickets in its
//! configuration's memory and offers no way to save them, so a run first
//! makes a connection of its own to get one, then resumes with it.

use std::net::SocketAddr;
use std::time::Duration;

use anyhow::anyhow;
use quark::{ClientConfig, Connecting, Connection, Endpoint};

/// Wait for a connection's handshake, within `timeout`.
pub(super) async fn established(
    connecting: Connecting,
    addr: SocketAddr,
    timeout: Duration,
) -> anyhow::Result<Connection> {
    tokio::time::timeout(timeout, connecting)
        .await
        .map_err(|_| {
            anyhow!(
                "{addr}: no answer from the server within {}s",
                timeout.as_secs()
            )
        })?
        .map_err(|e| anyhow!("{addr}: connection failed: {e}"))
}

/// A connection that only completes its handshake and lingers until the
/// server's session tickets (sent right after it) have arrived.
pub(super) async fn prime(
    endpoint: &Endpoint,
    config: &ClientConfig,
    addr: SocketAddr,
    host: &str,
    timeout: Duration,
) -> anyhow::Result<()> {
    let connecting = endpoint.connect(config.clone(), addr, host)?;
    let conn = established(connecting, addr, timeout).await?;
    await_tickets(&conn).await;
    conn.close(0, b"ticket");
    Ok(())
}

/// Give the server's session tickets time to arrive: they travel with
/// HANDSHAKE_DONE, about a round trip after the client's Finished (rustls
/// does not say when one is stored).
pub(super) async fn await_tickets(conn: &Connection) {
    tokio::time::sleep(2 * conn.rtt() + Duration::from_millis(20)).await;
}
