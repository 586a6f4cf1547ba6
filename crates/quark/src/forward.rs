//! Hand-over of datagrams between the workers of a [`crate::WorkerGroup`].
//!
//! The kernel spreads datagrams over the workers' sockets by their 4-tuple, so a
//! connection's datagrams normally reach the worker that owns it. When they do
//! not (the client's address changed, a NAT rebound), the receiving worker sees
//! from the destination connection ID which worker issued it and passes the
//! datagram over a bounded in-process channel instead of creating state for it.
//!
//! ICMP Packet Too Big reports are hashed the same way, by the address the
//! datagram they quote went to: after a client moved, to whichever worker its
//! new address hashes to. A short header's quote names only the client's
//! ID, so that worker cannot tell the owner: when no connection of its own
//! fits, it passes the report to every other worker (at most 16 a second).

use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use quark_proto::EcnCodepoint;
use tokio::sync::mpsc;

/// Datagrams waiting for one worker, at most. Beyond that they are dropped, as a
/// congested network would; the sender's recovery resends.
pub(crate) const INBOX_CAPACITY: usize = 1024;

/// A datagram, or an ICMP report, received by one worker for another.
pub(crate) struct Forwarded {
    pub(crate) remote: SocketAddr,
    pub(crate) local_ip: Option<IpAddr>,
    pub(crate) ecn: Option<EcnCodepoint>,
    pub(crate) data: Vec<u8>,
    pub(crate) kind: Kind,
}

/// What a [`Forwarded`] carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A datagram from `remote`.
    Datagram,
    /// An ICMP Packet Too Big about a datagram we sent to `remote`, quoting
    /// its start (`data`): that path carries at most `size` bytes of UDP
    /// payload. `handed`: a worker found no connection of its own it fits
    /// and passed it on (so it goes no further); otherwise the test hook
    /// misdelivered it.
    TooBig { size: u16, handed: bool },
}

impl Forwarded {
    /// A too-big report about a datagram we sent to `remote`, quoting its
    /// start (see [`Kind::TooBig`]).
    pub(crate) fn too_big(remote: SocketAddr, quoted: &[u8], size: u16, handed: bool) -> Self {
        Forwarded {
            remote,
            local_ip: None,
            ecn: None,
            data: quoted.to_vec(),
            kind: Kind::TooBig { size, handed },
        }
    }
}

/// One worker's receiving end.
pub(crate) type Inbox = mpsc::Receiver<Forwarded>;

/// Counters of one worker's hand-overs.
#[derive(Default)]
pub(crate) struct Counters {
    pub(crate) forwarded: AtomicU64,
    pub(crate) received: AtomicU64,
    pub(crate) dropped: AtomicU64,
    pub(crate) misdelivered: AtomicU64,
    pub(crate) reports_handed: AtomicU64,
}

/// What the workers of a group share.
pub(crate) struct Group {
    inboxes: Vec<mpsc::Sender<Forwarded>>,
    pub(crate) counters: Vec<Counters>,
    /// Test hook: 0 is off; `t + 1` sends every short-header datagram any other
    /// worker receives to worker `t`, as if the kernel had put it there.
    misdeliver: AtomicUsize,
}

impl Group {
    /// A group of `n` workers and their inboxes.
    pub(crate) fn new(n: usize) -> (Arc<Group>, Vec<Inbox>) {
        let (inboxes, receivers) = (0..n).map(|_| mpsc::channel(INBOX_CAPACITY)).unzip();
        let group = Group {
            inboxes,
            counters: (0..n).map(|_| Counters::default()).collect(),
            misdeliver: AtomicUsize::new(0),
        };
        (Arc::new(group), receivers)
    }

    pub(crate) fn set_misdeliver(&self, to: Option<usize>) {
        self.misdeliver
            .store(to.map_or(0, |t| t + 1), Ordering::Relaxed);
    }
}

/// A worker's place in its group.
#[derive(Clone)]
pub(crate) struct Link {
    pub(crate) index: usize,
    pub(crate) group: Arc<Group>,
}

impl Link {
    /// Pass a datagram whose connection ID names worker `to`.
    pub(crate) fn forward(&self, to: usize, datagram: Forwarded) {
        let counters = &self.group.counters[self.index];
        match self.group.inboxes.get(to).map(|tx| tx.try_send(datagram)) {
            Some(Ok(())) => counters.forwarded.fetch_add(1, Ordering::Relaxed),
            _ => counters.dropped.fetch_add(1, Ordering::Relaxed),
        };
    }

    /// Pass a too-big report no connection of this worker fits to every
    /// other worker: one of them may hold the connection whose packet
    /// `quoted` starts. The caller bounds how often.
    pub(crate) fn hand_over_too_big(&self, remote: SocketAddr, quoted: &[u8], size: u16) {
        let counters = &self.group.counters[self.index];
        for (i, tx) in self.group.inboxes.iter().enumerate() {
            if i == self.index {
                continue;
            }
            match tx.try_send(Forwarded::too_big(remote, quoted, size, true)) {
                Ok(()) => counters.reports_handed.fetch_add(1, Ordering::Relaxed),
                Err(_) => counters.dropped.fetch_add(1, Ordering::Relaxed),
            };
        }
    }

    /// Test hook: pretend the kernel delivered this datagram to worker `to`.
    pub(crate) fn misdeliver(&self, to: usize, datagram: Forwarded) {
        if let Some(tx) = self.group.inboxes.get(to)
            && tx.try_send(datagram).is_ok()
        {
            self.group.counters[self.index]
                .misdelivered
                .fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Where the test hook sends this worker's datagrams, if anywhere.
    pub(crate) fn misdeliver_target(&self) -> Option<usize> {
        match self.group.misdeliver.load(Ordering::Relaxed) {
            0 => None,
            t if t - 1 == self.index => None,
            t => Some(t - 1),
        }
    }

    /// Count a datagram taken from the inbox.
    pub(crate) fn received(&self) {
        self.group.counters[self.index]
            .received
            .fetch_add(1, Ordering::Relaxed);
    }
}
