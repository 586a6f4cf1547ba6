//! The quinn hq-interop client: every URL on its own stream of one
//! connection (two with `--resume`: the first URL, then the rest resuming
//! the first's session).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

use super::request::request_line;
use super::tls::{self, Cipher, Verify};

/// What `quinn-hq client` needs.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// `https://host:port/path` URLs, all naming the same server.
    pub urls: Vec<String>,
    /// Directory the files are written to (under the path's last segment).
    pub out: PathBuf,
    /// Trust anchors (PEM); `None` means `--insecure`.
    pub ca: Option<PathBuf>,
    /// TLS 1.3 suites to offer; all when empty.
    pub ciphers: Vec<Cipher>,
    /// Handshake timeout.
    pub connect_timeout: Duration,
    /// The first URL over its own connection, the rest over a second that
    /// resumes its session.
    pub resume: bool,
    /// With `resume`: the second connection's requests in 0-RTT.
    pub zero_rtt: bool,
    /// Start a 1-RTT key update once the handshake is confirmed.
    pub key_update: bool,
}

/// A parsed `https://host[:port]/path`.
#[derive(Debug, PartialEq, Eq)]
pub struct Url {
    /// Host name or address (no brackets).
    pub host: String,
    /// UDP port (443 when absent).
    pub port: u16,
    /// Path, starting with `/`.
    pub path: String,
}

/// Parses an `https://` URL.
pub fn parse_url(url: &str) -> anyhow::Result<Url> {
    let rest = url
        .strip_prefix("https://")
        .ok_or_else(|| anyhow!("{url}: not an https:// URL"))?;
    let (authority, path) = rest.find('/').map_or((rest, "/"), |i| rest.split_at(i));
    let (host, port) = match authority.strip_prefix('[') {
        Some(v6) => {
            let (host, port) = v6
                .split_once(']')
                .ok_or_else(|| anyhow!("{url}: bad IPv6 address"))?;
            (host, port.strip_prefix(':'))
        }
        None => match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        },
    };
    if host.is_empty() {
        bail!("{url}: no host");
    }
    let port = port
        .map_or(Ok(443), |p| p.parse())
        .map_err(|_| anyhow!("{url}: bad port"))?;
    Ok(Url {
        host: host.to_string(),
        port,
        path: path.to_string(),
    })
}

/// The file name a downloaded path is saved under.
pub fn output_name(path: &str) -> &str {
    let path = path.split(['?', '#']).next().unwrap_or_default();
    match path.rsplit('/').next() {
        None | Some("" | "." | "..") => "index.html",
        Some(name) => name,
    }
}

/// Fetches every URL; fails if any download fails.
pub async fn run(opts: ClientOptions) -> anyhow::Result<()> {
    let urls = opts
        .urls
        .iter()
        .map(|u| parse_url(u))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let Some(first) = urls.first() else {
        bail!("no URLs given")
    };
    if urls
        .iter()
        .any(|u| (&u.host, u.port) != (&first.host, first.port))
    {
        bail!("all URLs must name the same server");
    }
    if !opts.out.is_dir() {
        bail!("-o {}: not a directory", opts.out.display());
    }
    let addr = resolve(&first.host, first.port).await?;
    let verify = opts.ca.as_deref().map_or(Verify::Insecure, Verify::CaFile);
    let config = tls::client_config(verify, &opts.ciphers)?;
    let bind: SocketAddr = if addr.is_ipv6() {
        "[::]:0"
    } else {
        "0.0.0.0:0"
    }
    .parse()?;
    let endpoint = quinn::Endpoint::client(bind)?;
    let (config, checks) = config;
    let one = Connection {
        opts: &opts,
        endpoint: &endpoint,
        config,
        addr,
        host: &first.host,
    };
    let start = Instant::now();
    let (fetched, summary) = if opts.resume {
        if urls.len() < 2 {
            bail!("--resume needs two URLs or more");
        }
        let mut fetched = one.fetch(&urls[..1], false).await?.0;
        let before = checks.checks();
        let (more, early) = one.fetch(&urls[1..], opts.zero_rtt).await?;
        fetched.extend(more);
        // A resumed handshake has no server certificate to check.
        let mut summary = match checks.checks() == before {
            true => ", resumed".to_string(),
            false => ", full handshake (no resumption)".to_string(),
        };
        if opts.zero_rtt {
            summary += match early {
                Some(true) => ", 0-RTT accepted",
                Some(false) => ", 0-RTT rejected",
                None => ", 0-RTT unavailable",
            };
        }
        (fetched, summary)
    } else {
        (one.fetch(&urls, false).await?.0, String::new())
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
    let (mut total, mut failed) = (0u64, 0usize);
    for (url, result) in urls.iter().zip(fetched) {
        match result {
            Ok(n) => total += n,
            Err(e) => {
                failed += 1;
                eprintln!("error: {}: {e:#}", url.path);
            }
        }
    }
    eprintln!(
        "{} of {} files, {total} bytes in {:.3} s{summary}",
        urls.len() - failed,
        urls.len(),
        start.elapsed().as_secs_f64()
    );
    if failed > 0 {
        bail!("{failed} of {} downloads failed", urls.len());
    }
    Ok(())
}

/// What each connection of a run shares.
struct Connection<'a> {
    opts: &'a ClientOptions,
    endpoint: &'a quinn::Endpoint,
    config: quinn::ClientConfig,
    addr: SocketAddr,
    host: &'a str,
}

impl Connection<'_> {
    /// Fetch `urls` over a new connection: each file's size or error, and
    /// with `early` whether the server accepted 0-RTT (`None`: no ticket
    /// allowed it).
    async fn fetch(
        &self,
        urls: &[Url],
        early: bool,
    ) -> anyhow::Result<(Vec<anyhow::Result<u64>>, Option<bool>)> {
        let (opts, addr) = (self.opts, self.addr);
        let connecting = self
            .endpoint
            .connect_with(self.config.clone(), addr, self.host)?;
        let (conn, accepted) = match early {
            true => match connecting.into_0rtt() {
                Ok((conn, accepted)) => (conn, Some(accepted)),
                Err(connecting) => (self.established(connecting).await?, None),
            },
            false => (self.established(connecting).await?, None),
        };
        if let [only] = opts.ciphers[..] {
            // rustls offered nothing else, so this is the suite in use.
            eprintln!("cipher-suite: {} (the only one offered)", only.marker());
        }
        if opts.key_update {
            // quinn updates once established, not waiting for confirmation
            // (RFC 9001 §6.1): HANDSHAKE_DONE comes about a round trip after
            // the handshake, so wait two.
            let conn = conn.clone();
            tokio::spawn(async move {
                tokio::time::sleep(2 * conn.rtt() + Duration::from_millis(5)).await;
                conn.force_key_update();
            });
        }
        let tasks: Vec<_> = urls
            .iter()
            .map(|url| {
                let dest = opts.out.join(output_name(&url.path));
                tokio::spawn(fetch(conn.clone(), url.path.clone(), dest))
            })
            .collect();
        let mut fetched = Vec::new();
        for task in tasks {
            fetched.push(task.await?);
        }
        let early = match accepted {
            Some(accepted) => Some(accepted.await),
            None => None,
        };
        // The server's session tickets come about a round trip after the
        // handshake; the downloads took at least that.
        conn.close(0u8.into(), b"done");
        Ok((fetched, early))
    }

    async fn established(
        &self,
        connecting: quinn::Connecting,
    ) -> anyhow::Result<quinn::Connection> {
        let addr = self.addr;
        tokio::time::timeout(self.opts.connect_timeout, connecting)
            .await
            .map_err(|_| anyhow!("{addr}: no answer within {:?}", self.opts.connect_timeout))?
            .with_context(|| format!("{addr}: connection failed"))
    }
}

/// An address for `host`, IPv4 first (`localhost` may name `::1` too).
async fn resolve(host: &str, port: u16) -> anyhow::Result<SocketAddr> {
    let addrs: Vec<SocketAddr> = tokio::net::lookup_host((host, port))
        .await
        .with_context(|| format!("cannot resolve {host}"))?
        .collect();
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or(addrs.first())
        .copied()
        .ok_or_else(|| anyhow!("cannot resolve {host}"))
}

async fn fetch(conn: quinn::Connection, path: String, dest: PathBuf) -> anyhow::Result<u64> {
    let (mut send, mut recv) = conn.open_bi().await?;
    send.write_all(request_line(&path).as_bytes()).await?;
    send.finish()?;
    let result = receive(&mut recv, &dest).await;
    if result.is_err() {
        let _ = recv.stop(0u8.into());
        let _ = std::fs::remove_file(&dest);
    }
    result
}

async fn receive(recv: &mut quinn::RecvStream, dest: &Path) -> anyhow::Result<u64> {
    let file = tokio::fs::File::create(dest)
        .await
        .with_context(|| dest.display().to_string())?;
    let mut file = tokio::io::BufWriter::with_capacity(256 * 1024, file);
    let n = tokio::io::copy(recv, &mut file).await?;
    tokio::io::AsyncWriteExt::flush(&mut file).await?;
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        assert_eq!(
            parse_url("https://localhost:4433/a/b.bin").unwrap(),
            Url {
                host: "localhost".into(),
                port: 4433,
                path: "/a/b.bin".into()
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
        assert_eq!(
            parse_url("https://h/../x").unwrap().path,
            "/../x",
            "kept verbatim for the server to judge"
        );
        assert!(parse_url("http://h/").is_err());
        assert!(parse_url("https://h:70000/").is_err());
        assert!(parse_url("https://:1/").is_err());
        assert!(parse_url("https://[::1/").is_err());
    }

    #[test]
    fn output_names() {
        assert_eq!(output_name("/a/b.bin"), "b.bin");
        assert_eq!(output_name("/"), "index.html");
        assert_eq!(output_name("/x?y=1"), "x");
        assert_eq!(output_name("/a/.."), "index.html");
    }
}
