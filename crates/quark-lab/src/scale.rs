//! The `scale` scenario (issue #33): `rps` at several connection counts, one
//! phase each, to see what grows with the number of connections (latency
//! tail, CPU per request, memory per connection), and the limits the machine
//! sets on it (file descriptors).

use crate::scenario::Params;
use crate::size::format_size;
use crate::workload::{Phase, Workload};

/// Fewest requests per connection in a phase: with fewer, most connections
/// would sit idle and the phase would measure the busy few.
pub const MIN_REQUESTS_PER_CONNECTION: u64 = 4;

/// Unmeasured requests per connection before the measurement (`--warmup`
/// counts per connection in this scenario), all connections at once as in
/// the measured phase. Without them the measurement starts with every
/// connection's RTT estimate from an unloaded path (the handshake's): its
/// first requests wait in queues far longer than its PTO (~26 ms), and at
/// 5 000 connections each side fired 5-7 PTOs per connection, two probes
/// each, tripling the packets of a 4-request phase (NOTES.md, issue #33).
pub const WARMUP_PER_CONNECTION: u32 = 2;

/// One `rps`-like phase per connection count and response size, labelled
/// `N conns` (`N conns SIZE` when several sizes are asked).
pub fn phases(p: &Params) -> Vec<Phase> {
    let mut out = Vec::new();
    for &s in &p.sizes {
        for &n in &p.scale_connections {
            let label = if p.sizes.len() > 1 {
                format!("{n} conns {}", format_size(s))
            } else {
                format!("{n} conns")
            };
            out.push(Phase {
                label,
                workload: Workload::Persistent {
                    connections: n,
                    in_flight: 1,
                    requests: p.requests.max(u64::from(n) * MIN_REQUESTS_PER_CONNECTION),
                    response_len: s,
                    body_len: 0,
                    warmup: u64::from(p.warmup) * u64::from(n),
                },
            });
        }
    }
    out
}

/// The connection count of a `scale` phase's workload.
pub fn connections(w: &Workload) -> Option<u32> {
    match w {
        Workload::Persistent { connections, .. } => Some(*connections),
        _ => None,
    }
}

/// Raises this process's open-file limit to its hard limit: every TCP
/// connection is a descriptor, and the default soft limit (often 1 024)
/// stops a few thousand connections. Returns the limit now in force; the
/// hard limit is where the machine stops us without privileges.
pub fn raise_nofile() -> u64 {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    let Ok((soft, hard)) = getrlimit(Resource::RLIMIT_NOFILE) else {
        return 0;
    };
    if soft < hard && setrlimit(Resource::RLIMIT_NOFILE, hard, hard).is_ok() {
        return hard;
    }
    soft
}

/// Whether a side used nearly all the CPU it had (`cores` cores for
/// `elapsed_s`): then it, not the side measured, set the pace. Intervals
/// shorter than [`MIN_JUDGED_S`] are not judged: CPU time comes in clock
/// ticks, so a millisecond's worth reads as 0 % or over 100 %.
pub fn saturated(cpu_s: f64, elapsed_s: f64, cores: u32) -> bool {
    elapsed_s >= MIN_JUDGED_S && cpu_s >= 0.9 * elapsed_s * f64::from(cores.max(1))
}

/// The shortest measured interval whose CPU share is judged.
pub const MIN_JUDGED_S: f64 = 0.25;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::{Overrides, Scenario};

    #[test]
    fn one_phase_per_count_with_enough_requests() {
        let o = Overrides {
            scale_connections: Some(vec![10, 50, 10_000]),
            requests: Some(1_000),
            ..Overrides::default()
        };
        let p = Scenario::Scale.defaults().with(Scenario::Scale, &o);
        let ph = Scenario::Scale
            .phases(&p, crate::adapter::Kind::Stream)
            .unwrap();
        let got: Vec<_> = ph
            .iter()
            .map(|ph| match ph.workload {
                Workload::Persistent {
                    connections,
                    requests,
                    in_flight,
                    ..
                } => (ph.label.as_str(), connections, requests, in_flight),
                _ => panic!("not persistent"),
            })
            .collect();
        assert_eq!(
            got,
            [
                ("10 conns", 10, 1_000, 1),
                ("50 conns", 50, 1_000, 1),
                ("10000 conns", 10_000, 40_000, 1)
            ]
        );
        // `--connections` alone is one count.
        let o = Overrides {
            connections: Some(7),
            ..Overrides::default()
        };
        let p = Scenario::Scale.defaults().with(Scenario::Scale, &o);
        assert_eq!(p.scale_connections, [7]);
        assert_eq!(
            Scenario::Scale.defaults().scale_connections,
            [100, 1_000, 5_000]
        );
        assert!(
            Scenario::Scale
                .phases(&p, crate::adapter::Kind::Datagram)
                .is_err()
        );
    }

    #[test]
    fn saturation() {
        assert!(saturated(0.95, 1.0, 1));
        assert!(!saturated(0.95, 1.0, 2));
        assert!(saturated(1.9, 1.0, 2));
        assert!(!saturated(0.0, 0.0, 1));
    }

    #[test]
    fn nofile_is_at_least_what_it_was() {
        let (soft, _) =
            nix::sys::resource::getrlimit(nix::sys::resource::Resource::RLIMIT_NOFILE).unwrap();
        assert!(raise_nofile() >= soft);
    }
}
