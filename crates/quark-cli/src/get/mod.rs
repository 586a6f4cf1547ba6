//! `quark get`: fetch URLs over hq-interop (or HTTP/3 with `--h3`), in
//! parallel as streams of one connection (two with `--resume`).

mod conn;
mod dial;
mod fetch;
mod zero_rtt;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, bail};
use clap::Args;
use quark::tls::{self, Verify};

use self::conn::{Plan, Role};
use crate::options::{TransportArgs, parse_quic_version};

/// Fetch files over hq-interop or HTTP/3.
#[derive(Args, Debug)]
pub(crate) struct GetArgs {
    /// URLs like https://host:port/path, all on the same server.
    #[arg(required = true)]
    pub(crate) urls: Vec<String>,
    /// Where bodies go: a directory (each saved under its URL's last path
    /// segment), `-` for standard output, or with one URL a file (e.g.
    /// `/dev/null`).
    #[arg(short, long, default_value = ".")]
    pub(crate) output: String,
    /// Trust the certificates in this PEM file.
    #[arg(long, conflicts_with = "insecure")]
    pub(crate) ca: Option<PathBuf>,
    /// Do not verify the server certificate.
    #[arg(long)]
    pub(crate) insecure: bool,
    /// Connect to these addresses for HOST:PORT instead of resolving HOST,
    /// as curl's option: `HOST:PORT:ADDR[,ADDR...]`, IPv6 addresses in
    /// brackets. The certificate is still checked against HOST. Repeatable.
    /// With several addresses (resolved or given), the first to answer is
    /// used (RFC 8305).
    #[arg(long, value_name = "HOST:PORT:ADDRS", value_parser = dial::parse_resolve)]
    pub(crate) resolve: Vec<dial::Resolve>,
    /// Give up connecting after this many seconds.
    #[arg(long, default_value_t = 10)]
    pub(crate) connect_timeout: u64,
    /// No progress bar or summary.
    #[arg(short, long)]
    pub(crate) quiet: bool,
    /// Speak HTTP/3 (ALPN h3) instead of hq-interop.
    #[arg(long)]
    pub(crate) h3: bool,
    /// With --h3: QPACK dynamic table capacity in bytes we allow the peer's
    /// encoder, and the most our encoder uses of the peer's (0: static table
    /// only, no QPACK streams).
    #[arg(long, default_value_t = quark_h3::QPACK_CAPACITY)]
    pub(crate) qpack_capacity: u64,
    /// With --h3: streams the peer's QPACK encoder may leave blocked.
    #[arg(long, default_value_t = quark_h3::QPACK_BLOCKED_STREAMS)]
    pub(crate) qpack_blocked_streams: u64,
    /// With --h3: the requests' priority (RFC 9218 Priority header), e.g.
    /// `u=0` (most urgent) to `u=7`, `,i` for incremental: `u=5,i`.
    #[arg(long, value_parser = parse_priority, requires = "h3")]
    pub(crate) priority: Option<quark_h3::Priority>,
    /// Start a 1-RTT key update as soon as the handshake is confirmed (the
    /// interop runner's keyupdate case); quark otherwise updates keys by
    /// itself before their confidentiality limit.
    #[arg(long)]
    pub(crate) key_update: bool,
    /// Send the requests in 0-RTT. rustls keeps session tickets in memory
    /// only (they cannot be saved to a file), so a first connection in the
    /// same run gets a ticket, then the real one resumes with it; the
    /// summary says whether the server accepted the early data. Requests
    /// are GETs (with `--h3` too), safe to send early.
    #[arg(long = "0rtt")]
    pub(crate) zero_rtt: bool,
    /// Fetch the first URL over a connection of its own, then the rest over
    /// a second that resumes its TLS session (with `--0rtt`, in 0-RTT, and
    /// no connection made only for a ticket); the summary says whether the
    /// second resumed.
    #[arg(long)]
    pub(crate) resume: bool,
    /// QUIC version to speak from the first packet: 1 (RFC 9000) or 2 (RFC
    /// 9369). A server without it answers with Version Negotiation and the
    /// connection fails (no silent fallback). Starting in 1, the client
    /// offers 2 and a server preferring 2 moves the connection to it.
    #[arg(long, default_value = "1", value_parser = parse_quic_version)]
    pub(crate) quic_version: u32,
    /// Stay in the starting version: offer no other (RFC 9368).
    #[arg(long)]
    pub(crate) no_version_upgrade: bool,
    #[command(flatten)]
    pub(crate) request: crate::get_http::RequestArgs,
    #[command(flatten)]
    pub(crate) transport: TransportArgs,
}

/// A parsed `https://host[:port]/path` URL.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Url {
    pub(crate) host: String,
    pub(crate) port: u16,
    pub(crate) path: String,
}

pub(crate) fn parse_url(url: &str) -> anyhow::Result<Url> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| anyhow!("{url}: only https:// URLs are supported"))?;
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let (h, p) = v6
            .split_once(']')
            .ok_or_else(|| anyhow!("{url}: bad IPv6 address"))?;
        (h.to_string(), p.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), Some(p)),
            None => (authority.to_string(), None),
        }
    };
    if host.is_empty() {
        bail!("{url}: missing host");
    }
    let port = match port {
        Some(p) => p.parse().map_err(|_| anyhow!("{url}: bad port '{p}'"))?,
        None => 443,
    };
    Ok(Url {
        host,
        port,
        path: path.to_string(),
    })
}

fn output_name(path: &str) -> String {
    let name = path
        .split(['?', '#'])
        .next()
        .unwrap_or_default()
        .rsplit('/')
        .next()
        .unwrap_or_default();
    if name.is_empty() || name == "." || name == ".." {
        "index.html".into()
    } else {
        name.into()
    }
}

pub(crate) async fn run(args: GetArgs) -> anyhow::Result<()> {
    let urls: Vec<Url> = args
        .urls
        .iter()
        .map(|u| parse_url(u))
        .collect::<Result<_, _>>()?;
    let first = &urls[0];
    if let Some(other) = urls
        .iter()
        .find(|u| u.host != first.host || u.port != first.port)
    {
        bail!(
            "all URLs must name the same server ({}:{} vs {}:{})",
            first.host,
            first.port,
            other.host,
            other.port
        );
    }
    if args.resume && urls.len() < 2 {
        bail!(
            "--resume needs two URLs or more: the first for a session ticket, the rest to resume with it"
        );
    }
    let request = args.request.options().await?;
    if request.is_some() && !args.h3 {
        bail!("-i, -H, -X, -d and --data-binary need --h3");
    }
    // Early data can be replayed (RFC 9110 §9.2.1): safe methods only.
    if let Some(r) = request.as_ref().filter(|_| args.zero_rtt) {
        if !r.method.is_safe() {
            bail!(
                "--0rtt sends only safe methods (GET, HEAD), not {}",
                r.method
            );
        }
    }
    let to_stdout = args.output == "-";
    let out_dir = PathBuf::from(&args.output);
    // One URL and a path that is no directory: the body goes to that file.
    let to_file = !to_stdout && !out_dir.is_dir();
    if to_file && urls.len() > 1 {
        bail!(
            "-o {}: not a directory (with several URLs, -o names one)",
            out_dir.display()
        );
    }
    let out_file = to_file.then(|| out_dir.clone());
    let addrs = dial::addresses(first, &args.resolve).await?;
    let verify = match (&args.ca, args.insecure) {
        (_, true) => Verify::Insecure,
        (Some(ca), false) => Verify::CaFile(ca.clone()),
        (None, false) => bail!("no way to verify the server: give --ca FILE (or --insecure)"),
    };
    let suites = args.transport.cipher_suites()?;
    let (alpn, _) = crate::serve::protocol(args.h3);
    let mut config = tls::client_config_with(verify, &[alpn], &suites)?;
    let timeout = Duration::from_secs(args.connect_timeout);
    // The handshake gets the whole --connect-timeout: the transport's own
    // limit (10 s) bounds a server's half-open state, not a client's wait.
    config.transport = Arc::new(quark::TransportConfig {
        handshake_timeout: timeout,
        ..args.transport.transport_config()
    });
    config.version = args.quic_version;
    if args.no_version_upgrade {
        config.compatible_versions.clear();
    }
    let (endpoint, addrs) = dial::bind(args.transport.endpoint_config(), &addrs)?;
    endpoint.set_busy_poll(args.transport.busy_poll());
    if args.zero_rtt {
        config = config.with_0rtt();
    }
    let plan = Plan {
        args: &args,
        endpoint,
        server: first,
        request,
        to_stdout,
        out_dir,
        out_file,
        timeout,
    };
    // Later connections go where the first one's answer came from.
    if !args.resume {
        let mut addrs = addrs;
        if args.zero_rtt {
            addrs =
                vec![zero_rtt::prime(&plan.endpoint, &config, &addrs, &first.host, timeout).await?];
        }
        conn::fetch(&plan, config, &addrs, &urls, Role::Only).await?;
        return Ok(());
    }
    // The first URL over a connection of its own, whose session ticket the
    // second resumes for the rest (the interop runner's resumption and
    // zerortt cases).
    let addr = conn::fetch(&plan, config.clone(), &addrs, &urls[..1], Role::Ticket).await?;
    conn::fetch(&plan, config, &[addr], &urls[1..], Role::Resuming).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("https://localhost:4433/a/b").unwrap(),
            Url {
                host: "localhost".into(),
                port: 4433,
                path: "/a/b".into()
            }
        );
        assert_eq!(parse_url("https://[::1]:9/x").unwrap().host, "::1");
        assert_eq!(
            parse_url("https://h").unwrap(),
            Url {
                host: "h".into(),
                port: 443,
                path: "/".into()
            }
        );
        assert!(parse_url("http://h/").is_err());
        assert!(parse_url("https://h:99999/").is_err());
        assert!(parse_url("https://:1/").is_err());
    }

    #[test]
    fn names() {
        assert_eq!(output_name("/a/b.bin"), "b.bin");
        assert_eq!(output_name("/"), "index.html");
        assert_eq!(output_name("/x?y=1"), "x");
    }
}

/// `--priority`: `u=N` (urgency 0-7) and/or `i` (incremental), comma
/// separated, as in the Priority header field (RFC 9218 §4).
fn parse_priority(s: &str) -> Result<quark_h3::Priority, String> {
    let mut p = quark_h3::Priority::default();
    for member in s.split(',').map(str::trim) {
        match member.strip_prefix("u=").map(str::parse::<u8>) {
            Some(Ok(u)) if u <= 7 => p.urgency = u,
            None if member == "i" => p.incremental = true,
            _ => return Err(format!("{s:?}: expected u=N (0-7) and optionally ,i")),
        }
    }
    Ok(p)
}

#[cfg(test)]
mod priority_flag {
    use super::parse_priority;
    use quark_h3::Priority;

    #[test]
    fn urgency_and_incremental() {
        let p = |urgency, incremental| Priority {
            urgency,
            incremental,
        };
        assert_eq!(parse_priority("u=0"), Ok(p(0, false)));
        assert_eq!(parse_priority("u=5,i"), Ok(p(5, true)));
        assert_eq!(parse_priority("i"), Ok(p(3, true)));
        for bad in ["u=8", "u=1,", "fast", "u=-1", "U=1"] {
            assert!(parse_priority(bad).is_err(), "{bad}");
        }
    }
}
