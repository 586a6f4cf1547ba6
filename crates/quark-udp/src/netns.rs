//! Two network namespaces joined by a veth pair: the test bed for AF_XDP (and any
//! traffic that must not touch the host's interfaces).
//!
//! ```text
//!  namespace <name>-a                      namespace <name>-b
//!  veth-a 10.77.0.1/24 02:51:00:00:00:01 <-> veth-b 10.77.0.2/24 02:51:00:00:00:02
//! ```
//!
//! Each side has a permanent (static) neighbour entry for the other, so no frame
//! is lost to address resolution. Built with `ip` (iproute2); needs root
//! (`CAP_SYS_ADMIN` and `CAP_NET_ADMIN`). Dropping a [`VethPair`] deletes both
//! namespaces, which deletes the veth pair with them.

use std::fs::File;
use std::io;
use std::net::Ipv4Addr;
use std::os::fd::AsRawFd;
use std::process::{Command, Stdio};
use std::thread::JoinHandle;

/// One end of a [`VethPair`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Side {
    /// The network namespace (`ip netns` name).
    pub netns: String,
    /// The veth interface in it.
    pub interface: String,
    /// Its IPv4 address (/24).
    pub ip: Ipv4Addr,
    /// Its Ethernet address.
    pub mac: [u8; 6],
}

impl Side {
    /// The MAC as `aa:bb:cc:dd:ee:ff`.
    pub fn mac_string(&self) -> String {
        let m = self.mac;
        format!(
            "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}",
            m[0], m[1], m[2], m[3], m[4], m[5]
        )
    }
}

/// Two namespaces joined by veth, deleted on drop (unless [`keep`](Self::keep)).
#[derive(Debug)]
pub struct VethPair {
    /// Side a: `10.77.0.1`.
    pub a: Side,
    /// Side b: `10.77.0.2`.
    pub b: Side,
    keep: bool,
}

impl VethPair {
    /// Creates namespaces `<name>-a` and `<name>-b` and the veth pair between
    /// them, with addresses, static neighbours and links up. Namespaces left
    /// over from an earlier run under the same name are replaced.
    pub fn create(name: &str) -> io::Result<Self> {
        Self::with_queues(name, 1)
    }

    /// [`create`](Self::create) with `queues` receive and send queues on each
    /// end (1 to 64), for a server with an AF_XDP socket per queue. A datagram
    /// crosses on the queue its sender's kernel picked (a hash of its flow; an
    /// AF_XDP sender's own queue) and arrives on the same-numbered queue.
    pub fn with_queues(name: &str, queues: u32) -> io::Result<Self> {
        if !(1..=64).contains(&queues) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("a veth pair has 1 to 64 queues, not {queues}"),
            ));
        }
        let queues = queues.to_string();
        let side = |s: &str, n: u8| Side {
            netns: format!("{name}-{s}"),
            interface: format!("veth-{s}"),
            ip: Ipv4Addr::new(10, 77, 0, n),
            mac: [0x02, 0x51, 0, 0, 0, n],
        };
        let pair = Self {
            a: side("a", 1),
            b: side("b", 2),
            keep: false,
        };
        remove(name);
        let (a, b) = (&pair.a, &pair.b);
        ip(&["netns", "add", &a.netns])?;
        ip(&["netns", "add", &b.netns])?;
        ip(&[
            "link",
            "add",
            &a.interface,
            "netns",
            &a.netns,
            "address",
            &a.mac_string(),
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
            "type",
            "veth",
            "peer",
            "name",
            &b.interface,
            "netns",
            &b.netns,
            "address",
            &b.mac_string(),
            "numtxqueues",
            &queues,
            "numrxqueues",
            &queues,
        ])?;
        for (me, peer) in [(a, b), (b, a)] {
            let n = &me.netns;
            ip(&["-n", n, "link", "set", "lo", "up"])?;
            ip(&[
                "-n",
                n,
                "addr",
                "add",
                &format!("{}/24", me.ip),
                "dev",
                &me.interface,
            ])?;
            ip(&["-n", n, "link", "set", &me.interface, "up"])?;
            ip(&[
                "-n",
                n,
                "neigh",
                "replace",
                &peer.ip.to_string(),
                "lladdr",
                &peer.mac_string(),
                "dev",
                &me.interface,
                "nud",
                "permanent",
            ])?;
        }
        Ok(pair)
    }

    /// Leaves the namespaces in place when dropped (for `quark xdp setup`).
    pub fn keep(mut self) {
        self.keep = true;
    }

    /// Removes the static neighbour entries, so each side must resolve the other
    /// with ARP (which the XDP program lets through to the kernel).
    pub fn forget_neighbours(&self) -> io::Result<()> {
        for (me, peer) in [(&self.a, &self.b), (&self.b, &self.a)] {
            ip(&[
                "-n",
                &me.netns,
                "neigh",
                "del",
                &peer.ip.to_string(),
                "dev",
                &me.interface,
            ])?;
        }
        Ok(())
    }
}

impl Drop for VethPair {
    fn drop(&mut self) {
        if !self.keep {
            for side in [&self.a, &self.b] {
                let _ = ip(&["netns", "del", &side.netns]);
            }
        }
    }
}

/// Deletes the namespaces of the pair `name`, if they exist (nothing else).
pub fn remove(name: &str) {
    for s in ["a", "b"] {
        let netns = format!("{name}-{s}");
        if std::path::Path::new("/run/netns").join(&netns).exists() {
            let _ = ip(&["netns", "del", &netns]);
        }
    }
}

/// Moves the calling thread into network namespace `netns` (an `ip netns`
/// name). Sockets it opens afterwards live there; other threads are unaffected.
pub fn enter(netns: &str) -> io::Result<()> {
    let file = File::open(std::path::Path::new("/run/netns").join(netns))
        .map_err(|e| io::Error::new(e.kind(), format!("network namespace {netns}: {e}")))?;
    // SAFETY: `setns` on an open namespace descriptor changes only the calling
    // thread's network namespace; no memory is passed.
    if unsafe { libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(e.kind(), format!("setns({netns}): {e}")));
    }
    Ok(())
}

/// Runs `f` on a new thread inside network namespace `netns`.
pub fn spawn_in<T, F>(netns: &str, f: F) -> JoinHandle<io::Result<T>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    let netns = netns.to_string();
    std::thread::spawn(move || {
        enter(&netns)?;
        Ok(f())
    })
}

/// CPU time the calling thread has used so far: (user, system).
pub fn thread_cpu_time() -> (std::time::Duration, std::time::Duration) {
    /// `RUSAGE_THREAD` (Linux 2.6.26).
    const RUSAGE_THREAD: libc::c_int = 1;
    // SAFETY: all-zero is a valid `rusage` (integers).
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `getrusage` writes one `rusage` into `usage`.
    unsafe { libc::getrusage(RUSAGE_THREAD, &mut usage) };
    let d = |t: libc::timeval| {
        std::time::Duration::new(t.tv_sec.max(0) as u64, (t.tv_usec.max(0) as u32) * 1000)
    };
    (d(usage.ru_utime), d(usage.ru_stime))
}

/// CPU time of the kernel's softirq threads (`ksoftirqd/N`) so far, from
/// `/proc/<pid>/stat` (10 ms clock ticks): network receive work the kernel deferred
/// there is charged to no thread of the process being measured.
pub fn ksoftirqd_time() -> std::time::Duration {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return std::time::Duration::ZERO;
    };
    let ticks: u64 = dir
        .flatten()
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter(|stat| stat.contains("(ksoftirqd/"))
        .filter_map(|stat| {
            // After the command name: state is field 3, utime 14 and stime 15.
            let rest = stat.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            Some(f.get(11)?.parse::<u64>().ok()? + f.get(12)?.parse::<u64>().ok()?)
        })
        .sum();
    std::time::Duration::from_millis(ticks * 10)
}

/// Why this process can't create network namespaces, if it can't: not root, or
/// no `ip` command.
pub fn unavailable() -> Option<String> {
    // SAFETY: `geteuid` has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        return Some("needs root (network namespaces, XDP)".into());
    }
    match Command::new("ip").arg("-V").stdout(Stdio::null()).status() {
        Ok(s) if s.success() => None,
        _ => Some("needs the `ip` command (iproute2)".into()),
    }
}

/// Runs `ip <args>`, turning a failure into an error with its message.
fn ip(args: &[&str]) -> io::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| io::Error::new(e.kind(), format!("running ip: {e}")))?;
    if out.status.success() {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    )))
}
