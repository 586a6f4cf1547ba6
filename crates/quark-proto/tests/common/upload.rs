//! A bulk upload over the simulated pair: the client writes `total` bytes of one
//! value on a bidirectional stream and finishes it; the server reads them back.

use quark_proto::{ConnectionHandle, Dir, ReadOutcome, StreamId};

use super::Sim;

/// One large client-to-server stream: the bulk transfer several tests drive.
pub struct Upload {
    client: ConnectionHandle,
    server: ConnectionHandle,
    id: StreamId,
    total: usize,
    byte: u8,
    chunk: Vec<u8>,
    buf: Vec<u8>,
    written: usize,
    /// Bytes the server has read so far.
    pub read: usize,
    server_stream: Option<StreamId>,
}

impl Upload {
    /// Opens the client's stream; every buffer is allocated here, not in `pump`.
    pub fn new(
        sim: &mut Sim,
        client: ConnectionHandle,
        server: ConnectionHandle,
        total: usize,
        byte: u8,
    ) -> Self {
        let id = sim
            .client
            .connection_mut(client)
            .unwrap()
            .open_stream(Dir::Bi)
            .unwrap();
        Upload {
            client,
            server,
            id,
            total,
            byte,
            chunk: vec![byte; 64 * 1024],
            buf: vec![0u8; 64 * 1024],
            written: 0,
            read: 0,
            server_stream: None,
        }
    }

    /// Whether the server has read every byte.
    pub fn done(&self) -> bool {
        self.read >= self.total
    }

    /// Writes what fits (finishing after the last byte), then reads what
    /// arrived, checking every byte; call between simulation steps.
    pub fn pump(&mut self, sim: &mut Sim) {
        let conn = sim.client.connection_mut(self.client).unwrap();
        while self.written < self.total {
            let n = conn
                .write(
                    self.id,
                    &self.chunk[..self.chunk.len().min(self.total - self.written)],
                )
                .unwrap();
            if n == 0 {
                break;
            }
            self.written += n;
            if self.written == self.total {
                conn.finish(self.id).unwrap();
            }
        }
        let server = sim.server.connection_mut(self.server).unwrap();
        if self.server_stream.is_none() {
            self.server_stream = server.accept_stream(Dir::Bi);
        }
        if let Some(sid) = self.server_stream {
            while let Ok(ReadOutcome::Data(n)) = server.read(sid, &mut self.buf) {
                assert!(self.buf[..n].iter().all(|&b| b == self.byte));
                self.read += n;
            }
        }
    }
}
