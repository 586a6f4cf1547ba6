//! TUN devices: a network interface whose IP packets this process reads and
//! writes (used by `quark link` to put an emulated link between two network
//! namespaces). Linux only; creating one needs `CAP_NET_ADMIN`. A device
//! opened with offloads hands over and takes the frames [`offload`] cuts and
//! joins, as a NIC would.

pub mod offload;

use std::fs::{File, OpenOptions};
use std::io::{self, IoSlice, Read, Write};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;

/// An open TUN device carrying bare IP packets (no packet-information header).
/// Reads block until a packet arrives; writes don't (the kernel takes the packet
/// as if a NIC had received it). Reads and writes may come from different
/// threads. The device disappears when this is dropped.
#[derive(Debug)]
pub struct Tun {
    file: File,
    name: String,
    offloads: bool,
}

/// What [`Tun::create_offloaded`] lets the kernel hand over unsegmented.
const OFFLOADS: [libc::c_uint; 2] = [
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6 | libc::TUN_F_USO4 | libc::TUN_F_USO6,
    // Kernels before 6.2 have no UDP segmentation offload.
    libc::TUN_F_CSUM | libc::TUN_F_TSO4 | libc::TUN_F_TSO6,
];

impl Tun {
    /// Creates the TUN device `name` (at most 15 bytes) in the current network
    /// namespace. It may later be moved to another namespace with
    /// `ip link set NAME netns NS`; this handle keeps working.
    pub fn create(name: &str) -> io::Result<Tun> {
        Self::open(name, libc::IFF_TUN | libc::IFF_NO_PI)
    }

    /// Creates a TUN device that behaves like a NIC with offloads: every read
    /// and write starts with a `virtio_net_hdr` (`IFF_VNET_HDR`); reads hand
    /// over TCP and UDP super-packets unsegmented, with checksums left to the
    /// reader (TSO, USO where the kernel has it, checksum offload); writes may
    /// be super-packets too, and may say their checksum was verified. Falls
    /// back to fewer offloads on kernels without USO.
    pub fn create_offloaded(name: &str) -> io::Result<Tun> {
        let mut tun = Self::open(name, libc::IFF_TUN | libc::IFF_NO_PI | libc::IFF_VNET_HDR)?;
        tun.offloads = true;
        let mut last = io::Error::from_raw_os_error(libc::EINVAL);
        for flags in OFFLOADS {
            // SAFETY: TUNSETOFFLOAD takes its flags by value and touches no
            // memory of ours; the descriptor is an attached TUN device.
            let rc = unsafe {
                libc::ioctl(
                    tun.file.as_raw_fd(),
                    libc::TUNSETOFFLOAD as _,
                    flags as libc::c_ulong,
                )
            };
            if rc == 0 {
                return Ok(tun);
            }
            last = io::Error::last_os_error();
        }
        Err(last)
    }

    /// Whether reads and writes carry a `virtio_net_hdr`.
    pub fn offloads(&self) -> bool {
        self.offloads
    }

    fn open(name: &str, flags: libc::c_int) -> io::Result<Tun> {
        let bytes = name.as_bytes();
        if bytes.is_empty()
            || bytes.len() >= libc::IFNAMSIZ
            || bytes
                .iter()
                .any(|&b| b == 0 || b == b'/' || b.is_ascii_whitespace())
        {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad interface name '{name}'"),
            ));
        }
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(libc::O_CLOEXEC)
            .open("/dev/net/tun")?;
        let mut ifr_name = [0 as libc::c_char; libc::IFNAMSIZ];
        for (d, &s) in ifr_name.iter_mut().zip(bytes) {
            *d = s as libc::c_char;
        }
        let mut req = libc::ifreq {
            ifr_name,
            ifr_ifru: libc::__c_anonymous_ifr_ifru {
                ifru_flags: flags as libc::c_short,
            },
        };
        // SAFETY: `file` is an open /dev/net/tun descriptor and `req` a valid,
        // initialised `struct ifreq` that outlives the call; TUNSETIFF reads the
        // name and flags and writes the (same) name back into it.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), libc::TUNSETIFF as _, &mut req) };
        if rc < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tun {
            file,
            name: name.to_string(),
            offloads: false,
        })
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Reads one IP packet (behind a `virtio_net_hdr` with offloads), waiting
    /// for it.
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<usize> {
        (&self.file).read(buf)
    }

    /// Writes one IP packet.
    pub fn send(&self, packet: &[u8]) -> io::Result<usize> {
        (&self.file).write(packet)
    }

    /// Writes one frame from parts in one system call: a `virtio_net_hdr`,
    /// then the packet (whole, or a super-packet's headers and its segments'
    /// payloads).
    pub fn send_parts(&self, parts: &[IoSlice<'_>]) -> io::Result<usize> {
        (&self.file).write_vectored(parts)
    }
}

impl AsRawFd for Tun {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

impl AsFd for Tun {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_bad_names() {
        for bad in ["", "a-name-that-is-too-long", "a/b", "a b", "a\0b"] {
            let e = Tun::create(bad).unwrap_err();
            assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{bad:?}");
        }
    }

    #[test]
    fn creates_a_device_when_allowed() {
        // Needs CAP_NET_ADMIN and /dev/net/tun; otherwise there is nothing to test.
        let name = format!("qtt{}", std::process::id() % 100_000);
        match Tun::create(&name) {
            Ok(t) => {
                assert_eq!(t.name(), name);
                assert!(std::path::Path::new("/sys/class/net").join(&name).exists());
                drop(t);
                // The kernel unregisters the device asynchronously (it waits for the
                // RTNL lock, which the namespace tests beside this one also take).
                let gone = (0..200).any(|_| {
                    let exists = std::path::Path::new("/sys/class/net").join(&name).exists();
                    if exists {
                        std::thread::sleep(std::time::Duration::from_millis(10));
                    }
                    !exists
                });
                assert!(gone, "{name} still exists 2 s after closing it");
                let o = Tun::create_offloaded(&name).expect("offloads (TSO at least)");
                assert!(o.offloads());
                assert!(!Tun::create(&format!("{name}p")).unwrap().offloads());
            }
            Err(e) => eprintln!("skipped: cannot create a TUN device: {e}"),
        }
    }
}
