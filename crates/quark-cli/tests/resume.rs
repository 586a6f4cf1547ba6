//! `quark get --resume`: the first URL over a connection of its own, the
//! rest over a second that resumes its session (in 0-RTT with `--0rtt`);
//! files compared by hash.

mod common;

use std::process::Output;

use common::{get, serve_with, sha, stderr, tempdir};

/// The summary lines (`N of M files, ...`), one per connection.
fn summaries(out: &Output) -> Vec<String> {
    stderr(out)
        .lines()
        .filter(|l| l.contains(" files, "))
        .map(str::to_string)
        .collect()
}

#[test]
fn the_second_connection_resumes_the_first_ones_session() {
    let dir = tempdir("quark-cli", "resume");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let files: Vec<(String, Vec<u8>)> = (0..3u32)
        .map(|n| {
            let body = (0..40_000 * (n + 1)).map(|i| (i * 7 + n) as u8).collect();
            (format!("f{n}.bin"), body)
        })
        .collect();
    for (name, body) in &files {
        std::fs::write(root.join(name), body).unwrap();
    }
    let server = serve_with(&root, &dir, &["--0rtt"]);
    let ca = server.cert.to_str().unwrap();
    let urls: Vec<String> = files
        .iter()
        .map(|(name, _)| format!("https://localhost:{}/{name}", server.port))
        .collect();
    let urls: Vec<&str> = urls.iter().map(String::as_str).collect();

    // To a directory: every file arrives, over two connections.
    let out = dir.join("out");
    std::fs::create_dir_all(&out).unwrap();
    let mut args = urls.clone();
    args.extend(["-o", out.to_str().unwrap(), "--ca", ca, "--resume"]);
    let result = get(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    for (name, body) in &files {
        assert_eq!(
            sha(&std::fs::read(out.join(name)).unwrap()),
            sha(body),
            "{name}"
        );
    }
    let lines = summaries(&result);
    assert_eq!(lines.len(), 2, "{}", stderr(&result));
    assert!(lines[0].starts_with("1 of 1 files"), "{}", lines[0]);
    assert!(!lines[0].contains("resum"), "{}", lines[0]);
    assert!(lines[1].starts_with("2 of 2 files"), "{}", lines[1]);
    assert!(lines[1].ends_with(", resumed]"), "{}", lines[1]);

    // With --0rtt, the second connection's requests go early; the output to
    // standard output keeps the URLs' order across the two connections.
    let mut args = urls.clone();
    args.extend(["-o", "-", "--ca", ca, "--resume", "--0rtt"]);
    let result = get(&args);
    assert!(result.status.success(), "{}", stderr(&result));
    let all: Vec<u8> = files.iter().flat_map(|(_, b)| b.clone()).collect();
    assert_eq!(sha(&result.stdout), sha(&all));
    let lines = summaries(&result);
    assert_eq!(lines.len(), 2, "{}", stderr(&result));
    assert!(!lines[0].contains("0-RTT"), "{}", lines[0]);
    assert!(
        lines[1].ends_with(", 0-RTT accepted, resumed]"),
        "{}",
        lines[1]
    );

    // One URL leaves nothing to resume: a clear error, no connection.
    let result = get(&[urls[0], "-o", "-", "--ca", ca, "--resume"]);
    assert!(!result.status.success());
    assert!(
        stderr(&result).contains("--resume needs two URLs or more"),
        "{}",
        stderr(&result)
    );
}
