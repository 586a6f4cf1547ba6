//! The preferred_address transport parameter a server announces (RFC 9000 §9.6).

use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};

use crate::cid::{ConnectionId, ResetToken};
use crate::transport_params::PreferredAddress;

/// The parameter for `addr`, with the ID (sequence 1) and reset token for it.
pub(super) fn param(
    addr: SocketAddr,
    cid: ConnectionId,
    reset_token: ResetToken,
) -> PreferredAddress {
    //= https://www.rfc-editor.org/rfc/rfc9000#section-18.2
    //# The server can choose to only send a preferred address of one address
    //# family by sending an all-zero address and port (0.0.0.0:0 or [::]:0)
    //# for the other family.
    let (ipv4, ipv6) = match addr {
        SocketAddr::V4(a) => (a, SocketAddrV6::new(Ipv6Addr::UNSPECIFIED, 0, 0, 0)),
        SocketAddr::V6(a) => (SocketAddrV4::new(Ipv4Addr::UNSPECIFIED, 0), a),
    };
    PreferredAddress {
        ipv4,
        ipv6,
        cid,
        reset_token,
    }
}
