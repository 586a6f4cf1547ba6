//! Stream-related frames received from the peer.

use std::collections::VecDeque;

use bytes::Bytes;

use super::{RecvFlow, StreamEntry, StreamEvent, Streams, dir_index};
use crate::error::TransportError;
use crate::frame::{ResetStream, StopSending};
use crate::types::{Dir, StreamId};

impl Streams {
    /// Find a stream a peer frame refers to, opening peer streams implicitly.
    /// `Ok(None)` means the stream existed once and is gone: ignore the frame.
    fn stream_for_frame(&mut self, id: StreamId) -> Result<Option<StreamId>, TransportError> {
        if self.map.contains_key(&id) {
            return Ok(Some(id));
        }
        let d = dir_index(id.dir());
        if id.initiator() == self.side {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-19.8
            //# An endpoint MUST terminate the connection with error STREAM_STATE_ERROR
            //# if it receives a STREAM frame for a locally initiated stream that has
            //# not yet been created
            if id.index() >= self.next_local[d] {
                return Err(TransportError::stream_state(
                    "frame for an unopened local stream",
                ));
            }
            return Ok(None);
        }
        if id.index() < self.next_remote[d] {
            return Ok(None); // closed and freed
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-4.6
        //# Endpoints MUST NOT exceed the limit set by their peer.  An endpoint
        //# that receives a frame with a stream ID exceeding the limit it has sent
        //# MUST treat this as a connection error of type STREAM_LIMIT_ERROR
        if id.index() >= self.max_remote[d] {
            return Err(TransportError::stream_limit("peer exceeded MAX_STREAMS"));
        }
        //= https://www.rfc-editor.org/rfc/rfc9000#section-3.2
        //# ... a stream ... of a given type ... implicitly opens all lower-numbered
        //# streams of the same type
        for index in self.next_remote[d]..=id.index() {
            let new = StreamId::new(self.side.peer(), id.dir(), index);
            self.insert_stream(new);
            self.accept_queue[d].push_back(new);
        }
        self.next_remote[d] = id.index() + 1;
        self.events.push_back(StreamEvent::Opened(id.dir()));
        Ok(Some(id))
    }

    /// STREAM frame; its data may lie in `owner`, a shared receive buffer
    /// (then it may be kept there: zero-copy receive).
    pub(crate) fn on_stream_frame(
        &mut self,
        id: StreamId,
        offset: u64,
        (data, owner): (&[u8], Option<&Bytes>),
        fin: bool,
    ) -> Result<(), TransportError> {
        if id.dir() == Dir::Uni && id.initiator() == self.side {
            return Err(TransportError::stream_state(
                "STREAM frame on a send-only stream",
            ));
        }
        let frame = (offset, data, fin, owner);
        // One map lookup for a stream that exists: every frame of a
        // transfer but its first (issue #30).
        let (consumed, stopped) = match self.map.get_mut(&id) {
            Some(entry) => Self::on_data(&mut self.recv_flow, &mut self.events, entry, id, frame)?,
            None => {
                let Some(id) = self.stream_for_frame(id)? else {
                    return Ok(());
                };
                let entry = self.map.get_mut(&id).expect("stream present");
                Self::on_data(&mut self.recv_flow, &mut self.events, entry, id, frame)?
            }
        };
        self.on_consumed(consumed);
        self.unblock_peer();
        if stopped {
            self.maybe_free(id);
        }
        Ok(())
    }

    /// A STREAM frame's data into an open stream `entry`: returns the bytes
    /// consumed (a stopped stream discards what arrives) and whether the
    /// stream was stopped.
    fn on_data(
        recv_flow: &mut RecvFlow,
        events: &mut VecDeque<StreamEvent>,
        entry: &mut StreamEntry,
        id: StreamId,
        (offset, data, fin, owner): (u64, &[u8], bool, Option<&Bytes>),
    ) -> Result<(u64, bool), TransportError> {
        let recv = entry.recv.as_mut().expect("receiving half exists");
        let before = recv.read_offset();
        let grew = recv.on_data_from(offset, data, fin, owner)?;
        recv_flow.on_received(grew)?;
        let consumed = recv.read_offset() - before;
        if entry.stop_code.is_none() && recv.is_readable() {
            Self::signal_readable(events, entry, id);
        }
        Ok((consumed, entry.stop_code.is_some()))
    }

    /// RESET_STREAM frame.
    pub(crate) fn on_reset_stream(&mut self, f: &ResetStream) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.4
        //# An endpoint that receives a RESET_STREAM frame for a send-only stream
        //# MUST terminate the connection with error STREAM_STATE_ERROR.
        if f.id.dir() == Dir::Uni && f.id.initiator() == self.side {
            return Err(TransportError::stream_state(
                "RESET_STREAM on a send-only stream",
            ));
        }
        let Some(id) = self.stream_for_frame(f.id)? else {
            return Ok(());
        };
        let entry = self.map.get_mut(&id).expect("stream present");
        let recv = entry.recv.as_mut().expect("receiving half exists");
        let before = recv.read_offset();
        let grew = recv.on_reset(f.error_code, f.final_size)?;
        self.recv_flow.on_received(grew)?;
        // Discarded data counts as consumed (read_offset covers it).
        let consumed = recv.read_offset() - before;
        let stopped = entry.stop_code.is_some();
        if !stopped {
            Self::signal_readable(&mut self.events, entry, id);
        }
        self.on_consumed(consumed);
        if stopped {
            self.maybe_free(id);
        }
        Ok(())
    }

    /// STOP_SENDING frame.
    #[inline(never)]
    pub(crate) fn on_stop_sending(&mut self, f: &StopSending) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.5
        //# An endpoint that receives a STOP_SENDING frame for a receive-only
        //# stream MUST terminate the connection with error STREAM_STATE_ERROR.
        if f.id.dir() == Dir::Uni && f.id.initiator() != self.side {
            return Err(TransportError::stream_state(
                "STOP_SENDING on a receive-only stream",
            ));
        }
        let Some(id) = self.stream_for_frame(f.id)? else {
            return Ok(());
        };
        let entry = self.map.get_mut(&id).expect("stream present");
        let send = entry.send.as_mut().expect("sending half exists");
        // The application hears of the first STOP_SENDING only: a peer repeating
        // it must not grow the event queue.
        let first = send.stopped().is_none();
        let before = send.buffered();
        if send.on_stop_sending(f.error_code).is_some() {
            //= https://www.rfc-editor.org/rfc/rfc9000#section-3.5
            //# An endpoint that receives a STOP_SENDING frame MUST send a
            //# RESET_STREAM frame if the stream is in the "Ready" or "Send" state.
            entry.reset_code = Some(f.error_code);
            self.pending.reset.push(id, ());
        }
        let freed = before - send.buffered();
        self.on_cleared(freed);
        self.stop_waiting(id);
        if first {
            self.events
                .push_back(StreamEvent::Stopped(id, f.error_code));
        }
        Ok(())
    }

    /// MAX_STREAM_DATA frame.
    pub(crate) fn on_max_stream_data(
        &mut self,
        id: StreamId,
        max: u64,
    ) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.10
        //# An endpoint that receives a MAX_STREAM_DATA frame for a receive-only
        //# stream MUST terminate the connection with error STREAM_STATE_ERROR.
        if id.dir() == Dir::Uni && id.initiator() != self.side {
            return Err(TransportError::stream_state(
                "MAX_STREAM_DATA on a receive-only stream",
            ));
        }
        let Some(id) = self.stream_for_frame(id)? else {
            return Ok(());
        };
        let entry = self.map.get_mut(&id).expect("stream present");
        let send = entry.send.as_mut().expect("sending half exists");
        // Only credit that unblocks the stream is news: a peer raising the
        // limit byte by byte must not queue an event per frame.
        let was_writable = send.is_writable();
        if send.on_max_stream_data(max) {
            if !was_writable && send.is_writable() {
                self.events.push_back(StreamEvent::Writable(id));
            }
            self.on_stream_credit(id);
        }
        Ok(())
    }

    /// STREAM_DATA_BLOCKED frame: the peer is waiting for credit on a stream we
    /// receive on. Opens the stream implicitly; credit follows our reads.
    pub(crate) fn on_stream_data_blocked(&mut self, id: StreamId) -> Result<(), TransportError> {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-19.13
        //# An endpoint that receives a STREAM_DATA_BLOCKED frame for a send-only
        //# stream MUST terminate the connection with error STREAM_STATE_ERROR.
        if id.dir() == Dir::Uni && id.initiator() == self.side {
            return Err(TransportError::stream_state(
                "STREAM_DATA_BLOCKED on a send-only stream",
            ));
        }
        self.stream_for_frame(id)?;
        Ok(())
    }

    /// MAX_DATA frame.
    #[inline(never)]
    pub(crate) fn on_max_data(&mut self, max: u64) {
        // Writers wait on connection credit only once it is used up.
        let blocked = self.send_flow.credit() == 0;
        if self.send_flow.on_max_data(max) {
            self.on_connection_credit();
            if !blocked {
                return;
            }
            let writable: Vec<StreamId> = self
                .map
                .iter()
                .filter(|(_, e)| e.send.as_ref().is_some_and(|s| s.is_writable()))
                .map(|(id, _)| *id)
                .collect();
            self.events
                .extend(writable.into_iter().map(StreamEvent::Writable));
        }
    }

    /// MAX_STREAMS frame.
    pub(crate) fn on_max_streams(&mut self, dir: Dir, max: u64) {
        let d = dir_index(dir);
        if max > self.max_local[d] {
            // `open` fails only at the limit: below it a raise is no news.
            let blocked = self.next_local[d] >= self.max_local[d];
            self.max_local[d] = max;
            if blocked {
                self.events.push_back(StreamEvent::Available(dir));
            }
        }
    }

    /// The connection is gone: wake every stream so readers and writers see it.
    pub(crate) fn on_connection_lost(&mut self) {
        let ids: Vec<StreamId> = self.map.keys().copied().collect();
        for id in ids {
            self.events.push_back(StreamEvent::Readable(id));
            self.events.push_back(StreamEvent::Writable(id));
        }
        for dir in DIRS_ALL {
            self.events.push_back(StreamEvent::Available(dir));
        }
    }
}

const DIRS_ALL: [Dir; 2] = [Dir::Bi, Dir::Uni];
