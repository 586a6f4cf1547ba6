//! hq-interop (HTTP/0.9 over QUIC, ALPN `hq-interop`) over quark's streams.
//!
//! A request is one bidirectional stream: `GET /<n>\r\n`, then optionally a
//! request body, then FIN. The server reads to FIN and answers `n` bytes of
//! pattern, then FIN. Data is read in place as it arrives (quark's `read_visit`),
//! as the quinn adapter takes quinn's zero-copy chunks, so neither stack pays for
//! zeroing a large read buffer, or allocating one, per request; and the pattern
//! goes out as shared chunks (quark's `write_chunk`, quinn's too), so neither
//! copies it into its send buffer.

use anyhow::{Context, bail};

use super::{Request, ServerStats};
use crate::wire::{Header, MAX_HEADER, Verifier, WireError, pattern_chunks};

/// A stream's receiving half, read in pieces of what has arrived.
pub trait ReadChunks {
    /// Hands the next bytes to arrive to `f` (in one or more pieces); `false` at
    /// the end of the stream.
    fn read_with<F: FnMut(&[u8]) + Send>(
        &mut self,
        f: F,
    ) -> impl Future<Output = anyhow::Result<bool>> + Send;
}

/// A stream's sending half.
pub trait SendPattern {
    /// Writes `head`, then `len` bytes of pattern, then ends the stream.
    fn send(&mut self, head: &[u8], len: u64) -> impl Future<Output = anyhow::Result<()>> + Send;
}

impl SendPattern for quark::SendStream {
    /// The pattern goes as shared chunks (`write_chunk`), as the quinn adapter
    /// sends it: neither stack copies it into its send buffer.
    async fn send(&mut self, head: &[u8], len: u64) -> anyhow::Result<()> {
        self.write_all(head).await?;
        for chunk in pattern_chunks(len) {
            self.write_chunk(chunk).await?;
        }
        self.finish()?;
        Ok(())
    }
}

impl ReadChunks for quark::RecvStream {
    async fn read_with<F: FnMut(&[u8]) + Send>(&mut self, f: F) -> anyhow::Result<bool> {
        Ok(self.read_visit(usize::MAX, f).await?.is_some())
    }
}

/// Feeds a whole stream to `push`, ending at FIN or at `push`'s first error.
async fn read_all<R: ReadChunks>(
    recv: &mut R,
    mut push: impl FnMut(&[u8]) -> Result<(), WireError> + Send,
) -> anyhow::Result<()> {
    let mut failed = None;
    let mut feed = |data: &[u8]| {
        if failed.is_none() {
            failed = push(data).err();
        }
    };
    while recv.read_with(&mut feed).await? {}
    match failed {
        Some(e) => Err(e.into()),
        None => Ok(()),
    }
}

/// The ALPN token of hq-interop.
pub const ALPN: &[u8] = b"hq-interop";

/// Parses the header at the start of a request stream; the bytes after it are body.
pub struct RequestReader {
    header: Option<Header>,
    buf: Vec<u8>,
    body: Verifier,
}

impl Default for RequestReader {
    fn default() -> Self {
        RequestReader {
            header: None,
            buf: Vec::with_capacity(MAX_HEADER),
            body: Verifier::new(crate::wire::MAX_LEN),
        }
    }
}

impl RequestReader {
    /// Feeds received bytes.
    pub fn push(&mut self, data: &[u8]) -> Result<(), WireError> {
        if self.header.is_some() {
            return self.body.update(data);
        }
        let take = data.len().min(MAX_HEADER - self.buf.len());
        self.buf.extend_from_slice(&data[..take]);
        match Header::parse(&self.buf)? {
            Some((h, used)) => {
                if h.body_len.is_some() {
                    // hq-interop's header line is `GET /<n>`; the body runs to FIN.
                    return Err(WireError::BadHeader);
                }
                self.header = Some(h);
                // Body bytes that came with the header, then the rest of `data`.
                let first = self.buf.split_off(used);
                self.body.update(&first)?;
                self.body.update(&data[take..])
            }
            None if take < data.len() => Err(WireError::HeaderTooLong),
            None => Ok(()),
        }
    }

    /// The header and body length once the stream reached FIN.
    pub fn finish(&self) -> Result<(Header, u64), WireError> {
        let h = self.header.ok_or(WireError::BadHeader)?;
        Ok((h, self.body.received()))
    }
}

/// Serves one hq-interop request stream.
pub async fn serve_stream<R, W>(mut recv: R, mut send: W, stats: &ServerStats) -> anyhow::Result<()>
where
    R: ReadChunks,
    W: SendPattern,
{
    let guard = stats.request();
    let mut req = RequestReader::default();
    read_all(&mut recv, |data| req.push(data)).await?;
    let (h, body) = req.finish()?;
    send.send(&[], h.response_len).await?;
    guard.finish(body, h.response_len);
    Ok(())
}

/// Issues one hq-interop request on a fresh stream and verifies the response.
pub async fn request<W, R>(mut send: W, mut recv: R, req: Request) -> anyhow::Result<()>
where
    W: SendPattern,
    R: ReadChunks,
{
    let mut head = Vec::with_capacity(MAX_HEADER);
    Header {
        response_len: req.response_len,
        body_len: None,
    }
    .encode(&mut head);
    send.send(&head, req.body_len).await?;
    let mut v = Verifier::new(req.response_len);
    read_all(&mut recv, |data| v.update(data))
        .await
        .context("response")?;
    if !v.is_complete() {
        bail!(v.finish().unwrap_err());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::pattern_slice;

    #[test]
    fn request_reader_splits_header_and_body_anywhere() {
        let mut wire = b"GET /42\r\n".to_vec();
        wire.extend_from_slice(pattern_slice(0, 300));
        for split in 1..wire.len() {
            let mut r = RequestReader::default();
            r.push(&wire[..split]).unwrap();
            r.push(&wire[split..]).unwrap();
            assert_eq!(
                r.finish().unwrap(),
                (
                    Header {
                        response_len: 42,
                        body_len: None
                    },
                    300
                )
            );
        }
    }

    #[test]
    fn request_reader_rejects_garbage() {
        let mut r = RequestReader::default();
        assert!(r.push(&[b'x'; 200]).is_err());
        let mut r = RequestReader::default();
        r.push(b"GET /1").unwrap();
        assert!(r.finish().is_err());
        let mut r = RequestReader::default();
        assert!(r.push(b"GET /1\r\nbad body").is_err());
        let mut r = RequestReader::default();
        assert!(r.push(b"GET /1 5\r\n").is_err());
    }

    impl SendPattern for tokio::io::DuplexStream {
        async fn send(&mut self, head: &[u8], len: u64) -> anyhow::Result<()> {
            use tokio::io::AsyncWriteExt;
            self.write_all(head).await?;
            crate::adapter::stream::write_pattern(self, len).await?;
            self.shutdown().await?;
            Ok(())
        }
    }

    impl ReadChunks for tokio::io::DuplexStream {
        async fn read_with<F: FnMut(&[u8]) + Send>(&mut self, mut f: F) -> anyhow::Result<bool> {
            use tokio::io::AsyncReadExt;
            let mut buf = [0; 1000];
            let n = self.read(&mut buf).await?;
            f(&buf[..n]);
            Ok(n > 0)
        }
    }

    #[tokio::test]
    async fn helpers_round_trip_over_duplex_pipes() {
        let stats = ServerStats::default();
        let (c_send, s_recv) = tokio::io::duplex(4096);
        let (s_send, c_recv) = tokio::io::duplex(4096);
        let req = Request {
            response_len: 100_000,
            body_len: 5_000,
        };
        let (a, b) = tokio::join!(
            serve_stream(s_recv, s_send, &stats),
            request(c_send, c_recv, req)
        );
        a.unwrap();
        b.unwrap();
        let s = stats.snapshot();
        assert_eq!((s.requests, s.bytes_in, s.bytes_out), (1, 5_000, 100_000));
    }
}
