//! Memory per idle connection: open many connections, hold them idle, and
//! read how much the server's RSS grew per connection.

use std::time::Duration;

use quark_proto::TransportConfig;

use crate::Target;
use crate::peer::Peers;
use crate::watch::rss;

/// What holding `n` idle connections cost the server.
#[derive(Clone, Debug, serde::Serialize)]
pub struct IdleCost {
    /// Connections held (established).
    pub connections: usize,
    /// Connections that did not complete their handshake (left out of the
    /// figures; their state is small and counted in the growth).
    pub failed: usize,
    /// The server's RSS before and with them.
    pub rss: (u64, u64),
    /// Growth per connection, in bytes.
    pub per_connection: f64,
    /// This process's RSS (the clients' side: quark-proto client connections
    /// on a bare endpoint, no runtime) before and with them.
    pub client_rss: (u64, u64),
    /// The clients' growth per connection, in bytes.
    pub client_per_connection: f64,
}

/// Open `n` connections to `target` in waves of `wave` (so handshakes stay
/// within the server's per-source limit), hold them idle, and measure.
pub fn idle_cost(target: &Target, n: usize, wave: usize) -> anyhow::Result<IdleCost> {
    let pid = target
        .pid
        .ok_or_else(|| anyhow::anyhow!("the server's pid is needed (--server-pid)"))?;
    let before = rss(pid).ok_or_else(|| anyhow::anyhow!("cannot read the RSS of pid {pid}"))?;
    let client_before = rss(std::process::id()).unwrap_or(0);
    let transport = TransportConfig {
        max_idle_timeout: Duration::from_secs(600),
        keep_alive: Some(Duration::from_secs(20)),
        ..TransportConfig::default()
    };
    let mut peers = Peers::new(target, transport)?;
    let (mut tried, mut open) = (0, 0);
    while tried < n {
        let batch = wave.min(n - tried);
        open += peers.connect_wave(batch, Duration::from_secs(30))?;
        tried += batch;
        // More than one in a hundred lost: the figure would mean little.
        if tried - open > 10 + tried / 100 {
            anyhow::bail!("{} of {tried} handshakes failed", tried - open);
        }
    }
    // Let the handshakes' leftovers (tickets, ACKs) settle.
    peers.pump(Duration::from_secs(2))?;
    let with = rss(pid).ok_or_else(|| anyhow::anyhow!("the server went away"))?;
    let client_with = rss(std::process::id()).unwrap_or(0);
    Ok(IdleCost {
        connections: open,
        failed: n - open,
        rss: (before, with),
        per_connection: (with as f64 - before as f64) / open as f64,
        client_rss: (client_before, client_with),
        client_per_connection: (client_with as f64 - client_before as f64) / open as f64,
    })
}
