//! AF_XDP between two network namespaces joined by veth ([`crate::netns`]).
//!
//! These tests need root, `ip` and a kernel with AF_XDP and BPF; without them
//! each prints why and passes. Traffic only flows inside the namespaces they create.

mod fill;
mod io;
mod measure;
mod modes;
mod queues;

use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::sync::atomic::AtomicUsize;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use bytes::BytesMut;

use crate::netns::{self, VethPair};
use crate::xdp::bpf;
use crate::{RecvMeta, Socket, Transmit};

/// A fresh namespace pair for one test, or `None` (after saying why) when this
/// machine can't run AF_XDP tests.
fn pair(test: &str) -> Option<VethPair> {
    pair_with_queues(test, 1)
}

/// [`pair`] with `queues` queues on each end.
fn pair_with_queues(test: &str, queues: u32) -> Option<VethPair> {
    if let Some(why) = netns::unavailable() {
        eprintln!("skipped: {why}");
        return None;
    }
    // AF_XDP sockets and BPF maps must both be allowed.
    // SAFETY: plain system call; the descriptor is closed right away.
    let fd = unsafe { libc::socket(libc::AF_XDP, libc::SOCK_RAW, 0) };
    if fd < 0 {
        eprintln!(
            "skipped: socket(AF_XDP): {}",
            std::io::Error::last_os_error()
        );
        return None;
    }
    // SAFETY: `fd` was just opened by us.
    unsafe { libc::close(fd) };
    if let Err(e) = bpf::create_xskmap(1) {
        eprintln!("skipped: creating a BPF XSKMAP: {e}");
        return None;
    }
    let name = format!("qx{}-{test}", std::process::id());
    match VethPair::with_queues(&name, queues) {
        Ok(pair) => Some(pair),
        Err(e) => {
            eprintln!("skipped: could not create the namespaces: {e}");
            None
        }
    }
}

/// Runs `f` in a current-thread tokio runtime on a thread inside `netns`.
fn run_in<T, Fut>(
    netns: &str,
    f: impl FnOnce() -> Fut + Send + 'static,
) -> std::thread::JoinHandle<std::io::Result<T>>
where
    T: Send + 'static,
    Fut: std::future::Future<Output = T>,
{
    netns::spawn_in(netns, move || {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(f())
    })
}

/// A kernel UDP socket on `addr`, a port this test has just closed a socket on.
/// The port can stay taken for a while: a process another test spawns (`ip`,
/// for its namespaces) holds copies of all our descriptors from its fork to
/// its exec, which on a loaded machine takes milliseconds or more.
async fn bind_kernel_when_free(addr: SocketAddr) -> Socket {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        match Socket::bind_with(addr, None) {
            Err(e)
                if e.kind() == std::io::ErrorKind::AddrInUse
                    && std::time::Instant::now() < deadline =>
            {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            result => return result.unwrap(),
        }
    }
}

/// A recognisable payload: `tag` in the first four bytes, then a pattern.
fn payload(tag: u32, len: usize) -> Vec<u8> {
    let mut p: Vec<u8> = (0..len)
        .map(|i| (i as u32).wrapping_mul(13).wrapping_add(tag) as u8)
        .collect();
    let n = len.min(4);
    p[..n].copy_from_slice(&tag.to_be_bytes()[..n]);
    p
}

/// A single-datagram transmit.
fn datagram(to: SocketAddr, contents: &[u8], ecn: u8) -> Transmit<'_> {
    Transmit {
        destination: to,
        ecn,
        contents,
        segment_size: None,
        src_ip: None,
    }
}

/// One received datagram with the metadata of its message.
type Got = (Vec<u8>, RecvMeta);

/// Receives `count` datagrams on `sock`, splitting coalesced messages by stride.
async fn collect(sock: &Socket, count: usize) -> Vec<Got> {
    // Every other receive goes into `BytesMut`s (`poll_recv_buf`), the rest
    // into borrowed slices: both kinds of buffer see the same datagrams.
    static TURN: AtomicUsize = AtomicUsize::new(0);
    let mut storage = vec![vec![0u8; 65536]; 16];
    let mut owned: Vec<BytesMut> = (0..16).map(|_| BytesMut::with_capacity(65536)).collect();
    let mut meta = [RecvMeta::default(); 16];
    let mut out = Vec::new();
    while out.len() < count {
        let owned_turn = TURN.fetch_add(1, Relaxed) % 2 == 1;
        let mut bufs: Vec<IoSliceMut<'_>> =
            storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
        let recv = std::future::poll_fn(|cx| match owned_turn {
            true => sock.poll_recv_buf(cx, &mut owned, &mut meta),
            false => sock.poll_recv(cx, &mut bufs, &mut meta),
        });
        // A guard against hanging forever, not a timing assertion.
        let got = tokio::time::timeout(Duration::from_secs(20), recv)
            .await
            .unwrap_or_else(|_| panic!("only {} of {count} datagrams arrived", out.len()))
            .unwrap();
        for i in 0..got {
            let m = meta[i];
            let data: &[u8] = match owned_turn {
                true => {
                    assert_eq!(owned[i].len(), m.len, "a BytesMut holds its message");
                    &owned[i]
                }
                false => &bufs[i][..m.len],
            };
            for d in data.chunks(m.stride) {
                out.push((d.to_vec(), m));
            }
        }
    }
    out
}

/// Sends every transmit, waiting for room.
async fn send_all(sock: &Socket, transmits: &[Transmit<'_>]) {
    let mut sent = 0;
    while sent < transmits.len() {
        sent += sock.send(&transmits[sent..]).await.unwrap();
    }
}

/// Sorts received datagrams by their tag (first four bytes).
fn by_tag(mut got: Vec<Got>) -> Vec<Got> {
    got.sort_by_key(|(d, _)| u32::from_be_bytes(d[..4].try_into().unwrap()));
    got
}
