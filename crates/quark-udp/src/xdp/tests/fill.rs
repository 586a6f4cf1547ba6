//! The fill ring under a receiver that spins on the RX ring while the kernel
//! delivers. The kernel publishes new RX entries a moment before it releases
//! their fill-ring slots, so a receiver can hold frames the fill ring seems to
//! have no room for; it must neither overrun the ring nor lose the frames.

use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::{datagram, pair, payload, run_in};
use crate::xdp::{XdpConfig, XdpSocket};
use crate::{RecvMeta, Socket};

/// Datagrams in the flood, and the tag that ends it.
const FLOOD: u32 = 200_000;
const END: u32 = u32::MAX;
const LEN: usize = 64;

#[test]
fn a_spinning_receiver_never_outruns_the_fill_ring() {
    let Some(pair) = pair("fill") else { return };
    let (a, b) = (pair.a.clone(), pair.b.clone());
    let to = SocketAddr::new(a.ip.into(), 4434);
    let (ready_tx, ready_rx) = std::sync::mpsc::channel();
    let done = Arc::new(AtomicBool::new(false));
    let finished = done.clone();
    let receiver = run_in(&a.netns, move || async move {
        // The fewest frames, so the fill ring is full nearly all the time.
        let config: XdpConfig = format!("{},frames=256", a.interface).parse().unwrap();
        let sock = XdpSocket::bind(to, &config).unwrap();
        ready_tx.send(()).unwrap();
        let mut storage = vec![vec![0u8; 2048]; 4];
        let mut meta = [RecvMeta::default(); 4];
        let mut seen = vec![false; FLOOD as usize];
        let (mut count, deadline) = (0u64, Instant::now() + Duration::from_secs(60));
        loop {
            assert!(Instant::now() < deadline, "the end marker never arrived");
            let mut bufs: Vec<IoSliceMut<'_>> =
                storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
            let n = match sock.try_recv(&mut bufs, &mut meta) {
                Ok(n) => n,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => continue,
                Err(e) => panic!("{e}"),
            };
            let datagrams = bufs.iter().zip(&meta).take(n).flat_map(|(buf, m)| {
                buf[..m.len]
                    .chunks(m.stride)
                    .map(<[u8]>::to_vec)
                    .collect::<Vec<_>>()
            });
            let mut ends = 0;
            for d in datagrams {
                let tag = u32::from_be_bytes(d[..4].try_into().unwrap());
                assert_eq!(d, payload(tag, LEN), "datagram {tag} damaged");
                if tag == END {
                    ends += 1;
                    continue;
                }
                assert!(
                    !std::mem::replace(&mut seen[tag as usize], true),
                    "{tag} twice"
                );
                count += 1;
            }
            if ends > 0 {
                // A stalled receiver may find several end markers at once.
                finished.store(true, Ordering::Relaxed);
                return (count, ends, sock.stats().unwrap());
            }
        }
    });
    let sender = run_in(&b.netns, move || async move {
        let sock = Socket::bind_with(SocketAddr::new(b.ip.into(), 0), None).unwrap();
        ready_rx.recv().unwrap();
        let all: Vec<Vec<u8>> = (0..FLOOD).map(|tag| payload(tag, LEN)).collect();
        for chunk in all.chunks(32) {
            let transmits: Vec<_> = chunk.iter().map(|p| datagram(to, p, 0)).collect();
            // No flow control: what the receiver can't take is dropped.
            let _ = sock.send(&transmits).await;
        }
        // Then the end marker until the receiver has it: it must still be
        // receiving after the flood.
        let end = payload(END, LEN);
        let deadline = Instant::now() + Duration::from_secs(60);
        while !done.load(Ordering::Relaxed) && Instant::now() < deadline {
            let _ = sock.send(&[datagram(to, &end, 0)]).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    sender.join().unwrap().unwrap();
    let (count, ends, stats) = receiver.join().unwrap().unwrap();
    eprintln!("{count} of {FLOOD} received; {stats:?}");
    assert!(count > 0);
    assert_eq!(stats.received_xdp, count + ends);
}
