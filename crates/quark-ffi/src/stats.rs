//! `quark_conn_stats`: a connection's counters for diagnosis (like
//! `getsockopt(TCP_INFO)`), e.g. whether its data went in 1 200-byte
//! datagrams because path MTU discovery (RFC 9000 §14.3) found nothing.

use crate::error::QuarkError;
use crate::object::{Object, entry_status};
use crate::table;

/// What `quark_conn_stats` fills in. Fields may be added at the end; the
/// caller passes `sizeof(QuarkConnStats)` so that an older caller's smaller
/// struct is filled only as far as it goes.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct QuarkConnStats {
    /// Size of the UDP datagrams the connection sends now (its path MTU:
    /// 1200 until discovery validates more).
    pub max_datagram_size: u64,
    /// PMTU probes sent.
    pub mtu_probes: u64,
    /// 1 if the path MTU was taken from the endpoint's cache (another
    /// connection on the same path validated it) instead of searched, else 0.
    pub mtu_adopted: u64,
    /// Probe timeouts (RFC 9002 §6.2).
    pub ptos: u64,
    /// Packets sent.
    pub packets_sent: u64,
    /// Packets declared lost.
    pub packets_lost: u64,
    /// UDP datagrams sent.
    pub datagrams_sent: u64,
    /// UDP payload bytes sent.
    pub bytes_sent: u64,
    /// UDP datagrams received.
    pub datagrams_received: u64,
    /// UDP payload bytes received.
    pub bytes_received: u64,
    /// Smoothed RTT in microseconds.
    pub rtt_us: u64,
}

/// The counters of `conn` into `*out`, of which the caller's struct has
/// `size` bytes (`sizeof(QuarkConnStats)`): 0, `QUARK_ERROR_AGAIN` while a
/// non-blocking connect's handshake is under way, `QUARK_ERROR_INVAL` for a
/// null `out`, or another negative error. After the connection ended they
/// are zero (quark forgets a closed connection).
///
/// # Safety
/// `out` is null or points to `size` writable bytes.
///
/// Thread safety: safe from any thread; does not block.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn quark_conn_stats(conn: i64, out: *mut QuarkConnStats, size: usize) -> i32 {
    entry_status(|| {
        if out.is_null() {
            return Err(QuarkError::Inval);
        }
        let stats = conn_stats(conn)?;
        let n = size.min(std::mem::size_of::<QuarkConnStats>());
        // SAFETY: `out` is non-null and the caller promises `size` writable
        // bytes; `n` is no more than that nor than the source's size, and
        // the source is a local value that cannot overlap it.
        unsafe {
            std::ptr::copy_nonoverlapping((&raw const stats).cast::<u8>(), out.cast::<u8>(), n);
        }
        Ok(())
    })
}

/// The counters of connection handle `conn`.
pub(crate) fn conn_stats(conn: i64) -> Result<QuarkConnStats, QuarkError> {
    let handle = table::get(conn)?;
    let Object::Connection(c) = &handle.object else {
        return Err(QuarkError::WrongKind);
    };
    let c = c.get().ok_or(QuarkError::Again)?;
    let s = c.stats();
    Ok(QuarkConnStats {
        max_datagram_size: c.path_mtu() as u64,
        mtu_probes: s.mtu_probes,
        mtu_adopted: c.path_mtu_from_cache().into(),
        ptos: s.ptos,
        packets_sent: s.packets_out,
        packets_lost: s.packets_lost,
        datagrams_sent: s.datagrams_out,
        bytes_sent: s.bytes_out,
        datagrams_received: s.datagrams_in,
        bytes_received: s.bytes_in,
        rtt_us: u64::try_from(c.rtt().as_micros()).unwrap_or(u64::MAX),
    })
}
