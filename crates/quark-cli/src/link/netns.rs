//! The two network namespaces of `quark link` and the `ip` commands that build
//! and remove them.

use std::process::Command;

use anyhow::{Context, bail};

/// Namespaces and devices are named `{prefix}-a` and `{prefix}-b`.
pub(crate) fn names(prefix: &str) -> (String, String) {
    (format!("{prefix}-a"), format!("{prefix}-b"))
}

/// Checks a prefix gives valid namespace and interface names (≤ 15 bytes).
pub(crate) fn check_prefix(prefix: &str) -> anyhow::Result<()> {
    let ok = !prefix.is_empty()
        && prefix.len() <= 13
        && prefix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
    if !ok {
        bail!("--prefix '{prefix}' must be 1 to 13 of a-z, 0-9, - and _");
    }
    Ok(())
}

/// Runs `ip ARGS`, failing with its stderr.
pub(crate) fn ip(args: &[&str]) -> anyhow::Result<()> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .context("cannot run `ip` (iproute2)")?;
    if !out.status.success() {
        bail!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Whether the named namespace exists.
pub(crate) fn exists(ns: &str) -> bool {
    std::path::Path::new("/run/netns").join(ns).exists()
}

/// Deletes both namespaces of `prefix` (and with them any device inside);
/// returns the ones that existed.
pub(crate) fn delete(prefix: &str) -> Vec<String> {
    let (a, b) = names(prefix);
    let mut deleted = Vec::new();
    for ns in [a, b] {
        if exists(&ns) && ip(&["netns", "delete", &ns]).is_ok() {
            deleted.push(ns);
        }
    }
    deleted
}

/// Both namespaces; deleted when dropped (on every exit path, panics included).
pub(crate) struct Namespaces {
    prefix: String,
}

impl Namespaces {
    /// Creates `{prefix}-a` and `{prefix}-b`, removing leftovers of an earlier run.
    pub(crate) fn create(prefix: &str) -> anyhow::Result<Namespaces> {
        delete(prefix);
        let guard = Namespaces {
            prefix: prefix.to_string(),
        };
        let (a, b) = names(prefix);
        ip(&["netns", "add", &a])?;
        ip(&["netns", "add", &b])?;
        Ok(guard)
    }

    /// Moves device `dev` (in this namespace) into `ns` and gives it `local`,
    /// with `peer` reachable through it.
    pub(crate) fn attach(
        &self,
        dev: &str,
        ns: &str,
        local: &str,
        peer: &str,
    ) -> anyhow::Result<()> {
        ip(&["link", "set", dev, "netns", ns])?;
        ip(&["-n", ns, "link", "set", "lo", "up"])?;
        // No IPv6 link-local address: nothing but the test traffic crosses the link.
        let _ = ip(&["-n", ns, "link", "set", dev, "addrgenmode", "none"]);
        ip(&["-n", ns, "addr", "add", local, "peer", peer, "dev", dev])?;
        ip(&["-n", ns, "link", "set", dev, "up"])?;
        Ok(())
    }
}

impl Drop for Namespaces {
    fn drop(&mut self) {
        delete(&self.prefix);
    }
}
