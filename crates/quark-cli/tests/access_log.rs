//! `quark serve --access-log FILE`: one line per request, for HTTP/3 and
//! hq-interop, with the peer, the request, the status and the bytes sent.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::*;

/// The log's lines once it has `n` (requests are logged when they end).
fn lines(log: &Path, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let lines: Vec<String> = text.lines().map(str::to_owned).collect();
        if lines.len() >= n || Instant::now() > deadline {
            return lines;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Checks one line: `127.0.0.1:PORT - - [DD/Mon/YYYY:HH:MM:SS +0000]
/// "REQUEST" STATUS BYTES SECONDS`.
fn check(line: &str, request: &str, status: &str, bytes: u64) {
    assert!(line.starts_with("127.0.0.1:"), "{line}");
    let (head, rest) = line.split_once(" - - [").expect(line);
    assert!(head["127.0.0.1:".len()..].parse::<u16>().is_ok(), "{line}");
    let (time, rest) = rest.split_once("] \"").expect(line);
    assert_eq!(time.len(), "29/Nov/2026:02:13:07 +0000".len(), "{line}");
    assert!(time.ends_with(" +0000"), "{line}");
    let (req, rest) = rest.split_once("\" ").expect(line);
    assert_eq!(req, request, "{line}");
    let fields: Vec<&str> = rest.split(' ').collect();
    assert_eq!(fields.len(), 3, "{line}");
    assert_eq!(fields[0], status, "{line}");
    assert_eq!(fields[1], bytes.to_string(), "{line}");
    assert!(fields[2].parse::<f64>().is_ok(), "{line}");
}

#[test]
fn one_line_per_request_for_h3_and_hq() {
    let dir = tempdir("quark-cli", "access-log");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let big: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    std::fs::write(root.join("a.bin"), &big).unwrap();
    std::fs::write(root.join("b.txt"), b"hello\n").unwrap();

    for (protocol, flags) in [("HTTP/3", &["--h3"][..]), ("hq-interop", &[][..])] {
        let log = dir.join(format!("{}.log", protocol.replace('/', "")));
        let log_arg = log.to_str().unwrap();
        let mut extra = vec!["--access-log", log_arg];
        extra.extend_from_slice(flags);
        let server = serve_with(&root, &dir, &extra);
        let ca = server.cert.to_str().unwrap();
        let url = |p: &str| format!("https://localhost:{}{p}", server.port);
        for (path, ok) in [("/a.bin", true), ("/b.txt", true), ("/missing", false)] {
            let mut args = vec![url(path), "-o".into(), "-".into(), "--ca".into(), ca.into()];
            args.extend(flags.iter().map(|f| f.to_string()));
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            let o = get(&args);
            assert_eq!(o.status.success(), ok, "{path}: {}", stderr(&o));
        }
        let got = lines(&log, 3);
        assert_eq!(got.len(), 3, "{protocol}: {got:?}");
        check(
            &got[0],
            &format!("GET /a.bin {protocol}"),
            "200",
            big.len() as u64,
        );
        check(&got[1], &format!("GET /b.txt {protocol}"), "200", 6);
        check(&got[2], &format!("GET /missing {protocol}"), "404", 0);
    }
}
