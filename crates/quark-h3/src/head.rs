//! Message heads without the `http` types: [`RequestHead`] and
//! [`ResponseHead`] keep a decoded field section as it came (one buffer of
//! names and values, static table entries borrowed), checked by the rules of
//! RFC 9114 §4.2-4.3 as [`RequestStream::recv_request`] checks them, but
//! with no `Uri`, `HeaderMap` or string per field built. For servers and
//! clients that look at a path and a few fields.
//!
//! [`RequestStream::recv_request`]: crate::RequestStream::recv_request

use http::{Method, StatusCode};
use quark_qpack::{Field, Span};
use smallvec::SmallVec;

use crate::error::Error;
use crate::message::{final_status, malformed};

/// A decoded field section: its lines in order, names and values either
/// static table entries or ranges of one buffer.
#[derive(Debug, Clone, Default)]
pub struct Fields {
    buf: Vec<u8>,
    lines: SmallVec<[(Span, Span); 8]>,
}

impl Fields {
    /// Decodes a static-table block (no dynamic table on the connection).
    pub(crate) fn decode(block: &[u8], limit: u64) -> Result<Fields, quark_qpack::DecodeError> {
        let mut f = Fields {
            // Literals are at most the block's length raw, 8/5 of it Huffman-coded.
            buf: Vec::with_capacity(block.len() + block.len() / 2),
            lines: SmallVec::new(),
        };
        let lines = &mut f.lines;
        quark_qpack::decode_section_spans(block, limit, &mut f.buf, |n, v| lines.push((n, v)))?;
        Ok(f)
    }

    /// Fields from the dynamic table's decoder (copied into one buffer).
    pub(crate) fn from_fields(fields: &[Field]) -> Fields {
        let mut f = Fields::default();
        for field in fields {
            let name = f.put(&field.name);
            let value = f.put(&field.value);
            f.lines.push((name, value));
        }
        f
    }

    fn put(&mut self, bytes: &[u8]) -> Span {
        let start = self.buf.len() as u32;
        self.buf.extend_from_slice(bytes);
        Span::At(start, self.buf.len() as u32)
    }

    /// The number of field lines.
    pub fn len(&self) -> usize {
        self.lines.len()
    }

    /// Whether there are no field lines.
    pub fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// Line `i`: its name and value.
    pub fn line(&self, i: usize) -> (&[u8], &[u8]) {
        let (n, v) = self.lines[i];
        (n.get(&self.buf), v.get(&self.buf))
    }

    /// Whether line `i`'s name is a static table entry's: a lowercase token
    /// and no connection-specific field (`static_names_are_valid` checks).
    fn static_name(&self, i: usize) -> bool {
        matches!(self.lines[i].0, Span::Name(_))
    }

    /// Checks regular line `i` as [`check_regular`] does; a name from the
    /// static table needs only its ':' checked.
    fn check_regular(&self, i: usize) -> Result<(&[u8], &[u8]), Error> {
        let (name, value) = self.line(i);
        match self.static_name(i) && name.first() != Some(&b':') {
            true if valid_value(value) => Ok((name, value)),
            true => Err(malformed("a bad field value")),
            false => check_regular(name, value).map(|()| (name, value)),
        }
    }

    /// Every line in order (pseudo-header fields first).
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.len()).map(|i| self.line(i))
    }
}

/// Fields HTTP/3 forbids (RFC 9114 §4.2): they describe a hop-by-hop connection.
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

/// The bytes of a lowercase token (RFC 9110 §5.6.2 tchar, lowercase per
/// RFC 9114 §4.2), one bit each: a lookup per byte (a search of the
/// punctuation list per byte cost ~700 instructions a request).
const NAME_BYTES: [u64; 2] = {
    let mut bits = [0u64; 2];
    let mut b = 0;
    while b < 128 {
        let c = b as u8;
        let punct = matches!(c, b'!' | b'#'..=b'\'' | b'*' | b'+' | b'-' | b'.');
        let punct = punct || matches!(c, b'^' | b'_' | b'`' | b'|' | b'~');
        if c.is_ascii_lowercase() || c.is_ascii_digit() || punct {
            bits[b / 64] |= 1 << (b % 64);
        }
        b += 1;
    }
    bits
};

/// A lowercase token.
fn valid_name(name: &[u8]) -> bool {
    !name.is_empty()
        && name
            .iter()
            .all(|&b| b < 128 && NAME_BYTES[usize::from(b / 64)] >> (b % 64) & 1 == 1)
}

//= https://www.rfc-editor.org/rfc/rfc9114#section-4.2
//# A request or
//# response containing a field value with CR, LF, or NUL is malformed.
// As `http::HeaderValue` (what `recv_request` builds): no control
// characters but horizontal tab.
fn valid_value(value: &[u8]) -> bool {
    value
        .iter()
        .all(|&b| b == b'\t' || (b >= 0x20 && b != 0x7f))
}

/// Checks one regular field line (a head's or trailers'), the rules of
/// `message::headers`.
pub(crate) fn check_regular(name: &[u8], value: &[u8]) -> Result<(), Error> {
    // The field most messages carry: a token, not connection-specific.
    if name == b"content-length" {
        return match valid_value(value) {
            true => Ok(()),
            false => Err(malformed("a bad field value")),
        };
    }
    if !valid_name(name) {
        return Err(match name.first() {
            Some(b':') => malformed("a pseudo-header field after a regular one"),
            _ if name.iter().any(u8::is_ascii_uppercase) => malformed("an uppercase field name"),
            _ => malformed("a bad field name"),
        });
    }
    if connection_specific(name) || (name == b"te" && value != b"trailers") {
        return Err(malformed("a connection-specific header field"));
    }
    if !valid_value(value) {
        return Err(malformed("a bad field value"));
    }
    Ok(())
}

/// A URI part (a :path, :authority or :scheme): visible ASCII only, so it is
/// also a `&str`.
fn uri_part(bytes: &[u8]) -> Result<(), Error> {
    match bytes.iter().all(|&b| (0x21..0x7f).contains(&b)) {
        true => Ok(()),
        false => Err(malformed("a bad request target")),
    }
}

/// Adds a content-length line's value to the body length `out` announced
/// so far: every line must agree.
fn add_length(out: &mut Option<u64>, value: &[u8]) -> Result<(), Error> {
    // Digits only: `parse` would also take a sign.
    let digits = value.trim_ascii();
    let n = (!digits.is_empty() && digits.len() <= 19 && digits.iter().all(u8::is_ascii_digit))
        .then(|| {
            digits
                .iter()
                .fold(0u64, |n, d| n * 10 + u64::from(d - b'0'))
        })
        .ok_or(malformed("a bad content-length"))?;
    match out.replace(n) {
        Some(o) if o != n => Err(malformed("conflicting content-length values")),
        _ => Ok(()),
    }
}

/// A request's head as it came: see the [module](self) docs. Made by
/// [`RequestStream::recv_request_head`](crate::RequestStream::recv_request_head).
#[derive(Debug, Clone)]
pub struct RequestHead {
    fields: Fields,
    method: Method,
    /// Lines of :scheme, :authority (else a Host field), :path, :protocol.
    scheme: Option<u8>,
    authority: Option<u8>,
    path: Option<u8>,
    protocol: Option<u8>,
    /// The first regular field line.
    regular: u8,
    content_length: Option<u64>,
}

/// The line `i` of `fields`, as a checked URI part.
fn part(fields: &Fields, i: Option<u8>) -> Option<&str> {
    // Checked when the head was made.
    i.and_then(|i| std::str::from_utf8(fields.line(i as usize).1).ok())
}

impl RequestHead {
    /// Checks a request's field section (RFC 9114 §4.3.1; the rules of
    /// `recv_request`, which builds an `http::Request` from it).
    pub(crate) fn parse(fields: Fields) -> Result<RequestHead, Error> {
        if fields.len() > usize::from(u8::MAX) {
            return Err(malformed("too many field lines"));
        }
        let (mut method, mut scheme, mut authority, mut path, mut protocol) =
            (None, None, None, None, None);
        let mut n = 0;
        for (i, (name, value)) in fields.iter().enumerate() {
            let slot = match name {
                b":method" => &mut method,
                b":scheme" => &mut scheme,
                b":authority" => &mut authority,
                b":path" => &mut path,
                b":protocol" => &mut protocol,
                [b':', ..] => return Err(malformed("an unknown or response pseudo-header field")),
                _ => break,
            };
            if slot.replace(i as u8).is_some() {
                return Err(malformed("a repeated pseudo-header field"));
            }
            if name != b":method" && name != b":protocol" {
                uri_part(value)?;
            }
            n += 1;
        }
        let value = |i: u8| fields.line(i as usize).1;
        let method = method.ok_or(malformed("no :method"))?;
        let method = Method::from_bytes(value(method)).map_err(|_| malformed("a bad :method"))?;
        let connect = method == Method::CONNECT;
        match protocol {
            // RFC 9220 §3: :protocol only on CONNECT, which then is an
            // ordinary request target.
            Some(_) if !connect => return Err(malformed(":protocol without CONNECT")),
            Some(p) if std::str::from_utf8(value(p)).is_err() => {
                return Err(malformed("a bad :protocol"));
            }
            _ => {}
        }
        let (mut host, mut content_length) = (None, None);
        for i in n..fields.len() {
            let (name, v) = fields.check_regular(i)?;
            match name {
                b"host" if host.is_none() => host = Some(i as u8),
                b"content-length" => add_length(&mut content_length, v)?,
                _ => {}
            }
        }
        if connect && protocol.is_none() {
            if scheme.is_some() || path.is_some() {
                return Err(malformed("CONNECT with :scheme or :path"));
            }
            authority.ok_or(malformed("CONNECT without :authority"))?;
        } else {
            let (Some(_), Some(p)) = (scheme, path) else {
                return Err(malformed("no :scheme or :path"));
            };
            if value(p).is_empty() {
                return Err(malformed("an empty :path"));
            }
            // http and https need an authority: :authority, else a Host
            // field; with both they must agree (RFC 9114 §4.3.1).
            match (authority, host) {
                (Some(a), Some(h)) if value(a) != value(h) => {
                    return Err(malformed(":authority and host differ"));
                }
                (None, Some(h)) => {
                    uri_part(value(h))?;
                    authority = Some(h);
                }
                (None, None) => return Err(malformed("no :authority or host")),
                _ => {}
            }
        }
        Ok(RequestHead {
            method,
            scheme,
            authority,
            path,
            protocol,
            regular: n as u8,
            content_length,
            fields,
        })
    }

    /// The method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// `:scheme` (none on a plain CONNECT).
    pub fn scheme(&self) -> Option<&str> {
        part(&self.fields, self.scheme)
    }

    /// `:authority`, else the Host field.
    pub fn authority(&self) -> Option<&str> {
        part(&self.fields, self.authority)
    }

    /// `:path` with its query (none on a plain CONNECT).
    pub fn path(&self) -> Option<&str> {
        part(&self.fields, self.path)
    }

    /// `:protocol` of an Extended CONNECT (RFC 9220).
    pub fn protocol(&self) -> Option<&str> {
        part(&self.fields, self.protocol)
    }

    /// The body length content-length announces, if it does.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The first value of regular field `name` (lowercase).
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The regular fields in order (repeated names as they came).
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().skip(self.regular.into())
    }

    /// Every field line as it came, pseudo-header fields first.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }
}

/// A final response's head as it came: see the [module](self) docs. Made by
/// [`RequestStream::recv_response_head`](crate::RequestStream::recv_response_head).
#[derive(Debug, Clone)]
pub struct ResponseHead {
    fields: Fields,
    status: StatusCode,
    content_length: Option<u64>,
}

impl ResponseHead {
    /// Checks a response's field section (the rules of `recv_response`).
    pub(crate) fn parse(fields: Fields) -> Result<ResponseHead, Error> {
        let mut status = None;
        let mut n = 0;
        for (name, value) in fields
            .iter()
            .take_while(|(name, _)| name.first() == Some(&b':'))
        {
            match name {
                b":status" if status.is_none() => status = Some(value),
                b":status" => return Err(malformed("a repeated pseudo-header field")),
                _ => return Err(malformed("an unknown or request pseudo-header field")),
            }
            n += 1;
        }
        let status = final_status(status)?;
        let mut content_length = None;
        for i in n..fields.len() {
            let (name, value) = fields.check_regular(i)?;
            if name == b"content-length" {
                add_length(&mut content_length, value)?;
            }
        }
        Ok(ResponseHead {
            fields,
            status,
            content_length,
        })
    }

    /// The status.
    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The body length content-length announces, if it does.
    pub fn content_length(&self) -> Option<u64> {
        self.content_length
    }

    /// The first value of regular field `name` (lowercase).
    pub fn header(&self, name: &[u8]) -> Option<&[u8]> {
        self.headers().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The regular fields in order.
    pub fn headers(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.fields.iter().filter(|(n, _)| n.first() != Some(&b':'))
    }

    /// Every field line as it came.
    pub fn fields(&self) -> &Fields {
        &self.fields
    }
}

#[cfg(test)]
#[path = "head_tests.rs"]
mod tests;
