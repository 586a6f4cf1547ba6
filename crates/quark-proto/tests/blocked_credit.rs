//! A reader that reads its streams one at a time, while streams it has not
//! read yet hold the connection's whole window, still gets the rest of the
//! stream it reads: with the peer blocked on MAX_DATA, whatever it read goes
//! back at once, not only after half a window. Otherwise the two wait for
//! each other until the idle timeout (found through the driver: four 4 MiB
//! uploads filling a 16 MiB window, read one after the other).

mod common;

use std::time::Duration;

use common::requests::four_requests;
use common::{Sim, payload};
use quark_proto::ReadOutcome;

#[test]
fn streams_read_one_at_a_time_get_through_a_full_connection_window() {
    const WINDOW: u64 = 128 * 1024;
    const BODY: usize = 100_000;
    for round in 0..3u64 {
        let (mut sim, c, s, ids) = four_requests(160 + round, WINDOW);
        // The server answers each with 100 KB: 400 KB for a 128 KiB window.
        let bodies: Vec<Vec<u8>> = (0..4).map(|i| payload(BODY, i as u8)).collect();
        let mut at = [0usize; 4];
        // Written 8 KB a stream at a time, so each holds a share of the window.
        let write = |sim: &mut Sim, at: &mut [usize; 4]| {
            let conn = sim.server.connection_mut(s).unwrap();
            let mut wrote = true;
            while wrote {
                wrote = false;
                for (i, &id) in ids.iter().enumerate() {
                    if at[i] == BODY {
                        continue;
                    }
                    let end = (at[i] + 8_000).min(BODY);
                    let n = conn.write(id, &bodies[i][at[i]..end]).unwrap();
                    at[i] += n;
                    wrote |= n > 0;
                    if n > 0 && at[i] == BODY {
                        conn.finish(id).unwrap();
                    }
                }
            }
        };
        write(&mut sim, &mut at);
        sim.run_for(Duration::from_millis(200));
        write(&mut sim, &mut at);
        sim.run_for(Duration::from_millis(200));
        assert!(
            at.iter().sum::<usize>() < 4 * BODY,
            "the window holds the server back: {at:?}"
        );
        // The client reads the streams in order, each to its end.
        let mut buf = [0u8; 4096];
        for (i, &id) in ids.iter().enumerate() {
            let mut got = Vec::new();
            sim.run_until(20_000, |sim| {
                write(sim, &mut at);
                let conn = sim.client.connection_mut(c).unwrap();
                loop {
                    match conn.read(id, &mut buf).expect("the connection is open") {
                        ReadOutcome::Data(n) => got.extend_from_slice(&buf[..n]),
                        ReadOutcome::Finished => return true,
                        ReadOutcome::Blocked => return false,
                    }
                }
            });
            assert!(got == bodies[i], "round {round}: stream {i} differs");
        }
    }
}
