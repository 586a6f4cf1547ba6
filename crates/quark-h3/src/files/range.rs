//! Range requests (RFC 9110 §14.1.2, §14.2, §14.6). One byte range is
//! served as a 206 with Content-Range; several as a 206 of
//! multipart/byteranges, sorted, with overlapping or nearly adjacent ranges
//! merged first (§14.2 allows it): a request for many overlapping ranges
//! then costs no more than the file. A Range that does not parse, or names
//! more than [`MAX_RANGES`], is ignored (§14.2: a server MAY ignore Range),
//! and the whole file goes as a 200. One whose every range starts past the
//! end is unsatisfiable (416); ranges past the end beside others are
//! dropped.

/// Most range specs a Range header may name before it is ignored.
pub(crate) const MAX_RANGES: usize = 32;

/// Ranges closer than this are sent as one: a part's own header costs
/// about as much as the bytes between them.
const GAP: u64 = 80;

/// What a Range header asks of a representation of `len` bytes.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Ranged {
    /// The whole file (no usable range).
    Whole,
    /// Bytes `start..=end` of each, within the file: at least one, sorted,
    /// apart by more than [`GAP`].
    Parts(Vec<(u64, u64)>),
    /// No byte of any range is in the file (416).
    Unsatisfiable,
}

/// One range spec against a file of `len` bytes.
enum Spec {
    Invalid,
    PastTheEnd,
    Bytes(u64, u64),
}

fn number(s: &str) -> Option<u64> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn spec(spec: &str, len: u64) -> Spec {
    let Some((first, last)) = spec.split_once('-') else {
        return Spec::Invalid;
    };
    let (first, last) = (first.trim(), last.trim());
    if first.is_empty() {
        // A suffix: the last n bytes (§14.1.2).
        return match number(last) {
            None => Spec::Invalid,
            Some(0) => Spec::PastTheEnd,
            Some(_) if len == 0 => Spec::PastTheEnd,
            Some(n) => Spec::Bytes(len.saturating_sub(n), len - 1),
        };
    }
    let Some(start) = number(first) else {
        return Spec::Invalid;
    };
    let end = if last.is_empty() {
        u64::MAX
    } else {
        match number(last) {
            Some(end) if end >= start => end,
            _ => return Spec::Invalid, // last before first
        }
    };
    if start >= len {
        return Spec::PastTheEnd;
    }
    Spec::Bytes(start, end.min(len - 1))
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
    let mut parts = Vec::new();
    let mut specs = 0;
    // Empty list elements are allowed and ignored (RFC 9110 §5.6.1).
    for s in set.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        specs += 1;
        if specs > MAX_RANGES {
            return Ranged::Whole;
        }
        match spec(s, len) {
            Spec::Invalid => return Ranged::Whole,
            Spec::PastTheEnd => {}
            Spec::Bytes(start, end) => parts.push((start, end)),
        }
    }
    if specs == 0 {
        return Ranged::Whole;
    }
    if parts.is_empty() {
        return Ranged::Unsatisfiable;
    }
    parts.sort_unstable();
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(parts.len());
    for (start, end) in parts {
        match merged.last_mut() {
            Some(last) if start <= last.1.saturating_add(GAP) => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    Ranged::Parts(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(start: u64, end: u64) -> Ranged {
        Ranged::Parts(vec![(start, end)])
    }

    #[test]
    fn forms() {
        assert_eq!(parse(b"bytes=0-9", 100), part(0, 9));
        assert_eq!(parse(b"Bytes=90-200", 100), part(90, 99));
        assert_eq!(parse(b"bytes=10-", 100), part(10, 99));
        assert_eq!(parse(b"bytes=-10", 100), part(90, 99));
        assert_eq!(parse(b"bytes=-1000", 100), part(0, 99));
        assert_eq!(parse(b"bytes=100-", 100), Ranged::Unsatisfiable);
        assert_eq!(parse(b"bytes=-0", 100), Ranged::Unsatisfiable);
        assert_eq!(parse(b"bytes=0-", 0), Ranged::Unsatisfiable);
        assert_eq!(parse(b"bytes=9-1", 100), Ranged::Whole);
        assert_eq!(parse(b"items=0-1", 100), Ranged::Whole);
        assert_eq!(parse(b"bytes=x-1", 100), Ranged::Whole);
        assert_eq!(parse(b"bytes=", 100), Ranged::Whole);
        assert_eq!(parse(b"bytes=99999999999999999999999-", 100), Ranged::Whole);
    }

    #[test]
    fn several_ranges() {
        let big = 10_000;
        assert_eq!(
            parse(b"bytes=500-599, -100,0-9", big),
            Ranged::Parts(vec![(0, 9), (500, 599), (9_900, 9_999)]),
            "sorted"
        );
        // Overlapping, or nearer than a part's header: one part.
        assert_eq!(parse(b"bytes=0-99,50-199", big), part(0, 199));
        assert_eq!(parse(b"bytes=0-99,150-199", big), part(0, 199));
        assert_eq!(parse(b"bytes=0-99,100-", big), part(0, 9_999));
        // Past the end beside a range in the file: dropped.
        assert_eq!(parse(b"bytes=0-9,20000-", big), part(0, 9));
        assert_eq!(parse(b"bytes=20000-,-0", big), Ranged::Unsatisfiable);
        // One bad spec spoils the header.
        assert_eq!(parse(b"bytes=0-9,x", big), Ranged::Whole);
        // Empty list elements are skipped.
        assert_eq!(parse(b"bytes=,0-9,,", big), part(0, 9));
    }

    #[test]
    fn many_ranges_are_ignored_and_overlaps_cost_nothing() {
        let spaced: Vec<String> = (0..MAX_RANGES as u64)
            .map(|i| format!("{}-{}", i * 1_000, i * 1_000 + 9))
            .collect();
        let Ranged::Parts(p) = parse(format!("bytes={}", spaced.join(",")).as_bytes(), 1 << 20)
        else {
            panic!("{MAX_RANGES} ranges are served");
        };
        assert_eq!(p.len(), MAX_RANGES);
        let one_more = format!("bytes={},0-1", spaced.join(","));
        assert_eq!(parse(one_more.as_bytes(), 1 << 20), Ranged::Whole);
        // The same range many times over: the file once.
        let same = format!("bytes={}", vec!["0-"; MAX_RANGES].join(","));
        assert_eq!(parse(same.as_bytes(), 1 << 20), part(0, (1 << 20) - 1));
    }
}
