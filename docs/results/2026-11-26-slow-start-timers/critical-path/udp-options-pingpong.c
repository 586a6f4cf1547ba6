// The UDP ping-pong of scripts/pingpong.c with quark's socket setup, an option at a time
// (BENCHMARKS.md, methodology: the two-CPU floor). cc -O2 -o /tmp/ppq udp-options-pingpong.c;
// OPTS=N taskset -c 0 /tmp/ppq server 20000 & sleep 0.2; OPTS=N taskset -c 1 /tmp/ppq client 20000
// UDP ping-pong with quark's socket setup, to find which option costs latency.
// env: OPTS (bit mask): 1 bigbuf, 2 recvtos+pktinfo opts, 4 gro, 8 send TOS cmsg, 16 send PKTINFO cmsg, 32 unconnected(sendto), 64 mtu probe
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#ifndef UDP_GRO
#define UDP_GRO 104
#endif
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
static int cmp(const void*a,const void*b){double x=*(const double*)a,y=*(const double*)b;return x<y?-1:x>y;}
int main(int argc,char**argv){
  int server=!strcmp(argv[1],"server"); int n=atoi(argv[2]); int o=getenv("OPTS")?atoi(getenv("OPTS")):0;
  int fd=socket(AF_INET,SOCK_DGRAM,0); int one=1, big=8<<20;
  struct sockaddr_in me={.sin_family=AF_INET,.sin_port=htons(server?47400:47401)}; me.sin_addr.s_addr=htonl(INADDR_LOOPBACK);
  struct sockaddr_in peer=me; peer.sin_port=htons(server?47401:47400);
  if(o&1){setsockopt(fd,SOL_SOCKET,SO_RCVBUFFORCE,&big,4);setsockopt(fd,SOL_SOCKET,SO_SNDBUFFORCE,&big,4);}
  if(o&2){setsockopt(fd,IPPROTO_IP,IP_RECVTOS,&one,4);setsockopt(fd,IPPROTO_IP,IP_PKTINFO,&one,4);}
  if(o&64){int p=IP_PMTUDISC_PROBE;setsockopt(fd,IPPROTO_IP,IP_MTU_DISCOVER,&p,4);}
  if(o&4){setsockopt(fd,SOL_UDP,UDP_GRO,&one,4);}
  bind(fd,(void*)&me,sizeof me); if(!(o&32)) connect(fd,(void*)&peer,sizeof peer);
  fcntl(fd,F_SETFL,O_NONBLOCK); int ep=epoll_create1(0); struct epoll_event ev={.events=EPOLLIN|EPOLLET,.data.fd=fd}; epoll_ctl(ep,EPOLL_CTL_ADD,fd,&ev);
  char buf[65536]; memset(buf,7,sizeof buf); char cbuf[256], rcbuf[256];
  double*lat=calloc(n+1,sizeof(double)),last=0,t0=0;
  struct iovec iov={buf,2048}; struct iovec riov={buf,sizeof buf};
  for(int i=0;i<=n;i++){
    if(!server){double t=now(); if(i>0)lat[i-1]=t-last; last=t; if(i==0)t0=t; if(i==n)break;}
    if(!server){
      struct msghdr m={0}; m.msg_iov=&iov; m.msg_iovlen=1; if(o&32){m.msg_name=&peer;m.msg_namelen=sizeof peer;}
      size_t cl=0; if(o&(8|16)){ m.msg_control=cbuf; m.msg_controllen=sizeof cbuf; struct cmsghdr*c=CMSG_FIRSTHDR(&m);
        if(o&8){c->cmsg_level=IPPROTO_IP;c->cmsg_type=IP_TOS;c->cmsg_len=CMSG_LEN(4);int tos=2;memcpy(CMSG_DATA(c),&tos,4);cl+=CMSG_SPACE(4);c=CMSG_NXTHDR(&m,c);}
        if(o&16){c->cmsg_level=IPPROTO_IP;c->cmsg_type=IP_PKTINFO;c->cmsg_len=CMSG_LEN(sizeof(struct in_pktinfo));struct in_pktinfo pi={0};pi.ipi_spec_dst.s_addr=htonl(INADDR_LOOPBACK);memcpy(CMSG_DATA(c),&pi,sizeof pi);cl+=CMSG_SPACE(sizeof pi);}
        m.msg_controllen=cl;}
      struct mmsghdr mm={m,0}; sendmmsg(fd,&mm,1,0);
    }
    for(;;){ struct mmsghdr mm={0}; mm.msg_hdr.msg_iov=&riov; mm.msg_hdr.msg_iovlen=1; mm.msg_hdr.msg_control=rcbuf; mm.msg_hdr.msg_controllen=sizeof rcbuf; struct sockaddr_in from; mm.msg_hdr.msg_name=&from; mm.msg_hdr.msg_namelen=sizeof from;
      int r=recvmmsg(fd,&mm,1,0,NULL); if(r>0)break; struct epoll_event e; epoll_wait(ep,&e,1,-1);}
    if(server){
      struct msghdr m={0}; m.msg_iov=&iov; m.msg_iovlen=1; if(o&32){m.msg_name=&peer;m.msg_namelen=sizeof peer;}
      size_t cl=0; if(o&(8|16)){ m.msg_control=cbuf; m.msg_controllen=sizeof cbuf; struct cmsghdr*c=CMSG_FIRSTHDR(&m);
        if(o&8){c->cmsg_level=IPPROTO_IP;c->cmsg_type=IP_TOS;c->cmsg_len=CMSG_LEN(4);int tos=2;memcpy(CMSG_DATA(c),&tos,4);cl+=CMSG_SPACE(4);c=CMSG_NXTHDR(&m,c);}
        if(o&16){c->cmsg_level=IPPROTO_IP;c->cmsg_type=IP_PKTINFO;c->cmsg_len=CMSG_LEN(sizeof(struct in_pktinfo));struct in_pktinfo pi={0};pi.ipi_spec_dst.s_addr=htonl(INADDR_LOOPBACK);memcpy(CMSG_DATA(c),&pi,sizeof pi);cl+=CMSG_SPACE(sizeof pi);}
        m.msg_controllen=cl;}
      struct mmsghdr mm={m,0}; sendmmsg(fd,&mm,1,0); if(i==n-1)break;}
  }
  if(!server){qsort(lat,n,sizeof(double),cmp); printf("OPTS=%d: %.1f us/rt; p50 %.1f p90 %.1f p99 %.1f\n",o,(now()-t0)/n*1e6,lat[n/2]*1e6,lat[n*9/10]*1e6,lat[n*99/100]*1e6);}
  return 0;}
