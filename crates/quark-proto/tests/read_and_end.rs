//! A read that hands over a stream's last bytes ends it (`read_visit_to_end`):
//! one request after another, over small windows (16 KiB per stream, 48 KiB
//! per connection) and a limit of 4 streams, with requests and responses
//! larger than the windows. Every request's stream is freed by that read, so
//! credit (MAX_STREAM_DATA, MAX_DATA, MAX_STREAMS) must keep coming: a stall
//! fails `run_until`, and every byte is checked.

mod common;

use std::time::Duration;

use common::{Sim, Tls, payload, seed, small_windows};
use quark_proto::{
    ClientConfig, ConnectionHandle, Dir, ReadOutcome, ServerConfig, StreamError, StreamId,
    TransportConfig,
};

const LIMIT: u64 = 4;

fn pair(seed: u64) -> (Sim, ConnectionHandle, ConnectionHandle) {
    let tls = Tls::new();
    let transport = TransportConfig {
        max_concurrent_bidi_streams: LIMIT,
        ..small_windows()
    };
    let mut server = ServerConfig::new(tls.server_config(None));
    server.transport = transport.clone().into();
    let mut sim = Sim::new(seed, server, Default::default());
    sim.set_delay(Duration::from_millis(2));
    let mut client = ClientConfig::new(tls.client_config(None));
    client.transport = transport.into();
    let c = sim.connect_with(client);
    let s = sim.handshake(c);
    sim.run_for(Duration::from_millis(100));
    (sim, c, s)
}

/// One side of a message: what is left to write, and whether the FIN went.
struct Out {
    data: Vec<u8>,
    at: usize,
    fin: bool,
}

impl Out {
    fn new(data: Vec<u8>) -> Self {
        Out {
            data,
            at: 0,
            fin: false,
        }
    }

    /// Writes what the stream takes now, then the FIN.
    fn push(&mut self, conn: &mut quark_proto::Connection, id: StreamId) {
        if self.at < self.data.len() {
            self.at += conn.write(id, &self.data[self.at..]).unwrap();
        }
        if self.at == self.data.len() && !self.fin {
            conn.finish(id).unwrap();
            self.fin = true;
        }
    }
}

/// Reads `id` in pieces of at most `max` with `read_visit_to_end`: true once
/// the read that took the last bytes ended the stream. Checks that the end
/// comes with the last byte, never before it, and that the stream is gone.
fn pull(
    conn: &mut quark_proto::Connection,
    id: StreamId,
    max: usize,
    into: &mut Vec<u8>,
    len: usize,
    ends: &mut usize,
) -> bool {
    loop {
        match conn.read_visit_to_end(id, max, |p| into.extend_from_slice(p)) {
            Ok((ReadOutcome::Data(n), ended)) => {
                assert!(n > 0 && n <= max);
                assert!(into.len() <= len);
                assert!(
                    !ended || into.len() == len,
                    "the end comes with the last byte"
                );
                if ended {
                    *ends += 1;
                    // Ended: nothing more to read (the stream is gone, or
                    // kept until its sending half is done).
                    let again = conn.read_visit_to_end(id, max, |_| {});
                    let over = matches!(again, Ok((ReadOutcome::Finished, false)))
                        || matches!(again, Err(StreamError::UnknownStream));
                    assert!(over, "{again:?}");
                    return true;
                }
            }
            // Or the stream's first frame has not come yet.
            Ok((ReadOutcome::Blocked, _)) | Err(StreamError::UnknownStream) => return false,
            // An empty message ends with a Finished read, as before.
            Ok((ReadOutcome::Finished, _)) => {
                assert_eq!(into.len(), len);
                return true;
            }
            Err(e) => panic!("read on {id:?}: {e}"),
        }
    }
}

#[test]
fn requests_over_small_windows_end_with_their_last_bytes() {
    let (mut sim, c, s) = pair(seed(91));
    // Sizes below, at and well above the 16 KiB stream window; 0 once.
    let sizes = [0, 1, 2048, 16 * 1024, 40_000, 100_000, 5_000];
    let requests = 12 * LIMIT as usize;
    // Messages that ended with their last bytes (not with a Finished read).
    let mut ends = 0;
    for i in 0..requests {
        let (req_len, resp_len) = (sizes[i % sizes.len()], sizes[(i + 3) % sizes.len()]);
        let id = sim.client.connection_mut(c).unwrap().open_stream(Dir::Bi);
        let id = id.unwrap_or_else(|| panic!("no stream credit for request {i}"));
        let mut request = Out::new(payload(req_len, i as u8));
        let mut response = Out::new(payload(resp_len, !(i as u8)));
        let (mut got_req, mut got_resp) = (Vec::new(), Vec::new());
        let (mut req_done, mut resp_done) = (false, false);
        let max = 1 + (i * 997) % 9000;
        sim.run_until(200_000, |sim| {
            let client = sim.client.connection_mut(c).unwrap();
            request.push(client, id);
            if !resp_done {
                resp_done = pull(client, id, max, &mut got_resp, resp_len, &mut ends);
            }
            let server = sim.server.connection_mut(s).unwrap();
            while server.accept_stream(Dir::Bi).is_some() {}
            if !req_done {
                req_done = pull(server, id, max, &mut got_req, req_len, &mut ends);
            }
            // The server answers once the request is whole (as a server that
            // reads the body first), so its stream's both halves are done.
            if req_done {
                response.push(server, id);
            }
            resp_done && response.fin
        });
        assert_eq!(got_req, request.data, "request {i}");
        assert_eq!(got_resp, response.data, "response {i}");
    }
    assert!(
        ends > requests,
        "{ends} of {} messages ended with their data",
        2 * requests
    );
    // 12 limits' worth of streams went through: each was freed on both
    // sides and the limit rose with them. The raise for the last one rides
    // on the next packet that goes anyway (stream_credit.rs), so at least
    // all the others' credit is there now.
    sim.run_for(Duration::from_millis(200));
    let client = sim.client.connection_mut(c).unwrap();
    let opened = std::iter::from_fn(|| client.open_stream(Dir::Bi)).count();
    assert!(opened as u64 >= LIMIT - 1, "{opened} streams open again");
}
