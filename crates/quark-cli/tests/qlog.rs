//! qlog from the command line: `quark get` with QLOGDIR writes its
//! connection's trace, and `quark serve --qlog-dir` the server's.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::{serve_with, sha, stderr, tempdir};

/// The `.sqlog` files in `dir`.
fn sqlogs(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "sqlog"))
        .collect()
}

/// Every JSON-SEQ record of a file, parsed; the first is the header.
fn records(path: &Path) -> Vec<serde_json::Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let records: Vec<serde_json::Value> = text
        .split('\u{1e}')
        .skip(1)
        .map(|r| serde_json::from_str(r).unwrap_or_else(|e| panic!("{e}: {r}")))
        .collect();
    assert_eq!(records[0]["qlog_format"], "JSON-SEQ", "{}", path.display());
    records
}

#[test]
fn get_with_qlogdir_writes_a_trace() {
    let dir = tempdir("quark-cli", "qlog");
    let root = dir.join("root");
    let (client_logs, server_logs) = (dir.join("client-qlog"), dir.join("server-qlog"));
    std::fs::create_dir_all(&root).unwrap();
    let body: Vec<u8> = (0..500_000u32).map(|i| (i * 13 % 251) as u8).collect();
    std::fs::write(root.join("f.bin"), &body).unwrap();
    let server = serve_with(&root, &dir, &["--qlog-dir", server_logs.to_str().unwrap()]);
    let url = format!("https://localhost:{}/f.bin", server.port);
    let result = Command::new(env!("CARGO_BIN_EXE_quark"))
        .args([
            "get",
            &url,
            "-o",
            "-",
            "--ca",
            server.cert.to_str().unwrap(),
        ])
        .env("QLOGDIR", &client_logs)
        .output()
        .unwrap();
    assert!(result.status.success(), "{}", stderr(&result));
    assert_eq!(sha(&result.stdout), sha(&body));
    assert!(
        stderr(&result).contains("ECN "),
        "the summary shows ECN: {}",
        stderr(&result)
    );

    let files = sqlogs(&client_logs);
    assert_eq!(files.len(), 1, "one client trace: {files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap().to_string();
    assert!(name.ends_with("_client.sqlog"), "{name}");
    let recs = records(&files[0]);
    assert_eq!(recs[0]["trace"]["vantage_point"]["type"], "client");
    // The response's stream frames as received add up to the file.
    let stream_bytes: u64 = recs
        .iter()
        .filter(|r| r["name"] == "transport:packet_received")
        .flat_map(|r| r["data"]["frames"].as_array().unwrap())
        .filter(|f| f["frame_type"] == "stream" && f["stream_id"] == 0)
        .map(|f| f["length"].as_u64().unwrap())
        .sum();
    assert!(
        stream_bytes >= body.len() as u64,
        "{stream_bytes} stream bytes"
    );

    // The server writes its trace from its own writer thread: wait for the
    // file of the same connection, closed by the client.
    let odcid = name.trim_end_matches("_client.sqlog");
    let server_file = server_logs.join(format!("{odcid}_server.sqlog"));
    for _ in 0..200 {
        if std::fs::read_to_string(&server_file).is_ok_and(|t| t.contains("connection_closed")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let recs = records(&server_file);
    assert_eq!(recs[0]["trace"]["vantage_point"]["type"], "server");
    assert!(
        recs.iter()
            .any(|r| r["name"] == "connectivity:connection_closed")
    );
}
