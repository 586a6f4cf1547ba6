// A UDP ping-pong on loopback with no QUIC, no TLS and no runtime: the floor
// under every request/response figure of `quark bench -s persistent`.
//
//   cc -O2 -o /tmp/pingpong scripts/pingpong.c
//   taskset -c 0 /tmp/pingpong server epoll 100000 & sleep 0.2
//   taskset -c 0 /tmp/pingpong client epoll 100000      # same CPU; -c 1: two CPUs
//
// MODE: block (blocking recv), epoll (non-blocking recv, epoll_wait when
// empty, as tokio does) or spin (non-blocking recv in a loop).
// TMO=ms sets epoll_wait's timeout (default none): a timeout that ends before
// the scheduler's next tick makes the kernel reprogram the CPU's timer for
// each sleep (BENCHMARKS.md, "Sleeps that reprogram the timer").
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: pingpong server|client block|epoll|spin ROUND_TRIPS\n");
        return 2;
    }
    int server = !strcmp(argv[1], "server");
    const char *mode = argv[2];
    int n = atoi(argv[3]);
    int timeout = getenv("TMO") ? atoi(getenv("TMO")) : -1;
    int fd = socket(AF_INET, SOCK_DGRAM, 0);
    struct sockaddr_in me = {.sin_family = AF_INET, .sin_port = htons(server ? 47400 : 47401)};
    me.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    struct sockaddr_in peer = me;
    peer.sin_port = htons(server ? 47401 : 47400);
    if (bind(fd, (void *)&me, sizeof me) || connect(fd, (void *)&peer, sizeof peer)) {
        perror("socket");
        return 1;
    }
    if (strcmp(mode, "block"))
        fcntl(fd, F_SETFL, O_NONBLOCK);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    char buf[4096];
    memset(buf, 7, sizeof buf);
    double *lat = calloc(n + 1, sizeof(double)), last = 0, t0 = 0;
    for (int i = 0; i <= n; i++) {
        if (!server) {
            double t = now();
            if (i > 0)
                lat[i - 1] = t - last;
            last = t;
            if (i == 0)
                t0 = t;
            if (i == n)
                break;
            send(fd, buf, 2048, 0);
        }
        while (recv(fd, buf, sizeof buf, 0) <= 0)
            if (!strcmp(mode, "epoll")) {
                struct epoll_event e;
                epoll_wait(ep, &e, 1, timeout);
            }
        if (server) {
            send(fd, buf, 2048, 0);
            if (i == n - 1)
                break;
        }
    }
    if (!server) {
        qsort(lat, n, sizeof(double), cmp);
        printf("%s: %.1f us per round trip; p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f\n", mode,
               (now() - t0) / n * 1e6, lat[n / 2] * 1e6, lat[n * 9 / 10] * 1e6,
               lat[n * 99 / 100] * 1e6, lat[n * 999 / 1000] * 1e6);
    }
    return 0;
}
