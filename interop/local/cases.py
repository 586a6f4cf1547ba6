"""The interop runner's test cases (quic-interop-runner testcases.py), as
this machine can play them: files to serve, flags per role, how the client
connects, and the emulated link (`quark relay` arguments) if impaired."""

import os

KIB, MIB = 1024, 1024 * 1024
QUICK = ["handshake", "transfer", "chacha20", "retry", "multiconnect", "transferloss",
         "ecn", "amplificationlimit", "ipv6", "rebind-port", "resumption", "zerortt"]


class Case:
    def __init__(self, name, about, files, server=(), client=(), needs=(), mode="one",
                 relay=None, timeout=60, unplayable=None, goodput=False, expect=None,
                 client_opt=(), check=None, host="127.0.0.1", chain=False):
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
        self.expect = expect  # text the client must print
        self.client_opt = list(client_opt)  # client flags used only where known
        self.check = check  # name of a checks.py function run on the relay's report
        self.host = host  # address of every socket (ipv6: ::1)
        self.chain = chain  # serve a 9-certificate chain (amplificationlimit)


# The runner's simulated links have a 1500-byte MTU (IPv4: 1472 bytes of UDP
# payload); loopback's is 64 KiB, so the relay enforces it.
MTU = ["--mtu", "1472"]
# Under 30 % loss a handshake can need several backed-off PTOs.
PATIENT = ["--connect-timeout", "60"]
# The runner's default link (10 Mbit/s, 30 ms RTT), for the rebinding cases.
LINK = MTU + ["--delay", "15ms", "--rate", "10mbit"]


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
             client=["--key-update"], check="keyupdate"),
        # The relay reads and forwards every datagram's ECN bits (checks.ecn).
        Case("ecn", "both sides mark ECT; ACKs carry ECN counts", [("ecn", MIB)],
             relay=[], check="ecn"),
        # The runner's droplist: the ClientHello passes, the client's next six
        # datagrams are dropped, so the server waits at its 3x limit.
        Case("amplificationlimit", "9-certificate chain; the server sends <= 3x before validation",
             files("al", 1, 5 * KIB), relay=["--delay", "15ms", "--drop-to-server", "2,3,4,5,6,7"],
             chain=True, check="amplification"),
        Case("ipv6", "5 + 10 KiB, every socket on ::1", [("i6a", 5 * KIB), ("i6b", 10 * KIB)],
             relay=[], host="::1", check="ipv6"),
        Case("rebind-port", "5 MiB; the relay moves the client's port at 1 s, then every 2 s",
             [("bp", 5 * MIB)], relay=LINK + ["--rebind", "1s/2s"], timeout=120, check="rebind"),
        Case("rebind-addr", "5 MiB; the client's address and port move at 1 s, then every 2 s",
             [("ba", 5 * MIB)], relay=LINK + ["--rebind", "1s/2s", "--rebind-addr"], timeout=120,
             check="rebind_addr"),
        Case("multiconnect", "10 files, one connection each", files("mc", 10, KIB), mode="multi"),
        Case("resumption", "a second connection resumes the first's session",
             files("rs", 3, 10 * KIB), mode="resume", expect="resumed"),
        Case("zerortt", "a resumed connection sends its requests in 0-RTT",
             files("zr", 5, 10 * KIB), server=["--0rtt"], mode="zerortt", expect="0-RTT accepted"),
        # The client starts in v1 and the server, preferring v2, moves it there
        # (compatible version negotiation, RFC 9368); the relay reads the
        # versions of the long headers (checks.v2).
        Case("v2", "client starts in v1, the server upgrades to v2 (RFC 9368)", files("v2", 2, 100 * KIB),
             server=["--quic-versions", "2,1"], relay=[], check="v2"),
        # Another loopback address on the server's port ({port}; RFC 9000 §9.6),
        # reached directly: what crosses the relay (the first path) is checked.
        Case("connectionmigration", "the client moves to the server's preferred address",
             files("cm", 1, 2 * MIB), server=["--preferred-address", "127.0.0.2:{port}"],
             relay=[], check="migration"),
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
