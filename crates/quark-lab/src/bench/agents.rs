//! Sides on other hosts (`quark agent`): the bench's checks and the
//! placement record.

use std::net::SocketAddr;

use anyhow::bail;

use crate::agent::{Placement, RemoteAgent};

/// Where the two sides run: an agent each, or here (`None`).
#[derive(Debug, Clone, Default)]
pub struct Agents {
    /// The server's agent.
    pub server: Option<RemoteAgent>,
    /// The client's agent.
    pub client: Option<RemoteAgent>,
}

impl Agents {
    pub(super) fn any(&self) -> bool {
        self.server.is_some() || self.client.is_some()
    }

    /// Sides on two hosts: the server must listen where the client's host reaches it.
    pub(super) fn check(&self, listen: SocketAddr) -> anyhow::Result<()> {
        let remote =
            |a: &Option<RemoteAgent>| a.as_ref().is_some_and(|a| !a.addr.ip().is_loopback());
        let (server_remote, client_remote) = (remote(&self.server), remote(&self.client));
        let ip = listen.ip();
        if (server_remote || client_remote) && ip.is_loopback() {
            bail!(
                "--addr {ip}: the client's host cannot reach a loopback server; give an address it can (0.0.0.0 on a server agent)"
            );
        }
        if self.server.is_none() && client_remote && ip.is_unspecified() {
            bail!("--addr {ip}: give this host's address as the client's agent reaches it");
        }
        Ok(())
    }

    /// Reaches each agent (a clear error now rather than in every cell), and
    /// measures the path between the two hosts.
    pub(super) async fn placement(&self) -> anyhow::Result<Placement> {
        let here = || crate::agent::SideHost {
            host: crate::agent::hostname(),
            agent: None,
        };
        let mut sides = [here(), here()];
        for (side, agent) in sides.iter_mut().zip([&self.server, &self.client]) {
            if let Some(a) = agent {
                let (host, _) = a.ping(3).await?;
                *side = crate::agent::SideHost {
                    host,
                    agent: Some(a.addr.to_string()),
                };
            }
        }
        let [server, client] = sides;
        // Probed at the server agent's address; a local server's address as the
        // client's host sees it is unknown: no probe then.
        let rtt_ms = match &self.server {
            Some(s) => crate::agent::probe_rtt(self.client.as_ref(), s.addr).await,
            None => None,
        };
        Ok(Placement {
            server,
            client,
            rtt_ms,
        })
    }
}
