//! Frames read from a QUIC stream: headers parsed from a small buffer, whole
//! payloads for control frames and HEADERS (bounded), DATA handed on in
//! pieces as it arrives.

use quark::RecvStream;
use quark_proto::coding::Reader;

use crate::error::{Error, H3_FRAME_ERROR};
use crate::frame::{FrameHeader, parse_header};

/// The most a frame header (two variable-length integers) takes. Reads for a
/// header take no more, so at most a few bytes of a DATA payload pass through
/// the buffer: the rest goes from the stream straight to the reader (`some_with`).
const MAX_HEADER: usize = 16;

/// Bytes read ahead for a message's head: its frame header, a typical HEADERS
/// block (tens of bytes) and the DATA frame header after it come in one read
/// from the stream instead of three. Up to this much of a body then passes
/// through the buffer; the rest still goes to the reader in place.
pub(crate) const HEAD_READ_AHEAD: usize = 128;

/// A receiving stream with a little read-ahead.
pub(crate) struct FrameReader {
    recv: RecvStream,
    buf: Vec<u8>,
    pos: usize,
    fin: bool,
}

impl FrameReader {
    pub(crate) fn new(recv: RecvStream) -> Self {
        FrameReader::with_buf(recv, Vec::new())
    }

    /// A reader whose read-ahead goes into `buf` (a reused one, emptied).
    pub(crate) fn with_buf(recv: RecvStream, mut buf: Vec<u8>) -> Self {
        buf.clear();
        FrameReader {
            recv,
            buf,
            pos: 0,
            fin: false,
        }
    }

    /// Takes the read-ahead buffer (for reuse once the stream is done with).
    pub(crate) fn take_buf(&mut self) -> Vec<u8> {
        self.pos = 0;
        std::mem::take(&mut self.buf)
    }

    pub(crate) fn stream(&mut self) -> &mut RecvStream {
        &mut self.recv
    }

    fn buffered(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    fn consume(&mut self, n: usize) {
        self.pos += n;
        if self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
    }

    /// Reads up to `max` more bytes into the buffer: `false` at the end of the stream.
    async fn fill(&mut self, max: usize) -> Result<bool, Error> {
        if self.fin {
            return Ok(false);
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        if self.buf.capacity() == 0 {
            // Room for a frame header and a small HEADERS block at once.
            self.buf.reserve(HEAD_READ_AHEAD);
        }
        let buf = &mut self.buf;
        // Straight from the stream's buffer into ours: no chunk allocated.
        let got = self
            .recv
            .read_visit(max.max(1), |piece| buf.extend_from_slice(piece))
            .await?;
        if got.is_none() {
            self.fin = true;
        }
        Ok(got.is_some())
    }

    /// Reads ahead into the buffer, up to `limit` bytes buffered, while the
    /// caller waits for something else (a blocked field section's inserts),
    /// so that a reset of the stream is seen. Never returns `Ok`: it pends
    /// once the stream has ended or the buffer is full. Cancel-safe (a read
    /// takes bytes only when it completes).
    pub(crate) async fn read_ahead(&mut self, limit: usize) -> Result<(), Error> {
        loop {
            let room = limit.saturating_sub(self.buffered().len());
            if room == 0 || !self.fill(room).await? {
                return std::future::pending().await;
            }
        }
    }

    /// A variable-length integer (a unidirectional stream's type), or `None`
    /// when the stream ends first.
    pub(crate) async fn varint(&mut self) -> Result<Option<u64>, Error> {
        loop {
            let mut r = Reader::new(self.buffered());
            if let Ok(v) = r.varint() {
                let n = r.position();
                self.consume(n);
                return Ok(Some(v));
            }
            if !self
                .fill(MAX_HEADER.saturating_sub(self.buffered().len()))
                .await?
            {
                return Ok(None);
            }
        }
    }

    /// The next frame's header, or `None` at the end of the stream between
    /// frames. A stream that ends inside a frame header is H3_FRAME_ERROR.
    pub(crate) async fn header(&mut self) -> Result<Option<FrameHeader>, Error> {
        self.header_ahead(MAX_HEADER).await
    }

    /// [`header`](Self::header), reading up to `ahead` bytes into the buffer
    /// when it has to read.
    pub(crate) async fn header_ahead(
        &mut self,
        ahead: usize,
    ) -> Result<Option<FrameHeader>, Error> {
        loop {
            if let Some((h, n)) = parse_header(self.buffered()) {
                self.consume(n);
                return Ok(Some(h));
            }
            if !self
                .fill(ahead.saturating_sub(self.buffered().len()))
                .await?
            {
                return match self.buffered().is_empty() {
                    true => Ok(None),
                    false => Err(Error::conn(
                        H3_FRAME_ERROR,
                        "stream ended in a frame header",
                    )),
                };
            }
        }
    }

    /// A whole payload of `len` bytes; the caller has checked `len` against its limit.
    pub(crate) async fn payload(&mut self, len: u64) -> Result<Vec<u8>, Error> {
        self.payload_with(len, <[u8]>::to_vec).await
    }

    /// Hands a whole payload of `len` bytes to `f` where it lies in the
    /// buffer (a HEADERS block is decoded there, not copied out first); the
    /// caller has checked `len` against its limit.
    pub(crate) async fn payload_with<R>(
        &mut self,
        len: u64,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<R, Error> {
        let len =
            usize::try_from(len).map_err(|_| Error::conn(H3_FRAME_ERROR, "frame too long"))?;
        while self.buffered().len() < len {
            let want = len - self.buffered().len();
            if !self.fill(want).await? {
                return Err(Error::conn(H3_FRAME_ERROR, "stream ended in a frame"));
            }
        }
        let out = f(&self.buffered()[..len]);
        self.consume(len);
        Ok(out)
    }

    /// Hands up to `max` bytes of a payload being streamed (DATA) to `f`, in
    /// place, as they arrive; returns how many.
    pub(crate) async fn some_with(
        &mut self,
        max: u64,
        mut f: impl FnMut(&[u8]),
    ) -> Result<usize, Error> {
        let max = usize::try_from(max).unwrap_or(usize::MAX);
        if !self.buffered().is_empty() {
            let n = self.buffered().len().min(max);
            f(&self.buffered()[..n]);
            self.consume(n);
            return Ok(n);
        }
        if !self.fin {
            if let Some(n) = self.recv.read_visit(max, f).await? {
                return Ok(n);
            }
            self.fin = true;
        }
        Err(Error::conn(H3_FRAME_ERROR, "stream ended in a frame"))
    }

    /// Skips `len` bytes of payload (an unknown frame).
    pub(crate) async fn skip(&mut self, mut len: u64) -> Result<(), Error> {
        while len > 0 {
            len -= self.some_with(len, |_| {}).await? as u64;
        }
        Ok(())
    }
}
