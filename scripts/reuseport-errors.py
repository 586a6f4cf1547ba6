#!/usr/bin/env python3
# Where Linux queues ICMP errors about datagrams sent from a SO_REUSEPORT group
# whose classic BPF program steers every datagram to socket 0 (docs/FLEET.md).
# Loopback only: it sends to closed ports on 127.0.0.1.
import socket, struct, ctypes, time
IP_RECVERR=11; SO_ATTACH_REUSEPORT_CBPF=51
socks=[]
for i in range(4):
    s=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    s.setsockopt(socket.IPPROTO_IP, IP_RECVERR, 1)
    s.bind(('127.0.0.1', 47998)); s.setblocking(False); socks.append(s)
# cBPF: ret #0 (always socket index 0)
insn=struct.pack('HBBI', 0x06, 0, 0, 0)
buf=ctypes.create_string_buffer(insn)
prog=struct.pack('HL', 1, ctypes.addressof(buf))
socks[0].setsockopt(socket.SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, prog)
# datagrams now all reach socket 0?
t=socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for p in range(20): t.sendto(b'y', ('127.0.0.1', 47998))
time.sleep(0.05)
cnt=[0]*4
for i,s in enumerate(socks):
    while True:
        try: s.recvfrom(10); cnt[i]+=1
        except BlockingIOError: break
print('datagrams per socket', cnt)
where=[0]*4
for port in range(40000, 40040):
    socks[0].sendto(b'x', ('127.0.0.1', port)); time.sleep(0.01)
    for i,s in enumerate(socks):
        try: s.recvmsg(100, 512, socket.MSG_ERRQUEUE); where[i]+=1
        except BlockingIOError: pass
print('errors per socket (all sent from 0)', where)
