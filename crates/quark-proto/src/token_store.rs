//! A client's address-validation tokens from NEW_TOKEN frames (RFC 9000
//! §8.1.3), kept for its next connection to the same server: with one in its
//! first Initial, the server may skip a Retry and its 3x amplification limit.

use std::collections::{HashMap, VecDeque};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// Longest token kept: it rides in every Initial of the next connection,
/// beside the ClientHello, so a server's oversized token is not used.
pub const MAX_TOKEN_LEN: usize = 512;

/// Tokens kept per server: one for the next connection and one spare for a
/// second made before the first's own token arrives.
pub const TOKENS_PER_SERVER: usize = 2;

/// How long a token from a server that greases the QUIC bit lets the client
/// clear that bit in its first Initials.
//= https://www.rfc-editor.org/rfc/rfc9287#section-3.1
//# To allow for changes in server configuration, clients SHOULD set the
//# QUIC Bit if the token was provided more than 7 days prior.
pub const GREASE_TOKEN_AGE: Duration = Duration::from_secs(7 * 24 * 3600);

/// One token, as a connection received it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddressToken {
    /// The token's bytes, for the Token field of an Initial.
    pub token: Vec<u8>,
    /// When it arrived.
    pub received: Instant,
    /// The server announced grease_quic_bit on that connection.
    pub grease_quic_bit: bool,
}

impl AddressToken {
    /// Whether an Initial carrying this token may clear the QUIC bit at `now`.
    pub fn allows_grease(&self, now: Instant) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9287#section-3.1
        //# A client can only clear the QUIC Bit if the packet includes a token
        //# provided by the server in a NEW_TOKEN frame on a connection where
        //# the server also included the grease_quic_bit transport parameter.
        self.grease_quic_bit && now.saturating_duration_since(self.received) <= GREASE_TOKEN_AGE
    }
}

/// Where a client keeps tokens between connections, keyed by server name.
pub trait TokenStore: std::fmt::Debug + Send + Sync {
    /// A connection to `server_name` received `token`.
    fn insert(&self, server_name: &str, token: AddressToken);
    /// A token for a new connection to `server_name`, removed from the store.
    //= https://www.rfc-editor.org/rfc/rfc9000#section-8.1.3
    //# Clients SHOULD NOT reuse a token from a NEW_TOKEN frame for different
    //# connection attempts.
    fn take(&self, server_name: &str) -> Option<AddressToken>;
}

/// Tokens in memory for at most `servers` servers (the least recently
/// given a token goes first), [`TOKENS_PER_SERVER`] each, newest first.
#[derive(Debug)]
pub struct TokenMemoryCache {
    servers: usize,
    inner: Mutex<Cache>,
}

#[derive(Debug, Default)]
struct Cache {
    tokens: HashMap<Box<str>, VecDeque<AddressToken>>,
    /// Server names, least recently given a token first.
    order: VecDeque<Box<str>>,
}

impl TokenMemoryCache {
    /// A cache for `servers` servers.
    pub fn new(servers: usize) -> Self {
        TokenMemoryCache {
            servers,
            inner: Mutex::default(),
        }
    }
}

impl TokenStore for TokenMemoryCache {
    fn insert(&self, server_name: &str, token: AddressToken) {
        if self.servers == 0 || token.token.is_empty() || token.token.len() > MAX_TOKEN_LEN {
            return;
        }
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(at) = c.order.iter().position(|n| &**n == server_name) {
            let name = c.order.remove(at).expect("position is in range");
            c.order.push_back(name);
        } else {
            if c.order.len() >= self.servers
                && let Some(old) = c.order.pop_front()
            {
                c.tokens.remove(&old);
            }
            c.order.push_back(server_name.into());
        }
        let list = c.tokens.entry(server_name.into()).or_default();
        // The same token twice (a NEW_TOKEN frame sent again) is one token.
        if list.iter().any(|t| t.token == token.token) {
            return;
        }
        list.push_front(token);
        list.truncate(TOKENS_PER_SERVER);
    }

    fn take(&self, server_name: &str) -> Option<AddressToken> {
        let mut c = self.inner.lock().unwrap_or_else(|e| e.into_inner());
        let list = c.tokens.get_mut(server_name)?;
        let token = list.pop_front();
        if list.is_empty() {
            c.tokens.remove(server_name);
            c.order.retain(|n| &**n != server_name);
        }
        token
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn token(byte: u8, at: Instant) -> AddressToken {
        AddressToken {
            token: vec![byte; 40],
            received: at,
            grease_quic_bit: true,
        }
    }

    /// Any instant: the tests only compare with it.
    #[allow(clippy::disallowed_methods)]
    fn some_instant() -> Instant {
        Instant::now()
    }

    #[test]
    fn newest_first_used_once_and_bounded() {
        let now = some_instant();
        let c = TokenMemoryCache::new(2);
        for b in 1..=3 {
            c.insert("a", token(b, now));
        }
        c.insert("a", token(3, now));
        assert_eq!(c.take("a").unwrap().token[0], 3);
        assert_eq!(c.take("a").unwrap().token[0], 2);
        assert_eq!(c.take("a"), None, "two kept per server, each used once");
        // Three servers in a cache for two: the least recently given goes.
        c.insert("a", token(1, now));
        c.insert("b", token(2, now));
        c.insert("a", token(4, now));
        c.insert("c", token(3, now));
        assert_eq!(c.take("b"), None);
        assert_eq!(c.take("a").unwrap().token[0], 4);
        assert_eq!(c.take("c").unwrap().token[0], 3);
        // Empty and oversized tokens are not kept.
        c.insert(
            "d",
            AddressToken {
                token: Vec::new(),
                ..token(0, now)
            },
        );
        c.insert(
            "d",
            AddressToken {
                token: vec![0; MAX_TOKEN_LEN + 1],
                ..token(0, now)
            },
        );
        assert_eq!(c.take("d"), None);
    }

    #[test]
    fn grease_only_from_a_greasing_server_within_a_week() {
        let now = some_instant();
        let t = token(1, now);
        assert!(t.allows_grease(now + GREASE_TOKEN_AGE));
        assert!(!t.allows_grease(now + GREASE_TOKEN_AGE + Duration::from_secs(1)));
        let plain = AddressToken {
            grease_quic_bit: false,
            ..t
        };
        assert!(!plain.allows_grease(now));
    }
}
