//! Facts about a network interface (index, MAC address, MTU, IPv4 address) and the
//! kernel's routing and neighbour tables, as seen from the calling thread's network
//! namespace: ioctls on a socket created here, and `/proc/thread-self/net/*`
//! (not `/sys/class/net`, which shows the namespace sysfs was mounted in).

use std::io;
use std::net::Ipv4Addr;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

use super::wire::Mac;

/// What quark needs to know about the interface it sends on.
#[derive(Debug, Clone)]
pub(crate) struct Interface {
    pub(crate) name: String,
    pub(crate) index: u32,
    pub(crate) mac: Mac,
    pub(crate) mtu: usize,
    /// Its (first) IPv4 address, if any.
    pub(crate) ipv4: Option<Ipv4Addr>,
}

impl Interface {
    /// Looks `name` up in the calling thread's network namespace.
    pub(crate) fn lookup(name: &str) -> io::Result<Self> {
        if name.is_empty() || name.len() >= libc::IFNAMSIZ {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("bad interface name {name:?}"),
            ));
        }
        // SAFETY: plain system call; the result is checked.
        let fd = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `fd` was just opened and is owned by nobody else.
        let sock = unsafe { OwnedFd::from_raw_fd(fd) };
        let ioctl = |request: libc::c_ulong| -> io::Result<libc::ifreq> {
            // SAFETY: all-zero is a valid `ifreq` (integers and a union of them).
            let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
            for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
                *dst = src as libc::c_char;
            }
            // SAFETY: `req` is a valid `ifreq` with a NUL-terminated name; these
            // SIOCGIF* requests only write into it.
            let rc = unsafe { libc::ioctl(sock.as_raw_fd(), request as _, &mut req) };
            if rc < 0 {
                Err(io::Error::last_os_error())
            } else {
                Ok(req)
            }
        };
        let not_found = |e: io::Error| io::Error::new(e.kind(), format!("interface {name}: {e}"));
        let index = ioctl(libc::SIOCGIFINDEX).map_err(not_found)?;
        // SAFETY: SIOCGIFINDEX wrote `ifru_ifindex`.
        let index = unsafe { index.ifr_ifru.ifru_ifindex } as u32;
        let hw = ioctl(libc::SIOCGIFHWADDR)?;
        // SAFETY: SIOCGIFHWADDR wrote `ifru_hwaddr`.
        let hw = unsafe { hw.ifr_ifru.ifru_hwaddr };
        if hw.sa_family != libc::ARPHRD_ETHER {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                format!(
                    "interface {name} is not Ethernet (ARP type {})",
                    hw.sa_family
                ),
            ));
        }
        let mut mac = [0u8; 6];
        for (m, b) in mac.iter_mut().zip(hw.sa_data) {
            *m = b as u8;
        }
        let mtu = ioctl(libc::SIOCGIFMTU)?;
        // SAFETY: SIOCGIFMTU wrote `ifru_mtu`.
        let mtu = unsafe { mtu.ifr_ifru.ifru_mtu }.max(0) as usize;
        let ipv4 = ioctl(libc::SIOCGIFADDR).ok().map(|req| {
            // SAFETY: SIOCGIFADDR wrote `ifru_addr`, an AF_INET `sockaddr_in` whose
            // address bytes sit at `sa_data[2..6]`.
            let sa = unsafe { req.ifr_ifru.ifru_addr };
            Ipv4Addr::new(
                sa.sa_data[2] as u8,
                sa.sa_data[3] as u8,
                sa.sa_data[4] as u8,
                sa.sa_data[5] as u8,
            )
        });
        Ok(Self {
            name: name.to_string(),
            index,
            mac,
            mtu,
            ipv4,
        })
    }
}

/// The interface holding `ip`, in the calling thread's network namespace.
pub(crate) fn interface_with(ip: Ipv4Addr) -> io::Result<String> {
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: `getifaddrs` fills `list` with a linked list we free below.
    if unsafe { libc::getifaddrs(&mut list) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let mut found = None;
    let mut cur = list;
    while !cur.is_null() {
        // SAFETY: `cur` is a node of the list `getifaddrs` returned, alive until
        // `freeifaddrs`.
        let node = unsafe { &*cur };
        cur = node.ifa_next;
        if node.ifa_addr.is_null() {
            continue;
        }
        // SAFETY: a non-null `ifa_addr` points at a socket address whose family
        // says how long it is.
        let family = unsafe { (*node.ifa_addr).sa_family };
        if i32::from(family) != libc::AF_INET {
            continue;
        }
        // SAFETY: an AF_INET address is a whole `sockaddr_in`.
        let sin = unsafe { &*node.ifa_addr.cast::<libc::sockaddr_in>() };
        if Ipv4Addr::from(sin.sin_addr.s_addr.to_ne_bytes()) == ip {
            // SAFETY: `ifa_name` is a NUL-terminated string owned by the list.
            let name = unsafe { std::ffi::CStr::from_ptr(node.ifa_name) };
            found = Some(name.to_string_lossy().into_owned());
            break;
        }
    }
    // SAFETY: `list` came from `getifaddrs` and is freed once; `found` owns a copy.
    unsafe { libc::freeifaddrs(list) };
    found.ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::AddrNotAvailable,
            format!("no interface has the address {ip}"),
        )
    })
}

/// The gateway to use for `dst` through interface `ifname`, from the kernel's IPv4
/// routes (`/proc/thread-self/net/route`, longest prefix wins): `None` when `dst`
/// is on-link (or no route through the interface matches).
pub(crate) fn gateway(routes: &str, ifname: &str, dst: Ipv4Addr) -> Option<Ipv4Addr> {
    let dst = u32::from(dst);
    let mut best: Option<(u32, u32)> = None; // (mask, gateway)
    for line in routes.lines().skip(1) {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [iface, net, gw, _flags, _, _, _, mask, ..] = f[..] else {
            continue;
        };
        // The file shows addresses as the hex of their in-memory (network-order)
        // bytes read as a native integer.
        let hex = |s: &str| u32::from_str_radix(s, 16).ok();
        let (Some(net), Some(gw), Some(mask)) = (hex(net), hex(gw), hex(mask)) else {
            continue;
        };
        let (net, gw, mask) = (
            u32::from_be_bytes(net.to_ne_bytes()),
            u32::from_be_bytes(gw.to_ne_bytes()),
            u32::from_be_bytes(mask.to_ne_bytes()),
        );
        if iface != ifname || dst & mask != net & mask {
            continue;
        }
        if best.is_none_or(|(m, _)| mask.count_ones() > m.count_ones()) {
            best = Some((mask, gw));
        }
    }
    best.and_then(|(_, gw)| (gw != 0).then(|| Ipv4Addr::from(gw)))
}

/// The complete entries for interface `ifname` in the kernel's ARP table
/// (`/proc/thread-self/net/arp`).
pub(crate) fn arp_entries<'a>(
    table: &'a str,
    ifname: &'a str,
) -> impl Iterator<Item = (Ipv4Addr, Mac)> + 'a {
    /// `ATF_COM`: the entry is resolved.
    const COMPLETE: u32 = 0x2;
    table.lines().skip(1).filter_map(move |line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let [ip, _hw_type, flags, mac, _mask, dev] = f[..] else {
            return None;
        };
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
        if dev != ifname || flags & COMPLETE == 0 {
            return None;
        }
        Some((ip.parse().ok()?, parse_mac(mac)?))
    })
}

/// Parses `aa:bb:cc:dd:ee:ff`.
pub(crate) fn parse_mac(s: &str) -> Option<Mac> {
    let mut mac = [0u8; 6];
    let mut parts = s.split(':');
    for byte in &mut mac {
        let part = parts.next()?;
        if part.is_empty() || part.len() > 2 {
            return None;
        }
        *byte = u8::from_str_radix(part, 16).ok()?;
    }
    parts.next().is_none().then_some(mac)
}

/// Reads one of the calling thread's `/proc/thread-self/net/*` tables.
pub(crate) fn read_table(name: &str) -> String {
    std::fs::read_to_string(format!("/proc/thread-self/net/{name}")).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTES: &str = "\
Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT
eth0\t00000000\t0100000A\t0003\t0\t0\t0\t00000000\t0\t0\t0
eth0\t0000000A\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
veth0\t0000A8C0\t00000000\t0001\t0\t0\t0\t00FFFFFF\t0\t0\t0
";

    #[test]
    fn gateway_by_longest_prefix() {
        let on_link = Ipv4Addr::new(10, 0, 0, 7);
        let far = Ipv4Addr::new(198, 51, 100, 1);
        assert_eq!(gateway(ROUTES, "eth0", on_link), None);
        assert_eq!(
            gateway(ROUTES, "eth0", far),
            Some(Ipv4Addr::new(10, 0, 0, 1))
        );
        assert_eq!(
            gateway(ROUTES, "veth0", Ipv4Addr::new(192, 168, 0, 9)),
            None
        );
        assert_eq!(gateway(ROUTES, "veth0", far), None);
        assert_eq!(gateway("garbage\nline", "eth0", far), None);
    }

    #[test]
    fn arp_table_complete_entries_only() {
        let table = "\
IP address       HW type     Flags       HW address            Mask     Device
10.0.0.2         0x1         0x2         02:00:00:00:00:0b     *        veth0
10.0.0.3         0x1         0x0         00:00:00:00:00:00     *        veth0
10.0.0.4         0x1         0x6         02:00:00:00:00:0c     *        eth9
10.0.0.5         0x1         0x6         02:00:00:00:00:0d     *        veth0
";
        let got: Vec<_> = arp_entries(table, "veth0").collect();
        assert_eq!(
            got,
            [
                (Ipv4Addr::new(10, 0, 0, 2), [2, 0, 0, 0, 0, 0x0b]),
                (Ipv4Addr::new(10, 0, 0, 5), [2, 0, 0, 0, 0, 0x0d]),
            ]
        );
    }

    #[test]
    fn mac_parsing() {
        assert_eq!(
            parse_mac("02:aB:0:ff:10:01"),
            Some([2, 0xab, 0, 0xff, 0x10, 1])
        );
        for bad in [
            "",
            "02:00:00:00:00",
            "02:00:00:00:00:00:00",
            "0g:00:00:00:00:00",
            "002:0:0:0:0:0",
        ] {
            assert_eq!(parse_mac(bad), None, "{bad}");
        }
    }

    #[test]
    fn loopback_is_not_ethernet() {
        // `lo` exists in every namespace and has ARP type 772.
        let err = Interface::lookup("lo").unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::Unsupported);
        assert!(Interface::lookup("no-such-if0").is_err());
        assert!(Interface::lookup("").is_err());
    }
}
