//! The scenarios of the papers, their default parameters, and how each turns
//! into client phases.
//!
//! | scenario | from | default |
//! |---|---|---|
//! | `goodput` | thesis | one download per size 2KB…200MB on a fresh connection; 1 warm-up + 5 counted runs (the thesis used 3 + 30: `--warmup 3 --runs 30`) |
//! | `response-time` | thesis | 144 concurrent clients, 100 000 requests of 1 byte, each on a fresh connection |
//! | `rps` | thesis | 144 concurrent connections, 100 000 requests of 2KB |
//! | `persistent` | cloud study | request = response size 2/8/32/128/512 KiB, 10 000 requests, one connection, sequential |
//! | `ephemeral` | cloud study | same sizes, 10 000 requests, a new connection per request |
//! | `parallel` | cloud study | same sizes, 10 000 requests, 100 in flight on one connection |
//! | `streams` | VPP | 2 connections × 8 streams downloading 1 MiB responses back to back for 5 s |
//! | `scale` | issue #33 | rps at 100, 1 000 and 5 000 long-lived connections (one phase each), 20 000 requests of 2KB, at least 4 per connection, after 2 unmeasured ones per connection (`--warmup`, per connection here) |

use serde::{Deserialize, Serialize};

use crate::adapter::Kind;
use crate::size::format_size;
use crate::workload::{Phase, Workload};

/// A scenario name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scenario {
    /// Download throughput per size.
    Goodput,
    /// Connection setup and request time with many short connections.
    ResponseTime,
    /// Requests per second over many connections.
    Rps,
    /// Sequential requests on one long-lived connection.
    Persistent,
    /// One connection per request.
    Ephemeral,
    /// Many requests in flight on one connection.
    Parallel,
    /// N connections × M streams for a duration.
    Streams,
    /// `rps` at each of several connection counts.
    Scale,
}

impl Scenario {
    /// Every scenario, in report order.
    pub const ALL: [Scenario; 8] = [
        Scenario::Goodput,
        Scenario::ResponseTime,
        Scenario::Rps,
        Scenario::Persistent,
        Scenario::Ephemeral,
        Scenario::Parallel,
        Scenario::Streams,
        Scenario::Scale,
    ];

    /// The command-line name.
    pub fn name(self) -> &'static str {
        match self {
            Scenario::Goodput => "goodput",
            Scenario::ResponseTime => "response-time",
            Scenario::Rps => "rps",
            Scenario::Persistent => "persistent",
            Scenario::Ephemeral => "ephemeral",
            Scenario::Parallel => "parallel",
            Scenario::Streams => "streams",
            Scenario::Scale => "scale",
        }
    }

    /// Parses a command-line name.
    pub fn parse(s: &str) -> Option<Scenario> {
        Scenario::ALL.into_iter().find(|x| x.name() == s)
    }

    /// The papers' parameters (goodput's run count reduced, see module docs).
    pub fn defaults(self) -> Params {
        let cloud = vec![2 << 10, 8 << 10, 32 << 10, 128 << 10, 512 << 10];
        let base = Params {
            sizes: vec![],
            requests: 10_000,
            clients: 1,
            connections: 1,
            in_flight: 1,
            streams: 1,
            duration_ms: 5_000,
            warmup: 0,
            runs: 1,
            datagram: 1200,
            scale_connections: vec![],
        };
        match self {
            Scenario::Goodput => Params {
                sizes: vec![2_000, 20_000, 200_000, 2_000_000, 20_000_000, 200_000_000],
                warmup: 1,
                runs: 5,
                ..base
            },
            Scenario::ResponseTime => Params {
                sizes: vec![1],
                requests: 100_000,
                clients: 144,
                ..base
            },
            Scenario::Rps => Params {
                sizes: vec![2_000],
                requests: 100_000,
                connections: 144,
                ..base
            },
            Scenario::Persistent | Scenario::Ephemeral => Params {
                sizes: cloud,
                ..base
            },
            Scenario::Parallel => Params {
                sizes: cloud,
                in_flight: 100,
                ..base
            },
            Scenario::Streams => Params {
                sizes: vec![1 << 20],
                connections: 2,
                streams: 8,
                ..base
            },
            Scenario::Scale => Params {
                sizes: vec![2_000],
                requests: 20_000,
                scale_connections: vec![100, 1_000, 5_000],
                // Per connection (see `scale::phases`).
                warmup: crate::scale::WARMUP_PER_CONNECTION,
                ..base
            },
        }
    }

    /// The phases `adapter`'s client runs for this scenario: a datagram adapter
    /// that serves requests (`udp`) blasts for goodput and streams and runs
    /// the request/response scenarios as the stream adapters do (not scale).
    pub fn phases_for(
        self,
        p: &Params,
        adapter: &dyn crate::adapter::Adapter,
    ) -> Result<Vec<Phase>, String> {
        let blast = matches!(
            self,
            Scenario::Goodput | Scenario::Streams | Scenario::Scale
        );
        let kind = match adapter.kind() {
            Kind::Datagram if adapter.serves_requests() && !blast => Kind::Stream,
            k => k,
        };
        self.phases(p, kind)
    }

    /// The phases a client runs for this scenario, or why the protocol cannot run it.
    pub fn phases(self, p: &Params, kind: Kind) -> Result<Vec<Phase>, String> {
        let label = |s: u64| format_size(s);
        if kind == Kind::Datagram {
            return match self {
                Scenario::Goodput => Ok(p
                    .sizes
                    .iter()
                    .map(|&s| Phase {
                        label: label(s),
                        workload: Workload::Blast {
                            bytes: s,
                            runs: p.runs,
                            warmup: p.warmup,
                            payload: p.datagram,
                        },
                    })
                    .collect()),
                Scenario::Streams => Ok(vec![Phase {
                    label: format!("{} senders", p.connections),
                    workload: Workload::BlastFor {
                        senders: p.connections,
                        duration_ms: p.duration_ms,
                        payload: p.datagram,
                    },
                }]),
                _ => Err(format!(
                    "datagram protocols run goodput and streams only, not {}",
                    self.name()
                )),
            };
        }
        if self == Scenario::Scale {
            return Ok(crate::scale::phases(p));
        }
        let phases = match self {
            Scenario::Goodput => p
                .sizes
                .iter()
                .map(|&s| Workload::Fresh {
                    requests: u64::from(p.runs),
                    workers: 1,
                    response_len: s,
                    body_len: 0,
                    warmup: u64::from(p.warmup),
                })
                .collect::<Vec<_>>(),
            Scenario::ResponseTime => p
                .sizes
                .iter()
                .map(|&s| Workload::Fresh {
                    requests: p.requests,
                    workers: p.clients,
                    response_len: s,
                    body_len: 0,
                    warmup: u64::from(p.warmup),
                })
                .collect(),
            Scenario::Ephemeral => p
                .sizes
                .iter()
                .map(|&s| Workload::Fresh {
                    requests: p.requests,
                    workers: p.clients,
                    response_len: s,
                    body_len: s,
                    warmup: u64::from(p.warmup),
                })
                .collect(),
            Scenario::Rps | Scenario::Persistent | Scenario::Parallel => p
                .sizes
                .iter()
                .map(|&s| Workload::Persistent {
                    connections: p.connections,
                    in_flight: p.in_flight,
                    requests: p.requests,
                    response_len: s,
                    body_len: if self == Scenario::Rps { 0 } else { s },
                    warmup: u64::from(p.warmup),
                })
                .collect(),
            Scenario::Streams => p
                .sizes
                .iter()
                .map(|&s| Workload::Streams {
                    connections: p.connections,
                    streams: p.streams,
                    duration_ms: p.duration_ms,
                    chunk: s,
                })
                .collect(),
            Scenario::Scale => unreachable!("handled above"),
        };
        Ok(p.sizes
            .iter()
            .zip(phases)
            .map(|(&s, workload)| {
                let label = match &workload {
                    Workload::Streams {
                        connections,
                        streams,
                        ..
                    } => format!("{connections}x{streams} {}", label(s)),
                    _ => label(s),
                };
                Phase { label, workload }
            })
            .collect())
    }
}

/// Every knob of a scenario. Fields a scenario does not use are ignored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    /// Response sizes (one phase each); request = response size where the scenario says so.
    pub sizes: Vec<u64>,
    /// Requests to measure (response-time, rps, persistent, ephemeral, parallel).
    pub requests: u64,
    /// Concurrent clients, each on fresh connections (response-time, ephemeral).
    pub clients: u32,
    /// Long-lived connections (rps, streams; senders for udp).
    pub connections: u32,
    /// Requests in flight per connection (parallel; rps and persistent use 1).
    pub in_flight: u32,
    /// Streams per connection (streams).
    pub streams: u32,
    /// Duration of timed scenarios (streams).
    pub duration_ms: u64,
    /// Unmeasured runs or requests first.
    pub warmup: u32,
    /// Measured runs per size (goodput).
    pub runs: u32,
    /// Datagram payload size (udp).
    pub datagram: u32,
    /// Connection counts, one phase each (scale; absent in older files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scale_connections: Vec<u32>,
}

/// Command-line overrides of [`Params`]; `None` keeps the default. Each applies
/// only to the scenarios it concerns (see [`Params::with`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Overrides {
    /// `--sizes`.
    pub sizes: Option<Vec<u64>>,
    /// `--requests`.
    pub requests: Option<u64>,
    /// `--clients`.
    pub clients: Option<u32>,
    /// `--connections`.
    pub connections: Option<u32>,
    /// `--in-flight`.
    pub in_flight: Option<u32>,
    /// `--streams`.
    pub streams: Option<u32>,
    /// `--duration`.
    pub duration_ms: Option<u64>,
    /// `--warmup`.
    pub warmup: Option<u32>,
    /// `--runs`.
    pub runs: Option<u32>,
    /// `--datagram-size`.
    pub datagram: Option<u32>,
    /// `--scale-connections`.
    pub scale_connections: Option<Vec<u32>>,
}

impl Params {
    /// Applies the overrides that concern `scenario`: `--connections` does not
    /// turn `persistent` (one connection by definition) into `rps`, and so on.
    pub fn with(mut self, scenario: Scenario, o: &Overrides) -> Params {
        use Scenario::*;
        if let Some(s) = &o.sizes {
            self.sizes = s.clone();
        }
        if matches!(
            scenario,
            ResponseTime | Rps | Persistent | Ephemeral | Parallel | Scale
        ) {
            self.requests = o.requests.unwrap_or(self.requests);
        }
        if matches!(scenario, ResponseTime | Ephemeral) {
            self.clients = o.clients.unwrap_or(self.clients);
        }
        if matches!(scenario, Rps | Streams) {
            self.connections = o.connections.unwrap_or(self.connections);
        }
        if scenario == Scale {
            // `--connections N` alone asks for that one count.
            if let Some(list) = o.scale_connections.clone().filter(|l| !l.is_empty()) {
                self.scale_connections = list;
            } else if let Some(n) = o.connections {
                self.scale_connections = vec![n];
            }
        }
        if scenario == Parallel {
            self.in_flight = o.in_flight.unwrap_or(self.in_flight);
        }
        if scenario == Streams {
            self.streams = o.streams.unwrap_or(self.streams);
            self.duration_ms = o.duration_ms.unwrap_or(self.duration_ms);
        }
        self.warmup = o.warmup.unwrap_or(self.warmup);
        self.runs = o.runs.unwrap_or(self.runs);
        self.datagram = o.datagram.unwrap_or(self.datagram);
        self
    }
}

/// The default suite (`quark bench` without `--scenario`): a quick comparison,
/// about 20 s on loopback (under a minute on a busy 2-core machine): goodput
/// at 20KB, 2MB and 200MB (1 warm-up + 3 runs), rps with 144 connections and
/// 20 000 requests of 2KB, persistent at 2KiB and 128KiB with 5 000 requests.
pub fn default_suite() -> Vec<(Scenario, Params)> {
    let g = Scenario::Goodput.defaults();
    let r = Scenario::Rps.defaults();
    let p = Scenario::Persistent.defaults();
    vec![
        (
            Scenario::Goodput,
            Params {
                sizes: vec![20_000, 2_000_000, 200_000_000],
                warmup: 1,
                runs: 3,
                ..g
            },
        ),
        (
            Scenario::Rps,
            Params {
                requests: 20_000,
                ..r
            },
        ),
        (
            Scenario::Persistent,
            Params {
                sizes: vec![2 << 10, 128 << 10],
                requests: 5_000,
                ..p
            },
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for s in Scenario::ALL {
            assert_eq!(Scenario::parse(s.name()), Some(s));
        }
        assert_eq!(Scenario::parse("latency"), None);
    }

    #[test]
    fn paper_defaults() {
        let rt = Scenario::ResponseTime.defaults();
        assert_eq!(
            (rt.clients, rt.requests, rt.sizes.as_slice()),
            (144, 100_000, &[1][..])
        );
        let rps = Scenario::Rps.defaults();
        assert_eq!(
            (rps.connections, rps.requests, rps.sizes.as_slice()),
            (144, 100_000, &[2000][..])
        );
        let par = Scenario::Parallel.defaults();
        assert_eq!(
            (par.in_flight, par.requests, par.sizes.len()),
            (100, 10_000, 5)
        );
    }

    #[test]
    fn phases_follow_params() {
        let o = Overrides {
            sizes: Some(vec![100]),
            requests: Some(7),
            connections: Some(9),
            ..Overrides::default()
        };
        let p = Scenario::Parallel.defaults().with(Scenario::Parallel, &o);
        let ph = Scenario::Parallel.phases(&p, Kind::Stream).unwrap();
        assert_eq!(ph.len(), 1);
        assert_eq!(
            ph[0].workload,
            Workload::Persistent {
                connections: 1,
                in_flight: 100,
                requests: 7,
                response_len: 100,
                body_len: 100,
                warmup: 0
            }
        );
        assert!(Scenario::Rps.phases(&p, Kind::Datagram).is_err());
        let g = Scenario::Goodput
            .phases(&Scenario::Goodput.defaults(), Kind::Datagram)
            .unwrap();
        assert_eq!(g.len(), 6);
        assert_eq!(g[0].label, "2KB");
    }
}
