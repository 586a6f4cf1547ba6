//! A response body made of a file's byte ranges and, for several ranges,
//! the multipart/byteranges framing between them (RFC 9110 §14.6), read in
//! pieces as the stream takes them.

use std::collections::VecDeque;
use std::io;

use bytes::Bytes;

use super::listing::Charge;
use super::source::Source;

/// What a response sends after its head: read in pieces.
pub struct FileBody {
    /// The file the ranges are of (none for a page we made).
    source: Option<Source>,
    pieces: VecDeque<Piece>,
    /// Bytes still to send, over all pieces.
    left: u64,
    /// Whether the front piece's range is selected in `source`.
    started: bool,
    /// A page's share of the bound on pages held, given back with the body.
    _charge: Option<Charge>,
}

enum Piece {
    /// Framing text we made.
    Text(Bytes),
    /// File bytes `start..=end`.
    File(u64, u64),
}

impl FileBody {
    /// The whole file.
    pub(crate) fn whole(source: Source) -> FileBody {
        match source.len {
            0 => Self::ranges(source, &[]),
            len => Self::ranges(source, &[(0, len - 1)]),
        }
    }

    /// Bytes `start..=end` of each range, one after another, with nothing
    /// between them.
    fn ranges(source: Source, ranges: &[(u64, u64)]) -> FileBody {
        let pieces: VecDeque<Piece> = ranges.iter().map(|&(s, e)| Piece::File(s, e)).collect();
        Self::of(Some(source), pieces)
    }

    /// A page made in memory (a directory listing), holding its `charge`.
    pub(crate) fn page(page: Bytes, charge: Charge) -> FileBody {
        FileBody {
            _charge: Some(charge),
            ..Self::of(None, VecDeque::from([Piece::Text(page)]))
        }
    }

    /// One range, as the body of a single-part 206.
    pub(crate) fn range(source: Source, start: u64, end: u64) -> FileBody {
        Self::ranges(source, &[(start, end)])
    }

    /// Several ranges as multipart/byteranges with `boundary`, each part
    /// headed by `content_type` and its Content-Range.
    pub(crate) fn multipart(
        source: Source,
        ranges: &[(u64, u64)],
        boundary: &str,
        content_type: &str,
    ) -> FileBody {
        let len = source.len;
        let mut pieces = VecDeque::with_capacity(2 * ranges.len() + 1);
        for &(start, end) in ranges {
            let head = format!(
                "\r\n--{boundary}\r\ncontent-type: {content_type}\r\n\
                 content-range: bytes {start}-{end}/{len}\r\n\r\n"
            );
            pieces.push_back(Piece::Text(Bytes::from(head)));
            pieces.push_back(Piece::File(start, end));
        }
        pieces.push_back(Piece::Text(Bytes::from(format!("\r\n--{boundary}--\r\n"))));
        Self::of(Some(source), pieces)
    }

    fn of(source: Option<Source>, pieces: VecDeque<Piece>) -> FileBody {
        let left = pieces
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.len() as u64,
                Piece::File(s, e) => e + 1 - s,
            })
            .sum();
        FileBody {
            source,
            pieces,
            left,
            started: false,
            _charge: None,
        }
    }

    /// Bytes still to send.
    pub fn left(&self) -> u64 {
        self.left
    }

    /// The next `max` bytes at most (empty once all are read). A file that
    /// shrank under us is an `UnexpectedEof` error: Content-Length promised them.
    pub async fn read(&mut self, max: usize) -> io::Result<Bytes> {
        let out = match self.pieces.front_mut() {
            None => return Ok(Bytes::new()),
            Some(Piece::Text(t)) => {
                let out = t.split_to(max.min(t.len()));
                if t.is_empty() {
                    self.pieces.pop_front();
                }
                out
            }
            Some(&mut Piece::File(start, end)) => {
                let Some(source) = self.source.as_mut() else {
                    return Err(io::Error::other("a file range without its file"));
                };
                if !self.started {
                    source.select(start, end);
                    self.started = true;
                }
                let out = source.read(max).await?;
                if source.left() == 0 {
                    self.pieces.pop_front();
                    self.started = false;
                }
                out
            }
        };
        self.left -= out.len() as u64;
        Ok(out)
    }
}
