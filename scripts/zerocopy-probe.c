// Does MSG_ZEROCOPY pay for UDP GSO sends (issue #30)? Sends 64 KB GSO
// buffers of 1 452-byte segments from a ring of 16, with and without
// MSG_ZEROCOPY (waiting for completions before reusing a buffer), and prints
// the sender's CPU per GB and how many sends the kernel copied anyway.
//
//   cc -O2 -o /tmp/zcprobe scripts/zerocopy-probe.c
//   (two namespaces zc-a 10.99.0.1 / zc-b 10.99.0.2 joined by a veth, MTU 1500)
//   ip netns exec zc-a /tmp/zcprobe recv 9999 & sleep 0.3
//   ip netns exec zc-b /tmp/zcprobe send 10.99.0.1 9999 2000 1   # 0: plain send
//
// Over veth every zerocopy send completes as copied (local delivery makes a
// deferred copy), so the sender pays pinning and notifications on top of the
// copy: see docs/results/2026-11-29-bulk-veth/NOTES.md.
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <poll.h>
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
#ifndef SO_ZEROCOPY
#define SO_ZEROCOPY 60
#endif
#ifndef MSG_ZEROCOPY
#define MSG_ZEROCOPY 0x4000000
#endif
static double cpu(void) { struct rusage r; getrusage(RUSAGE_SELF, &r);
  return r.ru_utime.tv_sec + r.ru_stime.tv_sec + (r.ru_utime.tv_usec + r.ru_stime.tv_usec) / 1e6; }
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec / 1e9; }
static long completions, copied;
static void drain_errq(int fd, int block) {
  char ctrl[128]; struct msghdr m = {0}; 
  for (;;) {
    if (block) { struct pollfd p = {fd, 0, 0}; poll(&p, 1, 10); }
    m.msg_control = ctrl; m.msg_controllen = sizeof ctrl;
    if (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0) return;
    struct cmsghdr *c = CMSG_FIRSTHDR(&m);
    if (!c) return;
    struct sock_extended_err *e = (void *)CMSG_DATA(c);
    if (e->ee_origin == SO_EE_ORIGIN_ZEROCOPY) { completions += e->ee_data - e->ee_info + 1; if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED) copied++; }
    block = 0;
  }
}
int main(int argc, char **argv) {
  int fd = socket(AF_INET, SOCK_DGRAM, 0), one = 1, buf = 8 << 20;
  if (!strcmp(argv[1], "recv")) {
    setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof buf);
    struct sockaddr_in a = {AF_INET, htons(atoi(argv[2])), {0}};
    bind(fd, (void *)&a, sizeof a);
    setsockopt(fd, SOL_UDP, UDP_GRO, &one, sizeof one);
    static char b[65536]; long tot = 0;
    struct timeval tv = {2, 0}; setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    for (;;) { ssize_t n = recv(fd, b, sizeof b, 0); if (n < 0) break; tot += n; }
    printf("recv %ld bytes cpu %.3f\n", tot, cpu()); return 0;
  }
  struct sockaddr_in a = {AF_INET, htons(atoi(argv[3])), {0}};
  inet_pton(AF_INET, argv[2], &a.sin_addr);
  long mb = atol(argv[4]); int zc = atoi(argv[5]);
  setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &buf, sizeof buf);
  connect(fd, (void *)&a, sizeof a);
  int seg = 1452; setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof seg);
  if (zc && setsockopt(fd, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof one)) { perror("SO_ZEROCOPY"); return 1; }
  // 16 rotating 64 KB buffers (44 segments each), like a GSO send ring.
  size_t len = 44 * 1452; char *ring = malloc(16 * len); memset(ring, 7, 16 * len);
  long calls = mb * 1000000 / len, sent = 0;
  double c0 = cpu(), t0 = now();
  for (long i = 0; i < calls; i++) {
    ssize_t n = send(fd, ring + (i % 16) * len, len, zc ? MSG_ZEROCOPY : 0);
    if (n < 0) { if (errno == ENOBUFS || errno == EAGAIN) { drain_errq(fd, 1); i--; continue; } perror("send"); return 1; }
    sent += n;
    // A sender must wait for completions before reusing a buffer: keep at most 15 in flight.
    if (zc) { drain_errq(fd, 0); while (i + 1 - completions >= 15) drain_errq(fd, 1); }
  }
  if (zc) while (completions < calls) { long c = completions; drain_errq(fd, 1); if (c == completions) break; }
  double c1 = cpu(), t1 = now();
  printf("zc=%d sent %.0f MB in %.2fs, sender cpu %.3f s = %.3f s/GB, completions %ld/%ld copied %ld\n", zc, sent / 1e6, t1 - t0, c1 - c0, (c1 - c0) / (sent / 1e9), completions, calls, copied);
  return 0;
}
