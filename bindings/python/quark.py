"""libquark from Python (ctypes): quark's QUIC as blocking, socket-like calls.

The library is found through $QUARK_LIB, else target/debug/libquark_ffi.so
of this repository (build it with `cargo build -p quark-ffi`). Errors raise
QuarkError carrying the negative code and quark_strerror's text.
"""
import ctypes
import os

_DEFAULT = os.path.join(os.path.dirname(os.path.abspath(__file__)),
                        "..", "..", "target", "debug", "libquark_ffi.so")
_lib = ctypes.CDLL(os.environ.get("QUARK_LIB", _DEFAULT))

_i64, _i32, _str = ctypes.c_int64, ctypes.c_int32, ctypes.c_char_p
for name, res, args in [
    ("quark_listen", _i64, [_str, _str, _str, _str]),
    ("quark_listen_pem", _i64, [_str, _str, _str, _str]),
    ("quark_connect", _i64, [_str, _str, _str, _i32, _str]),
    ("quark_accept", _i64, [_i64]),
    ("quark_local_port", _i32, [_i64]),
    ("quark_stream_open", _i64, [_i64]),
    ("quark_stream_accept", _i64, [_i64]),
    ("quark_stream_read", _i64, [_i64, ctypes.c_void_p, ctypes.c_size_t]),
    ("quark_stream_write", _i64, [_i64, ctypes.c_char_p, ctypes.c_size_t]),
    ("quark_stream_shutdown", _i32, [_i64]),
    ("quark_set_nonblocking", _i32, [_i64, _i32]),
    ("quark_close", _i32, [_i64]),
    ("quark_strerror", _str, [_i32]),
]:
    fn = getattr(_lib, name)
    fn.restype, fn.argtypes = res, args


class QuarkError(Exception):
    def __init__(self, what, code):
        super().__init__(f"{what}: {_lib.quark_strerror(code).decode()} ({code})")
        self.code = code


def _check(what, ret):
    if ret < 0:
        raise QuarkError(what, ret)
    return ret


class _Handle:
    def __init__(self, handle):
        self.handle = handle

    def close(self):
        if self.handle is not None:
            handle, self.handle = self.handle, None
            _check("close", _lib.quark_close(handle))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Stream(_Handle):
    def read(self, size=65536):
        """Up to `size` bytes; b"" at the end of the stream."""
        buf = ctypes.create_string_buffer(size)
        n = _check("read", _lib.quark_stream_read(self.handle, buf, size))
        return buf.raw[:n]

    def write(self, data):
        _check("write", _lib.quark_stream_write(self.handle, data, len(data)))

    def shutdown(self):
        _check("shutdown", _lib.quark_stream_shutdown(self.handle))


class Connection(_Handle):
    def open_stream(self):
        return Stream(_check("stream_open", _lib.quark_stream_open(self.handle)))

    def accept_stream(self):
        return Stream(_check("stream_accept", _lib.quark_stream_accept(self.handle)))


class Endpoint(_Handle):
    def accept(self):
        return Connection(_check("accept", _lib.quark_accept(self.handle)))

    @property
    def port(self):
        return _check("local_port", _lib.quark_local_port(self.handle))


def connect(addr, server_name, alpn, insecure=False, ca_file=None):
    ca = ca_file.encode() if ca_file else None
    return Connection(_check("connect", _lib.quark_connect(
        addr.encode(), server_name.encode(), alpn.encode(), int(insecure), ca)))


def listen_pem(addr, cert_pem, key_pem, alpn):
    """Like listen, with the PEM text itself rather than file names."""
    return Endpoint(_check("listen_pem", _lib.quark_listen_pem(
        addr.encode(), cert_pem.encode(), key_pem.encode(), alpn.encode())))


def listen(addr, cert_file, key_file, alpn):
    return Endpoint(_check("listen", _lib.quark_listen(
        addr.encode(), cert_file.encode(), key_file.encode(), alpn.encode())))
