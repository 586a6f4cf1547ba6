//! Address-validation tokens for future connections (RFC 9000 §8.1.3). A
//! server seals one NEW_TOKEN token for each connection that asks
//! (`CidEvent::NewTokenWanted`) and honours it once, from the address it was
//! given to, within `ServerConfig::new_token_lifetime`. A client keeps the
//! tokens its connections receive in its configuration's store, by server
//! name, and puts one in the Initials of its next connection there.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use rand::Rng;

use super::{ConnectionHandle, Endpoint};
use crate::config::ServerConfig;
use crate::crypto::tokens::TokenContents;
use crate::packet::PartialDecode;
use crate::token_store::{AddressToken, TokenStore};

/// Tokens remembered as used, per period of the token lifetime: past it, a
/// further token is not honoured (the client is treated as unvalidated), so
/// the log holds at most two periods' worth, ~1.3 MiB (SECURITY.md).
pub const MAX_USED_TOKENS: usize = 1 << 16;

/// NEW_TOKEN tokens already used, by the last 8 bytes of their AEAD tag
/// (unforgeable, so a peer cannot aim entries at the table). An entry stays
/// at least one lifetime after its use, by when its token has expired.
//= https://www.rfc-editor.org/rfc/rfc9000#section-8.1.4
//# Attackers could replay tokens to use servers as amplifiers in DDoS
//# attacks.  To protect against such attacks, servers MUST ensure that
//# replay of tokens is prevented or limited.
#[derive(Default)]
pub(super) struct UsedTokens {
    current: HashSet<u64>,
    previous: HashSet<u64>,
    /// Token time the current period began.
    since: Duration,
}

impl UsedTokens {
    fn rotate(&mut self, now: Duration, lifetime: Duration) {
        let age = now.saturating_sub(self.since);
        if age >= lifetime {
            self.previous = if age >= 2 * lifetime {
                HashSet::new()
            } else {
                std::mem::take(&mut self.current)
            };
            self.current = HashSet::new();
            self.since = now;
        }
    }

    /// Whether a token with `tag` may be honoured now: not used before, and
    /// room to remember it.
    fn fresh(&mut self, now: Duration, lifetime: Duration, tag: u64) -> bool {
        self.rotate(now, lifetime);
        self.current.len() < MAX_USED_TOKENS
            && !self.current.contains(&tag)
            && !self.previous.contains(&tag)
    }
}

/// The replay key of a token: the last 8 bytes of its tag.
fn tag_of(token: &[u8]) -> u64 {
    let mut tail = [0; 8];
    if let Some(t) = token.len().checked_sub(8).and_then(|at| token.get(at..)) {
        tail.copy_from_slice(t);
    }
    u64::from_le_bytes(tail)
}

/// Where a client connection's tokens go: its configuration's store, under
/// the server name it connected to.
pub(super) struct TokenSink {
    store: Arc<dyn TokenStore>,
    server_name: Box<str>,
}

impl TokenSink {
    /// Where a new client connection to `server_name` keeps its tokens.
    pub(super) fn new(store: &Arc<dyn TokenStore>, server_name: &str) -> Box<Self> {
        Box::new(TokenSink {
            store: store.clone(),
            server_name: server_name.into(),
        })
    }

    /// A token for that connection's Initials, taken from the store.
    pub(super) fn take(&self) -> Option<AddressToken> {
        self.store.take(&self.server_name)
    }
}

/// What the token of a client's first Initial is worth.
pub(super) enum TokenCheck {
    /// None, or none of ours that holds (treated as no token).
    Unvalidated,
    /// A Retry token of ours that fails: the client is not asked again.
    BadRetry,
    /// A Retry token for this Initial: the original destination and Retry
    /// source connection IDs.
    Retry(crate::cid::ConnectionId, crate::cid::ConnectionId),
    /// A NEW_TOKEN token, fresh and not used before (its replay key).
    NewToken(u64),
}

impl Endpoint {
    /// Tell the endpoint the wall-clock time at `now` (time since the Unix
    /// epoch): tokens carry their issue time by it, so that they are judged
    /// rightly by a restarted server or another of a fleet sharing the token
    /// key. Without it, token times count from the endpoint's first datagram.
    pub fn set_wall_clock(&mut self, now: Instant, since_unix_epoch: Duration) {
        self.wall_clock = Some((now, since_unix_epoch));
    }

    /// The time tokens are sealed and judged by.
    pub(super) fn token_time(&self, now: Instant) -> Duration {
        match self.wall_clock {
            Some((at, wall)) => match now.checked_duration_since(at) {
                Some(after) => wall + after,
                None => wall.saturating_sub(at - now),
            },
            None => self
                .epoch
                .map_or(Duration::ZERO, |e| now.saturating_duration_since(e)),
        }
    }

    /// Judge the token of a client's first Initial `pd` from `remote`.
    pub(super) fn check_token(
        &mut self,
        now: Instant,
        remote: SocketAddr,
        pd: &PartialDecode,
        token: &[u8],
        server: &ServerConfig,
    ) -> TokenCheck {
        if token.is_empty() {
            return TokenCheck::Unvalidated;
        }
        let time = self.token_time(now);
        let opened = self.token_key.as_ref().and_then(|k| k.open(remote, token));
        match opened {
            Some(TokenContents {
                retry: Some((orig, retry_scid)),
                issued,
            }) => {
                let fresh = time.saturating_sub(issued) <= server.retry_token_lifetime;
                if retry_scid == pd.dst_cid && fresh {
                    TokenCheck::Retry(orig, retry_scid)
                } else {
                    TokenCheck::BadRetry
                }
            }
            Some(TokenContents {
                retry: None,
                issued,
            }) => {
                let lifetime = server.new_token_lifetime;
                let tag = tag_of(token);
                if time.saturating_sub(issued) <= lifetime
                    && self.used_tokens.fresh(time, lifetime, tag)
                {
                    TokenCheck::NewToken(tag)
                } else {
                    //= https://www.rfc-editor.org/rfc/rfc9000#section-8.1.3
                    //# If the token is invalid, then the server SHOULD proceed
                    //# as if the client did not have a validated address,
                    //# including potentially sending a Retry packet.
                    TokenCheck::Unvalidated
                }
            }
            None if crate::crypto::tokens::is_retry_token(token) => TokenCheck::BadRetry,
            None => TokenCheck::Unvalidated,
        }
    }

    /// A connection kept with the NEW_TOKEN token `tag`: it is used.
    pub(super) fn spend_token(&mut self, tag: u64) {
        self.used_tokens.current.insert(tag);
    }

    /// Seal the NEW_TOKEN token connection `h` asked for at `at`.
    pub(super) fn give_new_token(&mut self, h: ConnectionHandle, at: Instant) {
        let lifetime = self
            .server
            .as_ref()
            .map_or(Duration::ZERO, |s| s.new_token_lifetime);
        let issued = self.token_time(at);
        let mut nonce = [0u8; 12];
        self.rng.fill(&mut nonce);
        let Some(conn) = self.conns.get_mut(h.0) else {
            return;
        };
        let token = self
            .token_key
            .as_ref()
            .filter(|_| !lifetime.is_zero())
            .map(|key| {
                let contents = TokenContents {
                    retry: None,
                    issued,
                };
                key.seal(conn.remote_address(), &contents, nonce)
            });
        conn.give_new_token(token);
    }

    /// Client connection `h` received `token`: into its store.
    pub(super) fn keep_token(&mut self, h: ConnectionHandle, token: AddressToken) {
        if let Some(sink) = &self.owned[h.0].token_sink {
            sink.store.insert(&sink.server_name, token);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn used_tokens_are_remembered_for_a_lifetime_and_bounded() {
        let day = Duration::from_secs(86_400);
        let mut used = UsedTokens::default();
        let t0 = Duration::from_secs(1_000_000);
        assert!(used.fresh(t0, day, 7));
        used.current.insert(7);
        assert!(!used.fresh(t0 + day / 2, day, 7));
        // One rotation later it is still known; two, and a token used at t0
        // has expired anyway.
        assert!(!used.fresh(t0 + day + Duration::from_secs(1), day, 7));
        assert!(used.fresh(t0 + 3 * day, day, 7));
        // Full: nothing more is honoured until the next period.
        let mut full = UsedTokens::default();
        full.current.extend(0..MAX_USED_TOKENS as u64);
        assert!(!full.fresh(Duration::ZERO, day, u64::MAX));
        assert!(full.fresh(day, day, u64::MAX));
        assert_eq!(tag_of(&[1, 2, 3]), 0);
        assert_eq!(tag_of(&[9, 1, 0, 0, 0, 0, 0, 0, 0]), 1);
    }
}
