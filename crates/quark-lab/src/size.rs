//! Byte sizes as people write them: `2KB` (decimal, like the thesis), `512KiB`
//! (binary, like the cloud study), `1` (bytes).

use crate::wire::MAX_LEN;

/// A size that could not be parsed, with the reason.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid size '{input}': {reason}")]
pub struct SizeError {
    input: String,
    reason: &'static str,
}

const UNITS: &[(&str, u64)] = &[
    ("", 1),
    ("b", 1),
    ("kb", 1000),
    ("mb", 1_000_000),
    ("gb", 1_000_000_000),
    ("tb", 1_000_000_000_000),
    ("k", 1000),
    ("m", 1_000_000),
    ("g", 1_000_000_000),
    ("kib", 1 << 10),
    ("mib", 1 << 20),
    ("gib", 1 << 30),
    ("tib", 1 << 40),
];

/// Parses one size: digits then an optional unit (`B`, `KB`, `MB`, `GB`, `TB` are
/// powers of 1000; `KiB`, `MiB`, `GiB`, `TiB` powers of 1024; case-insensitive).
/// Zero, negative numbers, fractions, unknown units and sizes above 1 TiB are refused.
pub fn parse_size(input: &str) -> Result<u64, SizeError> {
    let err = |reason| SizeError {
        input: input.to_string(),
        reason,
    };
    let s = input.trim();
    if s.starts_with('-') {
        return Err(err("sizes must be positive"));
    }
    let digits = s.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return Err(err(
            "expected a number of bytes such as 2KB, 512KiB or 1000",
        ));
    }
    let (num, unit) = s.split_at(digits);
    let unit = unit.trim().to_ascii_lowercase();
    let Some(&(_, mult)) = UNITS.iter().find(|(u, _)| *u == unit) else {
        return Err(err("unknown unit (use B, KB, MB, GB, KiB, MiB or GiB)"));
    };
    let n: u64 = num.parse().map_err(|_| err("number too large"))?;
    let bytes = n.checked_mul(mult).ok_or_else(|| err("number too large"))?;
    if bytes == 0 {
        return Err(err("sizes must be at least 1 byte"));
    }
    if bytes > MAX_LEN {
        return Err(err("sizes above 1 TiB are not supported"));
    }
    Ok(bytes)
}

/// Parses a comma-separated list of sizes (at least one).
pub fn parse_size_list(input: &str) -> Result<Vec<u64>, SizeError> {
    input.split(',').map(parse_size).collect()
}

/// Formats a size in the shortest exact form: `2KB`, `512KiB`, `1B`, `1234B`.
pub fn format_size(bytes: u64) -> String {
    const DEC: &[(&str, u64)] = &[
        ("TB", 1_000_000_000_000),
        ("GB", 1_000_000_000),
        ("MB", 1_000_000),
        ("KB", 1000),
    ];
    const BIN: &[(&str, u64)] = &[
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ];
    for table in [DEC, BIN] {
        for &(unit, mult) in table {
            if bytes >= mult && bytes % mult == 0 {
                return format!("{}{unit}", bytes / mult);
            }
        }
    }
    format!("{bytes}B")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_paper_sizes() {
        let thesis = parse_size_list("2KB,20KB,200KB,2MB,20MB,200MB,2GB").unwrap();
        assert_eq!(
            thesis,
            [
                2000,
                20_000,
                200_000,
                2_000_000,
                20_000_000,
                200_000_000,
                2_000_000_000
            ]
        );
        let cloud = parse_size_list("2KiB,8KiB,32KiB,128KiB,512KiB").unwrap();
        assert_eq!(cloud, [2048, 8192, 32768, 131072, 524288]);
        assert_eq!(parse_size("1").unwrap(), 1);
        assert_eq!(parse_size("7b").unwrap(), 7);
        assert_eq!(parse_size("1 mib").unwrap(), 1 << 20);
    }

    #[test]
    fn refuses_impossible_sizes() {
        for bad in [
            "0",
            "-5",
            "3XB",
            "",
            "KB",
            "1.5MB",
            "0KB",
            "2TiB",
            "99999999999999999999999",
            "5 KB x",
        ] {
            assert!(parse_size(bad).is_err(), "{bad}");
        }
        assert!(parse_size_list("2KB,").is_err());
        let e = parse_size("3XB").unwrap_err().to_string();
        assert!(e.contains("3XB") && e.contains("unit"), "{e}");
    }

    #[test]
    fn formats_round_trip() {
        for n in [
            1,
            2000,
            2048,
            524288,
            200_000_000,
            1234,
            2_000_000_000,
            1 << 30,
        ] {
            assert_eq!(parse_size(&format_size(n)).unwrap(), n);
        }
        assert_eq!(format_size(2000), "2KB");
        assert_eq!(format_size(131072), "128KiB");
        assert_eq!(format_size(1), "1B");
    }
}
