//! Parse arbitrary datagrams as the first packet's header, as the endpoint does
//! for every datagram it receives (8-byte local connection IDs).

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = quark_proto::packet::PartialDecode::new(data, 8);
});
