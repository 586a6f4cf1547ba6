//! Creating an AF_XDP socket: the UMEM (the packet memory shared with the kernel),
//! its fill and completion rings, the RX and TX rings, and the bind to one queue of
//! one interface.

use std::io;
use std::mem;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::time::{Duration, Instant};

use super::config::Bind;
use super::ring::{Mmap, Ring};

/// Bytes per UMEM frame: the page size, the largest aligned chunk the kernel takes.
pub(crate) const FRAME_SIZE: u32 = 4096;
/// Space the kernel keeps in front of a received packet in copy mode
/// (`XDP_PACKET_HEADROOM`), so a received frame holds at most
/// `FRAME_SIZE - RX_HEADROOM` bytes.
pub(crate) const RX_HEADROOM: u32 = 256;

/// `XDP_MAX_TX_SKB_BUDGET` (Linux 6.17): descriptors one copy-mode `sendto` may
/// send (default 32).
const XDP_MAX_TX_SKB_BUDGET: libc::c_int = 9;

/// How long a bind waits for a just-closed socket to release its queue (it takes
/// milliseconds); a queue held by a live socket stays EBUSY, reported after this.
const QUEUE_RELEASE_WAIT: Duration = Duration::from_millis(250);

/// The packet memory: `frames` frames of [`FRAME_SIZE`] bytes.
pub(crate) struct Umem {
    map: Mmap,
    frames: u32,
}

impl Umem {
    pub(crate) fn new(frames: u32) -> io::Result<Self> {
        let map = Mmap::anonymous(frames as usize * FRAME_SIZE as usize)?;
        Ok(Self { map, frames })
    }

    /// The address (UMEM offset) of frame `i`.
    pub(crate) fn frame(i: u32) -> u64 {
        u64::from(i) * u64::from(FRAME_SIZE)
    }

    /// The start of the frame holding `addr`.
    pub(crate) fn base(addr: u64) -> u64 {
        addr & !u64::from(FRAME_SIZE - 1)
    }

    /// `len` bytes at UMEM offset `addr`, if they lie within one frame.
    pub(crate) fn ptr(&self, addr: u64, len: usize) -> Option<*mut u8> {
        let end = addr.checked_add(len as u64)?;
        let frame_end = Self::base(addr) + u64::from(FRAME_SIZE);
        if end > frame_end || end > self.map.len() as u64 {
            return None;
        }
        // SAFETY: `addr + len` lies within the mapping (checked above).
        Some(unsafe { self.map.as_ptr().add(addr as usize) })
    }

    pub(crate) fn frames(&self) -> u32 {
        self.frames
    }
}

/// Fill-ring slots per receive frame (see [`Xsk::open`]).
pub(crate) const FILL_SLOTS_PER_FRAME: u32 = 2;

/// An AF_XDP socket with its four rings, bound to one queue.
pub(crate) struct Xsk {
    pub(crate) rx: Ring<libc::xdp_desc>,
    pub(crate) fill: Ring<u64>,
    pub(crate) tx: Ring<libc::xdp_desc>,
    pub(crate) comp: Ring<u64>,
    pub(crate) fd: OwnedFd,
    /// The bind gave zero-copy mode.
    pub(crate) zerocopy: bool,
}

impl Xsk {
    /// Creates the socket on `umem`, with rings for `rx_frames` receive and
    /// `tx_frames` send frames (powers of two), and binds it to queue `queue` of
    /// interface `ifindex`. The fill ring is left empty.
    pub(crate) fn open(
        umem: &Umem,
        rx_frames: u32,
        tx_frames: u32,
        ifindex: u32,
        queue: u32,
        bind: Bind,
    ) -> io::Result<Self> {
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            let e = io::Error::last_os_error();
            return Err(io::Error::new(e.kind(), format!("socket(AF_XDP): {e}")));
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let reg = libc::xdp_umem_reg {
            addr: umem.map.as_ptr() as u64,
            len: umem.map.len() as u64,
            chunk_size: FRAME_SIZE,
            headroom: 0,
            flags: 0,
            tx_metadata_len: 0,
        };
        setsockopt(fd.as_fd(), libc::XDP_UMEM_REG, &reg, "XDP_UMEM_REG")?;
        // The kernel publishes the RX producer before the fill ring's consumer
        // (xsk_flush), so for a moment frames we have received still occupy
        // fill slots; twice the frames leaves room to give every one back.
        let fill_slots = FILL_SLOTS_PER_FRAME * rx_frames;
        setsockopt(
            fd.as_fd(),
            libc::XDP_UMEM_FILL_RING,
            &fill_slots,
            "fill ring",
        )?;
        setsockopt(
            fd.as_fd(),
            libc::XDP_UMEM_COMPLETION_RING,
            &tx_frames,
            "completion ring",
        )?;
        setsockopt(fd.as_fd(), libc::XDP_RX_RING, &rx_frames, "RX ring")?;
        setsockopt(fd.as_fd(), libc::XDP_TX_RING, &tx_frames, "TX ring")?;

        // SAFETY: all-zero is a valid `xdp_mmap_offsets` (integers).
        let mut off: libc::xdp_mmap_offsets = unsafe { mem::zeroed() };
        let mut len = size_of::<libc::xdp_mmap_offsets>() as libc::socklen_t;
        // SAFETY: the kernel writes at most `len` bytes into `off` and updates `len`.
        let rc = unsafe {
            libc::getsockopt(
                fd.as_raw_fd(),
                libc::SOL_XDP,
                libc::XDP_MMAP_OFFSETS,
                (&mut off as *mut libc::xdp_mmap_offsets).cast(),
                &mut len,
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        if len as usize != size_of::<libc::xdp_mmap_offsets>() {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "the kernel's AF_XDP rings have no flags word (Linux 5.4 or later needed)",
            ));
        }
        let fill = Ring::map(
            fd.as_fd(),
            &off.fr,
            fill_slots,
            libc::XDP_UMEM_PGOFF_FILL_RING,
            true,
        )?;
        let comp = Ring::map(
            fd.as_fd(),
            &off.cr,
            tx_frames,
            libc::XDP_UMEM_PGOFF_COMPLETION_RING,
            false,
        )?;
        let rx = Ring::map(
            fd.as_fd(),
            &off.rx,
            rx_frames,
            libc::XDP_PGOFF_RX_RING as u64,
            false,
        )?;
        let tx = Ring::map(
            fd.as_fd(),
            &off.tx,
            tx_frames,
            libc::XDP_PGOFF_TX_RING as u64,
            true,
        )?;

        let mode = match bind {
            // No mode flag: the kernel tries zero-copy and falls back to copy.
            Bind::Auto => 0,
            Bind::Copy => libc::XDP_COPY,
            Bind::ZeroCopy => libc::XDP_ZEROCOPY,
        };
        let addr = libc::sockaddr_xdp {
            sxdp_family: libc::AF_XDP as u16,
            sxdp_flags: mode | libc::XDP_USE_NEED_WAKEUP,
            sxdp_ifindex: ifindex,
            sxdp_queue_id: queue,
            sxdp_shared_umem_fd: 0,
        };
        // A socket on this queue closed just before (the previous `quark get`,
        // say) is released asynchronously: the queue is EBUSY for a moment.
        let deadline = Instant::now() + QUEUE_RELEASE_WAIT;
        let bound = loop {
            // SAFETY: `addr` is a valid `sockaddr_xdp` of the length given.
            let rc = unsafe {
                libc::bind(
                    fd.as_raw_fd(),
                    (&addr as *const libc::sockaddr_xdp).cast(),
                    size_of::<libc::sockaddr_xdp>() as libc::socklen_t,
                )
            };
            if rc == 0 {
                break Ok(());
            }
            let e = io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EBUSY) || Instant::now() >= deadline {
                break Err(e);
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        if let Err(e) = bound {
            return Err(io::Error::new(
                e.kind(),
                format!("bind(AF_XDP, ifindex {ifindex}, queue {queue}, {bind:?}): {e}"),
            ));
        }
        // Let one copy-mode `sendto` take the whole TX ring (newer kernels only).
        if let Err(error) = setsockopt(fd.as_fd(), XDP_MAX_TX_SKB_BUDGET, &tx_frames, "budget") {
            tracing::debug!(%error, "XDP_MAX_TX_SKB_BUDGET unavailable; 32 frames per sendto");
        }
        let zerocopy = options(fd.as_fd()).is_ok_and(|o| o & libc::XDP_OPTIONS_ZEROCOPY != 0);
        Ok(Self {
            rx,
            fill,
            tx,
            comp,
            fd,
            zerocopy,
        })
    }
}

/// The kernel's drop counters for the socket `fd`.
pub(crate) fn statistics(fd: BorrowedFd<'_>) -> io::Result<libc::xdp_statistics> {
    // SAFETY: all-zero is a valid `xdp_statistics` (integers).
    let mut stats: libc::xdp_statistics = unsafe { mem::zeroed() };
    let mut len = size_of::<libc::xdp_statistics>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `stats`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_STATISTICS,
            (&mut stats as *mut libc::xdp_statistics).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(stats)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `XDP_OPTIONS`: whether the bind gave zero-copy.
fn options(fd: BorrowedFd<'_>) -> io::Result<u32> {
    let mut flags: u32 = 0;
    let mut len = size_of::<u32>() as libc::socklen_t;
    // SAFETY: the kernel writes at most `len` bytes into `flags`.
    let rc = unsafe {
        libc::getsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            libc::XDP_OPTIONS,
            (&mut flags as *mut u32).cast(),
            &mut len,
        )
    };
    if rc == 0 {
        Ok(flags)
    } else {
        Err(io::Error::last_os_error())
    }
}

/// `setsockopt(SOL_XDP, name, value)`, naming `what` in the error.
fn setsockopt<T>(fd: BorrowedFd<'_>, name: libc::c_int, value: &T, what: &str) -> io::Result<()> {
    // SAFETY: the kernel reads `size_of::<T>()` bytes from `value`, a live,
    // initialised plain-data value.
    let rc = unsafe {
        libc::setsockopt(
            fd.as_raw_fd(),
            libc::SOL_XDP,
            name,
            (value as *const T).cast(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        let e = io::Error::last_os_error();
        Err(io::Error::new(e.kind(), format!("AF_XDP {what}: {e}")))
    }
}
