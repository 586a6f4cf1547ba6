//! A libquark stream handle as the hq-interop helpers' two halves: reads
//! copy into one scratch buffer per thread (as a C event loop reuses one
//! buffer), writes copy the pattern out of the lab's shared chunks.

use std::cell::RefCell;
use std::sync::Arc;

use quark_ffi::call;

use super::ready::{Ready, check};
use crate::adapter::hq::{ReadChunks, SendPattern};
use crate::wire::{chunk_spans, pattern_slice};

/// Bytes one `quark_stream_read` may return (the TCP adapters' read buffer).
const READ_BUF: usize = crate::adapter::stream::READ_BUF;

thread_local! {
    static SCRATCH: RefCell<Vec<u8>> = RefCell::new(vec![0; READ_BUF]);
}

/// A stream handle this side owns: non-blocking, registered with its
/// endpoint's [`Ready`], closed (never blocking for a stream) when dropped.
pub(crate) struct OwnedStream {
    handle: i64,
    ready: Arc<Ready>,
}

impl OwnedStream {
    /// Takes `handle` (a new stream, > 0).
    pub(crate) fn new(handle: i64, ready: Arc<Ready>) -> anyhow::Result<Self> {
        let s = OwnedStream { handle, ready };
        s.ready.register(handle)?;
        Ok(s)
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
    async fn write_all(&self, mut data: &[u8]) -> anyhow::Result<()> {
        let h = self.s.handle;
        while !data.is_empty() {
            let n = self.s.ready.retry(h, || call::stream_write(h, data)).await;
            let n = check("quark_stream_write", n)? as usize;
            data = &data[n.min(data.len())..];
        }
        Ok(())
    }
}

impl SendPattern for Half<'_> {
    async fn send(&mut self, head: &[u8], len: u64) -> anyhow::Result<()> {
        self.write_all(head).await?;
        for (off, n) in chunk_spans(len) {
            self.write_all(pattern_slice(off, n)).await?;
        }
        check(
            "quark_stream_shutdown",
            i64::from(quark_ffi::quark_stream_shutdown(self.s.handle)),
        )?;
        Ok(())
    }
}

impl ReadChunks for Half<'_> {
    async fn read_with<F: FnMut(&[u8]) + Send>(&mut self, mut f: F) -> anyhow::Result<bool> {
        let h = self.s.handle;
        // The copy is handed to `f` inside the call's closure: the scratch
        // buffer is never held across an await.
        let n = self
            .s
            .ready
            .retry(h, || {
                SCRATCH.with(|buf| {
                    let mut buf = buf.borrow_mut();
                    let n = call::stream_read(h, &mut buf);
                    if n > 0 {
                        f(&buf[..n as usize]);
                    }
                    n
                })
            })
            .await;
        Ok(check("quark_stream_read", n)? > 0)
    }
}
