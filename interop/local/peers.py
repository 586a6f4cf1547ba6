"""The four QUIC stacks: where their hq-interop programs are and what flags
they know (read from their --help, so a flag added later is picked up)."""

import os
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
    """A self-signed end-entity certificate for localhost (also the clients'
    trust anchor), made once with openssl."""
    cert, key = os.path.join(d, "cert.pem"), os.path.join(d, "priv.key")
    if os.path.exists(cert) and os.path.exists(key):
        return d
    os.makedirs(d, exist_ok=True)
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
         "-nodes", "-keyout", key, "-out", cert, "-days", "30", "-subj", "/CN=localhost",
         "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1",
         "-addext", "basicConstraints=critical,CA:FALSE",
         "-addext", "extendedKeyUsage=serverAuth"],
        check=True, capture_output=True)
    return d
