//! The QPACK static table.
//!
//= https://www.rfc-editor.org/rfc/rfc9204#appendix-A
//# | Index | Name                             | Value                 |

/// Number of entries in the static table (indices `0..=98`).
pub const STATIC_TABLE_LEN: usize = 99;

/// RFC 9204 Appendix A, transcribed in order. Unlike HPACK's table (RFC 7541
/// Appendix A) this one is indexed from 0 and has different entries, so the two
/// must never be mixed up.
#[rustfmt::skip]
static STATIC_TABLE: [(&[u8], &[u8]); STATIC_TABLE_LEN] = [
    (b":authority", b""),                                   // 0
    (b":path", b"/"),                                       // 1
    (b"age", b"0"),                                         // 2
    (b"content-disposition", b""),                          // 3
    (b"content-length", b"0"),                              // 4
    (b"cookie", b""),                                       // 5
    (b"date", b""),                                         // 6
    (b"etag", b""),                                         // 7
    (b"if-modified-since", b""),                            // 8
    (b"if-none-match", b""),                                // 9
    (b"last-modified", b""),                                // 10
    (b"link", b""),                                         // 11
    (b"location", b""),                                     // 12
    (b"referer", b""),                                      // 13
    (b"set-cookie", b""),                                   // 14
    (b":method", b"CONNECT"),                               // 15
    (b":method", b"DELETE"),                                // 16
    (b":method", b"GET"),                                   // 17
    (b":method", b"HEAD"),                                  // 18
    (b":method", b"OPTIONS"),                               // 19
    (b":method", b"POST"),                                  // 20
    (b":method", b"PUT"),                                   // 21
    (b":scheme", b"http"),                                  // 22
    (b":scheme", b"https"),                                 // 23
    (b":status", b"103"),                                   // 24
    (b":status", b"200"),                                   // 25
    (b":status", b"304"),                                   // 26
    (b":status", b"404"),                                   // 27
    (b":status", b"503"),                                   // 28
    (b"accept", b"*/*"),                                    // 29
    (b"accept", b"application/dns-message"),                // 30
    (b"accept-encoding", b"gzip, deflate, br"),             // 31
    (b"accept-ranges", b"bytes"),                           // 32
    (b"access-control-allow-headers", b"cache-control"),    // 33
    (b"access-control-allow-headers", b"content-type"),     // 34
    (b"access-control-allow-origin", b"*"),                 // 35
    (b"cache-control", b"max-age=0"),                       // 36
    (b"cache-control", b"max-age=2592000"),                 // 37
    (b"cache-control", b"max-age=604800"),                  // 38
    (b"cache-control", b"no-cache"),                        // 39
    (b"cache-control", b"no-store"),                        // 40
    (b"cache-control", b"public, max-age=31536000"),        // 41
    (b"content-encoding", b"br"),                           // 42
    (b"content-encoding", b"gzip"),                         // 43
    (b"content-type", b"application/dns-message"),          // 44
    (b"content-type", b"application/javascript"),           // 45
    (b"content-type", b"application/json"),                 // 46
    (b"content-type", b"application/x-www-form-urlencoded"), // 47
    (b"content-type", b"image/gif"),                        // 48
    (b"content-type", b"image/jpeg"),                       // 49
    (b"content-type", b"image/png"),                        // 50
    (b"content-type", b"text/css"),                         // 51
    (b"content-type", b"text/html; charset=utf-8"),         // 52
    (b"content-type", b"text/plain"),                       // 53
    (b"content-type", b"text/plain;charset=utf-8"),         // 54
    (b"range", b"bytes=0-"),                                // 55
    (b"strict-transport-security", b"max-age=31536000"),    // 56
    (b"strict-transport-security", b"max-age=31536000; includesubdomains"), // 57
    (b"strict-transport-security", b"max-age=31536000; includesubdomains; preload"), // 58
    (b"vary", b"accept-encoding"),                          // 59
    (b"vary", b"origin"),                                   // 60
    (b"x-content-type-options", b"nosniff"),                // 61
    (b"x-xss-protection", b"1; mode=block"),                // 62
    (b":status", b"100"),                                   // 63
    (b":status", b"204"),                                   // 64
    (b":status", b"206"),                                   // 65
    (b":status", b"302"),                                   // 66
    (b":status", b"400"),                                   // 67
    (b":status", b"403"),                                   // 68
    (b":status", b"421"),                                   // 69
    (b":status", b"425"),                                   // 70
    (b":status", b"500"),                                   // 71
    (b"accept-language", b""),                              // 72
    (b"access-control-allow-credentials", b"FALSE"),        // 73
    (b"access-control-allow-credentials", b"TRUE"),         // 74
    (b"access-control-allow-headers", b"*"),                // 75
    (b"access-control-allow-methods", b"get"),              // 76
    (b"access-control-allow-methods", b"get, post, options"), // 77
    (b"access-control-allow-methods", b"options"),          // 78
    (b"access-control-expose-headers", b"content-length"),  // 79
    (b"access-control-request-headers", b"content-type"),   // 80
    (b"access-control-request-method", b"get"),             // 81
    (b"access-control-request-method", b"post"),            // 82
    (b"alt-svc", b"clear"),                                 // 83
    (b"authorization", b""),                                // 84
    (b"content-security-policy", b"script-src 'none'; object-src 'none'; base-uri 'none'"), // 85
    (b"early-data", b"1"),                                  // 86
    (b"expect-ct", b""),                                    // 87
    (b"forwarded", b""),                                    // 88
    (b"if-range", b""),                                     // 89
    (b"origin", b""),                                       // 90
    (b"purpose", b"prefetch"),                              // 91
    (b"server", b""),                                       // 92
    (b"timing-allow-origin", b"*"),                         // 93
    (b"upgrade-insecure-requests", b"1"),                   // 94
    (b"user-agent", b""),                                   // 95
    (b"x-forwarded-for", b""),                              // 96
    (b"x-frame-options", b"deny"),                          // 97
    (b"x-frame-options", b"sameorigin"),                    // 98
];

/// The static entry at `index` as `(name, value)`, or `None` past index 98.
pub fn static_entry(index: usize) -> Option<(&'static [u8], &'static [u8])> {
    STATIC_TABLE.get(index).copied()
}

/// What the encoder can reference for one field line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Match {
    /// Name and value both match this entry.
    Full(usize),
    /// Only the name matches this entry (the lowest such index).
    Name(usize),
    None,
}

/// Finds the best static reference for `name: value`: the entry with both, or
/// else the lowest entry with the name.
pub(crate) fn find(name: &[u8], value: &[u8]) -> Match {
    let indices = entries_named(name);
    for &i in indices {
        let i = usize::from(i);
        if STATIC_TABLE[i].1 == value {
            return Match::Full(i);
        }
    }
    indices
        .first()
        .map_or(Match::None, |&i| Match::Name(usize::from(i)))
}

/// The indices of the entries named `name`, lowest first. A `match` compiles
/// to a switch on the length and a comparison or two; the scan of all 99
/// entries it replaced cost a `content-length` line about 300 instructions,
/// most of them in `memcmp` (BENCHMARKS.md). The test
/// `names_index_every_entry` checks it against the table.
#[rustfmt::skip]
fn entries_named(name: &[u8]) -> &'static [u8] {
    match name {
        b":authority" => &[0],
        b":path" => &[1],
        b"age" => &[2],
        b"content-disposition" => &[3],
        b"content-length" => &[4],
        b"cookie" => &[5],
        b"date" => &[6],
        b"etag" => &[7],
        b"if-modified-since" => &[8],
        b"if-none-match" => &[9],
        b"last-modified" => &[10],
        b"link" => &[11],
        b"location" => &[12],
        b"referer" => &[13],
        b"set-cookie" => &[14],
        b":method" => &[15, 16, 17, 18, 19, 20, 21],
        b":scheme" => &[22, 23],
        b":status" => &[24, 25, 26, 27, 28, 63, 64, 65, 66, 67, 68, 69, 70, 71],
        b"accept" => &[29, 30],
        b"accept-encoding" => &[31],
        b"accept-ranges" => &[32],
        b"access-control-allow-headers" => &[33, 34, 75],
        b"access-control-allow-origin" => &[35],
        b"cache-control" => &[36, 37, 38, 39, 40, 41],
        b"content-encoding" => &[42, 43],
        b"content-type" => &[44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54],
        b"range" => &[55],
        b"strict-transport-security" => &[56, 57, 58],
        b"vary" => &[59, 60],
        b"x-content-type-options" => &[61],
        b"x-xss-protection" => &[62],
        b"accept-language" => &[72],
        b"access-control-allow-credentials" => &[73, 74],
        b"access-control-allow-methods" => &[76, 77, 78],
        b"access-control-expose-headers" => &[79],
        b"access-control-request-headers" => &[80],
        b"access-control-request-method" => &[81, 82],
        b"alt-svc" => &[83],
        b"authorization" => &[84],
        b"content-security-policy" => &[85],
        b"early-data" => &[86],
        b"expect-ct" => &[87],
        b"forwarded" => &[88],
        b"if-range" => &[89],
        b"origin" => &[90],
        b"purpose" => &[91],
        b"server" => &[92],
        b"timing-allow-origin" => &[93],
        b"upgrade-insecure-requests" => &[94],
        b"user-agent" => &[95],
        b"x-forwarded-for" => &[96],
        b"x-frame-options" => &[97, 98],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spot_checks() {
        let cases: &[(usize, &[u8], &[u8])] = &[
            (0, b":authority", b""),
            (1, b":path", b"/"),
            (14, b"set-cookie", b""),
            (17, b":method", b"GET"),
            (23, b":scheme", b"https"),
            (25, b":status", b"200"),
            (31, b"accept-encoding", b"gzip, deflate, br"),
            (41, b"cache-control", b"public, max-age=31536000"),
            (52, b"content-type", b"text/html; charset=utf-8"),
            (
                58,
                b"strict-transport-security",
                b"max-age=31536000; includesubdomains; preload",
            ),
            (62, b"x-xss-protection", b"1; mode=block"),
            (63, b":status", b"100"),
            (71, b":status", b"500"),
            (72, b"accept-language", b""),
            (
                85,
                b"content-security-policy",
                b"script-src 'none'; object-src 'none'; base-uri 'none'",
            ),
            (95, b"user-agent", b""),
            (97, b"x-frame-options", b"deny"),
            (98, b"x-frame-options", b"sameorigin"),
        ];
        for &(i, n, v) in cases {
            assert_eq!(static_entry(i), Some((n, v)), "index {i}");
        }
        assert_eq!(static_entry(STATIC_TABLE_LEN), None);
    }

    #[test]
    fn names_are_lowercase_and_pairs_unique() {
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
            assert!(!n.iter().any(u8::is_ascii_uppercase), "index {i}");
            // A duplicate pair would mean a transcription slip.
            for (n2, v2) in &STATIC_TABLE[i + 1..] {
                assert!(!(n == n2 && v == v2), "index {i} repeated");
            }
        }
    }

    /// The old scan, as the reference for the name index.
    fn find_by_scan(name: &[u8], value: &[u8]) -> Match {
        let mut name_match = None;
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
            if *n == name {
                if *v == value {
                    return Match::Full(i);
                }
                name_match.get_or_insert(i);
            }
        }
        name_match.map_or(Match::None, Match::Name)
    }

    #[test]
    fn names_index_every_entry() {
        for (i, (n, v)) in STATIC_TABLE.iter().enumerate() {
            let named: Vec<usize> = (0..STATIC_TABLE_LEN)
                .filter(|&j| STATIC_TABLE[j].0 == *n)
                .collect();
            let indexed: Vec<usize> = entries_named(n).iter().map(|&j| usize::from(j)).collect();
            assert_eq!(indexed, named, "{}", String::from_utf8_lossy(n));
            assert_eq!(find(n, v), Match::Full(i));
            for other in [&b""[..], b"x", b"0", b"200", b"gzip", b"no-such-value"] {
                assert_eq!(find(n, other), find_by_scan(n, other));
            }
        }
        for name in [
            &b""[..],
            b":",
            b"x-custom",
            b"content-lengt",
            b"content-lengthx",
            b"Content-Length",
        ] {
            assert_eq!(find(name, b""), Match::None);
        }
    }

    #[test]
    fn find_prefers_full_match_then_lowest_name() {
        assert_eq!(find(b":method", b"GET"), Match::Full(17));
        assert_eq!(find(b":method", b"PATCH"), Match::Name(15));
        assert_eq!(find(b":status", b"418"), Match::Name(24));
        assert_eq!(find(b":authority", b"example.com"), Match::Name(0));
        assert_eq!(find(b"x-custom", b""), Match::None);
    }
}
