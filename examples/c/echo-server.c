/* echo-server: every bidirectional stream gets back what was sent on it.
 *
 *   echo-server 127.0.0.1:4433 cert.pem key.pem [CONNECTIONS]
 *
 * ALPN "quark-echo". Prints "listening on PORT" once bound (port 0 picks
 * one), serves connections one after another, each stream to its FIN, and
 * exits after CONNECTIONS connections (default: never). */
#include <stdio.h>
#include <stdlib.h>

#include "quark.h"

static int fail(const char *what, int64_t code) {
    fprintf(stderr, "echo-server: %s: %s\n", what, quark_strerror((int32_t)code));
    return 1;
}

/* Echo one stream: read to the peer's FIN, writing each piece back. */
static int64_t echo(int64_t stream) {
    static uint8_t buf[64 * 1024];
    int64_t n, total = 0;
    while ((n = quark_stream_read(stream, buf, sizeof buf)) > 0) {
        int64_t w = quark_stream_write(stream, buf, (size_t)n);
        if (w < 0) return w;
        total += n;
    }
    if (n < 0) return n;
    int32_t rc = quark_stream_shutdown(stream);
    return rc < 0 ? rc : total;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: echo-server ADDR CERT_PEM KEY_PEM [CONNECTIONS]\n");
        return 2;
    }
    long connections = argc > 4 ? atol(argv[4]) : -1;
    int64_t endpoint = quark_listen(argv[1], argv[2], argv[3], "quark-echo");
    if (endpoint < 0) return fail("listen", endpoint);
    printf("listening on %d\n", quark_local_port(endpoint));
    fflush(stdout);

    for (long served = 0; connections < 0 || served < connections; served++) {
        int64_t conn = quark_accept(endpoint);
        if (conn < 0) return fail("accept", conn);
        int64_t stream;
        /* Until the client closes the connection. */
        while ((stream = quark_stream_accept(conn)) >= 0) {
            int64_t n = echo(stream);
            if (n < 0) fail("echo", n);
            else fprintf(stderr, "echo-server: echoed %lld bytes\n", (long long)n);
            quark_close(stream);
        }
        quark_close(conn);
    }
    quark_close(endpoint);
    return 0;
}
