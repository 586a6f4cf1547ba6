//! The little JSON the qlog records need, written by hand: no allocation
//! beyond the record buffer, and strings from the peer escaped.

use std::fmt::{self, Write};

/// Bytes as lowercase hex, for `Display`.
pub(super) struct Hex<'a>(&'a [u8]);

pub(super) fn hex(bytes: &[u8]) -> Hex<'_> {
    Hex(bytes)
}

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for b in self.0 {
            write!(f, "{b:02x}")?;
        }
        Ok(())
    }
}

/// Append `s` as a quoted JSON string (RFC 8259 §7): quotes, backslashes and
/// control characters escaped.
pub(super) fn string(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_what_json_requires() {
        let mut out = String::new();
        string(&mut out, "a\"b\\c\n\u{1}\u{1e}é");
        assert_eq!(out, "\"a\\\"b\\\\c\\n\\u0001\\u001eé\"");
        assert_eq!(hex(&[0, 0xab, 0x10]).to_string(), "00ab10");
    }
}
