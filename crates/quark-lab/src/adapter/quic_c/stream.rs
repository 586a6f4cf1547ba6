//! A libquark stream handle as the hq-interop helpers' two halves. As
//! `quic` uses quark's zero-copy calls (`write_chunk`, `read_visit`), this
//! uses libquark's: the pattern is lent (`quark_stream_write_ref`, static
//! bytes, nothing to release) and reads visit the data in place
//! (`quark_stream_read_with`); the request or response head is copied
//! (`quark_stream_write`), as `quic` copies it. A head with a body under
//! 4 KiB (which quark copies anyway) goes with the body and the FIN in one
//! gather write (`quark_stream_writev`).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use quark_ffi::call;

use super::ready::{Ready, check};
use crate::adapter::hq::{ReadChunks, SendPattern};
use crate::wire::{CHUNK, chunk_spans, pattern_slice};

/// A stream handle this side owns: non-blocking, registered with its
/// endpoint's [`Ready`], closed (never blocking for a stream) when dropped.
pub(crate) struct OwnedStream {
    handle: i64,
    ready: Arc<Ready>,
    /// A read reported the end (`quark_stream_read_with_fin`): the reader
    /// is told so without another call.
    ended: AtomicBool,
}

impl OwnedStream {
    /// Takes `handle` (a new stream, > 0).
    pub(crate) fn new(handle: i64, ready: Arc<Ready>) -> Self {
        ready.register(handle);
        OwnedStream {
            handle,
            ready,
            ended: AtomicBool::new(false),
        }
    }

    /// One half for reading or writing (both may exist at once).
    pub(crate) fn half(&self) -> Half<'_> {
        Half { s: self }
    }
}

impl Drop for OwnedStream {
    fn drop(&mut self) {
        self.ready.unregister(self.handle);
        // Closing a stream does not block: FIN was sent by shutdown, or the
        // request failed and the peer gets STOP_SENDING.
        quark_ffi::quark_close(self.handle);
    }
}

/// A view of an [`OwnedStream`] for the hq-interop helpers.
#[derive(Clone, Copy)]
pub(crate) struct Half<'a> {
    s: &'a OwnedStream,
}

impl Half<'_> {
    /// Writes all of `data` with `write` (`quark_stream_write` or
    /// `quark_stream_write_ref`), which may take part of it at a time.
    async fn write_all<'d>(
        &self,
        mut data: &'d [u8],
        write: impl Fn(i64, &'d [u8]) -> i64,
    ) -> anyhow::Result<()> {
        let h = self.s.handle;
        while !data.is_empty() {
            let n = self.s.ready.retry(h, || write(h, data)).await;
            let n = check("quark_stream_write", n)? as usize;
            data = &data[n.min(data.len())..];
        }
        Ok(())
    }
}

/// Below this, a lent piece is copied anyway (quark copies chunks under
/// 4 KiB): a head and such a body go in one copying write.
const LENT_COPIED_BELOW: u64 = 4096;

impl SendPattern for Half<'_> {
    async fn send(&mut self, head: &[u8], len: u64) -> anyhow::Result<()> {
        if !head.is_empty() && len < LENT_COPIED_BELOW {
            // Head, body and FIN in one call (`quark_stream_writev`), as a
            // C program would gather them: no copy more than lending.
            let (mut head, mut body) = (head, pattern_slice(0, len as usize));
            let h = self.s.handle;
            loop {
                let n = self
                    .s
                    .ready
                    .retry(h, || call::stream_writev(h, [head, body], true))
                    .await;
                let n = check("quark_stream_writev", n)? as usize;
                let in_head = n.min(head.len());
                head = &head[in_head..];
                body = &body[(n - in_head).min(body.len())..];
                if head.is_empty() && body.is_empty() {
                    return Ok(());
                }
            }
        }
        if head.is_empty() && len > 0 && len <= CHUNK as u64 {
            // An answer in one piece (the server's): lent with the FIN.
            return self
                .write_all(
                    pattern_slice(0, len as usize),
                    call::stream_write_static_fin,
                )
                .await;
        }
        self.write_all(head, call::stream_write).await?;
        let mut spans = chunk_spans(len).peekable();
        while let Some((off, n)) = spans.next() {
            // The last piece ends the stream in the same call
            // (`quark_stream_write_ref_fin`): no `quark_stream_shutdown`.
            let write: fn(i64, &'static [u8]) -> i64 = match spans.peek() {
                None => call::stream_write_static_fin,
                Some(_) => call::stream_write_static,
            };
            self.write_all(pattern_slice(off, n), write).await?;
        }
        if len == 0 {
            check(
                "quark_stream_shutdown",
                i64::from(quark_ffi::quark_stream_shutdown(self.s.handle)),
            )?;
        }
        Ok(())
    }
}

impl ReadChunks for Half<'_> {
    /// Each read also says whether the stream ended
    /// (`quark_stream_read_with_fin`), so the end costs no call of its own.
    async fn read_with<F: FnMut(&[u8]) + Send>(&mut self, mut f: F) -> anyhow::Result<bool> {
        if self.s.ended.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let h = self.s.handle;
        let mut fin = false;
        let n = self
            .s
            .ready
            .retry(h, || {
                let (n, ended) = call::stream_read_with_fin(h, usize::MAX, &mut f);
                fin = ended;
                n
            })
            .await;
        let n = check("quark_stream_read", n)?;
        self.s.ended.store(fin, Ordering::Relaxed);
        Ok(n > 0)
    }
}
