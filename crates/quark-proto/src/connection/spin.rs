//! The latency spin bit (RFC 9000 §17.4): one bit of the 1-RTT header that
//! flips once per round trip, so that an observer on the path can measure
//! the RTT without reading anything encrypted.

use super::Connection;
use crate::types::Side;

impl Connection {
    /// Whether this connection takes part in the latency spin bit: allowed by
    /// `TransportConfig::spin_bit` and not among the one in sixteen
    /// connections that never spin.
    pub fn spin_bit_enabled(&self) -> bool {
        self.spin.enabled()
    }
}

/// What the spin bit of our 1-RTT packets says.
pub(crate) struct Spin {
    /// Random bits of this connection: a disabled connection's bit for each
    /// connection ID (four bytes: the connection struct is kept small).
    noise: u8,
    /// The sequence number of the peer's connection ID `value` belongs to
    /// (its low 8 bits: 256 new IDs between two packets cannot happen).
    cid_seq: u8,
    /// Spinning on this connection: the configuration allows it and the
    /// connection was not among the one in sixteen that never spins.
    enabled: bool,
    /// The value our next 1-RTT packet carries.
    value: bool,
}

/// SplitMix64's output function: the connection's random seed mixed into
/// bits of its own, so that the spin bit draws nothing from the
/// connection's generator (whose stream the simulator's seeds replay).
fn mix(seed: u64) -> u64 {
    let mut z = seed.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Spin {
    /// The spin state of a connection whose random seed is `seed`;
    /// `allowed` by the configuration.
    pub(crate) fn new(allowed: bool, seed: u64) -> Spin {
        let bits = mix(seed);
        //= https://www.rfc-editor.org/rfc/rfc9000#section-17.4
        //# Even when the spin bit is not disabled by the administrator,
        //# endpoints MUST disable their use of the spin bit for a random
        //# selection of at least one in every 16 network paths, or for one in
        //# every 16 connection IDs, in order to ensure that QUIC connections
        //# that disable the spin bit are commonly observed on the network.
        let enabled = allowed && bits >> 60 != 0;
        let noise = bits as u8;
        Spin {
            noise,
            cid_seq: 0,
            enabled,
            value: !enabled && noise & 1 != 0,
        }
    }

    pub(crate) fn enabled(&self) -> bool {
        self.enabled
    }

    /// The bit for a 1-RTT packet sent with the peer's connection ID number
    /// `cid_seq`.
    #[inline]
    pub(crate) fn value(&mut self, cid_seq: u64) -> bool {
        let cid_seq = cid_seq as u8;
        if cid_seq != self.cid_seq {
            self.cid_seq = cid_seq;
            //# An endpoint resets the spin value for a network path to zero
            //# when changing the connection ID being used on that network path.
            //
            //# When the spin bit is disabled, endpoints MAY set the spin bit to
            //# any value and MUST ignore any incoming value.  It is RECOMMENDED
            //# that endpoints set the spin bit to a random value either chosen
            //# independently for each packet or chosen independently for each
            //# connection ID.
            self.value = !self.enabled && self.noise.rotate_right(cid_seq.into()) & 1 != 0;
        }
        self.value
    }

    /// A 1-RTT packet with spin bit `bit` raised the largest packet number
    /// received from the peer.
    #[inline]
    pub(crate) fn on_newest_packet(&mut self, side: Side, bit: bool) {
        if !self.enabled {
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
        self.value = match side {
            Side::Server => bit,
            Side::Client => !bit,
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_in_sixteen_connections_never_spins() {
        let off = (0..16_000u64)
            .filter(|&seed| !Spin::new(true, seed).enabled())
            .count();
        assert!((800..1_200).contains(&off), "{off} of 16 000 off");
        assert!((0..100).all(|seed| !Spin::new(false, seed).enabled()));
    }

    #[test]
    fn the_client_inverts_and_the_server_reflects() {
        let spinning = |seed| Some(Spin::new(true, seed)).filter(Spin::enabled);
        let (mut c, mut s) = (
            (0..).find_map(spinning).unwrap(),
            (9..).find_map(spinning).unwrap(),
        );
        let mut seen = Vec::new();
        for _ in 0..4 {
            let bit = c.value(0);
            seen.push(bit);
            s.on_newest_packet(Side::Server, bit);
            let back = s.value(0);
            c.on_newest_packet(Side::Client, back);
        }
        assert_eq!(seen, [false, true, false, true], "one flip a round trip");
        // A new connection ID starts again from zero.
        assert!(!c.value(0));
        assert!(!c.value(1));
    }

    #[test]
    fn disabled_ignores_what_comes_and_varies_by_connection_id() {
        let mut s = Spin::new(false, 3);
        let first = s.value(0);
        s.on_newest_packet(Side::Server, !first);
        assert_eq!(s.value(0), first, "incoming values ignored");
        let per_id: Vec<bool> = (1..8).map(|seq| s.value(seq)).collect();
        assert!(per_id.contains(&true) && per_id.contains(&false));
        let first_bits: Vec<bool> = (0..64)
            .map(|seed| Spin::new(false, seed).value(0))
            .collect();
        assert!(
            first_bits.contains(&true) && first_bits.contains(&false),
            "by connection"
        );
    }
}
