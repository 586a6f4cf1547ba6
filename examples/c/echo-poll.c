/* echo-poll: the echo server as one non-blocking event loop on poll(2).
 *
 *   echo-poll 127.0.0.1:4433 cert.pem key.pem [CONNECTIONS [driven]]
 *
 * Like echo-server (ALPN "quark-echo", every bidirectional stream gets back
 * what was sent on it), but serves many connections and streams at once from
 * one thread: every handle is non-blocking, and when nothing can advance the
 * loop sleeps in poll() on quark_ready_fd() until quark_ready() lists a
 * handle that can. Exits after CONNECTIONS connections have ended (default:
 * never; -1 for never when giving "driven").
 *
 * With "driven" the endpoint is caller-driven (QUARK_FLAG_CALLER_DRIVEN):
 * no library thread, this loop runs quark itself. Each turn starts with
 * quark_process(endpoint, 0), which sends what the last turn's calls wrote
 * and takes in what arrived; when nothing can advance, quark_process(
 * endpoint, -1) sleeps until a datagram or a timer instead of poll(). */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "quark.h"

#define MAX_CONNS 64
#define MAX_STREAMS 256

struct stream {
    int64_t handle; /* 0: free slot */
    uint8_t buf[16 * 1024];
    size_t len, off; /* bytes read and not yet written back: buf[off..len) */
};

static int64_t conns[MAX_CONNS];
static struct stream streams[MAX_STREAMS];

static void check(const char *what, int64_t code) {
    if (code < 0 && code != QUARK_ERROR_AGAIN) {
        fprintf(stderr, "echo-poll: %s: %s\n", what, quark_strerror((int32_t)code));
        exit(1);
    }
}

static void add_stream(int64_t h) {
    for (int i = 0; i < MAX_STREAMS; i++)
        if (streams[i].handle == 0) {
            streams[i].handle = h;
            streams[i].len = streams[i].off = 0;
            return;
        }
    quark_close(h); /* full: refuse it */
}

/* Advance one stream as far as it goes; returns whether anything happened. */
static int serve(struct stream *s) {
    int progress = 0;
    for (;;) {
        if (s->off < s->len) {
            int64_t w = quark_stream_write(s->handle, s->buf + s->off, s->len - s->off);
            check("write", w);
            if (w == QUARK_ERROR_AGAIN) return progress;
            s->off += (size_t)w;
            progress = 1;
            continue;
        }
        int64_t n = quark_stream_read(s->handle, s->buf, sizeof s->buf);
        check("read", n);
        if (n == QUARK_ERROR_AGAIN) return progress;
        if (n == 0) { /* the peer's FIN: end ours, free the slot */
            check("shutdown", quark_stream_shutdown(s->handle));
            quark_close(s->handle);
            s->handle = 0;
            return 1;
        }
        s->len = (size_t)n;
        s->off = 0;
        progress = 1;
    }
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: echo-poll ADDR CERT_PEM KEY_PEM [CONNECTIONS [driven]]\n");
        return 2;
    }
    long want = argc > 4 ? atol(argv[4]) : -1, ended = 0, wakeups = 0;
    int driven = argc > 5 && strcmp(argv[5], "driven") == 0;
    /* QUARK_FLAG_NONBLOCKING: the endpoint and every connection and stream
     * it makes start non-blocking (no quark_set_nonblocking per handle). */
    uint32_t flags = QUARK_FLAG_NONBLOCKING | (driven ? QUARK_FLAG_CALLER_DRIVEN : 0);
    int64_t endpoint = quark_listen_flags(argv[1], argv[2], argv[3], "quark-echo", flags);
    check("listen", endpoint);
    struct pollfd pfd = {.fd = quark_ready_fd(endpoint), .events = POLLIN};
    check("ready fd", pfd.fd);
    printf("listening on %d\n", quark_local_port(endpoint));
    fflush(stdout);

    while (want < 0 || ended < want) {
        int progress = 0;
        if (driven) { /* run the endpoint: send, receive, timers */
            int64_t more = quark_process(endpoint, 0);
            check("process", more);
            progress = more > 0;
        }
        int64_t h = quark_accept(endpoint);
        check("accept", h);
        if (h > 0) {
            progress = 1;
            int i = 0;
            while (i < MAX_CONNS && conns[i] != 0) i++;
            if (i == MAX_CONNS) {
                quark_close(h);
            } else {
                conns[i] = h;
            }
        }
        for (int i = 0; i < MAX_CONNS; i++) {
            if (conns[i] == 0) continue;
            int64_t s = quark_stream_accept(conns[i]);
            if (s == QUARK_ERROR_CLOSED) { /* the client closed the connection */
                /* No wait in the loop: the endpoint lingers for it. */
                quark_close_nowait(conns[i]);
                conns[i] = 0;
                ended++;
                progress = 1;
            } else if (s > 0) {
                add_stream(s);
                progress = 1;
            } else {
                check("stream accept", s);
            }
        }
        for (int i = 0; i < MAX_STREAMS; i++)
            if (streams[i].handle != 0) progress |= serve(&streams[i]);
        if (progress) continue;
        /* Nothing can advance: sleep until a handle is ready. This loop
         * retries every handle, so the list itself is only drained. */
        int64_t ready[64], n = 0;
        if (driven) /* sleep, run the endpoint, take the ready list: one call */
            check("process", n = quark_process_ready(endpoint, -1, ready, 64, NULL));
        else if (poll(&pfd, 1, -1) < 0)
            return 1;
        if (!driven || n == 64)
            while (quark_ready(endpoint, ready, 64) == 64) {}
        wakeups++;
    }
    fprintf(stderr, "echo-poll: %ld connections, %ld wake-ups\n", ended, wakeups);
    quark_close(endpoint);
    return 0;
}
