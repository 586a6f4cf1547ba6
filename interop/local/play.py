"""Plays one cell: a server, optionally `quark relay` in front of it, the
client (once, once per URL, or twice for resumption), then compares every
download byte for byte with the served file and, for the cases that look at
the wire, checks what the relay saw (checks.py)."""

import filecmp
import os
import shutil
import socket
import subprocess
import time

import checks


class Result:
    def __init__(self, played, ok, detail):
        self.played = played
        self.ok = ok
        self.detail = detail

    @property
    def mark(self):
        if not self.played:
            return "-"
        return "ok" if self.ok else "FAIL"


class Cell:
    def __init__(self, case, client, server, www, certs, d, env):
        self.case = case
        self.client = client
        self.server = server
        self.www = www
        self.certs = certs
        self.dir = d
        self.env = env


def free_port(host="127.0.0.1"):
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def addr(host, port):
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def why_not(cell):
    """The reason this pair cannot play the case, or None."""
    case = cell.case
    if case.unplayable:
        return case.unplayable
    for peer in (cell.client, cell.server):
        if peer.missing:
            return f"{peer.name} not installed: {peer.missing}"
    if case.relay is not None and cell.env.peer("quark").missing:
        return "needs quark relay: " + cell.env.peer("quark").missing
    needs = [("server", f) for f in case.server if f.startswith("--")]
    needs += [("client", f) for f in case.client if f.startswith("--")]
    needs += case.needs
    if case.mode == "resume" and not cell.client.knows("client", "--session-file"):
        needs.append(("client", "--resume"))
    if case.mode == "zerortt" and not (cell.client.knows("client", "--session-file")
                                       or cell.client.knows("client", "--0rtt")):
        needs.append(("client", "--0rtt"))
    for role, flag in needs:
        peer = cell.server if role == "server" else cell.client
        if not peer.knows(role, flag):
            return f"{peer.name} {role} has no {flag}"
    return None


def wait_ready(proc, log, text, timeout):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if proc.poll() is not None:
            return False
        with open(log, errors="replace") as f:
            if text in f.read():
                return True
        time.sleep(0.05)
    return False


def stop(proc):
    if proc and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def client_runs(cell, urls, out):
    """The client command lines, run one after the other."""
    case, c = cell.case, cell.client
    base = c.client + ["-o", out, "--ca", os.path.join(cell.certs, "ca.pem")] + case.client
    if case.check == "ecn" and c.name == "quark" and c.knows("client", "--qlog-dir"):
        cell.client_qlog = os.path.join(cell.dir, "qlog-client")
        base += ["--qlog-dir", cell.client_qlog]
    for flag, value in zip(case.client_opt[::2], case.client_opt[1::2]):
        if c.knows("client", flag):
            base += [flag, value + c.seconds]
    if case.mode == "multi":
        return [base + [u] for u in urls]
    if case.mode in ("resume", "zerortt"):
        # The first file on one connection, the rest on a second resuming
        # its session: across two processes through a file, or in one
        # (`--resume`); a zerortt client without either primes a connection
        # of its own (`--0rtt`).
        early = ["--0rtt"] if case.mode == "zerortt" and c.knows("client", "--0rtt") else []
        if c.knows("client", "--session-file"):
            session = os.path.join(cell.dir, "session")
            return [base + ["--session-file", session, urls[0]],
                    base + ["--session-file", session] + early + urls[1:]]
        if c.knows("client", "--resume"):
            return [base + ["--resume"] + early + urls]
        return [base + ["--0rtt"] + urls]
    return [base + urls]


def play(cell):
    reason = why_not(cell)
    if reason:
        return Result(False, False, reason)
    shutil.rmtree(cell.dir, ignore_errors=True)
    out = os.path.join(cell.dir, "downloads")
    os.makedirs(out)
    case = cell.case
    host = case.host
    sport = free_port(host)
    s = cell.server
    slog = os.path.join(cell.dir, "server.log")
    rlog = os.path.join(cell.dir, "relay.log")
    server = relay = None
    # A quark server's qlog shows the frames the relay cannot see (the
    # rebind cases' PATH_CHALLENGE / PATH_RESPONSE).
    qlog = []
    cell.qlog_dir = cell.client_qlog = None
    if (case.check in ("rebind", "rebind_addr", "ecn", "keyupdate") and s.name == "quark"
            and s.knows("server", "--qlog-dir")):
        cell.qlog_dir = os.path.join(cell.dir, "qlog-server")
        qlog = ["--qlog-dir", cell.qlog_dir]
    try:
        with open(slog, "w") as f:
            server = subprocess.Popen(
                s.server + qlog + ["--listen", addr(host, sport), "--root", cell.www,
                            "--cert", os.path.join(cell.certs, "cert.pem"),
                            "--key", os.path.join(cell.certs, "priv.key")]
                + [f.replace("{port}", str(sport)) for f in case.server],
                stdout=f, stderr=subprocess.STDOUT)
        if not wait_ready(server, slog, s.ready, 30):
            return Result(True, False, f"server did not start (logs: {cell.dir})")
        port = sport
        if case.relay is not None:
            port = free_port(host)
            with open(rlog, "w") as f:
                relay = subprocess.Popen(
                    [cell.env.quark_bin(), "relay", "--listen", addr(host, port),
                     "--to", addr(host, sport)] + case.relay,
                    stdout=f, stderr=subprocess.STDOUT)
            if not wait_ready(relay, rlog, "relaying", 30):
                return Result(True, False, f"relay did not start (logs: {cell.dir})")
        name = "localhost" if host == "127.0.0.1" else addr(host, "")[:-1]
        urls = [f"https://{name}:{port}/{f}" for f, _ in case.files]
        res = run_clients(cell, urls, out)
        if not (res.ok and case.check):
            return res
        r = None
        if relay is not None:
            # The relay prints its report when it stops.
            stop(relay)
            r = checks.report(rlog)
            if r is None:
                return Result(True, False, f"relay printed no report (logs: {cell.dir})")
        with open(os.path.join(cell.dir, "client.log"), errors="replace") as f:
            why = getattr(checks, case.check)(r, cell, f.read())
        if why and why.startswith("ok: "):
            return Result(True, True, f"{res.detail}, {why[4:]}")
        if why:
            return Result(True, False, f"{why} (logs: {cell.dir})")
        return res
    finally:
        stop(relay)
        stop(server)


def run_clients(cell, urls, out):
    case = cell.case
    clog = os.path.join(cell.dir, "client.log")
    deadline = time.monotonic() + case.timeout
    started = time.monotonic()
    with open(clog, "w") as f:
        for argv in client_runs(cell, urls, out):
            f.write("$ " + " ".join(argv) + "\n")
            f.flush()
            left = deadline - time.monotonic()
            try:
                rc = subprocess.run(argv, stdout=f, stderr=subprocess.STDOUT,
                                    timeout=max(left, 1)).returncode
            except subprocess.TimeoutExpired:
                return Result(True, False, f"timeout after {case.timeout} s (logs: {cell.dir})")
            if rc != 0:
                return Result(True, False, f"client exited {rc} (logs: {cell.dir})")
    took = time.monotonic() - started
    for name, _ in case.files:
        got = os.path.join(out, name)
        if not os.path.exists(got):
            return Result(True, False, f"{name} not downloaded (logs: {cell.dir})")
        if not filecmp.cmp(got, os.path.join(cell.www, name), shallow=False):
            return Result(True, False, f"{name} differs from the served file (logs: {cell.dir})")
    if case.expect:
        with open(clog, errors="replace") as f:
            if case.expect not in f.read():
                return Result(True, False, f"client log lacks '{case.expect}' (logs: {cell.dir})")
    detail = f"{took:.1f} s"
    if case.goodput:
        total = sum(size for _, size in case.files)
        detail += f", {total * 8 / took / 1e6:.1f} Mbit/s"
    return Result(True, True, detail)
