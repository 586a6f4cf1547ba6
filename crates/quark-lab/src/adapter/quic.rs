//! `quic`: hq-interop over quark, the stack under test. Same shape as the
//! `quinn` adapter: one endpoint per side, one bidirectional stream per request.
//!
//! With [`ServeConfig::workers`] the server is a [`quark::WorkerGroup`]: that
//! many threads with a socket each on the same port (`SO_REUSEPORT`), every
//! connection served on the thread that owns it. The kernel spreads by 4-tuple,
//! so the client spreads its connections over [`ClientConfig::sockets`] endpoints.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use anyhow::Context;
use tokio::task::JoinHandle;

use super::hq::{self, ALPN};
use super::tls::{Cipher, SERVER_NAME, client_config};
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, CpuCounters, Request, ServeConfig,
    Server, ServerStats,
};

/// Concurrent bidirectional streams a peer may open (above `parallel`'s 100).
const MAX_STREAMS: u64 = 1024;

/// The quark adapter.
#[derive(Debug)]
pub struct Quic;

/// quark's busy-poll window for this process (`quark bench --busy-poll`).
static QUIC_BUSY_POLL: std::sync::OnceLock<Duration> = std::sync::OnceLock::new();

pub(crate) fn busy_poll() -> Duration {
    QUIC_BUSY_POLL.get().copied().unwrap_or_default()
}

/// quark's congestion controller for this process (`quark bench --cc`).
static QUIC_CC: std::sync::OnceLock<quark::CcAlgorithm> = std::sync::OnceLock::new();

/// Choose quark's congestion controller for this process.
pub fn set_congestion_control(cc: quark::CcAlgorithm) {
    let _ = QUIC_CC.set(cc);
}

/// The QUIC version quark speaks in this process (`quark bench --quic-version`).
static QUIC_VERSION: std::sync::OnceLock<u32> = std::sync::OnceLock::new();

/// Make quark's clients and servers in this process speak only `version`
/// (1: RFC 9000, 2: RFC 9369): clients start in it and offer no other,
/// servers accept no other, so a run cannot end up in another version.
pub fn set_quic_version(version: u32) {
    let _ = QUIC_VERSION.set(version);
}

/// The endpoint settings for [`set_quic_version`] (the defaults when unset).
fn endpoint_config() -> quark::EndpointConfig {
    let mut config = quark::EndpointConfig::default();
    if let Some(&v) = QUIC_VERSION.get() {
        config.supported_versions = vec![v];
    }
    config
}

/// Whether `QUARK_TUNE` switches optimisation `name` off (`name=0`).
fn tuned_off(name: &str) -> bool {
    let tune = std::env::var("QUARK_TUNE").unwrap_or_default();
    tune.split(',').any(|t| t.trim() == format!("{name}=0"))
}

/// Whether a due loss-detection timer waits for unread datagrams (on, as
/// quark's default; `QUARK_TUNE=ptodefer=0` switches it off, see
/// `quark::Endpoint::set_timer_deferral`).
fn timer_deferral() -> bool {
    !tuned_off("ptodefer")
}

/// The idle timeout (RFC 9000 §10.1) of the lab's connections. The `scale`
/// scenario opens its connections one after the other (each then starts
/// with an idle path's RTT estimate: the cold start it measures); 20 000 of
/// them took over 30 s (quark's default) on the loaded 2-core machine, and
/// the first ones timed out before the phase ("response: timed out").
const IDLE_TIMEOUT: Duration = Duration::from_secs(120);

/// `QUARK_TUNE=rcvgrow=0`: no receive buffer beyond the socket's 32 MiB,
/// as before issue #33's 20 000-connection fix.
fn fixed_recv_buffer() -> bool {
    tuned_off("rcvgrow")
}

/// Transport settings; `uni` unidirectional streams for the peer (HTTP/3
/// needs a few: control and QPACK streams). `QUARK_TUNE` switches
/// optimisations off for the before/after tables (e.g.
/// `QUARK_TUNE=pmtud=0,ackfreq=0,pacing=0`; `pto1=0`: two probes per
/// application-data PTO, as before issue #33; `pathrtt=0`: each connection's
/// PTO from its own RTT samples only; `lazyheap=0`: the driver pushes every
/// deadline change on its heap, as before); GSO and GRO are switched by
/// quark-udp's `QUARK_NO_GSO` / `QUARK_NO_GRO`.
fn transport(uni: u64) -> Arc<quark::TransportConfig> {
    let off = tuned_off;
    Arc::new(quark::TransportConfig {
        congestion_control: *QUIC_CC.get().unwrap_or(&quark::CcAlgorithm::Cubic),
        max_concurrent_bidi_streams: MAX_STREAMS,
        max_concurrent_uni_streams: uni,
        mtu_discovery: !off("pmtud"),
        ack_frequency: !off("ackfreq"),
        pacing: !off("pacing"),
        data_pto_probes: if off("pto1") { 2 } else { 1 },
        shared_path_rtt: !off("pathrtt"),
        max_idle_timeout: IDLE_TIMEOUT,
        ..quark::TransportConfig::default()
    })
}

/// A server configuration for `alpn`, granting the client `uni` unidirectional streams.
pub(crate) fn server_config(
    cfg: &ServeConfig,
    alpn: &[u8],
    uni: u64,
) -> anyhow::Result<quark::ServerConfig> {
    let tls = cfg.identity.server_config(cfg.cipher, &[alpn])?;
    let mut sc = quark::ServerConfig::new(Arc::new(tls));
    sc.transport = transport(uni);
    Ok(sc)
}

/// A client configuration for `alpn`, granting the server `uni` unidirectional streams.
pub(crate) fn quark_client_config(
    cert: &rustls_pki_types::CertificateDer<'static>,
    cipher: Cipher,
    alpn: &[u8],
    uni: u64,
) -> anyhow::Result<quark::ClientConfig> {
    let tls = client_config(cert, cipher, &[alpn])?;
    let mut cc = quark::ClientConfig::new(Arc::new(tls));
    cc.transport = transport(uni);
    if let Some(&v) = QUIC_VERSION.get() {
        cc.version = v;
        cc.compatible_versions.clear();
    }
    Ok(cc)
}

/// The breakdown counters run unless `QUARK_COUNTERS=0` (to measure their cost).
pub(crate) fn counters_wanted() -> bool {
    std::env::var("QUARK_COUNTERS").map_or(true, |v| v != "0")
}

enum QuicServer {
    /// One endpoint on the process's runtime.
    Single {
        endpoint: quark::Endpoint,
        task: JoinHandle<()>,
    },
    /// Worker threads.
    Group(quark::WorkerGroup),
}

impl Server for QuicServer {
    fn local_addr(&self) -> SocketAddr {
        match self {
            QuicServer::Single { endpoint, .. } => endpoint
                .local_addr()
                .unwrap_or_else(|_| SocketAddr::from(([0, 0, 0, 0], 0))),
            QuicServer::Group(group) => group.local_addr(),
        }
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(breakdown())
    }
}

/// The thesis' categories from quark's built-in counters; "remaining" is the
/// process's CPU time (getrusage) minus the measured categories.
pub(crate) fn breakdown() -> CpuCounters {
    let b = quark::counters::snapshot();
    let total = crate::metrics::process_cpu_ns();
    let measured = b.crypto_ns + b.send_ns + b.recv_ns + b.ack_ns;
    CpuCounters {
        packets: b.packets,
        ns: vec![
            ("crypto".into(), b.crypto_ns),
            ("sendmsg".into(), b.send_ns),
            ("recvmsg".into(), b.recv_ns),
            ("ack".into(), b.ack_ns),
            ("remaining".into(), total.saturating_sub(measured)),
        ],
    }
}

impl Drop for QuicServer {
    fn drop(&mut self) {
        match self {
            QuicServer::Single { endpoint, task } => {
                endpoint.close(0, b"server closing");
                task.abort();
            }
            QuicServer::Group(group) => group.close(0, b"server closing"),
        }
    }
}

async fn serve_connection(conn: quark::Connection, stats: Arc<ServerStats>) {
    let _open = stats.connection();
    let stats = &stats;
    super::serve::serve_streams(
        || async { conn.accept_bi().await.ok() },
        |(send, recv)| async move {
            // Failures are counted by the request guard.
            let _ = hq::serve_stream(recv, send, stats).await;
        },
    )
    .await;
    dump_stats("server", &conn);
}

/// With `QUARK_LAB_CONN_STATS=DIR`, appends a connection's protocol counters
/// to `DIR/SIDE-PID.txt` when it ends: a diagnostic for the scale scenario
/// (how many packets, PTOs and losses a connection's requests cost).
fn dump_stats(side: &str, conn: &quark::Connection) {
    let Some(dir) = super::stats::append_conn_stats(side, || {
        let s = conn.stats();
        Some(format!(
            "dgram_in={} dgram_out={} pkt_in={} pkt_out={} dropped={} acks_in={} acks_out={} lost={} ptos={} probes={} putoff={} spurious={} mtu_probes={} mtu_adopted={} mds={} bytes_out={}",
            s.datagrams_in,
            s.datagrams_out,
            s.packets_in,
            s.packets_out,
            s.packets_dropped,
            s.acks_in,
            s.acks_out,
            s.packets_lost,
            s.ptos,
            s.probes_out,
            s.ptos_put_off,
            s.spurious_losses,
            s.mtu_probes,
            u8::from(conn.path_mtu_from_cache()),
            conn.path_mtu(),
            s.bytes_out
        ))
    }) else {
        return;
    };
    // The process's driver counters so far (rounds, late timers), replaced
    // at every close: the last one written covers the whole run.
    // With the socket's system calls and datagrams (GSO/GRO segments
    // counted one by one).
    let d = quark::counters::driver_snapshot();
    let u = quark_udp::stats::snapshot();
    let path = std::path::Path::new(&dir).join(format!("{side}-{}-driver.txt", std::process::id()));
    let _ = std::fs::write(
        path,
        format!(
            "rounds={} full_reads={} timers_fired={} timers_late={} max_late_ms={:.1} timers_held={} \
             loss_timers_fired={} heap_pushes={} parks={} send_calls={} sent={} recv_calls={} received={}\n",
            d.rounds,
            d.full_reads,
            d.timers_fired,
            d.timers_late,
            d.max_late_ns as f64 / 1e6,
            d.timers_held,
            d.loss_timers_fired,
            d.heap_pushes,
            d.parks,
            u.send_syscalls,
            u.send_datagrams,
            u.recv_syscalls,
            u.recv_datagrams,
        ),
    );
}

impl Adapter for Quic {
    fn name(&self) -> &'static str {
        "quic"
    }

    fn about(&self) -> &'static str {
        "quark QUIC (this project; rustls/ring), hq-interop"
    }

    fn in_default_suite(&self) -> bool {
        true
    }

    fn busy_poll(&self, window: Duration) -> bool {
        let _ = QUIC_BUSY_POLL.set(window);
        true
    }

    fn own_workers(&self) -> bool {
        true
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move {
            let config = server_config(&cfg, ALPN, 0)?;
            serve_quark(cfg, config, serve_connection)
        })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move {
            let config = quark_client_config(&cfg.cert, cfg.cipher, ALPN, 0)?;
            let endpoints = QuarkEndpoints::new(&cfg, config)?;
            Ok(Arc::new(QuicClient(endpoints)) as Arc<dyn Client>)
        })
    }
}

/// Serves `cfg.listen` with quark and `config`: worker threads when
/// [`ServeConfig::workers`] asks (every connection on the thread that owns
/// it), else one endpoint on this runtime; `serve` runs each connection.
pub(crate) fn serve_quark<F, Fut>(
    cfg: ServeConfig,
    config: quark::ServerConfig,
    serve: F,
) -> anyhow::Result<Box<dyn Server>>
where
    F: Fn(quark::Connection, Arc<ServerStats>) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    quark::counters::set_enabled(counters_wanted());
    let stats = cfg.stats;
    if let Some(n) = cfg.workers {
        let group = quark::WorkerGroup::bind(endpoint_config(), config, cfg.listen, n)
            .with_context(|| format!("cannot listen on udp {}", cfg.listen))?;
        group.set_busy_poll(busy_poll());
        group.set_timer_deferral(timer_deferral());
        group.set_lazy_deadlines(!tuned_off("lazyheap"));
        if fixed_recv_buffer() {
            group.set_recv_buffer_per_connection(0);
        }
        group.serve(move |conn| serve(conn, stats.clone()));
        return Ok(Box::new(QuicServer::Group(group)));
    }
    let endpoint = quark::Endpoint::with_config(endpoint_config(), Some(config), cfg.listen)
        .with_context(|| format!("cannot listen on udp {}", cfg.listen))?;
    endpoint.set_busy_poll(busy_poll());
    endpoint.set_timer_deferral(timer_deferral());
    endpoint.set_lazy_deadlines(!tuned_off("lazyheap"));
    if fixed_recv_buffer() {
        endpoint.set_recv_buffer_per_connection(0);
    }
    let ep = endpoint.clone();
    let task = tokio::spawn(async move {
        while let Some(conn) = ep.accept().await {
            tokio::spawn(serve(conn, stats.clone()));
        }
    });
    Ok(Box::new(QuicServer::Single { endpoint, task }))
}

/// With [`share_path_rtts_across_clients`]: the first client endpoint made
/// in this process, whose path RTT cache every later one shares.
static CLIENT_RTT_ANCHOR: std::sync::Mutex<Option<Option<quark::Endpoint>>> =
    std::sync::Mutex::new(None);

/// Makes every quark client made from now on in this process share one path
/// RTT cache (the lab client's threads, `--client-threads`), as one client's
/// sockets do. Off by default: tests make many clients in one process.
pub fn share_path_rtts_across_clients() {
    let mut anchor = CLIENT_RTT_ANCHOR.lock().unwrap_or_else(|e| e.into_inner());
    anchor.get_or_insert(None);
}

/// Shares `first`'s path RTT cache with the process's anchor endpoint (or
/// makes `first` the anchor) when [`share_path_rtts_across_clients`] asked.
fn share_with_anchor(first: &quark::Endpoint) {
    let mut anchor = CLIENT_RTT_ANCHOR.lock().unwrap_or_else(|e| e.into_inner());
    match anchor.as_mut() {
        Some(Some(a)) => first.share_path_rtts_with(a),
        Some(slot @ None) => *slot = Some(first.clone()),
        None => {}
    }
}

/// A client's quark endpoints ([`ClientConfig::sockets`] of them, over AF_XDP
/// when `QUARK_XDP` asks) and what it connects with.
pub(crate) struct QuarkEndpoints {
    /// Connections take these in turn.
    endpoints: Vec<quark::Endpoint>,
    next: AtomicUsize,
    config: quark::ClientConfig,
    server: SocketAddr,
}

impl QuarkEndpoints {
    pub(crate) fn new(cfg: &ClientConfig, config: quark::ClientConfig) -> anyhow::Result<Self> {
        let bind = super::client_bind(cfg.server);
        quark::counters::set_enabled(counters_wanted());
        let endpoints = match quark_udp::xdp_from_env()? {
            Some(xdp) if cfg.sockets > 1 => xdp_clients(bind, &xdp, cfg.sockets)?,
            _ => (0..cfg.sockets.max(1))
                .map(|_| quark::Endpoint::client(bind))
                .collect::<std::io::Result<Vec<_>>>()?,
        };
        share_with_anchor(&endpoints[0]);
        for e in &endpoints {
            // One RTT estimate per path for all the client's sockets (the
            // connections of every socket go to the same server).
            e.share_path_rtts_with(&endpoints[0]);
            e.set_busy_poll(busy_poll());
            e.set_timer_deferral(timer_deferral());
            e.set_lazy_deadlines(!tuned_off("lazyheap"));
            if fixed_recv_buffer() {
                e.set_recv_buffer_per_connection(0);
            }
        }
        Ok(QuarkEndpoints {
            endpoints,
            next: AtomicUsize::new(0),
            config,
            server: cfg.server,
        })
    }

    /// A new connection from the next endpoint in turn.
    pub(crate) async fn connect(&self) -> anyhow::Result<quark::Connection> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) % self.endpoints.len();
        let conn = self.endpoints[i]
            .connect(self.config.clone(), self.server, SERVER_NAME)?
            .await
            .context("QUIC handshake")?;
        Ok(conn)
    }

    pub(crate) async fn wait_idle(&self) {
        for e in &self.endpoints {
            e.wait_idle().await;
        }
    }
}

/// `n` client endpoints over AF_XDP: an interface takes one XDP program, so
/// they share one and one port, each with the socket of its own receive queue
/// (queue `i`'s frames leave on queue `i` and reach the server's queue `i`: the
/// worker of that queue, as a distinct 4-tuple would with kernel UDP). The
/// interface needs `n` queues (the lab makes them).
fn xdp_clients(
    bind: SocketAddr,
    xdp: &quark_udp::XdpConfig,
    n: usize,
) -> anyhow::Result<Vec<quark::Endpoint>> {
    let kernel = quark_udp::bind_std_reuseport(bind, n)?;
    let local = kernel[0].local_addr()?;
    let program = quark_udp::XdpProgram::attach(local, xdp, n as u32)?;
    let mut endpoints = Vec::with_capacity(n);
    for (queue, socket) in kernel.into_iter().enumerate() {
        let socket = program
            .open(queue as u32, socket)
            .with_context(|| format!("AF_XDP socket for queue {queue}"))?;
        let config = endpoint_config();
        endpoints.push(quark::Endpoint::with_socket(config, None, socket)?);
    }
    Ok(endpoints)
}

struct QuicClient(QuarkEndpoints);

impl Client for QuicClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(
            async move { Ok(Arc::new(QuicConn(self.0.connect().await?)) as Arc<dyn Connection>) },
        )
    }

    fn wait_idle(&self) -> BoxFuture<'_, ()> {
        Box::pin(self.0.wait_idle())
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(breakdown())
    }
}

struct QuicConn(quark::Connection);

impl Connection for QuicConn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let (send, recv) = self.0.open_bi().await?;
            hq::request(send, recv, req).await
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        dump_stats("client", &self.0);
        self.0.close(0, b"done");
        Box::pin(async { Ok(()) })
    }
}
