//! Content types by file extension (RFC 9110 §8.3): a small built-in table
//! of what web pages load; anything else is application/octet-stream.

use std::path::Path;

/// Extension (lowercase) and media type.
const TYPES: &[(&str, &str)] = &[
    ("html", "text/html; charset=utf-8"),
    ("htm", "text/html; charset=utf-8"),
    ("css", "text/css; charset=utf-8"),
    ("js", "text/javascript; charset=utf-8"),
    ("mjs", "text/javascript; charset=utf-8"),
    ("json", "application/json"),
    ("map", "application/json"),
    ("txt", "text/plain; charset=utf-8"),
    ("xml", "application/xml"),
    ("svg", "image/svg+xml"),
    ("png", "image/png"),
    ("jpg", "image/jpeg"),
    ("jpeg", "image/jpeg"),
    ("gif", "image/gif"),
    ("webp", "image/webp"),
    ("avif", "image/avif"),
    ("ico", "image/x-icon"),
    ("wasm", "application/wasm"),
    ("pdf", "application/pdf"),
    ("mp4", "video/mp4"),
    ("webm", "video/webm"),
    ("mp3", "audio/mpeg"),
    ("woff", "font/woff"),
    ("woff2", "font/woff2"),
    ("ttf", "font/ttf"),
];

/// The media type of the file at `path`, by its extension.
pub(crate) fn content_type(path: &Path) -> &'static str {
    let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
    TYPES
        .iter()
        .find(|(e, _)| e.eq_ignore_ascii_case(ext))
        .map_or("application/octet-stream", |(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn by_extension() {
        assert_eq!(
            content_type(Path::new("a/INDEX.HTML")),
            "text/html; charset=utf-8"
        );
        assert_eq!(content_type(Path::new("x.woff2")), "font/woff2");
        assert_eq!(
            content_type(Path::new("x.tar.gz")),
            "application/octet-stream"
        );
        assert_eq!(content_type(Path::new("noext")), "application/octet-stream");
    }
}
