//! Extensible priorities (RFC 9218): the Priority header field's value, a
//! Structured Fields Dictionary (RFC 8941 §3.2) of which `u` (urgency) and
//! `i` (incremental) count, and the PRIORITY_UPDATE frames that change a
//! request's priority after its head.

use quark::StreamId;
use quark_proto::Side;
use quark_proto::coding::Reader;
use quark_proto::varint::put_varint;

pub use quark::Priority;

use crate::conn::Conn;
use crate::error::*;

/// PRIORITY_UPDATE for a request stream (RFC 9218 §7.2).
pub const PRIORITY_UPDATE_REQUEST: u64 = 0xF0700;
/// PRIORITY_UPDATE for a push stream (RFC 9218 §7.2).
pub const PRIORITY_UPDATE_PUSH: u64 = 0xF0701;

/// The Priority header field's name.
pub const PRIORITY: &str = "priority";

/// The priority a field value asks for. Parameters other than `u` and `i`
/// are ignored, and so are `u` and `i` of the wrong type or out of range;
/// a value that is not a dictionary at all is ignored whole (defaults).
/// (RFC 9218 §4: unknown parameters, out-of-range values and values of
/// unexpected types are ignored.)
pub fn parse(value: &[u8]) -> Priority {
    parse_dictionary(value).unwrap_or_default()
}

/// Whether `value` is a valid dictionary (what PRIORITY_UPDATE requires).
pub fn is_valid(value: &[u8]) -> bool {
    parse_dictionary(value).is_some()
}

/// The field value for `p`: `u=N`, and `, i` when incremental.
pub fn format(p: Priority) -> String {
    let u = p.urgency.min(7);
    if p.incremental {
        format!("u={u}, i")
    } else {
        format!("u={u}")
    }
}

/// A PRIORITY_UPDATE frame for request stream `id`.
pub fn put_update(out: &mut Vec<u8>, id: u64, p: Priority) {
    let value = format(p);
    let mut payload = Vec::with_capacity(8 + value.len());
    put_varint(&mut payload, id);
    payload.extend_from_slice(value.as_bytes());
    crate::frame::put_frame(out, PRIORITY_UPDATE_REQUEST, &payload);
}

/// A PRIORITY_UPDATE payload: the element ID and the field value, or `None`
/// when it does not start with a whole ID.
pub fn parse_update(payload: &[u8]) -> Option<(u64, &[u8])> {
    let mut r = Reader::new(payload);
    let id = r.varint().ok()?;
    Some((id, &payload[r.position()..]))
}

/// A bare item's value, as far as `u` and `i` care.
#[derive(Debug, PartialEq)]
enum Item {
    Integer(i64),
    Boolean(bool),
    Other,
}

/// RFC 8941 §4.2.2: members separated by commas with optional whitespace.
fn parse_dictionary(value: &[u8]) -> Option<Priority> {
    let mut p = Priority::default();
    let mut s = Scanner { b: value, i: 0 };
    s.skip(b' ');
    if s.at_end() {
        return Some(p);
    }
    loop {
        let key = s.key()?;
        let item = if s.eat(b'=') {
            if s.peek() == Some(b'(') {
                s.inner_list()?;
                Item::Other
            } else {
                s.bare_item()?
            }
        } else {
            Item::Boolean(true)
        };
        s.parameters()?;
        // A later member of the same name replaces an earlier one.
        match (key, item) {
            (b"u", Item::Integer(u)) if (0..=7).contains(&u) => p.urgency = u as u8,
            (b"u", _) => p.urgency = Priority::default().urgency,
            (b"i", Item::Boolean(i)) => p.incremental = i,
            (b"i", _) => p.incremental = false,
            _ => {}
        }
        s.skip_ows();
        if s.at_end() {
            return Some(p);
        }
        if !s.eat(b',') {
            return None;
        }
        s.skip_ows();
        if s.at_end() {
            return None; // a trailing comma
        }
    }
}

struct Scanner<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Scanner<'a> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn at_end(&self) -> bool {
        self.i >= self.b.len()
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.peek() == Some(c);
        self.i += usize::from(hit);
        hit
    }

    fn skip(&mut self, c: u8) {
        while self.eat(c) {}
    }

    fn skip_ows(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.i += 1;
        }
    }

    /// RFC 8941 §4.2.3.3: `( lcalpha / "*" ) *( lcalpha / DIGIT / "_" / "-" / "." / "*" )`.
    fn key(&mut self) -> Option<&'a [u8]> {
        let start = self.i;
        if !matches!(self.peek(), Some(b'a'..=b'z' | b'*')) {
            return None;
        }
        while matches!(
            self.peek(),
            Some(b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-' | b'.' | b'*')
        ) {
            self.i += 1;
        }
        Some(&self.b[start..self.i])
    }

    /// `*( ";" *SP key [ "=" bare-item ] )`
    fn parameters(&mut self) -> Option<()> {
        while self.eat(b';') {
            self.skip(b' ');
            self.key()?;
            if self.eat(b'=') {
                self.bare_item()?;
            }
        }
        Some(())
    }

    /// RFC 8941 §4.2.1.2: `"(" *SP [ item *( 1*SP item ) *SP ] ")"` then parameters.
    fn inner_list(&mut self) -> Option<()> {
        self.eat(b'(');
        loop {
            self.skip(b' ');
            if self.eat(b')') {
                return self.parameters();
            }
            self.bare_item()?;
            self.parameters()?;
            if !matches!(self.peek(), Some(b' ' | b')')) {
                return None;
            }
        }
    }

    /// RFC 8941 §4.2.3.1: integer or decimal, string, token, byte sequence,
    /// boolean.
    fn bare_item(&mut self) -> Option<Item> {
        match self.peek()? {
            b'-' | b'0'..=b'9' => self.number(),
            b'"' => {
                self.i += 1;
                loop {
                    match self.peek()? {
                        b'\\' => {
                            self.i += 1;
                            if !matches!(self.peek()?, b'"' | b'\\') {
                                return None;
                            }
                        }
                        b'"' => break,
                        0x20..=0x7e => {}
                        _ => return None,
                    }
                    self.i += 1;
                }
                self.i += 1;
                Some(Item::Other)
            }
            b':' => {
                self.i += 1;
                while self.peek()? != b':' {
                    let c = self.peek()?;
                    if !(c.is_ascii_alphanumeric() || matches!(c, b'+' | b'/' | b'=')) {
                        return None;
                    }
                    self.i += 1;
                }
                self.i += 1;
                Some(Item::Other)
            }
            b'?' => {
                self.i += 1;
                let v = match self.peek()? {
                    b'0' => false,
                    b'1' => true,
                    _ => return None,
                };
                self.i += 1;
                Some(Item::Boolean(v))
            }
            c if c.is_ascii_alphabetic() || c == b'*' => {
                self.i += 1;
                while matches!(self.peek(), Some(c) if c.is_ascii_alphanumeric()
                    || b"!#$%&'*+-.^_`|~:/".contains(&c))
                {
                    self.i += 1;
                }
                Some(Item::Other)
            }
            _ => None,
        }
    }

    /// RFC 8941 §4.2.4: at most 15 integer digits; a decimal has at most 12
    /// before the point and 1-3 after.
    fn number(&mut self) -> Option<Item> {
        let negative = self.eat(b'-');
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        let int_digits = self.i - start;
        if int_digits == 0 {
            return None;
        }
        if self.eat(b'.') {
            let frac = self.i;
            while matches!(self.peek(), Some(b'0'..=b'9')) {
                self.i += 1;
            }
            let frac_digits = self.i - frac;
            if int_digits > 12 || !(1..=3).contains(&frac_digits) {
                return None;
            }
            return Some(Item::Other);
        }
        if int_digits > 15 {
            return None;
        }
        let digits = std::str::from_utf8(&self.b[start..self.i]).ok()?;
        let n: i64 = digits.parse().ok()?;
        Some(Item::Integer(if negative { -n } else { n }))
    }
}

/// PRIORITY_UPDATEs remembered per connection (for streams whose head is
/// not read yet); past it the oldest stream's is forgotten.
const MAX_REMEMBERED: usize = 256;

impl Conn {
    /// A PRIORITY_UPDATE frame on the peer's control stream.
    pub(crate) fn on_priority_update(&self, ty: u64, payload: &[u8]) -> Result<(), Error> {
        // RFC 9218 §7.1: sent on the client's control stream only.
        if self.side == Side::Client {
            return Err(Error::conn(
                H3_FRAME_UNEXPECTED,
                "PRIORITY_UPDATE from a server",
            ));
        }
        let (id, value) =
            parse_update(payload).ok_or(Error::conn(H3_FRAME_ERROR, "a bad PRIORITY_UPDATE"))?;
        // RFC 9218 §7.1: a field value that does not parse is a connection
        // error of type H3_GENERAL_PROTOCOL_ERROR.
        if !is_valid(value) {
            return Err(Error::conn(
                H3_GENERAL_PROTOCOL_ERROR,
                "PRIORITY_UPDATE with a bad priority",
            ));
        }
        if ty == PRIORITY_UPDATE_PUSH {
            // We never allow pushes: there is nothing to reprioritize.
            return Ok(());
        }
        // RFC 9218 §7.1: the request variant names a client-initiated
        // bidirectional stream, anything else is H3_ID_ERROR.
        if id % 4 != 0 {
            return Err(Error::conn(
                H3_ID_ERROR,
                "PRIORITY_UPDATE for a stream that is no request",
            ));
        }
        let p = parse(value);
        {
            let mut state = self.state.lock().unwrap();
            if state.priorities.len() >= MAX_REMEMBERED && !state.priorities.contains_key(&id) {
                state.priorities.pop_first();
            }
            state.priorities.insert(id, p);
        }
        // A response already under way changes order at once.
        self.quic.set_stream_priority(StreamId(id), Some(p));
        Ok(())
    }

    /// The priority of request stream `id` once its head arrived: a
    /// PRIORITY_UPDATE's if one came, else the Priority field's, if any.
    pub(crate) fn request_priority(&self, id: u64, headers: &http::HeaderMap) -> Option<Priority> {
        self.request_priority_field(id, headers.get(PRIORITY).map(|v| v.as_bytes()))
    }

    /// [`request_priority`](Self::request_priority) given the head's
    /// Priority field value, if it has one.
    pub(crate) fn request_priority_field(&self, id: u64, field: Option<&[u8]>) -> Option<Priority> {
        let update = self.state.lock().unwrap().priorities.remove(&id);
        update.or_else(|| field.map(parse))
    }

    /// Sends a PRIORITY_UPDATE for request stream `id` (a client's).
    pub(crate) async fn send_priority_update(&self, id: u64, p: Priority) -> Result<(), Error> {
        let mut out = Vec::new();
        put_update(&mut out, id, p);
        self.control.lock().await.write_all(&out).await?;
        Ok(())
    }
}

#[cfg(test)]
#[path = "priority_tests.rs"]
mod tests;
