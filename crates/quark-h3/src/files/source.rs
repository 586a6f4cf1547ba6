//! A file to serve, read in pieces from an offset, each with a blocking read
//! off the runtime's threads into a buffer of just its size (as
//! `quark::hq::FileSource`, which has no offset nor modification time).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

use bytes::Bytes;

/// What a path names.
pub(crate) enum Found {
    File(Source),
    Directory,
    Missing,
}

/// An open regular file and the part of it still to send.
pub(crate) struct Source {
    file: Arc<File>,
    /// The file's length when opened.
    pub(crate) len: u64,
    pub(crate) modified: SystemTime,
    /// The next byte to send and how many are left.
    pos: u64,
    left: u64,
}

async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> io::Result<T> + Send + 'static,
) -> io::Result<T> {
    tokio::task::spawn_blocking(f)
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)))
}

impl Source {
    /// Opens `path`: a regular file, a directory, or nothing servable.
    pub(crate) async fn open(path: &Path) -> io::Result<Found> {
        let path = path.to_path_buf();
        blocking(move || {
            // Looked at before opening: opening a FIFO would block.
            match std::fs::metadata(&path) {
                Ok(meta) if meta.is_dir() => return Ok(Found::Directory),
                Ok(meta) if meta.is_file() => {}
                _ => return Ok(Found::Missing),
            }
            let Ok(file) = File::open(&path) else {
                return Ok(Found::Missing);
            };
            let meta = file.metadata()?;
            if !meta.is_file() {
                return Ok(Found::Missing);
            }
            Ok(Found::File(Source {
                file: Arc::new(file),
                len: meta.len(),
                modified: meta.modified().unwrap_or(SystemTime::UNIX_EPOCH),
                pos: 0,
                left: meta.len(),
            }))
        })
        .await
    }

    /// Sends only bytes `start..=end` (within the file).
    pub(crate) fn select(&mut self, start: u64, end: u64) {
        self.pos = start;
        self.left = end + 1 - start;
    }

    /// Bytes still to send.
    pub(crate) fn left(&self) -> u64 {
        self.left
    }

    /// The next `max` bytes at most. A file that ends early is an error
    /// (`UnexpectedEof`): content-length promised them.
    pub(crate) async fn read(&mut self, max: usize) -> io::Result<Bytes> {
        let want = usize::try_from(self.left).map_or(max, |left| left.min(max));
        if want == 0 {
            return Ok(Bytes::new());
        }
        let (file, pos) = (Arc::clone(&self.file), self.pos);
        let piece = blocking(move || {
            let mut piece = vec![0; want];
            file.read_exact_at(&mut piece, pos)?;
            Ok(piece)
        })
        .await?;
        self.pos += want as u64;
        self.left -= want as u64;
        Ok(Bytes::from(piece))
    }
}
