"""The results as a text table and a Markdown table (cases x client:server
pairs), and the reasons behind every `-` and failed cell."""

SHORT = {"quark": "qk", "quinn": "qn", "aioquic": "ai", "quic-go": "go"}


def label(client, server):
    return f"{SHORT.get(client, client)}>{SHORT.get(server, server)}"


def text(names, pairs, results):
    labels = [label(c, s) for c, s in pairs]
    w = max(len(n) for n in names)
    lines = ["client>server: qk quark, qn quinn, ai aioquic, go quic-go",
             " " * w + "  " + " ".join(f"{x:>5}" for x in labels)]
    for n in names:
        cells = [results[(n, c, s)].mark for c, s in pairs]
        lines.append(f"{n:<{w}}  " + " ".join(f"{x:>5}" for x in cells))
    return "\n".join(lines)


def markdown(names, pairs, results):
    head = "| case | " + " | ".join(f"{c} → {s}" for c, s in pairs) + " |"
    lines = [head, "|---" * (len(pairs) + 1) + "|"]
    marks = {"ok": "✓", "FAIL": "✗", "-": "-"}
    for n in names:
        cells = [marks[results[(n, c, s)].mark] for c, s in pairs]
        lines.append(f"| {n} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def notes(names, pairs, results):
    """One line per (case, outcome, reason) with the pairs it applies to."""
    groups = {}
    for n in names:
        for c, s in pairs:
            r = results[(n, c, s)]
            if r.ok and not (r.detail.endswith("Mbit/s") or "over 3x" in r.detail):
                continue
            key = (n, r.mark, r.detail if not r.played or r.ok else "")
            groups.setdefault(key, []).append((c, s, r.detail))
    lines = []
    for (n, mark, why), cells in groups.items():
        if why:
            who = ", ".join(f"{c} → {s}" for c, s, _ in cells)
            lines.append(f"- {n} {mark}: {why} ({who})")
        else:
            for c, s, detail in cells:
                lines.append(f"- {n} {mark} {c} → {s}: {detail}")
    return "\n".join(lines)
