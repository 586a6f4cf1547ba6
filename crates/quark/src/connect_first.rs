//! `Endpoint::connect_first`: a name that resolves to several addresses
//! (`localhost` to `::1` and `127.0.0.1`, a dual-stack host) is reached on
//! whichever answers first, as RFC 8305 ("Happy Eyeballs") does for TCP.
//!
//! Over UDP an address that does not answer gives no error (no RST): an
//! ICMP error comes back at best (a closed port, an unreachable host; quark
//! reads those and the attempt fails at once, `ConnectionError::Unreachable`),
//! and a host that is down or a filter that drops says nothing, so the
//! attempt would only end with the handshake timeout. Attempts therefore
//! start one after another, a short delay apart (at once after one failed),
//! while the earlier ones keep going; the first handshake to complete wins
//! and the others are dropped (closed).

use std::future::poll_fn;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::Poll;
use std::time::{Duration, Instant};

use quark_proto::{ClientConfig, ConnectError, ConnectionError};

use crate::alarm::Alarm;
use crate::connection::{Connecting, Connection};
use crate::endpoint::Endpoint;

/// RFC 8305 §5's recommended delay between connection attempts.
pub const ATTEMPT_DELAY: Duration = Duration::from_millis(250);

/// The delay after an attempt on a loopback address, whose answer takes
/// microseconds: RFC 8305 §5 bases the delay on the expected round trip,
/// with 10 ms as its floor. `localhost` is often `::1` first and then
/// `127.0.0.1`, with the server on only one of them.
pub const LOOPBACK_ATTEMPT_DELAY: Duration = Duration::from_millis(10);

/// How long to give an attempt on `addr` before the next starts.
fn delay_after(addr: SocketAddr, attempt_delay: Duration) -> Duration {
    match addr.ip().is_loopback() {
        true => attempt_delay.min(LOOPBACK_ATTEMPT_DELAY),
        false => attempt_delay,
    }
}

/// Why [`Endpoint::connect_first`] found no connection.
#[derive(Debug, thiserror::Error)]
pub enum ConnectFirstError {
    /// The list of addresses was empty.
    #[error("no address to connect to")]
    NoAddress,
    /// The configuration could not start a connection (the same for every
    /// address: a bad server name, an unsupported version).
    #[error(transparent)]
    Connect(#[from] ConnectError),
    /// An attempt failed on an answer from the server (it refused the
    /// handshake: that ends the race), or every attempt timed out or met an
    /// ICMP error (the last to fail).
    #[error("{addr}: {error}")]
    Failed {
        /// The address of the last attempt to fail.
        addr: SocketAddr,
        /// Its error.
        error: ConnectionError,
    },
}

/// The order to try `addrs` in (RFC 8305 §4): families alternate, starting
/// with the first address's, each keeping the resolver's order (which
/// already follows RFC 6724's preferences). Repeats are dropped.
pub fn attempt_order(addrs: &[SocketAddr]) -> Vec<SocketAddr> {
    let mut unique: Vec<SocketAddr> = Vec::with_capacity(addrs.len());
    for a in addrs {
        if !unique.contains(a) {
            unique.push(*a);
        }
    }
    let Some(first) = unique.first() else {
        return unique;
    };
    let first_v6 = first.is_ipv6();
    let (same, other): (Vec<SocketAddr>, Vec<SocketAddr>) =
        unique.iter().partition(|a| a.is_ipv6() == first_v6);
    let (mut same, mut other) = (same.into_iter(), other.into_iter());
    let mut order = Vec::with_capacity(unique.len());
    loop {
        match (same.next(), other.next()) {
            (None, None) => return order,
            (a, b) => order.extend(a.into_iter().chain(b)),
        }
    }
}

/// Of `addrs`, those a socket bound to `local` reaches: an IPv6 socket is
/// dual-stack (quark-udp clears `IPV6_V6ONLY`), an IPv4 one reaches IPv4.
pub fn reachable(addrs: &[SocketAddr], local: SocketAddr) -> Vec<SocketAddr> {
    addrs
        .iter()
        .copied()
        .filter(|a| local.is_ipv6() || a.is_ipv4())
        .collect()
}

/// Where a client endpoint for `addrs` binds, and which of them it then
/// reaches: `[::]:0` (dual-stack) when some are IPv6 and, if some are IPv4
/// too, this host can bind IPv6 (a probe socket); else `0.0.0.0:0` and the
/// IPv4 ones.
pub fn client_bind(addrs: &[SocketAddr]) -> (SocketAddr, Vec<SocketAddr>) {
    let v6: SocketAddr = (std::net::Ipv6Addr::UNSPECIFIED, 0).into();
    let (some_v6, some_v4) = (
        addrs.iter().any(SocketAddr::is_ipv6),
        addrs.iter().any(SocketAddr::is_ipv4),
    );
    let local = match some_v6 && (!some_v4 || std::net::UdpSocket::bind(v6).is_ok()) {
        true => v6,
        false => (std::net::Ipv4Addr::UNSPECIFIED, 0).into(),
    };
    (local, reachable(addrs, local))
}

impl Endpoint {
    /// Connect to whichever of `addrs` completes a handshake first. The
    /// addresses are tried in [`attempt_order`]; the next attempt starts
    /// `attempt_delay` after the last one ([`ATTEMPT_DELAY`] is RFC 8305's
    /// choice; after a loopback address [`LOOPBACK_ATTEMPT_DELAY`] if
    /// shorter), or at once when one fails, and earlier attempts go on
    /// meanwhile. The losers are closed when the winner is returned. An
    /// attempt refused by its server (not one that timed out or met an ICMP
    /// error, [`ConnectionError::Unreachable`]) ends the race with its error,
    /// as the other addresses serve the same name.
    ///
    /// Bind the endpoint to `[::]:0` (dual-stack) when `addrs` has both
    /// families ([`client_bind`] says where). Each attempt is bounded by the handshake timeout of
    /// `config`'s transport settings; bound the whole with
    /// `tokio::time::timeout` if that is too long. 0-RTT is not attempted:
    /// use [`Endpoint::connect`] on the address that answered.
    pub async fn connect_first(
        &self,
        config: ClientConfig,
        addrs: &[SocketAddr],
        server_name: &str,
        attempt_delay: Duration,
    ) -> Result<Connection, ConnectFirstError> {
        let mut waiting = attempt_order(addrs).into_iter();
        let first = waiting.next().ok_or(ConnectFirstError::NoAddress)?;
        let mut attempts: Vec<(SocketAddr, Connecting)> =
            vec![(first, self.connect(config.clone(), first, server_name)?)];
        let mut failed: Option<(SocketAddr, ConnectionError)> = None;
        // Rung by the endpoint's driver, on its own timer: a runtime
        // without tokio's timer runs this as it runs quark, and a
        // caller-driven endpoint's waits see it. Made only if a second
        // address waits.
        let mut alarm: Option<Alarm> = None;
        let mut next_due = Instant::now() + delay_after(first, attempt_delay);
        poll_fn(|cx| {
            loop {
                let mut one_failed = false;
                let mut i = 0;
                while i < attempts.len() {
                    match Pin::new(&mut attempts[i].1).poll(cx) {
                        Poll::Ready(Ok(conn)) => return Poll::Ready(Ok(conn)),
                        Poll::Ready(Err(error)) => {
                            let (addr, _) = attempts.swap_remove(i);
                            tracing::debug!(%addr, %error, "connection attempt failed");
                            // Silence or an ICMP error is about this
                            // address; any other failure means the server
                            // there answered and refused (its certificate, a
                            // TLS alert, no common version): the others,
                            // which share its name, would too.
                            let about_address = matches!(
                                error,
                                ConnectionError::TimedOut | ConnectionError::Unreachable { .. }
                            );
                            if !about_address {
                                return Poll::Ready(Err(ConnectFirstError::Failed { addr, error }));
                            }
                            failed = Some((addr, error));
                            one_failed = true;
                        }
                        Poll::Pending => i += 1,
                    }
                }
                let now = Instant::now();
                if one_failed || now >= next_due {
                    if let Some(addr) = waiting.next() {
                        match self.connect(config.clone(), addr, server_name) {
                            Ok(c) => attempts.push((addr, c)),
                            // Every address shares the configuration, so
                            // this cannot differ from the first's outcome;
                            // should it, the address is skipped.
                            Err(error) => tracing::debug!(%addr, %error, "cannot connect"),
                        }
                        next_due = now + delay_after(addr, attempt_delay);
                        continue; // poll the new attempt
                    }
                }
                if attempts.is_empty() {
                    // Each attempt removed failed: `failed` holds the last.
                    return Poll::Ready(Err(match failed.take() {
                        Some((addr, error)) => ConnectFirstError::Failed { addr, error },
                        None => ConnectFirstError::NoAddress,
                    }));
                }
                if !waiting.as_slice().is_empty() {
                    alarm
                        .get_or_insert_with(|| Alarm::new(self.shared.clone()))
                        .set(next_due, cx.waker());
                }
                return Poll::Pending;
            }
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addrs(list: &[&str]) -> Vec<SocketAddr> {
        list.iter().map(|a| a.parse().unwrap()).collect()
    }

    #[test]
    fn a_socket_reaches_its_family_or_both_when_dual_stack() {
        let mixed = addrs(&["127.0.0.1:1", "[::1]:1"]);
        let (local, reached) = client_bind(&addrs(&["127.0.0.1:1"]));
        assert!(local.is_ipv4() && reached == addrs(&["127.0.0.1:1"]));
        let (local, reached) = client_bind(&addrs(&["[::1]:1"]));
        assert!(local.is_ipv6() && reached == addrs(&["[::1]:1"]));
        let (local, reached) = client_bind(&mixed);
        // IPv6 where this host has it, else IPv4 alone.
        assert_eq!(reached, reachable(&mixed, local));
        assert_eq!(
            reachable(&mixed, "0.0.0.0:0".parse().unwrap()),
            addrs(&["127.0.0.1:1"])
        );
        assert_eq!(reachable(&mixed, "[::]:0".parse().unwrap()), mixed);
    }

    #[test]
    fn families_alternate_from_the_first_and_repeats_go() {
        let order = attempt_order(&addrs(&[
            "[::1]:1",
            "[2001:db8::1]:1",
            "[2001:db8::2]:1",
            "127.0.0.1:1",
            "[::1]:1",
            "192.0.2.1:1",
        ]));
        assert_eq!(
            order,
            addrs(&[
                "[::1]:1",
                "127.0.0.1:1",
                "[2001:db8::1]:1",
                "192.0.2.1:1",
                "[2001:db8::2]:1",
            ])
        );
        let order = attempt_order(&addrs(&[
            "127.0.0.1:1",
            "192.0.2.1:1",
            "192.0.2.2:1",
            "[::1]:1",
        ]));
        assert_eq!(
            order,
            addrs(&["127.0.0.1:1", "[::1]:1", "192.0.2.1:1", "192.0.2.2:1"])
        );
        assert!(attempt_order(&[]).is_empty());
    }
}
