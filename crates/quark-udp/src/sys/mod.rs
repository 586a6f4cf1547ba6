//! The Linux system-call layer, one module per mechanism: socket options
//! ([`options`]), control messages ([`cmsg`]), socket addresses ([`addr`]) and the
//! `sendmmsg`/`recvmmsg` backend ([`mmsg`]). A kernel-bypass backend (AF_XDP) would
//! be another module next to `mmsg`, driven by the same [`State`].

pub(crate) mod addr;
pub(crate) mod cmsg;
pub(crate) mod errqueue;
pub(crate) mod mmsg;
pub(crate) mod options;

use std::io;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

use crate::{MAX_GRO_SEGMENTS, MAX_GSO_SEGMENTS};

/// What one socket can do, detected at creation and updated when the kernel refuses
/// something. Atomics, because sends and receives share `&self`.
pub(crate) struct State {
    /// An `AF_INET6` socket (peers' IPv4 addresses are v4-mapped).
    pub(crate) v6: bool,
    /// The kernel accepted `getsockopt(UDP_SEGMENT)`.
    gso_supported: bool,
    /// The user's choice ([`crate::UdpSocket::set_gso`]).
    gso_wanted: AtomicBool,
    /// A GSO send failed: GSO stays off for this socket.
    gso_broken: AtomicBool,
    /// `UDP_GRO` is on.
    gro: AtomicBool,
    /// `sendmmsg` works (else a `sendmsg` loop).
    pub(crate) sendmmsg: AtomicBool,
    /// `recvmmsg` works (else a `recvmsg` loop).
    pub(crate) recvmmsg: AtomicBool,
    /// The kernel queues error reports for this socket (`IP_RECVERR`).
    pub(crate) reports: AtomicBool,
    /// A report may wait in the error queue: a send or receive returned a
    /// report's errno (see [`errqueue`]).
    pub(crate) reports_pending: AtomicBool,
    /// Fault injection for tests.
    #[cfg(test)]
    pub(crate) hooks: Hooks,
}

impl State {
    pub(crate) fn new(v6: bool, features: options::Features) -> Self {
        Self {
            v6,
            gso_supported: features.gso,
            gso_wanted: AtomicBool::new(true),
            gso_broken: AtomicBool::new(false),
            gro: AtomicBool::new(features.gro),
            sendmmsg: AtomicBool::new(true),
            recvmmsg: AtomicBool::new(true),
            reports: AtomicBool::new(false),
            reports_pending: AtomicBool::new(false),
            #[cfg(test)]
            hooks: Hooks::default(),
        }
    }

    /// Datagrams one send may carry: [`MAX_GSO_SEGMENTS`] with GSO, else 1.
    pub(crate) fn gso_segments(&self) -> usize {
        if self.gso_supported && self.gso_wanted.load(Relaxed) && !self.gso_broken.load(Relaxed) {
            MAX_GSO_SEGMENTS
        } else {
            1
        }
    }

    pub(crate) fn set_gso(&self, enabled: bool) {
        self.gso_wanted.store(enabled, Relaxed);
    }

    /// Turns GSO off for good after the kernel refused a GSO send that went out fine
    /// as separate datagrams.
    pub(crate) fn gso_failed(&self, error: &io::Error) {
        if !self.gso_broken.swap(true, Relaxed) {
            tracing::info!(%error, "UDP GSO send failed; GSO disabled on this socket");
        }
    }

    /// Datagrams one receive buffer may hold.
    pub(crate) fn gro_segments(&self) -> usize {
        if self.gro.load(Relaxed) {
            MAX_GRO_SEGMENTS
        } else {
            1
        }
    }

    pub(crate) fn set_gro(&self, enabled: bool) {
        self.gro.store(enabled, Relaxed);
    }

    /// Whether `error`, from a send or receive, may be a queued report's
    /// pending error (noted, so the queue is read): the call is worth
    /// making again.
    pub(crate) fn report_error(&self, error: &io::Error) -> bool {
        let report = self.reports.load(Relaxed)
            && error.raw_os_error().is_some_and(errqueue::is_report_errno);
        if report {
            self.reports_pending.store(true, Relaxed);
        }
        report
    }

    /// A `sendmmsg` sent fewer messages than asked: the kernel drops the
    /// error that stopped it, which may have been a queued report's pending
    /// error (so nothing else would say the queue holds one). Noted as
    /// possibly pending: a needless look at the queue costs one system call.
    pub(crate) fn sent_short(&self) {
        if self.reports.load(Relaxed) {
            self.reports_pending.store(true, Relaxed);
        }
    }

    /// Falls back from `sendmmsg` (or `recvmmsg`) to a loop of single calls.
    pub(crate) fn mmsg_missing(flag: &AtomicBool, call: &str) {
        if flag.swap(false, Relaxed) {
            tracing::debug!("{call} is not available (ENOSYS); using a loop of single calls");
        }
    }
}

/// Fault injection: each field, when set, makes the next matching system call fail
/// without reaching the kernel.
#[cfg(test)]
#[derive(Default)]
pub(crate) struct Hooks {
    /// errno for the next send whose first message uses GSO.
    pub(crate) gso_errno: std::sync::atomic::AtomicI32,
    /// errno for the next send of any kind (checked after `gso_errno`)...
    pub(crate) send_errno: std::sync::atomic::AtomicI32,
    /// ... once this many sends went through.
    pub(crate) send_errno_skip: std::sync::atomic::AtomicUsize,
    /// Pretend `sendmmsg` and `recvmmsg` don't exist.
    pub(crate) no_mmsg: AtomicBool,
    /// The next `sendmmsg` stops after this many messages (as the kernel's
    /// does when an error stops it after the first).
    pub(crate) short_send: std::sync::atomic::AtomicUsize,
}
