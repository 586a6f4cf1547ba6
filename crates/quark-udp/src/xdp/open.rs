//! Opening an [`XdpSocket`]: the interface and address, the kernel socket that
//! holds the port, the UMEM and rings, and the XDP program.

use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, SocketAddrV4};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use tokio::io::unix::AsyncFd;

use crate::socket::env_flag;

use super::config::{self, Attach, XdpConfig};
use super::neigh::Neighbours;
use super::netdev::{self, Interface};
use super::xsk::{self, Umem, Xsk};
use super::{Rx, Tx, XdpMode, XdpSocket, bpf, invalid, program, unsupported};

/// The XDP program attached to the interface, and its map. Dropping it detaches
/// the program (the link closes first: fields drop in order).
pub(super) struct Program {
    _link: OwnedFd,
    _prog: OwnedFd,
    _map: OwnedFd,
}

impl XdpSocket {
    /// Opens an AF_XDP socket for `addr` (IPv4; an unspecified address takes the
    /// interface's address, port 0 an ephemeral port) on the interface of
    /// `config`, and attaches the XDP program. Must be called inside a tokio
    /// runtime, from a thread in the network namespace of the interface.
    pub fn bind(addr: SocketAddr, config: &XdpConfig) -> io::Result<Self> {
        if tokio::runtime::Handle::try_current().is_err() {
            return Err(io::Error::other(
                "quark_udp::XdpSocket needs a tokio runtime",
            ));
        }
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
        let kernel = crate::UdpSocket::bind(SocketAddrV4::new(ip, addr.port()).into())?;
        let local = match kernel.local_addr()? {
            SocketAddr::V4(a) => a,
            SocketAddr::V6(a) => SocketAddrV4::new(ip, a.port()),
        };

        let frames = config.frames.max(config::MIN_FRAMES).next_power_of_two();
        let (rx_frames, tx_frames) = (frames / 2, frames / 2);
        let umem = Umem::new(frames)?;
        let mut xsk = Xsk::open(
            &umem,
            rx_frames,
            tx_frames,
            iface.index,
            config.queue,
            config.bind,
        )?;
        // Every receive frame starts in the fill ring; send frames start idle.
        xsk.fill.free(rx_frames);
        for i in 0..rx_frames {
            xsk.fill.push(Umem::frame(i));
        }
        xsk.fill.submit();
        let free = (rx_frames..umem.frames()).map(Umem::frame).rev().collect();

        let (program, native) = attach(&xsk, &iface, config, local)?;
        let mode = XdpMode {
            native,
            zerocopy: xsk.zerocopy,
        };
        tracing::debug!(interface = %name, %local, %mode, "AF_XDP socket ready");
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
        Ok(Self {
            _program: program,
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
            neigh: Mutex::new(Neighbours::new(&name, config.neighbours.clone())),
            kernel,
            local,
            iface,
            mode,
            udp_checksum: config.udp_checksum,
            // The switches of `UdpSocket::bind`, for running everything without.
            gso: AtomicBool::new(!env_flag("QUARK_NO_GSO")),
            gro: AtomicBool::new(!env_flag("QUARK_NO_GRO")),
            tx_pending: AtomicBool::new(false),
        })
    }
}

/// Creates the XSKMAP, points its entry for the queue at the socket, loads the
/// program and attaches it; returns it and whether it runs natively.
fn attach(
    xsk: &Xsk,
    iface: &Interface,
    config: &XdpConfig,
    local: SocketAddrV4,
) -> io::Result<(Program, bool)> {
    let map = bpf::create_xskmap(config.queue + 1)
        .map_err(|e| io::Error::new(e.kind(), format!("creating the XSKMAP: {e}")))?;
    bpf::update(map.as_fd(), config.queue, xsk.fd.as_raw_fd() as u32)?;
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
        match bpf::attach_xdp(prog.as_fd(), iface.index, flags) {
            Ok(link) => {
                let program = Program {
                    _link: link,
                    _prog: prog,
                    _map: map,
                };
                return Ok((program, native));
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
