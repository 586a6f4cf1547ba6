//! Endpoints and connections: listen, accept, connect, close.

use std::ffi::c_char;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::sync::Arc;

use parking_lot::Mutex;
use quark::connect_first::{ATTEMPT_DELAY, client_bind};
use quark::{Endpoint, tls};

use crate::error::QuarkError;
use crate::handshake::Handshake;
use crate::object::{
    Conn, Handle, LINGER, Object, Stream, c_str, c_str_opt, entry, entry_status, runtime,
};
use crate::options::{
    QUARK_FLAG_NO_RESUMPTION, caller_driven, close_driven, driven_endpoint, spin_bit_per_flags,
    with_flags,
};
use crate::ready::Ready;
use crate::table;
use crate::tls_cache::{FileStamp, TlsArgs, TlsCache};

/// ALPN protocols from a comma-separated list ("hq-interop,h3").
fn alpn_list(alpn: &str) -> Result<Vec<&[u8]>, QuarkError> {
    let list: Vec<&[u8]> = alpn
        .split(',')
        .filter(|a| !a.is_empty())
        .map(str::as_bytes)
        .collect();
    if list.is_empty() || list.iter().any(|a| a.len() > 255) {
        return Err(QuarkError::Inval);
    }
    Ok(list)
}

pub(crate) fn resolve(addr: &str) -> Result<SocketAddr, QuarkError> {
    addr.to_socket_addrs()
        .map_err(|_| QuarkError::Inval)?
        .next()
        .ok_or(QuarkError::Inval)
}

/// Every address `addr` ("host:port") resolves to, in the resolver's order
/// (a connect tries them all: `localhost` is often `::1` and `127.0.0.1`).
fn resolve_all(addr: &str) -> Result<Vec<SocketAddr>, QuarkError> {
    let all: Vec<SocketAddr> = addr
        .to_socket_addrs()
        .map_err(|_| QuarkError::Inval)?
        .collect();
    if all.is_empty() {
        return Err(QuarkError::Inval);
    }
    Ok(all)
}

/// Bind a server endpoint on `addr` ("127.0.0.1:4433", port 0 for any) with
/// the PEM certificate chain and key in the named files, offering the
/// comma-separated ALPN list `alpn`. Returns an endpoint handle.
///
/// Thread safety: safe from any thread; does not block on the network.
///
/// # Safety
/// Every argument is a NUL-terminated string valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_listen(
    addr: *const c_char,
    cert_pem_path: *const c_char,
    key_pem_path: *const c_char,
    alpn: *const c_char,
) -> i64 {
    // SAFETY: the caller's contract above.
    unsafe { listen_files(addr, cert_pem_path, key_pem_path, alpn, 0) }
}

/// `quark_listen` with `flags`.
///
/// # Safety
/// As `quark_listen`.
pub(crate) unsafe fn listen_files(
    addr: *const c_char,
    cert_pem_path: *const c_char,
    key_pem_path: *const c_char,
    alpn: *const c_char,
    flags: u32,
) -> i64 {
    entry(|| {
        // SAFETY: the caller's contract above.
        let (addr, cert, key, alpn) = unsafe {
            (
                c_str(addr)?,
                c_str(cert_pem_path)?,
                c_str(key_pem_path)?,
                c_str(alpn)?,
            )
        };
        let addr = resolve(addr)?;
        let identity = tls::Identity::from_pem_files(Path::new(cert), Path::new(key))
            .map_err(|_| QuarkError::Tls)?;
        bind_server(addr, &identity, alpn, flags)
    })
}

/// As `quark_listen`, with the PEM certificate chain and key given as
/// NUL-terminated strings in memory instead of file names.
///
/// Thread safety: safe from any thread; does not block on the network.
///
/// # Safety
/// Every argument is a NUL-terminated string valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_listen_pem(
    addr: *const c_char,
    cert_pem: *const c_char,
    key_pem: *const c_char,
    alpn: *const c_char,
) -> i64 {
    // SAFETY: the caller's contract above.
    unsafe { listen_pem(addr, cert_pem, key_pem, alpn, 0) }
}

/// `quark_listen_pem` with `flags`.
///
/// # Safety
/// As `quark_listen_pem`.
pub(crate) unsafe fn listen_pem(
    addr: *const c_char,
    cert_pem: *const c_char,
    key_pem: *const c_char,
    alpn: *const c_char,
    flags: u32,
) -> i64 {
    entry(|| {
        // SAFETY: the caller's contract above.
        let (addr, cert, key, alpn) = unsafe {
            (
                c_str(addr)?,
                c_str(cert_pem)?,
                c_str(key_pem)?,
                c_str(alpn)?,
            )
        };
        let identity = identity_from_pem(cert.as_bytes(), key.as_bytes())?;
        bind_server(resolve(addr)?, &identity, alpn, flags)
    })
}

fn identity_from_pem(cert: &[u8], key: &[u8]) -> Result<tls::Identity, QuarkError> {
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let chain: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(cert)
        .collect::<Result<_, _>>()
        .map_err(|_| QuarkError::Tls)?;
    let first = chain.first().cloned().ok_or(QuarkError::Tls)?;
    let key = PrivateKeyDer::from_pem_slice(key).map_err(|_| QuarkError::Tls)?;
    Ok(tls::Identity {
        cert: first,
        chain,
        key,
    })
}

fn bind_server(
    addr: SocketAddr,
    identity: &tls::Identity,
    alpn: &str,
    flags: u32,
) -> Result<i64, QuarkError> {
    let mut config =
        tls::server_config(identity, &alpn_list(alpn)?).map_err(|_| QuarkError::Tls)?;
    spin_bit_per_flags(&mut config.transport, flags);
    if flags & QUARK_FLAG_NO_RESUMPTION != 0 {
        let tls = Arc::make_mut(&mut config.tls);
        tls.send_tls13_tickets = 0;
        tls.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
    }
    if caller_driven(flags)? {
        let (endpoint, ready) = driven_endpoint(Some(config), addr)?;
        return table::insert(Object::Endpoint(endpoint), with_flags(ready, flags));
    }
    let _guard = runtime()?.enter();
    let endpoint = Endpoint::server(config, addr).map_err(|_| QuarkError::Io)?;
    table::insert(Object::Endpoint(endpoint), with_flags(Ready::new()?, flags))
}

/// The local UDP port of an endpoint or of a connection's endpoint.
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_local_port(handle: i64) -> i32 {
    entry(|| {
        let addr = match &table::get(handle)?.object {
            Object::Endpoint(e) => e.local_addr(),
            Object::Connection(Conn {
                own_endpoint: Some(e),
                ..
            }) => e.local_addr(),
            _ => return Err(QuarkError::WrongKind),
        };
        addr.map(|a| i64::from(a.port()))
            .map_err(|_| QuarkError::Io)
    }) as i32
}

/// Block until a client has completed its handshake with `endpoint`; returns
/// a connection handle, or `QUARK_ERROR_CLOSED` once the endpoint is closed.
///
/// Thread safety: safe from any thread; concurrent callers each get a
/// different connection.
#[unsafe(no_mangle)]
pub extern "C" fn quark_accept(endpoint: i64) -> i64 {
    entry(|| {
        let handle = table::get(endpoint)?;
        let Object::Endpoint(e) = &handle.object else {
            return Err(QuarkError::WrongKind);
        };
        let conn = handle.run(e.accept())?.ok_or(QuarkError::Closed)?;
        table::insert(
            Object::Connection(Conn::new(conn, None)),
            handle.ready.clone(),
        )
    })
}

/// Connect to `addr` ("host:port"), checking the certificate against
/// `server_name` and the PEM roots in `ca_pem_path`; with `insecure` non-zero
/// any certificate is accepted (tests only) and `ca_pem_path` may be NULL.
/// Blocks until the handshake completes; returns a connection handle. The
/// connection has a client endpoint of its own, closed with it. A host with
/// several addresses (`localhost` is often `::1` and `127.0.0.1`) is reached
/// on whichever answers first (RFC 8305: the next address 250 ms after the
/// last, 10 ms after a loopback one, at once after one failed), also with
/// `QUARK_FLAG_CALLER_DRIVEN`. A failed handshake is `QUARK_ERROR_CONNECT`,
/// or, like `connect(2)`'s ECONNREFUSED and EHOSTUNREACH,
/// `QUARK_ERROR_REFUSED` (nothing listens at the port) and
/// `QUARK_ERROR_UNREACHABLE` when an ICMP error said so: those come at
/// once, not after the handshake timeout.
///
/// Thread safety: safe from any thread.
///
/// # Safety
/// `addr`, `server_name` and `alpn` are NUL-terminated strings valid for the
/// call; `ca_pem_path` is one or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_connect(
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    insecure: i32,
    ca_pem_path: *const c_char,
) -> i64 {
    // SAFETY: the caller's contract above; no cipher list.
    unsafe {
        quark_connect_with(
            addr,
            server_name,
            alpn,
            insecure,
            ca_pem_path,
            std::ptr::null(),
        )
    }
}

/// As `quark_connect`, offering only the TLS 1.3 cipher suites in the
/// comma-separated list `ciphers` ("aes128", "aes256", "chacha20"; NULL or
/// "" for all, AES-128-GCM first). An unknown name is `QUARK_ERROR_INVAL`.
///
/// Thread safety: safe from any thread.
///
/// # Safety
/// As `quark_connect`; `ciphers` is a NUL-terminated string or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_connect_with(
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    insecure: i32,
    ca_pem_path: *const c_char,
    ciphers: *const c_char,
) -> i64 {
    // SAFETY: the caller's contract above.
    unsafe { connect(addr, server_name, alpn, insecure, ca_pem_path, ciphers, 0) }
}

/// `quark_connect_with` with `flags`.
///
/// # Safety
/// As `quark_connect_with`.
pub(crate) unsafe fn connect(
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    insecure: i32,
    ca_pem_path: *const c_char,
    ciphers: *const c_char,
    flags: u32,
) -> i64 {
    entry(|| {
        // SAFETY: the caller's contract above.
        let (addrs, name, mut config) = unsafe {
            client_args(
                addr,
                server_name,
                alpn,
                insecure,
                ca_pem_path,
                CaArg::Path,
                ciphers,
                None,
            )?
        };
        spin_bit_per_flags(&mut config.transport, flags);
        let (local, addrs) = client_bind(&addrs);
        if addrs.is_empty() {
            return Err(QuarkError::Inval);
        }
        if caller_driven(flags)? {
            let (endpoint, ready) = driven_endpoint(None, local)?;
            let d = ready.as_driven().ok_or(QuarkError::Internal)?;
            let handshake = {
                let _guard = d.enter();
                Handshake::start(&endpoint, config, addrs, name)?
            };
            let conn = d.block_on(handshake, None).ok_or(QuarkError::Connect)??;
            let ready = with_flags(ready, flags);
            return table::insert(Object::Connection(Conn::new(conn, Some(endpoint))), ready);
        }
        let rt = runtime()?;
        let endpoint = {
            let _guard = rt.enter();
            Endpoint::client(local).map_err(|_| QuarkError::Io)?
        };
        let conn = connect_blocking(&endpoint, rt, config, &addrs, name)?;
        table::insert(
            Object::Connection(Conn::new(conn, Some(endpoint))),
            with_flags(Ready::new()?, flags),
        )
    })
}

/// What a connect call's CA argument holds.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum CaArg {
    /// A PEM file's name (`quark_connect*`).
    Path,
    /// The PEM text itself (`quark_connect_on_pem`).
    Pem,
}

/// The peer's address, the server name and the TLS configuration of a
/// connect call; with `shared`, the configuration of the endpoint's last
/// connect if its TLS arguments were the same (`tls_cache.rs`).
///
/// # Safety
/// As `quark_connect_with`.
#[allow(clippy::too_many_arguments)] // the C call's arguments, as given
pub(crate) unsafe fn client_args<'a>(
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    insecure: i32,
    ca: *const c_char,
    ca_arg: CaArg,
    ciphers: *const c_char,
    shared: Option<&TlsCache>,
) -> Result<(Vec<SocketAddr>, &'a str, quark::ClientConfig), QuarkError> {
    // SAFETY: the caller's contract above.
    let (addr, name, alpn, ca, ciphers) = unsafe {
        (
            c_str(addr)?,
            c_str(server_name)?,
            c_str(alpn)?,
            c_str_opt(ca)?,
            c_str_opt(ciphers)?,
        )
    };
    let addrs = resolve_all(addr)?;
    let insecure = insecure != 0;
    if !insecure && ca.is_none() {
        return Err(QuarkError::Inval);
    }
    let Some(shared) = shared else {
        let verify = match ca {
            Some(ca) if !insecure && ca_arg == CaArg::Pem => {
                tls::Verify::Roots(ca_certs(ca.as_bytes())?)
            }
            Some(ca) if !insecure => tls::Verify::CaFile(ca.into()),
            _ => tls::Verify::Insecure,
        };
        return Ok((addrs, name, client_config(verify, alpn, ciphers)?));
    };
    let ca = ca.filter(|_| !insecure);
    let alpn_ciphers = (alpn, ciphers.unwrap_or(""));
    // Stamped before the read: a change during it gives a different stamp
    // next time, so it is noticed then.
    let stamp = ca.filter(|_| ca_arg == CaArg::Path).and_then(FileStamp::of);
    if let Some(s) = &stamp
        && let Some(config) = shared.unchanged(alpn_ciphers.0, alpn_ciphers.1, s)
    {
        return Ok((addrs, name, config));
    }
    let args = TlsArgs {
        insecure,
        ca_pem: match ca {
            Some(pem) if ca_arg == CaArg::Pem => Some(pem.as_bytes().to_vec()),
            Some(ca) => Some(std::fs::read(ca).map_err(|_| QuarkError::Tls)?),
            None => None,
        },
        alpn: alpn_ciphers.0.into(),
        ciphers: alpn_ciphers.1.into(),
    };
    let config = shared.get(args, stamp, |a| {
        let verify = match &a.ca_pem {
            Some(pem) => tls::Verify::Roots(ca_certs(pem)?),
            None => tls::Verify::Insecure,
        };
        client_config(verify, &a.alpn, Some(&a.ciphers))
    })?;
    Ok((addrs, name, config))
}

fn client_config(
    verify: tls::Verify,
    alpn: &str,
    ciphers: Option<&str>,
) -> Result<quark::ClientConfig, QuarkError> {
    let suites = cipher_list(ciphers.unwrap_or(""))?;
    tls::client_config_with(verify, &alpn_list(alpn)?, &suites).map_err(|_| QuarkError::Tls)
}

/// The certificates of a PEM file's contents; none is an error, as for
/// `Verify::CaFile`.
fn ca_certs(pem: &[u8]) -> Result<Vec<rustls_pki_types::CertificateDer<'static>>, QuarkError> {
    use rustls_pki_types::pem::PemObject;
    let certs: Vec<_> = rustls_pki_types::CertificateDer::pem_slice_iter(pem)
        .collect::<Result<_, _>>()
        .map_err(|_| QuarkError::Tls)?;
    if certs.is_empty() {
        return Err(QuarkError::Tls);
    }
    Ok(certs)
}

/// Cipher suites from a comma-separated list of names; empty means all.
fn cipher_list(names: &str) -> Result<Vec<rustls::SupportedCipherSuite>, QuarkError> {
    names
        .split(',')
        .filter(|n| !n.is_empty())
        .map(|n| tls::cipher_suite(n).map_err(|_| QuarkError::Inval))
        .collect()
}

/// Open a bidirectional stream on `conn`; blocks while the peer's stream
/// limit is reached. Returns a stream handle.
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_stream_open(conn: i64) -> i64 {
    on_connection(conn, |handle, c| {
        let (send, recv) = handle.run(c.open_bi())??;
        insert_stream(handle, Some(send), Some(recv))
    })
}

/// Open a unidirectional stream on `conn`: write-only (reads give
/// `QUARK_ERROR_WRONG_KIND`). Blocks while the peer's limit on such
/// streams is reached. Returns a stream handle.
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_stream_open_uni(conn: i64) -> i64 {
    on_connection(conn, |handle, c| {
        let send = handle.run(c.open_uni())??;
        insert_stream(handle, Some(send), None)
    })
}

/// Block until the peer opens a bidirectional stream on `conn`; returns a
/// stream handle, or `QUARK_ERROR_CLOSED` once the connection has ended.
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_stream_accept(conn: i64) -> i64 {
    on_connection(conn, |handle, c| {
        let (send, recv) = handle.run(c.accept_bi())??;
        insert_stream(handle, Some(send), Some(recv))
    })
}

/// Block until the peer opens a unidirectional stream on `conn`; returns a
/// read-only stream handle (writes give `QUARK_ERROR_SHUTDOWN`), or
/// `QUARK_ERROR_CLOSED` once the connection has ended.
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_stream_accept_uni(conn: i64) -> i64 {
    on_connection(conn, |handle, c| {
        let recv = handle.run(c.accept_uni())??;
        insert_stream(handle, None, Some(recv))
    })
}

/// Run `f` on the connection behind `conn` once its handshake is done (at
/// once, but after a non-blocking `quark_connect_on`).
fn on_connection(
    conn: i64,
    f: impl FnOnce(&Handle, &quark::Connection) -> Result<i64, QuarkError>,
) -> i64 {
    entry(|| {
        let handle = table::get(conn)?;
        let Object::Connection(c) = &handle.object else {
            return Err(QuarkError::WrongKind);
        };
        let established = match c.get() {
            Some(established) => established,
            None => handle.run(c.established())??,
        };
        f(&handle, established)
    })
}

/// A stream handle on the ready list of its connection's endpoint.
fn insert_stream(
    conn: &Handle,
    send: Option<quark::SendStream>,
    recv: Option<quark::RecvStream>,
) -> Result<i64, QuarkError> {
    table::insert(
        Object::Stream(Stream {
            send: send.map(Mutex::new),
            recv: recv.map(Mutex::new),
        }),
        conn.ready.clone(),
    )
}

/// Switch `handle` (an endpoint, connection or stream) to non-blocking mode
/// (`on` non-zero) or back. In non-blocking mode `quark_accept`,
/// `quark_stream_open`, `quark_stream_accept`, `quark_stream_read` and
/// `quark_stream_write` return `QUARK_ERROR_AGAIN` instead of waiting, and a
/// write may take only part of the buffer. `quark_connect_on` on a
/// non-blocking endpoint returns before the handshake; `quark_connect` and
/// `quark_close` always block. New handles start in blocking mode, except
/// on an endpoint made with `QUARK_FLAG_NONBLOCKING`.
///
/// Thread safety: safe from any thread; calls already waiting keep waiting.
#[unsafe(no_mangle)]
pub extern "C" fn quark_set_nonblocking(handle: i64, on: i32) -> i32 {
    entry_status(|| {
        table::get(handle)?
            .nonblocking
            .store(on != 0, std::sync::atomic::Ordering::Relaxed);
        Ok(())
    })
}

/// Close any handle and free what it holds; the handle is dead afterwards
/// (using it again returns `QUARK_ERROR_BAD_HANDLE`).
/// - a stream: what was written is still delivered (FIN if not shut down);
///   unread received data is discarded (STOP_SENDING).
/// - a connection: waits up to 3 s for the peer to acknowledge what was
///   written, each stream's end (FIN) included, then closes it (code 0)
///   and its own client endpoint (waiting up to 3 s more for the close to
///   be sent).
/// - an endpoint: closes it and every connection it accepted.
///
/// A call blocked on the handle in another thread finishes with the object
/// it already holds (typically with `QUARK_ERROR_CLOSED`).
///
/// Thread safety: safe from any thread; exactly one of two racing closes
/// of the same handle succeeds.
#[unsafe(no_mangle)]
pub extern "C" fn quark_close(handle: i64) -> i32 {
    entry_status(|| {
        let handle = table::remove(handle)?;
        if let Some(d) = handle.ready.as_driven() {
            close_driven(d, &handle.object);
            return Ok(());
        }
        let rt = runtime()?;
        match &handle.object {
            Object::Stream(_) => {}
            Object::Connection(c) => rt.block_on(async {
                if let Some(conn) = c.get() {
                    let _ = tokio::time::timeout(LINGER, drained(conn)).await;
                    conn.close(0, b"");
                }
                if let Some(e) = &c.own_endpoint {
                    let _ = tokio::time::timeout(LINGER, e.wait_idle()).await;
                }
            }),
            Object::Endpoint(e) => rt.block_on(async {
                e.close(0, b"");
                let _ = tokio::time::timeout(LINGER, e.wait_idle()).await;
            }),
        }
        Ok(())
    })
}

/// Until nothing written on `conn` waits for acknowledgement (streams' ends
/// included), or it ended.
async fn drained(conn: &quark::Connection) {
    let acked = async {
        while !conn.all_acked() {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    };
    tokio::select! {
        _ = acked => {}
        _ = conn.closed() => {}
    }
}

/// Connect on `endpoint` and block on the threaded runtime `rt` until a
/// handshake completes: with several addresses, the first to answer (RFC
/// 8305, `Endpoint::connect_first`).
pub(crate) fn connect_blocking(
    endpoint: &Endpoint,
    rt: &tokio::runtime::Runtime,
    config: quark::ClientConfig,
    addrs: &[SocketAddr],
    name: &str,
) -> Result<quark::Connection, QuarkError> {
    rt.block_on(endpoint.connect_first(config, addrs, name, ATTEMPT_DELAY))
        .map_err(QuarkError::from)
}
