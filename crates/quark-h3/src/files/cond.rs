//! Validators and conditional requests (RFC 9110 §8.8, §13): a strong ETag
//! from the file's size and modification time, Last-Modified, and the
//! preconditions evaluated in §13.2.2's order.

use std::time::{SystemTime, UNIX_EPOCH};

use http::HeaderMap;
use http::header::{IF_MATCH, IF_MODIFIED_SINCE, IF_NONE_MATCH, IF_RANGE, IF_UNMODIFIED_SINCE};

/// A file's validators.
pub(crate) struct Validators {
    /// The strong entity tag, quotes included.
    pub(crate) etag: String,
    /// Last-Modified in whole seconds since the epoch (HTTP dates have no finer grain).
    modified: u64,
}

/// What the preconditions decide.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Go on with the request.
    Proceed,
    /// 304 Not Modified (GET and HEAD only).
    NotModified,
    /// 412 Precondition Failed.
    Failed,
}

impl Validators {
    pub(crate) fn new(len: u64, modified: SystemTime) -> Validators {
        let since = modified.duration_since(UNIX_EPOCH).unwrap_or_default();
        Validators {
            etag: format!(
                "\"{len:x}-{:x}.{:x}\"",
                since.as_secs(),
                since.subsec_nanos()
            ),
            modified: since.as_secs(),
        }
    }

    /// Last-Modified as an IMF-fixdate.
    pub(crate) fn last_modified(&self) -> String {
        httpdate::fmt_http_date(UNIX_EPOCH + std::time::Duration::from_secs(self.modified))
    }

    /// The preconditions of a GET or HEAD (§13.2.2, steps 1–4).
    pub(crate) fn check(&self, headers: &HeaderMap) -> Verdict {
        if headers.contains_key(IF_MATCH) {
            // Strong comparison; `*` matches as the file exists.
            if !tags(headers, IF_MATCH).any(|t| t.any || (!t.weak && t.opaque == self.etag)) {
                return Verdict::Failed;
            }
        } else if let Some(date) = date(headers, IF_UNMODIFIED_SINCE) {
            if self.modified > date {
                return Verdict::Failed;
            }
        }
        if headers.contains_key(IF_NONE_MATCH) {
            // Weak comparison (§13.1.2).
            if tags(headers, IF_NONE_MATCH).any(|t| t.any || t.opaque == self.etag) {
                return Verdict::NotModified;
            }
        } else if let Some(date) = date(headers, IF_MODIFIED_SINCE) {
            if self.modified <= date {
                return Verdict::NotModified;
            }
        }
        Verdict::Proceed
    }

    /// Whether a Range applies under If-Range (§13.1.5): absent, or naming
    /// this file by a strong ETag or by exactly its Last-Modified date.
    pub(crate) fn range_applies(&self, headers: &HeaderMap) -> bool {
        let Some(value) = headers.get(IF_RANGE) else {
            return true;
        };
        let Ok(value) = value.to_str() else {
            return false;
        };
        let value = value.trim();
        if value.starts_with('"') || value.starts_with("W/") {
            return value == self.etag;
        }
        httpdate::parse_http_date(value)
            .ok()
            .and_then(|d| d.duration_since(UNIX_EPOCH).ok())
            .is_some_and(|d| d.as_secs() == self.modified)
    }
}

/// One member of an If-Match / If-None-Match list.
struct Tag<'a> {
    any: bool,
    weak: bool,
    /// The tag with its quotes.
    opaque: &'a str,
}

/// The entity tags of every `name` field line; parsing stops at the first
/// member that is not one (the field is then taken as what came before).
fn tags(headers: &HeaderMap, name: http::header::HeaderName) -> impl Iterator<Item = Tag<'_>> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|mut rest| {
            std::iter::from_fn(move || {
                rest = rest.trim_start_matches([' ', '\t', ',']);
                if let Some(after) = rest.strip_prefix('*') {
                    rest = after;
                    return Some(Tag {
                        any: true,
                        weak: false,
                        opaque: "",
                    });
                }
                let weak = rest.starts_with("W/");
                let body = if weak { &rest[2..] } else { rest };
                let close = body.strip_prefix('"')?.find('"')? + 2;
                rest = &body[close..];
                Some(Tag {
                    any: false,
                    weak,
                    opaque: &body[..close],
                })
            })
        })
}

/// A date field in seconds since the epoch; an invalid date is ignored (§13.1.3).
fn date(headers: &HeaderMap, name: http::header::HeaderName) -> Option<u64> {
    let value = headers.get(name)?.to_str().ok()?;
    let when = httpdate::parse_http_date(value.trim()).ok()?;
    Some(when.duration_since(UNIX_EPOCH).ok()?.as_secs())
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn with(pairs: &[(http::header::HeaderName, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (n, v) in pairs {
            h.append(n.clone(), HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn preconditions_in_order() {
        let v = Validators::new(10, UNIX_EPOCH + std::time::Duration::from_secs(1_000_000));
        let etag = v.etag.clone();
        let lm = v.last_modified();
        let early = httpdate::fmt_http_date(UNIX_EPOCH);
        assert_eq!(v.check(&HeaderMap::new()), Verdict::Proceed);
        let list = format!("\"x\", W/{etag}");
        assert_eq!(
            v.check(&with(&[(IF_NONE_MATCH, &list)])),
            Verdict::NotModified
        );
        assert_eq!(
            v.check(&with(&[(IF_NONE_MATCH, "\"x\"")])),
            Verdict::Proceed
        );
        assert_eq!(
            v.check(&with(&[(IF_MODIFIED_SINCE, &lm)])),
            Verdict::NotModified
        );
        assert_eq!(
            v.check(&with(&[(IF_MODIFIED_SINCE, &early)])),
            Verdict::Proceed
        );
        // If-None-Match wins over If-Modified-Since.
        let both = [(IF_NONE_MATCH, "\"x\""), (IF_MODIFIED_SINCE, lm.as_str())];
        assert_eq!(v.check(&with(&both)), Verdict::Proceed);
        // If-Match is strong: a weak tag does not match.
        assert_eq!(
            v.check(&with(&[(IF_MATCH, &format!("W/{etag}"))])),
            Verdict::Failed
        );
        assert_eq!(v.check(&with(&[(IF_MATCH, &etag)])), Verdict::Proceed);
        assert_eq!(v.check(&with(&[(IF_MATCH, "*")])), Verdict::Proceed);
        assert_eq!(
            v.check(&with(&[(IF_UNMODIFIED_SINCE, &early)])),
            Verdict::Failed
        );
        assert_eq!(
            v.check(&with(&[(IF_UNMODIFIED_SINCE, "garbage")])),
            Verdict::Proceed
        );
        assert!(v.range_applies(&with(&[(IF_RANGE, &etag)])));
        assert!(v.range_applies(&with(&[(IF_RANGE, &lm)])));
        assert!(!v.range_applies(&with(&[(IF_RANGE, &format!("W/{etag}"))])));
        assert!(!v.range_applies(&with(&[(IF_RANGE, &early)])));
    }
}
