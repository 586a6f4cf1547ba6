// The kernel's UDP cost per GB at QUIC's datagram sizes (issue #30: the bulk
// floor). The sender sends SEG-byte datagrams in GSO buffers of up to 64
// segments and ~64 KB (one datagram per send when SEG is above 32 KB); the
// receiver reads with UDP_GRO into 64 KB buffers, as quark-udp does. Each
// side prints its CPU per GB (getrusage user + sys, counted from its first
// datagram); nothing is encrypted or checked, so this is what any UDP
// protocol pays the kernel to move the bytes.
//
//   cc -O2 -o /tmp/udpfloor scripts/udp-floor-probe.c
//   /tmp/udpfloor recv 9999 [RING] & sleep 0.3; /tmp/udpfloor send 127.0.0.1 9999 2000 1452 [RING]
//   (over the lab's veth: `ip netns exec NS-a` / `NS-b` around each side)
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
static void usage(double *u, double *s) {
  struct rusage r; getrusage(RUSAGE_SELF, &r);
  *u = r.ru_utime.tv_sec + r.ru_utime.tv_usec / 1e6;
  *s = r.ru_stime.tv_sec + r.ru_stime.tv_usec / 1e6;
}
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static void report(const char *who, long bytes, long calls, double u0, double s0, double t0) {
  double u1, s1; usage(&u1, &s1);
  double gb = bytes / 1e9;
  printf("%s %.0f MB in %ld calls (%.0f B/call), %.2f s: CPU %.3f s/GB (user %.3f, sys %.3f)\n",
         who, bytes / 1e6, calls, calls ? (double)bytes / calls : 0, now() - t0,
         (u1 - u0 + s1 - s0) / gb, (u1 - u0) / gb, (s1 - s0) / gb);
}
int main(int argc, char **argv) {
  if (argc < 3) { fprintf(stderr, "recv PORT [RING] | send HOST PORT MB SEG [RING]\n"); return 2; }
  int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1, buf = 8 << 20;
  if (!strcmp(argv[1], "recv")) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    struct sockaddr_in a = {AF_INET, htons(atoi(argv[2])), {0}};
    if (bind(fd, (void *)&a, sizeof a)) { perror("bind"); return 1; }
    setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
    // RING 64 KB buffers read in turn (quark's driver offers 16 per recvmmsg):
    // more than fits the cache makes the kernel's copy write to cold memory.
    int ring = argc > 3 ? atoi(argv[3]) : 1; if (ring < 1) ring = 1;
    char *b = malloc((size_t)ring << 16), ctrl[64]; long tot = 0, calls = 0;
    memset(b, 0, (size_t)ring << 16);
    struct iovec iov = {b, 65536};
    struct msghdr m = {0}; m.msg_iov = &iov; m.msg_iovlen = 1;
    double u0 = 0, s0 = 0, t0 = 0;
    for (;;) {
      iov.iov_base = b + ((size_t)(calls % ring) << 16);
      m.msg_control = ctrl; m.msg_controllen = sizeof ctrl;
      ssize_t n = recvmsg(fd, &m, 0);
      if (n < 0) break;
      if (calls++ == 0) {  // count from the first datagram; then stop 1 s after the last
        usage(&u0, &s0); t0 = now();
        struct timeval tv = {1, 0}; setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
      }
      tot += n;
    }
    report("recv", tot, calls, u0, s0, t0 + 1.0);
    return 0;
  }
  struct sockaddr_in a = {AF_INET, htons(atoi(argv[3])), {0}};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  long mb = atol(argv[4]); int seg = atoi(argv[5]);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
  connect(fd, (void *)&a, sizeof a);
  int segs = 65000 / seg; if (segs > 64) segs = 64; if (segs < 1) segs = 1;
  if (segs > 1 && setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg)) { perror("UDP_SEGMENT"); return 1; }
  int nbuf = argc > 6 ? atoi(argv[6]) : 16; if (nbuf < 1) nbuf = 1;  // send buffers used in turn
  size_t len = (size_t)segs * seg; char *ring = malloc(nbuf * len); memset(ring, 7, nbuf * len);
  long calls = mb * 1000000 / len, sent = 0;
  double u0, s0; usage(&u0, &s0); double t0 = now();
  for (long i = 0; i < calls; i++) {
    ssize_t n = send(fd, ring + (i % nbuf) * len, len, 0);
    if (n < 0) { if (errno == ENOBUFS || errno == EAGAIN) { i--; continue; } perror("send"); return 1; }
    sent += n;
  }
  report("send", sent, calls, u0, s0, t0);
  return 0;
}
