"""The interop runner's test cases (quic-interop-runner testcases.py), as
this machine can play them: files to serve, flags per role, how the client
connects, and the emulated link (`quark relay` arguments) if impaired."""

import os

KIB, MIB = 1024, 1024 * 1024
QUICK = ["handshake", "transfer", "chacha20", "retry", "multiconnect", "transferloss"]


class Case:
    def __init__(self, name, about, files, server=(), client=(), needs=(), mode="one",
                 relay=None, timeout=60, unplayable=None, goodput=False, expect=None,
                 client_opt=()):
        self.name = name
        self.about = about
        self.files = files  # [(name, size)]
        self.server = list(server)  # extra server flags
        self.client = list(client)  # extra client flags
        self.needs = list(needs)  # [(role, flag)] besides the flags above
        self.mode = mode  # one | multi | resume | zerortt
        self.relay = relay  # `quark relay` impairment arguments, or None
        self.timeout = timeout  # seconds for the whole cell
        self.unplayable = unplayable  # reason no pair can play it here
        self.goodput = goodput  # report Mbit/s
        self.expect = expect  # text the quark client must print
        self.client_opt = list(client_opt)  # client flags used only where known


# The runner's simulated links have a 1500-byte MTU (IPv4: 1472 bytes of UDP
# payload); loopback's is 64 KiB, so the relay enforces it.
MTU = ["--mtu", "1472"]
# Under 30 % loss a handshake can need several backed-off PTOs.
PATIENT = ["--connect-timeout", "60"]


def files(prefix, n, size):
    return [(f"{prefix}-{i}", size) for i in range(n)]


def all_cases(connections=50):
    return [
        Case("handshake", "one small file, one connection", files("hs", 1, 5 * KIB)),
        Case("transfer", "1+2+3 MiB on one connection", [("t1", MIB), ("t2", 2 * MIB), ("t3", 3 * MIB)]),
        Case("chacha20", "both sides offer only ChaCha20-Poly1305", [("c1", MIB), ("c2", 2 * MIB)],
             server=["--cipher", "chacha20"], client=["--cipher", "chacha20"]),
        Case("multiplexing", "100 small files as streams of one connection", files("mx", 100, 2 * KIB)),
        Case("retry", "the server validates the address with a Retry", files("rt", 2, 10 * KIB),
             server=["--retry"]),
        Case("http3", "the files over HTTP/3", files("h3", 3, 500 * KIB),
             server=["--h3"], client=["--h3"]),
        Case("keyupdate", "the client updates 1-RTT keys at once", [("ku", 3 * MIB)],
             client=["--key-update"]),
        Case("ecn", "ECN-marked transfer", [("ecn", MIB)],
             unplayable="the runner checks ECN marks in its packet capture; no capture here"),
        Case("multiconnect", "10 files, one connection each", files("mc", 10, KIB), mode="multi"),
        Case("resumption", "a second connection resumes the first's session",
             files("rs", 3, 10 * KIB), mode="resume", needs=[("client", "--session-file")]),
        Case("zerortt", "a resumed connection sends its requests in 0-RTT",
             files("zr", 5, 10 * KIB), server=["--0rtt"], mode="zerortt", expect="0-RTT accepted"),
        Case("v2", "QUIC version 2 (RFC 9369)", files("v2", 2, 100 * KIB),
             server=["--quic-versions", "1,2"], client=["--quic-version", "2"]),
        # Another loopback address on the server's port ({port}; RFC 9000 §9.6).
        Case("connectionmigration", "the client moves to the server's preferred address",
             files("cm", 1, MIB), server=["--preferred-address", "127.0.0.2:{port}"]),
        Case("handshakeloss", f"{connections} connections, 1 KiB each, 30 % loss",
             files("hl", connections, KIB), mode="multi", relay=MTU + ["--loss", "30%"], timeout=600, client_opt=PATIENT),
        Case("transferloss", "2+3 MiB, 2 % loss", [("tl1", 2 * MIB), ("tl2", 3 * MIB)],
             relay=MTU + ["--loss", "2%"], timeout=180),
        Case("handshakecorruption", f"{connections} connections, 1 KiB each, 30 % corrupted",
             files("hc", connections, KIB), mode="multi", relay=MTU + ["--corrupt", "30%"], timeout=600, client_opt=PATIENT),
        Case("transfercorruption", "2+3 MiB, 2 % corrupted", [("tc1", 2 * MIB), ("tc2", 3 * MIB)],
             relay=MTU + ["--corrupt", "2%"], timeout=180),
        Case("longrtt", "handshake and 1 MiB over a 1 s RTT", [("lr1", KIB), ("lr2", MIB)],
             relay=MTU + ["--delay", "500ms"], timeout=180),
        Case("blackhole", "3 MiB at 10 Mbit/s, 30 ms RTT, the link dead 2 s of every 3",
             [("bh", 3 * MIB)], relay=MTU + ["--delay", "15ms", "--rate", "10mbit", "--blackhole", "1s/2sx2"],
             timeout=180),
        Case("goodput", "5 MiB at 10 Mbit/s, 30 ms RTT (Mbit/s reported)", [("gp", 5 * MIB)],
             relay=MTU + ["--delay", "15ms", "--rate", "10mbit"], timeout=180, goodput=True),
    ]


def make_www(case, d):
    """Random files for the case (made once; reused by every pair)."""
    os.makedirs(d, exist_ok=True)
    for name, size in case.files:
        p = os.path.join(d, name)
        if not (os.path.exists(p) and os.path.getsize(p) == size):
            with open(p, "wb") as f:
                f.write(os.urandom(size))
    return d
