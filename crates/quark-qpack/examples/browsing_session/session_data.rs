//! A browser loading one page: 30 requests and their responses, with the
//! headers a current Chromium-based browser and a typical HTTPS server send.
//! Shared by the `browsing_session` example and the compression test.

#![allow(dead_code)]

use quark_qpack::{Decoder, Encoder};

/// A header list.
pub(crate) type Fields = Vec<(String, String)>;

const UA: &str = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36";
const COOKIE: &str = "_ga=GA1.2.1234567890.1732800000; session_id=9f86d081884c7d659a2feaa0c55ad015; cart=3; consent=analytics%3Dyes%26ads%3Dno";

/// (path, kind) of each resource, in load order: the page first.
const RESOURCES: &[(&str, &str)] = &[
    ("/", "document"),
    ("/static/css/main.4f1a2b.css", "style"),
    ("/static/css/vendor.9c3d1e.css", "style"),
    ("/static/js/runtime.77ab01.js", "script"),
    ("/static/js/vendor.e4c2f9.js", "script"),
    ("/static/js/main.1b9d3a.js", "script"),
    ("/static/fonts/inter-var.woff2", "font"),
    ("/static/fonts/inter-var-italic.woff2", "font"),
    ("/img/logo.svg", "image"),
    ("/img/hero-1600.webp", "image"),
    ("/img/products/1001-400.webp", "image"),
    ("/img/products/1002-400.webp", "image"),
    ("/img/products/1003-400.webp", "image"),
    ("/img/products/1004-400.webp", "image"),
    ("/img/products/1005-400.webp", "image"),
    ("/img/products/1006-400.webp", "image"),
    ("/img/products/1007-400.webp", "image"),
    ("/img/products/1008-400.webp", "image"),
    ("/img/icons/cart.svg", "image"),
    ("/img/icons/search.svg", "image"),
    ("/img/icons/user.svg", "image"),
    ("/img/banner-sale.webp", "image"),
    ("/api/cart?v=3", "empty"),
    ("/api/recommendations?user=9f86d081&limit=8", "empty"),
    (
        "/api/stock?ids=1001,1002,1003,1004,1005,1006,1007,1008",
        "empty",
    ),
    ("/api/session/refresh", "empty"),
    ("/static/js/analytics.5d6e7f.js", "script"),
    ("/img/footer-pattern.png", "image"),
    ("/favicon.ico", "image"),
    ("/manifest.webmanifest", "manifest"),
];

fn pairs(list: &[(&str, &str)]) -> Fields {
    list.iter()
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect()
}

/// The request for resource `i`.
pub(crate) fn request(i: usize) -> Fields {
    let (path, dest) = RESOURCES[i];
    let accept = match dest {
        "document" => {
            "text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,image/apng,*/*;q=0.8,application/signed-exchange;v=b3;q=0.7"
        }
        "style" => "text/css,*/*;q=0.1",
        "image" => "image/avif,image/webp,image/apng,image/svg+xml,image/*,*/*;q=0.8",
        "empty" => "application/json",
        _ => "*/*",
    };
    let (site, mode) = match dest {
        "document" => ("none", "navigate"),
        "font" => ("same-origin", "cors"),
        "empty" => ("same-origin", "cors"),
        _ => ("same-origin", "no-cors"),
    };
    let priority = match dest {
        "document" => "u=0, i",
        "style" => "u=0",
        "script" | "font" => "u=1",
        _ => "u=4, i",
    };
    let mut f = pairs(&[
        (":method", "GET"),
        (":authority", "shop.example.com"),
        (":scheme", "https"),
        (":path", path),
        (
            "sec-ch-ua",
            "\"Google Chrome\";v=\"131\", \"Chromium\";v=\"131\", \"Not_A Brand\";v=\"24\"",
        ),
        ("sec-ch-ua-mobile", "?0"),
        ("sec-ch-ua-platform", "\"Windows\""),
    ]);
    if dest == "document" {
        f.extend(pairs(&[("upgrade-insecure-requests", "1")]));
    }
    f.extend(pairs(&[
        ("user-agent", UA),
        ("accept", accept),
        ("sec-fetch-site", site),
        ("sec-fetch-mode", mode),
        ("sec-fetch-dest", dest),
    ]));
    if dest != "document" {
        f.extend(pairs(&[("referer", "https://shop.example.com/")]));
    }
    f.extend(pairs(&[
        ("accept-encoding", "gzip, deflate, br, zstd"),
        ("accept-language", "en-US,en;q=0.9,de;q=0.8"),
        ("cookie", COOKIE),
        ("priority", priority),
    ]));
    f
}

/// The response to resource `i`.
pub(crate) fn response(i: usize) -> Fields {
    let (path, dest) = RESOURCES[i];
    let ctype = match dest {
        "document" => "text/html; charset=utf-8",
        "style" => "text/css",
        "script" => "application/javascript",
        "font" => "font/woff2",
        "empty" => "application/json",
        "manifest" => "application/manifest+json",
        _ if path.ends_with(".svg") => "image/svg+xml",
        _ if path.ends_with(".png") => "image/png",
        _ if path.ends_with(".ico") => "image/x-icon",
        _ => "image/webp",
    };
    let cache = match dest {
        "document" | "empty" => "no-cache",
        _ => "public, max-age=31536000, immutable",
    };
    let length = (1000 + i * 7919 % 90_000).to_string();
    let etag = format!(
        "\"{:016x}\"",
        (i as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15)
    );
    // Two seconds of loading: the date changes once.
    let date = if i < 15 {
        "Sun, 29 Nov 2026 02:00:01 GMT"
    } else {
        "Sun, 29 Nov 2026 02:00:02 GMT"
    };
    let mut f = pairs(&[
        (":status", "200"),
        ("server", "quark"),
        ("date", date),
        ("content-type", ctype),
        ("content-length", &length),
        ("cache-control", cache),
    ]);
    if dest != "empty" {
        f.extend(pairs(&[
            ("etag", &etag),
            ("last-modified", "Fri, 27 Nov 2026 18:30:00 GMT"),
        ]));
    }
    f.extend(pairs(&[
        ("vary", "Accept-Encoding"),
        ("alt-svc", "h3=\":443\"; ma=86400"),
        (
            "strict-transport-security",
            "max-age=63072000; includeSubDomains; preload",
        ),
        ("x-content-type-options", "nosniff"),
    ]));
    f
}

/// How many requests the session has.
pub(crate) fn len() -> usize {
    RESOURCES.len()
}

/// Bytes of one direction: field sections, encoder stream, decoder stream.
#[derive(Default, Debug, Clone, Copy)]
pub(crate) struct Wire {
    pub(crate) sections: usize,
    pub(crate) encoder: usize,
    pub(crate) decoder: usize,
}

/// Encodes `sets` in waves (acknowledgments return between waves), decodes
/// them and checks every one; returns the bytes each stream carried.
pub(crate) fn run(capacity: u64, sets: &[Fields], waves: &[usize]) -> Wire {
    let mut enc = Encoder::new(capacity, 16, capacity);
    let mut dec = Decoder::new(capacity, 16);
    let mut wire = Wire::default();
    let mut start = 0;
    for &n in waves {
        let mut blocks = Vec::new();
        let mut inserts = Vec::new();
        for (i, set) in sets[start..start + n].iter().enumerate() {
            let stream = ((start + i) * 4) as u64;
            let fields: Vec<(&[u8], &[u8])> = set
                .iter()
                .map(|(k, v)| (k.as_bytes(), v.as_bytes()))
                .collect();
            let mut block = Vec::new();
            enc.encode_section(stream, &fields, &mut block);
            enc.take_instructions(&mut inserts);
            wire.sections += block.len();
            blocks.push((stream, block, set));
        }
        wire.encoder += inserts.len();
        dec.feed_encoder_stream(&inserts).expect("encoder stream");
        for (stream, block, set) in blocks {
            let got = dec
                .decode_section(stream, &block, 1 << 20)
                .expect("decodes")
                .expect("not blocked once inserts arrived");
            let got: Vec<(String, String)> = got
                .iter()
                .map(|f| {
                    (
                        String::from_utf8(f.name.to_vec()).unwrap(),
                        String::from_utf8(f.value.to_vec()).unwrap(),
                    )
                })
                .collect();
            assert_eq!(&got, set);
        }
        let mut acks = Vec::new();
        dec.take_instructions(&mut acks);
        wire.decoder += acks.len();
        enc.feed_decoder_stream(&acks).expect("decoder stream");
        start += n;
    }
    wire
}
