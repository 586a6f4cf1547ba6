//! A connect's handshake while it is under way: to one address, or a race
//! over several (RFC 8305, `quark::Endpoint::connect_first`), whichever
//! mode the endpoint runs in (threaded, caller-driven, non-blocking).

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::task::{Context, Poll};

use quark::connect_first::ATTEMPT_DELAY;
use quark::{ConnectFirstError, Connecting, Connection, Endpoint};

use crate::error::QuarkError;

type Race = Pin<Box<dyn Future<Output = Result<Connection, ConnectFirstError>> + Send>>;

pub(crate) enum Handshake {
    One(Connecting),
    Race(Race),
}

impl Handshake {
    /// Starts connecting to `addrs` on `endpoint`; call inside the runtime
    /// that drives it. With one address its first Initial is built now;
    /// with several, when first polled.
    pub(crate) fn start(
        endpoint: &Endpoint,
        config: quark::ClientConfig,
        addrs: Vec<SocketAddr>,
        name: &str,
    ) -> Result<Self, QuarkError> {
        match addrs[..] {
            [] => Err(QuarkError::Inval),
            [addr] => endpoint
                .connect(config, addr, name)
                .map(Handshake::One)
                .map_err(|_| QuarkError::Connect),
            _ => {
                let (endpoint, name) = (endpoint.clone(), name.to_owned());
                Ok(Handshake::Race(Box::pin(async move {
                    endpoint
                        .connect_first(config, &addrs, &name, ATTEMPT_DELAY)
                        .await
                })))
            }
        }
    }
}

impl Future for Handshake {
    type Output = Result<Connection, QuarkError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Handshake::One(c) => Pin::new(c).poll(cx).map_err(|e| QuarkError::handshake(&e)),
            Handshake::Race(race) => race.as_mut().poll(cx).map_err(QuarkError::from),
        }
    }
}
