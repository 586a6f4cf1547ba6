//! The `bpf(2)` system call, for the four things AF_XDP needs: an `XSKMAP`, an
//! entry in it, loading the XDP program and attaching it to an interface with a
//! BPF link (the link detaches the program when its descriptor closes, so a
//! crashed process leaves nothing behind).
//!
//! The attribute layouts are prefixes of `union bpf_attr` (include/uapi/linux/bpf.h);
//! the kernel treats the bytes we don't pass as zero.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd};

use super::program::Insn;

const BPF_MAP_CREATE: libc::c_int = 0;
const BPF_MAP_UPDATE_ELEM: libc::c_int = 2;
const BPF_PROG_LOAD: libc::c_int = 5;
const BPF_LINK_CREATE: libc::c_int = 28;

const BPF_MAP_TYPE_XSKMAP: u32 = 17;
const BPF_PROG_TYPE_XDP: u32 = 6;
const BPF_PROG_TYPE_SOCKET_FILTER: u32 = 1;
/// `enum bpf_attach_type`: BPF_XDP.
const BPF_XDP: u32 = 37;

/// `XDP_FLAGS_SKB_MODE`: generic XDP, run on the `sk_buff` after the driver.
pub(crate) const XDP_FLAGS_SKB_MODE: u32 = 1 << 1;
/// `XDP_FLAGS_DRV_MODE`: native XDP, run by the driver.
pub(crate) const XDP_FLAGS_DRV_MODE: u32 = 1 << 2;

#[repr(C)]
#[derive(Default)]
struct MapCreate {
    map_type: u32,
    key_size: u32,
    value_size: u32,
    max_entries: u32,
    map_flags: u32,
    inner_map_fd: u32,
    numa_node: u32,
    map_name: [u8; 16],
}

#[repr(C)]
struct MapElem {
    map_fd: u32,
    _pad: u32,
    key: u64,
    value: u64,
    flags: u64,
}

#[repr(C)]
#[derive(Default)]
struct ProgLoad {
    prog_type: u32,
    insn_cnt: u32,
    insns: u64,
    license: u64,
    log_level: u32,
    log_size: u32,
    log_buf: u64,
    kern_version: u32,
    prog_flags: u32,
    prog_name: [u8; 16],
    prog_ifindex: u32,
    expected_attach_type: u32,
}

#[repr(C)]
struct LinkCreate {
    prog_fd: u32,
    target_ifindex: u32,
    attach_type: u32,
    flags: u32,
}

/// `bpf(cmd, attr, sizeof attr)`, returning the non-negative result.
fn bpf<T>(cmd: libc::c_int, attr: &mut T) -> io::Result<libc::c_int> {
    loop {
        // SAFETY: `attr` is a live, initialised `#[repr(C)]` prefix of `union
        // bpf_attr` of exactly `size_of::<T>()` bytes; pointers inside it refer to
        // memory the caller keeps alive across the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_bpf,
                cmd,
                (attr as *mut T).cast::<libc::c_void>(),
                size_of::<T>() as libc::c_uint,
            )
        };
        if rc >= 0 {
            return Ok(rc as libc::c_int);
        }
        let error = io::Error::last_os_error();
        if error.kind() != io::ErrorKind::Interrupted {
            return Err(error);
        }
    }
}

/// Wraps a descriptor the kernel just returned.
fn owned(fd: libc::c_int) -> OwnedFd {
    // SAFETY: `fd` was just returned by a successful `bpf` call, so it is open
    // and nothing else owns it.
    unsafe { OwnedFd::from_raw_fd(fd) }
}

fn name(s: &str) -> [u8; 16] {
    let mut out = [0u8; 16];
    let n = s.len().min(15);
    out[..n].copy_from_slice(&s.as_bytes()[..n]);
    out
}

/// Creates an `XSKMAP` with `entries` slots (keys are RX queue indices).
pub(crate) fn create_xskmap(entries: u32) -> io::Result<OwnedFd> {
    let mut attr = MapCreate {
        map_type: BPF_MAP_TYPE_XSKMAP,
        key_size: 4,
        value_size: 4,
        max_entries: entries,
        map_name: name("quark_xsks"),
        ..MapCreate::default()
    };
    bpf(BPF_MAP_CREATE, &mut attr).map(owned)
}

/// Sets `map[key] = value` (for an XSKMAP: the AF_XDP socket's descriptor).
pub(crate) fn update(map: BorrowedFd<'_>, key: u32, value: u32) -> io::Result<()> {
    let mut attr = MapElem {
        map_fd: map.as_raw_fd() as u32,
        _pad: 0,
        key: &key as *const u32 as u64,
        value: &value as *const u32 as u64,
        flags: 0, // BPF_ANY
    };
    bpf(BPF_MAP_UPDATE_ELEM, &mut attr).map(drop)
}

/// Loads an XDP program. A verifier refusal comes back as an error carrying the
/// verifier's log.
pub(crate) fn load_xdp(insns: &[Insn]) -> io::Result<OwnedFd> {
    load(BPF_PROG_TYPE_XDP, BPF_XDP, "quark_xdp", insns)
}

/// Loads a socket-filter program (for `SO_ATTACH_REUSEPORT_EBPF`, its return
/// value picks the socket of the reuseport group).
pub(crate) fn load_socket_filter(insns: &[Insn]) -> io::Result<OwnedFd> {
    load(BPF_PROG_TYPE_SOCKET_FILTER, 0, "quark_steer", insns)
}

fn load(prog_type: u32, attach_type: u32, prog_name: &str, insns: &[Insn]) -> io::Result<OwnedFd> {
    // The licence of this program (quark's own); the helpers used are not
    // GPL-only, so any string is accepted.
    const LICENSE: &[u8] = b"MIT\0";
    let mut log = vec![0u8; 64 * 1024];
    let mut attr = ProgLoad {
        prog_type,
        insn_cnt: insns.len() as u32,
        insns: insns.as_ptr() as u64,
        license: LICENSE.as_ptr() as u64,
        prog_name: name(prog_name),
        expected_attach_type: attach_type,
        ..ProgLoad::default()
    };
    match bpf(BPF_PROG_LOAD, &mut attr) {
        Ok(fd) => Ok(owned(fd)),
        Err(error) if error.raw_os_error() == Some(libc::EACCES) => {
            // Load again with the verifier log on, to say why.
            attr.log_level = 1;
            attr.log_size = log.len() as u32;
            attr.log_buf = log.as_mut_ptr() as u64;
            let again = bpf(BPF_PROG_LOAD, &mut attr);
            let end = log.iter().position(|&b| b == 0).unwrap_or(log.len());
            let text = String::from_utf8_lossy(&log[..end]);
            match again {
                Ok(fd) => Ok(owned(fd)),
                Err(_) => Err(io::Error::new(
                    error.kind(),
                    format!("the verifier refused the {prog_name} program ({error}):\n{text}"),
                )),
            }
        }
        Err(error) => Err(error),
    }
}

/// Attaches `prog` to interface `ifindex` in mode `flags` (one of the
/// `XDP_FLAGS_*_MODE`); the program stays attached while the returned link
/// descriptor is open.
pub(crate) fn attach_xdp(prog: BorrowedFd<'_>, ifindex: u32, flags: u32) -> io::Result<OwnedFd> {
    let mut attr = LinkCreate {
        prog_fd: prog.as_raw_fd() as u32,
        target_ifindex: ifindex,
        attach_type: BPF_XDP,
        flags,
    };
    bpf(BPF_LINK_CREATE, &mut attr).map(owned)
}
