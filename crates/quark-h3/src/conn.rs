//! What both ends of an HTTP/3 connection do besides requests: announce their
//! SETTINGS on a control stream, and read the peer's unidirectional streams
//! (its control stream and QPACK streams; pushes are never allowed). A
//! violation closes the QUIC connection with the HTTP/3 error code.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use quark::{Connection, SendStream};
use quark_proto::Side;
use quark_proto::varint::put_varint;

use crate::config::Config;
use crate::error::*;
use crate::frame::{self, FrameHeader};
use crate::priority;
use crate::qpack::Qpack;
use crate::reader::FrameReader;
use crate::settings::Settings;

/// Unidirectional stream types (RFC 9114 §6.2, RFC 9204 §4.2).
const CONTROL: u64 = 0x00;
const PUSH: u64 = 0x01;
const QPACK_ENCODER: u64 = 0x02;
const QPACK_DECODER: u64 = 0x03;

/// Longest control frame we read (SETTINGS, GOAWAY, ...).
const MAX_CONTROL_FRAME: u64 = 16 * 1024;
/// The longest the decoder stream's instructions wait for a HEADERS frame
/// to ride with (RFC 9204 sets no deadline; the peer's encoder only learns
/// later what it may reference without blocking, or evict).
const DECODER_FLUSH_DELAY: std::time::Duration = std::time::Duration::from_millis(5);

/// Bytes of an unfinished QPACK instruction kept between reads: with no dynamic
/// table, a valid one is a few bytes.
const MAX_QPACK_PENDING: usize = 64;

/// The connection-wide state both ends share with their stream tasks.
#[derive(Default)]
pub(crate) struct State {
    pub(crate) peer_settings: Option<Settings>,
    /// The ID in the peer's last GOAWAY.
    pub(crate) goaway: Option<u64>,
    /// The ID in our last GOAWAY: requests on streams from it on are refused.
    pub(crate) goaway_sent: Option<u64>,
    /// The next client request stream ID after those admitted (a server's GOAWAY ID).
    next_request: u64,
    /// The largest push ID a client allowed (we never push; kept to check
    /// that it never shrinks).
    max_push_id: Option<u64>,
    pub(crate) error: Option<Error>,
    /// PRIORITY_UPDATEs received, by request stream ID: they override the
    /// head's Priority field whenever it is read (bounded; oldest go first).
    pub(crate) priorities: std::collections::BTreeMap<u64, crate::Priority>,
    /// CONNECT streams reading HTTP Datagrams.
    pub(crate) datagram_routes: crate::connect::Routes,
    control: bool,
    encoder: bool,
    decoder: bool,
}

/// An HTTP/3 connection's common parts, shared by its request streams (one
/// reference count per stream, not one per part).
#[derive(Clone)]
pub(crate) struct Conn(Arc<Inner>);

pub(crate) struct Inner {
    pub(crate) quic: Connection,
    pub(crate) state: Mutex<State>,
    pub(crate) control: tokio::sync::Mutex<SendStream>,
    pub(crate) side: Side,
    /// The SETTINGS we announced.
    pub(crate) local: Settings,
    /// QPACK's dynamic table, when our configuration allows one.
    pub(crate) qpack: Option<Qpack>,
    /// Spare buffers for request streams' reads and HEADERS frames.
    pub(crate) buffers: crate::pool::Buffers,
}

impl std::ops::Deref for Conn {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        &self.0
    }
}

impl Conn {
    /// Opens our control stream with our SETTINGS and starts reading the peer's streams.
    /// With a dynamic QPACK table configured, our encoder and decoder
    /// streams are opened too.
    pub(crate) async fn start(
        quic: Connection,
        side: Side,
        config: &Config,
    ) -> Result<Conn, Error> {
        let local = config.settings();
        let mut control = quic.open_uni().await?;
        let mut out = Vec::with_capacity(32);
        put_varint(&mut out, CONTROL);
        let mut payload = Vec::new();
        local.encode(&mut payload);
        frame::put_frame(&mut out, frame::SETTINGS, &payload);
        control.write_all(&out).await?;
        let qpack = match local.qpack_max_table_capacity {
            0 => None,
            _ => Some(Qpack::open(&quic, &local).await?),
        };
        let conn = Conn(Arc::new(Inner {
            quic,
            state: Mutex::default(),
            control: tokio::sync::Mutex::new(control),
            side,
            local,
            qpack,
            buffers: Default::default(),
        }));
        let acceptor = conn.clone();
        conn.quic.spawn(async move { acceptor.accept_uni().await });
        if conn.local.h3_datagram {
            conn.quic.spawn(conn.clone().serve_datagrams());
        }
        Ok(conn)
    }

    /// Closes the connection with an HTTP/3 error (the first one recorded wins).
    pub(crate) fn fail(&self, e: &Error) {
        if let Error::Connection { code, reason } = e {
            let mut state = self.state.lock().unwrap();
            if state.error.is_none() {
                state.error = Some(e.clone());
                self.quic.close(*code, reason.as_bytes());
            }
        }
        // Streams waiting for inserts see the error.
        if let Some(q) = &self.qpack {
            q.inserted.notify_waiters();
        }
    }

    /// The largest field section the peer accepts (once its SETTINGS came).
    pub(crate) fn peer_field_limit(&self) -> Option<u64> {
        let state = self.state.lock().unwrap();
        state.peer_settings.and_then(|s| s.max_field_section_size)
    }

    /// The error that ended the connection, if one did.
    pub(crate) fn error(&self) -> Option<Error> {
        self.state.lock().unwrap().error.clone()
    }

    /// Whether a server takes the request on stream `id`: not at or above
    /// the ID of a GOAWAY it sent. Checked and recorded under one lock, so a
    /// concurrent GOAWAY names either this stream or the next.
    pub(crate) fn admit(&self, id: u64) -> bool {
        let mut state = self.state.lock().unwrap();
        if state.goaway_sent.is_some_and(|g| id >= g) {
            return false;
        }
        state.next_request = state.next_request.max(id + 4);
        true
    }

    /// A server's GOAWAY: requests admitted so far will be answered. Sent
    /// under the control stream's lock, so GOAWAYs go out with never-rising
    /// IDs (RFC 9114 §5.2).
    pub(crate) async fn goaway(&self) -> Result<(), Error> {
        let mut control = self.control.lock().await;
        let id = {
            let mut state = self.state.lock().unwrap();
            let id = state
                .goaway_sent
                .map_or(state.next_request, |prev| prev.min(state.next_request));
            state.goaway_sent = Some(id);
            id
        };
        let mut out = Vec::new();
        frame::put_goaway(&mut out, id);
        control.write_all(&out).await?;
        Ok(())
    }

    async fn accept_uni(self) {
        while let Ok(recv) = self.quic.accept_uni().await {
            let conn = self.clone();
            self.quic.spawn(async move {
                if let Err(e) = conn.serve_uni(FrameReader::new(recv)).await {
                    conn.fail(&e);
                }
            });
        }
    }

    /// Marks a critical stream of `ty` as open: a second one is an error.
    fn claim(&self, ty: u64) -> Result<(), Error> {
        let mut state = self.state.lock().unwrap();
        let slot = match ty {
            CONTROL => &mut state.control,
            QPACK_ENCODER => &mut state.encoder,
            _ => &mut state.decoder,
        };
        if std::mem::replace(slot, true) {
            return Err(Error::conn(
                H3_STREAM_CREATION_ERROR,
                "a second critical stream",
            ));
        }
        Ok(())
    }

    async fn serve_uni(&self, mut r: FrameReader) -> Result<(), Error> {
        let Some(ty) = r.varint().await? else {
            return Ok(()); // ended before its type: nothing to do
        };
        match ty {
            CONTROL => {
                self.claim(ty)?;
                self.serve_control(&mut r).await
            }
            QPACK_ENCODER | QPACK_DECODER => {
                self.claim(ty)?;
                match &self.qpack {
                    Some(q) => self.serve_dynamic(q, &mut r, ty == QPACK_ENCODER).await,
                    None => serve_qpack(&mut r, ty == QPACK_ENCODER).await,
                }
            }
            PUSH if self.side == Side::Server => Err(Error::conn(
                H3_STREAM_CREATION_ERROR,
                "a push stream from a client",
            )),
            // We never send MAX_PUSH_ID, so no push ID is valid.
            PUSH => Err(Error::conn(H3_ID_ERROR, "a push without MAX_PUSH_ID")),
            _ => {
                // Unknown (or reserved) types are ignored (RFC 9114 §6.2).
                let _ = r.stream().stop(H3_STREAM_CREATION_ERROR);
                Ok(())
            }
        }
    }

    async fn serve_control(&self, r: &mut FrameReader) -> Result<(), Error> {
        let closed = || Error::conn(H3_CLOSED_CRITICAL_STREAM, "the control stream ended");
        let first = r.header().await.map_err(|_| closed())?.ok_or_else(closed)?;
        if first.ty != frame::SETTINGS {
            return Err(Error::conn(
                H3_MISSING_SETTINGS,
                "control stream without SETTINGS",
            ));
        }
        let settings = Settings::decode(&control_payload(r, first).await?)?;
        // RFC 9297 §2.1.1: H3_DATAGRAM=1 on a connection without QUIC
        // datagrams (RFC 9221) is H3_SETTINGS_ERROR.
        if settings.h3_datagram && self.quic.max_datagram_size().is_none() {
            return Err(Error::conn(
                H3_SETTINGS_ERROR,
                "H3_DATAGRAM without QUIC datagrams",
            ));
        }
        self.state.lock().unwrap().peer_settings = Some(settings);
        if let Some(q) = &self.qpack {
            q.peer_settings(&settings);
        }
        loop {
            let h = match r.header().await {
                Ok(Some(h)) => h,
                Ok(None) | Err(Error::Reset(_)) => return Err(closed()),
                Err(e) => return Err(e),
            };
            match h.ty {
                frame::GOAWAY => {
                    let payload = control_payload(r, h).await?;
                    let id = frame::parse_id(&payload)
                        .ok_or(Error::conn(H3_FRAME_ERROR, "a bad GOAWAY"))?;
                    self.on_goaway(id)?;
                }
                frame::MAX_PUSH_ID if self.side == Side::Client => {
                    return Err(Error::conn(
                        H3_FRAME_UNEXPECTED,
                        "MAX_PUSH_ID from a server",
                    ));
                }
                frame::MAX_PUSH_ID => {
                    let payload = control_payload(r, h).await?;
                    let id = frame::parse_id(&payload)
                        .ok_or(Error::conn(H3_FRAME_ERROR, "a bad MAX_PUSH_ID"))?;
                    let mut state = self.state.lock().unwrap();
                    if state.max_push_id.is_some_and(|prev| id < prev) {
                        return Err(Error::conn(H3_ID_ERROR, "MAX_PUSH_ID went down"));
                    }
                    state.max_push_id = Some(id);
                }
                priority::PRIORITY_UPDATE_REQUEST | priority::PRIORITY_UPDATE_PUSH => {
                    let payload = control_payload(r, h).await?;
                    self.on_priority_update(h.ty, &payload)?;
                }
                // We never promise a push nor allow one: no push ID is valid.
                frame::CANCEL_PUSH => {
                    return Err(Error::conn(
                        H3_ID_ERROR,
                        "CANCEL_PUSH for a push that never was",
                    ));
                }
                frame::SETTINGS | frame::DATA | frame::HEADERS | frame::PUSH_PROMISE => {
                    return Err(Error::conn(
                        H3_FRAME_UNEXPECTED,
                        "a frame not for the control stream",
                    ));
                }
                ty if frame::is_http2_only(ty) => {
                    return Err(Error::conn(H3_FRAME_UNEXPECTED, "an HTTP/2 frame type"));
                }
                _ => r.skip(h.len).await?,
            }
        }
    }

    fn on_goaway(&self, id: u64) -> Result<(), Error> {
        // From a server, the ID names a client-initiated bidirectional stream.
        if self.side == Side::Client && id % 4 != 0 {
            return Err(Error::conn(H3_ID_ERROR, "GOAWAY with a bad stream ID"));
        }
        let mut state = self.state.lock().unwrap();
        if state.goaway.is_some_and(|prev| id > prev) {
            return Err(Error::conn(
                H3_ID_ERROR,
                "GOAWAY with a larger ID than before",
            ));
        }
        state.goaway = Some(id);
        Ok(())
    }
}

impl Conn {
    /// Encodes a field section for `stream`: with the connection's QPACK
    /// encoder, or the static table only.
    pub(crate) fn encode(&self, stream: u64, fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
        match &self.qpack {
            Some(q) => q.encode(stream, fields, out),
            None => quark_qpack::encode_section(fields, out),
        }
    }

    /// QPACK insert counts: ours, ours acknowledged, the peer's.
    pub(crate) fn qpack_inserts(&self) -> (u64, u64, u64) {
        self.qpack.as_ref().map_or((0, 0, 0), |q| q.insert_counts())
    }

    /// Sends the inserts of sections encoded so far, before their HEADERS.
    pub(crate) async fn flush_encoder(&self) -> Result<(), Error> {
        match &self.qpack {
            Some(q) => q.flush_encoder().await,
            None => Ok(()),
        }
    }

    /// Sends the decoder's instructions now (with a HEADERS frame: they share
    /// its packet).
    pub(crate) async fn flush_decoder(&self) -> Result<(), Error> {
        match &self.qpack {
            Some(q) => q.flush_decoder().await,
            None => Ok(()),
        }
    }

    /// The decoder's instructions (acknowledgments, cancellations, Insert
    /// Count Increments) go out with the next HEADERS this end sends, or
    /// after [`DECODER_FLUSH_DELAY`] at the latest. Sent at once, each was a
    /// packet of its own per request (a fifth fewer requests per
    /// CPU-second in `examples/qpack_cost.rs`).
    pub(crate) fn defer_decoder_flush(&self) {
        let Some(q) = &self.qpack else {
            return;
        };
        if !q.decoder_pending() || q.flush_scheduled.swap(true, Ordering::AcqRel) {
            return;
        }
        let conn = self.clone();
        self.quic.spawn(async move {
            tokio::time::sleep(DECODER_FLUSH_DELAY).await;
            if let Some(q) = &conn.qpack {
                q.flush_scheduled.store(false, Ordering::Release);
                let _ = q.flush_decoder().await;
            }
        });
    }

    /// Reads the peer's QPACK encoder or decoder stream into our decoder or
    /// encoder; inserts are acknowledged (Insert Count Increment) as they come.
    async fn serve_dynamic(
        &self,
        q: &Qpack,
        r: &mut FrameReader,
        encoder: bool,
    ) -> Result<(), Error> {
        let mut piece = Vec::new();
        loop {
            piece.clear();
            read_qpack_piece(r, &mut piece).await?;
            let fed = if encoder {
                q.on_encoder_stream(&piece)
            } else {
                q.on_decoder_stream(&piece)
            };
            fed.map_err(|e| Error::conn(e.code(), "a bad QPACK instruction"))?;
            if encoder {
                self.defer_decoder_flush();
            }
        }
    }
}

/// A control frame's payload, bounded.
async fn control_payload(r: &mut FrameReader, h: FrameHeader) -> Result<Vec<u8>, Error> {
    if h.len > MAX_CONTROL_FRAME {
        return Err(Error::conn(H3_EXCESSIVE_LOAD, "a control frame too long"));
    }
    r.payload(h.len).await
}

/// Appends what arrives next on a QPACK encoder or decoder stream to `into`.
/// These streams are critical: their end or reset closes the connection
/// (RFC 9204 §4.2).
async fn read_qpack_piece(r: &mut FrameReader, into: &mut Vec<u8>) -> Result<(), Error> {
    match r
        .some_with(MAX_CONTROL_FRAME, |piece| into.extend_from_slice(piece))
        .await
    {
        Ok(_) => Ok(()),
        Err(
            Error::Connection {
                code: H3_FRAME_ERROR,
                ..
            }
            | Error::Reset(_),
        ) => Err(Error::conn(
            H3_CLOSED_CRITICAL_STREAM,
            "a QPACK stream ended",
        )),
        Err(e) => Err(e),
    }
}

/// Reads a QPACK stream to check what the peer says on it; with no dynamic
/// table there is nothing to act on.
async fn serve_qpack(r: &mut FrameReader, encoder: bool) -> Result<(), Error> {
    let mut pending: Vec<u8> = Vec::new();
    loop {
        read_qpack_piece(r, &mut pending).await?;
        let checked = if encoder {
            quark_qpack::check_encoder_stream(&pending)
        } else {
            quark_qpack::check_decoder_stream(&pending)
        };
        let used = checked.map_err(|e| Error::conn(e.code(), "a bad QPACK instruction"))?;
        pending.drain(..used);
        if pending.len() > MAX_QPACK_PENDING {
            return Err(Error::conn(
                H3_EXCESSIVE_LOAD,
                "a QPACK instruction too long",
            ));
        }
    }
}
