//! Cases over AF_XDP: the server in one network namespace, the client in
//! another, joined by veth; quark's end uses an AF_XDP socket (`QUARK_XDP`),
//! a third-party peer kernel UDP. Needs root, `ip` and AF_XDP in the kernel.

use std::net::{IpAddr, Ipv4Addr};
use std::process::Command;

use quark_udp::netns::{self, Side, VethPair};

/// The two namespaces of one case; removed when dropped.
pub struct Bed {
    pair: VethPair,
}

impl Bed {
    /// Makes the namespaces, or says why they cannot be made here.
    pub fn create(case: &str) -> Result<Bed, String> {
        if let Some(why) = netns::unavailable() {
            return Err(why);
        }
        let name = format!("qi{}-{}", std::process::id() % 100_000, short(case));
        VethPair::create(&name)
            .map(|pair| Bed { pair })
            .map_err(|e| e.to_string())
    }

    /// The server's address (side a).
    pub fn server_ip(&self) -> Ipv4Addr {
        self.pair.a.ip
    }

    /// `cmd` run inside the server's namespace; on AF_XDP if it is quark.
    pub fn server(&self, cmd: &Command, quark: bool) -> Command {
        inside(&self.pair.a, cmd, quark)
    }

    /// `cmd` run inside the client's namespace; on AF_XDP if it is quark.
    pub fn client(&self, cmd: &Command, quark: bool) -> Command {
        inside(&self.pair.b, cmd, quark)
    }
}

/// The address clients use to reach a server at `ip`: a name the certificate
/// holds for loopback, the address itself across namespaces.
pub fn host(ip: IpAddr) -> String {
    if ip.is_loopback() {
        "localhost".into()
    } else {
        ip.to_string()
    }
}

/// A namespace-name-safe digest of the case name (interface names are short).
fn short(case: &str) -> String {
    let h = case
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    format!("{h:08x}")
}

/// `cmd`, with its arguments, environment and directory, under `ip netns exec`.
fn inside(side: &Side, cmd: &Command, xdp: bool) -> Command {
    let mut wrapped = Command::new("ip");
    wrapped.args(["netns", "exec", &side.netns]);
    wrapped.arg(cmd.get_program()).args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(v) => wrapped.env(key, v),
            None => wrapped.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        wrapped.current_dir(dir);
    }
    if xdp {
        wrapped.env(quark_udp::XDP_ENV, &side.interface);
    }
    wrapped
}
