//! A small application over the simulated pair: the client sends requests on
//! bidirectional streams, the server echoes each one back after its FIN.

use std::collections::HashMap;

use bytes::Bytes;
use quark_proto::{Connection, ConnectionHandle, Dir, ReadOutcome, StreamId};

use super::Sim;

/// One stream's progress on one side.
#[derive(Default)]
struct Half {
    out: Vec<u8>,
    written: usize,
    finished: bool,
    input: Vec<u8>,
    eof: bool,
    /// `out` as shared bytes, when writes alternate between copies and
    /// shared chunks (`write_shared`).
    shared: Option<Bytes>,
    writes: usize,
}

/// Chunk sizes the shared mode cycles through: below and above the size under
/// which shared chunks are copied, and larger than a packet.
const SHARED_CHUNKS: [usize; 5] = [70_000, 100, 5_000, 3_000, 20_000];

/// Write what fits, finishing after the last byte.
fn pump_write(conn: &mut Connection, id: StreamId, h: &mut Half) {
    while h.written < h.out.len() {
        let result = match &h.shared {
            Some(all) => {
                let len = SHARED_CHUNKS[h.writes % SHARED_CHUNKS.len()];
                let end = (h.written + len).min(all.len());
                if h.writes % 2 == 0 {
                    conn.write_shared(id, &all.slice(h.written..end))
                } else {
                    conn.write(id, &all[h.written..end])
                }
            }
            None => conn.write(id, &h.out[h.written..]),
        };
        h.writes += 1;
        match result {
            Ok(0) => return,
            Ok(n) => h.written += n,
            Err(e) => panic!("write on {id:?}: {e}"),
        }
    }
    if !h.finished {
        conn.finish(id).unwrap();
        h.finished = true;
    }
}

/// Read what arrived.
fn pump_read(conn: &mut Connection, id: StreamId, h: &mut Half) {
    let mut buf = [0u8; 16 * 1024];
    while !h.eof {
        match conn.read(id, &mut buf) {
            Ok(ReadOutcome::Data(n)) => h.input.extend_from_slice(&buf[..n]),
            Ok(ReadOutcome::Finished) => h.eof = true,
            Ok(ReadOutcome::Blocked) => return,
            Err(e) => panic!("read on {id:?}: {e}"),
        }
    }
}

/// Echo traffic: `requests` streams from the client, each echoed by the server.
pub struct Echo {
    client: ConnectionHandle,
    server: Option<ConnectionHandle>,
    pending: Vec<Vec<u8>>,
    client_streams: HashMap<StreamId, Half>,
    server_streams: HashMap<StreamId, Half>,
    expected: HashMap<StreamId, Vec<u8>>,
    pub completed: usize,
    total: usize,
    shared: bool,
}

impl Echo {
    pub fn new(client: ConnectionHandle, requests: Vec<Vec<u8>>) -> Self {
        let total = requests.len();
        let mut pending = requests;
        pending.reverse();
        Echo {
            client,
            server: None,
            pending,
            client_streams: HashMap::new(),
            server_streams: HashMap::new(),
            expected: HashMap::new(),
            completed: 0,
            total,
            shared: false,
        }
    }

    /// [`new`](Self::new), with both sides alternating copied writes and
    /// shared chunks (`write_shared`) of varied sizes.
    pub fn shared(client: ConnectionHandle, requests: Vec<Vec<u8>>) -> Self {
        Echo {
            shared: true,
            ..Self::new(client, requests)
        }
    }

    /// Use this server connection (when the simulation holds several).
    pub fn set_server(&mut self, h: ConnectionHandle) {
        self.server = Some(h);
    }

    pub fn done(&self) -> bool {
        self.completed == self.total
    }

    /// Make progress on both sides; call between simulation steps.
    pub fn drive(&mut self, sim: &mut Sim) {
        if self.server.is_none() {
            self.server = sim.server_handles.first().copied();
        }
        let c = sim.client.connection_mut(self.client).unwrap();
        while c.is_handshake_complete() {
            let Some(body) = self.pending.last() else {
                break;
            };
            let Some(id) = c.open_stream(Dir::Bi) else {
                break;
            };
            let body = body.clone();
            self.pending.pop();
            self.expected.insert(id, body.clone());
            self.client_streams.insert(
                id,
                Half {
                    shared: self.shared.then(|| Bytes::from(body.clone())),
                    out: body,
                    ..Half::default()
                },
            );
        }
        let mut finished = Vec::new();
        for (&id, h) in self.client_streams.iter_mut() {
            pump_write(c, id, h);
            pump_read(c, id, h);
            if h.eof {
                assert_eq!(
                    h.input.len(),
                    self.expected[&id].len(),
                    "echo length on {id:?}"
                );
                assert!(h.input == self.expected[&id], "echo bytes differ on {id:?}");
                finished.push(id);
            }
        }
        for id in finished {
            self.client_streams.remove(&id);
            self.completed += 1;
        }
        let Some(sh) = self.server else { return };
        let Some(s) = sim.server.connection_mut(sh) else {
            return;
        };
        while let Some(id) = s.accept_stream(Dir::Bi) {
            self.server_streams.insert(id, Half::default());
        }
        let mut done = Vec::new();
        for (&id, h) in self.server_streams.iter_mut() {
            pump_read(s, id, h);
            if h.eof && h.out.is_empty() && !h.finished {
                h.out = std::mem::take(&mut h.input);
                if self.shared {
                    h.shared = Some(Bytes::from(h.out.clone()));
                }
            }
            if h.eof {
                pump_write(s, id, h);
                if h.finished && h.written == h.out.len() {
                    done.push(id);
                }
            }
        }
        for id in done {
            self.server_streams.remove(&id);
        }
    }
}

/// Run the echo to completion.
pub fn run_echo(sim: &mut Sim, echo: &mut Echo, max_steps: usize) {
    for _ in 0..max_steps {
        echo.drive(sim);
        if echo.done() {
            return;
        }
        if !sim.step() {
            break;
        }
    }
    panic!(
        "echo incomplete: {}/{} requests after the simulation stopped",
        echo.completed, echo.total
    );
}
