//! `RequestHead` / `ResponseHead` against the `http`-typed decoders: the
//! same sections accepted with the same parts, the same ones refused.

use super::*;
use crate::error::H3_MESSAGE_ERROR;
use crate::message::{decode_request, decode_response};

fn section(list: &[(&str, &str)]) -> Vec<u8> {
    let lines: Vec<(&[u8], &[u8])> = list
        .iter()
        .map(|(n, v)| (n.as_bytes(), v.as_bytes()))
        .collect();
    let mut block = Vec::new();
    quark_qpack::encode_section(&lines, &mut block);
    block
}

fn request(
    list: &[(&str, &str)],
) -> (Result<RequestHead, Error>, Result<http::Request<()>, Error>) {
    let block = section(list);
    let head = RequestHead::parse(Fields::decode(&block, 1 << 16).unwrap());
    let typed = decode_request(quark_qpack::decode_section(&block, 1 << 16).unwrap());
    (head, typed)
}

fn code<T: std::fmt::Debug>(r: Result<T, Error>) -> u64 {
    match r {
        Err(Error::Stream { code, .. }) => code,
        other => panic!("{other:?}"),
    }
}

#[test]
fn requests_read_as_the_http_types_read_them() {
    let ua = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0";
    let (head, typed) = request(&[
        (":method", "POST"),
        (":scheme", "https"),
        (":authority", "example.com:4433"),
        (":path", "/upload?x=1"),
        ("content-type", "application/octet-stream"),
        ("user-agent", ua),
        ("x-many", "a"),
        ("x-many", "b"),
        ("content-length", "10"),
        ("priority", "u=1, i"),
    ]);
    let (head, typed) = (head.unwrap(), typed.unwrap());
    assert_eq!(head.method(), typed.method());
    assert_eq!(head.scheme(), typed.uri().scheme_str());
    assert_eq!(
        head.authority(),
        typed.uri().authority().map(|a| a.as_str())
    );
    assert_eq!(
        head.path(),
        typed.uri().path_and_query().map(|p| p.as_str())
    );
    assert_eq!(head.content_length(), Some(10));
    assert_eq!(head.header(b"user-agent"), Some(ua.as_bytes()));
    assert_eq!(head.header(b"x-many"), Some(&b"a"[..]));
    let regular: Vec<(&[u8], &[u8])> = head.headers().collect();
    let typed_regular: Vec<(&[u8], &[u8])> = typed
        .headers()
        .iter()
        .map(|(n, v)| (n.as_str().as_bytes(), v.as_bytes()))
        .collect();
    // HeaderMap groups repeated names; here they are adjacent already.
    assert_eq!(regular, typed_regular);
    assert_eq!(head.fields().len(), 10);
    assert_eq!(head.protocol(), None);

    // No :authority: the Host field is the authority.
    let (head, typed) = request(&[
        (":method", "GET"),
        (":scheme", "https"),
        (":path", "/x"),
        ("host", "h:1"),
    ]);
    assert_eq!(head.unwrap().authority(), Some("h:1"));
    assert_eq!(typed.unwrap().uri(), "https://h:1/x");
    // A plain CONNECT names an authority only.
    let (head, typed) = request(&[(":method", "CONNECT"), (":authority", "a:443")]);
    let head = head.unwrap();
    assert_eq!((head.path(), head.authority()), (None, Some("a:443")));
    assert_eq!(typed.unwrap().uri(), "a:443");
    // An Extended CONNECT.
    let (head, typed) = request(&[
        (":method", "CONNECT"),
        (":protocol", "websocket"),
        (":scheme", "https"),
        (":authority", "a"),
        (":path", "/chat"),
    ]);
    assert_eq!(head.unwrap().protocol(), Some("websocket"));
    assert!(typed.is_ok());
}

#[test]
fn malformed_requests_are_refused_by_both() {
    let base = [
        (":method", "GET"),
        (":scheme", "https"),
        (":authority", "a"),
    ];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut v: Vec<(&str, &str)> = base.to_vec();
        v.extend_from_slice(extra);
        v
    };
    for bad in [
        vec![(":method", "GET"), (":scheme", "https")],
        with(&[]),
        with(&[(":path", "")]),
        with(&[(":path", "/"), (":path", "/")]),
        with(&[(":method", "GET"), (":path", "/")]),
        with(&[(":path", "/"), (":status", "200")]),
        with(&[("a", "b"), (":path", "/")]),
        with(&[(":path", "/"), ("Upper", "x")]),
        with(&[(":path", "/"), ("connection", "close")]),
        with(&[(":path", "/"), ("transfer-encoding", "chunked")]),
        with(&[(":path", "/"), ("te", "gzip")]),
        with(&[(":path", "/"), ("bad name", "x")]),
        with(&[(":path", "/"), ("x", "a\r\nb")]),
        with(&[(":path", "/"), ("x", "nul\0")]),
        with(&[(":path", "/a b")]),
        with(&[(":path", "/"), ("host", "other")]),
        with(&[(":path", "/"), ("content-length", "+5")]),
        with(&[(":path", "/"), ("content-length", "")]),
        with(&[
            (":path", "/"),
            ("content-length", "5"),
            ("content-length", "6"),
        ]),
        with(&[(":path", "/"), (":protocol", "websocket")]),
        vec![
            (":method", "CONNECT"),
            (":authority", "a:1"),
            (":path", "/"),
        ],
        vec![(":method", "CONNECT")],
        vec![(":method", "G E T"), (":scheme", "https"), (":path", "/")],
    ] {
        let (head, typed) = request(&bad);
        assert_eq!(code(head), H3_MESSAGE_ERROR, "{bad:?}");
        // The typed path reads content-length later (start_body): the head
        // alone may pass there.
        if !bad.iter().any(|(n, _)| *n == "content-length") {
            assert_eq!(code(typed), H3_MESSAGE_ERROR, "{bad:?}");
        }
    }
    // Repeated equal lengths are one length.
    let (head, _) = request(&with(&[
        (":path", "/"),
        ("content-length", "5"),
        ("content-length", " 5"),
    ]));
    assert_eq!(head.unwrap().content_length(), Some(5));
}

#[test]
fn responses_read_as_the_http_types_read_them() {
    let parse = |list: &[(&str, &str)]| {
        let block = section(list);
        let head = ResponseHead::parse(Fields::decode(&block, 1 << 16).unwrap());
        let mut fields = quark_qpack::decode_section(&block, 1 << 16).unwrap();
        (head, decode_response(&mut fields))
    };
    let (head, typed) = parse(&[
        (":status", "200"),
        ("content-length", "2048"),
        ("server", "quark"),
    ]);
    let (head, typed) = (head.unwrap(), typed.unwrap());
    assert_eq!(head.status(), typed.status());
    assert_eq!(head.content_length(), Some(2048));
    assert_eq!(head.header(b"server"), Some(&b"quark"[..]));
    assert_eq!(head.headers().count(), typed.headers().len());
    for bad in [
        &[][..],
        &[(":status", "20")],
        &[(":status", "101")],
        &[(":status", "2x0")],
        &[(":status", "200"), (":status", "200")],
        &[(":status", "200"), (":path", "/")],
        &[(":status", "200"), ("connection", "close")],
        &[(":status", "200"), ("x", "a\nb")],
    ] {
        let (head, typed) = parse(bad);
        assert_eq!(code(head), H3_MESSAGE_ERROR, "{bad:?}");
        assert_eq!(code(typed), H3_MESSAGE_ERROR, "{bad:?}");
    }
    let (head, _) = parse(&[
        (":status", "200"),
        ("content-length", "1"),
        ("content-length", "2"),
    ]);
    assert_eq!(code(head), H3_MESSAGE_ERROR);
}

#[test]
fn dynamic_table_fields_read_the_same() {
    // The dynamic table's decoder hands owned fields: copied into one buffer.
    let block = section(&[(":status", "204"), ("x-a", "1"), ("x-b", "")]);
    let owned = quark_qpack::decode_section(&block, 1 << 16).unwrap();
    let from = Fields::from_fields(&owned);
    let direct = Fields::decode(&block, 1 << 16).unwrap();
    assert!(from.iter().eq(direct.iter()));
    assert_eq!(from.line(1), (&b"x-a"[..], &b"1"[..]));
    assert!(!from.is_empty() && Fields::default().is_empty());
}

#[test]
fn the_name_table_holds_the_lowercase_tchars() {
    for b in 0..=255u8 {
        let tchar = b.is_ascii_lowercase() || b.is_ascii_digit() || b"!#$%&'*+-.^_`|~".contains(&b);
        assert_eq!(valid_name(&[b]), tchar, "{b:#x}");
    }
    assert!(!valid_name(b""));
}

#[test]
fn static_names_are_valid() {
    // `Fields::check_regular` skips the name checks for these.
    for i in 0..quark_qpack::STATIC_TABLE_LEN {
        let (name, _) = quark_qpack::static_entry(i).unwrap();
        if name.first() != Some(&b':') {
            assert!(
                check_regular(name, b"v").is_ok(),
                "{}",
                String::from_utf8_lossy(name)
            );
        }
    }
    // A static name still may not follow a regular field if it is a
    // pseudo-header field, nor carry a bad value.
    let block = section(&[(":status", "200"), ("server", "a"), (":path", "/")]);
    let head = ResponseHead::parse(Fields::decode(&block, 1 << 16).unwrap());
    assert_eq!(code(head), H3_MESSAGE_ERROR);
    let block = section(&[(":status", "200"), ("content-length", "1\r\n")]);
    let head = ResponseHead::parse(Fields::decode(&block, 1 << 16).unwrap());
    assert_eq!(code(head), H3_MESSAGE_ERROR);
}
