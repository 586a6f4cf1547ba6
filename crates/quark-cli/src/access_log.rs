//! `quark serve --access-log FILE|-`: one line per request, in the common
//! log format with the protocol and the time taken added:
//!
//! ```text
//! 127.0.0.1:52344 - - [29/Nov/2026:02:13:07 +0000] "GET /a.bin HTTP/3" 200 3000000 0.012
//! ```
//!
//! (peer address, time the request ended in UTC, request line, status,
//! body bytes, seconds taken). Requests over `--h3`'s TCP listener show
//! `HTTP/1.1` or `HTTP/2`. hq-interop requests show `hq-interop` as the
//! protocol and their reset code's status (404 for 0x404); `-` stands for
//! what is unknown (no status sent, a request that did not parse).

use std::fs::OpenOptions;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use anyhow::Context;

/// Where the lines go; shared by every connection.
#[derive(Clone)]
pub(crate) struct AccessLog(Arc<Mutex<Box<dyn Write + Send>>>);

/// One request, as logged.
pub(crate) struct Line<'a> {
    pub(crate) peer: SocketAddr,
    pub(crate) method: &'a str,
    pub(crate) path: Option<&'a str>,
    pub(crate) protocol: &'a str,
    pub(crate) status: Option<u16>,
    pub(crate) bytes: u64,
    pub(crate) elapsed: Duration,
}

impl AccessLog {
    /// `-` for standard output, else a file appended to (created if need be).
    pub(crate) fn open(target: &str) -> anyhow::Result<AccessLog> {
        let out: Box<dyn Write + Send> = match target {
            "-" => Box::new(std::io::stdout()),
            path => Box::new(BufWriter::new(
                OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(Path::new(path))
                    .with_context(|| format!("--access-log {path}"))?,
            )),
        };
        Ok(AccessLog(Arc::new(Mutex::new(out))))
    }

    /// Writes one line, flushed at once (a log read while serving is whole
    /// up to its last request). Write errors are ignored: serving goes on.
    pub(crate) fn write(&self, line: &Line<'_>) {
        let text = format_line(line, SystemTime::now());
        let mut out = self.0.lock().unwrap_or_else(|e| e.into_inner());
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }
}

fn format_line(l: &Line<'_>, now: SystemTime) -> String {
    let status = l.status.map_or("-".to_owned(), |s| s.to_string());
    format!(
        "{} - - [{}] \"{} {} {}\" {} {} {:.3}\n",
        l.peer,
        clf_time(now),
        l.method,
        l.path.unwrap_or("-"),
        l.protocol,
        status,
        l.bytes,
        l.elapsed.as_secs_f64()
    )
}

/// `29/Nov/2026:02:13:07 +0000`: the common log format's time, in UTC.
fn clf_time(t: SystemTime) -> String {
    let secs = t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{d:02}/{}/{y}:{:02}:{:02}:{:02} +0000",
        MONTHS[(m - 1) as usize],
        rest / 3600,
        rest % 3600 / 60,
        rest % 60
    )
}

/// Year, month (1-12) and day of a count of days since 1970-01-01 (the
/// proleptic Gregorian calendar, by eras of 400 years).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_in_common_log_format() {
        // 2026-11-29 02:13:07 UTC.
        let t = UNIX_EPOCH + Duration::from_secs(1_795_918_387);
        assert_eq!(clf_time(t), "29/Nov/2026:02:13:07 +0000");
        assert_eq!(clf_time(UNIX_EPOCH), "01/Jan/1970:00:00:00 +0000");
        // A leap day.
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400);
        assert_eq!(clf_time(leap), "29/Feb/2000:00:00:00 +0000");
        let line = Line {
            peer: "127.0.0.1:5000".parse().unwrap(),
            method: "GET",
            path: Some("/a.bin"),
            protocol: "HTTP/3",
            status: Some(200),
            bytes: 3_000_000,
            elapsed: Duration::from_millis(12),
        };
        assert_eq!(
            format_line(&line, t),
            "127.0.0.1:5000 - - [29/Nov/2026:02:13:07 +0000] \"GET /a.bin HTTP/3\" 200 3000000 0.012\n"
        );
    }
}
