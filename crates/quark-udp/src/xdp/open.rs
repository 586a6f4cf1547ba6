//! Opening AF_XDP sockets: the XDP program and its XSKMAP ([`XdpProgram`], one per
//! address, shared by the sockets of its receive queues), then per socket the
//! kernel socket that holds the port, the UMEM and the rings.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use tokio::io::unix::AsyncFd;

use crate::socket::env_flag;

use super::config::{self, Attach, XdpConfig};
use super::neigh::Neighbours;
use super::netdev::{self, Interface};
use super::xsk::{self, Umem, Xsk};
use super::{Rx, Tx, XdpMode, XdpSocket, bpf, invalid, program, unsupported};

/// The XDP program that steers one address's datagrams to the AF_XDP sockets of
/// the interface's receive queues, through an XSKMAP with an entry per queue.
///
/// [`XdpSocket::bind`] makes one for its own queue. Several sockets, one per
/// queue, share one program (only one can be attached to an interface): a
/// server whose worker threads each serve a queue of a multi-queue interface
/// (`quark::WorkerGroup`). Each worker opens its socket with [`XdpProgram::open`]
/// inside its own runtime. Cheap to clone; the program is detached when the
/// last clone and the last socket opened from it are gone.
#[derive(Clone)]
pub struct XdpProgram {
    inner: Arc<Attached>,
}

/// The attached program and what every socket of it needs.
pub(super) struct Attached {
    // Dropping it detaches the program (the link closes first: fields drop in
    // order). The kernel takes a closed socket out of the map itself.
    _link: OwnedFd,
    _prog: OwnedFd,
    map: OwnedFd,
    iface: Interface,
    local: SocketAddrV4,
    queues: u32,
    native: bool,
    config: XdpConfig,
}

impl XdpProgram {
    /// Attaches the program for `addr` on queues `0..queues` of the interface
    /// of `config` (an unspecified address takes the interface's address). The
    /// port must be known: bind the kernel sockets for it first, with
    /// `SO_REUSEPORT` when there are several ([`crate::bind_std`]). Call from a
    /// thread in the network namespace of the interface.
    pub fn attach(addr: SocketAddr, config: &XdpConfig, queues: u32) -> io::Result<Self> {
        if addr.port() == 0 {
            return Err(invalid("an XDP program serves one port: bind it first"));
        }
        if queues == 0 {
            return Err(invalid("an XDP program serves at least one queue"));
        }
        let (iface, ip) = resolve(addr, config)?;
        attach(iface, SocketAddrV4::new(ip, addr.port()), config, queues)
    }

    /// The address the program serves.
    pub fn local_addr(&self) -> SocketAddr {
        SocketAddr::V4(self.inner.local)
    }

    /// How many receive queues it serves.
    pub fn queues(&self) -> u32 {
        self.inner.queues
    }

    /// Opens the AF_XDP socket for `queue` with `kernel`, a UDP socket bound to
    /// the program's port (on its address or the unspecified one), and adds it
    /// to the program's map. Must be called inside the tokio runtime that will
    /// drive the socket, from a thread in the interface's network namespace.
    /// `InvalidInput` when the interface has no such queue.
    pub fn open(&self, queue: u32, kernel: std::net::UdpSocket) -> io::Result<XdpSocket> {
        let a = &self.inner;
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other(
                "quark_udp::XdpSocket needs a tokio runtime",
            ));
        }
        if queue >= a.queues {
            return Err(invalid(&format!(
                "queue {queue}: the XDP program serves {} queue(s)",
                a.queues
            )));
        }
        if kernel.local_addr()?.port() != a.local.port() {
            return Err(invalid(
                "the kernel socket must be bound to the program's port",
            ));
        }
        let kernel = crate::UdpSocket::from_std(kernel)?;
        let frames = a.config.frames.max(config::MIN_FRAMES).next_power_of_two();
        let (rx_frames, tx_frames) = (frames / 2, frames / 2);
        let umem = Umem::new(frames)?;
        let mut xsk = Xsk::open(
            &umem,
            rx_frames,
            tx_frames,
            a.iface.index,
            queue,
            a.config.bind,
        )
        .map_err(|e| match e.kind() {
            // EINVAL: most likely no such queue.
            io::ErrorKind::InvalidInput => io::Error::new(
                e.kind(),
                format!("{e} (does {} have a receive queue {queue}?)", a.iface.name),
            ),
            _ => e,
        })?;
        // Every receive frame starts in the fill ring; send frames start idle.
        xsk.fill.free(rx_frames);
        for i in 0..rx_frames {
            xsk.fill.push(Umem::frame(i));
        }
        xsk.fill.submit();
        let free = (rx_frames..umem.frames()).map(Umem::frame).rev().collect();
        bpf::update(a.map.as_fd(), queue, xsk.fd.as_raw_fd() as u32)?;

        let mode = XdpMode {
            native: a.native,
            zerocopy: xsk.zerocopy,
        };
        tracing::debug!(interface = %a.iface.name, local = %a.local, queue, %mode, "AF_XDP socket ready");
        let Xsk {
            rx,
            fill,
            tx,
            comp,
            fd,
            ..
        } = xsk;
        // SAFETY: `fd` owns the socket's descriptor and moves into the `AsyncFd`,
        // which owns it until dropped; `OwnedFd::as_raw_fd` always returns it.
        let io = unsafe { AsyncFd::register(fd) }.map_err(io::Error::from)?;
        Ok(XdpSocket {
            _program: self.inner.clone(),
            rx: Mutex::new(Rx {
                ring: rx,
                fill,
                learned: None,
            }),
            tx: Mutex::new(Tx {
                ring: tx,
                comp,
                free,
                resolved: None,
            }),
            io,
            umem,
            neigh: Mutex::new(Neighbours::new(&a.iface.name, a.config.neighbours.clone())),
            kernel,
            local: a.local,
            iface: a.iface.clone(),
            queue,
            mode,
            udp_checksum: a.config.udp_checksum,
            // The switches of `UdpSocket::bind`, for running everything without.
            gso: AtomicBool::new(!env_flag("QUARK_NO_GSO")),
            gro: AtomicBool::new(!env_flag("QUARK_NO_GRO")),
            tx_pending: AtomicBool::new(false),
            rx_xdp: AtomicU64::new(0),
            rx_kernel: AtomicU64::new(0),
        })
    }
}

impl std::fmt::Debug for XdpProgram {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("XdpProgram")
            .field("interface", &self.inner.iface.name)
            .field("local_addr", &self.inner.local)
            .field("queues", &self.inner.queues)
            .field("native", &self.inner.native)
            .finish()
    }
}

impl XdpSocket {
    /// Opens an AF_XDP socket for `addr` (IPv4; an unspecified address takes the
    /// interface's address, port 0 an ephemeral port) on queue `config.queue` of
    /// the interface of `config`, and attaches the XDP program. Must be called
    /// inside a tokio runtime, from a thread in the network namespace of the
    /// interface.
    pub fn bind(addr: SocketAddr, config: &XdpConfig) -> io::Result<Self> {
        // (`open` checks for the runtime.)
        let (iface, ip) = resolve(addr, config)?;
        let kernel = crate::bind_std(SocketAddrV4::new(ip, addr.port()).into(), false)?;
        let local = match kernel.local_addr()? {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(a) => SocketAddrV4::new(ip, a.port()),
        };
        let program = attach(iface, local, config, config.queue + 1)?;
        program.open(config.queue, kernel)
    }
}

/// The interface and the IPv4 address a socket for `addr` serves.
fn resolve(addr: SocketAddr, config: &XdpConfig) -> io::Result<(Interface, Ipv4Addr)> {
    let ip = match addr.ip() {
        IpAddr::V4(ip) => ip,
        IpAddr::V6(ip) if ip.is_unspecified() => Ipv4Addr::UNSPECIFIED,
        IpAddr::V6(ip) => match ip.to_ipv4_mapped() {
            Some(ip) => ip,
            None => return Err(unsupported("AF_XDP sockets carry IPv4 only")),
        },
    };
    let name = match (&config.interface, ip.is_unspecified()) {
        (Some(name), _) => name.clone(),
        (None, false) => netdev::interface_with(ip)?,
        (None, true) => {
            return Err(invalid(
                "an AF_XDP socket on 0.0.0.0 needs an interface name",
            ));
        }
    };
    let iface = Interface::lookup(&name)?;
    let ip = match (ip.is_unspecified(), iface.ipv4) {
        (false, _) => ip,
        (true, Some(own)) => own,
        (true, None) => return Err(invalid(&format!("interface {name} has no IPv4 address"))),
    };
    Ok((iface, ip))
}

/// Creates the XSKMAP with `queues` entries, loads the program and attaches it,
/// natively when it can (per `config.attach`).
fn attach(
    iface: Interface,
    local: SocketAddrV4,
    config: &XdpConfig,
    queues: u32,
) -> io::Result<XdpProgram> {
    let map = bpf::create_xskmap(queues)
        .map_err(|e| io::Error::new(e.kind(), format!("creating the XSKMAP: {e}")))?;
    let max_len = (xsk::FRAME_SIZE - xsk::RX_HEADROOM) as u16;
    let insns = program::redirect_udp(map.as_raw_fd(), *local.ip(), local.port(), max_len);
    let prog = bpf::load_xdp(&insns)?;
    let modes: &[(u32, bool)] = match config.attach {
        Attach::Auto => &[
            (bpf::XDP_FLAGS_DRV_MODE, true),
            (bpf::XDP_FLAGS_SKB_MODE, false),
        ],
        Attach::Native => &[(bpf::XDP_FLAGS_DRV_MODE, true)],
        Attach::Generic => &[(bpf::XDP_FLAGS_SKB_MODE, false)],
    };
    let mut last = None;
    for &(flags, native) in modes {
        match attach_when_free(prog.as_fd(), iface.index, flags) {
            Ok(link) => {
                let inner = Arc::new(Attached {
                    _link: link,
                    _prog: prog,
                    map,
                    iface,
                    local,
                    queues,
                    native,
                    config: config.clone(),
                });
                return Ok(XdpProgram { inner });
            }
            Err(error) => {
                let what = if native { "native" } else { "generic" };
                tracing::debug!(%error, interface = %iface.name, "attaching {what} XDP failed");
                last = Some(io::Error::new(
                    error.kind(),
                    format!("attaching {what} XDP to {}: {error}", iface.name),
                ));
            }
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no XDP mode to try")))
}

/// How long an attach waits for the program of a just-closed socket to leave
/// the interface (its link is released asynchronously, like the queue: see
/// `xsk.rs`); a program held by a live socket stays, reported after this.
const PROGRAM_RELEASE_WAIT: Duration = Duration::from_millis(250);

/// [`bpf::attach_xdp`], retried while the interface still has the program of a
/// socket closed just before: EBUSY (its link, in the same mode) or EEXIST (in
/// the other mode).
fn attach_when_free(prog: BorrowedFd<'_>, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let deadline = Instant::now() + PROGRAM_RELEASE_WAIT;
    loop {
        match bpf::attach_xdp(prog, ifindex, flags) {
            Err(e)
                if matches!(e.raw_os_error(), Some(libc::EEXIST | libc::EBUSY))
                    && Instant::now() < deadline =>
            {
                std::thread::sleep(Duration::from_millis(10));
            }
            result => return result,
        }
    }
}
