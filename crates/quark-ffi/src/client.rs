//! Client endpoints shared by many connections (`quark_client`,
//! `quark_connect_on`): one UDP socket, one ready list and, caller-driven,
//! one `quark_process` loop for all of them, so datagrams of several
//! connections leave and arrive in one system call.

use std::ffi::c_char;
use std::sync::atomic::Ordering;

use quark::Endpoint;
use quark::connect_first::reachable;

use crate::conn::{CaArg, client_args, connect_blocking, resolve};
use crate::error::QuarkError;
use crate::handshake::Handshake;
use crate::object::{Conn, Handle, Object, c_str, entry, entry_status, runtime};
use crate::options::{caller_driven, driven_endpoint, with_flags};
use crate::ready::Ready;
use crate::table;

/// Bind a client endpoint on `addr` ("0.0.0.0:0" for any port) with
/// `flags` (as `quark_listen_flags`), for `quark_connect_on`. Returns an
/// endpoint handle; closing it closes its connections.
///
/// Thread safety: safe from any thread; does not block on the network.
///
/// # Safety
/// `addr` is a NUL-terminated string valid for the call.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_client(addr: *const c_char, flags: u32) -> i64 {
    entry(|| {
        // SAFETY: the caller's contract above.
        let addr = resolve(unsafe { c_str(addr)? })?;
        if caller_driven(flags)? {
            let (endpoint, ready) = driven_endpoint(None, addr)?;
            return table::insert(Object::Endpoint(endpoint), with_flags(ready, flags));
        }
        let endpoint = {
            let _guard = runtime()?.enter();
            Endpoint::client(addr).map_err(|_| QuarkError::Io)?
        };
        table::insert(Object::Endpoint(endpoint), with_flags(Ready::new()?, flags))
    })
}

/// As `quark_connect_with`, on `endpoint` (from `quark_client` or
/// `quark_listen*`) instead of an endpoint of its own: the connection
/// shares the endpoint's socket and ready list. Blocks until the handshake
/// completes (on a caller-driven endpoint, driving it meanwhile), except on
/// a non-blocking endpoint (`quark_set_nonblocking`): then, like `connect(2)`
/// on a non-blocking socket, it returns the connection handle at once
/// (itself non-blocking) while the handshake goes on. Calls on it give
/// `QUARK_ERROR_AGAIN` until the handshake is done (the handle is listed
/// ready when it ends; `quark_connected` tells) and `QUARK_ERROR_CONNECT`
/// (or `QUARK_ERROR_REFUSED` / `_UNREACHABLE`, as `quark_connect` says) if
/// it failed.
///
/// A host with several addresses is tried as by `quark_connect`, those the
/// endpoint's socket can reach (an IPv4 endpoint reaches IPv4 addresses
/// only), in every mode: the delays between attempts run on the endpoint's
/// own timer, which a caller-driven endpoint's descriptor shows.
///
/// The endpoint keeps the TLS configuration of its last connect, and reuses
/// it (with its session tickets) when the TLS arguments are the same. The CA
/// file is read again only when its stamp (inode, size, modification and
/// change times) differs, or when its last change is under 50 ms old (a
/// second on a file system without sub-second times).
///
/// Thread safety: safe from any thread; connects on one endpoint may run
/// at once from several threads.
///
/// # Safety
/// As `quark_connect_with`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_connect_on(
    endpoint: i64,
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    insecure: i32,
    ca_pem_path: *const c_char,
    ciphers: *const c_char,
) -> i64 {
    let tls = (insecure, ca_pem_path, CaArg::Path, ciphers);
    // SAFETY: the caller's contract above.
    unsafe { connect_on(endpoint, addr, server_name, alpn, tls) }
}

/// As `quark_connect_on`, with the PEM roots given as a NUL-terminated
/// string in memory (`ca_pem`, or NULL with `insecure`) instead of a file's
/// name, as `quark_listen_pem` takes the server's certificate: a program
/// that holds its roots needs no file. The endpoint reuses its last TLS
/// configuration while the text is the same.
///
/// Thread safety: safe from any thread; connects on one endpoint may run
/// at once from several threads.
///
/// # Safety
/// As `quark_connect_on`; `ca_pem` is a NUL-terminated string or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_connect_on_pem(
    endpoint: i64,
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    insecure: i32,
    ca_pem: *const c_char,
    ciphers: *const c_char,
) -> i64 {
    let tls = (insecure, ca_pem, CaArg::Pem, ciphers);
    // SAFETY: the caller's contract above.
    unsafe { connect_on(endpoint, addr, server_name, alpn, tls) }
}

/// `quark_connect_on` and `quark_connect_on_pem`; `tls` is (insecure, the
/// CA argument, what it holds, ciphers).
///
/// # Safety
/// As `quark_connect_on`.
unsafe fn connect_on(
    endpoint: i64,
    addr: *const c_char,
    server_name: *const c_char,
    alpn: *const c_char,
    (insecure, ca, ca_arg, ciphers): (i32, *const c_char, CaArg, *const c_char),
) -> i64 {
    entry(|| {
        let handle = table::get(endpoint)?;
        let Object::Endpoint(e) = &handle.object else {
            return Err(QuarkError::WrongKind);
        };
        // SAFETY: the caller's contract above.
        let (addrs, name, config) = unsafe {
            client_args(
                addr,
                server_name,
                alpn,
                insecure,
                ca,
                ca_arg,
                ciphers,
                Some(&handle.ready.tls),
            )?
        };
        // One address (the usual case) goes as given, without asking the
        // socket its family (a system call).
        let addrs = match addrs.len() {
            1 => addrs,
            _ => reachable(&addrs, e.local_addr().map_err(|_| QuarkError::Io)?),
        };
        let driven = handle.ready.as_driven();
        let conn = match driven {
            None if !handle.is_nonblocking() => {
                connect_blocking(e, runtime()?, config, &addrs, name)?
            }
            _ => {
                let handshake = {
                    let _guard = match driven {
                        Some(d) => d.enter(),
                        None => runtime()?.enter(),
                    };
                    Handshake::start(e, config, addrs, name)?
                };
                let Some(d) = driven.filter(|_| !handle.is_nonblocking()) else {
                    return connect_nonblocking(&handle, handshake);
                };
                d.block_on(handshake, None).ok_or(QuarkError::Connect)??
            }
        };
        table::insert(
            Object::Connection(Conn::new(conn, None)),
            handle.ready.clone(),
        )
    })
}

/// Whether the handshake of `conn` is done, like `getsockopt(SO_ERROR)` after
/// a non-blocking `connect(2)`: 0 once it is, `QUARK_ERROR_CONNECT` (or
/// `_REFUSED`, `_UNREACHABLE`) if it failed; while it is under way, blocks, or in non-blocking mode gives
/// `QUARK_ERROR_AGAIN` (the handle is listed ready when it ends).
///
/// Thread safety: safe from any thread.
#[unsafe(no_mangle)]
pub extern "C" fn quark_connected(conn: i64) -> i32 {
    entry_status(|| {
        let handle = table::get(conn)?;
        let Object::Connection(c) = &handle.object else {
            return Err(QuarkError::WrongKind);
        };
        handle.run(c.established())??;
        Ok(())
    })
}

/// Whether the handshake of `conn` resumed a TLS session (like OpenSSL's
/// `SSL_session_reused`): 1 if it did, 0 if it was a full handshake (or is
/// still under way), or a negative error. See `QUARK_FLAG_NO_RESUMPTION`.
///
/// Thread safety: safe from any thread; does not block.
#[unsafe(no_mangle)]
pub extern "C" fn quark_resumed(conn: i64) -> i32 {
    entry(|| {
        let handle = table::get(conn)?;
        let Object::Connection(c) = &handle.object else {
            return Err(QuarkError::WrongKind);
        };
        Ok(c.get().is_some_and(|c| c.is_resumed()).into())
    }) as i32
}

/// `quark_connect_on` on a non-blocking endpoint: like `connect(2)` on an
/// `O_NONBLOCK` socket, the handle comes at once and the handshake goes on
/// in the endpoint's processing; no thread waits for it.
fn connect_nonblocking(endpoint: &Handle, connecting: Handshake) -> Result<i64, QuarkError> {
    let id = table::insert(
        Object::Connection(Conn::connecting(connecting)),
        endpoint.ready.clone(),
    )?;
    let conn = table::get(id)?;
    conn.nonblocking.store(true, Ordering::Relaxed);
    if let Object::Connection(c) = &conn.object {
        // The first poll leaves the handle's waker with the handshake: the
        // handle is listed ready when it ends. Its outcome is for later calls.
        let _ = conn.run(c.established());
    }
    Ok(id)
}
