//! Parse arbitrary datagrams as the first packet's header, as the endpoint does
//! for every datagram it receives (8-byte local connection IDs), strictly and
//! accepting a cleared QUIC bit (RFC 9287): the two agree except on that bit.

#![no_main]

use libfuzzer_sys::fuzz_target;
use quark_proto::packet::PartialDecode;

fuzz_target!(|data: &[u8]| {
    let strict = PartialDecode::new(data, 8);
    let greased = PartialDecode::with_quic_bit(data, 8, true);
    if let Ok(pd) = &strict {
        // What parses strictly parses the same with the bit allowed clear.
        assert_eq!(greased.as_ref().ok(), Some(pd));
    }
    if let (Some(&first), Ok(pd)) = (data.first(), &greased) {
        // Setting the bit makes a greased packet parse strictly, the same.
        let mut set = data.to_vec();
        set[0] = first | 0x40;
        let strict_set = PartialDecode::new(&set, 8);
        assert_eq!(
            strict_set.as_ref().map(|p| (p.ty, p.len)).ok(),
            Some((pd.ty, pd.len))
        );
    }
});
