//! The dynamic table through the public API: RFC 9204 Appendix B byte for
//! byte, error codes, and an encoder and a decoder kept in step through
//! delayed, reordered and cancelled streams.

use proptest::prelude::*;
use quark_qpack::{DecodeError, Decoder, Encoder, Field};

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.split_whitespace().collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn pairs(fields: &[Field]) -> Vec<(String, String)> {
    fields
        .iter()
        .map(|f| {
            (
                String::from_utf8(f.name.to_vec()).unwrap(),
                String::from_utf8(f.value.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn taken(d: &mut Decoder) -> Vec<u8> {
    let mut out = Vec::new();
    d.take_instructions(&mut out);
    out
}

//= https://www.rfc-editor.org/rfc/rfc9204#appendix-B.2
//= https://www.rfc-editor.org/rfc/rfc9204#appendix-B.3
//= https://www.rfc-editor.org/rfc/rfc9204#appendix-B.4
//= https://www.rfc-editor.org/rfc/rfc9204#appendix-B.5
#[test]
fn rfc9204_appendix_b_decoder() {
    let mut d = Decoder::new(220, 1);
    // B.2: capacity, two inserts, a section with post-Base references.
    d.feed_encoder_stream(&hex(
        "3fbd01 c00f7777772e6578616d706c652e636f6d c10c2f73616d706c652f70617468",
    ))
    .unwrap();
    assert_eq!((d.insert_count(), d.table_size()), (2, 106));
    let got = d.decode_section(4, &hex("0381 10 11"), 1 << 16).unwrap();
    assert_eq!(
        pairs(&got.unwrap()),
        [
            (":authority".into(), "www.example.com".into()),
            (":path".into(), "/sample/path".into())
        ]
    );
    assert_eq!(taken(&mut d), [0x84], "Section Acknowledgment (stream=4)");

    // B.3: a speculative insert, acknowledged with Insert Count Increment.
    d.feed_encoder_stream(&hex("4a637573746f6d2d6b65790c637573746f6d2d76616c7565"))
        .unwrap();
    assert_eq!(d.table_size(), 160);
    assert_eq!(taken(&mut d), [0x01]);

    // B.4: the section on stream 8 arrives before the Duplicate: blocked,
    // then cancelled.
    let block8 = hex("0500 80 c1 81");
    assert_eq!(d.decode_section(8, &block8, 1 << 16), Ok(None));
    assert_eq!(d.blocked_streams(), 1);
    d.cancel_stream(8);
    assert_eq!(d.blocked_streams(), 0);
    assert_eq!(taken(&mut d), [0x48], "Stream Cancellation (Stream=8)");
    d.feed_encoder_stream(&[0x02]).unwrap();
    assert_eq!(d.table_size(), 217);
    // Had it not been cancelled, it now decodes.
    let got = d.decode_section(8, &block8, 1 << 16).unwrap().unwrap();
    assert_eq!(
        pairs(&got),
        [
            (":authority".into(), "www.example.com".into()),
            (":path".into(), "/".into()),
            ("custom-key".into(), "custom-value".into())
        ]
    );
    // Its acknowledgment covers the Duplicate: no Insert Count Increment.
    assert_eq!(taken(&mut d), [0x88]);

    // B.5: an insert by dynamic name reference evicts the oldest entry.
    d.feed_encoder_stream(&hex("810d637573746f6d2d76616c756532"))
        .unwrap();
    assert_eq!((d.insert_count(), d.table_size()), (5, 215));
    // Entry 0 is gone: a section naming it fails.
    // RIC 1 (encoded 2), Base 1, relative index 0 = absolute 0.
    assert_eq!(
        d.decode_section(12, &hex("0200 80"), 1 << 16),
        Err(DecodeError::BadDynamicIndex)
    );
}

#[test]
fn encoder_stream_errors() {
    let code = |bytes: &[u8]| {
        Decoder::new(220, 4)
            .feed_encoder_stream(bytes)
            .map_err(|e| e.code())
    };
    // Capacity 221 > the 220 advertised.
    assert_eq!(code(&hex("3fbe01")), Err(0x0201));
    // An insert before any capacity: it cannot fit.
    assert_eq!(
        code(&hex("c00f7777772e6578616d706c652e636f6d")),
        Err(0x0201)
    );
    // Static index 99, dynamic/duplicate references to nothing.
    assert_eq!(code(&hex("3fbd01 ff2401 61")), Err(0x0201));
    assert_eq!(code(&hex("3fbd01 8001 61")), Err(0x0201));
    assert_eq!(code(&hex("3fbd01 00")), Err(0x0201));
    // A literal name longer than the capacity is refused from its length.
    assert_eq!(code(&hex("3fbd01 5f ff 01")), Err(0x0201));
    // Partial instructions wait.
    assert_eq!(code(&hex("3fbd01 c00f7777")), Ok(()));
    assert_eq!(code(&hex("3f")), Ok(()));
}

#[test]
fn decoder_stream_errors() {
    let mut e = Encoder::new(220, 4, 4096);
    let code = |e: &mut Encoder, b: &[u8]| e.feed_decoder_stream(b).map_err(|x| x.code());
    assert_eq!(code(&mut e, &[0x84]), Err(0x0202), "nothing to acknowledge");
    let mut e = Encoder::new(220, 4, 4096);
    assert_eq!(code(&mut e, &[0x01]), Err(0x0202), "nothing inserted");
    let mut e = Encoder::new(220, 4, 4096);
    assert_eq!(code(&mut e, &[0x00]), Err(0x0202), "increment 0");
    let mut e = Encoder::new(220, 4, 4096);
    assert_eq!(
        code(&mut e, &[0x48, 0x7f]),
        Ok(()),
        "cancellation, then a partial one"
    );
}

#[test]
fn blocked_streams_beyond_the_limit_fail() {
    let mut d = Decoder::new(4096, 2);
    // RIC 1 (encoded 2), Base 1: three streams wait for entry 0.
    let block = hex("0200 80");
    assert_eq!(d.decode_section(0, &block, 1 << 16), Ok(None));
    assert_eq!(
        d.decode_section(0, &block, 1 << 16),
        Ok(None),
        "same stream again"
    );
    assert_eq!(d.decode_section(4, &block, 1 << 16), Ok(None));
    assert_eq!(
        d.decode_section(8, &block, 1 << 16),
        Err(DecodeError::TooManyBlocked)
    );
    assert_eq!(DecodeError::TooManyBlocked.code(), 0x0200);
}

#[test]
fn repeated_requests_shrink() {
    let fields: &[(&[u8], &[u8])] = &[
        (b":method", b"GET"),
        (b":scheme", b"https"),
        (b":authority", b"www.example.com"),
        (b":path", b"/a.css"),
        (
            b"user-agent",
            b"Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0",
        ),
        (b"accept-language", b"en-US,en;q=0.5"),
    ];
    let mut e = Encoder::new(4096, 16, 4096);
    let mut d = Decoder::new(4096, 16);
    let mut sizes = Vec::new();
    for i in 0..3u64 {
        let mut block = Vec::new();
        e.encode_section(i * 4, fields, &mut block);
        let mut ins = Vec::new();
        e.take_instructions(&mut ins);
        d.feed_encoder_stream(&ins).unwrap();
        let got = d.decode_section(i * 4, &block, 1 << 16).unwrap().unwrap();
        let want: Vec<(String, String)> = fields
            .iter()
            .map(|(n, v)| {
                (
                    String::from_utf8(n.to_vec()).unwrap(),
                    String::from_utf8(v.to_vec()).unwrap(),
                )
            })
            .collect();
        assert_eq!(pairs(&got), want);
        let mut acks = Vec::new();
        d.take_instructions(&mut acks);
        e.feed_decoder_stream(&acks).unwrap();
        sizes.push(block.len() + ins.len());
    }
    // The first request carries the inserts, the later ones only references.
    assert!(sizes[1] < sizes[0] / 5, "{sizes:?}");
    assert_eq!(sizes[1], sizes[2]);
    assert_eq!(e.known_received(), e.insert_count());
}

/// The field vocabulary of the round trip: names the encoder inserts and
/// names it does not, values repeating or not.
fn header_set() -> impl Strategy<Value = Vec<(String, String)>> {
    let name = prop::sample::select(vec![
        ":authority",
        "user-agent",
        "accept",
        "cookie",
        "content-type",
        "server",
        "x-custom",
        ":path",
        "sec-ch-ua",
        "cache-control",
    ]);
    let value = prop_oneof![
        prop::sample::select(vec![
            "a",
            "text/html",
            "example.com",
            "abcdefghijklmnopqrstuvwxyz0123456789"
        ])
        .prop_map(String::from),
        "[a-z0-9 ;=]{0,40}",
        "[a-z]{100,300}",
    ];
    prop::collection::vec((name.prop_map(String::from), value), 0..12)
}

/// A section sent and not decoded yet: stream, block, the fields.
type Pending = (u64, Vec<u8>, Vec<(String, String)>);

/// What happens next in the simulated connection.
#[derive(Debug, Clone)]
enum Step {
    /// Encode the next header set on a new stream.
    Encode(Vec<(String, String)>),
    /// Deliver this many bytes of the encoder stream.
    Inserts(usize),
    /// Try to decode a pending section (index mod pending).
    Decode(usize),
    /// Cancel a pending section instead.
    Cancel(usize),
    /// Deliver the decoder stream so far to the encoder.
    Acks,
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        3 => header_set().prop_map(Step::Encode),
        2 => (1usize..200).prop_map(Step::Inserts),
        3 => any::<usize>().prop_map(Step::Decode),
        1 => any::<usize>().prop_map(Step::Cancel),
        2 => Just(Step::Acks),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Sections decoded in any order, inserts delayed, acknowledgments late
    /// or reordered with cancellations: every decoded section equals what was
    /// encoded, the decoder never sees more blocked streams than allowed, and
    /// no stream instruction is refused.
    #[test]
    fn encoder_and_decoder_stay_in_step(
        steps in prop::collection::vec(step(), 1..120),
        capacity in prop::sample::select(vec![0u64, 100, 220, 1024, 4096]),
        blocked in 0u64..4,
    ) {
        let mut e = Encoder::new(capacity, blocked, 4096);
        let mut d = Decoder::new(capacity, blocked);
        let mut enc_stream: Vec<u8> = Vec::new();
        let mut dec_stream: Vec<u8> = Vec::new();
        let mut pending: Vec<Pending> = Vec::new();
        let mut next_stream = 0u64;
        let finish = steps.len();
        for (i, step) in steps.into_iter().chain(std::iter::repeat_n(Step::Inserts(usize::MAX), 1)).enumerate() {
            match step {
                Step::Encode(set) => {
                    let fields: Vec<(&[u8], &[u8])> =
                        set.iter().map(|(n, v)| (n.as_bytes(), v.as_bytes())).collect();
                    let mut block = Vec::new();
                    e.encode_section(next_stream, &fields, &mut block);
                    e.take_instructions(&mut enc_stream);
                    pending.push((next_stream, block, set));
                    next_stream += 4;
                }
                Step::Inserts(n) => {
                    let n = n.min(enc_stream.len());
                    let chunk: Vec<u8> = enc_stream.drain(..n).collect();
                    d.feed_encoder_stream(&chunk).unwrap();
                }
                Step::Decode(k) | Step::Cancel(k) if pending.is_empty() => { let _ = k; }
                Step::Decode(k) => {
                    let k = k % pending.len();
                    let (stream, block, _) = &pending[k];
                    match d.decode_section(*stream, block, 1 << 20).unwrap() {
                        Some(fields) => {
                            let (_, _, want) = pending.remove(k);
                            prop_assert_eq!(pairs(&fields), want);
                        }
                        None => prop_assert!(d.blocked_streams() as u64 <= blocked),
                    }
                }
                Step::Cancel(k) => {
                    let (stream, _, _) = pending.remove(k % pending.len());
                    d.cancel_stream(stream);
                }
                Step::Acks => {
                    d.take_instructions(&mut dec_stream);
                    e.feed_decoder_stream(&dec_stream).unwrap();
                    dec_stream.clear();
                }
            }
            if i == finish {
                // Everything delivered: every section left decodes now.
                for (stream, block, want) in pending.drain(..) {
                    let fields = d.decode_section(stream, &block, 1 << 20).unwrap().unwrap();
                    prop_assert_eq!(pairs(&fields), want);
                }
                d.take_instructions(&mut dec_stream);
                e.feed_decoder_stream(&dec_stream).unwrap();
                prop_assert_eq!(e.known_received(), e.insert_count());
            }
        }
    }

    /// Arbitrary bytes on the encoder stream and as a section never panic.
    #[test]
    fn garbage_never_panics(
        stream in prop::collection::vec(any::<u8>(), 0..300),
        block in prop::collection::vec(any::<u8>(), 0..300),
    ) {
        let mut d = Decoder::new(4096, 4);
        let _ = d.feed_encoder_stream(&stream);
        let _ = d.decode_section(0, &block, 1 << 16);
        let mut e = Encoder::new(4096, 4, 4096);
        let _ = e.feed_decoder_stream(&block);
    }
}

#[test]
fn credentials_and_one_off_values_stay_out_of_the_table() {
    let mut e = Encoder::new(4096, 16, 4096);
    let fields: &[(&[u8], &[u8])] = &[
        (b":path", b"/search?q=secret"),
        (b"authorization", b"Bearer abcdefghijklmnopqrstuvwxyz"),
        (b"cookie", b"short=1"),
        (b"date", b"Sun, 29 Nov 2026 02:00:01 GMT"),
        (b"etag", b"\"0123456789abcdef\""),
        (b"x-request-id", b"req-00000001"),
    ];
    for i in 0..3 {
        let mut block = Vec::new();
        e.encode_section(i * 4, fields, &mut block);
    }
    assert_eq!(e.insert_count(), 0);
    // A field too large for a quarter of the table is not inserted either.
    let big = vec![b'a'; 1100];
    let mut block = Vec::new();
    e.encode_section(12, &[(b"user-agent", &big)], &mut block);
    assert_eq!(e.insert_count(), 0);
    e.encode_section(16, &[(b"user-agent", b"curl/8.5.0")], &mut block);
    assert_eq!(e.insert_count(), 1);
}

#[test]
fn entries_in_use_about_to_be_evicted_are_duplicated() {
    // Room for 4 entries of about 64 bytes (300): `user-agent` first, then
    // 3 others; using `user-agent` again, the oldest, duplicates it.
    let mut e = Encoder::new(300, 16, 300);
    let mut d = Decoder::new(300, 16);
    let ua: (&[u8], &[u8]) = (b"user-agent", b"curl/8.5.0 (x86_64-pc)");
    let others: [(&[u8], &[u8]); 3] = [
        (b"accept-language", b"en-US,en;q=0.5"),
        (b"accept", b"text/html,application/xhtml+xml"),
        (b"content-type", b"application/x-custom"),
    ];
    let mut stream = 0;
    let mut exchange = |e: &mut Encoder, d: &mut Decoder, fields: &[(&[u8], &[u8])]| {
        let mut block = Vec::new();
        e.encode_section(stream, fields, &mut block);
        let mut ins = Vec::new();
        e.take_instructions(&mut ins);
        d.feed_encoder_stream(&ins).unwrap();
        let got = d.decode_section(stream, &block, 1 << 16).unwrap().unwrap();
        assert_eq!(got.len(), fields.len());
        for (f, (n, v)) in got.iter().zip(fields) {
            assert_eq!((&f.name[..], &f.value[..]), (*n, *v));
        }
        let mut acks = Vec::new();
        d.take_instructions(&mut acks);
        e.feed_decoder_stream(&acks).unwrap();
        stream += 4;
        ins
    };
    exchange(&mut e, &mut d, &[ua]);
    for f in others {
        exchange(&mut e, &mut d, &[f]);
    }
    assert_eq!(e.insert_count(), 4);
    // Entry 0 is the oldest of 4: referencing it duplicates it (0x03 =
    // Duplicate, relative index 3), evicting the original.
    let ins = exchange(&mut e, &mut d, &[ua]);
    assert_eq!(ins, [0x03]);
    assert_eq!(d.insert_count(), 5);
    assert_eq!(d.table_size(), 61 + 69 + 64 + 64);
}
