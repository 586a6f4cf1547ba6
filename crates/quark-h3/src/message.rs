//! HTTP messages to and from field lines (RFC 9114 §4.1–4.3): pseudo-header
//! fields first, lowercase names, no connection-specific fields. A message that
//! breaks these rules is malformed (H3_MESSAGE_ERROR on its stream).

use std::borrow::Cow;

use bytes::Bytes;
use http::uri::{Authority, PathAndQuery, Scheme};
use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode, Uri};
use quark_qpack::Field;
use smallvec::{SmallVec, smallvec};

use crate::error::{Error, H3_MESSAGE_ERROR};

/// A message's field lines, by reference; on the stack up to eight (a heap
/// list per message was an allocation and a free per request at each end).
pub(crate) type Lines<'a> = SmallVec<[(&'a [u8], &'a [u8]); 8]>;

pub(crate) fn malformed(reason: &'static str) -> Error {
    Error::stream(H3_MESSAGE_ERROR, reason)
}

/// A final response's `:status` (RFC 9114 §4.3.2): three digits, and not 101,
/// which HTTP/3 has no use for.
pub(crate) fn final_status(status: Option<&[u8]>) -> Result<StatusCode, Error> {
    let status = status.ok_or(malformed("no :status"))?;
    if status.len() != 3 {
        return Err(malformed("a bad :status"));
    }
    let status = StatusCode::from_bytes(status).map_err(|_| malformed("a bad :status"))?;
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Err(malformed("101 does not exist in HTTP/3"));
    }
    Ok(status)
}

/// Fields HTTP/3 forbids (RFC 9114 §4.2): they describe a hop-by-hop connection.
fn connection_specific(name: &[u8]) -> bool {
    matches!(
        name,
        b"connection" | b"keep-alive" | b"proxy-connection" | b"transfer-encoding" | b"upgrade"
    )
}

/// Appends `headers` as field lines, refusing connection-specific ones.
fn put_headers<'a>(headers: &'a HeaderMap, out: &mut Lines<'a>) -> Result<(), Error> {
    for (name, value) in headers {
        let name = name.as_str().as_bytes();
        if connection_specific(name) || (name == b"te" && value.as_bytes() != b"trailers") {
            return Err(malformed("a connection-specific header field"));
        }
        out.push((name, value.as_bytes()));
    }
    Ok(())
}

/// How a field section is encoded: the connection's QPACK encoder for the
/// stream, or the static-only one.
pub(crate) type Encode<'e> = &'e mut dyn FnMut(&[(&[u8], &[u8])], &mut Vec<u8>);

/// Refuses a field section larger (RFC 9114 §4.2.2 size) than the peer's
/// SETTINGS_MAX_FIELD_SECTION_SIZE: it would refuse it anyway.
pub(crate) fn check_size(fields: &[(&[u8], &[u8])], limit: Option<u64>) -> Result<(), Error> {
    let size: u64 = fields
        .iter()
        .map(|(n, v)| (n.len() + v.len()) as u64 + 32)
        .sum();
    match limit {
        Some(limit) if size > limit => Err(Error::FieldSectionTooLarge { size, limit }),
        _ => Ok(()),
    }
}

/// The field section of a request; `limit` is the peer's largest.
#[cfg(test)]
pub(crate) fn encode_request<B>(
    req: &Request<B>,
    limit: Option<u64>,
    out: &mut Vec<u8>,
    encode: Encode<'_>,
) -> Result<(), Error> {
    let fields = request_lines(req, limit)?;
    encode(&fields, out);
    Ok(())
}

/// A request's field lines, checked (and within the peer's `limit`).
pub(crate) fn request_lines<B>(req: &Request<B>, limit: Option<u64>) -> Result<Lines<'_>, Error> {
    let uri = req.uri();
    let authority = uri.authority().map(|a| a.as_str().as_bytes());
    let mut fields: Lines = smallvec![(&b":method"[..], req.method().as_str().as_bytes())];
    let protocol = req.extensions().get::<crate::Protocol>();
    if let (true, Some(p)) = (req.method() == Method::CONNECT, protocol) {
        // RFC 9220 §3 (RFC 8441 §4): an Extended CONNECT carries :protocol,
        // :scheme, :authority and :path.
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes();
        fields.push((b":protocol", p.0.as_bytes()));
        fields.push((b":scheme", uri.scheme_str().unwrap_or("https").as_bytes()));
        fields.push((
            b":authority",
            authority.ok_or(malformed("CONNECT without authority"))?,
        ));
        fields.push((b":path", path));
    } else if req.method() == Method::CONNECT {
        fields.push((
            b":authority",
            authority.ok_or(malformed("CONNECT without authority"))?,
        ));
    } else {
        let scheme = uri.scheme_str().unwrap_or("https").as_bytes();
        let path = uri.path_and_query().map_or("/", |p| p.as_str()).as_bytes();
        fields.push((b":scheme", scheme));
        if let Some(a) = authority {
            fields.push((b":authority", a));
        }
        fields.push((b":path", path));
    }
    put_headers(req.headers(), &mut fields)?;
    check_size(&fields, limit)?;
    Ok(fields)
}

/// The field section of a response; `limit` is the peer's largest.
pub(crate) fn encode_response<B>(
    resp: &Response<B>,
    limit: Option<u64>,
    out: &mut Vec<u8>,
    encode: Encode<'_>,
) -> Result<(), Error> {
    let status = resp.status();
    if status == StatusCode::SWITCHING_PROTOCOLS {
        return Err(malformed("101 does not exist in HTTP/3"));
    }
    let mut fields: Lines = smallvec![(&b":status"[..], status.as_str().as_bytes())];
    put_headers(resp.headers(), &mut fields)?;
    check_size(&fields, limit)?;
    encode(&fields, out);
    Ok(())
}

/// The field section of trailers: regular fields only, the rules of a head's.
pub(crate) fn encode_trailers(
    trailers: &HeaderMap,
    limit: Option<u64>,
    out: &mut Vec<u8>,
    encode: Encode<'_>,
) -> Result<(), Error> {
    let mut fields = Lines::new();
    put_headers(trailers, &mut fields)?;
    check_size(&fields, limit)?;
    encode(&fields, out);
    Ok(())
}

/// Regular fields (those after the pseudo-header fields, or trailers) into a
/// header map, by the same rules. Decoded values are taken out of `fields`.
pub(crate) fn headers(fields: &mut [Field]) -> Result<HeaderMap, Error> {
    let mut map = HeaderMap::with_capacity(fields.len());
    for f in fields.iter_mut() {
        if f.name.first() == Some(&b':') {
            return Err(malformed("a pseudo-header field after a regular one"));
        }
        if f.name.iter().any(u8::is_ascii_uppercase) {
            return Err(malformed("an uppercase field name"));
        }
        if connection_specific(&f.name) || (&f.name[..] == b"te" && &f.value[..] != b"trailers") {
            return Err(malformed("a connection-specific header field"));
        }
        let name = HeaderName::from_bytes(&f.name).map_err(|_| malformed("a bad field name"))?;
        // Neither copied: a static table value is shared, a decoded one is
        // already a buffer of its own (a copy was a malloc per field).
        let value = HeaderValue::from_maybe_shared(take_value(f))
            .map_err(|_| malformed("a bad field value"))?;
        map.append(name, value);
    }
    Ok(map)
}

/// Sets `slot` once: a repeated pseudo-header field is malformed.
fn once<T>(slot: &mut Option<T>, value: T) -> Result<(), Error> {
    match slot.replace(value) {
        None => Ok(()),
        Some(_) => Err(malformed("a repeated pseudo-header field")),
    }
}

/// A request from its decoded field section, which it takes apart: the
/// authority and path become the URI's own bytes without a copy.
pub(crate) fn decode_request(mut fields: Vec<Field>) -> Result<Request<()>, Error> {
    let (mut method, mut scheme, mut authority, mut path) = (None, None, None, None);
    let mut protocol = None;
    let mut n = 0;
    for (i, f) in fields.iter().enumerate() {
        match &f.name[..] {
            b":method" => once(&mut method, i)?,
            b":scheme" => once(&mut scheme, i)?,
            b":authority" => once(&mut authority, i)?,
            b":path" => once(&mut path, i)?,
            b":protocol" => once(&mut protocol, i)?,
            [b':', ..] => return Err(malformed("an unknown or response pseudo-header field")),
            _ => break,
        }
        n += 1;
    }
    let method = method.ok_or(malformed("no :method"))?;
    let method =
        Method::from_bytes(&fields[method].value).map_err(|_| malformed("a bad :method"))?;
    let protocol = match protocol {
        // RFC 9220 §3: :protocol only on CONNECT, which then is an ordinary
        // request target (:scheme, :authority, :path all required).
        Some(_) if method != Method::CONNECT => return Err(malformed(":protocol without CONNECT")),
        Some(_) if authority.is_none() => return Err(malformed("CONNECT without :authority")),
        Some(i) => Some(
            String::from_utf8(fields[i].value.to_vec())
                .map_err(|_| malformed("a bad :protocol"))?,
        ),
        None => None,
    };
    let uri = if method == Method::CONNECT && protocol.is_none() {
        if scheme.is_some() || path.is_some() {
            return Err(malformed("CONNECT with :scheme or :path"));
        }
        let authority = authority.ok_or(malformed("CONNECT without :authority"))?;
        Uri::try_from(&fields[authority].value[..]).map_err(|_| malformed("a bad :authority"))?
    } else {
        let (Some(scheme), Some(path)) = (scheme, path) else {
            return Err(malformed("no :scheme or :path"));
        };
        if fields[path].value.is_empty() {
            return Err(malformed("an empty :path"));
        }
        // http and https need an authority: :authority, else a Host field;
        // with both they must agree (RFC 9114 §4.3.1).
        let host = fields[n..].iter().position(|f| &f.name[..] == b"host");
        if let (Some(a), Some(h)) = (authority, host) {
            if fields[a].value != fields[n + h].value {
                return Err(malformed(":authority and host differ"));
            }
        }
        let target = |_| malformed("a bad request target");
        let mut parts = http::uri::Parts::default();
        parts.scheme = Some(Scheme::try_from(&fields[scheme].value[..]).map_err(target)?);
        parts.authority = Some(
            match (authority, host) {
                (Some(i), _) => Authority::from_maybe_shared(take_value(&mut fields[i])),
                // The Host field stays among the headers: copied.
                (None, Some(h)) => Authority::try_from(&fields[n + h].value[..]),
                (None, None) => return Err(malformed("no :authority or host")),
            }
            .map_err(target)?,
        );
        parts.path_and_query =
            Some(PathAndQuery::from_maybe_shared(take_value(&mut fields[path])).map_err(target)?);
        Uri::from_parts(parts).map_err(|_| malformed("a bad request target"))?
    };
    let mut req = Request::new(());
    *req.method_mut() = method;
    *req.uri_mut() = uri;
    *req.version_mut() = http::Version::HTTP_3;
    *req.headers_mut() = headers(&mut fields[n..])?;
    if let Some(p) = protocol {
        req.extensions_mut().insert(crate::Protocol(p));
    }
    Ok(req)
}

/// Field `i`'s value, taken out of the section as shared bytes: a decoded
/// value is already a buffer of its own, a static one is static.
fn take_value(field: &mut Field) -> Bytes {
    match std::mem::take(&mut field.value) {
        Cow::Borrowed(v) => Bytes::from_static(v),
        Cow::Owned(v) => Bytes::from(v),
    }
}

/// A response (final or interim) from its decoded field section.
pub(crate) fn decode_response(fields: &mut [Field]) -> Result<Response<()>, Error> {
    let mut status = None;
    let mut n = 0;
    for f in fields.iter().take_while(|f| f.name.first() == Some(&b':')) {
        match &f.name[..] {
            b":status" => once(&mut status, &f.value)?,
            _ => return Err(malformed("an unknown or request pseudo-header field")),
        }
        n += 1;
    }
    let status = final_status(status.map(|s| &s[..]))?;
    let mut resp = Response::new(());
    *resp.status_mut() = status;
    *resp.version_mut() = http::Version::HTTP_3;
    *resp.headers_mut() = headers(&mut fields[n..])?;
    Ok(resp)
}

/// The body length a message announces, if any.
pub(crate) fn content_length(headers: &HeaderMap) -> Result<Option<u64>, Error> {
    let mut out = None;
    for v in headers.get_all(http::header::CONTENT_LENGTH) {
        // Digits only: `parse` would also take a sign.
        let digits = v.as_bytes().trim_ascii();
        let n = (!digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
            .then(|| std::str::from_utf8(digits).ok()?.parse::<u64>().ok())
            .flatten()
            .ok_or(malformed("a bad content-length"))?;
        if out.is_some_and(|o| o != n) {
            return Err(malformed("conflicting content-length values"));
        }
        out = Some(n);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(list: &[(&str, &str)]) -> Vec<Field> {
        list.iter()
            .map(|(n, v)| Field {
                name: n.as_bytes().to_vec().into(),
                value: v.as_bytes().to_vec().into(),
            })
            .collect()
    }

    fn code(r: Result<impl std::fmt::Debug, Error>) -> u64 {
        match r {
            Err(Error::Stream { code, .. }) => code,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requests_round_trip_through_qpack() {
        let req = Request::builder()
            .method("POST")
            .uri("https://example.com:4433/upload?x=1")
            .header("content-type", "application/octet-stream")
            .header("x-many", "a")
            .header("x-many", "b")
            .body(())
            .unwrap();
        let mut block = Vec::new();
        encode_request(&req, None, &mut block, &mut quark_qpack::encode_section).unwrap();
        // Seven fields' names and values plus 32 bytes each: over 200 bytes.
        match encode_request(
            &req,
            Some(200),
            &mut Vec::new(),
            &mut quark_qpack::encode_section,
        ) {
            Err(Error::FieldSectionTooLarge { size, limit: 200 }) => assert!(size > 200),
            other => panic!("{other:?}"),
        }
        let got = decode_request(quark_qpack::decode_section(&block, 1 << 16).unwrap()).unwrap();
        assert_eq!(got.method(), req.method());
        assert_eq!(got.uri(), req.uri());
        assert_eq!(got.headers(), req.headers());
    }

    #[test]
    fn malformed_requests_are_message_errors() {
        let ok = [
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", "a"),
            (":path", "/"),
        ];
        assert!(decode_request(fields(&ok)).is_ok());
        let host = [
            (":method", "GET"),
            (":scheme", "https"),
            (":path", "/x"),
            ("host", "h:1"),
        ];
        assert_eq!(
            decode_request(fields(&host)).unwrap().uri(),
            "https://h:1/x"
        );
        for bad in [
            &[(":method", "GET"), (":scheme", "https")][..],
            &[(":method", "GET"), (":scheme", "https"), (":path", "/")],
            &[
                (":method", "GET"),
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
            ],
            &[(":method", "GET"), (":scheme", "https"), (":path", "")],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                (":status", "200"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                ("a", "b"),
                (":path", "/"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("Upper", "x"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("connection", "close"),
            ],
            &[
                (":method", "GET"),
                (":scheme", "https"),
                (":path", "/"),
                ("te", "gzip"),
            ],
            &[
                (":method", "CONNECT"),
                (":authority", "a:1"),
                (":path", "/"),
            ],
        ] {
            assert_eq!(
                code(decode_request(fields(bad))),
                H3_MESSAGE_ERROR,
                "{bad:?}"
            );
        }
    }

    #[test]
    fn responses_need_one_valid_status() {
        let r = decode_response(&mut fields(&[(":status", "204"), ("server", "quark")])).unwrap();
        assert_eq!(r.status(), 204);
        for bad in [
            &[][..],
            &[(":status", "20")],
            &[(":status", "101")],
            &[(":status", "200"), (":status", "200")],
            &[(":status", "200"), (":path", "/")],
        ] {
            assert_eq!(
                code(decode_response(&mut fields(bad))),
                H3_MESSAGE_ERROR,
                "{bad:?}"
            );
        }
        let mut h = HeaderMap::new();
        h.append("content-length", HeaderValue::from_static("10"));
        assert_eq!(content_length(&h).unwrap(), Some(10));
        h.append("content-length", HeaderValue::from_static("11"));
        assert_eq!(code(content_length(&h)), H3_MESSAGE_ERROR);
        let mut signed = HeaderMap::new();
        signed.append("content-length", HeaderValue::from_static("+5"));
        assert_eq!(code(content_length(&signed)), H3_MESSAGE_ERROR);
    }
}
