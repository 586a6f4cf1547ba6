//! Stream frames and stream-related control frames we send, and what happens
//! when they are acknowledged or lost.

use super::{StreamEvent, Streams, dir_index};
use crate::connection::sent::{Control, SentFrames, StreamChunk};
use crate::frame::{self, Frame, ResetStream, StopSending};
use crate::stream::{RecvState, SendState};
use crate::types::{Dir, StreamId};

/// How a stream's turn at sending ended.
pub(super) enum Turn {
    /// Nothing left to send (or the stream is gone): out of the queue.
    Done,
    /// More to send; `full`: the packet has no room left.
    More { full: bool },
}

/// Worst-case STREAM header for a frame filling `room` bytes: type, ID, an
/// 8-byte offset, and a length field as long as `room` needs.
impl Streams {
    /// Whether flow-control or stream-state frames must be sent now (so the
    /// caller knows if a read left anything for the transmit path). A
    /// MAX_STREAMS raise that can wait for another packet does not count.
    pub(crate) fn has_control(&self) -> bool {
        let p = &self.pending;
        p.max_data
            || !p.max_stream_data.is_empty()
            || (0..2).any(|d| self.max_streams_urgent(d))
            || p.streams_blocked.iter().any(Option::is_some)
            || !p.stream_data_blocked.is_empty()
            || p.data_blocked.is_some()
            || !p.reset.is_empty()
            || !p.stop.is_empty()
    }

    /// Whether a pending MAX_STREAMS must go out on its own. While the peer
    /// still has half its streams to open at the limit it knows, the raise
    /// waits for a packet sent anyway (every packet carries pending control
    /// frames): sent alone, it made a request/response exchange cost two
    /// extra packets, and two extra wake-ups, every eighth of the limit (the
    /// peer acknowledges a second ack-eliciting packet at once).
    fn max_streams_urgent(&self, d: usize) -> bool {
        self.pending.max_streams[d]
            && self.max_remote_sent[d].saturating_sub(self.next_remote[d])
                <= self.limits.max_concurrent[d] / 2
    }

    /// Write pending control frames while they fit before `max_end`.
    pub(crate) fn write_control(
        &mut self,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) {
        // Every packet comes here; in bulk nothing is pending, and the checks
        // below (a closure, four queues) cost ~70 instructions per packet.
        if self.pending.is_idle() {
            return;
        }
        let mut emit = |buf: &mut Vec<u8>, frame: Frame<'_>, ctl: Control| -> bool {
            if buf.len() + frame.encoded_len() > max_end {
                return false;
            }
            frame.encode(buf);
            sent.push_control(ctl);
            true
        };
        if self.pending.max_data
            && emit(
                buf,
                Frame::MaxData(self.recv_flow.max_data()),
                Control::MaxData,
            )
        {
            self.pending.max_data = false;
        }
        for dir in [Dir::Bi, Dir::Uni] {
            let d = dir_index(dir);
            if self.pending.max_streams[d]
                && emit(
                    buf,
                    Frame::MaxStreams {
                        dir,
                        max: self.max_remote[d],
                    },
                    Control::MaxStreams(dir),
                )
            {
                self.pending.max_streams[d] = false;
                self.max_remote_sent[d] = self.max_remote[d];
            }
            if let Some(limit) = self.pending.streams_blocked[d] {
                if emit(
                    buf,
                    Frame::StreamsBlocked { dir, limit },
                    Control::StreamsBlocked(dir, limit),
                ) {
                    self.pending.streams_blocked[d] = None;
                }
            }
        }
        if let Some(limit) = self.pending.data_blocked {
            if emit(
                buf,
                Frame::DataBlocked { limit },
                Control::DataBlocked(limit),
            ) {
                self.pending.data_blocked = None;
            }
        }
        while let Some((id, ())) = self.pending.max_stream_data.front() {
            let Some(recv) = self.map.get(&id).and_then(|e| e.recv.as_ref()) else {
                self.pending.max_stream_data.pop_front();
                continue;
            };
            let frame = Frame::MaxStreamData {
                id,
                max: recv.max_stream_data(),
            };
            if !emit(buf, frame, Control::MaxStreamData(id)) {
                break;
            }
            self.pending.max_stream_data.pop_front();
        }
        while let Some((id, limit)) = self.pending.stream_data_blocked.front() {
            if !emit(
                buf,
                Frame::StreamDataBlocked { id, limit },
                Control::StreamDataBlocked(id, limit),
            ) {
                break;
            }
            self.pending.stream_data_blocked.pop_front();
        }
        while let Some((id, ())) = self.pending.reset.front() {
            let Some(entry) = self.map.get(&id) else {
                self.pending.reset.pop_front();
                continue;
            };
            let (Some(send), Some(code)) = (entry.send.as_ref(), entry.reset_code) else {
                self.pending.reset.pop_front();
                continue;
            };
            let frame = Frame::ResetStream(ResetStream {
                id,
                error_code: code,
                final_size: send.written(),
            });
            if !emit(buf, frame, Control::ResetStream(id)) {
                break;
            }
            self.pending.reset.pop_front();
        }
        while let Some((id, ())) = self.pending.stop.front() {
            let Some(code) = self.map.get(&id).and_then(|e| e.stop_code) else {
                self.pending.stop.pop_front();
                continue;
            };
            if !emit(
                buf,
                Frame::StopSending(StopSending {
                    id,
                    error_code: code,
                }),
                Control::StopSending(id),
            ) {
                break;
            }
            self.pending.stop.pop_front();
        }
    }

    /// Write STREAM frames while they fit, taking streams round-robin; each
    /// stream fills what it can of the packet before the next one gets a turn.
    /// Streams with a priority go in RFC 9218's order (`sched.rs`).
    pub(crate) fn write_stream_frames(
        &mut self,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) {
        if self.send_queue.levels.is_some() {
            self.write_prioritized(buf, max_end, sent);
            return;
        }
        for _ in 0..self.send_queue.plain.len() {
            let Some(id) = self.send_queue.plain.pop_front() else {
                break;
            };
            if let Turn::More { full } = self.write_turn(id, buf, max_end, sent) {
                self.send_queue.plain.push_back(id);
                if full {
                    break; // packet full; this stream continues in the next one
                }
            }
        }
    }

    /// One stream's turn: STREAM frames of it while they fit.
    pub(super) fn write_turn(
        &mut self,
        id: StreamId,
        buf: &mut Vec<u8>,
        max_end: usize,
        sent: &mut SentFrames,
    ) -> Turn {
        let Some(entry) = self.map.get_mut(&id) else {
            return Turn::Done;
        };
        let Some(send) = entry.send.as_mut() else {
            entry.queued = false;
            return Turn::Done;
        };
        // Sized from the real offset (no range starts beyond what was
        // written), not the 8-byte worst case: a header reserved too large
        // leaves datagrams a few bytes short, and a short datagram ends a
        // GSO batch.
        let room = max_end.saturating_sub(buf.len());
        let header = frame::stream_header_len(id, send.written(), room, true);
        let held_back = send.at_not_sent_limit();
        while buf.len() + header < max_end {
            let Some(range) = send.next_range(max_end - buf.len() - header) else {
                break;
            };
            frame::encode_stream_header(buf, id, range.offset, range.len, range.fin, true);
            send.copy_range(range.offset, range.len, buf);
            let chunk = StreamChunk {
                id,
                offset: range.offset,
                len: range.len as u32,
                fin: range.fin,
            };
            sent.push_stream(chunk);
        }
        if held_back && send.is_writable() {
            // Sending made room under the not-sent limit.
            self.events.push_back(StreamEvent::Writable(id));
        }
        if send.has_pending() {
            Turn::More {
                full: buf.len() + header >= max_end,
            }
        } else {
            entry.queued = false;
            self.maybe_free(id);
            Turn::Done
        }
    }

    /// A packet carrying these frames was acknowledged.
    pub(crate) fn on_acked(&mut self, sent: &SentFrames) {
        let mut freed = 0;
        let mut finished = false;
        for chunk in sent.streams() {
            let Some(entry) = self.map.get_mut(&chunk.id) else {
                continue;
            };
            let Some(send) = entry.send.as_mut() else {
                continue;
            };
            let was_writable = send.is_writable();
            let before = send.buffered();
            let done = send.on_ack(chunk.offset, chunk.len as usize, chunk.fin);
            freed += before - send.buffered();
            if done {
                finished = true;
                self.events.push_back(StreamEvent::Finished(chunk.id));
                self.maybe_free(chunk.id);
            } else if !was_writable && send.is_writable() {
                // Buffer space freed up.
                self.events.push_back(StreamEvent::Writable(chunk.id));
            }
        }
        if freed > 0 || finished {
            self.budget.held -= freed;
            self.on_progress();
            self.on_budget_freed(freed);
        }
        for ctl in sent.controls() {
            if let Control::ResetStream(id) = ctl {
                if let Some(send) = self.map.get_mut(&id).and_then(|e| e.send.as_mut()) {
                    send.on_reset_acked();
                    self.maybe_free(id);
                }
            }
        }
    }

    /// A packet carrying these frames was lost: queue what still matters.
    pub(crate) fn on_lost(&mut self, sent: &SentFrames) {
        for chunk in sent.streams() {
            let Some(entry) = self.map.get_mut(&chunk.id) else {
                continue;
            };
            let Some(send) = entry.send.as_mut() else {
                continue;
            };
            send.on_lost(chunk.offset, chunk.len as usize, chunk.fin);
            if send.has_pending() && !entry.queued {
                entry.queued = true;
                self.send_queue.push(chunk.id, entry.priority);
            }
        }
        for ctl in sent.controls() {
            match ctl {
                Control::MaxData => self.pending.max_data = true,
                Control::MaxStreams(dir) => {
                    let d = dir_index(dir);
                    self.pending.max_streams[d] = true;
                    self.max_remote_sent[d] = 0;
                }
                Control::MaxStreamData(id) => {
                    let still_receiving = self
                        .map
                        .get(&id)
                        .and_then(|e| e.recv.as_ref())
                        .is_some_and(|r| r.state() == RecvState::Recv);
                    if still_receiving {
                        self.pending.max_stream_data.push(id, ());
                    }
                }
                Control::ResetStream(id) => {
                    let unacked = self
                        .map
                        .get(&id)
                        .and_then(|e| e.send.as_ref())
                        .is_some_and(|s| s.state() == SendState::ResetSent);
                    if unacked {
                        self.pending.reset.push(id, ());
                    }
                }
                Control::StopSending(id) => {
                    let still_open =
                        self.map
                            .get(&id)
                            .and_then(|e| e.recv.as_ref())
                            .is_some_and(|r| {
                                matches!(r.state(), RecvState::Recv | RecvState::SizeKnown)
                            });
                    if still_open {
                        self.pending.stop.push(id, ());
                    }
                }
                // Blocked frames are advisory; a fresh one is sent if still blocked.
                Control::DataBlocked(_)
                | Control::StreamDataBlocked(..)
                | Control::StreamsBlocked(..) => {}
                Control::NewConnectionId(_)
                | Control::RetireConnectionId(_)
                | Control::AckFrequency(_)
                | Control::NewToken(_) => {}
            }
        }
    }
}
