//! `quark agent`: runs lab servers and clients for a `quark bench` on another host.

use std::net::SocketAddr;
use std::path::PathBuf;

use quark_lab::agent::{AgentOptions, read_token, serve};

/// Options of `quark agent`.
#[derive(Debug, clap::Args)]
#[command(after_help = "\
`quark bench --server-agent HOST:PORT --client-agent HOST:PORT --token-file F` \
places each side of every cell on an agent; the driver drives the remote \
children exactly like local ones. The control channel is TLS (a fresh \
self-signed certificate per start) and every session proves knowledge of the \
token both ways with HMAC-SHA256 over fresh nonces and the certificate seen, so \
the token never crosses the wire and nothing runs before it is proven. Wrong \
tokens are refused after a delay; after 10 failures in a minute every session \
is refused for the rest of it. Only `quark lab-server` and `quark lab-client` \
can be started; a lost driver kills its children.

The token file holds at least 16 bytes (e.g. `openssl rand -hex 32 > token`); \
keep it readable only by you. Lab servers listen on the bench's `--addr` (use \
this host's address or 0.0.0.0), so the client's host must reach that port \
(TCP and UDP).")]
pub(crate) struct Args {
    /// Control address (TCP).
    #[arg(long, default_value = "0.0.0.0:7878")]
    listen: SocketAddr,
    /// File holding the shared token.
    #[arg(long, value_name = "FILE")]
    token_file: PathBuf,
}

/// Runs the agent until killed.
pub(crate) async fn run(args: Args) -> anyhow::Result<()> {
    let token = read_token(&args.token_file)?;
    let opts = AgentOptions {
        listen: args.listen,
        token,
        exe: std::env::current_exe()?,
    };
    serve(opts, |addr| {
        // One line for scripts waiting for the agent.
        println!("agent listening on {addr}");
    })
    .await
}
