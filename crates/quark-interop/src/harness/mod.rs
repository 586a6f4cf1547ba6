//! The interop test harness: start a server of one implementation, run
//! clients of another against it, compare every downloaded file by SHA-256.
//!
//! One [`Case`] = one server process and a list of [`Run`]s, each one client
//! process (one connection). Cases run one at a time within a process.

mod case;
pub mod certs;
pub mod corpus;
pub mod env;
pub mod peers;
pub mod process;
pub mod xdp;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::{Context, anyhow, bail};

pub use self::case::{Case, Fetch, Run};
use self::certs::Certs;
use self::corpus::{Corpus, FileSet};
use self::env::{Env, Unavailable, optional};
use self::peers::{ClientSpec, ServerSpec};
use self::process::{Guard, Start, tail, wait_listening};
use crate::quinn_hq::tls::Cipher;

/// Longest a server may take to start listening.
const START_LIMIT: Duration = Duration::from_secs(60);
/// Longest one client run may take: a hang guard, far above any normal run.
const CLIENT_LIMIT: Duration = Duration::from_secs(120);
/// Attempts at starting a server when its port was taken in the meantime.
const START_ATTEMPTS: usize = 5;

/// How a case ended, when it did not fail.
#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Every run did what it should.
    Passed,
    /// A peer's runtime is missing and `QUARK_INTEROP_OPTIONAL=1`.
    Skipped(String),
}

/// Runs `case` with its scratch files under `work`. Fails with both peers'
/// logs when anything goes wrong; a missing runtime fails too unless
/// `QUARK_INTEROP_OPTIONAL=1`, which turns it into [`Outcome::Skipped`].
pub fn run_case(env: &Env, corpus: &Corpus, work: &Path, case: &Case) -> anyhow::Result<Outcome> {
    static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());

    let name = case.name();
    let dir = work.join(&name);
    if let Some(Unavailable(why)) = missing_runtime(env, case, &dir) {
        if optional() {
            return Ok(Outcome::Skipped(format!("{name}: {why}")));
        }
        bail!("{name}: {why} (set QUARK_INTEROP_OPTIONAL=1 to skip instead)");
    }
    let bed = match case.xdp.then(|| xdp::Bed::create(&name)).transpose() {
        Ok(bed) => bed,
        Err(why) => {
            return Ok(Outcome::Skipped(format!(
                "{name}: no AF_XDP test bed: {why}"
            )));
        }
    };
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).with_context(|| dir.display().to_string())?;
    let certs = Certs::generate(&dir)?;

    let (mut server, addr) = start_server(env, corpus, case, &certs, &dir, bed.as_ref())?;
    for (i, run) in case.runs.iter().enumerate() {
        let started = Instant::now();
        let result = client_run(
            env,
            corpus,
            case,
            run,
            Served {
                addr,
                bed: bed.as_ref(),
            },
            &certs,
            &dir.join(format!("run-{i}")),
        );
        let elapsed = started.elapsed();
        if let Some(status) = server.try_wait()? {
            bail!(
                "{name}: the {} server exited ({status}) during run {i}\n--- server log ---\n{}",
                case.server.name,
                tail(&server.output(), 40)
            );
        }
        match result {
            Ok(()) => println!(
                "{name}: run {i} {} ok in {:.2} s",
                describe(run),
                elapsed.as_secs_f64()
            ),
            Err(e) => bail!(
                "{name}: run {i} ({}) failed: {e:#}\n--- {} server log ({}) ---\n{}",
                describe(run),
                case.server.name,
                server.log.display(),
                tail(&server.output(), 40)
            ),
        }
    }
    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(Outcome::Passed)
}

/// Building both command lines finds a missing runtime before any work.
fn missing_runtime(env: &Env, case: &Case, dir: &Path) -> Option<Unavailable> {
    let certs = Certs {
        cert: dir.join("cert.pem"),
        key: dir.join("key.pem"),
    };
    let server = ServerSpec {
        listen: (Ipv4Addr::LOCALHOST, 0).into(),
        root: dir,
        certs: &certs,
        ciphers: &[],
        retry: false,
    };
    let client = ClientSpec {
        urls: &[],
        out: dir,
        ca: &certs.cert,
        ciphers: &[],
        quic_v2: false,
    };
    (case.server.server)(env, &server)
        .err()
        .or_else(|| (case.client.client)(env, &client).err())
}

fn describe(run: &Run) -> String {
    let what = match run.fetch {
        Fetch::Files(set) => set.label().to_string(),
        Fetch::Missing => "missing file".into(),
        Fetch::Traversal => "path traversal".into(),
        Fetch::Refused => "refused cipher suite".into(),
    };
    match run.cipher {
        Some(c) => format!("{what} [{}]", c.arg()),
        None => what,
    }
}

fn start_server(
    env: &Env,
    corpus: &Corpus,
    case: &Case,
    certs: &Certs,
    dir: &Path,
    bed: Option<&xdp::Bed>,
) -> anyhow::Result<(Guard, SocketAddr)> {
    let ip = bed.map_or(Ipv4Addr::LOCALHOST, xdp::Bed::server_ip);
    for attempt in 1..=START_ATTEMPTS {
        let addr: SocketAddr = (ip, process::free_port()?).into();
        let spec = ServerSpec {
            listen: addr,
            root: &corpus.root,
            certs,
            ciphers: &case.server_ciphers,
            retry: case.retry,
        };
        let mut cmd = (case.server.server)(env, &spec)?;
        if let Some(bed) = bed {
            cmd = bed.server(&cmd, std::ptr::eq(case.server, &peers::QUARK));
        }
        let log = dir.join(format!("server-{attempt}.log"));
        let mut server = Guard::spawn(cmd, &log)?;
        match wait_listening(&mut server, case.server.ready, addr, START_LIMIT)? {
            Start::Ready => return Ok((server, addr)),
            Start::Exited(_) if server.output().to_lowercase().contains("in use") => continue,
            Start::Exited(status) => {
                bail!(
                    "the {} server exited ({status}) before listening:\n{}",
                    case.server.name,
                    server.output()
                )
            }
            Start::TimedOut => bail!(
                "the {} server did not listen within {START_LIMIT:?}:\n{}",
                case.server.name,
                server.output()
            ),
        }
    }
    bail!(
        "could not start the {} server: ports kept being taken",
        case.server.name
    )
}

/// Where the case's server runs: its address, and the namespaces when the case
/// crosses them.
#[derive(Clone, Copy)]
struct Served<'a> {
    addr: SocketAddr,
    bed: Option<&'a xdp::Bed>,
}

fn client_run(
    env: &Env,
    corpus: &Corpus,
    case: &Case,
    run: &Run,
    served: Served<'_>,
    certs: &Certs,
    dir: &Path,
) -> anyhow::Result<()> {
    let Served { addr, bed } = served;
    let out = dir.join("out");
    std::fs::create_dir_all(&out)?;
    let (paths, expect_success): (Vec<String>, bool) = match run.fetch {
        Fetch::Files(set) => (set.names(), true),
        Fetch::Missing => (vec!["no-such-file.bin".into()], false),
        Fetch::Refused => (FileSet::Small.names(), false),
        Fetch::Traversal => {
            let secret = corpus
                .secret
                .file_name()
                .ok_or_else(|| anyhow!("corpus secret has no name"))?;
            (vec![format!("../{}", secret.to_string_lossy())], false)
        }
    };
    let urls: Vec<String> = paths
        .iter()
        .map(|p| format!("https://{}:{}/{p}", xdp::host(addr.ip()), addr.port()))
        .collect();
    let ciphers: Vec<Cipher> = run.cipher.into_iter().collect();
    let spec = ClientSpec {
        urls: &urls,
        out: &out,
        ca: &certs.cert,
        ciphers: &ciphers,
        quic_v2: case.quic_v2,
    };
    let mut cmd = (case.client.client)(env, &spec)?;
    if let Some(bed) = bed {
        cmd = bed.client(&cmd, std::ptr::eq(case.client, &peers::QUARK));
    }
    let mut client = Guard::spawn(cmd, &dir.join("client.log"))?;
    let status = client.wait_for(CLIENT_LIMIT)?;
    let log = client.output();
    let with_log = |msg: String| {
        anyhow!(
            "{msg}\n--- {} client log ---\n{}",
            case.client.name,
            tail(&log, 40)
        )
    };
    let Some(status) = status else {
        return Err(with_log(format!(
            "the client did not finish within {CLIENT_LIMIT:?} and was killed"
        )));
    };
    if !expect_success {
        if status.success() {
            return Err(with_log(format!(
                "the client succeeded at fetching {paths:?}, which must fail"
            )));
        }
        if out.join("secret.txt").exists() {
            return Err(with_log(
                "the server handed out a file outside its root".into(),
            ));
        }
        let _ = std::fs::remove_dir_all(dir);
        return Ok(());
    }
    if !status.success() {
        return Err(with_log(format!("the client failed ({status})")));
    }
    if let Some(cipher) = run.cipher {
        check_cipher_mentions(&log, cipher).map_err(with_log)?;
    }
    // quark get says "QUIC v2", quicgo-hq "quic-version: v2".
    if case.quic_v2 && !log.contains("QUIC v2") && !log.contains("quic-version: v2") {
        return Err(with_log("the client does not report QUIC v2".into()));
    }
    corpus
        .verify(&out, &paths)
        .map_err(|e| with_log(format!("downloads differ from the originals:\n{e}")))?;
    let _ = std::fs::remove_dir_all(dir);
    Ok(())
}

/// Peers that log the negotiated suite must name the one asked for.
fn check_cipher_mentions(log: &str, want: Cipher) -> Result<(), String> {
    let log = log.to_uppercase();
    match Cipher::ALL
        .into_iter()
        .find(|c| *c != want && log.contains(c.marker()))
    {
        Some(other) => Err(format!(
            "asked for {} but the client log mentions {}",
            want.marker(),
            other.marker()
        )),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cipher_mentions() {
        assert!(
            check_cipher_mentions("cipher-suite: TLS_AES_256_GCM_SHA384", Cipher::Aes256).is_ok()
        );
        assert!(
            check_cipher_mentions("[TLS13_CHACHA20_POLY1305_SHA256]", Cipher::Chacha20).is_ok()
        );
        assert!(check_cipher_mentions("no mention at all", Cipher::Aes128).is_ok());
        assert!(
            check_cipher_mentions("cipher-suite: TLS_AES_128_GCM_SHA256", Cipher::Aes256).is_err()
        );
    }

    #[test]
    fn case_names() {
        let case = Case::new(&peers::QUINN, &peers::QUIC_GO)
            .server_cipher(Cipher::Chacha20)
            .retry();
        assert_eq!(case.name(), "quinn-to-quic-go-chacha20-retry");
        assert_eq!(Run::standard().len(), 6);
    }
}
