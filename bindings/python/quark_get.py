#!/usr/bin/env python3
"""quark_get.py HOST:PORT /PATH OUT [--insecure | --ca FILE]: an hq-interop
download through libquark, the Python twin of examples/c/quark-get.c."""
import sys

import quark


def main(argv):
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    addr, path, out = argv[1:4]
    insecure = "--insecure" in argv[4:]
    ca = argv[argv.index("--ca") + 1] if "--ca" in argv[4:] else None
    host = addr.rsplit(":", 1)[0].strip("[]")
    with quark.connect(addr, host, "hq-interop", insecure, ca) as conn:
        with conn.open_stream() as stream:
            stream.write(f"GET {path}\r\n".encode())
            stream.shutdown()
            total = 0
            with open(out, "wb") as f:
                while piece := stream.read():
                    f.write(piece)
                    total += len(piece)
    print(f"quark_get.py: {total} bytes to {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except quark.QuarkError as e:
        print(f"quark_get.py: {e}", file=sys.stderr)
        sys.exit(1)
