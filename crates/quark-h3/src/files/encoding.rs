//! Precompressed files (`FileOptions::precompressed`, `quark serve
//! --precompressed`): a client that accepts brotli or gzip (RFC 9110
//! §12.5.3) gets `name.br` or `name.gz` beside `name`, when there is one,
//! with Content-Encoding. The files are compressed ahead (the server
//! compresses nothing), as static sites ship them.

use std::path::{Path, PathBuf};

use http::HeaderMap;
use http::header::ACCEPT_ENCODING;

/// The encodings served, most preferred first: (Content-Encoding, file
/// extension).
const ENCODINGS: [(&str, &str); 2] = [("br", "br"), ("gzip", "gz")];

/// Whether `headers`' Accept-Encoding takes `coding`: named, or matched by
/// `*`, with a weight above 0 (RFC 9110 §12.5.3; a name beats `*`). Without
/// the header, no: §12.5.3 would allow any coding, but a client that names
/// none rarely decodes one (nginx's gzip_static asks for the header too).
fn accepts(headers: &HeaderMap, coding: &str) -> bool {
    let mut star = None;
    for value in headers.get_all(ACCEPT_ENCODING) {
        let Ok(value) = value.to_str() else { continue };
        for item in value.split(',') {
            let mut parts = item.split(';');
            let name = parts.next().unwrap_or_default().trim();
            let weight = parts
                .filter_map(|p| p.trim().strip_prefix("q=").or(p.trim().strip_prefix("Q=")))
                .find_map(|q| q.trim().parse::<f32>().ok())
                .unwrap_or(1.0);
            if name.eq_ignore_ascii_case(coding) {
                return weight > 0.0;
            }
            if name == "*" {
                star = Some(weight > 0.0);
            }
        }
    }
    star.unwrap_or(false)
}

/// The precompressed siblings of `path` the request accepts, most preferred
/// first: (Content-Encoding, file).
pub(crate) fn candidates(headers: &HeaderMap, path: &Path) -> Vec<(&'static str, PathBuf)> {
    ENCODINGS
        .iter()
        .filter(|(coding, _)| accepts(headers, coding))
        .map(|(coding, ext)| {
            let mut name = path.as_os_str().to_owned();
            name.push(".");
            name.push(ext);
            (*coding, PathBuf::from(name))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn headers(accept: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(ACCEPT_ENCODING, HeaderValue::from_str(accept).unwrap());
        h
    }

    #[test]
    fn accept_encoding() {
        let h = headers("gzip, deflate, br, zstd");
        assert!(accepts(&h, "gzip") && accepts(&h, "br"));
        let h = headers("gzip;q=0, br;q=0.5");
        assert!(!accepts(&h, "gzip") && accepts(&h, "br"));
        let h = headers("*;q=0.1, gzip;q=0");
        assert!(!accepts(&h, "gzip") && accepts(&h, "br"), "a name beats *");
        let h = headers("identity");
        assert!(!accepts(&h, "gzip"));
        assert!(
            !accepts(&HeaderMap::new(), "gzip"),
            "no header: no encoding"
        );
        let h = headers("GZIP ; Q=1");
        assert!(accepts(&h, "gzip"));
    }

    #[test]
    fn siblings_in_preference_order() {
        let got = candidates(&headers("gzip, br"), Path::new("/srv/app.js"));
        assert_eq!(
            got,
            [
                ("br", PathBuf::from("/srv/app.js.br")),
                ("gzip", PathBuf::from("/srv/app.js.gz"))
            ]
        );
        assert!(candidates(&headers("deflate"), Path::new("/srv/a")).is_empty());
    }
}
