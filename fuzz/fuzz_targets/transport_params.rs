//! Decode arbitrary bytes as either side's transport parameters; whatever decodes
//! must survive an encode/decode round trip unchanged.

#![no_main]

use libfuzzer_sys::fuzz_target;
use quark_proto::Side;
use quark_proto::transport_params::TransportParameters;

fuzz_target!(|data: &[u8]| {
    for side in [Side::Client, Side::Server] {
        if let Ok(params) = TransportParameters::decode(side, data) {
            let mut buf = Vec::new();
            params.encode(&mut buf);
            assert_eq!(TransportParameters::decode(side, &buf), Ok(params));
        }
    }
});
