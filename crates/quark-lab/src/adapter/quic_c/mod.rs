//! `quic-c`: quark through libquark's C API (crates/quark-ffi), to measure
//! what the boundary costs against `quic`. The lab's workload and hq-interop
//! code is shared with `quic`; only the way to quark differs: every call is
//! one of libquark's `extern "C"` functions (handles, the handle table,
//! caught panics; the pattern lent and the received bytes visited in place,
//! as `quic` uses quark's zero-copy calls). Every endpoint is caller-driven
//! (`QUARK_FLAG_CALLER_DRIVEN`): this runtime's thread runs quark's I/O and
//! timers inside `quark_process`, no library thread in between. Like an
//! event-loop C program, every handle is non-blocking and waits for the
//! endpoint's ready list (`quark_ready`, module `ready`; the endpoint's
//! readiness comes through `quark_on_work` from this runtime's reactor);
//! connections are made with a non-blocking `quark_connect_on_pem` (the
//! handshake runs in the endpoint's processing); connections are closed
//! with `quark_close_nowait` (the endpoint lingers for them, no thread
//! waits); only `quark_close` of an endpoint, which blocks by design
//! (driving the endpoint while its connections end), runs on a blocking
//! thread.
//!
//! Differences that come with the C API: the client's connections share one
//! client endpoint (`quark_client` / `quark_connect_on_pem`, one UDP socket as
//! `quic`'s), the server is one endpoint on one thread (no
//! `--server-workers`), and libquark's transport settings
//! are quark's defaults (the `quic` adapter's `QUARK_TUNE` and `--cc` do not
//! reach it). quark's CPU breakdown counters are switched as for `quic`.

mod ready;
mod stream;

use std::ffi::CString;
use std::net::SocketAddr;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use anyhow::Context;
use tokio::task::{AbortHandle, JoinHandle};

use self::ready::{Ready, check};
use self::stream::OwnedStream;
use super::hq::{self, ALPN};
use super::tls::{Cipher, SERVER_NAME};
use super::{
    Adapter, BoxFuture, Client, ClientConfig, Connection, CpuCounters, Request, ServeConfig,
    Server, ServerStats,
};

/// Every endpoint is caller-driven (this runtime's threads run it), and it
/// and every handle made on it start non-blocking: no
/// `quark_set_nonblocking` per connection or stream.
const DRIVEN: u32 = quark_ffi::QUARK_FLAG_CALLER_DRIVEN | quark_ffi::QUARK_FLAG_NONBLOCKING;

/// The endpoints' flags: caller-driven, and without session resumption when
/// the lab turned it off (as `quic`'s TLS configurations then are).
fn flags() -> u32 {
    if super::tls::resumption() {
        DRIVEN
    } else {
        DRIVEN | quark_ffi::QUARK_FLAG_NO_RESUMPTION
    }
}

/// The `quic-c` adapter.
#[derive(Debug)]
pub struct QuicC;

fn c_string(s: &str) -> anyhow::Result<CString> {
    Ok(CString::new(s)?)
}

/// PEM text for DER `der` (what `quark_listen_pem` and CA files take).
fn pem(label: &str, der: &[u8]) -> String {
    const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut text = String::new();
    for chunk in der.chunks(3) {
        let n = chunk.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            let c = if i <= chunk.len() {
                B64[((n >> (18 - 6 * i)) & 63) as usize]
            } else {
                b'='
            };
            text.push(c as char);
        }
    }
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out + &format!("-----END {label}-----\n")
}

/// libquark's name for the lab's cipher (`quark_connect_with`).
fn cipher_name(c: Cipher) -> &'static str {
    match c {
        Cipher::Aes128Gcm => "aes128",
        Cipher::Aes256Gcm => "aes256",
        Cipher::Chacha20 => "chacha20",
    }
}

/// Closes an endpoint handle on a blocking thread (the call
/// blocks by design), once `watcher` (if any) no longer polls its descriptor.
async fn close_blocking(handle: i64, watcher: Option<JoinHandle<()>>) {
    if let Some(w) = watcher {
        ready::stop(w).await;
    }
    let _ = tokio::task::spawn_blocking(move || quark_ffi::quark_close(handle)).await;
}

struct QuicCServer {
    endpoint: i64,
    addr: SocketAddr,
    watcher: Option<JoinHandle<()>>,
    accept: JoinHandle<()>,
    /// The connection tasks, aborted with the server (each closes its
    /// handle as it drops): no shutdown signal polled at every wake-up.
    conns: Arc<Mutex<Vec<AbortHandle>>>,
}

impl Server for QuicCServer {
    fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(super::quic::breakdown())
    }
}

impl Drop for QuicCServer {
    fn drop(&mut self) {
        self.accept.abort();
        for c in std::mem::take(&mut *self.conns.lock().unwrap_or_else(|p| p.into_inner())) {
            c.abort();
        }
        let (endpoint, watcher) = (self.endpoint, self.watcher.take());
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(close_blocking(endpoint, watcher));
            }
            Err(_) => {
                // No runtime left: nothing polls the descriptor any more.
                std::thread::spawn(move || quark_ffi::quark_close(endpoint));
            }
        }
    }
}

/// Unregisters and closes a server connection's handle however its task
/// ends (aborted with the server, too).
struct ConnGuard {
    conn: i64,
    ready: Arc<Ready>,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        dump_stats("c-server", self.conn);
        self.ready.unregister(self.conn);
        // The endpoint lingers for what is unacknowledged: no thread waits
        // (a blocking close on a thread of its own cost a hand-off and a
        // second thread driving the endpoint per connection).
        quark_ffi::quark_close_nowait(self.conn);
    }
}

async fn serve_connection(conn: i64, ready: Arc<Ready>, stats: Arc<ServerStats>) {
    let _open = stats.connection();
    let _guard = ConnGuard {
        conn,
        ready: ready.clone(),
    };
    ready.register(conn);
    let ready = &ready;
    let stats = &stats;
    super::serve::serve_streams(
        || async move {
            let s = ready
                .retry(conn, || quark_ffi::quark_stream_accept(conn))
                .await;
            // Negative: the connection ended.
            (s > 0).then(|| OwnedStream::new(s, ready.clone()))
        },
        |s: OwnedStream| async move {
            // Failures are counted by the request guard.
            let _ = hq::serve_stream(s.half(), s.half(), stats).await;
        },
    )
    .await;
}

fn serve(cfg: ServeConfig) -> anyhow::Result<Box<dyn Server>> {
    quark::counters::set_enabled(super::quic::counters_wanted());
    let cert = c_string(&pem("CERTIFICATE", &cfg.identity.cert))?;
    let key = c_string(&pem("PRIVATE KEY", cfg.identity.key.secret_pkcs8_der()))?;
    let alpn = c_string(std::str::from_utf8(ALPN)?)?;
    let addr = c_string(&cfg.listen.to_string())?;
    let endpoint = quark_ffi::call::listen_pem_flags(&addr, &cert, &key, &alpn, flags());
    check("quark_listen_pem_flags", endpoint)
        .with_context(|| format!("cannot listen on udp {}", cfg.listen))?;
    let port = quark_ffi::quark_local_port(endpoint);
    let ready = Arc::new(Ready::default());
    let started = check("quark_local_port", i64::from(port)).and_then(|_| {
        ready.register(endpoint);
        ready::watch(endpoint, ready.clone())
    });
    let watcher = match started {
        Ok(w) => w,
        Err(e) => {
            quark_ffi::quark_close(endpoint);
            return Err(e);
        }
    };
    let conns: Arc<Mutex<Vec<AbortHandle>>> = Arc::default();
    let stats = cfg.stats;
    let tasks = conns.clone();
    let accept = tokio::spawn(async move {
        loop {
            let conn = ready
                .retry(endpoint, || quark_ffi::quark_accept(endpoint))
                .await;
            if conn <= 0 {
                return;
            }
            let task = tokio::spawn(serve_connection(conn, ready.clone(), stats.clone()));
            let mut tasks = tasks.lock().unwrap_or_else(|p| p.into_inner());
            tasks.retain(|t| !t.is_finished());
            tasks.push(task.abort_handle());
        }
    });
    Ok(Box::new(QuicCServer {
        endpoint,
        addr: SocketAddr::new(cfg.listen.ip(), port as u16),
        watcher: Some(watcher),
        accept,
        conns,
    }))
}

/// With `QUARK_LAB_CONN_STATS=DIR` (as for `quic`), appends a connection's
/// counters from `quark_conn_stats` to `DIR/SIDE-PID.txt` as it closes: the
/// datagram size it reached and how (PMTU probes, a size from the endpoint's
/// cache), PTOs and losses.
fn dump_stats(side: &str, conn: i64) {
    super::stats::append_conn_stats(side, || {
        let s = quark_ffi::call::conn_stats(conn).ok()?;
        Some(format!(
            "dgram_in={} dgram_out={} pkt_out={} lost={} ptos={} mtu_probes={} mtu_adopted={} mds={} bytes_out={} rtt_us={}",
            s.datagrams_received,
            s.datagrams_sent,
            s.packets_sent,
            s.packets_lost,
            s.ptos,
            s.mtu_probes,
            s.mtu_adopted,
            s.max_datagram_size,
            s.bytes_sent,
            s.rtt_us
        ))
    });
}

/// What every connection of a client connects with.
struct Target {
    addr: CString,
    name: CString,
    alpn: CString,
    ca: CString,
    ciphers: CString,
}

struct QuicCClient {
    target: Arc<Target>,
    /// The client endpoint every connection shares (`quark_client`), like
    /// `quic`'s one client socket.
    endpoint: i64,
    ready: Arc<Ready>,
    watcher: Option<JoinHandle<()>>,
}

impl Drop for QuicCClient {
    fn drop(&mut self) {
        let (endpoint, watcher) = (self.endpoint, self.watcher.take());
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(close_blocking(endpoint, watcher));
            }
            Err(_) => {
                if let Some(w) = watcher {
                    w.abort();
                }
                std::thread::spawn(move || quark_ffi::quark_close(endpoint));
            }
        }
    }
}

impl QuicCClient {
    /// Inside the lab's runtime: the endpoint runs on it.
    fn new(cfg: &ClientConfig) -> anyhow::Result<Self> {
        quark::counters::set_enabled(super::quic::counters_wanted());
        let target = Target {
            addr: c_string(&cfg.server.to_string())?,
            name: c_string(SERVER_NAME)?,
            alpn: c_string(std::str::from_utf8(ALPN)?)?,
            // The roots in memory: no file to leave behind (a CA file per
            // certificate was left in the temporary directory by every run).
            ca: c_string(&pem("CERTIFICATE", &cfg.cert))?,
            ciphers: c_string(cipher_name(cfg.cipher))?,
        };
        // Bound as `quic`'s client is (loopback for a loopback server, not
        // the wildcard), so that the two differ only in the boundary.
        let local = super::client_bind(cfg.server).to_string();
        let endpoint = quark_ffi::call::client(&c_string(&local)?, flags());
        check("quark_client", endpoint)?;
        // Non-blocking from the start (`flags`): connects return before
        // the handshake, as `connect(2)` on a non-blocking socket.
        let ready = Arc::new(Ready::default());
        let watcher = match ready::watch(endpoint, ready.clone()) {
            Ok(w) => w,
            Err(e) => {
                quark_ffi::quark_close(endpoint);
                return Err(e);
            }
        };
        Ok(QuicCClient {
            target: Arc::new(target),
            endpoint,
            ready,
            watcher: Some(watcher),
        })
    }
}

impl Client for QuicCClient {
    fn connect(&self) -> BoxFuture<'_, anyhow::Result<Arc<dyn Connection>>> {
        Box::pin(async move {
            let t = &self.target;
            // The endpoint is non-blocking: the handle comes at once, the
            // watcher's `quark_process` carries the handshake, and
            // `quark_connected` says when it is done (as `connect(2)` and
            // SO_ERROR on a non-blocking socket): no thread waits for it.
            let conn = quark_ffi::call::connect(
                quark_ffi::call::Via::EndpointPem(self.endpoint),
                &t.addr,
                &t.name,
                &t.alpn,
                false,
                Some(&t.ca),
                Some(&t.ciphers),
            );
            check("quark_connect_on_pem", conn).context("QUIC handshake")?;
            let connected = async {
                self.ready.register(conn);
                let done = self
                    .ready
                    .retry(conn, || i64::from(quark_ffi::quark_connected(conn)))
                    .await;
                check("quark_connected", done)
            };
            if let Err(e) = connected.await {
                self.ready.unregister(conn);
                quark_ffi::quark_close_nowait(conn);
                return Err(e).context("QUIC handshake");
            }
            Ok(Arc::new(QuicCConn {
                conn,
                ready: self.ready.clone(),
                closed: AtomicBool::new(false),
            }) as Arc<dyn Connection>)
        })
    }

    fn cpu_counters(&self) -> Option<CpuCounters> {
        Some(super::quic::breakdown())
    }
}

struct QuicCConn {
    conn: i64,
    ready: Arc<Ready>,
    /// Closing has begun.
    closed: AtomicBool,
}

impl QuicCConn {
    /// Closes (once) without waiting, like `quic`'s close: the endpoint
    /// keeps the connection until what was written is acknowledged, then
    /// sends the close (`quark_close_nowait`).
    fn begin_close(&self) {
        if self.closed.swap(true, std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        dump_stats("c-client", self.conn);
        self.ready.unregister(self.conn);
        quark_ffi::quark_close_nowait(self.conn);
    }
}

impl Drop for QuicCConn {
    fn drop(&mut self) {
        self.begin_close();
    }
}

impl Connection for QuicCConn {
    fn request(&self, req: Request) -> BoxFuture<'_, anyhow::Result<()>> {
        Box::pin(async move {
            let conn = self.conn;
            let s = self
                .ready
                .retry(conn, || quark_ffi::quark_stream_open(conn))
                .await;
            let s = OwnedStream::new(check("quark_stream_open", s)?, self.ready.clone());
            hq::request(s.half(), s.half(), req).await
        })
    }

    fn close(&self) -> BoxFuture<'_, anyhow::Result<()>> {
        self.begin_close();
        Box::pin(async { Ok(()) })
    }
}

impl Adapter for QuicC {
    fn name(&self) -> &'static str {
        "quic-c"
    }

    fn about(&self) -> &'static str {
        "quark QUIC through libquark's C API (quark-ffi; caller-driven, non-blocking handles, quark_ready), hq-interop"
    }

    fn serve(&self, cfg: ServeConfig) -> BoxFuture<'static, anyhow::Result<Box<dyn Server>>> {
        Box::pin(async move { serve(cfg) })
    }

    fn client(&self, cfg: ClientConfig) -> BoxFuture<'static, anyhow::Result<Arc<dyn Client>>> {
        Box::pin(async move { Ok(Arc::new(QuicCClient::new(&cfg)?) as Arc<dyn Client>) })
    }
}
