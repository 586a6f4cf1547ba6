//! The implementations under test, each as a pair of functions producing the
//! command line of its server and its client.

use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;

use super::certs::Certs;
use super::env::{Env, Unavailable};
use crate::quinn_hq::tls::Cipher;

/// What a server is started with.
#[derive(Debug, Clone, Copy)]
pub struct ServerSpec<'a> {
    /// Address to listen on (always 127.0.0.1 with a free port).
    pub listen: SocketAddr,
    /// Directory to serve.
    pub root: &'a Path,
    /// Certificate and key.
    pub certs: &'a Certs,
    /// Suites to accept; all when empty.
    pub ciphers: &'a [Cipher],
    /// Validate addresses with Retry.
    pub retry: bool,
}

/// What a client is started with.
#[derive(Debug, Clone, Copy)]
pub struct ClientSpec<'a> {
    /// `https://localhost:PORT/path` URLs.
    pub urls: &'a [String],
    /// Output directory.
    pub out: &'a Path,
    /// Trust anchor (the server's self-signed certificate).
    pub ca: &'a Path,
    /// Suites to offer; all when empty.
    pub ciphers: &'a [Cipher],
    /// Speak QUIC v2 (RFC 9369) from the first packet (quark and quic-go).
    pub quic_v2: bool,
}

/// Builds a server's command line, or says what is missing to run it.
pub type ServerFn = for<'a> fn(&Env, &ServerSpec<'a>) -> Result<Command, Unavailable>;

/// Builds a client's command line, or says what is missing to run it.
pub type ClientFn = for<'a> fn(&Env, &ClientSpec<'a>) -> Result<Command, Unavailable>;

/// One QUIC implementation's hq-interop peers.
#[derive(Debug)]
pub struct Implementation {
    /// Short name, used in test names and logs.
    pub name: &'static str,
    /// A string its server prints to stderr once it is listening.
    pub ready: &'static str,
    /// The server's command line.
    pub server: ServerFn,
    /// The client's command line.
    pub client: ClientFn,
}

/// quark itself (`quark serve` / `quark get`).
pub static QUARK: Implementation = Implementation {
    name: "quark",
    ready: "serving ",
    server: |env, s| {
        let mut cmd = Command::new(env.quark()?);
        cmd.arg("serve");
        server_args(&mut cmd, s);
        Ok(cmd)
    },
    client: |env, c| {
        let mut cmd = Command::new(env.quark()?);
        cmd.arg("get");
        client_args(&mut cmd, c);
        Ok(cmd)
    },
};

/// quinn 0.11, through this crate's `quinn-hq`.
pub static QUINN: Implementation = Implementation {
    name: "quinn",
    ready: "listening on",
    server: |env, s| {
        let mut cmd = Command::new(&env.quinn_hq);
        cmd.arg("server");
        server_args(&mut cmd, s);
        Ok(cmd)
    },
    client: |env, c| {
        let mut cmd = Command::new(&env.quinn_hq);
        cmd.arg("client");
        client_args(&mut cmd, c);
        Ok(cmd)
    },
};

/// aioquic (Python), through `interop/aioquic/hq_{server,client}.py`.
pub static AIOQUIC: Implementation = Implementation {
    name: "aioquic",
    ready: "listening on",
    server: |env, s| {
        let mut cmd = Command::new(env.python()?);
        cmd.arg("-u").arg(env.aioquic_dir().join("hq_server.py"));
        server_args(&mut cmd, s);
        Ok(cmd)
    },
    client: |env, c| {
        let mut cmd = Command::new(env.python()?);
        cmd.arg("-u").arg(env.aioquic_dir().join("hq_client.py"));
        client_args(&mut cmd, c);
        Ok(cmd)
    },
};

/// quic-go, through `interop/quic-go` built as `target/interop/quicgo-hq`.
pub static QUIC_GO: Implementation = Implementation {
    name: "quic-go",
    ready: "listening on",
    server: |env, s| {
        let mut cmd = Command::new(env.quicgo()?);
        cmd.arg("server");
        server_args(&mut cmd, s);
        Ok(cmd)
    },
    client: |env, c| {
        let mut cmd = Command::new(env.quicgo()?);
        cmd.arg("client");
        client_args(&mut cmd, c);
        Ok(cmd)
    },
};

/// Every implementation.
pub static ALL: [&Implementation; 4] = [&QUARK, &QUINN, &AIOQUIC, &QUIC_GO];

/// All peers share one command-line shape:
/// `--listen ADDR --root DIR --cert F --key F [--cipher a,b] [--retry]`.
fn server_args(cmd: &mut Command, s: &ServerSpec<'_>) {
    cmd.arg("--listen").arg(s.listen.to_string());
    cmd.arg("--root").arg(s.root);
    cmd.arg("--cert").arg(&s.certs.cert);
    cmd.arg("--key").arg(&s.certs.key);
    cipher_args(cmd, s.ciphers);
    if s.retry {
        cmd.arg("--retry");
    }
}

/// `URL... -o DIR --ca F [--cipher a,b] [--quic-version 2]`.
fn client_args(cmd: &mut Command, c: &ClientSpec<'_>) {
    cmd.args(c.urls);
    cmd.arg("-o").arg(c.out);
    cmd.arg("--ca").arg(c.ca);
    cipher_args(cmd, c.ciphers);
    if c.quic_v2 {
        cmd.arg("--quic-version").arg("2");
    }
}

fn cipher_args(cmd: &mut Command, ciphers: &[Cipher]) {
    if !ciphers.is_empty() {
        let list: Vec<&str> = ciphers.iter().map(|c| c.arg()).collect();
        cmd.arg("--cipher").arg(list.join(","));
    }
}
