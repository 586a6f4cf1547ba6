//! A directory without index.html as an HTML page of links, when the server
//! is asked to list directories (`FileOptions::list_directories`, `quark
//! serve --list-dirs`): directories first, then files, each by name, with
//! size and modification time. Names starting with `.` are left out, as
//! they are by `ls`; more than [`MAX_ENTRIES`] are cut with a note. A page
//! is held in memory until sent: all pages of the process together are
//! bounded by [`MAX_PAGE_BYTES`], past which a listing is refused (503),
//! and at most four are built at once.

use std::fmt::Write as _;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::SystemTime;

use percent_encoding::{AsciiSet, CONTROLS, percent_encode};

/// Most entries a listing shows: a directory of a million files must not
/// cost a page of a hundred megabytes.
pub(crate) const MAX_ENTRIES: usize = 10_000;

/// Most bytes of listing pages held at once, by all connections: many
/// clients asking for a large directory on every stream must not hold a
/// page each without bound.
pub(crate) const MAX_PAGE_BYTES: usize = 32 << 20;

/// Bytes of listing pages held now.
static PAGE_BYTES: AtomicUsize = AtomicUsize::new(0);

/// A page's share of [`MAX_PAGE_BYTES`], given back when dropped (with the
/// body that sends the page).
pub(crate) struct Charge(usize);

impl Charge {
    /// Takes `len` bytes of the bound, if they are free.
    pub(crate) fn take(len: usize) -> Option<Charge> {
        PAGE_BYTES
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(len).filter(|&n| n <= MAX_PAGE_BYTES)
            })
            .ok()
            .map(|_| Charge(len))
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        PAGE_BYTES.fetch_sub(self.0, Ordering::AcqRel);
    }
}

/// What a path segment must encode in a link (RFC 3986 §3.3: a segment's
/// characters, less the ones HTML or a URL's structure would read).
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'&')
    .add(b'\'')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'\\')
    .add(b'`')
    .add(b'{')
    .add(b'}');

struct Entry {
    name: Vec<u8>,
    dir: bool,
    len: u64,
    modified: Option<SystemTime>,
}

/// The listing page of `dir`, which `shown` (the request's path, as sent)
/// names.
pub(crate) async fn page(dir: &Path, shown: &str) -> io::Result<String> {
    // A few at a time: each reads a directory and builds its page before
    // its size, and so its charge, is known.
    static BUILDING: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(4);
    let _turn = BUILDING.acquire().await.map_err(io::Error::other)?;
    let dir = dir.to_path_buf();
    let (entries, cut) = tokio::task::spawn_blocking(move || read(&dir))
        .await
        .unwrap_or_else(|e| Err(io::Error::other(e)))?;
    Ok(render(&entries, cut, shown))
}

/// The directory's entries, sorted, and whether some were left out.
fn read(dir: &Path) -> io::Result<(Vec<Entry>, bool)> {
    let mut entries = Vec::new();
    let mut cut = false;
    for e in std::fs::read_dir(dir)? {
        let Ok(e) = e else { continue };
        let name = e.file_name().as_bytes().to_vec();
        if name.starts_with(b".") {
            continue;
        }
        if entries.len() == MAX_ENTRIES {
            cut = true;
            break;
        }
        // Followed through links, as serving them does.
        let meta = std::fs::metadata(e.path()).ok();
        entries.push(Entry {
            name,
            dir: meta.as_ref().is_some_and(|m| m.is_dir()),
            len: meta.as_ref().map_or(0, |m| m.len()),
            modified: meta.and_then(|m| m.modified().ok()),
        });
    }
    entries.sort_by(|a, b| b.dir.cmp(&a.dir).then_with(|| a.name.cmp(&b.name)));
    Ok((entries, cut))
}

/// Text made safe inside HTML elements and quoted attributes.
fn escape(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

fn render(entries: &[Entry], cut: bool, shown: &str) -> String {
    let shown = percent_encoding::percent_decode_str(shown).decode_utf8_lossy();
    let mut out = String::from("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
    escape(&mut out, &shown);
    out.push_str("</title></head><body><h1>");
    escape(&mut out, &shown);
    out.push_str("</h1>\n<table>\n");
    if shown != "/" {
        out.push_str("<tr><td><a href=\"../\">../</a></td><td></td><td></td></tr>\n");
    }
    for e in entries {
        let slash = if e.dir { "/" } else { "" };
        let _ = write!(
            out,
            "<tr><td><a href=\"./{}{slash}\">",
            percent_encode(&e.name, SEGMENT)
        );
        escape(&mut out, &String::from_utf8_lossy(&e.name));
        out.push_str(slash);
        out.push_str("</a></td><td>");
        if !e.dir {
            let _ = write!(out, "{}", e.len);
        }
        out.push_str("</td><td>");
        if let Some(t) = e.modified {
            out.push_str(&httpdate::fmt_http_date(t));
        }
        out.push_str("</td></tr>\n");
    }
    out.push_str("</table>\n");
    if cut {
        let _ = writeln!(
            out,
            "<p>Only the first {MAX_ENTRIES} entries are shown.</p>"
        );
    }
    out.push_str("</body></html>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(name: &[u8], dir: bool) -> Entry {
        Entry {
            name: name.to_vec(),
            dir,
            len: 42,
            modified: None,
        }
    }

    #[test]
    fn names_are_escaped_and_links_encoded() {
        let page = render(
            &[
                entry(b"sub dir", true),
                entry(b"<b>&\"x\".txt", false),
                entry(b"caf\xc3\xa9", false),
                entry(b"a?b#c%d", false),
            ],
            false,
            "/x%20y/",
        );
        assert!(page.contains("<title>/x y/</title>"), "{page}");
        assert!(
            page.contains("<a href=\"./sub%20dir/\">sub dir/</a>"),
            "{page}"
        );
        assert!(
            page.contains(
                "<a href=\"./%3Cb%3E%26%22x%22.txt\">&lt;b&gt;&amp;&quot;x&quot;.txt</a>"
            ),
            "{page}"
        );
        assert!(page.contains("<a href=\"./caf%C3%A9\">café</a>"), "{page}");
        assert!(page.contains("<a href=\"./a%3Fb%23c%25d\">"), "{page}");
        assert!(page.contains("href=\"../\""), "a link up");
        assert!(!page.contains("<b>"), "no markup from a name");
    }

    #[test]
    fn pages_held_at_once_are_bounded() {
        let a = Charge::take(MAX_PAGE_BYTES / 2).expect("room");
        let b = Charge::take(MAX_PAGE_BYTES / 2).expect("room");
        assert!(Charge::take(1).is_none(), "full");
        drop(a);
        let c = Charge::take(MAX_PAGE_BYTES / 4).expect("given back");
        drop((b, c));
    }

    #[test]
    fn the_root_has_no_link_up_and_a_cut_says_so() {
        let page = render(&[entry(b"f", false)], true, "/");
        assert!(!page.contains("href=\"../\""));
        assert!(page.contains(&format!("first {MAX_ENTRIES} entries")));
    }
}
