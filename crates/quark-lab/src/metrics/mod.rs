//! Measurements: percentiles, CPU and memory usage, machine facts.

mod percentile;
mod usage;

pub use percentile::{Summary, cdf_points, nearest_rank};
pub use usage::{Machine, Usage, UsageMeter, current_rss, pin_to_cpu, process_cpu_ns};
