//! Memory shared with the kernel: mmap'd regions, and the four AF_XDP rings.
//!
//! Each ring is a single-producer single-consumer queue in a region mmap'd from
//! the socket: a producer index, a consumer index, a flags word and a power-of-two
//! array of descriptors. Indices run freely (wrapping `u32`); a slot is
//! `index & mask`. The side that owns an index publishes it with a release store
//! after writing (or reading) the slots; the other side's index is read with an
//! acquire load and cached until it is needed again (the kernel's own protocol,
//! `Documentation/networking/af_xdp.rst`).
//!
//! quark produces on the fill and TX rings and consumes the RX and completion rings.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering, fence};

/// An mmap'd region, unmapped on drop.
pub(crate) struct Mmap {
    ptr: NonNull<u8>,
    len: usize,
}

// SAFETY: the region is plain memory owned by this value; whoever holds it
// coordinates access (the rings through their indices, the UMEM through frame
// ownership), so moving it to or sharing it with another thread is sound.
unsafe impl Send for Mmap {}
// SAFETY: as above; `&Mmap` only hands out raw pointers.
unsafe impl Sync for Mmap {}

impl Mmap {
    /// Private anonymous memory of `len` bytes, populated up front (the UMEM).
    pub(crate) fn anonymous(len: usize) -> io::Result<Self> {
        Self::map(
            len,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
            -1,
            0,
        )
    }

    /// `len` bytes of the socket's ring at page offset `offset` (an
    /// `XDP_PGOFF_*` constant).
    pub(crate) fn ring(fd: BorrowedFd<'_>, len: usize, offset: u64) -> io::Result<Self> {
        Self::map(
            len,
            libc::MAP_SHARED | libc::MAP_POPULATE,
            fd.as_raw_fd(),
            offset as libc::off_t,
        )
    }

    fn map(
        len: usize,
        flags: libc::c_int,
        fd: libc::c_int,
        offset: libc::off_t,
    ) -> io::Result<Self> {
        // SAFETY: a fresh mapping chosen by the kernel (null hint) overlaps nothing
        // we own; the arguments are plain values and the result is checked.
        let ptr = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                fd,
                offset,
            )
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        let ptr = NonNull::new(ptr.cast()).ok_or_else(|| io::Error::other("mmap returned null"))?;
        Ok(Self { ptr, len })
    }

    pub(crate) fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub(crate) fn len(&self) -> usize {
        self.len
    }
}

impl Drop for Mmap {
    fn drop(&mut self) {
        // SAFETY: `ptr`/`len` are exactly the mapping made in `map`, and nothing
        // refers to it any more (its owner is being dropped).
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

/// One ring, from quark's side: `T` is `xdp_desc` for RX/TX, `u64` (a UMEM
/// address) for fill/completion.
pub(crate) struct Ring<T> {
    /// Keeps the memory mapped.
    _map: Mmap,
    producer: NonNull<AtomicU32>,
    consumer: NonNull<AtomicU32>,
    flags: NonNull<AtomicU32>,
    descs: NonNull<T>,
    size: u32,
    /// Our own index (producer or consumer), ahead of what is published until
    /// [`submit`](Self::submit) / [`release`](Self::release).
    local: u32,
    /// The other side's index as last read.
    remote: u32,
}

// SAFETY: the ring's memory is owned through `map`; the kernel synchronises
// through the atomic indices; one `Ring` value is used by one thread at a time
// (`&mut self` for every operation that touches slots).
unsafe impl<T: Send> Send for Ring<T> {}

impl<T: Copy> Ring<T> {
    /// Maps the ring of `size` entries (a power of two) described by `offsets`
    /// at page offset `pgoff`; quark is its producer when `we_produce` is true.
    pub(crate) fn map(
        fd: BorrowedFd<'_>,
        offsets: &libc::xdp_ring_offset,
        size: u32,
        pgoff: u64,
        we_produce: bool,
    ) -> io::Result<Self> {
        debug_assert!(size.is_power_of_two());
        let len = offsets.desc as usize + size as usize * size_of::<T>();
        let map = Mmap::ring(fd, len, pgoff)?;
        let field = |off: u64, bytes: usize| -> io::Result<*mut u8> {
            if off as usize + bytes > len {
                return Err(io::Error::other("XDP ring offsets beyond the mapping"));
            }
            // SAFETY: `off + bytes` lies within the mapping (checked above).
            Ok(unsafe { map.as_ptr().add(off as usize) })
        };
        let producer = field(offsets.producer, 4)?;
        let consumer = field(offsets.consumer, 4)?;
        let flags = field(offsets.flags, 4)?;
        let descs = field(offsets.desc, size as usize * size_of::<T>())?;
        let aligned = [producer, consumer, flags]
            .iter()
            .all(|p| p.align_offset(4) == 0)
            && descs.align_offset(align_of::<T>()) == 0;
        if !aligned {
            return Err(io::Error::other("XDP ring fields are misaligned"));
        }
        let nn = |p: *mut u8| NonNull::new(p).ok_or_else(|| io::Error::other("null ring field"));
        let mut ring = Self {
            producer: nn(producer)?.cast(),
            consumer: nn(consumer)?.cast(),
            flags: nn(flags)?.cast(),
            descs: nn(descs)?.cast(),
            _map: map,
            size,
            local: 0,
            remote: 0,
        };
        // A fresh ring starts at zero, but read the real values anyway.
        let (prod, cons) = (
            ring.producer().load(Ordering::Acquire),
            ring.consumer().load(Ordering::Acquire),
        );
        (ring.local, ring.remote) = if we_produce {
            (prod, cons)
        } else {
            (cons, prod)
        };
        Ok(ring)
    }

    fn producer(&self) -> &AtomicU32 {
        // SAFETY: an aligned `u32` inside the live mapping; the kernel only
        // accesses it atomically too.
        unsafe { self.producer.as_ref() }
    }

    fn consumer(&self) -> &AtomicU32 {
        // SAFETY: as for `producer`.
        unsafe { self.consumer.as_ref() }
    }

    /// Whether the kernel asks for a system call to make progress
    /// (`XDP_RING_NEED_WAKEUP`, with `XDP_USE_NEED_WAKEUP`).
    pub(crate) fn needs_wakeup(&self) -> bool {
        // Order the index we just published before the flag read (libxdp uses a
        // full barrier here too), so a wake-up request is never missed.
        fence(Ordering::SeqCst);
        // SAFETY: as for `producer`.
        let flags = unsafe { self.flags.as_ref() };
        flags.load(Ordering::Relaxed) & libc::XDP_RING_NEED_WAKEUP != 0
    }

    fn slot(&self, index: u32) -> *mut T {
        // SAFETY: `index & (size - 1)` < `size`, and the array holds `size`
        // entries inside the mapping (checked in `map`).
        unsafe { self.descs.as_ptr().add((index & (self.size - 1)) as usize) }
    }

    // --- producer side (fill, TX) ---

    /// Free slots, up to `want`; re-reads the consumer index only when the
    /// cached one shows fewer than `want`.
    pub(crate) fn free(&mut self, want: u32) -> u32 {
        let mut free = self
            .size
            .saturating_sub(self.local.wrapping_sub(self.remote));
        if free < want {
            self.remote = self.consumer().load(Ordering::Acquire);
            free = self
                .size
                .saturating_sub(self.local.wrapping_sub(self.remote));
        }
        free
    }

    /// Writes the next slot; call only after [`free`](Self::free) showed room.
    /// Invisible to the kernel until [`submit`](Self::submit).
    pub(crate) fn push(&mut self, value: T) {
        debug_assert!(self.local.wrapping_sub(self.remote) < self.size);
        // SAFETY: the slot is free (the caller checked `free`), so the kernel does
        // not read it until we publish the producer index.
        unsafe { self.slot(self.local).write(value) };
        self.local = self.local.wrapping_add(1);
    }

    /// Publishes every pushed slot.
    pub(crate) fn submit(&mut self) {
        self.producer().store(self.local, Ordering::Release);
    }

    /// Slots published but not yet taken by the kernel.
    pub(crate) fn in_flight(&mut self) -> u32 {
        self.remote = self.consumer().load(Ordering::Acquire);
        self.local.wrapping_sub(self.remote)
    }

    // --- consumer side (RX, completion) ---

    /// Entries ready to read; re-reads the producer index when the cache is empty.
    pub(crate) fn available(&mut self) -> u32 {
        let mut ready = self.remote.wrapping_sub(self.local);
        if ready == 0 {
            self.remote = self.producer().load(Ordering::Acquire);
            ready = self.remote.wrapping_sub(self.local);
        }
        ready.min(self.size)
    }

    /// The `i`-th ready entry; `i` < [`available`](Self::available).
    pub(crate) fn peek(&self, i: u32) -> T {
        // SAFETY: the entry was published by the kernel (acquire load of its
        // producer index) and stays untouched until we release it.
        unsafe { self.slot(self.local.wrapping_add(i)).read() }
    }

    /// Marks `n` entries read; the kernel may reuse them after
    /// [`release`](Self::release).
    pub(crate) fn consume(&mut self, n: u32) {
        self.local = self.local.wrapping_add(n);
    }

    /// Publishes the consumer index.
    pub(crate) fn release(&mut self) {
        self.consumer().store(self.local, Ordering::Release);
    }
}
