//! Extended CONNECT (RFC 9220) and HTTP Datagrams (RFC 9297): a CONNECT
//! request may name a protocol (`:protocol`) when the server announced
//! SETTINGS_ENABLE_CONNECT_PROTOCOL, and with SETTINGS_H3_DATAGRAM on both
//! sides a CONNECT stream exchanges datagrams in QUIC DATAGRAM frames, each
//! prefixed with the stream's quarter ID. No Capsule protocol.

use std::collections::HashMap;

use bytes::{BufMut, Bytes, BytesMut};
use quark_proto::coding::Reader;
use quark_proto::varint::put_varint;
use tokio::sync::mpsc;

use crate::conn::Conn;
use crate::error::*;
use crate::request::RequestStream;

/// The `:protocol` of an Extended CONNECT request (RFC 9220), as a request
/// extension: set it on a CONNECT request to send one; a server finds it on
/// the requests it accepts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Protocol(pub String);

/// Datagrams queued per stream before the application reads them; more are
/// dropped (datagrams are unreliable anyway).
const QUEUE: usize = 64;

/// Where received datagrams go: a queue per CONNECT stream that reads them.
pub(crate) type Routes = HashMap<u64, mpsc::Sender<Bytes>>;

impl Conn {
    /// Whether both ends announced SETTINGS_H3_DATAGRAM.
    pub(crate) fn datagrams_agreed(&self) -> bool {
        self.local.h3_datagram
            && self
                .state
                .lock()
                .unwrap()
                .peer_settings
                .is_some_and(|s| s.h3_datagram)
    }

    /// Gives stream `id` a queue of the datagrams that arrive for it.
    pub(crate) fn route_datagrams(&self, id: u64) -> Option<mpsc::Receiver<Bytes>> {
        if !self.local.h3_datagram {
            return None;
        }
        let (tx, rx) = mpsc::channel(QUEUE);
        self.state.lock().unwrap().datagram_routes.insert(id, tx);
        Some(rx)
    }

    /// Reads the connection's QUIC datagrams and hands each to its stream
    /// (started when we announce SETTINGS_H3_DATAGRAM).
    pub(crate) async fn serve_datagrams(self) {
        while let Ok(d) = self.quic.read_datagram().await {
            let mut r = Reader::new(&d);
            // RFC 9297 §2.1: a datagram without a whole quarter stream ID is
            // H3_DATAGRAM_ERROR.
            let Ok(quarter) = r.varint() else {
                self.fail(&Error::conn(
                    H3_DATAGRAM_ERROR,
                    "a datagram without a stream",
                ));
                return;
            };
            let payload = d.slice(r.position()..);
            let id = quarter.saturating_mul(4);
            let route = self.state.lock().unwrap().datagram_routes.get(&id).cloned();
            // A stream not (or no longer) reading datagrams: dropped, as
            // RFC 9297 §2.1 allows.
            if let Some(tx) = route {
                let _ = tx.try_send(payload);
            }
        }
    }
}

impl RequestStream {
    /// Sends an HTTP Datagram (RFC 9297) on this CONNECT stream: both ends
    /// must have announced SETTINGS_H3_DATAGRAM ([`Config::h3_datagram`](crate::Config::h3_datagram)).
    /// Queued as quark's `send_datagram` does (the oldest dropped when full).
    pub fn send_datagram(&self, payload: &[u8]) -> Result<(), Error> {
        if !self.conn.datagrams_agreed() {
            return Err(Error::Usage("HTTP Datagrams not agreed by both ends"));
        }
        let mut d = BytesMut::with_capacity(8 + payload.len());
        let mut head = Vec::with_capacity(8);
        put_varint(&mut head, self.id() / 4);
        d.put_slice(&head);
        d.put_slice(payload);
        self.conn
            .quic
            .send_datagram(d.freeze())
            .map_err(|_| Error::Usage("the datagram does not fit, or datagrams are off"))
    }

    /// The next HTTP Datagram received on this CONNECT stream; `None` once
    /// the connection ended, or when datagrams are off here.
    pub async fn read_datagram(&mut self) -> Option<Bytes> {
        self.datagrams.as_mut()?.recv().await
    }

    /// Starts taking this stream's datagrams (a CONNECT request's).
    pub(crate) fn take_datagrams(&mut self) {
        if self.datagrams.is_none() {
            self.datagrams = self.conn.route_datagrams(self.id());
        }
    }
}
