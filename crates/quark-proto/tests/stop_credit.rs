//! Data a receiver stops (STOP_SENDING) without reading returns connection
//! credit, and MAX_DATA announces it at once: the sender may be waiting for
//! it to send on a stream that has nothing to read yet, so no read would.

mod common;

use std::time::Duration;

use common::payload;
use common::requests::four_requests;
use quark_proto::ReadOutcome;

#[test]
fn stopping_unread_streams_lets_the_peer_send_on_another() {
    const WINDOW: u64 = 128 * 1024;
    let (mut sim, c, s, ids) = four_requests(150, WINDOW);
    // The server fills the client's window on the first three streams.
    let filler = payload(WINDOW as usize, 1);
    let conn = sim.server.connection_mut(s).unwrap();
    let mut written = 0;
    for &id in &ids[..3] {
        written += conn.write(id, &filler[written..]).unwrap();
    }
    assert_eq!(written as u64, WINDOW);
    sim.run_for(Duration::from_millis(100));
    // The last stream's response waits for credit the client has not read.
    let body = payload(100_000, 2);
    let last = ids[3];
    let mut at = sim
        .server
        .connection_mut(s)
        .unwrap()
        .write(last, &body)
        .unwrap();
    assert_eq!(at, 0, "no credit left");
    let conn = sim.client.connection_mut(c).unwrap();
    for &id in &ids[..3] {
        conn.stop_sending(id, 0).unwrap();
    }
    let (mut got, mut buf) = (Vec::new(), [0u8; 4096]);
    sim.run_until(10_000, |sim| {
        let conn = sim.server.connection_mut(s).unwrap();
        while at < body.len() {
            let n = conn.write(last, &body[at..]).unwrap();
            if n == 0 {
                break;
            }
            at += n;
            if at == body.len() {
                conn.finish(last).unwrap();
            }
        }
        let conn = sim.client.connection_mut(c).unwrap();
        loop {
            match conn.read(last, &mut buf).unwrap() {
                ReadOutcome::Data(n) => got.extend_from_slice(&buf[..n]),
                ReadOutcome::Finished => return true,
                ReadOutcome::Blocked => return false,
            }
        }
    });
    assert!(got == body, "body differs");
}
