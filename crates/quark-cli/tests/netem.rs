//! `quark relay` and `quark link` as a user runs them: a transfer through an
//! impaired relay still matches by hash, the layer-3 link carries a transfer
//! between its namespaces and leaves nothing behind, the relay reads the RTT
//! from the spin bit, and bad input ends in one `error:` line with exit code 2.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use common::{free_port, sha, stderr, tempdir};

const QUARK: &str = env!("CARGO_BIN_EXE_quark");

/// Kills (SIGKILL) a child on drop: a test failing midway leaves no process.
struct Proc {
    child: Child,
    /// Collects the rest of the child's stderr.
    rest: Option<std::thread::JoinHandle<String>>,
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proc {
    /// SIGTERM, then wait: the process prints its counters and cleans up.
    /// Returns whether it exited successfully, and its stderr.
    fn terminate(mut self) -> (bool, String) {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let ok = self.child.wait().unwrap().success();
        let rest = self
            .rest
            .take()
            .map(|t| t.join().unwrap())
            .unwrap_or_default();
        (ok, rest)
    }
}

/// Spawns `cmd` and waits for a line on stderr starting with `ready`
/// (stderr keeps being drained afterwards).
fn spawn_ready(mut cmd: Command, ready: &str) -> Proc {
    let mut child = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    for line in lines.by_ref() {
        if line.unwrap().starts_with(ready) {
            let rest = std::thread::spawn(move || {
                lines.map_while(Result::ok).collect::<Vec<_>>().join("\n")
            });
            return Proc {
                child,
                rest: Some(rest),
            };
        }
    }
    let _ = child.wait();
    panic!("{cmd:?} did not print '{ready}'");
}

/// Starts `quark relay ARGS` and returns it with the address it prints
/// (`listening ADDR` on stdout); its stderr is collected for `terminate`.
fn spawn_relay(args: &[&str]) -> (Proc, String) {
    let mut child = Command::new(QUARK)
        .arg("relay")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let err = BufReader::new(child.stderr.take().unwrap());
    let relay = Proc {
        child,
        rest: Some(std::thread::spawn(move || {
            err.lines()
                .map_while(Result::ok)
                .collect::<Vec<_>>()
                .join("\n")
        })),
    };
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    let addr = line.trim().strip_prefix("listening ").expect(&line);
    (relay, addr.to_string())
}

/// A file of `len` pseudo-random bytes in `root`.
fn file(root: &Path, len: usize) -> Vec<u8> {
    let data: Vec<u8> = (0..len as u64)
        .map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 56) as u8)
        .collect();
    std::fs::write(root.join("f.bin"), &data).unwrap();
    data
}

/// Starts `quark serve` (hq-interop) on the files in `dir`; its address.
fn serve(dir: &Path) -> (Proc, String) {
    let port = free_port();
    let mut serve = Command::new(QUARK);
    serve.args(["serve", "--listen", &format!("127.0.0.1:{port}"), "--root"]);
    serve.arg(dir);
    (spawn_ready(serve, "serving "), format!("127.0.0.1:{port}"))
}

/// `quark get` fetches f.bin through the relay at `addr` and gets `data`,
/// checked by hash; then the relay stops cleanly: its stderr.
fn download_through(relay: Proc, addr: &str, data: &[u8]) -> String {
    let relay_port = addr.rsplit(':').next().unwrap();
    let got = Command::new(QUARK)
        .args(["get", &format!("https://localhost:{relay_port}/f.bin")])
        .args(["-o", "-", "--insecure", "--quiet"])
        .output()
        .unwrap();
    assert!(got.status.success(), "{}", stderr(&got));
    assert_eq!(sha(&got.stdout), sha(data));
    let (ok, report) = relay.terminate();
    assert!(ok, "{report}");
    report
}

#[test]
fn transfer_through_a_lossy_relay_matches() {
    let dir = tempdir("quark-netem", "relay");
    let data = file(&dir, 1_000_000);
    let (_server, to) = serve(&dir);
    let (relay, addr) = spawn_relay(&[
        "--listen",
        "127.0.0.1:0",
        "--to",
        &to,
        "--delay",
        "2ms",
        "--loss",
        "5%",
        "--seed",
        "7",
    ]);
    let report = download_through(relay, &addr, &data);
    // Both directions are reported, and the relay really lost datagrams. (The
    // client sends only a few dozen: ACKs are rare in bulk transfer, so that
    // direction may get through a 5 % loss unscathed.)
    let lost: Vec<u64> = report
        .lines()
        .filter_map(|l| l.split("(loss ").nth(1))
        .map(|l| l.split(',').next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(lost.len(), 2, "{report}");
    assert!(lost.iter().sum::<u64>() > 0, "{report}");
}

/// The relay, an observer on the path, reads the RTT from the latency spin
/// bit (RFC 9000 §17.4) of the client's packets during a download over a
/// 40 ms RTT: quark's two ends spin (unless one of them is among the one
/// connection in sixteen that never does, so the download is tried again).
#[test]
fn the_relay_reads_the_rtt_from_the_spin_bit() {
    let dir = tempdir("quark-netem", "spin");
    let data = file(&dir, 6_000_000);
    let (_server, to) = serve(&dir);
    let mut last = String::new();
    for _ in 0..4 {
        let (relay, addr) =
            spawn_relay(&["--listen", "127.0.0.1:0", "--to", &to, "--delay", "20ms"]);
        let report = download_through(relay, &addr, &data);
        let line = report
            .lines()
            .find_map(|l| l.strip_prefix("relay-report "))
            .expect("no relay-report line");
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let spin = &r["client_to_server"]["spin"];
        if let Some(ms) = spin["rtt_ms_median"]
            .as_f64()
            .filter(|_| spin["flips"].as_u64() >= Some(4))
        {
            // 40 ms on the link; the client's ACK timing and the relay's own
            // turns add a little.
            assert!((38.0..80.0).contains(&ms), "spin RTT {ms} ms: {spin}");
            return;
        }
        last = spin.to_string();
    }
    panic!("no spin RTT in four downloads: {last}");
}

#[test]
fn datagrams_over_the_mtu_are_dropped() {
    // `--mtu 1000`: a 1001-byte datagram never reaches the echo server, a
    // 1000-byte one comes back whole.
    let echo = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let echo_addr = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    let to = echo_addr.to_string();
    let (relay, addr) = spawn_relay(&["--listen", "127.0.0.1:0", "--mtu", "1000", "--to", &to]);
    let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    socket
        .set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .unwrap();
    socket.send_to(&[1; 1001], &addr).unwrap();
    socket.send_to(&[2; 1000], &addr).unwrap();
    let mut buf = [0u8; 2048];
    let (n, _) = socket.recv_from(&mut buf).expect("the 1000-byte datagram");
    assert_eq!(&buf[..n], &[2; 1000][..]);
    let (_, report) = relay.terminate();
    assert!(
        report.contains("1 datagrams dropped: larger than --mtu 1000"),
        "{report}"
    );
}

/// Why the layer-3 link can't be tested here, if it can't.
#[test]
fn a_new_clients_first_datagram_gets_through() {
    // A UDP echo server behind a relay with no impairment: every client's
    // very first datagram must come back (each used to be dropped).
    let echo = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
    let echo_addr = echo.local_addr().unwrap();
    std::thread::spawn(move || {
        let mut buf = [0u8; 2048];
        while let Ok((n, from)) = echo.recv_from(&mut buf) {
            let _ = echo.send_to(&buf[..n], from);
        }
    });
    let to = echo_addr.to_string();
    let (relay, addr) = spawn_relay(&["--listen", "127.0.0.1:0", "--to", &to]);
    for client in 0..5u8 {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        // A dropped datagram never comes back; 5 s only allows for a
        // loaded machine (500 ms timed out once beside busy loops).
        socket
            .set_read_timeout(Some(std::time::Duration::from_secs(5)))
            .unwrap();
        socket.send_to(&[client; 1200], &addr).unwrap();
        let mut buf = [0u8; 2048];
        let (n, _) = socket
            .recv_from(&mut buf)
            .unwrap_or_else(|e| panic!("client {client}'s first datagram: {e}"));
        assert_eq!(&buf[..n], &[client; 1200][..]);
    }
    drop(relay);
}

fn no_link() -> Option<String> {
    if !Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| o.stdout.starts_with(b"0\n"))
    {
        return Some("not root".into());
    }
    if !Path::new("/dev/net/tun").exists() {
        return Some("no /dev/net/tun".into());
    }
    match Command::new("ip").args(["netns", "list"]).output() {
        Ok(o) if o.status.success() => None,
        _ => Some("no network namespaces (`ip netns list` fails)".into()),
    }
}

fn netns_exists(name: &str) -> bool {
    Path::new("/run/netns").join(name).exists()
}

/// Sends `file` over TCP from namespace `a` (10.77.0.1) to `b`; returns what
/// arrived, or `None` (with a note) when there is no python3 to do it.
fn tcp_through(a: &str, b: &str, file: &Path) -> Option<Vec<u8>> {
    const SERVER: &str = "import socket,sys\n\
        s=socket.create_server(('10.77.0.1',4434));print('listening',file=sys.stderr,flush=True)\n\
        c,_=s.accept();c.sendall(open(sys.argv[1],'rb').read());c.close()";
    const CLIENT: &str = "import socket,sys\n\
        c=socket.create_connection(('10.77.0.1',4434))\n\
        while (b:=c.recv(1<<16)):sys.stdout.buffer.write(b)";
    if Command::new("python3").arg("--version").output().is_err() {
        eprintln!("no python3: TCP through the link not tested");
        return None;
    }
    let mut serve = Command::new("ip");
    serve
        .args(["netns", "exec", a, "python3", "-c", SERVER])
        .arg(file);
    let _server = spawn_ready(serve, "listening");
    let got = Command::new("ip")
        .args(["netns", "exec", b, "python3", "-c", CLIENT])
        .output()
        .unwrap();
    assert!(got.status.success(), "{}", stderr(&got));
    Some(got.stdout)
}

#[test]
fn layer3_link_carries_a_transfer_and_cleans_up() {
    if let Some(why) = no_link() {
        eprintln!("skipped: {why}");
        return;
    }
    let prefix = format!("qt{}", std::process::id() % 100_000);
    let (a, b) = (format!("{prefix}-a"), format!("{prefix}-b"));
    let dir = tempdir("quark-netem", "link");
    let data = file(&dir, 500_000);
    let mut up = Command::new(QUARK);
    up.args([
        "link",
        "up",
        "--prefix",
        &prefix,
        "--delay",
        "2ms",
        "--loss",
        "1%",
        "--corrupt",
        "0.5%",
    ]);
    let link = spawn_ready(up, "link up");
    assert!(netns_exists(&a) && netns_exists(&b));
    let mut serve = Command::new("ip");
    serve.args([
        "netns",
        "exec",
        &a,
        QUARK,
        "serve",
        "--listen",
        "10.77.0.1:4433",
        "--root",
    ]);
    serve.arg(&dir);
    let server = spawn_ready(serve, "serving ");
    let got = Command::new("ip")
        .args([
            "netns",
            "exec",
            &b,
            QUARK,
            "get",
            "https://10.77.0.1:4433/f.bin",
        ])
        .args(["-o", "-", "--insecure", "--quiet"])
        .output()
        .unwrap();
    assert!(got.status.success(), "{}", stderr(&got));
    assert_eq!(sha(&got.stdout), sha(&data));
    drop(server);
    // TCP too (TSO super-packets cut, GRO'd back, corrupted segments dropped
    // by the kernel and sent again).
    if let Some(tcp) = tcp_through(&a, &b, &dir.join("f.bin")) {
        assert_eq!(sha(&tcp), sha(&data), "TCP transfer differs");
    }
    let (ok, report) = link.terminate();
    assert!(ok, "{report}");
    assert!(report.contains("removed"), "{report}");
    // The devices' offloads were used both ways: super-packets were cut for
    // the link and segments joined for the receivers.
    let tally = report
        .lines()
        .find_map(|l| l.trim().strip_prefix("offloads: "))
        .unwrap_or_else(|| panic!("no offload line: {report}"));
    let n: Vec<u64> = tally
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert!(n.len() == 4 && n.iter().all(|&x| x > 0), "{tally}");
    assert!(
        !netns_exists(&a) && !netns_exists(&b),
        "namespaces left: {report}"
    );

    // `link down` removes what a killed `link up` left behind.
    Command::new("ip")
        .args(["netns", "add", &a])
        .status()
        .unwrap();
    let down = Command::new(QUARK)
        .args(["link", "down", "--prefix", &prefix])
        .output()
        .unwrap();
    assert!(down.status.success(), "{}", stderr(&down));
    assert!(!netns_exists(&a));
}

#[test]
fn bad_input_is_one_error_line_and_exit_2() {
    let relay = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["relay", "--listen", "127.0.0.1:0", "--to", "127.0.0.1:9"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        v.extend(extra.iter().map(|s| s.to_string()));
        v
    };
    let mut cases: Vec<Vec<String>> = [
        &["--loss", "200%"][..],
        &["--loss", "x"],
        &["--delay", "5"],
        &["--delay=-5ms"],
        &["--jitter", "1 parsec"],
        &["--rate", "fast"],
        &["--queue", "64KB"],
        &["--rate", "10mbit", "--queue", "lots"],
        &["--blackhole", "5s"],
        &["--burst", "1%"],
        &["--reorder", "101%"],
        &["--reorder-depth", "0"],
        &["--duplicate=-1%"],
        &["--corrupt", "1e5"],
        &["--profile", "wifi"],
        &["--profile", "rtt10-loss101"],
        &["--seed=-1"],
    ]
    .iter()
    .map(|extra| relay(extra))
    .collect();
    for v in [
        vec!["relay", "--listen", "nowhere", "--to", "127.0.0.1:9"],
        vec!["relay", "--listen", "127.0.0.1:0", "--to", "localhost"],
        vec!["link", "up", "--profile", "wifi"],
        vec!["link", "up", "--prefix", "a/b"],
        vec!["link", "down", "--prefix", "much-too-long-prefix"],
        vec!["bench", "--net", "wifi"],
        vec!["bench", "--net", "rtt{10,30"],
        vec!["bench", "--net-mode", "carrier-pigeon"],
    ] {
        cases.push(v.into_iter().map(String::from).collect());
    }
    for args in cases {
        let out = Command::new(QUARK).args(&args).output().unwrap();
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{args:?}: {err}");
        assert!(err.starts_with("error: "), "{args:?}: {err}");
    }
}
