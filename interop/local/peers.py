"""The four QUIC stacks: where their hq-interop programs are and what flags
they know (read from their --help, so a flag added later is picked up)."""

import os
import shutil
import subprocess

NAMES = ["quark", "quinn", "aioquic", "quic-go"]
QUICK_PAIRS = ["quark:quinn", "quinn:quark", "quark:quic-go", "quic-go:quark"]
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def all_pairs():
    return [f"{c}:{s}" for s in NAMES for c in NAMES]


class Peer:
    """One stack: command prefixes for its server and client."""

    def __init__(self, name, server, client, ready, missing):
        self.name = name
        self.server = server  # argv prefix
        self.client = client
        self.ready = ready  # printed by the server once it listens
        self.missing = missing  # why it cannot run, or None
        self._help = {}
        # Suffix of a number of seconds (Go's flag package wants a duration).
        self.seconds = "s" if name == "quic-go" else ""

    def knows(self, role, flag):
        """Whether `role` (server|client) lists `flag` in its --help."""
        if self.missing:
            return False
        if role not in self._help:
            argv = (self.server if role == "server" else self.client) + ["--help"]
            try:
                out = subprocess.run(argv, capture_output=True, text=True, timeout=30)
                self._help[role] = out.stdout + out.stderr
            except (OSError, subprocess.TimeoutExpired):
                self._help[role] = ""
        # Go's flag package lists `-flag` (and accepts `--flag` too).
        words = self._help[role].replace(",", " ").replace("[", " ").replace("]", " ").split()
        return flag in words or flag[1:] in words


class Env:
    def __init__(self):
        self.target = os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target")
        self._peers = {}

    def quark_bin(self):
        return os.environ.get("QUARK_BIN") or os.path.join(self.target, "debug", "quark")

    def peer(self, name):
        if name not in self._peers:
            self._peers[name] = self._make(name)
        return self._peers[name]

    def _make(self, name):
        t = self.target
        if name == "quark":
            b = self.quark_bin()
            return Peer(name, [b, "serve"], [b, "get"], "serving ",
                        _exe(b, "cargo build -p quark-cli"))
        if name == "quinn":
            b = os.environ.get("QUINN_HQ_BIN") or os.path.join(t, "debug", "quinn-hq")
            return Peer(name, [b, "server"], [b, "client"], "listening on",
                        _exe(b, "cargo build -p quark-interop"))
        if name == "aioquic":
            py = os.environ.get("QUARK_INTEROP_PYTHON") or os.path.join(ROOT, ".venv", "bin", "python")
            d = os.path.join(ROOT, "interop", "aioquic")
            missing = _exe(py, "bash interop/setup.sh")
            return Peer(name, [py, "-u", os.path.join(d, "hq_server.py")],
                        [py, "-u", os.path.join(d, "hq_client.py")], "listening on", missing)
        if name == "quic-go":
            b = os.environ.get("QUICGO_HQ_BIN") or os.path.join(t, "interop", "quicgo-hq")
            return Peer(name, [b, "server"], [b, "client"], "listening on",
                        _exe(b, "bash interop/setup.sh"))
        raise ValueError(name)


def _exe(path, how):
    if os.path.isfile(path) and os.access(path, os.X_OK):
        return None
    return f"{path} missing ({how})"


def make_certs(d):
    """A self-signed end-entity certificate for localhost, 127.0.0.1 and ::1
    (also the clients' trust anchor, ca.pem), made once with openssl."""
    cert, key, ca = (os.path.join(d, n) for n in ("cert.pem", "priv.key", "ca.pem"))
    if all(os.path.exists(p) for p in (cert, key, ca)):
        return d
    os.makedirs(d, exist_ok=True)
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
             "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=localhost",
             "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1",
             "-addext", "basicConstraints=critical,CA:FALSE",
             "-addext", "extendedKeyUsage=serverAuth")
    shutil.copy(cert, ca)
    return d


def make_chain(d, length=5):
    """A large certificate chain like the runner's amplificationlimit case
    (~9 KB of server Handshake data): a root (ca.pem, the clients' trust
    anchor), length - 2 RSA-2048 intermediates and a leaf inflated with 20
    long DNS names, as the runner does; cert.pem holds the leaf and the
    intermediates. (The runner chains 9; webpki, under quark and quinn,
    accepts at most 6 intermediates, and these clients verify.)"""
    cert, key, ca = (os.path.join(d, n) for n in ("cert.pem", "priv.key", "ca.pem"))
    if all(os.path.exists(p) for p in (cert, key, ca)):
        return d
    os.makedirs(d, exist_ok=True)
    ca_ext = os.path.join(d, "ca.ext")
    leaf_ext = os.path.join(d, "leaf.ext")
    with open(ca_ext, "w") as f:
        f.write("basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign,cRLSign\n")
    with open(leaf_ext, "w") as f:
        # Valid names (labels of at most 63 characters), so no verifier balks.
        fake = "".join(f",DNS:{i}" + ".".join(os.urandom(30).hex() for _ in range(4)) + ".test"
                       for i in range(20))
        f.write("basicConstraints=critical,CA:FALSE\nextendedKeyUsage=serverAuth\n"
                f"subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1{fake}\n")
    _openssl("req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", os.path.join(d, "0.key"),
             "-out", ca, "-days", "30", "-subj", "/CN=quark interop root",
             "-addext", "basicConstraints=critical,CA:TRUE",
             "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    issuer, issuer_key, chain = ca, os.path.join(d, "0.key"), []
    for i in range(1, length):
        leaf = i == length - 1
        k, csr, pem = (os.path.join(d, f"{i}.{e}") for e in ("key", "csr", "pem"))
        _openssl("req", "-newkey", "rsa:2048", "-nodes", "-keyout", k, "-out", csr,
                 "-subj", "/CN=localhost" if leaf else f"/CN=quark interop intermediate {i}")
        _openssl("x509", "-req", "-in", csr, "-CA", issuer, "-CAkey", issuer_key,
                 "-set_serial", str(1000 + i), "-out", pem, "-days", "30",
                 "-extfile", leaf_ext if leaf else ca_ext)
        chain.insert(0, pem)
        issuer, issuer_key = pem, k
    with open(cert, "w") as out:
        for pem in chain:
            with open(pem) as f:
                out.write(f.read())
    shutil.copy(issuer_key, key)
    return d


def _openssl(*args):
    subprocess.run(["openssl", *args], check=True, capture_output=True)
