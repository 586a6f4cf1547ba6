//! `quark serve`: a file server over hq-interop, or HTTP/3 with `--h3`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use clap::Args;
use quark::tls::{self, Identity};
use quark::{Endpoint, EndpointConfig, TransportConfig, WorkerGroup};
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::watch;

use crate::access_log::{AccessLog, Line};
use crate::options::{TransportArgs, parse_quic_version};
use crate::serve_tcp::TcpSide;

/// Serve files over hq-interop (HTTP/0.9 over QUIC) or HTTP/3.
#[derive(Args, Debug)]
pub(crate) struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:4433")]
    pub(crate) listen: SocketAddr,
    /// Directory to serve files from.
    #[arg(long)]
    pub(crate) root: PathBuf,
    /// Certificate chain (PEM). Without it a self-signed certificate is made.
    #[arg(long, requires = "key")]
    pub(crate) cert: Option<PathBuf>,
    /// Private key (PEM).
    #[arg(long, requires = "cert")]
    pub(crate) key: Option<PathBuf>,
    /// Write the (self-signed) certificate here, for clients' `--ca`.
    #[arg(long)]
    pub(crate) write_cert: Option<PathBuf>,
    /// Require address validation with a Retry before accepting connections.
    #[arg(long)]
    pub(crate) retry: bool,
    /// How long the address-validation token each connection gets
    /// (NEW_TOKEN) stays good, in seconds: a client back within it, from the
    /// same IP address, skips the Retry and the 3x limit (once per token).
    /// 0: no tokens.
    #[arg(long, default_value_t = 86_400, value_name = "SECS")]
    pub(crate) new_token_lifetime: u64,
    /// Accept 0-RTT from resuming clients. Tickets are single-use (kept in
    /// the server's memory, taken when used) so a replayed ClientHello gets
    /// no early data; see SECURITY.md.
    #[arg(long = "0rtt")]
    pub(crate) zero_rtt: bool,
    /// Worker threads, each with its own socket on the address (SO_REUSEPORT)
    /// serving its own connections; 1 serves from the main runtime.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=255))]
    pub(crate) workers: u16,
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
    /// Log one line per request (common log format with the protocol and
    /// seconds taken) to FILE (appended), or `-` for standard output.
    #[arg(long, value_name = "FILE|-")]
    pub(crate) access_log: Option<String>,
    /// Memory the connections may hold in all (512MiB, 2GiB, ...): past it
    /// new connections are refused and existing ones keep what they have.
    #[arg(long, default_value = "512MiB", value_parser = parse_memory)]
    pub(crate) max_memory: u64,
    /// QUIC versions to accept, most preferred first (1: RFC 9000, 2: RFC
    /// 9369). A client starting in a later one that offers an earlier one is
    /// moved to it (RFC 9368; `2,1` moves v1 clients that offer v2 to v2);
    /// Version Negotiation packets list them all.
    #[arg(long, value_delimiter = ',', default_value = "1,2", value_parser = parse_quic_version)]
    pub(crate) quic_versions: Vec<u32>,
    /// Announce this address (another IP of this host, the --listen port) as
    /// the server's preferred address (RFC 9000 §9.6); the server then listens
    /// on every address of the port, so clients can move there.
    #[arg(long)]
    pub(crate) preferred_address: Option<SocketAddr>,
    /// With --h3: Cache-Control max-age of the files served, in seconds
    /// (0: no-cache, browsers revalidate each time).
    #[arg(long, default_value_t = 300)]
    pub(crate) cache_max_age: u64,
    /// With --h3: answer a directory without index.html with a page listing
    /// its files (names starting with `.` left out) instead of 404.
    #[arg(long)]
    pub(crate) list_dirs: bool,
    /// With --h3: to clients that accept brotli or gzip, serve NAME.br or
    /// NAME.gz beside NAME (compressed ahead) with Content-Encoding.
    #[arg(long)]
    pub(crate) precompressed: bool,
    /// On SIGTERM, how long in-flight HTTP/3 requests may take to finish
    /// after GOAWAY before the server closes anyway, in seconds.
    #[arg(long, default_value_t = 30)]
    pub(crate) drain_timeout: u64,
    /// With --h3: do not also serve the files over HTTP/1.1 and HTTP/2 on
    /// TLS at the same TCP port (whose responses advertise HTTP/3 in Alt-Svc).
    #[arg(long)]
    pub(crate) no_tcp: bool,
    /// With --h3: TCP connections served at once (more wait in the backlog).
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub(crate) tcp_max_connections: u32,
    /// With --h3: seconds a TCP client has for its TLS handshake and for
    /// each HTTP/1.1 request head (idle keep-alive time included).
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) tcp_head_timeout: u64,
    /// With --h3: a TCP connection that moves no bytes either way for this
    /// many seconds is dropped (idle, or a client that stopped reading).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(1..))]
    pub(crate) tcp_idle_timeout: u64,
    #[command(flatten)]
    pub(crate) fleet: crate::fleet::FleetArgs,
    #[command(flatten)]
    pub(crate) transport: TransportArgs,
}

/// Session tickets the server keeps for 0-RTT (a few hundred bytes each):
/// past them the oldest are forgotten, and their clients do a full handshake.
const ZERO_RTT_TICKETS: usize = 16_384;

/// The endpoint settings `--quic-versions` chooses.
fn endpoint_config(args: &ServeArgs) -> EndpointConfig {
    EndpointConfig {
        supported_versions: args.quic_versions.clone(),
        ..args.transport.endpoint_config()
    }
}

/// The ALPN and name of the protocol `--h3` selects.
pub(crate) fn protocol(h3: bool) -> (&'static [u8], &'static str) {
    if h3 {
        (quark_h3::ALPN, "HTTP/3")
    } else {
        (quark::hq::ALPN, "hq-interop")
    }
}

/// A file server receives only requests: receive windows of 64 KiB per
/// stream and 256 KiB per connection (fixed, not grown) bound what a client
/// can make it buffer, where the transport's defaults (up to 16 MiB per
/// stream) suit uploads.
fn file_server_transport(args: &TransportArgs) -> TransportConfig {
    const STREAM: u64 = 64 * 1024;
    const CONNECTION: u64 = 256 * 1024;
    TransportConfig {
        stream_receive_window: STREAM,
        stream_receive_window_max: STREAM,
        receive_window: CONNECTION,
        receive_window_max: CONNECTION,
        ..args.transport_config()
    }
}

fn parse_memory(s: &str) -> Result<u64, String> {
    quark_lab::size::parse_size(s).map_err(|e| e.to_string())
}

/// The code connections close with at shutdown: H3_NO_ERROR for HTTP/3.
fn close_code(h3: bool) -> u64 {
    if h3 { quark_h3::error::H3_NO_ERROR } else { 0 }
}

/// An HTTP/3 connection's requests into the access log.
fn h3_log(log: AccessLog, peer: std::net::SocketAddr) -> quark_h3::files::AccessLog {
    quark_h3::files::AccessLog(Arc::new(move |s: &quark_h3::files::Served| {
        log.write(&Line {
            peer,
            method: s.method.as_str(),
            path: Some(&s.path),
            protocol: "HTTP/3",
            status: s.status.map(|s| s.as_u16()),
            bytes: s.bytes,
            elapsed: s.elapsed,
        })
    }))
}

/// An hq-interop connection's requests into the access log.
fn hq_log(log: AccessLog, peer: std::net::SocketAddr) -> quark::hq::AccessLog {
    Arc::new(move |s: &quark::hq::Served| {
        log.write(&Line {
            peer,
            method: "GET",
            path: s.path.as_deref(),
            protocol: "hq-interop",
            status: (s.status != 0).then_some(s.status),
            bytes: s.bytes,
            elapsed: s.elapsed,
        })
    })
}

/// What every connection is served with, and the drain signal (SIGTERM).
#[derive(Clone)]
struct Files {
    root: PathBuf,
    h3: bool,
    options: quark_h3::files::FileOptions,
    /// `--access-log`.
    log: Option<AccessLog>,
    /// Turns true on SIGTERM; closed once every HTTP/3 connection has ended
    /// (each holds a receiver).
    drain: Arc<watch::Sender<bool>>,
}

impl Files {
    /// Serves one connection's requests; an HTTP/3 one drains on SIGTERM.
    fn serve(&self, conn: quark::Connection) -> impl Future<Output = ()> + Send + use<> {
        let root = self.root.clone();
        let peer = conn.remote_address();
        // Subscribed now, not when first polled: the drain waits for this one.
        let h3 = self.h3.then(|| {
            let mut options = self.options.clone();
            options.access_log = self.log.clone().map(|log| h3_log(log, peer));
            (options, self.drain.subscribe())
        });
        let hq_log = self.log.clone().map(|log| hq_log(log, peer));
        // Each protocol's future boxed: the task holds only the one in use,
        // not room for the larger (HTTP/3's was ~1.5 KB in every idle hq
        // connection's task; issue #30).
        async move {
            match h3 {
                Some((options, drain)) => {
                    Box::pin(quark_h3::files::serve_files(
                        conn,
                        root,
                        options,
                        Some(drain),
                    ))
                    .await
                }
                None => {
                    let limit = quark::hq::REQUEST_TIME_LIMIT;
                    Box::pin(quark::hq::serve_connection_logged(
                        conn, root, limit, hq_log,
                    ))
                    .await
                }
            }
        }
    }

    /// SIGTERM: GOAWAY on every HTTP/3 connection, and a wait (at most
    /// `limit`) for them to finish their requests and close.
    async fn drain(&self, limit: Duration) {
        self.drain.send_replace(true);
        if tokio::time::timeout(limit, self.drain.closed())
            .await
            .is_err()
        {
            eprintln!("drain timeout: closing connections with requests in flight");
        }
    }
}

/// Resolves on SIGTERM.
async fn terminated(term: &mut Option<Signal>) {
    match term {
        Some(term) => {
            term.recv().await;
        }
        None => std::future::pending().await,
    }
}

pub(crate) async fn run(args: ServeArgs) -> anyhow::Result<()> {
    if let Some(path) = &args.fleet.write_key_file {
        return crate::fleet::write_key_file(path);
    }
    if !args.root.is_dir() {
        bail!("--root {}: not a directory", args.root.display());
    }
    if args.fleet.processes > 1 {
        return crate::fleet::launch(&args, listen_address(&args)?).await;
    }
    let identity = match (&args.cert, &args.key) {
        (Some(cert), Some(key)) => Identity::from_pem_files(cert, key)?,
        _ => Identity::self_signed(&["localhost", "127.0.0.1", "::1"])?,
    };
    eprintln!(
        "certificate SHA-256 fingerprint: {}",
        identity.fingerprint()
    );
    if let Some(path) = &args.write_cert {
        std::fs::write(path, identity.cert_pem())
            .with_context(|| format!("--write-cert {}", path.display()))?;
    }
    let suites = args.transport.cipher_suites()?;
    let (alpn, name) = protocol(args.h3);
    let mut config = tls::server_config_with(&identity, &[alpn], &suites)?;
    config.transport = Arc::new(file_server_transport(&args.transport));
    config.retry = args.retry;
    config.new_token_lifetime = Duration::from_secs(args.new_token_lifetime);
    if args.zero_rtt {
        config = config.with_0rtt(ZERO_RTT_TICKETS);
    }
    config.memory = quark::MemoryBudget::new(args.max_memory as usize);
    let listen = listen_address(&args)?;
    config.preferred_address = args.preferred_address;
    let mut endpoint_config = endpoint_config(&args);
    let keys = crate::fleet::apply(&args.fleet, args.workers, &mut endpoint_config, &mut config)?;
    let files = Files {
        root: args.root.canonicalize()?,
        h3: args.h3,
        options: quark_h3::files::FileOptions {
            cache_max_age: args.cache_max_age,
            h3: quark_h3::Config {
                qpack_max_table_capacity: args.qpack_capacity,
                qpack_blocked_streams: args.qpack_blocked_streams,
                ..Default::default()
            },
            access_log: None,
            list_directories: args.list_dirs,
            precompressed: args.precompressed,
        },
        log: args
            .access_log
            .as_deref()
            .map(AccessLog::open)
            .transpose()?,
        drain: Arc::new(watch::channel(false).0),
    };
    let mut term = signal(SignalKind::terminate()).ok();
    tokio::spawn(trim_heap());
    let tcp = TcpSide {
        identity: &identity,
        suites: &suites,
        root: &files.root,
        options: &files.options,
        log: files.log.as_ref(),
        args: &args,
    };
    if args.workers > 1 {
        return serve_workers(
            endpoint_config,
            config,
            &args,
            files.clone(),
            &mut term,
            tcp,
        )
        .await;
    }
    let base = config.clone();
    let lb = endpoint_config.quic_lb.as_ref().map(|lb| lb.server_id());
    let endpoint = match crate::fleet::inherited_socket(&args.fleet)? {
        Some(socket) => Endpoint::with_socket(endpoint_config, Some(config), socket)?,
        None => Endpoint::with_config(endpoint_config, Some(config), listen)
            .with_context(|| format!("cannot listen on {listen}"))?,
    };
    if keys.is_some() {
        crate::fleet::reload_on_sighup(&args.fleet, endpoint.clone(), base);
    }
    let _tcp = tcp.start(endpoint.local_addr()?).await?;
    endpoint.set_busy_poll(args.transport.busy_poll());
    let fleet = match (lb, &keys) {
        (None, None) => String::new(),
        (lb, keys) => format!(
            ", QUIC-LB server ID {}, keys {}",
            lb.map_or("-".into(), |id| format!("{id:?}")),
            keys.as_ref().map_or("own".into(), |k| format!("{k:?}"))
        ),
    };
    eprintln!(
        "serving {} on {} ({name}{fleet})",
        args.root.display(),
        endpoint.local_addr()?
    );
    loop {
        tokio::select! {
            conn = endpoint.accept() => {
                let Some(conn) = conn else { break };
                tracing::info!(remote = %conn.remote_address(), "connection");
                tokio::spawn(files.serve(conn));
            }
            _ = tokio::signal::ctrl_c() => {
                endpoint.close(close_code(args.h3), b"server shutting down");
                break;
            }
            () = terminated(&mut term) => {
                files.drain(Duration::from_secs(args.drain_timeout)).await;
                endpoint.close(close_code(args.h3), b"server shutting down");
                break;
            }
        }
    }
    let _ = tokio::time::timeout(Duration::from_secs(2), endpoint.wait_idle()).await;
    Ok(())
}

/// Where to bind: `--listen`, or with `--preferred-address` every address
/// of its port (the preferred address must share the port), so datagrams to
/// either address arrive and replies leave from the one the client used.
fn listen_address(args: &ServeArgs) -> anyhow::Result<SocketAddr> {
    let Some(preferred) = args.preferred_address else {
        return Ok(args.listen);
    };
    if preferred.port() != args.listen.port() || args.listen.port() == 0 {
        bail!("--preferred-address must use the --listen port (not 0)");
    }
    if preferred.is_ipv4() != args.listen.is_ipv4() {
        bail!("--preferred-address must be of the --listen address family");
    }
    let any: std::net::IpAddr = if preferred.is_ipv4() {
        std::net::Ipv4Addr::UNSPECIFIED.into()
    } else {
        std::net::Ipv6Addr::UNSPECIFIED.into()
    };
    Ok(SocketAddr::new(any, args.listen.port()))
}

/// Every few seconds, give the heap's free pages back to the system: after a
/// peak of connections (or an attack) has gone, the RSS falls back instead of
/// staying at the peak. Costs well under a millisecond when little is free.
async fn trim_heap() {
    let mut tick = tokio::time::interval(Duration::from_secs(5));
    loop {
        tick.tick().await;
        quark_udp::heap::release_free_memory();
    }
}

/// `--workers N`: every connection is served on the worker thread that owns it.
async fn serve_workers(
    endpoint_config: EndpointConfig,
    config: quark::ServerConfig,
    args: &ServeArgs,
    files: Files,
    term: &mut Option<Signal>,
    tcp: TcpSide<'_>,
) -> anyhow::Result<()> {
    let listen = listen_address(args)?;
    let group = WorkerGroup::bind(endpoint_config, config, listen, usize::from(args.workers))
        .with_context(|| format!("cannot listen on {listen}"))?;
    let _tcp = tcp.start(group.local_addr()).await?;
    group.set_busy_poll(args.transport.busy_poll());
    eprintln!(
        "serving {} on {} ({}, {} workers)",
        args.root.display(),
        group.local_addr(),
        protocol(args.h3).1,
        args.workers
    );
    let h3 = args.h3;
    let served = files.clone();
    group.serve(move |conn| {
        tracing::info!(remote = %conn.remote_address(), worker = ?conn.worker(), "connection");
        served.serve(conn)
    });
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminated(term) => files.drain(Duration::from_secs(args.drain_timeout)).await,
    }
    let _ = tokio::time::timeout(
        Duration::from_secs(2),
        group.shutdown(close_code(h3), b"server shutting down"),
    )
    .await;
    Ok(())
}
