//! ECN marks set on send are read back on receive.

use super::{bind, datagram, payload, recv_msgs};
use crate::Transmit;

async fn ecn_round_trip(addr: &str) {
    let rx = bind(addr);
    let tx = bind(addr);
    let to = rx.local_addr().unwrap();
    let p = payload(3, 200);
    // Not-ECT, ECT(1), ECT(0), CE; higher bits are ignored.
    for (ecn, expect) in [
        (0u8, 0u8),
        (0b01, 0b01),
        (0b10, 0b10),
        (0b11, 0b11),
        (0b1110, 0b10),
    ] {
        tx.try_send(&[Transmit {
            ecn,
            ..datagram(to, &p)
        }])
        .unwrap();
        let got = recv_msgs(&rx, 1).await;
        assert_eq!(got[0].1.ecn, expect, "sent {ecn:#b} over {addr}");
    }
}

#[tokio::test]
async fn ecn_v4() {
    ecn_round_trip("127.0.0.1:0").await;
}

#[tokio::test]
async fn ecn_v6() {
    ecn_round_trip("[::1]:0").await;
}

#[tokio::test]
async fn ecn_marks_every_gso_segment() {
    for addr in ["127.0.0.1:0", "[::1]:0"] {
        let rx = bind(addr);
        rx.set_gro(false).unwrap();
        let tx = bind(addr);
        let contents = payload(4, 5 * 500);
        let t = Transmit {
            ecn: 0b10,
            segment_size: Some(500),
            ..datagram(rx.local_addr().unwrap(), &contents)
        };
        tx.try_send(&[t]).unwrap();
        let got = recv_msgs(&rx, 5).await;
        assert!(got.iter().all(|(_, m)| m.ecn == 0b10 && m.len == 500));
    }
}
