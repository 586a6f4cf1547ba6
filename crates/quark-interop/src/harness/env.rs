//! Where the peers' programs are, and whether their runtimes exist.

use std::fmt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;

/// A peer whose program or runtime is not installed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unavailable(pub String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Unavailable {}

/// Locations of everything the peers need.
///
/// Overrides: `QUARK_BIN` (the quark binary), `QUARK_INTEROP_PYTHON` (a Python
/// with aioquic), `QUICGO_HQ_BIN` (the quic-go peer), `CARGO_TARGET_DIR`.
#[derive(Debug, Clone)]
pub struct Env {
    /// The repository root (holds `interop/` and `.venv/`).
    pub repo: PathBuf,
    /// The cargo target directory (holds `interop/quicgo-hq`).
    pub target: PathBuf,
    /// The `quinn-hq` binary.
    pub quinn_hq: PathBuf,
}

impl Env {
    /// The environment of this workspace, with the `quinn-hq` binary cargo
    /// built for the tests (`env!("CARGO_BIN_EXE_quinn-hq")`).
    pub fn new(quinn_hq: impl Into<PathBuf>) -> Env {
        let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        let repo = repo.canonicalize().unwrap_or(repo);
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo.join("target"), PathBuf::from);
        Env {
            repo,
            target,
            quinn_hq: quinn_hq.into(),
        }
    }

    /// The `quark` binary: `QUARK_BIN`, else the one built next to
    /// `quinn-hq` (same profile), else the other profile's.
    pub fn quark(&self) -> Result<PathBuf, Unavailable> {
        if let Some(bin) = std::env::var_os("QUARK_BIN") {
            let bin = PathBuf::from(bin);
            return executable(&bin).then_some(bin.clone()).ok_or_else(|| {
                Unavailable(format!(
                    "QUARK_BIN={} is not an executable file",
                    bin.display()
                ))
            });
        }
        let mut candidates = Vec::new();
        if let Some(profile) = self.quinn_hq.parent() {
            candidates.push(profile.join("quark"));
        }
        candidates.extend(["debug", "release"].map(|p| self.target.join(p).join("quark")));
        candidates.into_iter().find(|c| executable(c)).ok_or_else(|| {
            Unavailable(format!(
                "no quark binary in {}/{{debug,release}}: run `cargo build -p quark-cli` (or set QUARK_BIN)",
                self.target.display()
            ))
        })
    }

    /// A Python interpreter that can import aioquic.
    pub fn python(&self) -> Result<PathBuf, Unavailable> {
        static CHECKED: OnceLock<Result<PathBuf, Unavailable>> = OnceLock::new();
        CHECKED
            .get_or_init(|| {
                let python = std::env::var_os("QUARK_INTEROP_PYTHON")
                    .map_or_else(|| self.repo.join(".venv/bin/python"), PathBuf::from);
                let ok = Command::new(&python)
                    .args(["-c", "import aioquic"])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()
                    .is_ok_and(|s| s.success());
                ok.then_some(python.clone()).ok_or_else(|| {
                    Unavailable(format!(
                        "{} cannot import aioquic: run interop/setup.sh (or set QUARK_INTEROP_PYTHON)",
                        python.display()
                    ))
                })
            })
            .clone()
    }

    /// The directory of the aioquic peer's scripts.
    pub fn aioquic_dir(&self) -> PathBuf {
        self.repo.join("interop/aioquic")
    }

    /// The quic-go peer, built by `interop/setup.sh`.
    pub fn quicgo(&self) -> Result<PathBuf, Unavailable> {
        let bin = std::env::var_os("QUICGO_HQ_BIN")
            .map_or_else(|| self.target.join("interop/quicgo-hq"), PathBuf::from);
        executable(&bin).then_some(bin.clone()).ok_or_else(|| {
            Unavailable(format!(
                "no quic-go peer at {}: run interop/setup.sh (or set QUICGO_HQ_BIN)",
                bin.display()
            ))
        })
    }
}

/// Whether missing peers are skipped (`QUARK_INTEROP_OPTIONAL=1`) instead of
/// failing the test.
pub fn optional() -> bool {
    std::env::var("QUARK_INTEROP_OPTIONAL").is_ok_and(|v| v == "1")
}

fn executable(path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        path.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    }
    #[cfg(not(unix))]
    {
        path.is_file()
    }
}
