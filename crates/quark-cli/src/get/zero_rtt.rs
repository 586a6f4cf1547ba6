//! `quark get --0rtt` and `--resume`: rustls keeps session tickets in its
//! configuration's memory and offers no way to save them, so a run first
//! makes a connection of its own to get one, then resumes with it.

use std::net::SocketAddr;
use std::time::Duration;

use quark::{ClientConfig, Connection, Endpoint};

/// A connection that only completes its handshake and lingers until the
/// server's session tickets (sent right after it) have arrived.
/// Returns the address that answered, for the connection that resumes.
pub(super) async fn prime(
    endpoint: &Endpoint,
    config: &ClientConfig,
    addrs: &[SocketAddr],
    host: &str,
    timeout: Duration,
) -> anyhow::Result<SocketAddr> {
    let (conn, _) = super::dial::dial(endpoint, config.clone(), addrs, host, timeout).await?;
    let answered = conn.remote_address();
    await_tickets(&conn).await;
    conn.close(0, b"ticket");
    Ok(answered)
}

/// Give the server's session tickets time to arrive: they travel with
/// HANDSHAKE_DONE, about a round trip after the client's Finished (rustls
/// does not say when one is stored).
pub(super) async fn await_tickets(conn: &Connection) {
    tokio::time::sleep(2 * conn.rtt() + Duration::from_millis(20)).await;
}
