//! Range requests (RFC 9110 §14.1.2, §14.2): one byte range is served as a
//! 206; a request for several ranges gets the whole file as a 200 (§14.2: a
//! server MAY ignore Range), which spares us multipart/byteranges. A Range
//! that does not parse is ignored too; one that parses but starts past the
//! end is unsatisfiable (416).

/// What a Range header asks of a representation of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ranged {
    /// The whole file (no usable range).
    Whole,
    /// Bytes `start..=end`, within the file.
    Part { start: u64, end: u64 },
    /// No byte of the range is in the file (416).
    Unsatisfiable,
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

/// Parses a Range header's value against a file of `len` bytes.
pub(crate) fn parse(value: &[u8], len: u64) -> Ranged {
    let Ok(value) = std::str::from_utf8(value) else {
        return Ranged::Whole;
    };
    let value = value.trim();
    // The unit is case-insensitive (§14.1).
    let Some(set) = value
        .get(..6)
        .filter(|unit| unit.eq_ignore_ascii_case("bytes="))
        .map(|_| value[6..].trim())
    else {
        return Ranged::Whole;
    };
    if set.contains(',') {
        return Ranged::Whole; // several ranges: the whole file (see above)
    }
    let Some((first, last)) = set.split_once('-') else {
        return Ranged::Whole;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        // A suffix: the last n bytes (§14.1.2).
        return match number(last) {
            None => Ranged::Whole,
            Some(0) => Ranged::Unsatisfiable,
            Some(_) if len == 0 => Ranged::Unsatisfiable,
            Some(n) => Ranged::Part {
                start: len.saturating_sub(n),
                end: len - 1,
            },
        };
    }
    let Some(start) = number(first) else {
        return Ranged::Whole;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match number(last) {
            Some(end) if end >= start => end,
            _ => return Ranged::Whole, // invalid: last before first
        }
    };
    if start >= len {
        return Ranged::Unsatisfiable;
    }
    Ranged::Part {
        start,
        end: end.min(len - 1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forms() {
        let part = |start, end| Ranged::Part { start, end };
        assert_eq!(parse(b"bytes=0-9", 100), part(0, 9));
        assert_eq!(parse(b"Bytes=90-200", 100), part(90, 99));
        assert_eq!(parse(b"bytes=10-", 100), part(10, 99));
        assert_eq!(parse(b"bytes=-10", 100), part(90, 99));
        assert_eq!(parse(b"bytes=-1000", 100), part(0, 99));
        assert_eq!(parse(b"bytes=100-", 100), Ranged::Unsatisfiable);
        assert_eq!(parse(b"bytes=-0", 100), Ranged::Unsatisfiable);
        assert_eq!(parse(b"bytes=0-", 0), Ranged::Unsatisfiable);
        assert_eq!(parse(b"bytes=0-1,5-6", 100), Ranged::Whole);
        assert_eq!(parse(b"bytes=9-1", 100), Ranged::Whole);
        assert_eq!(parse(b"items=0-1", 100), Ranged::Whole);
        assert_eq!(parse(b"bytes=x-1", 100), Ranged::Whole);
        assert_eq!(parse(b"bytes=99999999999999999999999-", 100), Ranged::Whole);
    }
}
