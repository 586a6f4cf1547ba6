//! A full socket buffer yields `WouldBlock` (or a short count), and nothing the
//! count claims is lost.
//!
//! Loopback frees a datagram's send-buffer space as soon as it is sent, so the
//! buffer never fills there. This test runs in a private network namespace whose
//! loopback has a slow token-bucket qdisc: datagrams wait in the qdisc, holding
//! their send-buffer space. It needs root (CAP_SYS_ADMIN and CAP_NET_ADMIN) and
//! `ip`/`tc`; without them it says so and passes.

use std::os::fd::AsFd;
use std::process::Command;

use super::{assert_drained, bind, datagram, payload, recv_msgs};
use crate::Transmit;
use crate::sys::options;

/// Runs a command, returning whether it succeeded.
fn run(cmd: &str) -> bool {
    let mut words = cmd.split_whitespace();
    let program = words.next().unwrap();
    match Command::new(program).args(words).status() {
        Ok(status) => status.success(),
        Err(_) => false,
    }
}

#[test]
fn full_send_buffer_reports_would_block_and_loses_nothing() {
    std::thread::spawn(|| {
        // SAFETY: `unshare(CLONE_NEWNET)` moves only this thread (and the processes
        // it starts) to a new network namespace; no memory is involved.
        if unsafe { libc::unshare(libc::CLONE_NEWNET) } != 0 {
            eprintln!(
                "skipped: unshare(CLONE_NEWNET): {}",
                std::io::Error::last_os_error()
            );
            return;
        }
        if !run("ip link set lo up")
            || !run("tc qdisc add dev lo root tbf rate 8kbit burst 1600 latency 60s")
        {
            eprintln!("skipped: could not set up loopback with a tbf qdisc");
            return;
        }
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(async {
            let rx = bind("127.0.0.1:0");
            let tx = bind("127.0.0.1:0");
            // The smallest send buffer the kernel allows (about 4.6 KB).
            options::set(tx.as_fd(), libc::SOL_SOCKET, libc::SO_SNDBUF, 1).unwrap();
            let to = rx.local_addr().unwrap();
            let payloads: Vec<Vec<u8>> = (0..40).map(|i| payload(i, 1200)).collect();
            let transmits: Vec<Transmit<'_>> = payloads.iter().map(|p| datagram(to, p)).collect();

            // Sends that find room never register for writability (a UDP
            // socket would report it for every datagram freed).
            tx.send(&transmits[..1]).await.unwrap();
            assert!(tx.writer.get().is_none());
            recv_msgs(&rx, 1).await;
            let transmits = &transmits[1..];
            let payloads = &payloads[1..];

            let first = tx.try_send(transmits).unwrap();
            assert!(first >= 1 && first < transmits.len(), "sent {first}");
            let err = tx.try_send(&transmits[first..]).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::WouldBlock);

            // The async send waits for space (through a registration for
            // writability made now); open the tap and it sends the rest.
            let mut waiting = std::pin::pin!(tx.send(&transmits[first..]));
            let wait = std::time::Duration::from_millis(50);
            assert!(tokio::time::timeout(wait, &mut waiting).await.is_err());
            assert!(
                tx.writer.get().is_some(),
                "waits through its own registration"
            );
            assert!(run(
                "tc qdisc change dev lo root tbf rate 10gbit burst 10mb latency 1s"
            ));
            let mut sent = first + waiting.await.unwrap();
            while sent < transmits.len() {
                sent += tx.send(&transmits[sent..]).await.unwrap();
            }
            let mut got = recv_msgs(&rx, transmits.len()).await;
            got.sort_by_key(|(bytes, _)| u32::from_be_bytes(bytes[..4].try_into().unwrap()));
            for (i, (bytes, _)) in got.iter().enumerate() {
                assert_eq!(bytes, &payloads[i], "datagram {i}");
            }
            assert_drained(&rx);
        });
    })
    .join()
    .unwrap();
}
