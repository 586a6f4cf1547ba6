//! CPU time and memory of the current process over a measured interval, and
//! the facts about the machine every result records.

use std::time::Duration;

use nix::sys::resource::{UsageWho, getrusage};
use serde::{Deserialize, Serialize};

/// What one process spent during a measured interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Usage {
    /// User-mode CPU seconds (getrusage `ru_utime`, all threads).
    pub user_s: f64,
    /// Kernel-mode CPU seconds (getrusage `ru_stime`, all threads).
    pub sys_s: f64,
    /// Peak resident set size in bytes. With `peak_rss_scope = "interval"` the
    /// kernel's high-water mark was reset at the interval start
    /// (`/proc/self/clear_refs`), otherwise it is the process lifetime peak (`ru_maxrss`).
    pub peak_rss_bytes: u64,
    /// `"interval"` or `"process"`, see `peak_rss_bytes`.
    pub peak_rss_scope: String,
    /// Resident set size before the workload's connections were opened.
    pub rss_baseline_bytes: u64,
    /// Resident set size at the interval start: the workload's connections
    /// open and idle (absent in older files).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_start_bytes: Option<u64>,
}

impl Usage {
    /// User plus system CPU seconds.
    pub fn cpu_s(&self) -> f64 {
        self.user_s + self.sys_s
    }
}

/// Measures [`Usage`] from `start` to `stop`.
#[derive(Debug, Clone)]
pub struct UsageMeter {
    user: Duration,
    sys: Duration,
    scope: &'static str,
    baseline: u64,
    at_start: u64,
}

impl UsageMeter {
    /// Starts an interval; `baseline` is the RSS recorded before setup (see
    /// [`current_rss`]).
    pub fn start(baseline: u64) -> UsageMeter {
        // Writing 5 resets the peak RSS (VmHWM) to the current RSS (proc(5)).
        let scope = match std::fs::write("/proc/self/clear_refs", "5") {
            Ok(()) => "interval",
            Err(_) => "process",
        };
        let at_start = current_rss();
        let (user, sys, _) = rusage();
        UsageMeter {
            user,
            sys,
            scope,
            baseline,
            at_start,
        }
    }

    /// Ends the interval.
    pub fn stop(&self) -> Usage {
        let (user, sys, maxrss) = rusage();
        let peak = match self.scope {
            "interval" => status_field("VmHWM:").unwrap_or(maxrss),
            _ => maxrss,
        };
        Usage {
            user_s: user.saturating_sub(self.user).as_secs_f64(),
            sys_s: sys.saturating_sub(self.sys).as_secs_f64(),
            peak_rss_bytes: peak,
            peak_rss_scope: self.scope.to_string(),
            rss_baseline_bytes: self.baseline,
            rss_start_bytes: Some(self.at_start),
        }
    }
}

/// User + system CPU time of this process so far, in nanoseconds.
pub fn process_cpu_ns() -> u64 {
    let (user, sys, _) = rusage();
    (user + sys).as_nanos() as u64
}

fn rusage() -> (Duration, Duration, u64) {
    let Ok(u) = getrusage(UsageWho::RUSAGE_SELF) else {
        return (Duration::ZERO, Duration::ZERO, 0);
    };
    let tv = |t: nix::sys::time::TimeVal| {
        Duration::new(
            t.tv_sec().max(0) as u64,
            (t.tv_usec().clamp(0, 999_999) * 1000) as u32,
        )
    };
    // ru_maxrss is in KiB on Linux.
    (
        tv(u.user_time()),
        tv(u.system_time()),
        u.max_rss().max(0) as u64 * 1024,
    )
}

/// Current resident set size in bytes (0 when unknown).
pub fn current_rss() -> u64 {
    status_field("VmRSS:").unwrap_or(0)
}

/// A `kB` field of /proc/self/status, in bytes.
fn status_field(name: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(name))?;
    let kb: u64 = line[name.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    Some(kb * 1024)
}

/// The machine a result was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Machine {
    /// CPU model name from /proc/cpuinfo.
    pub cpu_model: String,
    /// Logical CPUs available to this process.
    pub cores: u32,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Operating system and architecture.
    pub os: String,
}

impl Machine {
    /// Describes the current machine.
    pub fn detect() -> Machine {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu_model = cpuinfo
            .lines()
            .find(|l| l.starts_with("model name"))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_else(|| "unknown".into());
        let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
            .map(|s| s.trim().to_string())
            .unwrap_or_else(|_| "unknown".into());
        Machine {
            cpu_model,
            cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
            kernel,
            os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        }
    }
}

/// Pins the calling thread (and the threads it creates later) to one CPU.
pub fn pin_to_cpu(cpu: usize) -> anyhow::Result<()> {
    use nix::sched::{CpuSet, sched_setaffinity};
    let mut set = CpuSet::new();
    set.set(cpu)
        .map_err(|e| anyhow::anyhow!("cannot pin to CPU {cpu}: {e}"))?;
    sched_setaffinity(nix::unistd::Pid::from_raw(0), &set)
        .map_err(|e| anyhow::anyhow!("cannot pin to CPU {cpu}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_cpu_spent_in_interval() {
        let m = UsageMeter::start(current_rss());
        let mut x = 0u64;
        let t = std::time::Instant::now();
        while t.elapsed() < Duration::from_millis(30) {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        let u = m.stop();
        assert!(u.cpu_s() > 0.0, "{u:?}");
        assert!(u.peak_rss_bytes > 0);
        assert!(u.rss_baseline_bytes > 0);
    }

    #[test]
    fn machine_is_described() {
        let m = Machine::detect();
        assert!(m.cores >= 1);
        assert!(!m.kernel.is_empty());
    }
}
