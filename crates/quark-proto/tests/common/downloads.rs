//! Downloads over the simulated pair: the client asks for bodies on
//! bidirectional streams, the server answers each with a body of the size
//! asked for at the priority asked for (as an HTTP/3 server applies a
//! request's Priority field), writing as the send budget lets it.

use std::time::Instant;

use quark_proto::{ConnectionHandle, Dir, Priority, ReadOutcome, StreamError, StreamId};

use super::{Sim, payload};

/// One request and its response.
pub struct Download {
    pub id: StreamId,
    body: Vec<u8>,
    priority: Option<Priority>,
    /// The server has seen the request and set the priority.
    seen: bool,
    written: usize,
    /// What the client has read.
    pub got: Vec<u8>,
    /// When the client read the end of the body.
    pub done_at: Option<Instant>,
}

impl Download {
    /// Whether the client has the whole body, byte for byte.
    pub fn is_whole(&self) -> bool {
        self.done_at.is_some() && self.got == self.body
    }
}

/// The client and server sides of a set of downloads on one connection.
pub struct Downloads {
    client: ConnectionHandle,
    server: ConnectionHandle,
    pub list: Vec<Download>,
}

impl Downloads {
    pub fn new(client: ConnectionHandle, server: ConnectionHandle) -> Self {
        Downloads {
            client,
            server,
            list: Vec::new(),
        }
    }

    /// The client asks for `len` bytes (tagged `tag`) at `priority`;
    /// returns the download's index.
    pub fn request(
        &mut self,
        sim: &mut Sim,
        len: usize,
        tag: u8,
        priority: Option<Priority>,
    ) -> usize {
        let conn = sim.client.connection_mut(self.client).unwrap();
        let id = conn.open_stream(Dir::Bi).unwrap();
        conn.write(id, b"GET").unwrap();
        conn.finish(id).unwrap();
        self.list.push(Download {
            id,
            body: payload(len, tag),
            priority,
            seen: false,
            written: 0,
            got: Vec::new(),
            done_at: None,
        });
        self.list.len() - 1
    }

    /// Bytes the client has read of all downloads.
    pub fn read_total(&self) -> usize {
        self.list.iter().map(|d| d.got.len()).sum()
    }

    /// Bytes the client has read of every download but `except`.
    pub fn others_read(&self, except: usize) -> usize {
        self.read_total() - self.list[except].got.len()
    }

    pub fn all_done(&self) -> bool {
        self.list.iter().all(|d| d.done_at.is_some())
    }

    /// One round of both applications: the server writes what room there
    /// is, the client reads what arrived. The server serves the newest
    /// request first, so a late response is admitted into the send budget
    /// as soon as room frees whether or not priorities are in use: only
    /// the transport's scheduler differs between runs.
    pub fn drive(&mut self, sim: &mut Sim) {
        let server = sim.server.connection_mut(self.server).unwrap();
        while server.accept_stream(Dir::Bi).is_some() {}
        for d in self.list.iter_mut().rev() {
            if !d.seen {
                let asked = server.readable_bytes(d.id) > 0 || server.is_readable(d.id);
                if !asked {
                    continue;
                }
                server.set_stream_priority(d.id, d.priority).unwrap();
                d.seen = true;
            }
            if d.written < d.body.len() {
                d.written += server.write(d.id, &d.body[d.written..]).unwrap();
                if d.written == d.body.len() {
                    server.finish(d.id).unwrap();
                }
            }
        }
        let now = sim.now;
        let client = sim.client.connection_mut(self.client).unwrap();
        let mut buf = [0u8; 16384];
        for d in self.list.iter_mut().filter(|d| d.done_at.is_none()) {
            loop {
                match client.read(d.id, &mut buf) {
                    Ok(ReadOutcome::Data(n)) => d.got.extend_from_slice(&buf[..n]),
                    Ok(ReadOutcome::Finished) => {
                        d.done_at = Some(now);
                        break;
                    }
                    Ok(ReadOutcome::Blocked) | Err(StreamError::UnknownStream) => break,
                    Err(e) => panic!("read on {:?}: {e}", d.id),
                }
            }
        }
    }
}
