//! `transport:packet_sent` and `transport:packet_received`, with the frames
//! each packet carried (quic-events §5.3.5 / §5.3.6, frames §7.1).

use std::fmt::Write;
use std::time::Instant;

use super::json::{hex, string};
use super::{QlogSink, packet_type};
use crate::frame::{self, Frame};
use crate::types::{Dir, PacketKind};

/// What one packet event describes.
pub(crate) struct PacketInfo<'a> {
    pub(crate) sent: bool,
    pub(crate) kind: PacketKind,
    pub(crate) pn: u64,
    /// The plaintext frames.
    pub(crate) payload: &'a [u8],
    /// The whole packet's length on the wire (header, frames, tag).
    pub(crate) raw_len: usize,
    /// PADDING bytes added after `payload` (not in it).
    pub(crate) padding: usize,
    /// The exponent ACK Delay fields in the packet are scaled with.
    pub(crate) ack_delay_exponent: u8,
}

impl QlogSink {
    /// A packet sent or received, frame by frame. Decoding stops at the first
    /// bad frame (the connection closes on it anyway).
    pub(crate) fn packet(&mut self, now: Instant, p: &PacketInfo<'_>) {
        let name = if p.sent {
            "transport:packet_sent"
        } else {
            "transport:packet_received"
        };
        if !self.begin(now, name) {
            return;
        }
        let o = &mut self.out;
        let _ = write!(
            o,
            "\"header\":{{\"packet_type\":\"{}\",\"packet_number\":{}}},\"raw\":{{\"length\":{}}},\"frames\":[",
            packet_type(p.kind),
            p.pn,
            p.raw_len
        );
        let mut first = true;
        for f in frame::Iter::new(p.payload, p.kind) {
            let Ok(f) = f else { break };
            if !first {
                o.push(',');
            }
            first = false;
            write_frame(o, &f, p.ack_delay_exponent);
        }
        if p.padding > 0 {
            if !first {
                o.push(',');
            }
            let _ = write!(
                o,
                "{{\"frame_type\":\"padding\",\"length\":{},\"payload_length\":{}}}",
                p.padding, p.padding
            );
        }
        o.push(']');
        self.end();
    }
}

fn stream_type(dir: Dir) -> &'static str {
    match dir {
        Dir::Bi => "bidirectional",
        Dir::Uni => "unidirectional",
    }
}

/// One frame as a qlog QuicFrame object.
fn write_frame(o: &mut String, f: &Frame<'_>, ack_delay_exponent: u8) {
    let _ = match f {
        Frame::Padding { len } => write!(
            o,
            "{{\"frame_type\":\"padding\",\"length\":{len},\"payload_length\":{len}}}"
        ),
        Frame::Ping => write!(o, "{{\"frame_type\":\"ping\"}}"),
        Frame::Ack(ack) => {
            let delay_us = ack.delay.checked_shl(u32::from(ack_delay_exponent));
            let delay_ms = delay_us.unwrap_or(u64::MAX) as f64 / 1000.0;
            let _ = write!(
                o,
                "{{\"frame_type\":\"ack\",\"ack_delay\":{delay_ms:.3},\"acked_ranges\":["
            );
            // Highest first on the wire; qlog lists ranges as given.
            for (i, r) in ack.iter().enumerate() {
                let sep = if i > 0 { "," } else { "" };
                let _ = write!(o, "{sep}[{},{}]", r.start(), r.end());
            }
            o.push(']');
            if let Some(e) = ack.ecn {
                let _ = write!(
                    o,
                    ",\"ect0\":{},\"ect1\":{},\"ce\":{}",
                    e.ect0, e.ect1, e.ce
                );
            }
            write!(o, "}}")
        }
        Frame::ResetStream(r) => write!(
            o,
            "{{\"frame_type\":\"reset_stream\",\"stream_id\":{},\"error_code\":{},\"final_size\":{}}}",
            r.id.0, r.error_code, r.final_size
        ),
        Frame::StopSending(s) => write!(
            o,
            "{{\"frame_type\":\"stop_sending\",\"stream_id\":{},\"error_code\":{}}}",
            s.id.0, s.error_code
        ),
        Frame::Crypto(c) => write!(
            o,
            "{{\"frame_type\":\"crypto\",\"offset\":{},\"length\":{}}}",
            c.offset,
            c.data.len()
        ),
        Frame::NewToken { token } => write!(
            o,
            "{{\"frame_type\":\"new_token\",\"token\":{{\"raw\":{{\"length\":{}}}}}}}",
            token.len()
        ),
        Frame::Stream(s) => write!(
            o,
            "{{\"frame_type\":\"stream\",\"stream_id\":{},\"offset\":{},\"length\":{},\"fin\":{}}}",
            s.id.0,
            s.offset,
            s.data.len(),
            s.fin
        ),
        Frame::MaxData(max) => write!(o, "{{\"frame_type\":\"max_data\",\"maximum\":{max}}}"),
        Frame::MaxStreamData { id, max } => write!(
            o,
            "{{\"frame_type\":\"max_stream_data\",\"stream_id\":{},\"maximum\":{max}}}",
            id.0
        ),
        Frame::MaxStreams { dir, max } => write!(
            o,
            "{{\"frame_type\":\"max_streams\",\"stream_type\":\"{}\",\"maximum\":{max}}}",
            stream_type(*dir)
        ),
        Frame::DataBlocked { limit } => {
            write!(o, "{{\"frame_type\":\"data_blocked\",\"limit\":{limit}}}")
        }
        Frame::StreamDataBlocked { id, limit } => write!(
            o,
            "{{\"frame_type\":\"stream_data_blocked\",\"stream_id\":{},\"limit\":{limit}}}",
            id.0
        ),
        Frame::StreamsBlocked { dir, limit } => write!(
            o,
            "{{\"frame_type\":\"streams_blocked\",\"stream_type\":\"{}\",\"limit\":{limit}}}",
            stream_type(*dir)
        ),
        Frame::NewConnectionId(n) => write!(
            o,
            "{{\"frame_type\":\"new_connection_id\",\"sequence_number\":{},\"retire_prior_to\":{},\
             \"connection_id_length\":{},\"connection_id\":\"{}\",\"stateless_reset_token\":\"{}\"}}",
            n.seq,
            n.retire_prior_to,
            n.cid.len(),
            hex(&n.cid),
            hex(&n.reset_token)
        ),
        Frame::RetireConnectionId { seq } => write!(
            o,
            "{{\"frame_type\":\"retire_connection_id\",\"sequence_number\":{seq}}}"
        ),
        Frame::PathChallenge(d) => write!(
            o,
            "{{\"frame_type\":\"path_challenge\",\"data\":\"{}\"}}",
            hex(d)
        ),
        Frame::PathResponse(d) => write!(
            o,
            "{{\"frame_type\":\"path_response\",\"data\":\"{}\"}}",
            hex(d)
        ),
        Frame::Close(c) => {
            let (space, trigger) = match c.frame_type {
                Some(t) => ("transport", t),
                None => ("application", 0),
            };
            let _ = write!(
                o,
                "{{\"frame_type\":\"connection_close\",\"error_space\":\"{space}\",\
                 \"error_code\":{},\"raw_error_code\":{},\"trigger_frame_type\":{trigger},\"reason\":",
                c.error_code, c.error_code
            );
            string(o, &String::from_utf8_lossy(c.reason));
            write!(o, "}}")
        }
        Frame::HandshakeDone => write!(o, "{{\"frame_type\":\"handshake_done\"}}"),
        Frame::Datagram { data } => write!(
            o,
            "{{\"frame_type\":\"datagram\",\"length\":{}}}",
            data.len()
        ),
        Frame::AckFrequency(a) => write!(
            o,
            "{{\"frame_type\":\"ack_frequency\",\"sequence_number\":{},\"ack_eliciting_threshold\":{},\
             \"request_max_ack_delay\":{:.3},\"reordering_threshold\":{}}}",
            a.seq,
            a.ack_eliciting_threshold,
            a.request_max_ack_delay as f64 / 1000.0,
            a.reordering_threshold
        ),
        Frame::ImmediateAck => write!(o, "{{\"frame_type\":\"immediate_ack\"}}"),
    };
}
