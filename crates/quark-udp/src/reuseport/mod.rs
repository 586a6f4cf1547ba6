//! Several processes (or sockets) on one UDP port, each datagram steered to
//! the socket that owns its QUIC connection by a byte of the destination
//! connection ID, not by the 4-tuple hash: after a NAT rebinding the client's
//! address changes and the hash would pick another socket.
//!
//! A program attached to a `SO_REUSEPORT` group returns the index of the
//! socket (in the order the sockets joined the group) that gets the datagram;
//! an index past the group makes the kernel fall back to its hash. The kernel
//! runs it with the UDP payload at offset 0:
//!
//! ```text
//!  A = payload[0]
//!  if A & 0x80 (long header):
//!      if payload[5] (DCID length) <= B: return u32::MAX   ; hash
//!      A = payload[6 + B]
//!  else (short header):
//!      A = payload[1 + B]
//!  return A % N
//! ```
//!
//! where `B` is the DCID byte that names the socket (with QUIC-LB plaintext
//! IDs of a one-byte server ID, byte 1: the server ID) and `N` the group size.
//! A client's first Initial carries a random DCID of its choosing, so it
//! lands on a random socket (the same one for its retransmissions); the
//! server there answers with IDs naming itself, and from then on every
//! datagram of the connection, from any address, reaches it.
//!
//! [`attach`] loads the program as eBPF (`SO_ATTACH_REUSEPORT_EBPF`, a
//! socket-filter program written as instructions here; needs `CAP_BPF` or
//! root) and falls back to classic BPF (`SO_ATTACH_REUSEPORT_CBPF`, no
//! privilege needed) with the same logic.

#[cfg(test)]
mod tests;

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::xdp::program::{Insn, insn};

/// `SO_ATTACH_REUSEPORT_CBPF` / `SO_ATTACH_REUSEPORT_EBPF` (asm-generic/socket.h).
const SO_ATTACH_REUSEPORT_CBPF: libc::c_int = 51;
const SO_ATTACH_REUSEPORT_EBPF: libc::c_int = 52;

/// Where the socket's index is and how many sockets share the port.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CidSteering {
    /// The byte of the destination connection ID whose value (modulo
    /// `sockets`) is the socket index. For QUIC-LB plaintext IDs: the last
    /// server ID byte, `server_id_len` (byte 0 is the first octet).
    pub dcid_byte: u8,
    /// Sockets in the group (1..=255).
    pub sockets: u8,
}

/// Which kind of program steers the group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Steering {
    /// An eBPF socket-filter program (`SO_ATTACH_REUSEPORT_EBPF`).
    Ebpf,
    /// A classic BPF program (`SO_ATTACH_REUSEPORT_CBPF`).
    Classic,
}

/// Returned for datagrams the program does not steer: past the group, so the
/// kernel uses its 4-tuple hash.
const HASH: u32 = u32::MAX;

/// The classic BPF program (see the module docs).
fn classic(s: CidSteering) -> Vec<libc::sock_filter> {
    const LDB_ABS: u16 = 0x30; // BPF_LD | BPF_B | BPF_ABS
    const JSET_K: u16 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
    const JGT_K: u16 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
    const JA: u16 = 0x05; // BPF_JMP | BPF_JA
    const MOD_K: u16 = 0x94; // BPF_ALU | BPF_MOD | BPF_K
    const RET_A: u16 = 0x16; // BPF_RET | BPF_A
    const RET_K: u16 = 0x06; // BPF_RET | BPF_K
    let op = |code, jt, jf, k| libc::sock_filter { code, jt, jf, k };
    let b = u32::from(s.dcid_byte);
    vec![
        op(LDB_ABS, 0, 0, 0),                  // 0: A = first byte
        op(JSET_K, 2, 0, 0x80),                // 1: long header -> 4
        op(LDB_ABS, 0, 0, 1 + b),              // 2: short: DCID byte B
        op(JA, 0, 0, 3),                       // 3: -> 7
        op(LDB_ABS, 0, 0, 5),                  // 4: long: DCID length
        op(JGT_K, 0, 3, b),                    // 5: length <= B -> 9
        op(LDB_ABS, 0, 0, 6 + b),              // 6: DCID byte B
        op(MOD_K, 0, 0, u32::from(s.sockets)), // 7: A %= N
        op(RET_A, 0, 0, 0),                    // 8
        op(RET_K, 0, 0, HASH),                 // 9
    ]
}

/// The eBPF program: the same steps with `LD_ABS` loads (which read the
/// packet through the context in r6 and leave the byte in r0).
fn ebpf(s: CidSteering) -> Vec<Insn> {
    const MOV64_X: u8 = 0xbf; // BPF_ALU64 | BPF_MOV | BPF_X
    const LDB_ABS: u8 = 0x30; // BPF_LD | BPF_ABS | BPF_B
    const JSET_K: u8 = 0x45; // BPF_JMP | BPF_JSET | BPF_K
    const JGT_K: u8 = 0x25; // BPF_JMP | BPF_JGT | BPF_K
    const JA: u8 = 0x05; // BPF_JMP | BPF_JA
    const MOD64_K: u8 = 0x97; // BPF_ALU64 | BPF_MOD | BPF_K
    const MOV32_K: u8 = 0xb4; // BPF_ALU | BPF_MOV | BPF_K
    const EXIT: u8 = 0x95; // BPF_JMP | BPF_EXIT
    let b = i32::from(s.dcid_byte);
    vec![
        insn(MOV64_X, 6, 1, 0, 0),     //  0: r6 = ctx (LD_ABS reads it)
        insn(LDB_ABS, 0, 0, 0, 0),     //  1: r0 = first byte
        insn(JSET_K, 0, 0, 2, 0x80),   //  2: long header -> 5
        insn(LDB_ABS, 0, 0, 0, 1 + b), //  3: short: DCID byte B
        insn(JA, 0, 0, 4, 0),          //  4: -> 9
        insn(LDB_ABS, 0, 0, 0, 5),     //  5: long: DCID length
        insn(JGT_K, 0, 0, 1, b),       //  6: length > B -> 8
        insn(JA, 0, 0, 3, 0),          //  7: -> 11
        insn(LDB_ABS, 0, 0, 0, 6 + b), //  8: DCID byte B
        insn(MOD64_K, 0, 0, 0, i32::from(s.sockets)), //  9: r0 %= N
        insn(EXIT, 0, 0, 0, 0),        // 10
        insn(MOV32_K, 0, 0, 0, HASH as i32), // 11: w0 = u32::MAX
        insn(EXIT, 0, 0, 0, 0),        // 12
    ]
}

fn check(s: CidSteering) -> io::Result<()> {
    if s.sockets == 0 || usize::from(s.dcid_byte) >= 20 {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "steering needs 1..=255 sockets and a DCID byte below 20",
        ));
    }
    Ok(())
}

fn setsockopt<T>(socket: BorrowedFd<'_>, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: `value` points to a live `T` of exactly the size passed, and
    // `socket` is an open descriptor for the duration of the call.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            libc::SOL_SOCKET,
            name,
            (value as *const T).cast::<libc::c_void>(),
            size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Attaches the classic BPF program to the reuseport group of `socket`.
pub fn attach_classic(socket: BorrowedFd<'_>, s: CidSteering) -> io::Result<()> {
    check(s)?;
    let mut program = classic(s);
    let fprog = libc::sock_fprog {
        len: program.len() as u16,
        filter: program.as_mut_ptr(),
    };
    // The kernel copies the program during the call; `program` outlives it.
    setsockopt(socket, SO_ATTACH_REUSEPORT_CBPF, &fprog)
}

/// Loads the eBPF program and attaches it to the reuseport group of
/// `socket` (the group keeps it; our descriptor closes on return).
pub fn attach_ebpf(socket: BorrowedFd<'_>, s: CidSteering) -> io::Result<()> {
    check(s)?;
    let prog = crate::xdp::bpf::load_socket_filter(&ebpf(s))?;
    let fd: libc::c_int = prog.as_raw_fd();
    setsockopt(socket, SO_ATTACH_REUSEPORT_EBPF, &fd)
}

/// eBPF if it loads, else classic BPF; says which. Attach after every
/// socket of the group is bound (any one of them carries it for the group).
pub fn attach(socket: BorrowedFd<'_>, s: CidSteering) -> io::Result<Steering> {
    match attach_ebpf(socket, s) {
        Ok(()) => Ok(Steering::Ebpf),
        Err(error) => {
            tracing::debug!(%error, "reuseport eBPF unavailable; classic BPF instead");
            attach_classic(socket, s).map(|()| Steering::Classic)
        }
    }
}

/// Lets `fd` survive `exec` (clears `FD_CLOEXEC`), or not: a launcher hands
/// each child process its socket of the group this way.
pub fn set_inheritable(fd: BorrowedFd<'_>, inheritable: bool) -> io::Result<()> {
    // SAFETY: F_GETFD/F_SETFD on an open descriptor touch only its flags.
    let flags = unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_GETFD) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    let flags = if inheritable {
        flags & !libc::FD_CLOEXEC
    } else {
        flags | libc::FD_CLOEXEC
    };
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, flags) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Takes over a UDP socket inherited as descriptor `fd` (from a launcher):
/// checked to be an open datagram socket, then made non-blocking and
/// close-on-exec. The caller must not use `fd` otherwise afterwards.
pub fn inherited_udp_socket(fd: RawFd) -> io::Result<std::net::UdpSocket> {
    let mut kind: libc::c_int = 0;
    let mut len = size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `kind`, a live
    // c_int; an invalid descriptor only makes it fail with EBADF/ENOTSOCK.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_TYPE,
            (&mut kind as *mut libc::c_int).cast::<libc::c_void>(),
            &mut len,
        )
    };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    if kind != libc::SOCK_DGRAM {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("descriptor {fd} is not a datagram socket"),
        ));
    }
    // SAFETY: `fd` is an open socket (getsockopt succeeded) that this process
    // inherited and nothing else in it owns; the caller hands it over.
    let owned = unsafe { OwnedFd::from_raw_fd(fd) };
    let socket = std::net::UdpSocket::from(owned);
    socket.set_nonblocking(true)?;
    set_inheritable(std::os::fd::AsFd::as_fd(&socket), false)?;
    Ok(socket)
}
