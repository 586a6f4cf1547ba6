//! The decoding side of a connection (RFC 9204 §2.2): applies the peer's
//! encoder stream to our table, decodes field sections (or says they are
//! blocked), and queues decoder stream instructions.

use crate::field::{self, Reader};
use crate::instructions::{self, DecoderInstr, EncoderInstr, ParseError};
use crate::section;
use crate::table::{Table, entry_size};
use crate::{DecodeError, Field, StreamError, static_entry};

/// A QPACK decoder: our dynamic table as the peer's encoder builds it.
///
/// Bounded: the table by `max_capacity` (what we advertised in
/// SETTINGS_QPACK_MAX_TABLE_CAPACITY), blocked streams by `max_blocked`
/// (SETTINGS_QPACK_BLOCKED_STREAMS), a partial encoder instruction by a few
/// times the capacity, queued decoder instructions by the blocked streams
/// plus what the caller has not taken yet.
#[derive(Debug)]
pub struct Decoder {
    table: Table,
    max_capacity: u64,
    max_blocked: usize,
    /// Streams whose field section waits for inserts, with the Insert Count
    /// it needs. Those whose inserts came are dropped at once: they count
    /// against the limit no more, even before the caller retries them.
    blocked: Vec<(u64, u64)>,
    /// Unparsed tail of the encoder stream.
    pending: Vec<u8>,
    /// The Insert Count the peer's encoder knows we have (RFC 9204 §2.1.4).
    known_received: u64,
    /// Decoder stream bytes not yet taken.
    out: Vec<u8>,
}

impl Decoder {
    /// A decoder for the limits we advertise. With `max_capacity` 0 it
    /// decodes static-only sections exactly as [`crate::decode_section`].
    pub fn new(max_capacity: u64, max_blocked: u64) -> Decoder {
        Decoder {
            table: Table::default(),
            max_capacity,
            max_blocked: usize::try_from(max_blocked).unwrap_or(usize::MAX),
            blocked: Vec::new(),
            pending: Vec::new(),
            known_received: 0,
            out: Vec::new(),
        }
    }

    /// Insert Count: entries the peer's encoder has inserted so far.
    pub fn insert_count(&self) -> u64 {
        self.table.insert_count()
    }

    /// The dynamic table's size (RFC 9204 §3.2.1) now.
    pub fn table_size(&self) -> u64 {
        self.table.size()
    }

    /// How many streams are blocked now.
    pub fn blocked_streams(&self) -> usize {
        self.blocked.len()
    }

    /// The longest partial encoder instruction kept: two strings, each at
    /// most the capacity decoded (up to 30/8 as long Huffman-coded), and
    /// their prefixes.
    fn max_pending(&self) -> usize {
        usize::try_from(self.max_capacity.saturating_mul(8).saturating_add(64))
            .unwrap_or(usize::MAX)
    }

    /// Applies bytes from the peer's encoder stream. A partial instruction
    /// at the end is kept for the next call.
    pub fn feed_encoder_stream(&mut self, data: &[u8]) -> Result<(), StreamError> {
        self.pending.extend_from_slice(data);
        let mut pos = 0;
        let result = loop {
            let max_string = self.table.capacity();
            match instructions::parse_encoder(&self.pending[pos..], max_string) {
                Ok((instr, used)) => {
                    pos += used;
                    if let Err(e) = self.apply(instr) {
                        break Err(e);
                    }
                }
                Err(ParseError::Truncated) => break Ok(()),
                Err(ParseError::Invalid(why)) => break Err(StreamError::Encoder(why)),
            }
        };
        self.pending.drain(..pos);
        let count = self.insert_count();
        self.blocked.retain(|&(_, ric)| ric > count);
        result?;
        if self.pending.len() > self.max_pending() {
            return Err(StreamError::Encoder("an instruction longer than allowed"));
        }
        Ok(())
    }

    fn apply(&mut self, instr: EncoderInstr) -> Result<(), StreamError> {
        let err = StreamError::Encoder;
        let (name, value): (Box<[u8]>, Box<[u8]>) = match instr {
            //= https://www.rfc-editor.org/rfc/rfc9204#section-4.3.1
            //# The decoder MUST treat a new dynamic table capacity
            //# value that exceeds this limit as a connection error of type
            //# QPACK_ENCODER_STREAM_ERROR.
            EncoderInstr::SetCapacity(c) => {
                if c > self.max_capacity {
                    return Err(err("dynamic table capacity above our limit"));
                }
                self.table.set_capacity(c);
                return Ok(());
            }
            EncoderInstr::InsertNameRef {
                is_static: true,
                index,
                value,
            } => {
                let (name, _) = usize::try_from(index)
                    .ok()
                    .and_then(static_entry)
                    .ok_or(err("insert naming a static entry that does not exist"))?;
                (name.into(), value.into())
            }
            EncoderInstr::InsertNameRef {
                is_static: false,
                index,
                value,
            } => {
                let e = self.relative(index)?;
                (e.name.clone(), value.into())
            }
            EncoderInstr::InsertLiteral { name, value } => (name.into(), value.into()),
            EncoderInstr::Duplicate(index) => {
                let e = self.relative(index)?;
                (e.name.clone(), e.value.clone())
            }
        };
        //= https://www.rfc-editor.org/rfc/rfc9204#section-3.2.2
        //# The encoder MUST NOT cause a dynamic table entry to be
        //# evicted unless that entry is evictable
        // ... and an entry larger than the capacity is an error.
        if entry_size(&name, &value) > self.table.capacity() {
            return Err(err("an entry larger than the table capacity"));
        }
        self.table.insert(name, value);
        Ok(())
    }

    /// The entry at a relative index on the encoder stream (RFC 9204 §3.2.5).
    fn relative(&self, index: u64) -> Result<&crate::table::Entry, StreamError> {
        self.insert_count()
            .checked_sub(index)
            .and_then(|v| v.checked_sub(1))
            .and_then(|abs| self.table.get(abs))
            .ok_or(StreamError::Encoder("a reference to a missing entry"))
    }

    /// Decodes the field section `block` of stream `stream`; `max_size`
    /// bounds its RFC 9114 §4.2.2 size. `Ok(None)` when it needs inserts
    /// that have not arrived (the stream is blocked: call again after
    /// [`feed_encoder_stream`](Self::feed_encoder_stream) inserted more).
    /// One more blocked stream than allowed is
    /// [`DecodeError::TooManyBlocked`].
    pub fn decode_section(
        &mut self,
        stream: u64,
        block: &[u8],
        max_size: u64,
    ) -> Result<Option<Vec<Field>>, DecodeError> {
        if self.max_capacity == 0 {
            return field::decode_section(block, max_size).map(Some);
        }
        let mut r = Reader {
            buf: block,
            budget: max_size,
        };
        let (ric, base) = section::read_prefix(&mut r, self.insert_count(), self.max_capacity)?;
        let was_blocked = self.blocked.iter().position(|&(s, _)| s == stream);
        //= https://www.rfc-editor.org/rfc/rfc9204#section-2.1.2
        //# If the decoder encounters more blocked streams than it promised to
        //# support, it MUST treat this as a connection error of type
        //# QPACK_DECOMPRESSION_FAILED.
        if ric > self.insert_count() {
            if was_blocked.is_none() {
                if self.blocked.len() >= self.max_blocked {
                    return Err(DecodeError::TooManyBlocked);
                }
                self.blocked.push((stream, ric));
            }
            return Ok(None);
        }
        if let Some(i) = was_blocked {
            self.blocked.swap_remove(i);
        }
        let fields = section::decode_lines(&mut r, &self.table, ric, base)?;
        //= https://www.rfc-editor.org/rfc/rfc9204#section-4.4.1
        //# After processing an encoded field section whose declared Required
        //# Insert Count is greater than zero, the decoder emits a Section
        //# Acknowledgment instruction.
        if ric > 0 {
            instructions::write_decoder(&mut self.out, DecoderInstr::SectionAck(stream));
            self.known_received = self.known_received.max(ric);
        }
        Ok(Some(fields))
    }

    /// The stream was reset or its reading abandoned before its field
    /// sections were all decoded: it blocks no more, and the peer's encoder
    /// is told (RFC 9204 §4.4.2).
    pub fn cancel_stream(&mut self, stream: u64) {
        self.blocked.retain(|&(s, _)| s != stream);
        //= https://www.rfc-editor.org/rfc/rfc9204#section-4.4.2
        //# A decoder with a maximum dynamic table capacity
        //# (Section 3.2.3) equal to zero MAY omit sending Stream Cancellations,
        //# because the encoder cannot have any dynamic table references.
        if self.max_capacity > 0 {
            instructions::write_decoder(&mut self.out, DecoderInstr::StreamCancel(stream));
        }
    }

    /// Moves the queued decoder stream bytes to `out`, with an Insert Count
    /// Increment for inserts no acknowledgment covered yet.
    pub fn take_instructions(&mut self, out: &mut Vec<u8>) {
        let count = self.insert_count();
        if count > self.known_received {
            let n = count - self.known_received;
            instructions::write_decoder(&mut self.out, DecoderInstr::InsertCountIncrement(n));
            self.known_received = count;
        }
        out.append(&mut self.out);
    }

    /// Whether [`take_instructions`](Self::take_instructions) has anything.
    pub fn has_instructions(&self) -> bool {
        !self.out.is_empty() || self.insert_count() > self.known_received
    }
}
