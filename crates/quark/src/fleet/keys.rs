//! The fleet's key file.
//!
//! ```text
//! # One key per line: KIND ID HEX (32 bytes, 64 hex digits). '#' starts a comment.
//! # The first line of a kind is its current key; later lines of the same kind
//! # are older keys, still accepted (tokens, tickets). Rotate by adding a new
//! # first line on every server, and drop the oldest line once its tokens and
//! # tickets have expired.
//! reset  1 <64 hex digits>
//! token  2 <64 hex digits>
//! token  1 <64 hex digits>
//! ticket 2 <64 hex digits>
//! ticket 1 <64 hex digits>
//! ```

use std::path::Path;
use std::sync::Arc;

use quark_proto::{EndpointConfig, ServerConfig};

use super::tickets::SharedTicketer;

/// A key's number, unique within its kind (tickets carry it, so the right
/// key opens them).
pub type KeyId = u32;

/// Keys of one kind read at most (the current one and earlier ones).
pub const MAX_KEYS_PER_KIND: usize = 8;

/// Why a key file was refused.
#[derive(Debug, thiserror::Error)]
pub enum KeyFileError {
    /// The file could not be read.
    #[error("cannot read the key file: {0}")]
    Io(#[from] std::io::Error),
    /// A line is not `KIND ID HEX`.
    #[error("key file line {line}: {why}")]
    Line {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A kind is missing.
    #[error("key file has no {0} key")]
    Missing(&'static str),
}

/// The secrets a fleet shares, newest first within each kind.
#[derive(Clone, PartialEq, Eq)]
pub struct KeyFile {
    /// Stateless reset key (only the current one is used: a reset token is
    /// derived afresh for each connection ID).
    pub reset: (KeyId, [u8; 32]),
    /// Address-validation token keys: the first seals, all open.
    pub token: Vec<(KeyId, [u8; 32])>,
    /// Session-ticket keys: the first seals, all open.
    pub ticket: Vec<(KeyId, [u8; 32])>,
}

impl std::fmt::Debug for KeyFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids = |v: &[(KeyId, [u8; 32])]| v.iter().map(|k| k.0).collect::<Vec<_>>();
        f.debug_struct("KeyFile")
            .field("reset", &self.reset.0)
            .field("token", &ids(&self.token))
            .field("ticket", &ids(&self.ticket))
            .finish()
    }
}

impl KeyFile {
    /// Reads and parses `path`.
    pub fn load(path: &Path) -> Result<Self, KeyFileError> {
        Self::parse(&std::fs::read_to_string(path)?)
    }

    /// Parses the text of a key file.
    pub fn parse(text: &str) -> Result<Self, KeyFileError> {
        let mut reset = Vec::new();
        let mut token = Vec::new();
        let mut ticket = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let err = |why| KeyFileError::Line { line: i + 1, why };
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let mut words = line.split_whitespace();
            let (Some(kind), Some(id), Some(hex), None) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                return Err(err("expected KIND ID HEX"));
            };
            let id: KeyId = id.parse().map_err(|_| err("the ID is not a number"))?;
            let key = parse_key(hex).ok_or(err("the key is not 64 hex digits"))?;
            let list = match kind {
                "reset" => &mut reset,
                "token" => &mut token,
                "ticket" => &mut ticket,
                _ => return Err(err("KIND must be reset, token or ticket")),
            };
            if list.iter().any(|&(other, _)| other == id) {
                return Err(err("the ID is used twice for this kind"));
            }
            if list.len() == MAX_KEYS_PER_KIND {
                return Err(err("too many keys of this kind"));
            }
            list.push((id, key));
        }
        Ok(KeyFile {
            reset: *reset.first().ok_or(KeyFileError::Missing("reset"))?,
            token: nonempty(token, "token")?,
            ticket: nonempty(ticket, "ticket")?,
        })
    }

    /// A fresh file's text with one random key of each kind (`quark serve
    /// --write-key-file`).
    pub fn generate() -> String {
        let mut out =
            String::from("# quark fleet keys: KIND ID HEX; the first line of a kind is current.\n");
        for kind in ["reset", "token", "ticket"] {
            let mut key = [0u8; 32];
            rand::Rng::fill(&mut rand::rng(), &mut key);
            let hex: String = key.iter().map(|b| format!("{b:02x}")).collect();
            out.push_str(&format!("{kind} 1 {hex}\n"));
        }
        out
    }

    /// Puts the keys in an endpoint's and a server's configuration: the
    /// reset key, the token keys, and a [`SharedTicketer`] in the TLS config.
    pub fn apply(&self, endpoint: &mut EndpointConfig, server: &mut ServerConfig) {
        endpoint.reset_key = self.reset.1;
        self.apply_server(server);
    }

    /// The server's part of [`KeyFile::apply`] (what a reload can change).
    pub fn apply_server(&self, server: &mut ServerConfig) {
        server.token_key = self.token[0].1;
        server.previous_token_keys = self.token[1..].iter().map(|k| k.1).collect();
        let mut tls = (*server.tls).clone();
        tls.ticketer = Arc::new(SharedTicketer::new(&self.ticket));
        server.tls = Arc::new(tls);
    }
}

fn nonempty(
    v: Vec<(KeyId, [u8; 32])>,
    kind: &'static str,
) -> Result<Vec<(KeyId, [u8; 32])>, KeyFileError> {
    if v.is_empty() {
        return Err(KeyFileError::Missing(kind));
    }
    Ok(v)
}

fn parse_key(hex: &str) -> Option<[u8; 32]> {
    if hex.len() != 64 || !hex.is_ascii() {
        return None;
    }
    let mut key = [0u8; 32];
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: &str = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f";
    const B: &str = "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100";

    #[test]
    fn parses_kinds_in_order_with_comments() {
        let text =
            format!("# comment\nreset 1 {A}\n\ntoken 2 {B}  # new\ntoken 1 {A}\nticket 7 {B}\n");
        let keys = KeyFile::parse(&text).unwrap();
        assert_eq!(keys.reset.0, 1);
        assert_eq!(keys.reset.1[1], 1);
        assert_eq!(
            keys.token.iter().map(|k| k.0).collect::<Vec<_>>(),
            vec![2, 1]
        );
        assert_eq!(keys.ticket[0].0, 7);
        assert_eq!(keys.ticket[0].1[0], 0xff);
        // Debug shows ids, never keys.
        assert!(!format!("{keys:?}").contains("ffee"));
    }

    #[test]
    fn refuses_bad_files() {
        let bad = [
            format!("reset 1 {A}\ntoken 1 {A}\n"),
            format!("reset 1 {A}\ntoken 1 {A}\nticket 1 {}\n", &A[..62]),
            format!("reset 1 {A}\ntoken 1 {A}\nticket x {A}\n"),
            format!("reset 1 {A}\ntoken 1 {A}\ntoken 1 {B}\nticket 1 {A}\n"),
            format!("reset 1 {A}\ntoken 1 {A}\nticket 1 {A} extra\n"),
            format!("reset 1 {A}\ntoken 1 {A}\nsecret 1 {A}\n"),
            format!("reset 1 {A}\ntoken 1 {A}\nticket 1 {}zz\n", &A[..62]),
        ];
        for text in bad {
            assert!(KeyFile::parse(&text).is_err(), "{text}");
        }
        let many: String = (0..9).map(|i| format!("ticket {i} {A}\n")).collect();
        let text = format!("reset 1 {A}\ntoken 1 {A}\n{many}");
        assert!(KeyFile::parse(&text).is_err());
    }

    #[test]
    fn generated_files_parse() {
        let keys = KeyFile::parse(&KeyFile::generate()).unwrap();
        assert_ne!(keys.token[0].1, keys.ticket[0].1);
    }
}
