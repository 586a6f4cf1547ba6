/* quark-get: fetch one file over hq-interop (HTTP/0.9 over QUIC) with libquark.
 *
 *   quark-get https://127.0.0.1:4433/file out.bin --insecure
 *   quark-get https://localhost:4433/file out.bin --ca cert.pem
 *   quark-get https://127.0.0.1:4433/file out.bin --insecure --cipher chacha20
 *
 * One bidirectional stream: "GET /path\r\n", FIN, then the body until the
 * server's FIN. Exit status 0 only when the whole body was written. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quark.h"

static int fail(const char *what, int64_t code) {
    fprintf(stderr, "quark-get: %s: %s\n", what, quark_strerror((int32_t)code));
    return 1;
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: quark-get https://HOST:PORT/PATH OUT [--insecure | --ca FILE] [--cipher LIST]\n");
        return 2;
    }
    const char *url = argv[1], *out_path = argv[2], *ca = NULL, *ciphers = NULL;
    int insecure = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "--insecure") == 0) insecure = 1;
        else if (strcmp(argv[i], "--ca") == 0 && i + 1 < argc) ca = argv[++i];
        else if (strcmp(argv[i], "--cipher") == 0 && i + 1 < argc) ciphers = argv[++i];
        else { fprintf(stderr, "quark-get: unknown argument %s\n", argv[i]); return 2; }
    }

    /* https://HOST:PORT/PATH -> "HOST:PORT" (for the resolver), HOST (for the
     * certificate) and /PATH. */
    const char *rest = strncmp(url, "https://", 8) == 0 ? url + 8 : url;
    const char *slash = strchr(rest, '/');
    const char *path = slash ? slash : "/";
    size_t authority_len = slash ? (size_t)(slash - rest) : strlen(rest);
    char authority[512], host[512], request[2048];
    if (authority_len == 0 || authority_len >= sizeof authority) return fail("url", QUARK_ERROR_INVAL);
    memcpy(authority, rest, authority_len);
    authority[authority_len] = '\0';
    strcpy(host, authority);
    char *colon = strrchr(host, ':');
    if (host[0] == '[') { /* [v6]:port */
        char *close = strchr(host, ']');
        if (!close) return fail("url", QUARK_ERROR_INVAL);
        *close = '\0';
        memmove(host, host + 1, strlen(host));
    } else if (colon) {
        *colon = '\0';
    }
    if (!colon) { /* no port given: 443 */
        if (authority_len + 4 >= sizeof authority) return fail("url", QUARK_ERROR_INVAL);
        strcat(authority, ":443");
    }
    if (snprintf(request, sizeof request, "GET %s\r\n", path) >= (int)sizeof request)
        return fail("url", QUARK_ERROR_INVAL);

    int64_t conn = quark_connect_with(authority, host, "hq-interop", insecure, ca, ciphers);
    if (conn < 0) return fail("connect", conn);
    int64_t stream = quark_stream_open(conn);
    if (stream < 0) return fail("stream", stream);
    int64_t n = quark_stream_write(stream, (const uint8_t *)request, strlen(request));
    if (n < 0) return fail("write", n);
    int32_t rc = quark_stream_shutdown(stream);
    if (rc < 0) return fail("shutdown", rc);

    FILE *out = fopen(out_path, "wb");
    if (!out) { perror(out_path); return 1; }
    static uint8_t buf[64 * 1024];
    uint64_t total = 0;
    while ((n = quark_stream_read(stream, buf, sizeof buf)) > 0) {
        if (fwrite(buf, 1, (size_t)n, out) != (size_t)n) { perror(out_path); return 1; }
        total += (uint64_t)n;
    }
    if (fclose(out) != 0) { perror(out_path); return 1; }
    if (n < 0) return fail("read", n);
    fprintf(stderr, "quark-get: %llu bytes to %s\n", (unsigned long long)total, out_path);

    quark_close(stream);
    quark_close(conn);
    return 0;
}
