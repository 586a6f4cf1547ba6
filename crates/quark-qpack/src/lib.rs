//! # quark-qpack: QPACK field compression for quark's HTTP/3
//!
//! [RFC 9204](https://www.rfc-editor.org/rfc/rfc9204) in both directions,
//! with the dynamic table:
//!
//! - [`Encoder`] encodes field sections for one connection. With the peer's
//!   `SETTINGS_QPACK_MAX_TABLE_CAPACITY` (bounded by our own limit) above 0 it
//!   inserts fields likely to repeat (`:authority`, `user-agent`, `accept*`,
//!   long cookies, `content-type`, `server`, `cache-control`, ...; never
//!   credentials, paths, dates, lengths or validators), references them, and
//!   writes the encoder stream. It evicts only acknowledged entries no
//!   unacknowledged section references (§2.1.1), and lets sections reference
//!   unacknowledged entries only on as many streams as the peer's
//!   `SETTINGS_QPACK_BLOCKED_STREAMS` allows. It reads the decoder stream.
//! - [`Decoder`] applies the peer's encoder stream to our table, decodes
//!   field sections (or reports them blocked until inserts arrive), and
//!   writes Section Acknowledgment, Stream Cancellation and Insert Count
//!   Increment on the decoder stream. Table capacity, blocked streams,
//!   partial instructions and string lengths are bounded by what we
//!   advertised; violations are typed errors with the RFC's codes.
//!
//! With capacity 0 both fall back to the stateless static-only functions
//! [`encode_section`] and [`decode_section`] (the path HTTP/3 takes when the
//! dynamic table is off): each section is encoded with the static table
//! (Appendix A), prefix integers and string literals, optionally Huffman
//! coded (RFC 7541 §5); [`check_encoder_stream`] and [`check_decoder_stream`]
//! validate QPACK streams when no dynamic table was allowed.
//!
//! | module | what lives there |
//! |---|---|
//! | `field` | [`encode_section`], [`decode_section`] (static only) |
//! | `spans` | [`decode_section_spans`]: the same, into one caller's buffer |
//! | `table` | the dynamic table: entries, sizes, eviction, absolute indices |
//! | `section` | Required Insert Count and Base, dynamic representations |
//! | `instructions` | encoder and decoder stream instructions |
//! | `encoder`, `decoder` | [`Encoder`], [`Decoder`] |
//! | `streams` | [`check_encoder_stream`], [`check_decoder_stream`] |
//! | `static_table` | [`static_entry`], [`STATIC_TABLE_LEN`] |
//! | `huffman`, `huffman_table` | the RFC 7541 Appendix B code |
//! | `prefix_int` | N-bit prefix integers (RFC 7541 §5.1) |
//!
//! Field names and values are passed through as bytes: checking that names are
//! lowercase tokens and values carry no CR/LF/NUL is HTTP/3's job (RFC 9114
//! §4.2), reported as H3_MESSAGE_ERROR rather than a QPACK error.
//!
//! Encoding, per field: an Indexed Field Line (static) when name and value
//! match a static entry; else a dynamic Indexed Field Line when the table has
//! it (or it is inserted now); else a Literal Field Line With Name Reference
//! (static, else dynamic) when the name matches; else a Literal Field Line
//! With Literal Name. String literals of 16 bytes or more are Huffman-coded
//! when that is shorter (shorter ones go raw: coding them cost more CPU than
//! the bytes saved).

#![warn(missing_docs)]

mod decoder;
mod encoder;
mod field;
mod huffman;
mod huffman_table;
mod instructions;
mod prefix_int;
mod section;
mod spans;
mod static_table;
mod streams;
mod table;

pub use decoder::Decoder;
pub use encoder::Encoder;
pub use field::{decode_section, encode_section};
pub use spans::{Span, decode_section_spans};
use std::borrow::Cow;

pub use static_table::{STATIC_TABLE_LEN, static_entry};
pub use streams::{check_decoder_stream, check_encoder_stream};

/// QPACK_DECOMPRESSION_FAILED: a field section could not be decoded.
pub const QPACK_DECOMPRESSION_FAILED: u64 = 0x0200;
/// QPACK_ENCODER_STREAM_ERROR: a bad instruction on the encoder stream.
pub const QPACK_ENCODER_STREAM_ERROR: u64 = 0x0201;
/// QPACK_DECODER_STREAM_ERROR: a bad instruction on the decoder stream.
pub const QPACK_DECODER_STREAM_ERROR: u64 = 0x0202;

/// One field line: name and value bytes (names lowercase as sent). Names and
/// values taken from the static table are borrowed from it, not copied: most
/// of a request's or response's head (`:method GET`, `:path`, `:status 200`,
/// `content-length`) costs no allocation to decode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field {
    /// The field name.
    pub name: Cow<'static, [u8]>,
    /// The field value.
    pub value: Cow<'static, [u8]>,
}

impl Field {
    /// The field's size as RFC 9114 §4.2.2 counts it: name and value lengths
    /// plus 32.
    pub fn size(&self) -> u64 {
        self.name.len() as u64 + self.value.len() as u64 + field::FIELD_OVERHEAD
    }
}

/// Why a field section could not be decoded. [`DecodeError::code`] is
/// QPACK_DECOMPRESSION_FAILED for every case.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DecodeError {
    /// The block ended inside a representation.
    #[error("field section ends inside a representation")]
    Truncated,
    /// A prefix integer beyond 2^62 - 1.
    #[error("prefix integer exceeds 2^62-1")]
    IntegerOverflow,
    /// A Huffman string contained EOS, or its padding was longer than 7 bits
    /// or not all ones.
    #[error("invalid Huffman-coded string")]
    BadHuffman,
    /// A nonzero Required Insert Count, a negative Base, a post-Base form, or
    /// an indexed or name-reference line with T = 0: all need the dynamic
    /// table, whose capacity we set to 0.
    #[error("reference to the dynamic table, whose capacity is 0")]
    DynamicReference,
    /// A static table index of 99 or more.
    #[error("static table index {0} out of range")]
    BadStaticIndex(u64),
    /// The decoded section exceeds the size limit.
    #[error("field section exceeds the size limit")]
    TooLarge,
    /// An Encoded Required Insert Count no conformant encoder produces.
    #[error("invalid Required Insert Count")]
    BadInsertCount,
    /// A negative Base below 0 (Sign 1 with Delta Base >= Required Insert Count).
    #[error("invalid Base")]
    BadBase,
    /// A dynamic reference at or above the Required Insert Count, or to an
    /// evicted entry.
    #[error("reference to a dynamic entry that is not there")]
    BadDynamicIndex,
    /// One more blocked stream than our SETTINGS_QPACK_BLOCKED_STREAMS.
    #[error("more blocked streams than allowed")]
    TooManyBlocked,
}

impl DecodeError {
    /// The HTTP/3 error code: QPACK_DECOMPRESSION_FAILED (0x0200).
    pub fn code(&self) -> u64 {
        QPACK_DECOMPRESSION_FAILED
    }
}

/// A QPACK instruction stream carried something quark cannot accept.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StreamError {
    /// QPACK_ENCODER_STREAM_ERROR (0x0201) case.
    #[error("QPACK encoder stream: {0}")]
    Encoder(&'static str),
    /// QPACK_DECODER_STREAM_ERROR (0x0202) case.
    #[error("QPACK decoder stream: {0}")]
    Decoder(&'static str),
}

impl StreamError {
    /// The HTTP/3 error code: 0x0201 for the encoder stream, 0x0202 for the
    /// decoder stream.
    pub fn code(&self) -> u64 {
        match self {
            StreamError::Encoder(_) => QPACK_ENCODER_STREAM_ERROR,
            StreamError::Decoder(_) => QPACK_DECODER_STREAM_ERROR,
        }
    }
}
