//! Without `sendmmsg`/`recvmmsg` (ENOSYS), loops of single calls do the same job.

use std::io::IoSliceMut;
use std::sync::atomic::Ordering::Relaxed;

use super::{bind, datagram, payload};
use crate::{RecvMeta, Transmit};

#[tokio::test]
async fn missing_mmsg_falls_back_to_single_calls() {
    let rx = bind("127.0.0.1:0");
    let tx = bind("127.0.0.1:0");
    tx.state.hooks.no_mmsg.store(true, Relaxed);
    rx.state.hooks.no_mmsg.store(true, Relaxed);
    let to = rx.local_addr().unwrap();
    let payloads: Vec<Vec<u8>> = (0..5).map(|i| payload(i, 100 + i as usize)).collect();
    let gso = payload(9, 3 * 400);
    let mut transmits: Vec<Transmit<'_>> = payloads.iter().map(|p| datagram(to, p)).collect();
    transmits.push(Transmit {
        ecn: 0b01,
        segment_size: Some(400),
        ..datagram(to, &gso)
    });
    assert_eq!(tx.try_send(&transmits).unwrap(), 6);
    assert!(!tx.state.sendmmsg.load(Relaxed));

    // The receiver has GRO on: the GSO send arrives coalesced, in one buffer.
    let mut storage = vec![vec![0u8; 65536]; 8];
    let mut bufs: Vec<IoSliceMut<'_>> = storage.iter_mut().map(|b| IoSliceMut::new(b)).collect();
    let mut meta = [RecvMeta::default(); 8];
    let mut got = 0;
    while got < 6 {
        got += rx.recv(&mut bufs[got..], &mut meta[got..]).await.unwrap();
    }
    assert!(!rx.state.recvmmsg.load(Relaxed));
    for i in 0..5 {
        assert_eq!(&bufs[i][..meta[i].len], &payloads[i][..]);
    }
    assert_eq!(&bufs[5][..meta[5].len], &gso[..]);
    assert_eq!((meta[5].stride, meta[5].ecn), (400, 0b01));
    assert_eq!(meta[5].dst_ip, Some(to.ip()));
}
