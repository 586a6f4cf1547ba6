//! [`XdpConfig`]: what an AF_XDP socket needs to know, and its one-line form
//! (the `QUARK_XDP` environment variable, `--xdp` options).

use std::fmt;
use std::net::Ipv4Addr;
use std::str::FromStr;

use super::netdev::parse_mac;

/// How to attach the XDP program that steers datagrams to the socket.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Attach {
    /// Native (driver) mode when the driver has it, else generic.
    #[default]
    Auto,
    /// Native XDP (`XDP_FLAGS_DRV_MODE`): the driver runs the program.
    Native,
    /// Generic XDP (`XDP_FLAGS_SKB_MODE`): the kernel runs it on a socket buffer.
    Generic,
}

/// How the AF_XDP socket moves frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Bind {
    /// Zero-copy when the driver has it, else copy (the kernel's own fallback).
    #[default]
    Auto,
    /// `XDP_COPY`: the kernel copies frames between the UMEM and its buffers.
    Copy,
    /// `XDP_ZEROCOPY`: the NIC uses the UMEM directly; fails where unsupported
    /// (veth, for one).
    ZeroCopy,
}

/// Fewest UMEM frames: the send half must hold a whole GSO batch
/// ([`MAX_GSO_SEGMENTS`](crate::MAX_GSO_SEGMENTS) datagrams) with room to spare.
pub(crate) const MIN_FRAMES: u32 = 256;

/// Settings of an [`XdpSocket`](super::XdpSocket).
///
/// The one-line form, as in `QUARK_XDP=veth0,attach=native`, is a comma-separated
/// list: first the interface (or `auto`: the interface that holds the bound
/// address), then any of `queue=N`, `attach=auto|native|generic`,
/// `bind=auto|copy|zerocopy`, `frames=N`, `csum=on|off`, and `neigh=IP@MAC`
/// (repeatable).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct XdpConfig {
    /// The interface to send and receive on; `None`: the one holding the address
    /// the socket binds to.
    pub interface: Option<String>,
    /// The receive queue to serve (packets arriving on other queues go to the
    /// kernel's stack). veth pairs have one queue: 0.
    pub queue: u32,
    /// How to attach the XDP program.
    pub attach: Attach,
    /// Copy or zero-copy.
    pub bind: Bind,
    /// UMEM frames of 4 KiB, a power of two of at least 256: half receive, half
    /// send. The default, 4096, is 16 MiB.
    pub frames: u32,
    /// Compute UDP checksums on send (else send 0, "no checksum", which IPv4
    /// allows).
    pub udp_checksum: bool,
    /// Static neighbours: (IPv4 address, Ethernet address) pairs used before
    /// anything learned or read from the kernel.
    pub neighbours: Vec<(Ipv4Addr, [u8; 6])>,
}

impl Default for XdpConfig {
    fn default() -> Self {
        Self {
            interface: None,
            queue: 0,
            attach: Attach::Auto,
            bind: Bind::Auto,
            frames: 4096,
            udp_checksum: true,
            neighbours: Vec::new(),
        }
    }
}

impl XdpConfig {
    /// A configuration for `interface` with default settings.
    pub fn new(interface: &str) -> Self {
        Self {
            interface: Some(interface.to_string()),
            ..Self::default()
        }
    }
}

/// A malformed one-line configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError(String);

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad AF_XDP setting: {}", self.0)
    }
}

impl std::error::Error for ParseError {}

impl FromStr for XdpConfig {
    type Err = ParseError;

    fn from_str(s: &str) -> Result<Self, ParseError> {
        let mut parts = s.split(',').map(str::trim);
        let mut cfg = XdpConfig::default();
        match parts.next() {
            Some("" | "auto") | None => {}
            Some(name) if name.contains('=') => {
                return Err(ParseError(format!("{name:?}: the interface comes first")));
            }
            Some(name) => cfg.interface = Some(name.to_string()),
        }
        for part in parts {
            let bad = || ParseError(format!("{part:?}"));
            let (key, value) = part.split_once('=').ok_or_else(bad)?;
            match key {
                "queue" => cfg.queue = value.parse().map_err(|_| bad())?,
                "attach" => {
                    cfg.attach = match value {
                        "auto" => Attach::Auto,
                        "native" | "drv" => Attach::Native,
                        "generic" | "skb" => Attach::Generic,
                        _ => return Err(bad()),
                    }
                }
                "bind" => {
                    cfg.bind = match value {
                        "auto" => Bind::Auto,
                        "copy" => Bind::Copy,
                        "zerocopy" => Bind::ZeroCopy,
                        _ => return Err(bad()),
                    }
                }
                "frames" => {
                    let n: u32 = value.parse().map_err(|_| bad())?;
                    if n < MIN_FRAMES || !n.is_power_of_two() || n > 1 << 20 {
                        return Err(ParseError(format!(
                            "frames={n}: a power of two from {MIN_FRAMES} to 1048576"
                        )));
                    }
                    cfg.frames = n;
                }
                "csum" => {
                    cfg.udp_checksum = match value {
                        "on" => true,
                        "off" => false,
                        _ => return Err(bad()),
                    }
                }
                "neigh" => {
                    let (ip, mac) = value.split_once('@').ok_or_else(bad)?;
                    let ip = ip.parse().map_err(|_| bad())?;
                    let mac = parse_mac(mac).ok_or_else(bad)?;
                    cfg.neighbours.push((ip, mac));
                }
                _ => return Err(bad()),
            }
        }
        Ok(cfg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_setting() {
        let cfg: XdpConfig = "veth0,queue=2,attach=generic,bind=copy,frames=1024,csum=off,\
                              neigh=10.0.0.2@02:00:00:00:00:0b,neigh=10.0.0.3@02:00:00:00:00:0c"
            .parse()
            .unwrap();
        assert_eq!(
            cfg,
            XdpConfig {
                interface: Some("veth0".into()),
                queue: 2,
                attach: Attach::Generic,
                bind: Bind::Copy,
                frames: 1024,
                udp_checksum: false,
                neighbours: vec![
                    (Ipv4Addr::new(10, 0, 0, 2), [2, 0, 0, 0, 0, 0x0b]),
                    (Ipv4Addr::new(10, 0, 0, 3), [2, 0, 0, 0, 0, 0x0c]),
                ],
            }
        );
        assert_eq!(
            "veth1".parse::<XdpConfig>().unwrap(),
            XdpConfig::new("veth1")
        );
        assert_eq!("auto".parse::<XdpConfig>().unwrap(), XdpConfig::default());
        assert_eq!(
            "auto,attach=drv".parse::<XdpConfig>().unwrap().attach,
            Attach::Native
        );
    }

    #[test]
    fn rejects_nonsense() {
        for bad in [
            "queue=1",
            "veth0,queue",
            "veth0,queue=x",
            "veth0,attach=fast",
            "veth0,frames=100",
            "veth0,frames=128",
            "veth0,neigh=10.0.0.1",
            "veth0,neigh=10.0.0.1@zz",
            "veth0,color=blue",
        ] {
            assert!(bad.parse::<XdpConfig>().is_err(), "{bad}");
        }
    }
}
