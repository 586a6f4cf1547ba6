//! Client endpoints shared by many connections (`quark_client`,
//! `quark_connect_on`): one UDP socket, one ready list and, caller-driven,
//! one `quark_process` loop for all of them, so datagrams of several
//! connections leave and arrive in one system call.

use std::ffi::c_char;

use quark::Endpoint;

use crate::conn::{client_args, resolve};
use crate::error::QuarkError;
use crate::object::{Conn, Object, c_str, entry, runtime};
use crate::options::{caller_driven, driven_endpoint};
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
            return table::insert(Object::Endpoint(endpoint), ready);
        }
        let endpoint = {
            let _guard = runtime()?.enter();
            Endpoint::client(addr).map_err(|_| QuarkError::Io)?
        };
        table::insert(Object::Endpoint(endpoint), Ready::new()?)
    })
}

/// As `quark_connect_with`, on `endpoint` (from `quark_client` or
/// `quark_listen*`) instead of an endpoint of its own: the connection
/// shares the endpoint's socket and ready list. Blocks until the handshake
/// completes (on a caller-driven endpoint, driving it meanwhile).
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
    entry(|| {
        let handle = table::get(endpoint)?;
        let Object::Endpoint(e) = &handle.object else {
            return Err(QuarkError::WrongKind);
        };
        // SAFETY: the caller's contract above.
        let (addr, name, config) =
            unsafe { client_args(addr, server_name, alpn, insecure, ca_pem_path, ciphers)? };
        let conn = match handle.ready.as_driven() {
            Some(d) => {
                let connecting = {
                    let _guard = d.enter();
                    e.connect(config, addr, name)
                        .map_err(|_| QuarkError::Connect)?
                };
                d.block_on(connecting, None).ok_or(QuarkError::Connect)?
            }
            None => {
                let connecting = e
                    .connect(config, addr, name)
                    .map_err(|_| QuarkError::Connect)?;
                runtime()?.block_on(connecting)
            }
        };
        let conn = conn.map_err(|_| QuarkError::Connect)?;
        table::insert(
            Object::Connection(Conn {
                conn,
                own_endpoint: None,
            }),
            handle.ready.clone(),
        )
    })
}
