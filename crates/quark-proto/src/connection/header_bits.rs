//! The two bits of the 1-RTT header's first byte that header protection
//! leaves readable:
//! - the latency spin bit (RFC 9000 §17.4), which flips once per round trip
//!   so that an observer on the path can measure the RTT without reading
//!   anything encrypted;
//! - the QUIC (fixed) bit, greased (RFC 9287): unpredictable toward a peer
//!   that announced grease_quic_bit, so that no middlebox comes to rely on it.
//!   Long headers keep it readable too, so they are greased as well once the
//!   peer's parameters are in (and a client's first Initials when they carry
//!   a token from a server that greases).

use super::Connection;
use crate::types::Side;

impl Connection {
    /// Whether this connection takes part in the latency spin bit: allowed by
    /// `TransportConfig::spin_bit` and not among the one in sixteen
    /// connections that never spin.
    pub fn spin_bit_enabled(&self) -> bool {
        self.bits.spin_enabled()
    }

    /// Whether this connection's packets grease the QUIC bit: the peer
    /// announced grease_quic_bit (RFC 9287), or gave the token this client's
    /// Initials carry, and the endpoint greases.
    pub fn greases_quic_bit(&self) -> bool {
        self.bits.flags & GREASE != 0
    }
}

/// Spinning on this connection: the configuration allows it and the
/// connection was not among the one in sixteen that never spins.
const SPIN_ENABLED: u8 = 1;
/// The spin bit our next 1-RTT packet carries.
const SPIN_VALUE: u8 = 2;
/// We announced grease_quic_bit: packets with the QUIC bit cleared are valid.
const ACCEPT_CLEARED: u8 = 4;
/// The peer announced grease_quic_bit (and we grease): our packets clear the
/// QUIC bit at random.
const GREASE: u8 = 8;

/// What the unprotected bits of our 1-RTT packets say. Six bytes: the
/// connection struct is kept small.
pub(crate) struct HeaderBits {
    /// Keys the QUIC bit of each packet (with its number).
    secret: u16,
    /// A spin-disabled connection's bit for each connection ID.
    noise: u8,
    /// The sequence number of the peer's connection ID the spin value belongs
    /// to (its low 8 bits: 256 new IDs between two packets cannot happen).
    cid_seq: u8,
    flags: u8,
}

/// SplitMix64's output function: the connection's random seed mixed into
/// bits of its own, so that these bits draw nothing from the connection's
/// generator (whose stream the simulator's seeds replay).
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl HeaderBits {
    /// The bits of a connection whose random seed is `seed`; `spin` allowed
    /// by the configuration, and packets with the QUIC bit cleared accepted
    /// (`accept_cleared`: we announce grease_quic_bit).
    pub(crate) fn new(spin: bool, accept_cleared: bool, seed: u64) -> HeaderBits {
        let bits = mix(seed);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-17.4
        //# Even when the spin bit is not disabled by the administrator,
        //# endpoints MUST disable their use of the spin bit for a random
        //# selection of at least one in every 16 network paths, or for one in
        //# every 16 connection IDs, in order to ensure that QUIC connections
        //# that disable the spin bit are commonly observed on the network.
        let enabled = spin && bits >> 60 != 0;
        let noise = bits as u8;
        let mut flags = 0;
        if enabled {
            flags |= SPIN_ENABLED;
        } else if noise & 1 != 0 {
            flags |= SPIN_VALUE;
        }
        if accept_cleared {
            flags |= ACCEPT_CLEARED;
        }
        HeaderBits {
            secret: (bits >> 8) as u16,
            noise,
            cid_seq: 0,
            flags,
        }
    }

    pub(crate) fn spin_enabled(&self) -> bool {
        self.flags & SPIN_ENABLED != 0
    }

    /// Whether packets with the QUIC bit cleared are valid here.
    #[inline]
    pub(crate) fn accepts_cleared(&self) -> bool {
        self.flags & ACCEPT_CLEARED != 0
    }

    /// The peer's transport parameters are in: from now on our packets
    /// grease the QUIC bit if it announced grease_quic_bit and we grease at
    /// all (announcing it ourselves); if it did not, they stop.
    pub(crate) fn on_peer_params(&mut self, peer_greases: bool) {
        //= https://www.rfc-editor.org/rfc/rfc9287#section-3.1
        //# Endpoints that receive the grease_quic_bit transport parameter from
        //# a peer SHOULD set the QUIC Bit to an unpredictable value unless
        //# another extension assigns specific meaning to the value of the bit.
        //
        //# All packets sent after receiving and processing transport
        //# parameters are affected, including Retry, Initial, and Handshake
        //# packets.
        self.flags &= !GREASE;
        if peer_greases && self.accepts_cleared() {
            self.flags |= GREASE;
        }
    }

    /// A client's Initials carry a token from a server that greased the QUIC
    /// bit less than a week ago: they may clear it before the server's
    /// parameters are in.
    pub(crate) fn grease_from_token(&mut self) {
        //= https://www.rfc-editor.org/rfc/rfc9287#section-3.1
        //# A client MAY also clear the QUIC Bit in Initial packets that are
        //# sent to establish a new connection.
        if self.accepts_cleared() {
            self.flags |= GREASE;
        }
    }

    /// Send the QUIC bit set again: a client whose token-greased Initials got
    /// no answer (the server may have stopped greasing) or were answered by
    /// a Retry (whose token now rides in the Initials instead).
    pub(crate) fn stop_grease(&mut self) {
        self.flags &= !GREASE;
    }

    /// The QUIC bit of a long-header packet numbered `pn` in `space`: `false`
    /// to clear it.
    #[inline]
    pub(crate) fn long_quic_bit(&self, pn: u64, space: u64) -> bool {
        self.flags & GREASE == 0
            || mix(pn ^ (space << 40) ^ (u64::from(self.secret) << 48)) >> 63 != 0
    }

    /// The first byte's unprotected bits for a 1-RTT packet numbered `pn`,
    /// sent with the peer's connection ID number `cid_seq`: the spin bit
    /// (0x20), and the QUIC bit (0x40) to clear if `false`.
    #[inline]
    pub(crate) fn for_packet(&mut self, pn: u64, cid_seq: u64) -> (bool, bool) {
        let cid_seq = cid_seq as u8;
        if cid_seq != self.cid_seq {
            self.cid_seq = cid_seq;
            //= https://www.rfc-editor.org/rfc/rfc9000#section-17.4
            //# An endpoint resets the spin value for a network path to zero
            //# when changing the connection ID being used on that network path.
            //
            //# When the spin bit is disabled, endpoints MAY set the spin bit to
            //# any value and MUST ignore any incoming value.  It is RECOMMENDED
            //# that endpoints set the spin bit to a random value either chosen
            //# independently for each packet or chosen independently for each
            //# connection ID.
            self.flags &= !SPIN_VALUE;
            if !self.spin_enabled() && self.noise.rotate_right(cid_seq.into()) & 1 != 0 {
                self.flags |= SPIN_VALUE;
            }
        }
        // Keyed by 16 secret bits of the connection: no pattern a middlebox
        // could learn from counting packets (only by trying every key).
        let quic_bit =
            self.flags & GREASE == 0 || mix(pn ^ (u64::from(self.secret) << 48)) >> 63 != 0;
        (self.flags & SPIN_VALUE != 0, quic_bit)
    }

    /// A 1-RTT packet with spin bit `bit` raised the largest packet number
    /// received from the peer.
    #[inline]
    pub(crate) fn on_newest_packet(&mut self, side: Side, bit: bool) {
        if !self.spin_enabled() {
            return;
        }
        //# When a server receives a 1-RTT packet that increases the highest
        //# packet number seen by the server from the client on a given network
        //# path, it sets the spin value for that path to be equal to the spin
        //# bit in the received packet.
        //
        //# When a client receives a 1-RTT packet that increases the highest
        //# packet number seen by the client from the server on a given network
        //# path, it sets the spin value for that path to the inverse of the
        //# spin bit in the received packet.
        let value = match side {
            Side::Server => bit,
            Side::Client => !bit,
        };
        self.flags = (self.flags & !SPIN_VALUE) | if value { SPIN_VALUE } else { 0 };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spin(b: &mut HeaderBits, cid_seq: u64) -> bool {
        b.for_packet(0, cid_seq).0
    }

    #[test]
    fn one_in_sixteen_connections_never_spins() {
        let off = (0..16_000u64)
            .filter(|&seed| !HeaderBits::new(true, true, seed).spin_enabled())
            .count();
        assert!((800..1_200).contains(&off), "{off} of 16 000 off");
        assert!((0..100).all(|seed| !HeaderBits::new(false, true, seed).spin_enabled()));
    }

    #[test]
    fn the_client_inverts_and_the_server_reflects() {
        let spinning = |seed| Some(HeaderBits::new(true, true, seed)).filter(|b| b.spin_enabled());
        let (mut c, mut s) = (
            (0..).find_map(spinning).unwrap(),
            (9..).find_map(spinning).unwrap(),
        );
        let mut seen = Vec::new();
        for _ in 0..4 {
            let bit = spin(&mut c, 0);
            seen.push(bit);
            s.on_newest_packet(Side::Server, bit);
            let back = spin(&mut s, 0);
            c.on_newest_packet(Side::Client, back);
        }
        assert_eq!(seen, [false, true, false, true], "one flip a round trip");
        // A new connection ID starts again from zero.
        assert!(!spin(&mut c, 0));
        assert!(!spin(&mut c, 1));
    }

    #[test]
    fn disabled_ignores_what_comes_and_varies_by_connection_id() {
        let mut s = HeaderBits::new(false, true, 3);
        let first = spin(&mut s, 0);
        s.on_newest_packet(Side::Server, !first);
        assert_eq!(spin(&mut s, 0), first, "incoming values ignored");
        let per_id: Vec<bool> = (1..8).map(|seq| spin(&mut s, seq)).collect();
        assert!(per_id.contains(&true) && per_id.contains(&false));
        let by_connection: Vec<bool> = (0..64)
            .map(|seed| spin(&mut HeaderBits::new(false, true, seed), 0))
            .collect();
        assert!(by_connection.contains(&true) && by_connection.contains(&false));
    }

    #[test]
    fn the_quic_bit_is_greased_only_when_both_sides_announce_it() {
        let cleared = |b: &mut HeaderBits| (0..1_000).filter(|&pn| !b.for_packet(pn, 0).1).count();
        let long =
            |b: &HeaderBits, space| (0..1_000).filter(|&pn| !b.long_quic_bit(pn, space)).count();
        let mut both = HeaderBits::new(true, true, 5);
        assert_eq!(cleared(&mut both), 0, "not before the peer's parameters");
        assert_eq!(long(&both, 0) + long(&both, 1), 0);
        both.on_peer_params(true);
        let n = cleared(&mut both);
        assert!((400..600).contains(&n), "{n} of 1 000 cleared");
        let (initial, handshake) = (long(&both, 0), long(&both, 1));
        assert!((400..600).contains(&initial) && (400..600).contains(&handshake));
        let differ = (0..64).filter(|&pn| both.long_quic_bit(pn, 0) != both.long_quic_bit(pn, 1));
        assert!(
            differ.count() > 10,
            "spaces do not repeat each other's bits"
        );
        // A peer whose parameters leave it out stops what a token started.
        let mut token = HeaderBits::new(true, true, 6);
        token.grease_from_token();
        assert!(long(&token, 0) > 400);
        token.on_peer_params(false);
        assert_eq!(long(&token, 0) + cleared(&mut token), 0);
        token.grease_from_token();
        token.stop_grease();
        assert_eq!(long(&token, 0), 0);
        // We do not announce it: we do not grease either.
        let mut ours_off = HeaderBits::new(true, false, 5);
        ours_off.on_peer_params(true);
        ours_off.grease_from_token();
        assert_eq!(cleared(&mut ours_off) + long(&ours_off, 0), 0);
        assert!(!ours_off.accepts_cleared() && both.accepts_cleared());
    }
}
