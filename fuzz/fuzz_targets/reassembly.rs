//! A stream's reassembly buffer fed by a peer that picks every offset and
//! length: frames copied or kept as slices of the datagram they came in
//! (zero-copy receive), in any order, duplicated and overlapping, read
//! between them by `read` and `read_bytes`. The reader gets the stream byte
//! for byte, the counts agree after every step, and once everything sent
//! without a gap is read, no datagram is held.
//!
//! Input: records of 6 bytes `[flags][offset: 3 bytes][length: 2 bytes]`.
//! Flags: bit 0 the frame lies in a datagram (may be kept as a slice); bit 1
//! its offset counts from where the in-order data ends (else from 0); bits 2-3
//! what is read after it (nothing, `read` of up to length bytes, or
//! `read_bytes` of up to length).

#![no_main]

use bytes::Bytes;
use libfuzzer_sys::fuzz_target;
use quark_proto::stream::RecvBuffer;

/// Records taken from one input at most.
const MAX_FRAMES: usize = 256;
/// Frames end below this: a bound on what one input can make the buffer hold.
const MAX_END: u64 = 1 << 20;

/// The stream's byte at `offset`.
fn byte(offset: u64) -> u8 {
    (offset.wrapping_mul(131) ^ (offset >> 9)) as u8
}

fn check_read(got: &[u8], at: u64) {
    for (i, b) in got.iter().enumerate() {
        assert_eq!(
            *b,
            byte(at + i as u64),
            "byte {} of the stream",
            at + i as u64
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let mut b = RecvBuffer::new();
    let mut read = 0u64;
    let mut max = 0u64;
    let mut datagrams = Vec::new();
    for rec in data.chunks_exact(6).take(MAX_FRAMES) {
        let flags = rec[0];
        let at = u64::from(u32::from_be_bytes([0, rec[1], rec[2], rec[3]]));
        let len = usize::from(u16::from_be_bytes([rec[4], rec[5]]));
        let offset = if flags & 2 != 0 {
            b.contiguous_end() + at % 4096
        } else {
            at
        };
        let end = (offset + len as u64).min(MAX_END);
        if offset < end {
            let frame: Vec<u8> = (offset..end).map(byte).collect();
            if flags & 1 != 0 {
                // After a header, before a tag: a slice in the middle.
                let mut d = vec![0xee; 40];
                d.extend_from_slice(&frame);
                d.extend_from_slice(&[0xdd; 16]);
                let d = Bytes::from(d);
                b.insert_from(offset, &d[40..40 + frame.len()], Some(&d));
                datagrams.push(d);
            } else {
                b.insert(offset, &frame);
            }
            max = max.max(end);
        }
        assert_eq!(b.max_offset(), max);
        assert!(b.shared_bytes() <= b.readable());
        assert_eq!(b.read_offset() + b.readable() as u64, b.contiguous_end());
        match (flags >> 2) & 3 {
            1 => {
                let mut piece = vec![0; len];
                let n = b.read(&mut piece);
                check_read(&piece[..n], read);
                read += n as u64;
            }
            2 | 3 => {
                if let Some(bytes) = b.read_bytes(len.max(1)) {
                    assert!(!bytes.is_empty() && bytes.len() <= len.max(1));
                    check_read(&bytes, read);
                    read += bytes.len() as u64;
                }
            }
            _ => {}
        }
        assert_eq!(b.read_offset(), read);
    }
    while let Some(bytes) = b.read_bytes(65_536) {
        check_read(&bytes, read);
        read += bytes.len() as u64;
    }
    assert_eq!(b.readable(), 0);
    assert_eq!(b.shared_bytes(), 0);
    assert_eq!(read, b.contiguous_end());
    if read == max {
        // Everything arrived and was read: no datagram is held.
        assert!(
            datagrams.iter_mut().all(|d| d.is_unique()),
            "a datagram still held"
        );
    }
});
