//! QPACK's dynamic table on one connection (RFC 9204 §4.2): our encoder and
//! decoder, the encoder and decoder streams we send on, and the wake-up of
//! request streams whose field section waits for inserts.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};

use quark::{Connection, SendStream};
use quark_proto::varint::put_varint;
use quark_qpack::{DecodeError, Decoder, Encoder, Field, StreamError};
use tokio::sync::Notify;

use crate::error::Error;
use crate::settings::Settings;

/// Unidirectional stream types (RFC 9204 §4.2).
pub(crate) const ENCODER_STREAM: u64 = 0x02;
pub(crate) const DECODER_STREAM: u64 = 0x03;

struct Codec {
    encoder: Encoder,
    decoder: Decoder,
}

/// The QPACK state of a connection that allows a dynamic table.
pub(crate) struct Qpack {
    codec: Mutex<Codec>,
    /// Our capacity limit, also the most our encoder uses of the peer's.
    limit: u64,
    encoder_stream: tokio::sync::Mutex<SendStream>,
    decoder_stream: tokio::sync::Mutex<SendStream>,
    /// The decoder has instructions not sent yet (checked without the lock).
    decoder_dirty: AtomicBool,
    /// A delayed flush of the decoder stream is scheduled.
    pub(crate) flush_scheduled: AtomicBool,
    /// Woken when inserts arrive (or the connection fails).
    pub(crate) inserted: Notify,
}

impl Qpack {
    /// Opens our encoder and decoder streams. Until the peer's SETTINGS
    /// come, our encoder uses the static table only (RFC 9204 §3.2.3).
    pub(crate) async fn open(quic: &Connection, local: &Settings) -> Result<Qpack, Error> {
        let mut streams = Vec::with_capacity(2);
        for ty in [ENCODER_STREAM, DECODER_STREAM] {
            let mut s = quic.open_uni().await?;
            let mut out = Vec::with_capacity(1);
            put_varint(&mut out, ty);
            s.write_all(&out).await?;
            streams.push(s);
        }
        let decoder_stream = streams.pop().expect("two streams");
        let encoder_stream = streams.pop().expect("two streams");
        let limit = local.qpack_max_table_capacity;
        Ok(Qpack {
            codec: Mutex::new(Codec {
                encoder: Encoder::new(0, 0, limit),
                decoder: Decoder::new(limit, local.qpack_blocked_streams),
            }),
            limit,
            encoder_stream: tokio::sync::Mutex::new(encoder_stream),
            decoder_stream: tokio::sync::Mutex::new(decoder_stream),
            decoder_dirty: AtomicBool::new(false),
            flush_scheduled: AtomicBool::new(false),
            inserted: Notify::new(),
        })
    }

    /// The peer's SETTINGS came: our encoder may use its table from now on.
    pub(crate) fn peer_settings(&self, peer: &Settings) {
        let encoder = Encoder::new(
            peer.qpack_max_table_capacity,
            peer.qpack_blocked_streams,
            self.limit,
        );
        self.codec.lock().unwrap().encoder = encoder;
    }

    /// Encodes a field section for `stream`; its inserts wait in the encoder
    /// until [`flush_encoder`](Self::flush_encoder).
    pub(crate) fn encode(&self, stream: u64, fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
        let mut codec = self.codec.lock().unwrap();
        codec.encoder.encode_section(stream, fields, out);
    }

    /// Sends the encoder's pending instructions. Taken and written under the
    /// stream's lock, so they go out in the order they were made.
    pub(crate) async fn flush_encoder(&self) -> Result<(), Error> {
        if !self.codec.lock().unwrap().encoder.has_instructions() {
            return Ok(());
        }
        let mut stream = self.encoder_stream.lock().await;
        let mut out = Vec::new();
        self.codec
            .lock()
            .unwrap()
            .encoder
            .take_instructions(&mut out);
        if !out.is_empty() {
            stream.write_all(&out).await?;
        }
        Ok(())
    }

    /// Sends the decoder's pending instructions (acknowledgments,
    /// cancellations, Insert Count Increments).
    pub(crate) async fn flush_decoder(&self) -> Result<(), Error> {
        if !self.decoder_dirty.load(Ordering::Acquire) {
            return Ok(());
        }
        let mut stream = self.decoder_stream.lock().await;
        self.decoder_dirty.store(false, Ordering::Release);
        let mut out = Vec::new();
        self.codec
            .lock()
            .unwrap()
            .decoder
            .take_instructions(&mut out);
        if !out.is_empty() {
            stream.write_all(&out).await?;
        }
        Ok(())
    }

    /// Decodes a field section; `Ok(None)` if it is blocked.
    pub(crate) fn decode(
        &self,
        stream: u64,
        block: &[u8],
        max_size: u64,
    ) -> Result<Option<Vec<Field>>, DecodeError> {
        let mut codec = self.codec.lock().unwrap();
        let decoded = codec.decoder.decode_section(stream, block, max_size);
        self.mark(&codec);
        decoded
    }

    /// Notes (without a lock for the readers) that the decoder has
    /// instructions to send.
    fn mark(&self, codec: &Codec) {
        if codec.decoder.has_instructions() {
            self.decoder_dirty.store(true, Ordering::Release);
        }
    }

    /// Whether the decoder has instructions to send.
    pub(crate) fn decoder_pending(&self) -> bool {
        self.decoder_dirty.load(Ordering::Acquire)
    }

    /// A request stream ends before its field sections were decoded.
    pub(crate) fn cancel(&self, stream: u64) {
        let mut codec = self.codec.lock().unwrap();
        codec.decoder.cancel_stream(stream);
        self.mark(&codec);
    }

    /// Bytes from the peer's encoder stream.
    pub(crate) fn on_encoder_stream(&self, data: &[u8]) -> Result<(), StreamError> {
        let before;
        let after;
        {
            let mut codec = self.codec.lock().unwrap();
            before = codec.decoder.insert_count();
            codec.decoder.feed_encoder_stream(data)?;
            after = codec.decoder.insert_count();
            self.mark(&codec);
        }
        if after > before {
            self.inserted.notify_waiters();
        }
        Ok(())
    }

    /// Entries our encoder inserted (and the peer acknowledged), and the
    /// peer's encoder inserted into our decoder.
    pub(crate) fn insert_counts(&self) -> (u64, u64, u64) {
        let codec = self.codec.lock().unwrap();
        (
            codec.encoder.insert_count(),
            codec.encoder.known_received(),
            codec.decoder.insert_count(),
        )
    }

    /// Bytes from the peer's decoder stream.
    pub(crate) fn on_decoder_stream(&self, data: &[u8]) -> Result<(), StreamError> {
        let mut codec = self.codec.lock().unwrap();
        codec.encoder.feed_decoder_stream(data)
    }
}
