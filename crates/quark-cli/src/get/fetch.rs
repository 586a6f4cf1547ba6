//! One file of `quark get`: a request over hq-interop or HTTP/3, its body
//! written to a file, standard output or memory, with a progress bar.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use quark::Connection;

pub(super) enum Fetched {
    File(u64),
    Memory(Vec<u8>),
}

/// Where a body goes.
pub(super) enum Sink {
    /// A file, and whether a failed fetch removes it.
    File(PathBuf, bool),
    Stdout,
    Memory,
}

/// The protocol requests go over.
#[derive(Clone)]
pub(super) enum Via {
    Hq(Connection),
    /// The client, the authority (`host:port`) of the URLs, `-i`, `-H`, ...
    /// and `--priority`.
    H3(
        quark_h3::Client,
        Arc<str>,
        Option<Arc<crate::get_http::RequestOptions>>,
        Option<quark_h3::Priority>,
    ),
}

impl Via {
    async fn fetch(
        &self,
        path: &str,
        out: &mut (impl tokio::io::AsyncWrite + Unpin),
        progress: impl FnMut(usize),
    ) -> Result<u64, String> {
        match self {
            Via::Hq(conn) => quark::hq::fetch(conn, path, out, progress)
                .await
                .map_err(|e| e.describe()),
            Via::H3(client, authority, Some(opts), _) => {
                crate::get_http::fetch(client, authority, path, opts, out, progress)
                    .await
                    .map_err(|e| e.to_string())
            }
            Via::H3(client, authority, None, priority) => quark_h3::files::fetch_prioritized(
                client, authority, path, *priority, out, progress,
            )
            .await
            .map_err(|e| e.to_string()),
        }
    }
}

pub(super) async fn fetch_one(
    via: Via,
    path: String,
    dest: Sink,
    bar: ProgressBar,
) -> Result<Fetched, String> {
    let progress = |n: usize| bar.inc(n as u64);
    let result = match &dest {
        Sink::File(dest, _) => {
            let mut file = tokio::fs::File::create(dest)
                .await
                .map_err(|e| format!("{}: {e}", dest.display()))?;
            via.fetch(&path, &mut file, progress)
                .await
                .map(Fetched::File)
        }
        Sink::Stdout => via
            .fetch(&path, &mut tokio::io::stdout(), progress)
            .await
            .map(Fetched::File),
        Sink::Memory => {
            let mut body = Vec::new();
            via.fetch(&path, &mut body, progress)
                .await
                .map(|_| Fetched::Memory(body))
        }
    };
    if result.is_err() {
        if let Sink::File(dest, true) = &dest {
            let _ = std::fs::remove_file(dest);
        }
    }
    bar.set_message(format!("{} done", short(&path)));
    result
}

fn short(path: &str) -> &str {
    Path::new(path)
        .file_name()
        .and_then(|f| f.to_str())
        .unwrap_or(path)
}

pub(super) fn progress_bar(quiet: bool, files: usize) -> ProgressBar {
    if quiet || !std::io::IsTerminal::is_terminal(&std::io::stderr()) {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {bytes} {binary_bytes_per_sec} {msg}")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(format!("{files} files"));
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}
