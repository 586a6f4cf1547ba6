//! A deterministic simulation of the driver's transmit order (issue #33): one
//! server endpoint answers two client connections through a socket that
//! drains at a fixed rate. Connection A downloads at full rate; B sends small
//! requests. The server builds its datagrams the way `transmit` does, with
//! `fair::round_robin` and `CONN_BUDGET`, and a full socket stops the round
//! (`Step::Blocked`) and puts the unfinished connections first next round, as
//! the driver's backlog does. B's request latency must stay within a bound;
//! with an unlimited budget (A's window built ahead of B's answer) it does not.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use quark_proto::{
    ClientConfig, Connection, ConnectionHandle, DatagramEvent, Dir, ReadOutcome, StreamId,
    TransportConfig,
};

use super::CONN_BUDGET;
use super::fair::{Step, round_robin};
use super::sim_pair::{Pair, fire_due, pattern};

/// Simulated time per round.
const TICK: Duration = Duration::from_micros(10);
/// One-way delay each way.
const DELAY: Duration = Duration::from_millis(1);
/// The server socket drains this many bytes per tick (100 MB/s).
const RATE_PER_TICK: usize = 1_000;
/// The socket refuses more past this many queued bytes.
const SOCKET_BYTES: usize = 64 * 1024;
/// A's download and B's answers.
const BIG: usize = 3_000_000;
const SMALL: usize = 1_000;
/// B's requests, one at a time, this far apart.
const REQUESTS: usize = 10;
const GAP: Duration = Duration::from_millis(2);

/// A one-way link: datagrams arrive `DELAY` after they leave.
#[derive(Default)]
struct Link(VecDeque<(Instant, Vec<u8>)>);

impl Link {
    fn due(&mut self, now: Instant) -> Option<Vec<u8>> {
        if self.0.front().is_some_and(|(at, _)| *at <= now) {
            return self.0.pop_front().map(|(_, d)| d);
        }
        None
    }
}

/// A client stream's response so far.
struct Response {
    sent_at: Instant,
    len: usize,
}

/// A server stream: the request read so far, then the response written so far.
#[derive(Default)]
struct Serving {
    request: Vec<u8>,
    respond: Option<usize>,
    written: usize,
    finished: bool,
}

struct Sim {
    p: Pair,
    up: Link,
    down: Link,
    /// The server socket's queue (sent, not yet on the wire) and its bytes.
    socket: VecDeque<Vec<u8>>,
    socket_bytes: usize,
    credit: usize,
    /// Server connections in the order the next round polls them.
    order: Vec<ConnectionHandle>,
    serving: HashMap<(ConnectionHandle, StreamId), Serving>,
    budget: usize,
}

impl Sim {
    fn new(budget: usize) -> (Self, ClientConfig) {
        // 1 200-byte datagrams (no path MTU probing): the socket's queue is
        // then what the bound below assumes.
        let (p, client_cfg) = Pair::new(TransportConfig {
            mtu_discovery: false,
            ..TransportConfig::default()
        });
        let sim = Sim {
            p,
            up: Link::default(),
            down: Link::default(),
            socket: VecDeque::new(),
            socket_bytes: 0,
            credit: 0,
            order: Vec::new(),
            serving: HashMap::new(),
            budget,
        };
        (sim, client_cfg)
    }

    /// One round: deliver, fire timers, run the server's application, send.
    fn tick(&mut self) {
        self.p.now += TICK;
        let now = self.p.now;
        while let Some(d) = self.up.due(now) {
            let order = &mut self.order;
            self.p.deliver_to_server(&d, |e| {
                if let DatagramEvent::NewConnection(h) = e {
                    order.push(h);
                }
            });
        }
        while let Some(d) = self.down.due(now) {
            self.p.deliver_to_client(&d);
        }
        for ep in [&mut self.p.client, &mut self.p.server] {
            fire_due(ep, now, Connection::poll_timeout);
        }
        self.serve();
        self.client_transmit();
        self.server_transmit();
        self.drain_socket();
        for ep in [&mut self.p.client, &mut self.p.server] {
            let hs: Vec<_> = ep.handles().collect();
            for h in hs {
                ep.sync(h);
            }
        }
    }

    /// The server application: a request `big` gets `BIG` bytes, any other
    /// `SMALL`. The connection that asked for `big` goes first in the polling
    /// order: the worst case for the others.
    fn serve(&mut self) {
        let handles: Vec<_> = self.p.server.handles().collect();
        for h in handles {
            let Some(conn) = self.p.server.connection_mut(h) else {
                continue;
            };
            while let Some(id) = conn.accept_stream(Dir::Bi) {
                self.serving.insert((h, id), Serving::default());
            }
            for (&(sh, id), s) in self.serving.iter_mut().filter(|((sh, _), _)| *sh == h) {
                let mut buf = [0u8; 64];
                while s.respond.is_none() {
                    match conn.read(id, &mut buf).unwrap() {
                        ReadOutcome::Data(n) => s.request.extend_from_slice(&buf[..n]),
                        ReadOutcome::Finished => {
                            let big = s.request == b"big";
                            s.respond = Some(if big { BIG } else { SMALL });
                            if big {
                                self.order.retain(|&o| o != sh);
                                self.order.insert(0, sh);
                            }
                        }
                        ReadOutcome::Blocked => break,
                    }
                }
                let Some(total) = s.respond else { continue };
                while s.written < total {
                    let end = total.min(s.written + 16 * 1024);
                    let chunk: Vec<u8> = (s.written..end).map(pattern).collect();
                    match conn.write(id, &chunk).unwrap() {
                        0 => break,
                        n => s.written += n,
                    }
                }
                if s.written == total && !s.finished {
                    conn.finish(id).unwrap();
                    s.finished = true;
                }
            }
        }
    }

    fn client_transmit(&mut self) {
        let at = self.p.now + DELAY;
        while let Some(t) = self.p.client.poll_transmit(&mut self.p.buf) {
            self.up.0.push_back((at, self.p.buf[..t.size].to_vec()));
        }
        let handles: Vec<_> = self.p.client.handles().collect();
        for h in handles {
            let conn = self.p.client.connection_mut(h).unwrap();
            while let Some(t) = conn.poll_transmit(self.p.now, 1, &mut self.p.buf) {
                self.up.0.push_back((at, self.p.buf[..t.size].to_vec()));
            }
        }
    }

    /// What `Driver::transmit` does, into a socket of `SOCKET_BYTES`.
    fn server_transmit(&mut self) {
        while let Some(t) = self.p.server.poll_transmit(&mut self.p.buf) {
            self.socket_bytes += t.size;
            self.socket.push_back(self.p.buf[..t.size].to_vec());
        }
        let order = std::mem::take(&mut self.order);
        let (server, socket, socket_bytes, buf, now) = (
            &mut self.p.server,
            &mut self.socket,
            &mut self.socket_bytes,
            &mut self.p.buf,
            self.p.now,
        );
        let result = round_robin(&order, self.budget, &mut Vec::new(), |h| {
            if *socket_bytes >= SOCKET_BYTES {
                return Step::Blocked;
            }
            let Some(conn) = server.connection_mut(h) else {
                return Step::Empty;
            };
            match conn.poll_transmit(now, 1, buf) {
                Some(t) => {
                    *socket_bytes += t.size;
                    socket.push_back(buf[..t.size].to_vec());
                    Step::Built
                }
                None => Step::Empty,
            }
        });
        // The driver's backlog: the unfinished ones first next round.
        self.order = match result {
            Ok(()) => order,
            Err(mut rest) => {
                rest.extend(
                    order
                        .iter()
                        .filter(|h| !rest.contains(h))
                        .collect::<Vec<_>>(),
                );
                rest
            }
        };
    }

    /// The socket puts `RATE_PER_TICK` bytes a tick on the wire.
    fn drain_socket(&mut self) {
        self.credit += RATE_PER_TICK;
        while let Some(d) = self.socket.front() {
            if d.len() > self.credit {
                break;
            }
            self.credit -= d.len();
            self.socket_bytes -= d.len();
            let d = self.socket.pop_front().unwrap();
            self.down.0.push_back((self.p.now + DELAY, d));
        }
        if self.socket.is_empty() {
            self.credit = self.credit.min(RATE_PER_TICK);
        }
    }

    /// Reads what arrived on the client's stream `id`, checking every byte.
    /// Returns whether the response is complete.
    fn read_response(&mut self, h: ConnectionHandle, id: StreamId, r: &mut Response) -> bool {
        let conn = self.p.client.connection_mut(h).unwrap();
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match conn.read(id, &mut buf).unwrap() {
                ReadOutcome::Data(n) => {
                    for (i, &b) in buf[..n].iter().enumerate() {
                        assert_eq!(b, pattern(r.len + i), "byte {} on {id:?}", r.len + i);
                    }
                    r.len += n;
                }
                ReadOutcome::Finished => return true,
                ReadOutcome::Blocked => return false,
            }
        }
    }

    fn request(&mut self, h: ConnectionHandle, body: &[u8]) -> (StreamId, Response) {
        let conn = self.p.client.connection_mut(h).unwrap();
        let id = conn.open_stream(Dir::Bi).unwrap();
        assert_eq!(conn.write(id, body).unwrap(), body.len());
        conn.finish(id).unwrap();
        let r = Response {
            sent_at: self.p.now,
            len: 0,
        };
        (id, r)
    }
}

/// Runs the scenario with a per-pass `budget`; returns B's request latencies.
fn run(budget: usize) -> Vec<Duration> {
    let (mut sim, cfg) = Sim::new(budget);
    let now = sim.p.now;
    let a = sim
        .p
        .client
        .connect(now, &cfg, sim.p.server_addr, "localhost")
        .unwrap();
    let b = sim
        .p
        .client
        .connect(now, &cfg, sim.p.server_addr, "localhost")
        .unwrap();
    for _ in 0..100_000 {
        let up = |h| sim.p.client.connection(h).unwrap().is_handshake_complete();
        if up(a) && up(b) {
            break;
        }
        sim.tick();
    }
    let (a_id, mut a_resp) = sim.request(a, b"big");
    let b_start = sim.p.now + Duration::from_millis(5);
    let mut b_next = Some(b_start);
    let mut b_open: Option<(StreamId, Response)> = None;
    let mut latencies = Vec::new();
    let mut a_done = false;
    // B's requests sent while A was still downloading.
    let mut overlapped = 0;
    for _ in 0..2_000_000 {
        sim.tick();
        if !a_done {
            a_done = sim.read_response(a, a_id, &mut a_resp);
        }
        if let Some((id, mut r)) = b_open.take() {
            if sim.read_response(b, id, &mut r) {
                assert_eq!(r.len, SMALL, "B's response length");
                latencies.push(sim.p.now - r.sent_at);
                b_next = (latencies.len() < REQUESTS).then(|| sim.p.now + GAP);
            } else {
                b_open = Some((id, r));
            }
        } else if b_next.is_some_and(|t| t <= sim.p.now) {
            b_open = Some(sim.request(b, b"small"));
            b_next = None;
            overlapped += usize::from(!a_done);
        }
        if a_done && latencies.len() == REQUESTS {
            break;
        }
    }
    assert!(a_done, "A's download did not finish");
    assert_eq!(a_resp.len, BIG, "A's response length");
    assert_eq!(latencies.len(), REQUESTS, "B's requests did not all finish");
    // B's requests must overlap A's download to test anything.
    assert!(overlapped >= 3, "{overlapped} requests during A's download");
    latencies
}

#[test]
fn a_full_rate_download_does_not_delay_small_requests() {
    // The bound: a round trip, plus one socket's worth of queued bytes ahead
    // of the answer, plus a margin of a millisecond.
    let queue = TICK * (SOCKET_BYTES / RATE_PER_TICK) as u32;
    let bound = 2 * DELAY + queue + Duration::from_millis(1);
    let fair = run(CONN_BUDGET);
    let worst = fair.iter().max().unwrap();
    assert!(*worst <= bound, "worst {worst:?} > {bound:?}: {fair:?}");
    // Without the budget (A polled until its window is spent, as before
    // `fair`), B's answer waits behind A's window: the same bound fails.
    let unfair = run(usize::MAX);
    let worst = unfair.iter().max().unwrap();
    assert!(
        *worst > bound,
        "the test does not tell fair from unfair: {unfair:?}"
    );
}
