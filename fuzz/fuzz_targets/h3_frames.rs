//! HTTP/3 frame headers, SETTINGS and GOAWAY payloads from arbitrary bytes: no
//! panics; a parsed header re-encodes to the bytes it came from, and SETTINGS
//! that decode round-trip through `encode`.

#![no_main]

use libfuzzer_sys::fuzz_target;
use quark_h3::frame;
use quark_h3::settings::Settings;

fuzz_target!(|data: &[u8]| {
    if let Some((h, n)) = frame::parse_header(data) {
        let mut out = Vec::new();
        frame::put_header(&mut out, h.ty, h.len);
        // Varints have one shortest form, but a peer may send longer ones.
        assert!(out.len() <= n);
        assert_eq!(frame::parse_header(&out), Some((h, out.len())));
    }
    if let Ok(s) = Settings::decode(data) {
        let mut out = Vec::new();
        s.encode(&mut out);
        assert_eq!(Settings::decode(&out).unwrap(), s);
    }
    let _ = frame::parse_id(data);
});
