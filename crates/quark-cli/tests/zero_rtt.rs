//! `quark get --0rtt` against `quark serve --0rtt` (accepted) and against a
//! server without it (no early data: a full handshake); files compared by hash.

mod common;

use common::{get, serve_with, sha, stderr, tempdir};

#[test]
fn get_sends_its_requests_in_0rtt() {
    let dir = tempdir("quark-cli", "0rtt");
    let root = dir.join("root");
    std::fs::create_dir_all(&root).unwrap();
    let big: Vec<u8> = (0..500_000u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(root.join("a.bin"), &big).unwrap();
    std::fs::write(root.join("b.txt"), b"early\n").unwrap();

    let server = serve_with(&root, &dir, &["--0rtt"]);
    let ca = server.cert.to_str().unwrap();
    let a = format!("https://localhost:{}/a.bin", server.port);
    let b = format!("https://localhost:{}/b.txt", server.port);
    for _ in 0..2 {
        let result = get(&[&b, &a, "-o", "-", "--ca", ca, "--0rtt"]);
        assert!(result.status.success(), "{}", stderr(&result));
        assert_eq!(sha(&result.stdout), sha(&[&b"early\n"[..], &big].concat()));
        assert!(
            stderr(&result).contains(", 0-RTT accepted]"),
            "{}",
            stderr(&result)
        );
    }
    drop(server);

    // A server without --0rtt issues tickets without early data: the client
    // finds no 0-RTT to use and fetches after the handshake.
    let server = serve_with(&root, &dir, &[]);
    let ca = server.cert.to_str().unwrap();
    let a = format!("https://localhost:{}/a.bin", server.port);
    let result = get(&[&a, "-o", "-", "--ca", ca, "--0rtt"]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(sha(&result.stdout), sha(&big));
    assert!(
        stderr(&result).contains(", 0-RTT unavailable]"),
        "{}",
        stderr(&result)
    );

    drop(server);

    // HTTP/3: the GETs go in 0-RTT too.
    let server = serve_with(&root, &dir, &["--0rtt", "--h3"]);
    let ca = server.cert.to_str().unwrap();
    let a = format!("https://localhost:{}/a.bin", server.port);
    let result = get(&[&a, "-o", "-", "--ca", ca, "--0rtt", "--h3"]);
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(sha(&result.stdout), sha(&big));
    assert!(
        stderr(&result).contains(", 0-RTT accepted]"),
        "{}",
        stderr(&result)
    );
}
