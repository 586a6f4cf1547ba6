//! An endpoint whose driver the caller polls itself ([`Endpoint::caller_driven`]):
//! no task is spawned, so the caller's thread runs the endpoint's I/O,
//! timers and protocol work between its own calls. libquark's caller-driven
//! mode uses it to avoid handing every call to a runtime thread and back.

use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::pin::Pin;
use std::task::{Context, Poll};

use quark_proto::{EndpointConfig, ServerConfig};
use quark_udp::Socket;

use crate::Endpoint;
use crate::driver::Driver;

/// The driver of an endpoint made by [`Endpoint::caller_driven`]: the round
/// that receives, fires timers, transmits and wakes waiting tasks. Nothing
/// happens on the endpoint unless it is polled.
pub struct Drive {
    driver: Driver,
}

impl Endpoint {
    /// Bind an endpoint whose driver is not spawned but returned: the caller
    /// polls [`Drive::poll`] (inside the tokio runtime the endpoint was
    /// created in, whose reactor must run for socket and timer readiness)
    /// after its own calls on the endpoint, when the socket is readable
    /// (`Drive::socket_fd`), and when the timer fires (`Drive::timer_fd`).
    /// Must be called in a tokio runtime.
    pub fn caller_driven(
        config: EndpointConfig,
        server: Option<ServerConfig>,
        socket: impl Into<Socket>,
    ) -> io::Result<(Self, Drive)> {
        let (endpoint, driver) = Self::build(config, server, socket.into(), None);
        Ok((endpoint, Drive { driver }))
    }
}

impl Drive {
    /// One round of the driver (or a few, within its budget). `Pending` with
    /// `cx`'s waker woken during the call: it wants another round soon (it
    /// ran out of budget, or put off transmitting for the tasks it woke to
    /// answer first). `Pending` otherwise: it waits for the socket, its
    /// timer, or a call on the endpoint (which wakes `cx`). `Ready` once the
    /// endpoint and all its connections are gone.
    pub fn poll(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.driver).poll(cx)
    }

    /// The timerfd that becomes readable at the driver's next deadline
    /// (`None` if the kernel refused one: the runtime's timer wheel wakes
    /// the driver then).
    pub fn timer_fd(&self) -> Option<RawFd> {
        self.driver.timer_fd()
    }
}
