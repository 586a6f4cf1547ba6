//! Protocol adapters: one client and one server per protocol behind common traits.
//!
//! Adding a protocol is one file: implement [`Adapter`] (which hands out a
//! [`Server`] and a [`Client`]), and add a line to [`registry`]. The `quinn`
//! adapter ([`quinn`]) is the model for QUIC stacks: hq-interop requests on
//! bidirectional streams, zero-copy reads and writes, counters in
//! [`ServerStats`]. The helpers in [`hq`] serve and issue hq-interop requests
//! over any `AsyncRead`/`AsyncWrite` stream pair, so a stack whose streams
//! implement the tokio traits needs little more than connect/accept glue.
//! A stack that cannot run in this process (quic-go) is a program of its own
//! that plays `quark lab-server` / `quark lab-client`; its adapter names that
//! program ([`Adapter::external_child`], see [`quicgo`]).

use std::future::Future;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::time::Instant;

use rustls_pki_types::CertificateDer;

pub mod h3;
pub mod h3_on_quark;
pub mod h3_quinn;
pub mod hq;
pub mod http;
pub mod nginx;
mod nginx_proc;
pub mod quic;
pub mod quic_c;
pub mod quic_dgram;
pub mod quicgo;
pub mod quinn;
pub mod s2n;
pub mod serve;
pub mod stats;
pub mod stream;
pub mod tcp;
pub mod tls;
pub mod udp;
pub mod udp_rr;
pub mod udp_rr_serve;

pub use stats::{ServerCounters, ServerStats};
pub use tls::{CertKey, Cipher, Identity};

/// A boxed, sendable future (the traits are object-safe so adapters sit in one registry).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// How an adapter moves data.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Connections carrying request/response exchanges.
    Stream,
    /// Unreliable datagrams: the client blasts, the server counts.
    Datagram,
}

/// One request: the client sends `body_len` bytes of pattern and expects
/// exactly `response_len` bytes of pattern back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    /// Response bytes asked for.
    pub response_len: u64,
    /// Request body bytes sent after the header.
    pub body_len: u64,
}

/// What a server needs to start.
#[derive(Debug, Clone)]
pub struct ServeConfig {
    /// Address to bind (port 0 for any).
    pub listen: SocketAddr,
    /// Certificate for TLS-based protocols (others ignore it).
    pub identity: Identity,
    /// TLS 1.3 cipher suite.
    pub cipher: Cipher,
    /// Counters the server updates.
    pub stats: Arc<ServerStats>,
    /// Serve with this many worker threads of the stack's own (adapters whose
    /// [`Adapter::own_workers`] is true); `None`: on the process's runtime.
    pub workers: Option<usize>,
}

/// What a client needs to reach a server.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The server's address.
    pub server: SocketAddr,
    /// The server certificate to trust.
    pub cert: CertificateDer<'static>,
    /// TLS 1.3 cipher suite.
    pub cipher: Cipher,
    /// Local sockets to spread connections over (adapters that share one socket
    /// between connections; at least 1). Servers that spread load by 4-tuple
    /// hash see one flow per socket.
    pub sockets: usize,
}

/// A datagram blast: send until `bytes` were sent or `until` passed.
#[derive(Debug, Clone, Copy)]
pub struct Blast {
    /// Payload bytes to send (rounded up to whole datagrams).
    pub bytes: Option<u64>,
    /// Stop sending at this instant.
    pub until: Option<Instant>,
    /// Payload bytes per datagram.
    pub payload: usize,
}

/// What a blast sent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct BlastReport {
    /// Datagrams handed to the kernel.
    pub datagrams: u64,
    /// Payload bytes in them.
    pub bytes: u64,
}

/// A protocol the lab can measure.
pub trait Adapter: Send + Sync {
    /// The name used on the command line and in results (`tcp+tls`, `quinn`, ...).
    fn name(&self) -> &'static str;
    /// One line for `--help` and reports.
    fn about(&self) -> &'static str;
    /// Stream or datagram.
    fn kind(&self) -> Kind {
        Kind::Stream
    }
    /// Whether it runs request/response exchanges ([`Connection`]s). Stream
    /// adapters do; a datagram adapter that also does (`udp`) runs the
    /// request/response scenarios too and blasts only for goodput and streams.
    fn serves_requests(&self) -> bool {
        self.kind() == Kind::Stream
    }
    /// Whether `quark bench` without `--proto` runs it.
    fn in_default_suite(&self) -> bool {
        false
    }
    /// Whether the server runs [`ServeConfig::workers`] threads itself. For the
    /// others the lab gives the server process a runtime with that many threads.
    fn own_workers(&self) -> bool {
        false
    }
    /// Makes this process's endpoints of the stack busy-poll for `window`
    /// after work (`quark bench --busy-poll`). False if the stack has no such
    /// mode: the lab then keeps the process's runtime from sleeping instead.
    fn busy_poll(&self, window: std::time::Duration) -> bool {
        let _ = window;
        false
    }
    /// The program that runs this protocol's lab children instead of quark,
    /// for stacks that cannot run in this process. `None`: quark runs them.
    fn external_child(&self) -> Option<ExternalChild> {
        None
    }
    /// Why this protocol cannot run here (e.g. a program it needs is not
    /// installed); the lab then skips it with this message. `None`: it can.
    fn unavailable(&self) -> Option<String> {
        None
    }
    /// Binds and starts serving in the current tokio runtime.
    fn serve(&self, config: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>>;
    /// Prepares a client (no connection yet).
    fn client(&self, config: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>>;
}

/// A program of its own that runs a protocol's lab children: it takes the
/// arguments of `quark lab-server` / `quark lab-client` and speaks their line
/// protocol ([`crate::child`]). `interop/setup.sh` builds it into the cargo
/// target directory's `interop/`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExternalChild {
    /// Its file name in `<target>/interop/`.
    pub file: &'static str,
    /// An environment variable that names the program instead.
    pub env: &'static str,
}

impl ExternalChild {
    /// Where it is by default for the `quark` binary `quark`:
    /// `target/release/quark` → `target/interop/<file>`.
    pub fn default_path(&self, quark: &Path) -> PathBuf {
        let target = quark
            .parent()
            .and_then(Path::parent)
            .unwrap_or(Path::new("."));
        target.join("interop").join(self.file)
    }

    /// The program: the environment variable's path if set, else
    /// [`ExternalChild::default_path`]. Missing: one line saying how to get it.
    pub fn locate(&self, quark: &Path) -> Result<PathBuf, String> {
        let path =
            std::env::var_os(self.env).map_or_else(|| self.default_path(quark), PathBuf::from);
        if path.is_file() {
            Ok(path)
        } else {
            Err(format!(
                "no {} at {}: run interop/setup.sh (needs Go), or set {} to the program",
                self.file,
                path.display(),
                self.env
            ))
        }
    }
}

/// A running server; dropping it stops accepting.
pub trait Server: Send + Sync {
    /// The bound address.
    fn local_addr(&self) -> SocketAddr;
    /// The stack's own CPU counters, if it keeps them (see [`CpuCounters`]).
    fn cpu_counters(&self) -> Option<CpuCounters> {
        None
    }
    /// User and system CPU time so far of processes that serve for this
    /// server outside this process (nginx's), counted as the server's.
    fn helper_cpu(&self) -> Option<(std::time::Duration, std::time::Duration)> {
        None
    }
    /// Brings [`ServerStats`] up to date where the server counts
    /// asynchronously (nginx's access log); called before a reset or snapshot.
    fn sync_counters(&self) {}
}

/// Cumulative CPU time a stack spent per category, from its own counters (the
/// thesis' per-packet breakdown: crypto, send, recv, ack, other). The lab
/// reads them at the start and end of each measured interval and reports the
/// difference per packet (or per request when `packets` stays 0).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuCounters {
    /// Packets sent and received so far.
    pub packets: u64,
    /// Nanoseconds spent so far, by category.
    pub ns: Vec<(String, u64)>,
}

impl CpuCounters {
    /// Per-unit breakdown between `self` (start) and `end`; `requests` is the
    /// unit when no packets were counted.
    pub fn per_unit(
        &self,
        end: &CpuCounters,
        requests: u64,
    ) -> Option<crate::results::SideBreakdown> {
        let packets = end.packets.saturating_sub(self.packets);
        let (unit, n) = if packets > 0 {
            ("packet", packets)
        } else {
            ("request", requests)
        };
        if n == 0 {
            return None;
        }
        let items = end
            .ns
            .iter()
            .map(|(name, ns)| {
                let before = self
                    .ns
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(0, |(_, v)| *v);
                crate::results::BreakdownItem {
                    name: name.clone(),
                    ns: ns.saturating_sub(before) as f64 / n as f64,
                }
            })
            .collect();
        Some(crate::results::SideBreakdown {
            unit: unit.into(),
            items,
        })
    }
}

/// The client side of a protocol.
pub trait Client: Send + Sync {
    /// Opens a connection; returns once it can carry requests (handshake done).
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>>;
    /// Sends datagrams (datagram adapters only).
    fn blast(&self, blast: Blast) -> BoxFuture<'_, anyhow::Result<BlastReport>> {
        let _ = blast;
        Box::pin(async { anyhow::bail!("this protocol does not send raw datagrams") })
    }
    /// Waits until closed connections finished closing (e.g. QUIC draining).
    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
    /// The stack's own CPU counters, if it keeps them (see [`CpuCounters`]).
    fn cpu_counters(&self) -> Option<CpuCounters> {
        None
    }
}

/// One connection.
pub trait Connection: Send + Sync {
    /// Issues one request and verifies every byte of the response. May be
    /// called concurrently: multiplexing protocols run the requests in
    /// parallel, the others pipeline or queue them on the one connection.
    fn request(&self, request: Request) -> BoxFuture<'_, anyhow::Result<()>>;
    /// Closes the connection gracefully; later requests fail.
    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>>;
}

static TCP: tcp::Tcp = tcp::Tcp { tls: false };
static TCP_TLS: tcp::Tcp = tcp::Tcp { tls: true };
static QUIC: quic::Quic = quic::Quic;
static QUIC_C: quic_c::QuicC = quic_c::QuicC;
static QUINN: quinn::Quinn = quinn::Quinn;
static S2N: s2n::S2n = s2n::S2n;
static HTTP1: http::Http = http::Http {
    version: http::Version::Http1,
    tls: false,
};
static HTTP1_TLS: http::Http = http::Http {
    version: http::Version::Http1,
    tls: true,
};
static HTTP2: http::Http = http::Http {
    version: http::Version::Http2,
    tls: false,
};
static HTTP2_TLS: http::Http = http::Http {
    version: http::Version::Http2,
    tls: true,
};
static UDP: udp::Udp = udp::Udp;
static QUIC_DGRAM: quic_dgram::QuicDgram = quic_dgram::QuicDgram;
static H3: h3::H3 = h3::H3;
static H3_QUINN: h3_quinn::H3Quinn = h3_quinn::H3Quinn;
static QUIC_GO: quicgo::QuicGo = quicgo::QuicGo;
static NGINX: nginx::NginxAdapter = nginx::NginxAdapter;

/// Every adapter compiled in. The `quic` adapter (quark over hq-interop) is
/// added here once the quark crate exists; the default protocol list and the
/// default reference follow automatically.
pub fn registry() -> &'static [&'static dyn Adapter] {
    static ALL: &[&dyn Adapter] = &[
        &UDP,
        &QUIC_DGRAM,
        &TCP,
        &TCP_TLS,
        &QUIC,
        &QUIC_C,
        &QUINN,
        &S2N,
        &QUIC_GO,
        &HTTP1,
        &HTTP1_TLS,
        &HTTP2,
        &HTTP2_TLS,
        &NGINX,
        &H3,
        &h3_on_quark::H3OnQuark,
        &H3_QUINN,
    ];
    ALL
}

/// The adapter called `name`.
pub fn find(name: &str) -> Option<&'static dyn Adapter> {
    registry().iter().copied().find(|a| a.name() == name)
}

/// Protocols `quark bench` runs without `--proto`: the QUIC stack under test
/// (`quic`, when registered) first, then the ones marked for the default suite.
pub fn default_protocols() -> Vec<&'static str> {
    let mut v: Vec<&str> = registry()
        .iter()
        .filter(|a| a.in_default_suite())
        .map(|a| a.name())
        .collect();
    if let Some(i) = v.iter().position(|n| *n == "quic") {
        let q = v.remove(i);
        v.insert(0, q);
    }
    v
}

/// The protocol other protocols are compared with: `quic` (quark) once
/// registered, `quinn` until then.
pub fn default_reference() -> &'static str {
    if find("quic").is_some() {
        "quic"
    } else {
        "quinn"
    }
}

/// Where a client socket binds for `server`: loopback for a loopback server (as
/// before), else any address (an emulated link's namespace, e.g. 10.77.0.2).
pub(crate) fn client_bind(server: std::net::SocketAddr) -> std::net::SocketAddr {
    use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
    let ip: IpAddr = match server.ip() {
        IpAddr::V4(v) if v.is_loopback() => Ipv4Addr::LOCALHOST.into(),
        IpAddr::V4(_) => Ipv4Addr::UNSPECIFIED.into(),
        IpAddr::V6(v) if v.is_loopback() => Ipv6Addr::LOCALHOST.into(),
        IpAddr::V6(_) => Ipv6Addr::UNSPECIFIED.into(),
    };
    SocketAddr::new(ip, 0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_counters_become_per_packet_deltas() {
        let a = CpuCounters {
            packets: 10,
            ns: vec![("crypto".into(), 1000), ("send".into(), 500)],
        };
        let b = CpuCounters {
            packets: 110,
            ns: vec![
                ("crypto".into(), 21_000),
                ("send".into(), 10_500),
                ("ack".into(), 300),
            ],
        };
        let d = a.per_unit(&b, 7).unwrap();
        assert_eq!(d.unit, "packet");
        let ns: Vec<f64> = d.items.iter().map(|i| i.ns).collect();
        assert_eq!(ns, [200.0, 100.0, 3.0]);
        let same = CpuCounters {
            packets: 10,
            ns: vec![("crypto".into(), 1700)],
        };
        assert_eq!(a.per_unit(&same, 7).unwrap().unit, "request");
        assert_eq!(a.per_unit(&same, 0), None);
    }

    #[test]
    fn registry_names_are_unique_and_findable() {
        let names: Vec<_> = registry().iter().map(|a| a.name()).collect();
        let mut sorted = names.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), names.len());
        for n in names {
            assert_eq!(find(n).unwrap().name(), n);
        }
        assert!(find("sctp").is_none());
    }

    #[test]
    fn default_suite_compares_quic_stacks_with_tcp() {
        let d = default_protocols();
        for p in ["tcp", "tcp+tls", "quinn", "s2n-quic"] {
            assert!(d.contains(&p), "{d:?}");
        }
        assert!(d.contains(&default_reference()));
        // The default suite needs no Go.
        assert!(
            registry()
                .iter()
                .all(|a| a.external_child().is_none() || !d.contains(&a.name()))
        );
    }

    #[test]
    fn quic_go_runs_in_the_program_setup_sh_builds() {
        let child = find("quic-go").and_then(|a| a.external_child()).unwrap();
        assert_eq!(
            child.default_path(Path::new("/w/target/release/quark")),
            Path::new("/w/target/interop/quicgo-lab")
        );
        assert_eq!(child.env, "QUARK_QUICGO_LAB");
    }
}
