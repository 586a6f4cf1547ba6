//! The lab's application protocol: request header line and the response pattern.
//!
//! See the crate documentation for the protocol as seen on the wire. This module
//! holds the parts every adapter shares: encoding and parsing of the header line,
//! the generated payload pattern and the byte-exact verifier.

use std::sync::LazyLock;

use bytes::Bytes;

/// Longest accepted header line, `\r\n` included. Anything longer is malformed.
pub const MAX_HEADER: usize = 64;

/// Largest response or body a peer may ask for (1 TiB): keeps every length sane.
pub const MAX_LEN: u64 = 1 << 40;

/// Payload byte `i` is `i % PERIOD`: a prime period, so a lost or duplicated
/// slice of data shifts the pattern and fails verification.
const PERIOD: usize = 251;

/// Size of the slices [`pattern_chunk`] hands out.
pub const CHUNK: usize = 256 * 1024;

static PATTERN: LazyLock<Bytes> = LazyLock::new(|| {
    (0..CHUNK + PERIOD)
        .map(|i| (i % PERIOD) as u8)
        .collect::<Vec<u8>>()
        .into()
});

/// The pattern bytes at stream offset `offset`, `len <= CHUNK` bytes long.
pub fn pattern_slice(offset: u64, len: usize) -> &'static [u8] {
    let start = (offset % PERIOD as u64) as usize;
    let pattern: &'static Bytes = &PATTERN;
    &pattern[start..start + len.min(CHUNK)]
}

/// Like [`pattern_slice`] but as a zero-copy `Bytes` (for APIs that take ownership).
pub fn pattern_chunk(offset: u64, len: usize) -> Bytes {
    let start = (offset % PERIOD as u64) as usize;
    PATTERN.slice(start..start + len.min(CHUNK))
}

/// The (offset, length) of consecutive chunks of at most [`CHUNK`] bytes
/// covering `[0, len)`.
pub fn chunk_spans(len: u64) -> impl Iterator<Item = (u64, usize)> {
    (0..len.div_ceil(CHUNK as u64)).map(move |i| {
        let off = i * CHUNK as u64;
        (off, (len - off).min(CHUNK as u64) as usize)
    })
}

/// `len` bytes of pattern as consecutive zero-copy chunks (for APIs that take
/// ownership: every adapter sends its bodies this way).
pub fn pattern_chunks(len: u64) -> impl Iterator<Item = Bytes> {
    chunk_spans(len).map(|(off, n)| pattern_chunk(off, n))
}

/// Calls `f` with consecutive pattern chunks covering `[0, len)`.
pub fn for_each_chunk(len: u64, mut f: impl FnMut(u64, usize)) {
    for (off, n) in chunk_spans(len) {
        f(off, n);
    }
}

/// Errors of the application protocol. Every one is a reason to fail a request.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum WireError {
    /// The header line is not `GET /<n>[ <body>]\r\n`.
    #[error("malformed request header")]
    BadHeader,
    /// The header line is longer than [`MAX_HEADER`].
    #[error("request header longer than {MAX_HEADER} bytes")]
    HeaderTooLong,
    /// A length above [`MAX_LEN`].
    #[error("length {0} above the {MAX_LEN} byte limit")]
    TooLarge(u64),
    /// Payload bytes differ from the pattern.
    #[error("payload differs from the pattern at offset {0}")]
    Corrupt(u64),
    /// More payload than announced.
    #[error("payload longer than the {0} bytes expected")]
    TooLong(u64),
    /// The stream ended before all payload arrived.
    #[error("payload ended after {got} of {want} bytes")]
    Truncated {
        /// Bytes received.
        got: u64,
        /// Bytes expected.
        want: u64,
    },
}

/// A parsed request header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Header {
    /// Bytes of response the client asks for.
    pub response_len: u64,
    /// Bytes of request body that follow the header, when the framing carries it
    /// (TCP). `None` on QUIC, where the body runs to the stream's FIN.
    pub body_len: Option<u64>,
}

impl Header {
    /// Appends the header line to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        use std::io::Write;
        // Writing to a Vec cannot fail.
        let _ = match self.body_len {
            Some(b) => write!(out, "GET /{} {}\r\n", self.response_len, b),
            None => write!(out, "GET /{}\r\n", self.response_len),
        };
    }

    /// Parses a header line from the start of `buf`.
    ///
    /// Returns `Ok(None)` while the line is incomplete, otherwise the header and
    /// the number of bytes it used.
    pub fn parse(buf: &[u8]) -> Result<Option<(Header, usize)>, WireError> {
        let Some(nl) = buf.iter().take(MAX_HEADER).position(|&b| b == b'\n') else {
            return if buf.len() >= MAX_HEADER {
                Err(WireError::HeaderTooLong)
            } else {
                Ok(None)
            };
        };
        let line = buf[..nl].strip_suffix(b"\r").ok_or(WireError::BadHeader)?;
        let rest = line.strip_prefix(b"GET /").ok_or(WireError::BadHeader)?;
        let mut parts = rest.split(|&b| b == b' ');
        let response_len = parse_len(parts.next())?;
        let body_len = match parts.next() {
            None => None,
            Some(p) => Some(parse_len(Some(p))?),
        };
        if parts.next().is_some() {
            return Err(WireError::BadHeader);
        }
        Ok(Some((
            Header {
                response_len,
                body_len,
            },
            nl + 1,
        )))
    }
}

fn parse_len(field: Option<&[u8]>) -> Result<u64, WireError> {
    let field = field.ok_or(WireError::BadHeader)?;
    if field.is_empty() || field.len() > 20 || !field.iter().all(u8::is_ascii_digit) {
        return Err(WireError::BadHeader);
    }
    let n = field.iter().try_fold(0u64, |acc, &d| {
        acc.checked_mul(10)?.checked_add(u64::from(d - b'0'))
    });
    match n {
        Some(n) if n <= MAX_LEN => Ok(n),
        Some(n) => Err(WireError::TooLarge(n)),
        None => Err(WireError::TooLarge(u64::MAX)),
    }
}

/// Checks that a stream of payload bytes is exactly `expected` bytes of pattern.
#[derive(Debug, Clone)]
pub struct Verifier {
    offset: u64,
    expected: u64,
}

impl Verifier {
    /// A verifier expecting `expected` bytes.
    pub fn new(expected: u64) -> Self {
        Verifier {
            offset: 0,
            expected,
        }
    }

    /// Bytes verified so far.
    pub fn received(&self) -> u64 {
        self.offset
    }

    /// Whether all expected bytes arrived.
    pub fn is_complete(&self) -> bool {
        self.offset == self.expected
    }

    /// Checks the next piece of payload.
    pub fn update(&mut self, mut data: &[u8]) -> Result<(), WireError> {
        if data.len() as u64 > self.expected - self.offset {
            return Err(WireError::TooLong(self.expected));
        }
        while !data.is_empty() {
            let n = data.len().min(CHUNK);
            if data[..n] != *pattern_slice(self.offset, n) {
                let bad = data[..n]
                    .iter()
                    .zip(pattern_slice(self.offset, n))
                    .position(|(a, b)| a != b);
                return Err(WireError::Corrupt(self.offset + bad.unwrap_or(0) as u64));
            }
            self.offset += n as u64;
            data = &data[n..];
        }
        Ok(())
    }

    /// Ends the payload: every expected byte must have arrived.
    pub fn finish(&self) -> Result<(), WireError> {
        if self.is_complete() {
            Ok(())
        } else {
            Err(WireError::Truncated {
                got: self.offset,
                want: self.expected,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_round_trip() {
        for h in [
            Header {
                response_len: 0,
                body_len: None,
            },
            Header {
                response_len: 2000,
                body_len: Some(0),
            },
            Header {
                response_len: MAX_LEN,
                body_len: Some(524288),
            },
        ] {
            let mut buf = Vec::new();
            h.encode(&mut buf);
            buf.extend_from_slice(b"trailing body");
            let (got, used) = Header::parse(&buf).unwrap().unwrap();
            assert_eq!(got, h);
            assert_eq!(&buf[used..], b"trailing body");
        }
    }

    #[test]
    fn hq_interop_form() {
        let mut buf = Vec::new();
        Header {
            response_len: 1,
            body_len: None,
        }
        .encode(&mut buf);
        assert_eq!(buf, b"GET /1\r\n");
    }

    #[test]
    fn header_rejects_bad_input() {
        assert_eq!(Header::parse(b"GET /12"), Ok(None));
        for bad in [
            &b"GET /\r\n"[..],
            b"GET /-1\r\n",
            b"GET /1x\r\n",
            b"PUT /1\r\n",
            b"GET /1\n",
            b"GET /1 2 3\r\n",
            b"GET /1 \r\n",
            b"GET /99999999999999999999999\r\n",
        ] {
            assert!(
                Header::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
        assert_eq!(Header::parse(&[b'G'; 100]), Err(WireError::HeaderTooLong));
        assert_eq!(
            Header::parse(b"GET /1099511627777\r\n"),
            Err(WireError::TooLarge(MAX_LEN + 1))
        );
    }

    #[test]
    fn verifier_accepts_pattern_in_any_split() {
        let mut all = Vec::new();
        for_each_chunk(200_000, |off, n| {
            all.extend_from_slice(pattern_slice(off, n))
        });
        assert_eq!(all.len(), 200_000);
        for split in [1, 7, 251, 4096, 70_000] {
            let mut v = Verifier::new(200_000);
            for piece in all.chunks(split) {
                v.update(piece).unwrap();
            }
            v.finish().unwrap();
        }
    }

    #[test]
    fn verifier_catches_corruption_loss_and_excess() {
        let mut all = Vec::new();
        for_each_chunk(10_000, |off, n| {
            all.extend_from_slice(pattern_slice(off, n))
        });
        let mut bad = all.clone();
        bad[5000] ^= 1;
        assert_eq!(
            Verifier::new(10_000).update(&bad),
            Err(WireError::Corrupt(5000))
        );
        // A dropped byte in the middle shifts the rest.
        let mut lost = all.clone();
        lost.remove(100);
        assert!(Verifier::new(10_000).update(&lost).is_err());
        let mut v = Verifier::new(10_000);
        v.update(&all[..9_999]).unwrap();
        assert_eq!(
            v.finish(),
            Err(WireError::Truncated {
                got: 9_999,
                want: 10_000
            })
        );
        assert_eq!(
            Verifier::new(10).update(&all[..11]),
            Err(WireError::TooLong(10))
        );
    }

    #[test]
    fn chunk_matches_slice() {
        assert_eq!(&pattern_chunk(1234, 500)[..], pattern_slice(1234, 500));
    }
}
