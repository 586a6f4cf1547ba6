// The kernel's share of a request/response on one CPU, UDP against TCP: a
// 2 KiB request and a 2 KiB answer per round trip over loopback, with no
// QUIC, no TLS and no runtime, each process sleeping in epoll_wait as tokio
// does. Each side prints its user and system CPU per request (getrusage),
// so the difference between UDP and TCP here is what the kernel alone makes
// of the two transports (floors NOTES: persistent 2 KiB per CPU-second).
//
//   cc -O2 -o /tmp/rr-floor scripts/rr-floor.c
//   taskset -c 0 /tmp/rr-floor server udp 200000 & sleep 0.2
//   taskset -c 0 /tmp/rr-floor client udp 200000
//
// PROTO is udp or tcp; SIZE=n sets the message size (default 2048).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

static double cpu(int user) {
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    struct timeval t = user ? u.ru_utime : u.ru_stime;
    return t.tv_sec + t.tv_usec * 1e-6;
}

// Reads exactly `len` bytes (TCP may split), sleeping in epoll when empty.
static int take(int fd, int ep, char *buf, int len, int stream) {
    int got = 0;
    while (got < len) {
        ssize_t r = recv(fd, buf + got, stream ? len - got : len, MSG_DONTWAIT);
        if (r > 0) {
            got += stream ? r : len;
            continue;
        }
        struct epoll_event ev;
        if (epoll_wait(ep, &ev, 1, -1) < 0) return -1;
    }
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: rr-floor server|client udp|tcp N\n");
        return 2;
    }
    int server = !strcmp(argv[1], "server");
    int stream = !strcmp(argv[2], "tcp");
    int n = atoi(argv[3]);
    int size = getenv("SIZE") ? atoi(getenv("SIZE")) : 2048;
    char *buf = calloc(1, size);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(47999)};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int fd = socket(AF_INET, stream ? SOCK_STREAM : SOCK_DGRAM, 0), one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (stream && server) {
        if (bind(fd, (void *)&a, sizeof a) || listen(fd, 1)) return perror("listen"), 1;
        int c = accept(fd, 0, 0);
        close(fd);
        fd = c;
    } else if (stream) {
        if (connect(fd, (void *)&a, sizeof a)) return perror("connect"), 1;
    } else if (server) {
        if (bind(fd, (void *)&a, sizeof a)) return perror("bind"), 1;
    } else {
        struct sockaddr_in me = a;
        me.sin_port = htons(48000);
        if (bind(fd, (void *)&me, sizeof me)) return perror("bind"), 1;
    }
    if (stream) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in peer = a;
    if (!stream && server) {
        // The client's first datagram names it; then both ends are connected.
        socklen_t l = sizeof peer;
        recvfrom(fd, buf, size, 0, (void *)&peer, &l);
        connect(fd, (void *)&peer, l);
        send(fd, buf, size, 0);
    } else if (!stream) {
        connect(fd, (void *)&a, sizeof a);
        send(fd, buf, size, 0);
        recv(fd, buf, size, 0);
    }
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
    double u0 = cpu(1), s0 = cpu(0);
    for (int i = 0; i < n; i++) {
        if (server) {
            if (take(fd, ep, buf, size, stream)) return 1;
            send(fd, buf, size, 0);
        } else {
            send(fd, buf, size, 0);
            if (take(fd, ep, buf, size, stream)) return 1;
        }
    }
    printf("%s %s %d B: user %.2f sys %.2f us per request\n", argv[1], argv[2], size,
           (cpu(1) - u0) * 1e6 / n, (cpu(0) - s0) * 1e6 / n);
    return 0;
}
