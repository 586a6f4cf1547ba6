//! Control messages (`cmsg(3)`): an encoder that writes into a fixed stack buffer
//! and a bounds-checked decoder. The layout is the kernel's: each message is a
//! `cmsghdr` followed by its data, padded to the alignment of `size_t`.

use std::mem::{self, MaybeUninit};
use std::ptr;

/// Bytes of control data per message: enough for GSO/GRO (24), TOS/TCLASS (24) and
/// `in6_pktinfo` (40), with room to spare.
pub(crate) const BUF_LEN: usize = 128;

/// A control buffer, aligned for `cmsghdr`.
#[repr(C, align(8))]
#[derive(Clone, Copy)]
pub(crate) struct Buf(pub(crate) [u8; BUF_LEN]);

const _: () = assert!(mem::align_of::<Buf>() >= mem::align_of::<libc::cmsghdr>());

/// `CMSG_ALIGN`: rounds up to the alignment of `size_t`.
const fn align(len: usize) -> usize {
    let a = mem::size_of::<usize>();
    (len + a - 1) & !(a - 1)
}

/// Offset of the data after a header (`CMSG_LEN(0)`).
const HDR_LEN: usize = align(mem::size_of::<libc::cmsghdr>());

/// `CMSG_SPACE(len)`: bytes a message with `len` data bytes takes, padding included.
pub(crate) const fn space(len: usize) -> usize {
    HDR_LEN + align(len)
}

/// Writes control messages into a [`Buf`].
pub(crate) struct Encoder<'a> {
    buf: &'a mut MaybeUninit<Buf>,
    len: usize,
}

impl<'a> Encoder<'a> {
    pub(crate) fn new(buf: &'a mut MaybeUninit<Buf>) -> Self {
        Self { buf, len: 0 }
    }

    /// Appends one message. Panics if the buffer is full: callers push a fixed set of
    /// small messages that [`BUF_LEN`] holds (checked by a test).
    pub(crate) fn push(&mut self, level: libc::c_int, kind: libc::c_int, data: &[u8]) {
        let start = self.len;
        let end = start + space(data.len());
        assert!(end <= BUF_LEN, "control buffer overflow");
        // SAFETY: zeroed `cmsghdr` is valid (plain integers; private padding fields
        // on some libcs are why it isn't built with a literal).
        let mut hdr: libc::cmsghdr = unsafe { mem::zeroed() };
        hdr.cmsg_len = (HDR_LEN + data.len()) as _;
        hdr.cmsg_level = level;
        hdr.cmsg_type = kind;
        let base = self.buf.as_mut_ptr().cast::<u8>();
        // SAFETY: `start..end` lies inside the `BUF_LEN`-byte buffer (asserted above);
        // `start` is a multiple of the `size_t` alignment and the buffer is aligned
        // for `cmsghdr`, but the writes are unaligned-tolerant anyway. The padding is
        // zeroed so that the kernel reads no uninitialised bytes.
        unsafe {
            ptr::write_bytes(base.add(start), 0, end - start);
            ptr::write_unaligned(base.add(start).cast::<libc::cmsghdr>(), hdr);
            ptr::copy_nonoverlapping(data.as_ptr(), base.add(start + HDR_LEN), data.len());
        }
        self.len = end;
    }

    /// Bytes written, for `msg_controllen`.
    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

/// One decoded control message.
pub(crate) struct Cmsg<'a> {
    pub(crate) level: libc::c_int,
    pub(crate) kind: libc::c_int,
    pub(crate) data: &'a [u8],
}

/// Iterates over the control messages in `buf` (the `msg_controllen` bytes the
/// kernel wrote); stops at the first malformed header.
pub(crate) fn decode(buf: &[u8]) -> impl Iterator<Item = Cmsg<'_>> {
    let mut offset = 0;
    std::iter::from_fn(move || {
        let rest = buf.get(offset..)?;
        if rest.len() < HDR_LEN {
            return None;
        }
        // SAFETY: `rest` holds at least `HDR_LEN >= size_of::<cmsghdr>()` bytes; the
        // read is unaligned-tolerant and a `cmsghdr` is plain integers.
        let hdr: libc::cmsghdr = unsafe { ptr::read_unaligned(rest.as_ptr().cast()) };
        let len = hdr.cmsg_len as usize;
        if len < HDR_LEN || len > rest.len() {
            return None;
        }
        offset += align(len);
        Some(Cmsg {
            level: hdr.cmsg_level,
            kind: hdr.cmsg_type,
            data: &rest[HDR_LEN..len],
        })
    })
}

/// Reads a native-endian `int` payload (also accepts the one-byte form the kernel
/// uses for `IP_TOS`).
pub(crate) fn int(data: &[u8]) -> Option<i32> {
    match *data {
        [b] => Some(i32::from(b)),
        [a, b, c, d, ..] => Some(i32::from_ne_bytes([a, b, c, d])),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_match_libc() {
        for len in [0usize, 1, 2, 4, 12, 20] {
            // SAFETY: pure arithmetic macros.
            let (s, l) = unsafe { (libc::CMSG_SPACE(len as u32), libc::CMSG_LEN(len as u32)) };
            assert_eq!(space(len), s as usize);
            assert_eq!(HDR_LEN + len, l as usize);
        }
        // The largest set we send: GSO + TOS + in6_pktinfo; the largest we expect to
        // receive: GRO + TCLASS + in6_pktinfo.
        assert!(space(2) + space(4) + space(20) <= BUF_LEN);
        assert!(space(4) + space(4) + space(20) <= BUF_LEN);
    }

    #[test]
    fn round_trip() {
        let mut buf = MaybeUninit::<Buf>::uninit();
        let mut enc = Encoder::new(&mut buf);
        enc.push(libc::SOL_UDP, libc::UDP_SEGMENT, &1200u16.to_ne_bytes());
        enc.push(libc::IPPROTO_IP, libc::IP_TOS, &2i32.to_ne_bytes());
        enc.push(libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, &[7; 20]);
        let len = enc.len();
        assert_eq!(len, space(2) + space(4) + space(20));
        // SAFETY: the encoder initialised the first `len` bytes.
        let bytes = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len) };
        let all: Vec<_> = decode(bytes)
            .map(|c| (c.level, c.kind, c.data.to_vec()))
            .collect();
        assert_eq!(all.len(), 3);
        assert_eq!(
            all[0],
            (
                libc::SOL_UDP,
                libc::UDP_SEGMENT,
                1200u16.to_ne_bytes().to_vec()
            )
        );
        assert_eq!(
            all[1],
            (libc::IPPROTO_IP, libc::IP_TOS, 2i32.to_ne_bytes().to_vec())
        );
        assert_eq!(
            all[2],
            (libc::IPPROTO_IPV6, libc::IPV6_PKTINFO, vec![7; 20])
        );
        assert_eq!(int(&all[1].2), Some(2));
        assert_eq!(int(&[3]), Some(3));
        assert_eq!(int(&[]), None);
    }

    #[test]
    fn malformed_headers_stop_decoding() {
        let mut buf = MaybeUninit::<Buf>::uninit();
        let mut enc = Encoder::new(&mut buf);
        enc.push(libc::IPPROTO_IP, libc::IP_TOS, &[1]);
        let len = enc.len();
        // SAFETY: the encoder initialised the first `len` bytes.
        let good = unsafe { std::slice::from_raw_parts(buf.as_ptr().cast::<u8>(), len) };
        // Truncated: the header claims more than is there.
        assert_eq!(decode(&good[..HDR_LEN]).count(), 0);
        assert_eq!(decode(&good[..HDR_LEN - 1]).count(), 0);
        // A length shorter than the header itself.
        let mut bad = good.to_vec();
        bad[..mem::size_of::<usize>()].copy_from_slice(&3usize.to_ne_bytes());
        assert_eq!(decode(&bad).count(), 0);
        assert_eq!(decode(good).count(), 1);
    }
}
