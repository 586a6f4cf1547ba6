//! hq-interop requests: `GET /path\r\n` on a bidirectional stream, and the
//! mapping of a request path to a file under the served directory.

use std::fmt;
use std::path::{Component, Path, PathBuf};

/// Most bytes a client may send on one request stream.
pub const MAX_REQUEST: usize = 8 * 1024;

/// Why a request was refused.
#[derive(Debug, PartialEq, Eq)]
pub enum RequestError {
    /// Not `GET /path`, or not UTF-8.
    Malformed,
    /// The path tries to leave the served directory, or is not a plain path.
    Refused,
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Malformed => f.write_str("malformed request"),
            Self::Refused => f.write_str("path refused"),
        }
    }
}

impl std::error::Error for RequestError {}

/// The request line for `path`.
pub fn request_line(path: &str) -> String {
    format!("GET {path}\r\n")
}

/// Parses a request into the path relative to the served root.
///
/// Every segment must be a plain name: `..`, `.`, empty segments (which
/// include a leading `//`), backslashes and NULs are refused, so the result
/// can never name a file outside the root by itself. (Symlinks inside the
/// root are checked by [`resolve`].)
pub fn parse(request: &[u8]) -> Result<PathBuf, RequestError> {
    let line = std::str::from_utf8(request).map_err(|_| RequestError::Malformed)?;
    let line = line.strip_suffix('\n').unwrap_or(line);
    let line = line.strip_suffix('\r').unwrap_or(line);
    let path = line.strip_prefix("GET /").ok_or(RequestError::Malformed)?;
    let mut rel = PathBuf::new();
    for segment in path.split('/') {
        if segment.is_empty()
            || segment == "."
            || segment == ".."
            || segment.contains(['\\', '\0', ' ', '\r', '\n'])
        {
            return Err(RequestError::Refused);
        }
        rel.push(segment);
    }
    // Belt and braces: the pushed segments must all be normal components.
    if !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(RequestError::Refused);
    }
    Ok(rel)
}

/// Joins `rel` to `root` (already canonical) and checks that the real path,
/// after following symlinks, is a regular file still under `root`.
pub fn resolve(root: &Path, rel: &Path) -> std::io::Result<PathBuf> {
    let full = root.join(rel).canonicalize()?;
    if !full.starts_with(root) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            "path leaves the served directory",
        ));
    }
    if !full.metadata()?.is_file() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "not a regular file",
        ));
    }
    Ok(full)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_paths() {
        assert_eq!(parse(b"GET /a.bin\r\n").unwrap(), PathBuf::from("a.bin"));
        assert_eq!(parse(b"GET /d/e/f\n").unwrap(), PathBuf::from("d/e/f"));
        assert_eq!(parse(b"GET /x").unwrap(), PathBuf::from("x"));
        assert_eq!(
            parse(request_line("/q").as_bytes()).unwrap(),
            PathBuf::from("q")
        );
    }

    #[test]
    fn refuses_traversal_and_oddities() {
        for bad in [
            &b"GET /../etc/passwd\r\n"[..],
            b"GET /a/../../b\r\n",
            b"GET /./a\r\n",
            b"GET //etc/passwd\r\n",
            b"GET /\r\n",
            b"GET /a/\r\n",
            b"GET /a\\..\\b\r\n",
            b"GET /a\0b\r\n",
            b"GET /a b\r\n",
        ] {
            assert_eq!(
                parse(bad),
                Err(RequestError::Refused),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn rejects_malformed() {
        assert_eq!(parse(b"POST /a\r\n"), Err(RequestError::Malformed));
        assert_eq!(parse(b"GET a\r\n"), Err(RequestError::Malformed));
        assert_eq!(parse(b""), Err(RequestError::Malformed));
        assert_eq!(
            parse(&[b'G', b'E', b'T', b' ', b'/', 0xff]),
            Err(RequestError::Malformed)
        );
    }

    #[test]
    fn resolve_stays_under_root() {
        let base = std::env::temp_dir().join(format!("quinn-hq-resolve-{}", std::process::id()));
        let root = base.join("root");
        std::fs::create_dir_all(root.join("sub")).unwrap();
        std::fs::write(root.join("ok.txt"), b"ok").unwrap();
        std::fs::write(base.join("secret.txt"), b"secret").unwrap();
        let root = root.canonicalize().unwrap();
        assert!(resolve(&root, Path::new("ok.txt")).is_ok());
        assert!(resolve(&root, Path::new("missing")).is_err());
        assert!(
            resolve(&root, Path::new("sub")).is_err(),
            "directories are not served"
        );
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(base.join("secret.txt"), root.join("link")).unwrap();
            assert!(
                resolve(&root, Path::new("link")).is_err(),
                "symlink out of the root"
            );
        }
        std::fs::remove_dir_all(&base).unwrap();
    }
}
