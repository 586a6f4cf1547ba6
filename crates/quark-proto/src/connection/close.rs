//! Ending a connection: CONNECTION_CLOSE, the closing and draining states
//! (RFC 9000 §10.2), the idle timeout, and stateless resets.

use std::time::Instant;

use super::sent::SentFrames;
use super::timers::Timer;
use super::{Connection, Event, Transmit};
use crate::error::{TransportError, TransportErrorCode};
use crate::frame::{Close, Frame};
use crate::packet::MIN_INITIAL_SIZE;
use crate::types::SpaceId;

/// Why a connection ended.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ConnectionError {
    /// We detected a protocol error and closed with this transport error.
    #[error("closed by us: {0}")]
    TransportError(TransportError),
    /// The peer closed with a transport error code (CONNECTION_CLOSE 0x1c).
    #[error("closed by peer: {code} ({reason})")]
    ConnectionClosed {
        /// Error code.
        code: TransportErrorCode,
        /// Frame type that triggered it.
        frame_type: u64,
        /// Reason phrase.
        reason: String,
    },
    /// The peer's application closed the connection (CONNECTION_CLOSE 0x1d).
    #[error("closed by peer application: code {code} ({reason})")]
    ApplicationClosed {
        /// Application error code.
        code: u64,
        /// Reason phrase.
        reason: String,
    },
    /// Our application closed the connection.
    #[error("closed locally")]
    LocallyClosed,
    /// The peer sent a stateless reset.
    #[error("reset by peer")]
    Reset,
    /// Nothing was heard for the idle timeout.
    #[error("timed out")]
    TimedOut,
    /// We had data to send and the peer let none of it progress (no new data
    /// acknowledged, no flow-control credit) for the send timeout
    /// (`TransportConfig::send_timeout`): we closed the connection.
    #[error("no progress in sending for the send timeout")]
    SendTimedOut,
    /// The server does not speak our version.
    #[error("no common QUIC version")]
    VersionMismatch,
    /// An ICMP error said the peer cannot be reached, before the handshake
    /// completed ([`Endpoint::handle_unreachable`](crate::Endpoint::handle_unreachable)).
    #[error("{}", if *port_closed {
        "refused: nothing listens on the peer's port (ICMP port unreachable)"
    } else {
        "the peer's address is unreachable (ICMP)"
    })]
    Unreachable {
        /// The port is closed (ICMP port unreachable), rather than the host
        /// or network unreachable.
        port_closed: bool,
    },
    /// The task driving the endpoint stopped (it panicked, or its runtime shut
    /// down), so nothing moves any more. Set by the I/O layer, never by the
    /// protocol.
    #[error("the endpoint's driver stopped")]
    DriverStopped,
}

/// Where the connection is in its life. The ending states' details are
/// boxed: every open connection would otherwise carry them inline (104
/// bytes instead of 16, issue #30).
pub(crate) enum State {
    Handshake,
    Established,
    /// We sent CONNECTION_CLOSE; answer further packets with it until the deadline.
    Closing {
        closing: Box<Closing>,
    },
    /// The peer closed; send nothing until the deadline.
    Draining {
        error: Box<ConnectionError>,
    },
    Drained {
        error: Option<Box<ConnectionError>>,
    },
}

pub(crate) struct Closing {
    error: ConnectionError,
    close: CloseFrame,
    resend: bool,
}

impl State {
    pub(crate) fn error(&self) -> Option<&ConnectionError> {
        match self {
            State::Closing { closing } => Some(&closing.error),
            State::Draining { error } => Some(error),
            State::Drained { error } => error.as_deref(),
            _ => None,
        }
    }
}

/// The CONNECTION_CLOSE we repeat while closing.
#[derive(Clone, Debug)]
pub(crate) struct CloseFrame {
    pub(crate) code: u64,
    /// `Some` for a transport close (0x1c), `None` for an application close (0x1d).
    pub(crate) frame_type: Option<u64>,
    pub(crate) reason: Vec<u8>,
}

/// Reason phrases are truncated so a close always fits in a packet.
const MAX_REASON: usize = 256;

impl Connection {
    /// Close the connection with an application error code and reason. The
    /// CONNECTION_CLOSE goes out with the next `poll_transmit`.
    pub fn close(&mut self, now: Instant, code: u64, reason: &[u8]) {
        if self.is_closed() {
            return;
        }
        let close = CloseFrame {
            code,
            frame_type: None,
            reason: truncate(reason),
        };
        self.enter_closing(now, ConnectionError::LocallyClosed, close);
    }

    /// A protocol error: close with a transport CONNECTION_CLOSE.
    pub(crate) fn close_on_error(&mut self, now: Instant, error: TransportError) {
        if self.is_closed() {
            return;
        }
        tracing::debug!(side = ?self.side, %error, "closing on error");
        let close = CloseFrame {
            code: error.code.0,
            frame_type: Some(error.frame_type.unwrap_or(0)),
            reason: truncate(error.reason.as_bytes()),
        };
        self.enter_closing(now, ConnectionError::TransportError(error), close);
    }

    pub(super) fn enter_closing(
        &mut self,
        now: Instant,
        error: ConnectionError,
        close: CloseFrame,
    ) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-10.2
        //# The closing and draining connection states exist to ensure that
        //# connections close cleanly ... These states SHOULD persist for at least
        //# three times the current PTO interval
        let pto = self.recovery.pto_base(SpaceId::Data, &self.path_state());
        self.timers.set(Timer::Close, now + 3 * pto);
        self.events.push_back(Event::ConnectionLost(error.clone()));
        self.streams.on_connection_lost();
        self.state = State::Closing {
            closing: Box::new(Closing {
                error,
                close,
                resend: true,
            }),
        };
        self.qlog_closed(now, "closing");
        self.shed();
    }

    /// The peer closed: drain (RFC 9000 §10.2.2).
    pub(crate) fn enter_draining(&mut self, now: Instant, error: ConnectionError) {
        if matches!(self.state, State::Draining { .. } | State::Drained { .. }) {
            return;
        }
        let pto = self.recovery.pto_base(SpaceId::Data, &self.path_state());
        if !matches!(self.state, State::Closing { .. }) {
            self.events.push_back(Event::ConnectionLost(error.clone()));
            self.streams.on_connection_lost();
        }
        self.timers.set(Timer::Close, now + 3 * pto);
        self.state = State::Draining {
            error: Box::new(error),
        };
        self.qlog_closed(now, "draining");
        self.shed();
    }

    /// Forget the connection at once (idle timeout, stateless reset, no version).
    pub(crate) fn enter_drained(&mut self, now: Instant, error: ConnectionError) {
        if matches!(self.state, State::Drained { .. }) {
            return;
        }
        if !matches!(self.state, State::Closing { .. } | State::Draining { .. }) {
            self.events.push_back(Event::ConnectionLost(error.clone()));
            self.streams.on_connection_lost();
        }
        self.events.push_back(Event::Drained);
        let error = match std::mem::replace(&mut self.state, State::Drained { error: None }) {
            State::Closing { closing } => Box::new(closing.error),
            State::Draining { error } => error,
            _ => Box::new(error),
        };
        self.state = State::Drained { error: Some(error) };
        self.qlog_closed(now, "closed");
        self.shed();
    }

    /// Give back what only an open connection needs. A closing connection sends
    /// nothing but CONNECTION_CLOSE (so it keeps its keys, packet numbers and
    /// peer ID) and processes no frames; a draining or drained one sends nothing
    /// at all. What stays for the application is the data it has not read.
    /// Without this a server under short connections holds the full state of
    /// every connection closed in the last three PTOs.
    fn shed(&mut self) {
        self.tls.shed();
        self.recovery.shed();
        self.streams.shed();
        for space in self.spaces.iter_mut() {
            space.crypto = None;
        }
        self.release_scratch();
        self.crypto_scratch = Vec::new();
        self.path_responses = std::collections::VecDeque::new();
        // A probe still out will never be answered: withdraw its claim on
        // the path (reported with the next `take_mtu_news`).
        self.mtu.abandon();
    }

    pub(crate) fn on_close_timer(&mut self, now: Instant) {
        let error = self
            .state
            .error()
            .cloned()
            .unwrap_or(ConnectionError::LocallyClosed);
        self.enter_drained(now, error);
    }

    pub(crate) fn on_idle_timeout(&mut self, now: Instant) {
        //= https://www.rfc-editor.org/rfc/rfc9000#section-10.1
        //# If a max_idle_timeout is specified by either endpoint in its transport
        //# parameters, the connection is silently closed and its state is
        //# discarded when it remains idle for longer than the minimum of the
        //# max_idle_timeout value advertised by both endpoints.
        self.enter_drained(now, ConnectionError::TimedOut);
    }

    /// A CONNECTION_CLOSE frame arrived.
    pub(crate) fn on_peer_close(&mut self, now: Instant, f: &crate::frame::Close<'_>) {
        let reason = String::from_utf8_lossy(f.reason).into_owned();
        let error = match f.frame_type {
            Some(frame_type) => ConnectionError::ConnectionClosed {
                code: TransportErrorCode(f.error_code),
                frame_type,
                reason,
            },
            None => ConnectionError::ApplicationClosed {
                code: f.error_code,
                reason,
            },
        };
        self.enter_draining(now, error);
    }

    /// While closing, every packet received is answered with our CONNECTION_CLOSE
    /// again (RFC 9000 §10.2.1), at most once per received datagram.
    pub(crate) fn on_packet_while_closing(&mut self) {
        if let State::Closing { closing } = &mut self.state {
            closing.resend = true;
        }
    }

    /// The frame to send while closing, if one is due (consumes the trigger).
    pub(crate) fn take_close_frame(&mut self) -> Option<CloseFrame> {
        match &mut self.state {
            State::Closing { closing } if closing.resend => {
                closing.resend = false;
                Some(closing.close.clone())
            }
            _ => None,
        }
    }
}

fn truncate(reason: &[u8]) -> Vec<u8> {
    reason[..reason.len().min(MAX_REASON)].to_vec()
}

impl Connection {
    /// While closing: a datagram with CONNECTION_CLOSE in every space we can
    /// still encrypt for (the peer may not have 1-RTT keys yet).
    pub(super) fn transmit_close(&mut self, now: Instant, buf: &mut Vec<u8>) -> Option<Transmit> {
        let close = self.take_close_frame()?;
        self.tx_ecn = None;
        let limit = (self
            .path
            .amplification_budget()
            .min(u64::from(self.path.mtu))) as usize;
        let spaces: Vec<SpaceId> = SpaceId::ALL
            .into_iter()
            .filter(|&s| match s {
                SpaceId::Data => self.one_rtt.is_some() && self.handshake_complete,
                _ => self.spaces[s.index()].keys.is_some() && !self.handshake_complete,
            })
            .collect();
        let last = *spaces.last()?;
        for &space in &spaces {
            let min_size =
                if self.side.is_client() && spaces[0] == SpaceId::Initial && space == last {
                    MIN_INITIAL_SIZE.saturating_sub(buf.len())
                } else {
                    0
                };
            let Some(builder) = self.begin_packet(space, buf, limit) else {
                continue;
            };
            let frame = close_frame(&close, space, builder.max_end.saturating_sub(buf.len()));
            frame.encode(buf);
            self.end_packet(
                now,
                space,
                builder,
                buf,
                min_size,
                SentFrames::new(space),
                false,
                false,
            );
        }
        self.seal_batch(buf);
        if buf.is_empty() {
            return None;
        }
        let sent = self.transmitted(buf.len(), 1, buf.len(), None);
        if !self.received_any {
            // Nothing ever came back: no packet will arrive to answer, so
            // the closing state would only wait (3 PTO, seconds without an
            // RTT sample). An abandoned attempt of `connect_first` is gone
            // at once; the CONNECTION_CLOSE just sent lets a server that did
            // get our Initial drop its state. The closing period ends now.
            self.on_close_timer(now);
        }
        Some(sent)
    }
}

/// The CONNECTION_CLOSE to send in `space`, its reason cut to fit `room`.
fn close_frame(close: &CloseFrame, space: SpaceId, room: usize) -> Frame<'_> {
    //= https://www.rfc-editor.org/rfc/rfc9000#section-10.2.3
    //# Sending a CONNECTION_CLOSE of type 0x1d in an Initial or Handshake packet
    //# could expose application state or be used to alter application state.
    //# A CONNECTION_CLOSE of type 0x1d MUST be replaced by a CONNECTION_CLOSE of
    //# type 0x1c when sending the frame in Initial or Handshake packets.
    //# Endpoints MUST clear the value of the Reason Phrase field and SHOULD
    //# use the APPLICATION_ERROR code when converting to a CONNECTION_CLOSE
    //# of type 0x1c.
    // A transport close keeps its reason in every space: errors found during
    // the handshake (transport parameters, TLS) go out in Handshake packets,
    // and the peer should learn what was wrong.
    let (error_code, frame_type, reason) = match (close.frame_type, space) {
        (None, SpaceId::Initial | SpaceId::Handshake) => (
            crate::TransportErrorCode::APPLICATION_ERROR.0,
            Some(0),
            &[][..],
        ),
        (ft, _) => (close.code, ft, &close.reason[..]),
    };
    let reason = &reason[..reason.len().min(room.saturating_sub(32))];
    Frame::Close(Close {
        error_code,
        frame_type,
        reason,
    })
}
