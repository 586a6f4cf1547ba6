//! 0-RTT datagrams that overtook the client's first Initial: no connection
//! exists for them yet, so the endpoint keeps a few (bounded in count and
//! size, oldest dropped first) and hands them to the connection the Initial
//! creates.

use std::collections::VecDeque;
use std::net::SocketAddr;

use crate::cid::ConnectionId;
use crate::types::EcnCodepoint;

/// Datagrams kept at most, for all clients together.
pub const MAX_EARLY_DATAGRAMS: usize = 32;
/// Larger datagrams are not kept (a client's first flight uses its initial
/// datagram size, 1200 to 1500 bytes).
const MAX_EARLY_DATAGRAM_SIZE: usize = 1500;

/// One kept datagram.
struct Kept {
    dst_cid: ConnectionId,
    remote: SocketAddr,
    ecn: Option<EcnCodepoint>,
    data: Vec<u8>,
}

/// The endpoint's store of early 0-RTT datagrams: at most
/// `MAX_EARLY_DATAGRAMS` × 1500 bytes (48 KB).
#[derive(Default)]
pub(crate) struct EarlyDatagrams {
    kept: VecDeque<Kept>,
}

impl EarlyDatagrams {
    /// Keep a copy of `data` for the connection `dst_cid` names.
    pub(crate) fn keep(
        &mut self,
        dst_cid: ConnectionId,
        remote: SocketAddr,
        ecn: Option<EcnCodepoint>,
        data: &[u8],
    ) {
        if data.len() > MAX_EARLY_DATAGRAM_SIZE {
            return;
        }
        if self.kept.len() >= MAX_EARLY_DATAGRAMS {
            self.kept.pop_front();
        }
        self.kept.push_back(Kept {
            dst_cid,
            remote,
            ecn,
            data: data.to_vec(),
        });
    }

    /// Take the datagrams kept for `dst_cid` from `remote`, in arrival order.
    pub(crate) fn take(
        &mut self,
        dst_cid: &ConnectionId,
        remote: SocketAddr,
    ) -> Vec<(Vec<u8>, Option<EcnCodepoint>)> {
        if self.kept.is_empty() {
            return Vec::new();
        }
        let mut out = Vec::new();
        self.kept.retain_mut(|k| {
            if k.dst_cid == *dst_cid && k.remote == remote {
                out.push((std::mem::take(&mut k.data), k.ecn));
                false
            } else {
                true
            }
        });
        out
    }

    /// Datagrams kept now.
    pub(crate) fn len(&self) -> usize {
        self.kept.len()
    }
}
