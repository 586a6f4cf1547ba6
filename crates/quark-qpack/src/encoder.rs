//! The encoding side of a connection (RFC 9204 §2.1): decides what goes
//! into the peer's dynamic table, encodes field sections against it, and
//! tracks what the peer's decoder has acknowledged.

use crate::field::{self, INDEXED, NAME_REF, NAME_REF_STATIC};
use crate::instructions::{self, DecoderInstr, EncoderInstr, ParseError};
use crate::static_table::{self, Match};
use crate::table::{Table, entry_size};
use crate::{StreamError, prefix_int, section};

/// Sections with dynamic references awaiting acknowledgment, at most: a
/// peer that never acknowledges sees static-only sections after that.
const MAX_OUTSTANDING: usize = 256;
/// A partial decoder instruction is one prefix integer: at most 10 bytes.
const MAX_PENDING: usize = 16;

/// A field section referencing the dynamic table, not acknowledged yet.
#[derive(Debug, Clone, Copy)]
struct Section {
    stream: u64,
    /// Its Required Insert Count.
    required: u64,
    /// The smallest absolute index it references.
    min_ref: u64,
}

/// A QPACK encoder for one connection.
#[derive(Debug)]
pub struct Encoder {
    table: Table,
    /// The peer's SETTINGS_QPACK_MAX_TABLE_CAPACITY (for MaxEntries).
    max_capacity: u64,
    /// The capacity we use: the peer's maximum, bounded by our own limit.
    capacity: u64,
    max_blocked: usize,
    /// Known Received Count (RFC 9204 §2.1.4).
    known_received: u64,
    outstanding: Vec<Section>,
    /// Encoder stream bytes not yet taken.
    out: Vec<u8>,
    /// Unparsed tail of the decoder stream.
    pending: Vec<u8>,
}

/// One field line, decided before the section is written (its Base is the
/// Insert Count after any inserts for it).
enum Line<'a> {
    Static(usize),
    Dynamic(u64),
    StaticName(usize, &'a [u8]),
    DynamicName(u64, &'a [u8]),
    Literal(&'a [u8], &'a [u8]),
}

impl Encoder {
    /// An encoder for a peer that allows `peer_capacity` bytes of table and
    /// `peer_blocked` blocked streams, using at most `limit` bytes. Capacity 0
    /// (either way) encodes static-only sections as [`crate::encode_section`].
    pub fn new(peer_capacity: u64, peer_blocked: u64, limit: u64) -> Encoder {
        Encoder {
            table: Table::default(),
            max_capacity: peer_capacity,
            capacity: peer_capacity.min(limit),
            max_blocked: usize::try_from(peer_blocked).unwrap_or(usize::MAX),
            known_received: 0,
            outstanding: Vec::new(),
            out: Vec::new(),
            pending: Vec::new(),
        }
    }

    /// Whether this encoder uses a dynamic table at all.
    pub fn is_dynamic(&self) -> bool {
        self.capacity > 0
    }

    /// Insert Count: entries inserted so far.
    pub fn insert_count(&self) -> u64 {
        self.table.insert_count()
    }

    /// Known Received Count: inserts the peer has acknowledged.
    pub fn known_received(&self) -> u64 {
        self.known_received
    }

    /// Streams with a section that may block the peer's decoder.
    fn blocking_streams(&self) -> usize {
        let mut streams: Vec<u64> = self
            .outstanding
            .iter()
            .filter(|s| s.required > self.known_received)
            .map(|s| s.stream)
            .collect();
        streams.sort_unstable();
        streams.dedup();
        streams.len()
    }

    /// Entries below this absolute index may be evicted: their insertion is
    /// acknowledged and no unacknowledged section references them
    /// (RFC 9204 §2.1.1).
    fn evictable_below(&self, section_min: u64) -> u64 {
        let referenced = self.outstanding.iter().map(|s| s.min_ref).min();
        self.known_received
            .min(referenced.unwrap_or(u64::MAX))
            .min(section_min)
    }

    /// Inserts `(name, value)` if it fits without evicting an entry that is
    /// not evictable; writes the instruction. The new absolute index.
    fn try_insert(&mut self, name: &[u8], value: &[u8], section_min: u64) -> Option<u64> {
        let size = entry_size(name, value);
        let evict = self.table.evictions_for(size, self.table.capacity())?;
        //= https://www.rfc-editor.org/rfc/rfc9204#section-2.1.1
        //# If the dynamic table does not contain enough room for a new entry
        //# without evicting other entries, and the entries that would be
        //# evicted are not evictable, the encoder MUST NOT insert that entry
        //# into the dynamic table (including duplicates of existing entries).
        if self.table.first_index() + evict as u64 > self.evictable_below(section_min) {
            return None;
        }
        let instr = match static_table::find(name, value) {
            Match::Full(i) | Match::Name(i) => EncoderInstr::InsertNameRef {
                is_static: true,
                index: i as u64,
                value: value.to_vec(),
            },
            Match::None => match self.find_name(name) {
                // Relative to the Insert Count on the encoder stream (§3.2.5).
                Some(abs) => EncoderInstr::InsertNameRef {
                    is_static: false,
                    index: self.table.insert_count() - abs - 1,
                    value: value.to_vec(),
                },
                None => EncoderInstr::InsertLiteral {
                    name: name.to_vec(),
                    value: value.to_vec(),
                },
            },
        };
        instructions::write_encoder(&mut self.out, &instr);
        self.table.insert(name.into(), value.into());
        Some(self.table.insert_count() - 1)
    }

    /// Whether `abs` is among the oldest quarter of the entries.
    fn draining(&self, abs: u64) -> bool {
        let first = self.table.first_index();
        let len = self.table.insert_count() - first;
        len >= 4 && abs - first < len / 4
    }

    /// Duplicates entry `abs` (RFC 9204 §4.3.4) if that evicts nothing
    /// that is not evictable; the copy's absolute index.
    fn try_duplicate(&mut self, abs: u64, section_min: u64) -> Option<u64> {
        let e = self.table.get(abs)?;
        let (name, value) = (e.name.clone(), e.value.clone());
        let evict = self
            .table
            .evictions_for(entry_size(&name, &value), self.table.capacity())?;
        if self.table.first_index() + evict as u64 > self.evictable_below(section_min) {
            return None;
        }
        let relative = self.table.insert_count() - abs - 1;
        instructions::write_encoder(&mut self.out, &EncoderInstr::Duplicate(relative));
        self.table.insert(name, value);
        Some(self.table.insert_count() - 1)
    }

    fn find(&self, name: &[u8], value: &[u8]) -> Option<u64> {
        let mut it = self.table.iter().rev();
        it.find(|(_, e)| &*e.name == name && &*e.value == value)
            .map(|(abs, _)| abs)
    }

    fn find_name(&self, name: &[u8]) -> Option<u64> {
        let mut it = self.table.iter().rev();
        it.find(|(_, e)| &*e.name == name).map(|(abs, _)| abs)
    }

    /// Encodes `fields` for stream `stream` into `out` (the HEADERS
    /// payload); inserts go to the encoder stream
    /// ([`take_instructions`](Self::take_instructions)), which must reach the
    /// peer in order. A section may reference unacknowledged entries (and so
    /// block) only while fewer than the peer's limit of streams are blocking.
    pub fn encode_section(&mut self, stream: u64, fields: &[(&[u8], &[u8])], out: &mut Vec<u8>) {
        if self.capacity == 0 {
            return field::encode_section(fields, out);
        }
        if self.table.capacity() != self.capacity {
            // Sent once, before the first insert: the table starts empty.
            let instr = EncoderInstr::SetCapacity(self.capacity);
            instructions::write_encoder(&mut self.out, &instr);
            self.table.set_capacity(self.capacity);
        }
        let already_blocking = self
            .outstanding
            .iter()
            .any(|s| s.stream == stream && s.required > self.known_received);
        let room = self.outstanding.len() < MAX_OUTSTANDING;
        let may_block = room && (already_blocking || self.blocking_streams() < self.max_blocked);
        let mut lines: Vec<Line> = Vec::with_capacity(fields.len());
        let mut min_ref = u64::MAX;
        let mut max_ref: Option<u64> = None;
        for &(name, value) in fields {
            let smatch = static_table::find(name, value);
            if let Match::Full(i) = smatch {
                lines.push(Line::Static(i));
                continue;
            }
            let usable = |abs: u64, known: u64| room && (abs < known || may_block);
            let mut found = self.find(name, value);
            if found.is_none() && room && worth_inserting(name, value, self.capacity) {
                found = self.try_insert(name, value, min_ref);
            }
            // An entry about to be evicted (the oldest quarter) that is still
            // in use is copied to the front, so references move off it and
            // it can go (RFC 9204 §2.1.1.1 "draining" entries).
            if let Some(abs) = found.filter(|&a| may_block && self.draining(a)) {
                found = self.try_duplicate(abs, min_ref).or(found);
            }
            if let Some(abs) = found.filter(|&a| usable(a, self.known_received)) {
                min_ref = min_ref.min(abs);
                max_ref = max_ref.max(Some(abs));
                lines.push(Line::Dynamic(abs));
                continue;
            }
            if let Match::Name(i) = smatch {
                lines.push(Line::StaticName(i, value));
                continue;
            }
            match self
                .find_name(name)
                .filter(|&a| usable(a, self.known_received))
            {
                Some(abs) => {
                    min_ref = min_ref.min(abs);
                    max_ref = max_ref.max(Some(abs));
                    lines.push(Line::DynamicName(abs, value));
                }
                None => lines.push(Line::Literal(name, value)),
            }
        }
        let required = max_ref.map_or(0, |m| m + 1);
        // Base = Insert Count now: every reference is a plain relative one,
        // and Delta Base is Base - Required Insert Count, sign 0.
        let base = if required == 0 {
            0
        } else {
            self.table.insert_count()
        };
        let encoded = section::encode_ric(required, self.max_capacity);
        prefix_int::encode(out, 0, 8, encoded);
        prefix_int::encode(out, 0, 7, base - required);
        for line in &lines {
            match *line {
                Line::Static(i) => prefix_int::encode(out, INDEXED | 0x40, 6, i as u64),
                Line::Dynamic(abs) => prefix_int::encode(out, INDEXED, 6, base - abs - 1),
                Line::StaticName(i, value) => {
                    prefix_int::encode(out, NAME_REF | NAME_REF_STATIC, 4, i as u64);
                    field::encode_string(out, 0, 7, value);
                }
                Line::DynamicName(abs, value) => {
                    prefix_int::encode(out, NAME_REF, 4, base - abs - 1);
                    field::encode_string(out, 0, 7, value);
                }
                Line::Literal(name, value) => {
                    field::encode_string(out, field::LITERAL_NAME, 3, name);
                    field::encode_string(out, 0, 7, value);
                }
            }
        }
        if required > 0 {
            self.outstanding.push(Section {
                stream,
                required,
                min_ref,
            });
        }
    }

    /// Moves the encoder stream bytes produced so far to `out`.
    pub fn take_instructions(&mut self, out: &mut Vec<u8>) {
        out.append(&mut self.out);
    }

    /// Whether [`take_instructions`](Self::take_instructions) has anything.
    pub fn has_instructions(&self) -> bool {
        !self.out.is_empty()
    }

    /// Applies bytes from the peer's decoder stream (RFC 9204 §4.4); a
    /// partial instruction is kept for the next call.
    pub fn feed_decoder_stream(&mut self, data: &[u8]) -> Result<(), StreamError> {
        self.pending.extend_from_slice(data);
        let mut pos = 0;
        let result = loop {
            match instructions::parse_decoder(&self.pending[pos..]) {
                Ok((instr, used)) => {
                    pos += used;
                    if let Err(e) = self.apply(instr) {
                        break Err(e);
                    }
                }
                Err(ParseError::Truncated) => break Ok(()),
                Err(ParseError::Invalid(why)) => break Err(StreamError::Decoder(why)),
            }
        };
        self.pending.drain(..pos);
        result?;
        if self.pending.len() > MAX_PENDING {
            return Err(StreamError::Decoder("an instruction too long"));
        }
        Ok(())
    }

    fn apply(&mut self, instr: DecoderInstr) -> Result<(), StreamError> {
        match instr {
            DecoderInstr::SectionAck(stream) => {
                //= https://www.rfc-editor.org/rfc/rfc9204#section-4.4.1
                //# If an encoder receives a Section Acknowledgment instruction
                //# referring to a stream on which every encoded field section with
                //# a non-zero Required Insert Count has already been acknowledged,
                //# this MUST be treated as a connection error of type
                //# QPACK_DECODER_STREAM_ERROR.
                let i = self
                    .outstanding
                    .iter()
                    .position(|s| s.stream == stream)
                    .ok_or(StreamError::Decoder(
                        "Section Acknowledgment with no section outstanding",
                    ))?;
                let s = self.outstanding.remove(i);
                self.known_received = self.known_received.max(s.required);
            }
            DecoderInstr::StreamCancel(stream) => {
                self.outstanding.retain(|s| s.stream != stream);
            }
            DecoderInstr::InsertCountIncrement(n) => {
                //= https://www.rfc-editor.org/rfc/rfc9204#section-4.4.3
                //# An encoder that receives an Increment field equal to zero, or one
                //# that increases the Known Received Count beyond what the encoder has
                //# sent, MUST treat this as a connection error of type
                //# QPACK_DECODER_STREAM_ERROR.
                let known = self.known_received.saturating_add(n);
                if n == 0 || known > self.table.insert_count() {
                    return Err(StreamError::Decoder("a bad Insert Count Increment"));
                }
                self.known_received = known;
            }
        }
        Ok(())
    }
}

/// The insertion policy: fields likely to repeat on later requests or
/// responses of the connection, small enough to leave room for others.
/// Never credentials (RFC 9204 §7.1.3 asks to keep them out of the table),
/// nor one-off values such as paths, dates, lengths or validators.
fn worth_inserting(name: &[u8], value: &[u8], capacity: u64) -> bool {
    if entry_size(name, value) > capacity / 4 {
        return false;
    }
    // A short cookie is guessable from compression ratios (RFC 7541 §7.1.3).
    if name == b"cookie" {
        return value.len() >= 20;
    }
    if name.starts_with(b"sec-ch-")
        || name.starts_with(b"sec-fetch-")
        || name.starts_with(b"access-control-")
    {
        return true;
    }
    matches!(
        name,
        b":authority"
            | b"user-agent"
            | b"accept"
            | b"accept-language"
            | b"accept-encoding"
            | b"cookie"
            | b"origin"
            | b"referer"
            | b"priority"
            | b"upgrade-insecure-requests"
            | b"dnt"
            | b"content-type"
            | b"content-encoding"
            | b"server"
            | b"cache-control"
            | b"vary"
            | b"alt-svc"
            | b"strict-transport-security"
            | b"x-content-type-options"
            | b"x-frame-options"
            | b"content-security-policy"
            | b"referrer-policy"
            | b"accept-ranges"
            | b"via"
    )
}
