//! Decode arbitrary bytes as a QPACK field section and as encoder / decoder
//! stream instructions: no panics; whatever decodes re-encodes to a section
//! that decodes to the same fields, within the same size limit.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let limit = 16 * 1024;
    if let Ok(fields) = quark_qpack::decode_section(data, limit) {
        let pairs: Vec<(&[u8], &[u8])> =
            fields.iter().map(|f| (&f.name[..], &f.value[..])).collect();
        let mut block = Vec::new();
        quark_qpack::encode_section(&pairs, &mut block);
        assert_eq!(quark_qpack::decode_section(&block, limit), Ok(fields));
    }
    if let Ok(n) = quark_qpack::check_encoder_stream(data) {
        assert!(n <= data.len());
    }
    if let Ok(n) = quark_qpack::check_decoder_stream(data) {
        assert!(n <= data.len());
    }
});
