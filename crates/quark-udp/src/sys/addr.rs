//! Socket addresses between `std` and the kernel, with dual-stack mapping: an IPv6
//! socket reaches IPv4 peers as `::ffff:a.b.c.d`, which the API shows as `a.b.c.d`.

use std::mem;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

/// Storage for either address family (smaller than `sockaddr_storage`).
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) union RawAddr {
    // Both variants start with their `sa_family_t`.
    v4: libc::sockaddr_in,
    v6: libc::sockaddr_in6,
}

impl RawAddr {
    /// All zeros (the IPv6 variant is the larger, so every byte is initialised).
    pub(crate) const ZERO: Self = Self {
        v6: libc::sockaddr_in6 {
            sin6_family: 0,
            sin6_port: 0,
            sin6_flowinfo: 0,
            sin6_addr: libc::in6_addr { s6_addr: [0; 16] },
            sin6_scope_id: 0,
        },
    };

    /// Bytes the kernel may write.
    pub(crate) const CAPACITY: libc::socklen_t = mem::size_of::<RawAddr>() as libc::socklen_t;

    /// Encodes `addr` for a socket of family `v6` (true: IPv6); returns the storage and
    /// its length. IPv4 addresses become v4-mapped on IPv6 sockets, v4-mapped ones plain
    /// IPv4 on IPv4 sockets; an IPv6 address on an IPv4 socket stays IPv6 and the
    /// kernel refuses it.
    pub(crate) fn encode(addr: SocketAddr, v6: bool) -> (Self, libc::socklen_t) {
        match (to_canonical(addr), v6) {
            (SocketAddr::V4(a), false) => Self::from_v4(a),
            (SocketAddr::V4(a), true) => {
                Self::from_v6(SocketAddrV6::new(a.ip().to_ipv6_mapped(), a.port(), 0, 0))
            }
            (SocketAddr::V6(a), _) => Self::from_v6(a),
        }
    }

    fn from_v4(a: SocketAddrV4) -> (Self, libc::socklen_t) {
        let v4 = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: a.port().to_be(),
            sin_addr: libc::in_addr {
                s_addr: u32::from_ne_bytes(a.ip().octets()),
            },
            sin_zero: [0; 8],
        };
        (
            Self { v4 },
            mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        )
    }

    fn from_v6(a: SocketAddrV6) -> (Self, libc::socklen_t) {
        let v6 = libc::sockaddr_in6 {
            sin6_family: libc::AF_INET6 as libc::sa_family_t,
            sin6_port: a.port().to_be(),
            sin6_flowinfo: a.flowinfo().to_be(),
            sin6_addr: libc::in6_addr {
                s6_addr: a.ip().octets(),
            },
            sin6_scope_id: a.scope_id(),
        };
        (
            Self { v6 },
            mem::size_of::<libc::sockaddr_in6>() as libc::socklen_t,
        )
    }

    /// Decodes what the kernel wrote (`len` bytes); `None` for anything but a whole
    /// IPv4 or IPv6 address.
    pub(crate) fn decode(&self, len: libc::socklen_t) -> Option<SocketAddr> {
        let len = len as usize;
        if len < mem::size_of::<libc::sa_family_t>() {
            return None;
        }
        // SAFETY: both variants start with their `sa_family_t`, and the kernel wrote
        // at least those bytes (checked above); every bit pattern is a valid integer.
        let family = unsafe { self.v4.sin_family };
        match libc::c_int::from(family) {
            libc::AF_INET if len >= mem::size_of::<libc::sockaddr_in>() => {
                // SAFETY: the kernel wrote a whole `sockaddr_in` (family and length
                // checked); plain integers.
                let a = unsafe { self.v4 };
                let ip = Ipv4Addr::from(a.sin_addr.s_addr.to_ne_bytes());
                Some(SocketAddr::new(ip.into(), u16::from_be(a.sin_port)))
            }
            libc::AF_INET6 if len >= mem::size_of::<libc::sockaddr_in6>() => {
                // SAFETY: the kernel wrote a whole `sockaddr_in6` (family and length
                // checked); plain integers.
                let a = unsafe { self.v6 };
                let addr = SocketAddrV6::new(
                    Ipv6Addr::from(a.sin6_addr.s6_addr),
                    u16::from_be(a.sin6_port),
                    u32::from_be(a.sin6_flowinfo),
                    a.sin6_scope_id,
                );
                Some(to_canonical(SocketAddr::V6(addr)))
            }
            _ => None,
        }
    }
}

/// Shows a v4-mapped IPv6 address as the IPv4 address it stands for.
pub(crate) fn to_canonical(addr: SocketAddr) -> SocketAddr {
    match addr {
        SocketAddr::V6(a) => match a.ip().to_ipv4_mapped() {
            Some(ip) => SocketAddr::new(ip.into(), a.port()),
            None => addr,
        },
        SocketAddr::V4(_) => addr,
    }
}

/// [`to_canonical`] for a bare IP address.
pub(crate) fn ip_to_canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(addr: SocketAddr, v6: bool) -> SocketAddr {
        let (raw, len) = RawAddr::encode(addr, v6);
        raw.decode(len).unwrap()
    }

    #[test]
    fn v4_round_trip() {
        let a: SocketAddr = "192.0.2.7:4433".parse().unwrap();
        assert_eq!(round_trip(a, false), a);
        // On an IPv6 socket it travels v4-mapped and comes back as IPv4.
        let (raw, len) = RawAddr::encode(a, true);
        assert_eq!(len as usize, mem::size_of::<libc::sockaddr_in6>());
        assert_eq!(raw.decode(len), Some(a));
    }

    #[test]
    fn v6_round_trip_keeps_scope_and_flow() {
        let a = SocketAddr::V6(SocketAddrV6::new(
            "fe80::1".parse().unwrap(),
            443,
            0x12345,
            3,
        ));
        assert_eq!(round_trip(a, true), a);
    }

    #[test]
    fn mapped_becomes_v4() {
        let mapped: SocketAddr = "[::ffff:10.0.0.1]:53".parse().unwrap();
        let plain: SocketAddr = "10.0.0.1:53".parse().unwrap();
        assert_eq!(round_trip(mapped, false), plain);
        assert_eq!(round_trip(mapped, true), plain);
        assert_eq!(ip_to_canonical(mapped.ip()), plain.ip());
    }

    #[test]
    fn short_or_foreign_names_are_rejected() {
        let (raw, _) = RawAddr::encode("[::1]:1".parse().unwrap(), true);
        assert_eq!(raw.decode(0), None);
        assert_eq!(
            raw.decode(mem::size_of::<libc::sockaddr_in6>() as u32 - 1),
            None
        );
        let (mut raw, len) = RawAddr::encode("127.0.0.1:1".parse().unwrap(), false);
        raw.v4.sin_family = libc::AF_UNIX as libc::sa_family_t;
        assert_eq!(raw.decode(len), None);
    }
}
