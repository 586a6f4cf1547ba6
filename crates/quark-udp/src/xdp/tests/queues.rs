//! One XDP program serving a socket per receive queue of a two-queue veth: the
//! layout of an AF_XDP server with a worker per queue.

use std::collections::BTreeMap;
use std::io::IoSliceMut;
use std::net::SocketAddr;
use std::sync::mpsc;

use super::{pair_with_queues, payload, run_in};
use crate::xdp::{XdpConfig, XdpProgram, XdpStats};
use crate::{RecvMeta, Socket, bind_std_reuseport};

/// Kernel UDP senders (distinct flows, which the sending veth spreads over its
/// queues by hash) and datagrams each.
const SENDERS: u32 = 32;
const EACH: u32 = 4;

/// Receives on `sock` into `got` (tag → payload) until `total` datagrams have
/// arrived on both sockets together.
async fn drain(sock: &Socket, got: &mut BTreeMap<u32, Vec<u8>>) {
    let mut storage = vec![vec![0u8; 65536]; 8];
    let mut meta = [RecvMeta::default(); 8];
    let mut bufs: Vec<IoSliceMut<'_>> = storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
    let n = sock.recv(&mut bufs, &mut meta).await.unwrap();
    for (buf, m) in bufs.iter().zip(&meta).take(n) {
        for d in buf[..m.len].chunks(m.stride) {
            let tag = u32::from_be_bytes(d[..4].try_into().unwrap());
            assert!(
                got.insert(tag, d.to_vec()).is_none(),
                "datagram {tag} twice"
            );
        }
    }
}

#[test]
fn one_program_serves_a_socket_on_each_queue() {
    let Some(pair) = pair_with_queues("mq", 2) else {
        return;
    };
    let a = pair.a.clone();
    let (port_tx, port_rx) = mpsc::channel();
    let server = run_in(&a.netns, move || async move {
        // The kernel sockets first (they hold the port), then the program.
        let mut kernel = bind_std_reuseport(SocketAddr::new(a.ip.into(), 0), 3).unwrap();
        let (spare, k1, k0) = (
            kernel.pop().unwrap(),
            kernel.pop().unwrap(),
            kernel.pop().unwrap(),
        );
        let local = k0.local_addr().unwrap();
        let program = XdpProgram::attach(local, &XdpConfig::new(&a.interface), 2).unwrap();
        assert_eq!((program.local_addr(), program.queues()), (local, 2));
        // A queue the program does not serve is refused, not silently ignored.
        let e = program.open(2, spare).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::InvalidInput, "{e}");
        let s0 = program.open(0, k0).unwrap();
        let s1 = program.open(1, k1).unwrap();
        assert_eq!((s0.queue(), s1.queue()), (0, 1));
        drop(program); // the sockets keep it attached
        let (s0, s1): (Socket, Socket) = (s0.into(), s1.into());
        port_tx.send(local).unwrap();

        let (mut got0, mut got1) = (BTreeMap::new(), BTreeMap::new());
        let total = (SENDERS * EACH) as usize;
        let limit = tokio::time::sleep(std::time::Duration::from_secs(20));
        tokio::pin!(limit);
        while got0.len() + got1.len() < total {
            tokio::select! {
                _ = drain(&s0, &mut got0) => {}
                _ = drain(&s1, &mut got1) => {}
                _ = &mut limit => panic!("{} of {total} arrived", got0.len() + got1.len()),
            }
        }
        let stats = |s: &Socket| match s {
            Socket::Xdp(x) => x.stats().unwrap(),
            Socket::Udp(_) => unreachable!(),
        };
        (got0, got1, stats(&s0), stats(&s1))
    });

    let b = pair.b.clone();
    let to = port_rx.recv().unwrap();
    run_in(&b.netns, move || async move {
        for s in 0..SENDERS {
            let sock = std::net::UdpSocket::bind(SocketAddr::new(b.ip.into(), 0)).unwrap();
            for i in 0..EACH {
                let tag = s * EACH + i;
                sock.send_to(&payload(tag, 100 + tag as usize), to).unwrap();
            }
        }
    })
    .join()
    .unwrap()
    .unwrap();

    let (got0, got1, st0, st1): (_, _, XdpStats, XdpStats) = server.join().unwrap().unwrap();
    // Every datagram once, intact, wherever it arrived.
    let mut all = got0.clone();
    all.extend(got1.clone());
    assert_eq!(all.len(), (SENDERS * EACH) as usize);
    for (tag, d) in &all {
        assert_eq!(d, &payload(*tag, 100 + *tag as usize), "datagram {tag}");
    }
    // Both queues' sockets took datagrams off their own rings: the flows were
    // spread, and each socket is in the program's map.
    assert!(
        st0.received_xdp > 0 && st1.received_xdp > 0,
        "{st0:?} {st1:?}"
    );
    assert_eq!(
        st0.received_xdp + st0.received_kernel,
        got0.len() as u64,
        "{st0:?}"
    );
    assert_eq!(
        st1.received_xdp + st1.received_kernel,
        got1.len() as u64,
        "{st1:?}"
    );
}
