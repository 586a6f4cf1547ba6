//! Reaching the server: every address its name resolves to, the first to
//! answer winning (RFC 8305, through `Endpoint::connect_first`), from a
//! socket that can reach them all.

use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use anyhow::{Context, anyhow, bail};
use quark::connect_first::{ATTEMPT_DELAY, client_bind};
use quark::{ClientConfig, ConnectFirstError, Connection, ConnectionError, Endpoint};

use super::Url;

/// `--resolve HOST:PORT:ADDR[,ADDR...]`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Resolve {
    host: String,
    port: u16,
    addrs: Vec<IpAddr>,
}

pub(crate) fn parse_resolve(s: &str) -> Result<Resolve, String> {
    let bad = |why: &str| format!("{s:?}: {why} (expected HOST:PORT:ADDR[,ADDR...])");
    let mut parts = s.splitn(3, ':');
    let (Some(host), Some(port), Some(list)) = (parts.next(), parts.next(), parts.next()) else {
        return Err(bad("missing fields"));
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = port.parse().map_err(|_| bad("bad port"))?;
    let addrs = list
        .split(',')
        .map(|a| {
            let a = a.trim();
            let a = a
                .strip_prefix('[')
                .and_then(|a| a.strip_suffix(']'))
                .unwrap_or(a);
            a.parse().map_err(|_| bad(&format!("bad address {a:?}")))
        })
        .collect::<Result<Vec<IpAddr>, String>>()?;
    Ok(Resolve {
        host: host.to_string(),
        port,
        addrs,
    })
}

/// The server's addresses: those `--resolve` gives for its host and port,
/// or what its name resolves to.
pub(super) async fn addresses(server: &Url, given: &[Resolve]) -> anyhow::Result<Vec<SocketAddr>> {
    if let Some(r) = given
        .iter()
        .find(|r| r.host.eq_ignore_ascii_case(&server.host) && r.port == server.port)
    {
        return Ok(r
            .addrs
            .iter()
            .map(|ip| SocketAddr::new(*ip, r.port))
            .collect());
    }
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((server.host.as_str(), server.port))
        .await
        .with_context(|| format!("cannot resolve {}", server.host))?
        .collect();
    if addrs.is_empty() {
        bail!("cannot resolve {}", server.host);
    }
    Ok(addrs)
}

/// An endpoint that can reach `addrs`, and those it can reach: dual-stack
/// when some are IPv6, IPv4 only where IPv6 cannot be bound here (its
/// addresses are then left out).
pub(super) fn bind(
    config: quark::EndpointConfig,
    addrs: &[SocketAddr],
) -> anyhow::Result<(Endpoint, Vec<SocketAddr>)> {
    let (local, reachable) = client_bind(addrs);
    let endpoint =
        Endpoint::with_config(config, None, local).context("cannot open a UDP socket")?;
    Ok((endpoint, reachable))
}

/// A connection to the first of `addrs` to answer within `timeout`. With a
/// single address it starts in 0-RTT when `config` can (then `true`).
pub(super) async fn dial(
    endpoint: &Endpoint,
    config: ClientConfig,
    addrs: &[SocketAddr],
    host: &str,
    timeout: Duration,
) -> anyhow::Result<(Connection, bool)> {
    let silent = || {
        let list: Vec<String> = addrs.iter().map(ToString::to_string).collect();
        anyhow!(
            "{}: no answer from the server within {}s",
            list.join(", "),
            timeout.as_secs()
        )
    };
    let outcome = if let [addr] = addrs {
        let connecting = endpoint.connect(config, *addr, host)?;
        let connecting = match connecting.into_0rtt() {
            Ok(conn) => return Ok((conn, true)),
            Err(connecting) => connecting,
        };
        let failed = |error| ConnectFirstError::Failed { addr: *addr, error };
        tokio::time::timeout(timeout, connecting)
            .await
            .map(|r| r.map_err(failed))
    } else {
        let racing = endpoint.connect_first(config, addrs, host, ATTEMPT_DELAY);
        tokio::time::timeout(timeout, racing).await
    };
    match outcome {
        Ok(Ok(conn)) => Ok((conn, false)),
        Err(_)
        | Ok(Err(ConnectFirstError::Failed {
            error: ConnectionError::TimedOut,
            ..
        })) => Err(silent()),
        Ok(Err(ConnectFirstError::Failed { addr, error })) => {
            Err(anyhow!("{addr}: connection failed: {error}"))
        }
        Ok(Err(e)) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_option() {
        let r = parse_resolve("example.test:4433:[::1],127.0.0.2, 10.0.0.1").unwrap();
        assert_eq!(r.host, "example.test");
        assert_eq!(r.port, 4433);
        let want: Vec<IpAddr> = ["::1", "127.0.0.2", "10.0.0.1"]
            .iter()
            .map(|a| a.parse().unwrap())
            .collect();
        assert_eq!(r.addrs, want);
        assert_eq!(
            parse_resolve("h:1:::1").unwrap().addrs,
            vec!["::1".parse::<IpAddr>().unwrap()]
        );
        for bad in [
            "h:1",
            "h",
            ":1:127.0.0.1",
            "h:x:127.0.0.1",
            "h:1:",
            "h:1:nope",
            "h:99999:::1",
        ] {
            assert!(parse_resolve(bad).is_err(), "{bad}");
        }
    }
}
