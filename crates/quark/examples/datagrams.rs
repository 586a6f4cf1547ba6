//! Unreliable datagrams (RFC 9221): a server that echoes every DATAGRAM frame
//! and a client that sends numbered datagrams and checks each echo byte for
//! byte. Both run in this one process, over loopback.
//!
//! ```sh
//! cargo run -p quark --example datagrams          # 1000 datagrams
//! cargo run -p quark --example datagrams -- 50000
//! ```
//!
//! Datagrams share the connection's congestion control with streams but are
//! never retransmitted: one lost on the way is gone, and the program says how
//! many did not come back. A peer accepts them only if it advertised
//! `max_datagram_frame_size` (`TransportConfig::max_datagram_frame_size`);
//! sending needs only the peer's advertisement.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use quark::{Connection, Endpoint, TransportConfig, tls};

const ALPN: &[u8] = b"quark-datagrams";
/// How long the client waits for the next echo before it counts the rest lost.
const QUIET: Duration = Duration::from_secs(2);

type BoxError = Box<dyn std::error::Error + Send + Sync>;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let count = match std::env::args().nth(1) {
        Some(n) => n.parse()?,
        None => 1000,
    };
    let summary = run(count).await?;
    println!(
        "{} datagrams of up to {} bytes sent, {} echoed intact, {} lost",
        summary.sent,
        summary.max_size,
        summary.echoed,
        summary.sent - summary.echoed
    );
    Ok(())
}

/// What one run did.
pub(crate) struct Summary {
    /// Datagrams the client sent.
    pub(crate) sent: usize,
    /// Echoes that came back, each checked against what was sent.
    pub(crate) echoed: usize,
    /// The largest datagram the connection took ([`Connection::max_datagram_size`]).
    pub(crate) max_size: usize,
}

/// Start an echo server and a client on loopback, send `count` datagrams and
/// wait for their echoes. An echo that differs from its datagram, or comes
/// back twice, is an error; a missing one is only counted.
pub(crate) async fn run(count: usize) -> Result<Summary, BoxError> {
    // Both ends advertise that they take DATAGRAM frames of any size; the
    // path MTU is what limits them in practice.
    let transport = Arc::new(TransportConfig {
        max_datagram_frame_size: Some(u16::MAX),
        ..TransportConfig::default()
    });
    let any: SocketAddr = "127.0.0.1:0".parse()?;
    let identity = tls::Identity::self_signed(&["localhost"])?;
    let mut server_config = tls::server_config(&identity, &[ALPN])?;
    server_config.transport = transport.clone();
    let server = Endpoint::server(server_config, any)?;
    let echo = tokio::spawn(echo_all(server.clone()));

    let mut client_config =
        tls::client_config(tls::Verify::Roots(vec![identity.cert.clone()]), &[ALPN])?;
    client_config.transport = transport;
    let client = Endpoint::client(any)?;
    let conn = client
        .connect(client_config, server.local_addr()?, "localhost")?
        .await?;
    let max_size = conn
        .max_datagram_size()
        .ok_or("the server does not accept datagrams")?;

    // Read echoes in a task of their own while this one sends.
    let reader = tokio::spawn(read_echoes(conn.clone(), count, max_size));
    for i in 0..count {
        // `send_datagram_wait` holds the sender to the path's pace when the
        // send queue is full; `send_datagram` would drop the oldest instead.
        conn.send_datagram_wait(datagram(i, max_size)).await?;
    }
    let echoed = reader.await??;

    conn.close(0, b"done");
    client.wait_idle().await;
    server.close(0, b"done");
    echo.abort();
    Ok(Summary {
        sent: count,
        echoed,
        max_size,
    })
}

/// The server: every connection sends back each datagram it receives.
async fn echo_all(server: Endpoint) {
    while let Some(conn) = server.accept().await {
        tokio::spawn(async move {
            // Ends with the connection's error once it closes.
            while let Ok(d) = conn.read_datagram().await {
                if conn.send_datagram_wait(d).await.is_err() {
                    break;
                }
            }
        });
    }
}

/// Count the echoes, checking each against the datagram it answers.
async fn read_echoes(conn: Connection, count: usize, max_size: usize) -> Result<usize, BoxError> {
    let mut seen = vec![false; count];
    let mut echoed = 0;
    while echoed < count {
        let Ok(got) = tokio::time::timeout(QUIET, conn.read_datagram()).await else {
            break; // the rest were lost
        };
        let got = got?;
        let index = got
            .get(..8)
            .and_then(|b| b.try_into().ok())
            .map(u64::from_be_bytes)
            .and_then(|i| usize::try_from(i).ok())
            .filter(|&i| i < count)
            .ok_or("an echo with no valid index")?;
        if got != datagram(index, max_size) {
            return Err(format!("echo {index} differs from what was sent").into());
        }
        if std::mem::replace(&mut seen[index], true) {
            return Err(format!("echo {index} came back twice").into());
        }
        echoed += 1;
    }
    Ok(echoed)
}

/// Datagram `i`: its index, then bytes derived from it, with a length that
/// varies from 8 bytes up to `max_size`.
fn datagram(i: usize, max_size: usize) -> Bytes {
    let len = 8 + (i * 251) % (max_size - 7);
    let mut d = (i as u64).to_be_bytes().to_vec();
    d.extend((8..len).map(|k| (k ^ i.wrapping_mul(31)) as u8));
    Bytes::from(d)
}
