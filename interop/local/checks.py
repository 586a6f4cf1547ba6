"""Checks on what `quark relay` saw on the wire (its `relay-report` line), for
the runner cases that need a packet capture. Each returns None when the cell
passes, "ok: NOTE" when it passes with a remark, else why it failed. The relay sees cleartext only: ECN bits, UDP
sizes, addresses and long headers (version, type), not frames."""

import glob
import json
import os

V2_ONLY = ("handshake v2",)


def report(relay_log):
    with open(relay_log, errors="replace") as f:
        for line in f:
            if line.startswith("relay-report "):
                return json.loads(line[len("relay-report "):])
    return None


def _marks(d, who):
    ect = d["ect0"] + d["ect1"]
    if ect == 0:
        return f"{who} marked no datagram ECT(0)/ECT(1) ({d['datagrams']} sent)"
    if d["ce"]:
        return f"{who} sent {d['ce']} CE-marked datagrams (no router marks here)"
    # RFC 9000 §13.4.2.1: a sender whose ACKs come back without ECN counts
    # stops marking, so still marking at the end means the peer's ACK frames
    # carried ECN counts (for a sender that validates, as quark, quinn and
    # quic-go do).
    if d["tail_ect"] * 2 < d["tail_short"]:
        return (f"{who} stopped marking: {d['tail_ect']} of its last {d['tail_short']} "
                "1-RTT datagrams ECT (ECN validation failed: ACKs without ECN counts?)")
    return None


def _ack_ecn(d, who):
    """From a quark endpoint's qlog: whether the ACK frames it received from
    its peer, and those it sent, carried ECN counts."""
    got = sent = 0
    for path in glob.glob(os.path.join(d, "*.sqlog")):
        with open(path, errors="replace") as f:
            for line in f:
                if '"ack"' not in line or '"ect0"' not in line:
                    continue
                try:
                    ev = json.loads(line.strip("\x1e \n"))
                except ValueError:
                    continue
                acks = [fr for fr in ev.get("data", {}).get("frames", [])
                        if fr.get("frame_type") == "ack" and "ect0" in fr]
                if ev.get("name", "").endswith("packet_received"):
                    got += len(acks)
                else:
                    sent += len(acks)
    if not got:
        return f"the {who}'s peer sent no ACK frame with ECN counts (quark {who} qlog)"
    if not sent:
        return f"the quark {who} sent no ACK frame with ECN counts (qlog)"
    return None


def ecn(r, cell, client_log):
    why = _marks(r["client_to_server"], "client") or _marks(r["server_to_client"], "server")
    if why:
        return why
    # The runner looks for ACK frames with ECN counts in its decrypted
    # capture; a quark endpoint's qlog shows those it sent and received.
    for d, who in ((getattr(cell, "qlog_dir", None), "server"),
                   (getattr(cell, "client_qlog", None), "client")):
        if d and (why := _ack_ecn(d, who)):
            return why
    # The quark client's summary says whether its validation succeeded (it
    # needs ECN counts in the server's ACK frames).
    if cell.client.name == "quark" and "ECN capable" not in client_log:
        return "quark client's ECN validation did not succeed (summary lacks 'ECN capable')"
    return None


def amplification(r, cell, client_log):
    a = r["amplification"]
    if not a["validated"]:
        return "the client's Handshake packet never reached the server"
    # Like the runner: past 4x fails, 3x-4x is let slide (timing of what a
    # capture point sees); the detail says so.
    if a.get("worst_excess4", a["worst_excess"]) > 0:
        return (f"server sent {a['worst_excess4']} bytes over 4x before validation "
                f"({a['server_bytes']} for {a['client_bytes']} received)")
    if a["server_bytes"] < 2 * 1200:
        return f"server sent only {a['server_bytes']} bytes before validation (chain not used?)"
    if a["worst_excess"] > 0:
        return (f"ok: {a['worst_excess']} bytes over 3x, within the runner's 4x "
                f"({a['server_bytes']} for {a['client_bytes']})")
    return f"ok: {a['server_bytes']} for {a['client_bytes']} bytes before validation"


def ipv6(r, cell, client_log):
    up, down = r["client_to_server"], r["server_to_client"]
    if not up["datagrams"] or not down["datagrams"]:
        return "no datagrams crossed the IPv6 relay"
    return None


def _versions(d):
    return {k for k in d["long"]}


def v2(r, cell, client_log):
    up, down = _versions(r["client_to_server"]), _versions(r["server_to_client"])
    if "initial v1" not in up:
        return f"client did not start in v1 (its long headers: {sorted(up)})"
    if "initial v2" not in down:
        return f"server Initial not v2 (its long headers: {sorted(down)})"
    for who, seen in (("client", up), ("server", down)):
        hs = {k for k in seen if k.startswith("handshake ")}
        if hs != {"handshake v2"}:
            return f"{who} Handshake packets {sorted(hs)}, want only v2"
    return None


def _paths(r):
    paths = r["paths"]
    if len(paths) < 2:
        return None, f"the relay made {len(paths)} path(s); the transfer ended before a rebinding?"
    # The NAT forgot the old mapping: each new path works only if the server
    # sent there (it validates the new path, RFC 9000 §9.3).
    silent = [p["local"] for p in paths[1:] if p["to_server"] and not p["from_server"]]
    if silent:
        return None, f"the server never answered on the new path(s) {silent}"
    return paths, None


def _qlog_frames(d, kind):
    """Data of the `kind` frames (path_challenge, path_response) in the
    packet_sent and packet_received events of the qlog files in `d`."""
    sent, received = [], []
    for path in glob.glob(os.path.join(d, "*.sqlog")):
        with open(path, errors="replace") as f:
            for line in f:
                line = line.strip("\x1e \n")
                if kind not in line:
                    continue
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue
                name = ev.get("name", "")
                for fr in ev.get("data", {}).get("frames", []):
                    if fr.get("frame_type") == kind:
                        (sent if name.endswith("packet_sent") else received).append(fr.get("data"))
    return sent, received


def _challenges(paths, cell):
    """With a quark server's qlog: every rebinding the server saw (a new path
    with client datagrams) got a PATH_CHALLENGE that was answered (the
    runner's check, from the server's side). Unanswered ones are allowed:
    quark also challenges the old path (RFC 9000 §9.3.3), where the NAT no
    longer answers."""
    d = getattr(cell, "qlog_dir", None)
    if not d:
        return None
    challenges, _ = _qlog_frames(d, "path_challenge")
    _, responses = _qlog_frames(d, "path_response")
    # A path the transfer ended on right after a rebinding may not have had
    # its challenge answered yet: count those the server sent plenty on.
    rebinds = sum(1 for p in paths[1:] if p["to_server"] and p["from_server"] >= 10)
    answered = sum(1 for c in challenges if c in responses)
    if answered < rebinds:
        return (f"{answered} answered PATH_CHALLENGE ({len(challenges)} sent) for "
                f"{rebinds} rebindings (server qlog)")
    return None


def rebind(r, cell, client_log):
    paths, why = _paths(r)
    return why or _challenges(paths, cell)


def rebind_addr(r, cell, client_log):
    paths, why = _paths(r)
    if why:
        return why
    ips = {p["local"].rpartition(":")[0] for p in paths}
    if len(ips) < 2:
        return f"only one client address used: {ips}"
    return _challenges(paths, cell)


def migration(r, cell, client_log):
    # The client reached the server through the relay only; the preferred
    # address (127.0.0.2, the server's port) bypasses it. If less than the
    # file crossed the relay, the client moved.
    size = sum(s for _, s in cell.case.files)
    down = r["server_to_client"]["bytes"]
    if down >= size:
        return f"all {down} bytes came over the first path: the client did not migrate"
    return None


def keyupdate(r, cell, client_log):
    """The client's key update (no relay: nothing of it is in clear). A
    quark server's qlog must show a key update its peer started; a quark
    client must count one. Between two other stacks nothing here can see
    it: the cell passes with a note."""
    seen = []
    d = getattr(cell, "qlog_dir", None)
    if d:
        updates = 0
        for path in glob.glob(os.path.join(d, "*.sqlog")):
            with open(path, errors="replace") as f:
                updates += sum(1 for line in f if "key_updated" in line and '"remote_update"' in line)
        if updates == 0:
            return "the quark server's qlog shows no key update by the client"
        seen.append("server qlog")
    if cell.client.name == "quark":
        if "key update" not in client_log:
            return "the quark client reports no key update"
        seen.append("client summary")
    if not seen:
        return "ok: key update not verified (neither side is quark)"
    return None
