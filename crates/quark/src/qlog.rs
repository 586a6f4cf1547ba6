//! qlog files: the protocol core records each connection's events in memory
//! (`quark_proto::qlog`); the driver hands them, a batch per round, to a
//! writer thread that appends them to `<odcid hex>_<server|client>.sqlog` in
//! the qlog directory, so no file I/O happens on the driver's path.

use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use quark_proto::Connection;

/// The environment variable that turns qlog on for every endpoint (the
/// directory to write to), as quiche, quinn and ngtcp2 read it.
pub const QLOGDIR_ENV: &str = "QLOGDIR";

/// Batches waiting for the writer at most: past this the driver waits for
/// the disk rather than holding ever more events in memory.
const QUEUE: usize = 1024;

enum Msg {
    /// Records for a file, appended in order.
    Data(String, Vec<u8>),
    /// The connection is gone: flush and close its file.
    Close(String),
    /// Reply once everything before this is on disk.
    Sync(SyncSender<()>),
}

/// The writer thread and the way to it.
pub(crate) struct QlogWriter {
    tx: Option<SyncSender<Msg>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

impl QlogWriter {
    /// Create `dir` if needed and start the writer.
    pub(crate) fn start(dir: &Path) -> io::Result<Self> {
        std::fs::create_dir_all(dir)?;
        let (tx, rx) = sync_channel(QUEUE);
        let dir = dir.to_path_buf();
        let thread = std::thread::Builder::new()
            .name("quark-qlog".into())
            .spawn(move || write_files(&dir, rx))?;
        Ok(QlogWriter {
            tx: Some(tx),
            thread: Mutex::new(Some(thread)),
        })
    }

    /// Hand what `conn` recorded since the last call to the writer; when
    /// `gone`, its file is closed after.
    pub(crate) fn drain(&self, conn: &mut Connection, gone: bool) {
        let (Some(tx), Some(name)) = (self.tx.as_ref(), conn.qlog_file_name()) else {
            return;
        };
        // The core has no clock: the wall clock dates the trace.
        let now = Instant::now();
        let unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0.0, |d| d.as_secs_f64() * 1000.0);
        let mut out = Vec::new();
        conn.take_qlog(now, unix_ms, &mut out);
        if !out.is_empty() {
            let _ = tx.send(Msg::Data(name.clone(), out));
        }
        if gone {
            let _ = tx.send(Msg::Close(name));
        }
    }

    /// Wait until everything handed over so far is written.
    pub(crate) fn sync(&self) {
        let Some(tx) = self.tx.as_ref() else { return };
        let (done_tx, done_rx) = sync_channel(1);
        if tx.send(Msg::Sync(done_tx)).is_ok() {
            let _ = done_rx.recv();
        }
    }
}

impl Drop for QlogWriter {
    /// The endpoint is gone: let the writer finish its files.
    fn drop(&mut self) {
        self.tx = None;
        if let Some(t) = self.thread.lock().ok().and_then(|mut t| t.take()) {
            let _ = t.join();
        }
    }
}

/// The writer thread: open files as connections appear, flush whenever the
/// queue runs dry.
fn write_files(dir: &Path, rx: Receiver<Msg>) {
    let mut files: HashMap<String, BufWriter<File>> = HashMap::new();
    let mut failed = false;
    while let Ok(mut msg) = rx.recv() {
        loop {
            match msg {
                Msg::Data(name, bytes) => {
                    let file = match files.get_mut(&name) {
                        Some(f) => Some(f),
                        None => match OpenOptions::new()
                            .create(true)
                            .append(true)
                            .open(dir.join(&name))
                        {
                            Ok(f) => Some(files.entry(name).or_insert(BufWriter::new(f))),
                            Err(e) => {
                                if !failed {
                                    tracing::warn!(%e, dir = %dir.display(), "cannot write qlog");
                                    failed = true;
                                }
                                None
                            }
                        },
                    };
                    if let Some(f) = file {
                        let _ = f.write_all(&bytes);
                    }
                }
                Msg::Close(name) => {
                    if let Some(mut f) = files.remove(&name) {
                        let _ = f.flush();
                    }
                }
                Msg::Sync(done) => {
                    flush_all(&mut files);
                    let _ = done.send(());
                }
            }
            match rx.try_recv() {
                Ok(next) => msg = next,
                Err(_) => break,
            }
        }
        flush_all(&mut files);
    }
    flush_all(&mut files);
}

fn flush_all(files: &mut HashMap<String, BufWriter<File>>) {
    for f in files.values_mut() {
        let _ = f.flush();
    }
}

/// The qlog directory for an endpoint: the configured one, else `QLOGDIR`.
pub(crate) fn dir(configured: Option<PathBuf>) -> Option<PathBuf> {
    configured.or_else(|| {
        std::env::var_os(QLOGDIR_ENV)
            .filter(|d| !d.is_empty())
            .map(PathBuf::from)
    })
}
