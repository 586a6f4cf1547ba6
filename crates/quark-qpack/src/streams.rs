//! Checks for the peer's QPACK encoder and decoder streams.
//!
//! With a dynamic table capacity of 0 on both sides, almost every instruction
//! is a protocol violation; these functions only validate and consume.

use crate::StreamError;
use crate::prefix_int::{self, IntError};

/// Checks instructions on the peer's QPACK encoder stream (RFC 9204 §4.3).
/// With our capacity 0, the only valid instruction is Set Dynamic Table
/// Capacity with capacity 0; any insert or a capacity > 0 is an error.
/// Returns how many bytes of `data` form complete instructions (the caller
/// keeps the rest and calls again with more bytes appended). As capacity 0
/// fits in one byte, valid input is always consumed whole.
pub fn check_encoder_stream(data: &[u8]) -> Result<usize, StreamError> {
    for &b in data {
        if b & 0b1000_0000 != 0 {
            return Err(StreamError::Encoder(
                "Insert with Name Reference while the dynamic table capacity is 0",
            ));
        }
        if b & 0b0100_0000 != 0 {
            return Err(StreamError::Encoder(
                "Insert with Literal Name while the dynamic table capacity is 0",
            ));
        }
        if b & 0b0010_0000 == 0 {
            return Err(StreamError::Encoder(
                "Duplicate while the dynamic table capacity is 0",
            ));
        }
        //= https://www.rfc-editor.org/rfc/rfc9204#section-4.3.1
        //# The decoder MUST treat a new dynamic table capacity
        //# value that exceeds this limit as a connection error of type
        //# QPACK_ENCODER_STREAM_ERROR.
        // Set Dynamic Table Capacity, 001 + 5-bit prefix. Any nonzero prefix
        // already means a capacity >= 1, so 0x20 is the only acceptable
        // instruction and there is nothing to wait for.
        if b & 0b0001_1111 != 0 {
            return Err(StreamError::Encoder(
                "dynamic table capacity above our limit of 0",
            ));
        }
    }
    Ok(data.len())
}

/// Checks instructions on the peer's QPACK decoder stream (RFC 9204 §4.4).
/// We never emit dynamic references, so Section Acknowledgment and Insert
/// Count Increment are errors; Stream Cancellation is fine (ignored).
/// Returns the bytes consumed, as [`check_encoder_stream`] does.
pub fn check_decoder_stream(data: &[u8]) -> Result<usize, StreamError> {
    let mut pos = 0;
    while let Some(&b) = data.get(pos) {
        if b & 0b1000_0000 != 0 {
            // We never send a field section with a nonzero Required Insert
            // Count, so there is nothing the peer could acknowledge.
            return Err(StreamError::Decoder(
                "Section Acknowledgment, but no section referenced the dynamic table",
            ));
        }
        if b & 0b0100_0000 == 0 {
            //= https://www.rfc-editor.org/rfc/rfc9204#section-4.4.3
            //# An encoder that receives an Increment field equal to zero, or one
            //# that increases the Known Received Count beyond what the encoder has
            //# sent, MUST treat this as a connection error of type
            //# QPACK_DECODER_STREAM_ERROR.
            return Err(StreamError::Decoder(
                "Insert Count Increment, but nothing was inserted",
            ));
        }
        // Stream Cancellation, 01 + 6-bit stream ID: harmless, as we keep no
        // per-stream QPACK state.
        match prefix_int::decode(&data[pos..], 6) {
            Ok((_, used)) => pos += used,
            // Wait for the rest of the instruction.
            Err(IntError::Truncated) => break,
            Err(IntError::Overflow) => {
                return Err(StreamError::Decoder(
                    "Stream Cancellation stream ID exceeds 2^62-1",
                ));
            }
        }
    }
    Ok(pos)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoder_stream() {
        assert_eq!(check_encoder_stream(&[]), Ok(0));
        // Set Dynamic Table Capacity = 0, any number of times.
        assert_eq!(check_encoder_stream(&[0x20, 0x20]), Ok(2));
        let code = |d: &[u8]| check_encoder_stream(d).map_err(|e| e.code());
        // RFC 9204 B.2: capacity 220, then inserts.
        assert_eq!(code(&[0x3f, 0xbd, 0x01]), Err(0x0201));
        // Capacity 31 is refused before its continuation bytes arrive.
        assert_eq!(code(&[0x20, 0x3f]), Err(0x0201));
        assert_eq!(code(&[0x21]), Err(0x0201));
        assert_eq!(code(&[0x30]), Err(0x0201));
        // Insert with Name Reference (B.2), Literal Name (B.3), Duplicate (B.4).
        assert_eq!(code(&[0x20, 0xc0, 0x0f]), Err(0x0201));
        assert_eq!(code(&[0x4a, 0x63]), Err(0x0201));
        assert_eq!(code(&[0x02]), Err(0x0201));
    }

    #[test]
    fn decoder_stream() {
        assert_eq!(check_decoder_stream(&[]), Ok(0));
        // RFC 9204 B.4: Stream Cancellation (Stream=8).
        assert_eq!(check_decoder_stream(&[0x48]), Ok(1));
        // Stream 100 needs a continuation byte: 0x7f, 100 - 63 = 37.
        assert_eq!(check_decoder_stream(&[0x48, 0x7f, 0x25]), Ok(3));
        // A partial instruction is left for later.
        assert_eq!(check_decoder_stream(&[0x48, 0x7f]), Ok(1));
        assert_eq!(check_decoder_stream(&[0x7f, 0x80, 0x80]), Ok(0));
        let code = |d: &[u8]| check_decoder_stream(d).map_err(|e| e.code());
        // B.2: Section Acknowledgment; B.3: Insert Count Increment.
        assert_eq!(code(&[0x84]), Err(0x0202));
        assert_eq!(code(&[0x48, 0x01]), Err(0x0202));
        assert_eq!(code(&[0x00]), Err(0x0202));
        let mut huge = vec![0x7f];
        huge.extend([0xff; 12]);
        assert_eq!(code(&huge), Err(0x0202));
    }
}
