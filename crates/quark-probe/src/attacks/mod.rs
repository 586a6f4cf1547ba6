//! The attack classes. Each is a function from a target and a scale to a
//! report; [`crate::run`] watches the server meanwhile and judges the result.
//!
//! | module | classes |
//! |---|---|
//! | `initials` | Initials without a ClientHello, replayed ClientHellos, fragmented CRYPTO |
//! | `fragments` | STREAM data in 1-byte fragments at every other offset |
//! | `slow` | slow acknowledgers, slow readers, half-sent requests (slow loris) |
//! | `h3` | HTTP/3: QPACK bombs |
//! | `floods` | control frames that make the server queue answers: NEW_CONNECTION_ID with Retire Prior To, PATH_CHALLENGE; optimistic ACKs |

mod floods;
mod fragments;
mod h3;
mod initials;
mod slow;

use crate::{Report, Scale, Target};

/// What an attack needs the server to speak above QUIC.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaks {
    /// Anything: the attack stays in the transport.
    Quic,
    /// hq-interop requests.
    Hq,
    /// HTTP/3.
    H3,
}

/// One class of attack.
pub struct Attack {
    /// Its name on the command line.
    pub name: &'static str,
    /// What it needs the server to speak.
    pub speaks: Speaks,
    /// What it does, in a line.
    pub about: &'static str,
    /// The transport error the server must close attack connections with
    /// (by its RFC name), if the attack breaks a rule.
    pub expect_close: Option<&'static str>,
    /// Runs it.
    pub run: fn(&Target, Scale) -> anyhow::Result<Report>,
}

/// Every attack, in the order `quark probe` runs them.
pub const ALL: &[Attack] = &[
    Attack {
        name: "initial-flood",
        speaks: Speaks::Quic,
        about: "correctly protected Initials carrying only PING, fresh connection IDs each",
        expect_close: None,
        run: initials::ping_flood,
    },
    Attack {
        name: "handshake-flood",
        speaks: Speaks::Quic,
        about: "one ClientHello replayed under fresh connection IDs, never finished",
        expect_close: None,
        run: initials::handshake_flood,
    },
    Attack {
        name: "crypto-fragments",
        speaks: Speaks::Quic,
        about: "half-open connections sending 1-byte CRYPTO frames at every other offset",
        expect_close: Some("CRYPTO_BUFFER_EXCEEDED"),
        run: initials::crypto_fragments,
    },
    Attack {
        name: "stream-fragments",
        speaks: Speaks::Quic,
        about: "1-byte STREAM frames at every other offset, over the flow-control windows",
        expect_close: None,
        run: fragments::stream_fragments,
    },
    Attack {
        name: "slow-ack",
        speaks: Speaks::Hq,
        about: "many requests for a large file, a small window never extended",
        expect_close: None,
        run: slow::slow_ack,
    },
    Attack {
        name: "slow-read",
        speaks: Speaks::Hq,
        about: "many requests for a large file, then no reading and no ACKs",
        expect_close: None,
        run: slow::slow_read,
    },
    Attack {
        name: "slow-loris",
        speaks: Speaks::Hq,
        about: "every stream the server allows opened with a request never finished",
        expect_close: None,
        run: slow::slow_loris,
    },
    Attack {
        name: "retire-flood",
        speaks: Speaks::Quic,
        about: "NEW_CONNECTION_ID frames whose Retire Prior To forces retirements, never acknowledged",
        expect_close: Some("CONNECTION_ID_LIMIT_ERROR"),
        run: floods::retire_flood,
    },
    Attack {
        name: "path-challenge-flood",
        speaks: Speaks::Quic,
        about: "PATH_CHALLENGE frames by the thousand, responses never acknowledged",
        expect_close: None,
        run: floods::path_challenge_flood,
    },
    Attack {
        name: "optimistic-ack",
        speaks: Speaks::Hq,
        about: "ACKs a little ahead of the packets received, during a download",
        expect_close: Some("PROTOCOL_VIOLATION"),
        run: floods::optimistic_ack,
    },
    Attack {
        name: "qpack-bomb",
        speaks: Speaks::H3,
        about: "HEADERS of one-byte static references decoding to about 1 MB, on every stream",
        expect_close: None,
        run: h3::qpack_bomb,
    },
];

impl Attack {
    /// Whether it can run against `target`.
    pub fn fits(&self, target: &Target) -> bool {
        match self.speaks {
            Speaks::Quic => true,
            Speaks::Hq => !target.h3(),
            Speaks::H3 => target.h3(),
        }
    }
}

/// The attack named `name`.
pub fn find(name: &str) -> Option<&'static Attack> {
    ALL.iter().find(|a| a.name == name)
}

/// Call `f` `count` times at about `rate` calls per second.
fn paced(
    count: u64,
    rate: u64,
    mut f: impl FnMut(u64) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let start = std::time::Instant::now();
    for i in 0..count {
        f(i)?;
        if i % 64 == 63 {
            let due = start + std::time::Duration::from_secs_f64((i + 1) as f64 / rate as f64);
            if let Some(wait) = due.checked_duration_since(std::time::Instant::now()) {
                std::thread::sleep(wait);
            }
        }
    }
    Ok(())
}
