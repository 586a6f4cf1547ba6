//! Running headless Chromium against `quark serve` inside a network
//! namespace that has only loopback (`unshare --net`, then `ip link set lo
//! up`), so the browser reaches nothing but the server.

use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// Where Chromium is, or why the browser tests cannot run here.
pub(crate) fn chromium() -> Result<PathBuf, String> {
    let found = ["chromium", "chromium-browser"].iter().find_map(|name| {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|dir| dir.join(name))
                .find(|p| p.is_file())
        })
    });
    let Some(chromium) = found else {
        return Err("chromium not installed".into());
    };
    // Root may unshare directly; others through a user namespace.
    let probe = Command::new("unshare")
        .args(unshare_args())
        .args(["ip", "link", "set", "lo", "up"])
        .output();
    match probe {
        Ok(o) if o.status.success() => Ok(chromium),
        Ok(o) => Err(format!(
            "cannot make a network namespace: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run unshare: {e}")),
    }
}

fn unshare_args() -> &'static [&'static str] {
    if nix::unistd::geteuid().is_root() {
        &["--net"]
    } else {
        &["--map-root-user", "--net"]
    }
}

/// `Ok(path)`, or a skip (printed) unless `QUARK_REQUIRE_CHROMIUM` is set.
pub(crate) fn chromium_or_skip() -> Option<PathBuf> {
    match chromium() {
        Ok(path) => Some(path),
        Err(why) if std::env::var_os("QUARK_REQUIRE_CHROMIUM").is_some() => {
            panic!("QUARK_REQUIRE_CHROMIUM is set but {why}")
        }
        Err(why) => {
            eprintln!("skipped: {why}");
            None
        }
    }
}

/// A self-signed certificate for localhost and 127.0.0.1 written to
/// `dir/cert.pem` and `dir/key.pem`, and its key's SPKI hash in the form
/// `--ignore-certificate-errors-spki-list` takes (base64 of SHA-256).
pub(crate) fn certificate(dir: &Path) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let params =
        rcgen::CertificateParams::new(vec!["localhost".to_owned(), "127.0.0.1".to_owned()])
            .unwrap();
    let cert = params.self_signed(&key).unwrap();
    std::fs::write(dir.join("cert.pem"), cert.pem()).unwrap();
    std::fs::write(dir.join("key.pem"), key.serialize_pem()).unwrap();
    base64(&Sha256::digest(
        rcgen::PublicKeyData::subject_public_key_info(&key),
    ))
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.iter().fold(0u32, |a, &b| (a << 8) | u32::from(b)) << (8 * (3 - chunk.len()));
        for i in 0..4 {
            match i <= chunk.len() {
                true => out.push(ALPHABET[((n >> (18 - 6 * i)) & 63) as usize] as char),
                false => out.push('='),
            }
        }
    }
    out
}

/// What one run in the namespace gave.
pub(crate) struct Run {
    /// The page's DOM after its load event (`--dump-dom`).
    pub(crate) dom: String,
    /// The server's access log.
    pub(crate) log: String,
}

/// In a fresh network namespace: `quark serve --h3 <serve_args>` on
/// 127.0.0.1:4433 from `dir/root` with `dir`'s certificate, then Chromium
/// (`chromium_args`) dumping `url`'s DOM. Bounded by `timeout` seconds.
pub(crate) fn run(
    chromium: &Path,
    dir: &Path,
    serve_args: &str,
    chromium_args: &str,
    url: &str,
) -> Run {
    let quark = env!("CARGO_BIN_EXE_quark");
    let d = dir.display();
    // The server is ready once it has printed its "serving ... (HTTP/3)" line.
    let script = format!(
        r#"set -e
ip link set lo up
: >{d}/serve.err
{quark} serve --h3 --listen 127.0.0.1:4433 --root {d}/root --cert {d}/cert.pem \
  --key {d}/key.pem --access-log {d}/access.log {serve_args} 2>{d}/serve.err &
server=$!
for i in $(seq 100); do grep -qs 'HTTP/3)' {d}/serve.err && break; sleep 0.05; done
HOME={d}/home timeout 40 {chromium} --headless --no-sandbox --disable-gpu \
  --no-first-run --user-data-dir={d}/profile {chromium_args} --dump-dom '{url}' \
  >{d}/dom.html 2>{d}/chromium.err || echo "chromium failed: $?" >&2
kill $server
wait $server || true
"#,
        chromium = chromium.display()
    );
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let out = Command::new("unshare")
        .args(unshare_args())
        .args(["sh", "-c", &script])
        .output()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).unwrap_or_default();
    assert!(
        out.status.success() && out.stderr.is_empty(),
        "{}\nserver: {}\nchromium: {}",
        String::from_utf8_lossy(&out.stderr),
        read("serve.err"),
        read("chromium.err")
    );
    Run {
        dom: read("dom.html"),
        log: read("access.log"),
    }
}

/// The access log's requests as (path, protocol, status, bytes).
pub(crate) fn requests(log: &str) -> Vec<(String, String, u16, u64)> {
    log.lines()
        .filter_map(|line| {
            let (_, rest) = line.split_once("] \"")?;
            let (request, rest) = rest.split_once("\" ")?;
            let mut req = request.split(' ');
            let (_method, path, protocol) = (req.next()?, req.next()?, req.next()?);
            let mut rest = rest.split(' ');
            let status = rest.next()?.parse().ok()?;
            let bytes = rest.next()?.parse().ok()?;
            Some((path.to_owned(), protocol.to_owned(), status, bytes))
        })
        .collect()
}
