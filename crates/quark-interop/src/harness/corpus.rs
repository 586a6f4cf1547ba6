//! The files the servers serve: made once, deterministic, hashed on load.

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{self, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// Bump when the generated content changes, so old corpora are remade.
const VERSION: &str = "quark-interop corpus v1";

/// Number of files in [`FileSet::Many`].
pub const MANY: usize = 100;

/// A group of files fetched together on one connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileSet {
    /// One 1 KiB file.
    Small,
    /// One 1 MiB file.
    Medium,
    /// One 50 MiB file (plus 7 bytes, so the last packet is a short one).
    Large,
    /// [`MANY`] files of 1 to 10 KiB, fetched in parallel.
    Many,
}

impl FileSet {
    /// Every set.
    pub const ALL: [FileSet; 4] = [
        FileSet::Small,
        FileSet::Medium,
        FileSet::Large,
        FileSet::Many,
    ];

    /// The names of the files (paths under the root, without the leading `/`).
    pub fn names(self) -> Vec<String> {
        match self {
            Self::Small => vec!["1k.bin".into()],
            Self::Medium => vec!["1m.bin".into()],
            Self::Large => vec!["50m.bin".into()],
            Self::Many => (0..MANY).map(many_name).collect(),
        }
    }

    /// A short label for logs.
    pub fn label(self) -> &'static str {
        match self {
            Self::Small => "1 KiB",
            Self::Medium => "1 MiB",
            Self::Large => "50 MiB",
            Self::Many => "100 x 1-10 KiB",
        }
    }
}

fn many_name(i: usize) -> String {
    format!("small-{i:03}.bin")
}

/// Every file of the corpus and its size.
fn layout() -> Vec<(String, u64)> {
    let mut files = vec![
        ("1k.bin".to_string(), 1024),
        ("1m.bin".into(), 1 << 20),
        ("50m.bin".into(), (50 << 20) + 7),
    ];
    let mut rng = Rng::new(0x5eed);
    for i in 0..MANY {
        files.push((many_name(i), 1000 + rng.next() % 9241)); // 1000..=10240 bytes
    }
    files
}

/// The served directory and the SHA-256 of every file in it.
#[derive(Debug)]
pub struct Corpus {
    /// The directory servers get as `--root`.
    pub root: PathBuf,
    /// A file just outside the root, which no server may hand out.
    pub secret: PathBuf,
    hashes: BTreeMap<String, [u8; 32]>,
}

impl Corpus {
    /// Makes the corpus under `base` (reusing one a previous run made) and
    /// hashes the files as they are on disk.
    pub fn create(base: &Path) -> io::Result<Corpus> {
        let root = base.join("www");
        let secret = base.join("secret.txt");
        std::fs::create_dir_all(base)?;
        std::fs::write(&secret, b"outside the served root\n")?;
        let stamp = root.join(".complete");
        if std::fs::read_to_string(&stamp).ok().as_deref() != Some(VERSION) {
            // Build aside and rename, so concurrent runs never see half a corpus.
            let tmp = base.join(format!("www.tmp-{}", std::process::id()));
            let _ = std::fs::remove_dir_all(&tmp);
            std::fs::create_dir_all(&tmp)?;
            for (name, size) in layout() {
                write_file(&tmp.join(&name), size, seed(&name))?;
            }
            std::fs::write(tmp.join(".complete"), VERSION)?;
            let _ = std::fs::remove_dir_all(&root);
            if std::fs::rename(&tmp, &root).is_err() {
                // Another run won the race; its corpus is identical.
                std::fs::remove_dir_all(&tmp)?;
            }
        }
        let mut hashes = BTreeMap::new();
        for (name, _) in layout() {
            hashes.insert(name.clone(), sha256_file(&root.join(&name))?);
        }
        Ok(Corpus {
            root,
            secret,
            hashes,
        })
    }

    /// The SHA-256 of a served file.
    pub fn hash(&self, name: &str) -> Option<&[u8; 32]> {
        self.hashes.get(name)
    }

    /// Checks that `dir` holds exactly the files `names`, each with the
    /// content of the served original.
    pub fn verify(&self, dir: &Path, names: &[String]) -> Result<(), String> {
        let mut problems = Vec::new();
        for name in names {
            let Some(want) = self.hash(name) else {
                problems.push(format!("{name}: not in the corpus"));
                continue;
            };
            match sha256_file(&dir.join(name)) {
                Ok(got) if &got == want => {}
                Ok(got) => problems.push(format!(
                    "{name}: SHA-256 {} (size {}), want {} (size {})",
                    hex::encode(got),
                    size(&dir.join(name)),
                    hex::encode(want),
                    size(&self.root.join(name)),
                )),
                Err(e) => problems.push(format!("{name}: {e}")),
            }
        }
        if let Ok(entries) = std::fs::read_dir(dir) {
            for entry in entries.flatten() {
                let name = entry.file_name().to_string_lossy().into_owned();
                if !names.contains(&name) {
                    problems.push(format!("{name}: unexpected file"));
                }
            }
        }
        if problems.is_empty() {
            Ok(())
        } else {
            Err(problems.join("\n"))
        }
    }
}

fn size(path: &Path) -> String {
    path.metadata()
        .map_or_else(|e| e.to_string(), |m| m.len().to_string())
}

/// SHA-256 of a file's content.
pub fn sha256_file(path: &Path) -> io::Result<[u8; 32]> {
    let mut file = File::open(path)
        .map_err(|e| io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 256 * 1024];
    loop {
        match file.read(&mut buf)? {
            0 => break,
            n => hasher.update(&buf[..n]),
        }
    }
    Ok(hasher.finalize().into())
}

fn seed(name: &str) -> u64 {
    // FNV-1a: a stable seed per file name.
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
    })
}

fn write_file(path: &Path, size: u64, seed: u64) -> io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut rng = Rng::new(seed);
    let mut left = size;
    let mut block = [0u8; 8192];
    while left > 0 {
        for chunk in block.chunks_exact_mut(8) {
            chunk.copy_from_slice(&rng.next().to_le_bytes());
        }
        let n = left.min(block.len() as u64) as usize;
        out.write_all(&block[..n])?;
        left -= n as u64;
    }
    out.flush()
}

/// xorshift64*: fast, incompressible-looking test data.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn layout_sizes() {
        let files = layout();
        assert_eq!(files.len(), 3 + MANY);
        assert!(files[3..].iter().all(|(_, s)| (1000..=10240).contains(s)));
        let names: std::collections::HashSet<_> = files.iter().map(|(n, _)| n).collect();
        assert_eq!(names.len(), files.len(), "names are unique");
    }

    #[test]
    fn verify_catches_corruption_missing_and_extra_files() {
        let base =
            std::env::temp_dir().join(format!("quark-interop-corpus-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        let corpus = Corpus::create(&base).unwrap();
        let out = base.join("out");
        std::fs::create_dir_all(&out).unwrap();
        let names = FileSet::Small.names();
        assert!(
            corpus.verify(&out, &names).unwrap_err().contains("1k.bin"),
            "missing file"
        );
        std::fs::copy(corpus.root.join("1k.bin"), out.join("1k.bin")).unwrap();
        corpus.verify(&out, &names).unwrap();
        let mut bytes = std::fs::read(out.join("1k.bin")).unwrap();
        bytes[512] ^= 1;
        std::fs::write(out.join("1k.bin"), &bytes).unwrap();
        assert!(
            corpus.verify(&out, &names).unwrap_err().contains("SHA-256"),
            "one flipped bit"
        );
        bytes[512] ^= 1;
        bytes.pop();
        std::fs::write(out.join("1k.bin"), &bytes).unwrap();
        assert!(corpus.verify(&out, &names).is_err(), "one byte short");
        std::fs::copy(corpus.root.join("1k.bin"), out.join("1k.bin")).unwrap();
        std::fs::write(out.join("secret.txt"), b"x").unwrap();
        assert!(
            corpus
                .verify(&out, &names)
                .unwrap_err()
                .contains("unexpected"),
            "extra file"
        );
        // A second create reuses the corpus and hashes the same.
        let again = Corpus::create(&base).unwrap();
        assert_eq!(again.hash("50m.bin"), corpus.hash("50m.bin"));
        assert_eq!(
            std::fs::metadata(corpus.root.join("50m.bin"))
                .unwrap()
                .len(),
            (50 << 20) + 7
        );
        std::fs::remove_dir_all(&base).unwrap();
    }
}
