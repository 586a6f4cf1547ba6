//! # quark-probe: attack clients for a QUIC server's resource bounds
//!
//! Each attack plays one class of misbehaving peer against a server (floods
//! of Initials and handshakes, fragmented CRYPTO and STREAM data, slow
//! readers and acknowledgers, control-frame floods) while a legitimate client
//! keeps fetching a file. An attack passes when the server's memory stays
//! within a bound of its baseline, the legitimate fetches stay fast, and the
//! server closes the attack connections with the RFC's error where one is
//! due. `quark probe` runs them against any server on this machine (like
//! h2spec for HTTP/2); quark's own server must pass them all.
//!
//! | module | what lives there |
//! |---|---|
//! | [`peer`] | attack connections on quark-proto, driven by hand |
//! | [`watch`] | the server's RSS, and the legitimate client's fetches |
//! | [`attacks`] | the attack classes |
//! | [`idle`] | memory per idle connection |

pub mod attacks;
pub mod idle;
pub mod peer;
pub mod watch;

use std::net::{IpAddr, Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use anyhow::Context;
use quark_proto::ClientConfig;
use serde::Serialize;

/// The server under test and how to reach it.
#[derive(Clone, Debug)]
pub struct Target {
    /// Its UDP address.
    pub addr: SocketAddr,
    /// The name its certificate is checked against (not verified: probes
    /// only need a handshake).
    pub server_name: String,
    /// ALPN to offer (hq-interop).
    pub alpn: Vec<u8>,
    /// A path of about 1 MB the legitimate client fetches.
    pub fetch: String,
    /// A large file (10 MB or more) that slow peers request.
    pub big: String,
    /// The server's process, to sample its memory (on this machine).
    pub pid: Option<u32>,
    /// Where attacks come from; on loopback a different address from the
    /// legitimate client's (127.0.0.1), as a different host would be.
    pub attacker_ip: IpAddr,
}

impl Target {
    /// A target at `addr` with the conventional probe files.
    pub fn new(addr: SocketAddr) -> Self {
        let attacker_ip = match addr.ip() {
            IpAddr::V4(v4) if v4.is_loopback() => IpAddr::V4(Ipv4Addr::new(127, 0, 0, 2)),
            IpAddr::V4(_) => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
            IpAddr::V6(_) => IpAddr::V6(std::net::Ipv6Addr::UNSPECIFIED),
        };
        Target {
            addr,
            server_name: "localhost".into(),
            alpn: b"hq-interop".to_vec(),
            fetch: "/probe-1M.bin".into(),
            big: "/probe-16M.bin".into(),
            pid: None,
            attacker_ip,
        }
    }

    /// Whether the target speaks HTTP/3 (else hq-interop).
    pub fn h3(&self) -> bool {
        self.alpn == quark_h3::ALPN
    }

    /// A client configuration that accepts any certificate.
    pub fn client_config(&self) -> anyhow::Result<ClientConfig> {
        Ok(quark::tls::client_config(
            quark::tls::Verify::Insecure,
            &[&self.alpn],
        )?)
    }

    /// A socket at the attacker's address.
    pub fn attack_socket(&self) -> anyhow::Result<UdpSocket> {
        let socket = UdpSocket::bind((self.attacker_ip, 0))
            .with_context(|| format!("bind the attacker's address {}", self.attacker_ip))?;
        Ok(socket)
    }
}

/// How hard to push.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scale {
    /// Seconds per attack, for CI.
    Quick,
    /// The sizes of the attacks as first measured (tens of seconds each).
    Full,
}

impl Scale {
    /// `quick` or `full` of anything.
    pub fn pick<T>(self, quick: T, full: T) -> T {
        match self {
            Scale::Quick => quick,
            Scale::Full => full,
        }
    }
}

/// What an attack did and saw.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Report {
    /// Datagrams and bytes sent.
    pub sent: (u64, u64),
    /// How the server closed attack connections (by error name), counted.
    pub closes: Vec<(String, usize)>,
    /// Anything else worth saying.
    pub notes: Vec<String>,
}

impl Report {
    /// Count each close by its name.
    pub fn count_closes(&mut self, closes: impl IntoIterator<Item = String>) {
        for c in closes {
            match self.closes.iter_mut().find(|(name, _)| *name == c) {
                Some((_, n)) => *n += 1,
                None => self.closes.push((c, 1)),
            }
        }
    }

    /// Whether any connection was closed with `name`.
    pub fn closed_with(&self, name: &str) -> bool {
        self.closes.iter().any(|(c, _)| c == name)
    }
}

/// The bounds an attack is judged by.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Bounds {
    /// Server RSS above its baseline at most.
    pub memory: u64,
    /// A legitimate fetch during the attack takes at most this.
    pub fetch: Duration,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            memory: 64 << 20,
            fetch: Duration::from_secs(1),
        }
    }
}

/// One attack's result.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    /// The attack's name.
    pub attack: &'static str,
    /// What it did and saw.
    pub report: Report,
    /// The server's RSS before, at its peak during, and after the attack.
    pub rss: Option<(u64, u64, u64)>,
    /// Legitimate fetches during the attack: seconds each, or why one failed.
    pub fetches: Vec<Result<f64, String>>,
    /// How long the attack ran.
    pub seconds: f64,
    /// Why it failed; empty when it passed.
    pub failures: Vec<String>,
}

impl Target {
    /// The target for the `n`th attack of a run: on loopback each attack
    /// comes from an address of its own (127.0.0.2, .3, ...), so what one
    /// left behind (half-open connections, say) does not count against the
    /// next one's source.
    pub fn for_attack(&self, n: usize) -> Target {
        let mut t = self.clone();
        if let IpAddr::V4(v4) = self.attacker_ip
            && v4.is_loopback()
        {
            let [a, b, c, d] = v4.octets();
            let d = d.wrapping_add(n as u8).max(2);
            t.attacker_ip = IpAddr::V4(Ipv4Addr::new(a, b, c, d));
        }
        t
    }
}

/// Run `attack` against `target`, watching the server, and judge it.
pub fn run(target: &Target, attack: &attacks::Attack, scale: Scale, bounds: &Bounds) -> Outcome {
    let before = target.pid.and_then(watch::rss);
    let memory = watch::MemoryWatch::start(target.pid);
    let fetcher = watch::Fetcher::start(target);
    let start = Instant::now();
    let result = (attack.run)(target, scale);
    let seconds = start.elapsed().as_secs_f64();
    let fetches = fetcher.finish();
    let peak = memory.finish();
    // Let the server's timers free what the attack left, then look again.
    std::thread::sleep(Duration::from_millis(200));
    let after = target.pid.and_then(watch::rss);
    let mut failures = Vec::new();
    let report = match result {
        Ok(r) => r,
        Err(e) => {
            failures.push(format!("the attack could not run: {e:#}"));
            Report::default()
        }
    };
    let rss = match (before, peak, after) {
        (Some(b), Some(p), Some(a)) => Some((b, p.max(b), a)),
        _ => None,
    };
    if let Some((b, p, _)) = rss
        && p - b > bounds.memory
    {
        failures.push(format!(
            "server memory grew by {:.1} MiB (bound {:.0} MiB)",
            (p - b) as f64 / 1048576.0,
            bounds.memory as f64 / 1048576.0
        ));
    }
    if fetches.is_empty() {
        failures.push("no legitimate fetch completed during the attack".into());
    }
    for f in &fetches {
        match f {
            Ok(d) if *d > bounds.fetch => failures.push(format!(
                "a legitimate fetch took {:.2} s (bound {:.1} s)",
                d.as_secs_f64(),
                bounds.fetch.as_secs_f64()
            )),
            Err(e) => failures.push(format!("a legitimate fetch failed: {e}")),
            Ok(_) => {}
        }
    }
    if let Some(expected) = attack.expect_close
        && result_ok(&failures)
        && !report.closed_with(expected)
    {
        failures.push(format!(
            "expected the server to close with {expected}; saw {:?}",
            report.closes
        ));
    }
    Outcome {
        attack: attack.name,
        report,
        rss,
        fetches: fetches
            .into_iter()
            .map(|f| f.map(|d| d.as_secs_f64()))
            .collect(),
        seconds,
        failures,
    }
}

fn result_ok(failures: &[String]) -> bool {
    !failures
        .iter()
        .any(|f| f.starts_with("the attack could not run"))
}
