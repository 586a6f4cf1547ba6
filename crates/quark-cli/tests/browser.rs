//! Headless Chromium against `quark serve --h3`, in a network namespace
//! with only loopback (see `chromium/mod.rs`); skipped with a printed reason
//! when Chromium or namespaces are missing, unless `QUARK_REQUIRE_CHROMIUM`
//! is set.
//!
//! 1. A page with 20 resources loads over HTTP/3 only (`--no-tcp`, QUIC
//!    forced for the origin), and its script checks through XHR a 600 kB
//!    body (by hash), Range (206; two ranges: multipart/byteranges), HEAD, a
//!    conditional request (304), a directory (301, then text/html) and a
//!    missing file (404); an image's name has a space and an é, which the
//!    browser sends percent-encoded; a script comes from its precompressed
//!    `.gz` sibling (`--precompressed`), which the browser decodes and runs.
//! 2. A browser that starts on TCP moves to HTTP/3 through Alt-Svc: the
//!    page's later requests arrive over HTTP/3 (the server's access log).

mod chromium;
mod common;

use std::fmt::Write as _;

use chromium::{certificate, chromium_or_skip, requests, run};
use common::tempdir;

const STYLES: usize = 6;
const SCRIPTS: usize = 6;
const IMAGES: usize = 8;

/// The checks, each appending `name=result` to `#out`; the title turns
/// `done` once the images are in too.
const CHECKS: &str = r#"
function x(m, p, h) {
  var r = new XMLHttpRequest(); r.open(m, p, false);
  for (var k in (h || {})) r.setRequestHeader(k, h[k]);
  r.send(); return r;
}
var out = [];
out.push('scripts=' + window.scripts + ' packed=' + window.packed);
var styles = 0, root = getComputedStyle(document.documentElement);
for (var i = 0; i < 6; i++) if (root.getPropertyValue('--s' + i).trim() == '1') styles++;
out.push('styles=' + styles);
// FNV-1a over the characters (the file is ASCII).
var big = x('GET', 'big.txt'), h = 0x811c9dc5;
for (var i = 0; i < big.responseText.length; i++) {
  h ^= big.responseText.charCodeAt(i); h = Math.imul(h, 0x01000193) >>> 0;
}
out.push('big=' + big.status + ':' + big.responseText.length + ':' + h.toString(16));
// Query strings keep the browser's cache out of the way (the server ignores them).
var r = x('GET', 'a.txt?range', {'Range': 'bytes=2-5'});
out.push('range=' + r.status + ':' + r.responseText + ':' + r.getResponseHeader('content-range'));
var hd = x('HEAD', 'a.txt?head');
out.push('head=' + hd.status + ':' + hd.getResponseHeader('content-length') + ':' + hd.responseText.length);
var a = x('GET', 'a.txt?etag');
var c = x('GET', 'a.txt?cond', {'If-None-Match': a.getResponseHeader('etag')});
out.push('cond=' + c.status);
var m = x('GET', 'big.txt?multi', {'Range': 'bytes=0-0,500000-500000'});
out.push('multi=' + m.status + ':' + m.getResponseHeader('content-type').split(';')[0]);
var d = x('GET', 'dir');
out.push('dir=' + d.status + ':' + new URL(d.responseURL).pathname + ':' + d.getResponseHeader('content-type'));
out.push('missing=' + x('GET', 'missing.txt').status);
document.getElementById('out').textContent = out.join(' ');
window.onload = function () {
  var ok = 0, imgs = document.images;
  for (var i = 0; i < imgs.length; i++) if (imgs[i].complete && imgs[i].naturalWidth > 0) ok++;
  document.getElementById('out').textContent += ' images=' + ok;
  document.title = 'done';
};
"#;

/// `data` as a gzip file (RFC 1952) of stored deflate blocks (RFC 1951
/// §3.2.4): valid for any decoder, no compressor needed.
fn gzip_stored(data: &[u8]) -> Vec<u8> {
    let mut out = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];
    let mut blocks: Vec<&[u8]> = data.chunks(0xffff).collect();
    if blocks.is_empty() {
        blocks.push(&[]); // one empty final block
    }
    for (i, block) in blocks.iter().enumerate() {
        out.push(u8::from(i + 1 == blocks.len()));
        let len = block.len() as u16;
        out.extend(len.to_le_bytes());
        out.extend((!len).to_le_bytes());
        out.extend(*block);
    }
    // CRC-32 (ISO 3309), bit by bit.
    let mut crc = !0u32;
    for &b in data {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = (crc >> 1) ^ (0xedb8_8320 & (crc & 1).wrapping_neg());
        }
    }
    out.extend((!crc).to_le_bytes());
    out.extend((data.len() as u32).to_le_bytes());
    out
}

/// 32-bit FNV-1a, as the page computes it.
fn fnv1a(b: &[u8]) -> u32 {
    b.iter().fold(0x811c_9dc5, |h, &c| {
        (h ^ u32::from(c)).wrapping_mul(0x0100_0193)
    })
}

/// The site: index.html with its 20 resources, a.txt, big.txt, dir/.
fn site(root: &std::path::Path) -> Vec<u8> {
    for sub in ["css", "js", "img", "dir"] {
        std::fs::create_dir_all(root.join(sub)).unwrap();
    }
    let mut head = String::new();
    for i in 0..STYLES {
        std::fs::write(
            root.join(format!("css/s{i}.css")),
            format!(":root{{--s{i}:1}}"),
        )
        .unwrap();
        write!(head, "<link rel=stylesheet href=\"css/s{i}.css\">").unwrap();
    }
    for i in 0..SCRIPTS {
        let js = "window.scripts = (window.scripts || 0) + 1;";
        std::fs::write(root.join(format!("js/j{i}.js")), js).unwrap();
        write!(head, "<script src=\"js/j{i}.js\"></script>").unwrap();
    }
    // A precompressed sibling that says so when it runs (`--precompressed`).
    let packed = "window.scripts = (window.scripts || 0) + 1; window.packed = 1;";
    std::fs::write(root.join("js/j0.js.gz"), gzip_stored(packed.as_bytes())).unwrap();
    let mut body = String::new();
    for i in 0..IMAGES {
        let svg = format!(
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" height=\"{0}\"><rect width=\"{0}\" height=\"{0}\"/></svg>",
            10 + i
        );
        // One name the browser must percent-encode (a space, an é).
        let name = if i == 0 {
            "a pic é".to_owned()
        } else {
            format!("i{i}")
        };
        std::fs::write(root.join(format!("img/{name}.svg")), svg).unwrap();
        write!(body, "<img src=\"img/{name}.svg\">").unwrap();
    }
    let page = format!(
        "<!doctype html><html><head><title>loading</title>{head}</head><body>{body}<div id=\"out\"></div><script>{CHECKS}</script></body></html>"
    );
    std::fs::write(root.join("index.html"), page).unwrap();
    std::fs::write(root.join("a.txt"), "0123456789\n").unwrap();
    std::fs::write(root.join("dir/index.html"), "<p>dir</p>").unwrap();
    let big: Vec<u8> = (0..600_000u32).map(|i| b'a' + (i * 7 % 26) as u8).collect();
    std::fs::write(root.join("big.txt"), &big).unwrap();
    big
}

#[test]
fn chromium_loads_a_page_over_http3_and_checks_the_file_server() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let dir = tempdir("quark-cli", "browser-h3");
    let big = site(&dir.join("root"));
    let spki = certificate(&dir);
    // Chromium trusts a self-signed certificate for QUIC only for origins
    // it is told to use QUIC for, with the key's hash listed.
    let args = format!(
        "--enable-quic --origin-to-force-quic-on=127.0.0.1:4433 --ignore-certificate-errors-spki-list={spki}"
    );
    let got = run(
        &chromium,
        &dir,
        "--no-tcp --precompressed",
        &args,
        "https://127.0.0.1:4433/",
    );

    assert!(got.dom.contains("<title>done</title>"), "{}", got.dom);
    let expect = format!(
        "scripts={SCRIPTS} packed=1 styles={STYLES} big=200:{}:{:x} range=206:2345:bytes 2-5/11 \
         head=200:11:0 cond=304 multi=206:multipart/byteranges dir=200:/dir/:text/html; charset=utf-8 missing=404 images={IMAGES}",
        big.len(),
        fnv1a(&big)
    );
    assert!(
        got.dom.contains(&expect),
        "expected {expect}\nin {}",
        got.dom
    );

    // Every request came over HTTP/3, each resource once with its status.
    let reqs = requests(&got.log);
    assert!(reqs.iter().all(|r| r.1 == "HTTP/3"), "{}", got.log);
    let served = |path: &str, status: u16| reqs.iter().any(|r| r.0 == path && r.2 == status);
    for i in 0..STYLES {
        assert!(served(&format!("/css/s{i}.css"), 200), "{}", got.log);
    }
    for i in 0..SCRIPTS {
        assert!(served(&format!("/js/j{i}.js"), 200), "{}", got.log);
    }
    for i in 1..IMAGES {
        assert!(served(&format!("/img/i{i}.svg"), 200), "{}", got.log);
    }
    // Sent percent-encoded, found by its decoded name.
    assert!(served("/img/a%20pic%20%C3%A9.svg", 200), "{}", got.log);
    assert!(served("/big.txt?multi", 206), "{}", got.log);
    assert!(reqs.contains(&("/big.txt".into(), "HTTP/3".into(), 200, big.len() as u64)));
    assert!(reqs.contains(&("/a.txt?range".into(), "HTTP/3".into(), 206, 4)));
    assert!(reqs.contains(&("/a.txt?head".into(), "HTTP/3".into(), 200, 0)));
    assert!(reqs.contains(&("/a.txt?cond".into(), "HTTP/3".into(), 304, 0)));
    assert!(served("/dir", 301) && served("/dir/", 200), "{}", got.log);
    assert!(served("/missing.txt", 404), "{}", got.log);
}

/// Requests `a.txt?n=0,1,...` one after another (100 ms apart, at most 40)
/// until one goes over h3; the title is the last one's protocol.
const ALT_PAGE: &str = r#"<!doctype html><html><head><title>loading</title></head><body>
<div id="out"></div><script>
var seen = [];
for (var i = 0; i < 40; i++) {
  var u = new URL('a.txt?n=' + i, location.href).href;
  var r = new XMLHttpRequest(); r.open('GET', u, false); r.send();
  var e = performance.getEntriesByName(u);
  var p = e.length ? e[e.length - 1].nextHopProtocol : '?';
  seen.push(r.status + ':' + p);
  if (p == 'h3') break;
  var t = Date.now(); while (Date.now() - t < 100) {}
}
document.getElementById('out').textContent = seen.join(',');
document.title = p;
</script></body></html>"#;

#[test]
fn chromium_moves_from_tcp_to_http3_through_alt_svc() {
    let Some(chromium) = chromium_or_skip() else {
        return;
    };
    let dir = tempdir("quark-cli", "browser-alt-svc");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("alt.html"), ALT_PAGE).unwrap();
    std::fs::write(root.join("a.txt"), "0123456789\n").unwrap();
    let spki = certificate(&dir);
    // Chromium takes a QUIC alternative only with a certificate from a known
    // root, or for a host it was told to force QUIC on (any port): forcing
    // 127.0.0.1:1, where nothing listens, lets the Alt-Svc of
    // 127.0.0.1:4433 be used with the self-signed certificate while the page
    // itself starts on TCP.
    let args = format!(
        "--enable-quic --origin-to-force-quic-on=127.0.0.1:1 --ignore-certificate-errors-spki-list={spki}"
    );
    let got = run(
        &chromium,
        &dir,
        "",
        &args,
        "https://127.0.0.1:4433/alt.html",
    );

    assert!(got.dom.contains("<title>h3</title>"), "{}", got.dom);
    let reqs = requests(&got.log);
    let first = reqs.first().expect("no requests logged");
    assert_eq!(first.0, "/alt.html");
    assert!(first.1 == "HTTP/2" || first.1 == "HTTP/1.1", "{}", got.log);
    // Later requests of the same page came over HTTP/3, and once there stayed.
    let h3 = reqs
        .iter()
        .position(|r| r.1 == "HTTP/3")
        .unwrap_or_else(|| panic!("nothing over HTTP/3:\n{}", got.log));
    assert!(reqs[h3].0.starts_with("/a.txt?n="), "{}", got.log);
    assert!(reqs[h3..].iter().all(|r| r.1 == "HTTP/3"), "{}", got.log);
    assert!(
        reqs.iter().all(|r| r.2 == 200 || r.0 == "/favicon.ico"),
        "{}",
        got.log
    );
}
