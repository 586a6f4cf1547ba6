//! What a case is: a client implementation, a server implementation, and the
//! client runs against one server process.

use std::fmt::Write as _;

use super::corpus::FileSet;
use super::peers::Implementation;
use crate::quinn_hq::tls::Cipher;

/// What one client run fetches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    /// A file set; every file must arrive intact.
    Files(FileSet),
    /// A file that does not exist: the client must fail.
    Missing,
    /// `/../secret.txt`, just outside the root: the server must refuse it and
    /// the client must fail.
    Traversal,
    /// The 1 KiB file with a suite the server does not accept: the handshake,
    /// and so the client, must fail. Proves both sides really restrict suites.
    Refused,
}

/// One client process: what it fetches and the suite it offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Run {
    /// What to fetch.
    pub fetch: Fetch,
    /// Offer only this suite (all when `None`).
    pub cipher: Option<Cipher>,
}

impl Run {
    /// Fetch a file set, offering every suite.
    pub fn files(set: FileSet) -> Run {
        Run {
            fetch: Fetch::Files(set),
            cipher: None,
        }
    }

    /// Fetch a file set offering only `cipher`.
    pub fn files_with(set: FileSet, cipher: Cipher) -> Run {
        Run {
            fetch: Fetch::Files(set),
            cipher: Some(cipher),
        }
    }

    /// A handshake offering only `cipher`, which the server must refuse.
    pub fn refused(cipher: Cipher) -> Run {
        Run {
            fetch: Fetch::Refused,
            cipher: Some(cipher),
        }
    }

    /// Every file set, then the missing-file and traversal checks.
    pub fn standard() -> Vec<Run> {
        let mut runs: Vec<Run> = FileSet::ALL.into_iter().map(Run::files).collect();
        runs.push(Run {
            fetch: Fetch::Missing,
            cipher: None,
        });
        runs.push(Run {
            fetch: Fetch::Traversal,
            cipher: None,
        });
        runs
    }
}

/// A client implementation against a server implementation.
#[derive(Debug, Clone)]
pub struct Case {
    /// The client's implementation.
    pub client: &'static Implementation,
    /// The server's implementation.
    pub server: &'static Implementation,
    /// Suites the server accepts (all when empty).
    pub server_ciphers: Vec<Cipher>,
    /// Server requires Retry.
    pub retry: bool,
    /// The client runs, in order, against one server process.
    pub runs: Vec<Run>,
    /// Server and client in two namespaces joined by veth, quark on AF_XDP.
    pub xdp: bool,
    /// The client speaks QUIC v2 (RFC 9369) from its first packet.
    pub quic_v2: bool,
}

impl Case {
    /// `client` against `server` with the [`Run::standard`] runs.
    pub fn new(client: &'static Implementation, server: &'static Implementation) -> Case {
        Case {
            client,
            server,
            server_ciphers: Vec::new(),
            retry: false,
            runs: Run::standard(),
            xdp: false,
            quic_v2: false,
        }
    }

    /// Replaces the runs.
    pub fn runs(mut self, runs: Vec<Run>) -> Case {
        self.runs = runs;
        self
    }

    /// Appends one run.
    pub fn run(mut self, run: Run) -> Case {
        self.runs.push(run);
        self
    }

    /// Limits the server to one suite.
    pub fn server_cipher(mut self, cipher: Cipher) -> Case {
        self.server_ciphers = vec![cipher];
        self
    }

    /// Makes the server demand Retry.
    pub fn retry(mut self) -> Case {
        self.retry = true;
        self
    }

    /// The client speaks QUIC v2 from its first packet, and must say so in
    /// its log (quark and quic-go clients only).
    pub fn quic_v2(mut self) -> Case {
        self.quic_v2 = true;
        self
    }

    /// Runs across two namespaces, quark's end on AF_XDP (root only).
    pub fn over_af_xdp(mut self) -> Case {
        self.xdp = true;
        self
    }

    /// `client-to-server`, for directory names and logs.
    pub fn name(&self) -> String {
        let mut name = format!("{}-to-{}", self.client.name, self.server.name);
        for c in &self.server_ciphers {
            let _ = write!(name, "-{}", c.arg());
        }
        if self.retry {
            name.push_str("-retry");
        }
        if self.xdp {
            name.push_str("-xdp");
        }
        if self.quic_v2 {
            name.push_str("-v2");
        }
        name
    }
}
