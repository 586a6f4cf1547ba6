//! The application's side of a connection: what it asks (its state, paths,
//! statistics) and what it does (streams, datagrams, pings, key updates).

use std::collections::VecDeque;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use bytes::Bytes;

use super::close::State;
use super::{
    CidEvent, Connection, ConnectionError, ConnectionStats, Event, PathMtu, Priority, StreamError,
    mtu,
};
use crate::cid::ConnectionId;
use crate::stream::{Append, ReadOutcome, Visit};
use crate::transport_params::TransportParameters;
use crate::types::{Dir, Side, StreamId};
#[cfg(feature = "testing")]
use {super::Misbehave, crate::types::SpaceId};

impl Connection {
    /// Which side we are.
    pub fn side(&self) -> Side {
        self.side
    }

    /// The peer's address.
    pub fn remote_address(&self) -> SocketAddr {
        self.path.remote
    }

    /// True once the handshake completed (streams usable).
    pub fn is_handshake_complete(&self) -> bool {
        self.handshake_complete
    }

    /// True once the handshake is confirmed (RFC 9001 §4.1.2): at the
    /// server when it completes, at the client when HANDSHAKE_DONE arrives.
    pub fn is_handshake_confirmed(&self) -> bool {
        self.handshake_confirmed
    }

    /// True once the connection is closing, draining or gone.
    pub fn is_closed(&self) -> bool {
        !matches!(self.state, State::Handshake | State::Established)
    }

    /// True once nothing more will ever happen on this connection.
    pub fn is_drained(&self) -> bool {
        matches!(self.state, State::Drained { .. })
    }

    /// Why the connection ended, once it did.
    pub fn error(&self) -> Option<&ConnectionError> {
        self.state.error()
    }

    /// The negotiated ALPN protocol.
    pub fn alpn(&self) -> Option<&[u8]> {
        self.tls.alpn()
    }

    /// The server name the client asked for (server side).
    pub fn server_name(&self) -> Option<&str> {
        self.tls.server_name()
    }

    /// The QUIC version in use: the client's first, or the one the server
    /// moved the connection to (RFC 9368).
    pub fn version(&self) -> u32 {
        self.version
    }

    /// The negotiated TLS cipher suite.
    pub fn cipher_suite(&self) -> Option<rustls::SupportedCipherSuite> {
        self.tls.cipher_suite()
    }

    /// Whether the handshake resumed a TLS session (a session ticket).
    pub fn is_resumed(&self) -> bool {
        self.tls.is_resumed()
    }

    /// The peer's transport parameters, once known.
    pub fn peer_params(&self) -> Option<&TransportParameters> {
        self.peer_params.as_ref()
    }

    /// Counters.
    pub fn stats(&self) -> ConnectionStats {
        let mut s = self.joined_stats();
        let r = self.recovery.stats();
        s.packets_lost = r.lost_packets;
        s.ptos = r.ptos;
        s.key_updates = self.one_rtt.as_ref().map_or(0, |k| k.updates());
        s.spurious_losses = r.spurious_losses;
        s
    }

    /// Where ECN validation of the path stands (RFC 9000 §13.4.2).
    pub fn ecn_state(&self) -> crate::recovery::EcnState {
        self.recovery.ecn_state()
    }

    /// Smoothed RTT estimate.
    pub fn rtt(&self) -> Duration {
        self.recovery.rtt().smoothed()
    }

    /// An estimate of the heap this connection holds, in bytes: its own
    /// state, TLS while it lives, CRYPTO buffers, stream data and the records
    /// of packets in flight. O(streams): for memory budgets, which ask now
    /// and then, not per packet.
    pub fn memory(&self) -> usize {
        self.budget_memory()
    }

    /// Whether any packet from the peer was authenticated and processed.
    pub fn has_received_packet(&self) -> bool {
        self.received_any
    }

    /// Testing only: put `frames` verbatim into the next 1-RTT packet, to play a
    /// misbehaving peer.
    #[cfg(feature = "testing")]
    pub fn inject_raw_frames(&mut self, frames: &[u8]) {
        self.raw_frames.extend_from_slice(frames);
    }

    /// Testing only: the largest 1-RTT packet number received (what a lying
    /// peer bases its optimistic ACKs on).
    #[cfg(feature = "testing")]
    pub fn largest_received_1rtt(&self) -> Option<u64> {
        self.spaces[SpaceId::Data.index()].ack.largest_pn()
    }

    /// Testing only: whether the Initial and Handshake spaces are still held
    /// (an established connection drops them; per-packet paths then look at
    /// the Application space alone).
    #[cfg(feature = "testing")]
    pub fn holds_early_spaces(&self) -> bool {
        !self.spaces.early_dropped()
    }

    /// Testing only: misbehave from now on, as `m` says.
    #[cfg(feature = "testing")]
    pub fn misbehave(&mut self, m: Misbehave) {
        self.misbehave = m;
    }

    /// The path (local and remote address) this connection's MTU is learnt on.
    pub(crate) fn mtu_path(&self) -> (Option<IpAddr>, IpAddr) {
        (self.path.local_ip, self.path.remote.ip())
    }

    /// Whether the endpoint should offer what other connections learnt about
    /// the path: the handshake is confirmed and this connection has not
    /// searched itself.
    pub(crate) fn wants_mtu_offer(&self) -> bool {
        self.handshake_confirmed && self.mtu.open_to_offers()
    }

    /// What other connections on the path learnt about its MTU. A validated
    /// size is taken at once: adopting it costs nothing, unlike probing, so
    /// even a short exchange profits (144 new connections once spent their
    /// first 64 KB each in 1200-byte datagrams). Another connection's probe
    /// in flight only matters from half the probing threshold on, so that
    /// offer arrives before this connection's first probe would go.
    pub(crate) fn offer_mtu(&mut self, hint: PathMtu) {
        if matches!(hint, PathMtu::Known(_)) || self.stats.bytes_out >= mtu::MTU_PROBE_AFTER / 2 {
            self.mtu.offer(hint);
        }
    }

    /// The RTT sample (latest_rtt, when) taken since the last call, for the
    /// endpoint's per-path estimate (`TransportConfig::shared_path_rtt`).
    pub(crate) fn take_rtt_news(&mut self) -> Option<(Duration, Instant)> {
        let at = self.rtt_news.take()?;
        Some((self.recovery.rtt().latest(), at))
    }

    /// Whether a due loss-detection timer should first hear what the path's
    /// other connections measured: then the peer's max_ack_delay.
    pub(crate) fn wants_path_rtt(&self, now: Instant) -> Option<Duration> {
        let due = self
            .recovery
            .loss_detection_timer()
            .is_some_and(|t| t <= now);
        (self.config.shared_path_rtt && self.handshake_confirmed && due)
            .then(|| self.peer_max_ack_delay())
    }

    /// The path's shared PTO base (zero: none fresh); see
    /// `Recovery::offer_path_pto`.
    pub(crate) fn offer_path_pto(&mut self, base: Duration, now: Instant) {
        let path = self.path_state();
        if self.recovery.offer_path_pto(base, now, &path) {
            self.rare_stats().ptos_put_off += 1;
        }
    }

    /// What this connection learnt about its path MTU since the last call.
    pub(crate) fn take_mtu_news(&mut self) -> Option<PathMtu> {
        self.mtu.take_news()
    }

    /// Make the path and congestion control follow the MTU search.
    pub(crate) fn apply_mtu(&mut self) {
        self.path.mtu = self.mtu.current();
        self.recovery
            .set_max_datagram_size(u64::from(self.path.mtu));
    }

    /// Size of the datagrams this connection sends.
    pub fn max_datagram_size(&self) -> usize {
        usize::from(self.path.mtu)
    }

    /// Whether this connection took a path MTU from the endpoint's cache
    /// (what another connection on the path validated) instead of searching.
    pub fn mtu_from_cache(&self) -> bool {
        self.mtu.adopted_once()
    }

    /// Bytes sent and not yet acknowledged or declared lost.
    pub fn bytes_in_flight(&self) -> u64 {
        self.recovery.bytes_in_flight()
    }

    /// Congestion window in bytes.
    pub fn congestion_window(&self) -> u64 {
        self.recovery.congestion_window()
    }

    /// The congestion controller's phase, for controllers that have phases
    /// (BBR: `startup`, `drain`, `probe_bw`, `probe_rtt`).
    pub fn congestion_phase(&self) -> Option<&'static str> {
        self.recovery.controller().phase()
    }

    /// Next event for the application.
    pub fn poll_event(&mut self) -> Option<Event> {
        if let Some(e) = self.events.pop_front() {
            return Some(e);
        }
        self.streams.poll_event().map(Event::Stream)
    }

    /// Next change to mirror in the endpoint's routing table.
    pub fn poll_cid_event(&mut self) -> Option<CidEvent> {
        let event = self.cid_events.pop_front();
        if event.is_none() && self.cid_events.capacity() != 0 {
            // Drained: IDs change rarely after the handshake, so the queue
            // is not kept grown on every serving connection (issue #33).
            self.cid_events = VecDeque::new();
        }
        event
    }

    /// Every connection ID currently routed to this connection.
    pub fn local_cids(&self) -> Vec<ConnectionId> {
        self.local_cids.all().collect()
    }

    /// The DCID of the client's first Initial (servers route retransmitted Initials by it).
    pub fn original_dst_cid(&self) -> ConnectionId {
        self.orig_dst_cid
    }

    /// Open a stream; `None` when the peer's stream limit is reached (wait for
    /// `StreamEvent::Available`) or the handshake is not complete (unless
    /// 0-RTT is available: see [`is_0rtt_available`](Self::is_0rtt_available)).
    pub fn open_stream(&mut self, dir: Dir) -> Option<StreamId> {
        if !(self.handshake_complete || self.sending_0rtt()) || self.is_closed() {
            return None;
        }
        self.streams.open(dir)
    }

    /// Take a stream the peer opened.
    pub fn accept_stream(&mut self, dir: Dir) -> Option<StreamId> {
        self.streams.accept(dir)
    }

    /// Write to a stream; returns bytes accepted (0: blocked, wait for Writable).
    pub fn write(&mut self, id: StreamId, data: &[u8]) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.write(id, data)
    }

    /// Write `parts` to a stream as if joined (a message's head and body, in
    /// one pass through flow control): how many bytes of them were taken,
    /// as [`write`](Self::write).
    pub fn write_parts(&mut self, id: StreamId, parts: &[&[u8]]) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.write_parts(id, parts)
    }

    /// Write the application's own bytes to a stream: the prefix taken is held
    /// by reference until acknowledged, not copied (chunks under 4 KiB are).
    /// Returns how much was taken, as [`write`](Self::write).
    pub fn write_shared(&mut self, id: StreamId, data: &Bytes) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.write_shared(id, data)
    }

    /// How many bytes, at most `max`, a write to the stream would take now.
    /// They are set aside for its next writes (other streams cannot take
    /// them) until written, or until the stream is finished or reset; a later
    /// call replaces the reservation. 0: blocked, wait for Writable. For an
    /// application that reads from a source only what the stream can take.
    pub fn reserve(&mut self, id: StreamId, max: usize) -> Result<usize, StreamError> {
        if self.is_closed() {
            return Err(StreamError::UnknownStream);
        }
        self.streams.reserve(id, max)
    }

    /// Bytes held in all send buffers (written, not yet acknowledged) and
    /// reserved for writes: at most [`send_budget`](Self::send_budget) when
    /// the budget has not shrunk since they were written (one and a half
    /// times it with streams of different urgencies).
    #[doc(hidden)]
    pub fn send_buffered(&self) -> usize {
        self.streams.send_buffered()
    }

    /// Whether the peer has acknowledged everything written on every stream,
    /// each stream's end (FIN) or reset included: what a graceful close
    /// waits for.
    pub fn all_acked(&self) -> bool {
        self.streams.all_acked()
    }

    /// The send budget now (`TransportConfig::send_budget`).
    #[doc(hidden)]
    pub fn send_budget(&self) -> usize {
        self.streams.send_budget()
    }

    /// Finish a stream's sending side.
    pub fn finish(&mut self, id: StreamId) -> Result<(), StreamError> {
        self.streams.finish(id)
    }

    /// Set (or with `None` clear) the RFC 9218 priority of a stream's
    /// sending side: lower urgency is sent first. Streams without one go
    /// round-robin at the default urgency (3).
    pub fn set_stream_priority(
        &mut self,
        id: StreamId,
        priority: Option<Priority>,
    ) -> Result<(), StreamError> {
        self.streams.set_priority(id, priority)
    }

    /// Reset a stream's sending side.
    pub fn reset_stream(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.reset(id, code)
    }

    /// Read from a stream.
    pub fn read(&mut self, id: StreamId, buf: &mut [u8]) -> Result<ReadOutcome, StreamError> {
        self.streams.read(id, buf)
    }

    /// Read from a stream, appending at most `max` bytes to `out` (no zeroed
    /// buffer needed first).
    pub fn read_append(
        &mut self,
        id: StreamId,
        out: &mut Vec<u8>,
        max: usize,
    ) -> Result<ReadOutcome, StreamError> {
        self.streams.read(id, &mut Append { out, max })
    }

    /// Read up to `max` bytes of a stream as [`Bytes`]: without a copy when
    /// they are still in the datagram they arrived in (zero-copy receive,
    /// [`handle_shared`](Self::handle_shared)), copied otherwise. `Ok(None)`
    /// once the stream has ended; an empty `Bytes` when nothing is readable
    /// yet.
    pub fn read_bytes(&mut self, id: StreamId, max: usize) -> Result<Option<Bytes>, StreamError> {
        self.streams.read_bytes(id, max)
    }

    /// Readable bytes of stream `id` still in the datagrams they came in
    /// (zero-copy receive); 0 for an unknown stream.
    pub fn shared_readable(&self, id: StreamId) -> usize {
        self.streams.shared_readable(id)
    }

    /// Read from a stream in place: hand at most `max` bytes to `f` (in one
    /// piece or more) without copying them out first.
    pub fn read_visit(
        &mut self,
        id: StreamId,
        max: usize,
        f: impl FnMut(&[u8]),
    ) -> Result<ReadOutcome, StreamError> {
        self.streams.read(id, &mut Visit { f, max })
    }

    /// [`read_visit`](Self::read_visit) that also ends the stream when it
    /// hands over the last bytes (the FIN is here): `true` then, and the
    /// stream is done as after a `Finished` read.
    pub fn read_visit_to_end(
        &mut self,
        id: StreamId,
        max: usize,
        f: impl FnMut(&[u8]),
    ) -> Result<(ReadOutcome, bool), StreamError> {
        self.streams.read_and_end(id, &mut Visit { f, max }, true)
    }

    /// Bytes a read of the stream would return now (0 for an unknown stream).
    pub fn readable_bytes(&self, id: StreamId) -> usize {
        self.streams.readable_bytes(id)
    }

    /// Whether stream or flow-control frames are queued: after a read, the
    /// transmit path has work only if this is true.
    pub fn has_pending_stream_control(&self) -> bool {
        self.streams.has_control()
    }

    /// Ask the peer to stop sending on a stream.
    pub fn stop_sending(&mut self, id: StreamId, code: u64) -> Result<(), StreamError> {
        self.streams.stop_sending(id, code)
    }

    /// Whether a write to the stream would take data now.
    pub fn is_writable(&self, id: StreamId) -> bool {
        self.streams.is_writable(id)
    }

    /// Whether a read would return data, the end or an error now.
    pub fn is_readable(&self, id: StreamId) -> bool {
        self.streams.is_readable(id)
    }

    /// Send a PING (e.g. to measure the RTT or keep the path alive).
    pub fn ping(&mut self) {
        self.ping_pending = true;
    }

    /// Start a 1-RTT key update (RFC 9001 §6) if allowed now: the handshake is
    /// confirmed and the previous update has settled.
    pub fn initiate_key_update(&mut self, now: Instant) -> bool {
        //= https://www.rfc-editor.org/rfc/rfc9001#section-6
        //# An endpoint MUST NOT initiate a key update prior to having confirmed the
        //# handshake
        if !self.handshake_confirmed {
            return false;
        }
        let started = self.one_rtt.as_mut().is_some_and(|k| k.initiate_update());
        if started {
            self.after_key_update(now, true);
        }
        started
    }
}
