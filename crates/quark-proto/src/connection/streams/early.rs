//! 0-RTT: streams opened and written under the limits a client remembered
//! from the session it resumes, then moved to the server's real limits.

use super::{Streams, dir_index};
use crate::transport_params::TransportParameters;
use crate::types::Dir;

impl Streams {
    /// Whether the server's real limits `p` hold everything 0-RTT already
    /// committed: the streams opened and the bytes written.
    pub(crate) fn fits_committed(&self, p: &TransportParameters) -> bool {
        if self.next_local[dir_index(Dir::Bi)] > p.initial_max_streams_bidi
            || self.next_local[dir_index(Dir::Uni)] > p.initial_max_streams_uni
            || self.send_flow.used() > p.initial_max_data
        {
            return false;
        }
        self.map.iter().all(|(id, e)| {
            let window = match id.dir() {
                Dir::Bi => p.initial_max_stream_data_bidi_remote,
                Dir::Uni => p.initial_max_stream_data_uni,
            };
            id.initiator() != self.side || e.send.as_ref().is_none_or(|s| s.written() <= window)
        })
    }

    /// Whether `p` lowers any limit the remembered parameters `old` gave.
    //= https://www.rfc-editor.org/rfc/rfc9000#section-7.4.1
    //# If 0-RTT data is accepted by the server, the server MUST NOT reduce
    //# any limits or alter any values that might be violated by the client
    //# with its 0-RTT data.
    pub(crate) fn reduces(old: &TransportParameters, p: &TransportParameters) -> bool {
        p.initial_max_data < old.initial_max_data
            || p.initial_max_stream_data_bidi_local < old.initial_max_stream_data_bidi_local
            || p.initial_max_stream_data_bidi_remote < old.initial_max_stream_data_bidi_remote
            || p.initial_max_stream_data_uni < old.initial_max_stream_data_uni
            || p.initial_max_streams_bidi < old.initial_max_streams_bidi
            || p.initial_max_streams_uni < old.initial_max_streams_uni
    }

    /// The handshake completed after 0-RTT: the peer's limits replace the
    /// remembered ones (client) or none (server), for the streams 0-RTT
    /// already opened too. A client checked
    /// [`fits_committed`](Self::fits_committed).
    pub(crate) fn replace_peer_params(&mut self, p: &TransportParameters) {
        self.max_local = [p.initial_max_streams_bidi, p.initial_max_streams_uni];
        self.send_flow.replace_max(p.initial_max_data);
        self.peer_window = [
            p.initial_max_stream_data_bidi_local,
            p.initial_max_stream_data_bidi_remote,
            p.initial_max_stream_data_uni,
        ];
        // Streams opened in 0-RTT (by either side) got the limits known then.
        let side = self.side;
        for (id, e) in self.map.iter_mut() {
            let Some(send) = e.send.as_mut() else {
                continue;
            };
            let was_writable = send.is_writable();
            send.replace_max_stream_data(match (id.dir(), id.initiator() == side) {
                (Dir::Bi, true) => p.initial_max_stream_data_bidi_remote,
                (Dir::Uni, _) => p.initial_max_stream_data_uni,
                (Dir::Bi, false) => p.initial_max_stream_data_bidi_local,
            });
            if !was_writable && send.is_writable() {
                self.events.push_back(super::StreamEvent::Writable(*id));
            }
        }
        for (d, dir) in [Dir::Bi, Dir::Uni].into_iter().enumerate() {
            if self.max_local[d] > self.next_local[d] {
                self.events.push_back(super::StreamEvent::Available(dir));
            }
        }
    }
}
