//! Parsers for the values people type: `10ms`, `1%`, `100mbit`, `64KB`, `5s/2s`.
//! Shared by `quark relay`, `quark link` and the profile grammar.

use std::time::Duration;

use crate::config::{Blackhole, GilbertElliott, QueueLimit, ReorderDepth};

/// A value that doesn't parse; the message says what was expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ParseError(pub String);

fn err<T>(msg: String) -> Result<T, ParseError> {
    Err(ParseError(msg))
}

/// Splits `12.5ms` into (12.5, "ms"); the number must be finite and not negative.
fn number_unit(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    (v.is_finite() && v >= 0.0).then_some((v, unit.trim()))
}

/// A duration: `250us`, `10ms`, `1.5s` (`0` alone is allowed).
pub fn duration(s: &str) -> Result<Duration, ParseError> {
    let bad = || {
        ParseError(format!(
            "bad duration '{s}' (expected e.g. 10ms, 250us, 1.5s)"
        ))
    };
    let (v, unit) = number_unit(s).ok_or_else(bad)?;
    let secs = match unit.to_ascii_lowercase().as_str() {
        "" if v == 0.0 => 0.0,
        "ns" => v / 1e9,
        "us" | "µs" => v / 1e6,
        "ms" => v / 1e3,
        "s" => v,
        "m" | "min" => v * 60.0,
        _ => return Err(bad()),
    };
    if secs > 1e6 {
        return err(format!("duration '{s}' is too long"));
    }
    Ok(Duration::from_secs_f64(secs))
}

/// A percentage, returned as a fraction: `1%` and `1` are both 0.01.
pub fn percent(s: &str) -> Result<f64, ParseError> {
    let t = s.trim();
    let t = t.strip_suffix('%').unwrap_or(t);
    match number_unit(t) {
        Some((v, "")) if v <= 100.0 => Ok(v / 100.0),
        _ => err(format!(
            "bad percentage '{s}' (expected 0 to 100, e.g. 1% or 0.1%)"
        )),
    }
}

/// A rate in bits per second: `100mbit`, `10Mbps`, `1gbit`, `500kbit/s`.
/// Every unit counts bits (as the interop runner's `10Mbps` does; unlike tc,
/// where `mbps` means megabytes).
pub fn rate(s: &str) -> Result<u64, ParseError> {
    let bad = || {
        ParseError(format!(
            "bad rate '{s}' (expected e.g. 100mbit, 10Mbps, 1gbit)"
        ))
    };
    let (v, unit) = number_unit(s).ok_or_else(bad)?;
    let unit = unit.to_ascii_lowercase();
    let unit = unit.strip_suffix("/s").unwrap_or(&unit);
    let scale = match unit {
        "bit" | "bps" => 1.0,
        "kbit" | "kbps" => 1e3,
        "mbit" | "mbps" => 1e6,
        "gbit" | "gbps" => 1e9,
        _ => return Err(bad()),
    };
    let bps = v * scale;
    if !(1.0..=1e12).contains(&bps) {
        return err(format!("rate '{s}' out of range (1 bit/s to 1 Tbit/s)"));
    }
    Ok(bps as u64)
}

/// A queue size: bytes (`64KB`, `64KiB`, `1MB`, `1500B`) or datagrams (`25p`, `25pkt`).
pub fn queue(s: &str) -> Result<QueueLimit, ParseError> {
    let bad = || {
        ParseError(format!(
            "bad queue size '{s}' (expected bytes such as 64KB or packets such as 25p)"
        ))
    };
    let (v, unit) = number_unit(s).ok_or_else(bad)?;
    let limit = match unit.to_ascii_lowercase().as_str() {
        "p" | "pkt" | "pkts" | "packets" => QueueLimit::Packets(v as usize),
        "b" => QueueLimit::Bytes(v as usize),
        "kb" => QueueLimit::Bytes((v * 1e3) as usize),
        "kib" => QueueLimit::Bytes((v * 1024.0) as usize),
        "mb" => QueueLimit::Bytes((v * 1e6) as usize),
        "mib" => QueueLimit::Bytes((v * 1024.0 * 1024.0) as usize),
        _ => return Err(bad()),
    };
    match limit {
        QueueLimit::Bytes(0) | QueueLimit::Packets(0) => err(format!("queue '{s}' is empty")),
        QueueLimit::Bytes(n) | QueueLimit::Packets(n) if n > 1 << 32 => {
            err(format!("queue '{s}' is too large"))
        }
        l => Ok(l),
    }
}

/// Blackhole periods: `ON/OFF` repeats forever, `ON/OFFxN` N times (`5s/2sx1`).
pub fn blackhole(s: &str) -> Result<Blackhole, ParseError> {
    let bad = || {
        ParseError(format!(
            "bad blackhole '{s}' (expected ON/OFF[xN], e.g. 5s/2s or 5s/2sx1)"
        ))
    };
    let (on, rest) = s.split_once('/').ok_or_else(bad)?;
    let (off, repeat) = match rest.rsplit_once('x') {
        Some((off, n)) => (off, Some(n.trim().parse::<u32>().map_err(|_| bad())?)),
        None => (rest, None),
    };
    let b = Blackhole {
        on: duration(on)?,
        off: duration(off)?,
        repeat,
    };
    if b.on.is_zero() && b.off.is_zero() || repeat == Some(0) {
        return Err(bad());
    }
    Ok(b)
}

/// Gilbert–Elliott burst loss: `P,R[,LOSS_BAD[,LOSS_GOOD]]` as percentages:
/// P = p(good→bad), R = p(bad→good) per datagram, loss in the bad state
/// (default 100 %) and in the good state (default 0 %).
pub fn burst(s: &str) -> Result<GilbertElliott, ParseError> {
    let parts: Vec<&str> = s.split(',').collect();
    if !(2..=4).contains(&parts.len()) {
        return err(format!(
            "bad burst loss '{s}' (expected P,R[,LOSS_BAD[,LOSS_GOOD]] in percent, e.g. 1%,25%)"
        ));
    }
    Ok(GilbertElliott {
        p_enter: percent(parts[0])?,
        p_exit: percent(parts[1])?,
        loss_bad: parts.get(2).map_or(Ok(1.0), |p| percent(p))?,
        loss_good: parts.get(3).map_or(Ok(0.0), |p| percent(p))?,
    })
}

/// How far reordered datagrams fall behind: a count of datagrams (`3`) or a
/// time (`2ms`).
pub fn reorder_depth(s: &str) -> Result<ReorderDepth, ParseError> {
    if let Ok(n) = s.trim().parse::<u32>() {
        if n == 0 {
            return err("reorder depth must be at least 1 packet".into());
        }
        return Ok(ReorderDepth::Packets(n));
    }
    duration(s).map(ReorderDepth::Delay).map_err(|_| {
        ParseError(format!(
            "bad reorder depth '{s}' (expected packets such as 3, or a time such as 2ms)"
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(duration("10ms"), Ok(Duration::from_millis(10)));
        assert_eq!(duration("250us"), Ok(Duration::from_micros(250)));
        assert_eq!(duration("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration("0"), Ok(Duration::ZERO));
        for bad in [
            "",
            "10",
            "ms",
            "-1ms",
            "1e3ms",
            "10 parsecs",
            "NaNms",
            "1e999s",
        ] {
            assert!(duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn percentages() {
        assert_eq!(percent("1%"), Ok(0.01));
        assert_eq!(percent("1"), Ok(0.01));
        assert_eq!(percent("0.1%"), Ok(0.001));
        assert_eq!(percent("100%"), Ok(1.0));
        for bad in ["101%", "-1%", "%", "x", "1%%", "inf"] {
            assert!(percent(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn rates() {
        assert_eq!(rate("100mbit"), Ok(100_000_000));
        assert_eq!(rate("10Mbps"), Ok(10_000_000));
        assert_eq!(rate("1gbit/s"), Ok(1_000_000_000));
        assert_eq!(rate("500kbit"), Ok(500_000));
        for bad in ["100", "0mbit", "10MB", "fast", "2000gbit"] {
            assert!(rate(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn queues() {
        assert_eq!(queue("64KB"), Ok(QueueLimit::Bytes(64_000)));
        assert_eq!(queue("64KiB"), Ok(QueueLimit::Bytes(65_536)));
        assert_eq!(queue("25p"), Ok(QueueLimit::Packets(25)));
        assert_eq!(queue("25packets"), Ok(QueueLimit::Packets(25)));
        assert_eq!(queue("1500B"), Ok(QueueLimit::Bytes(1500)));
        for bad in ["64", "0KB", "0p", "lots", "99999999999KB"] {
            assert!(queue(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn blackholes() {
        let b = blackhole("5s/2s").unwrap();
        assert_eq!(b.on, Duration::from_secs(5));
        assert_eq!(b.off, Duration::from_secs(2));
        assert_eq!(b.repeat, None);
        assert_eq!(blackhole("5s/2sx1").unwrap().repeat, Some(1));
        for bad in ["5s", "5s/", "0/0", "5s/2sx0", "5s/2sxq", "a/b"] {
            assert!(blackhole(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn bursts_and_depths() {
        let ge = burst("1%,25%").unwrap();
        assert_eq!(
            (ge.p_enter, ge.p_exit, ge.loss_bad, ge.loss_good),
            (0.01, 0.25, 1.0, 0.0)
        );
        let ge = burst("1,25,50,0.1").unwrap();
        assert_eq!((ge.loss_bad, ge.loss_good), (0.5, 0.001));
        assert!(burst("1%").is_err());
        assert!(burst("1%,2%,3%,4%,5%").is_err());
        assert_eq!(reorder_depth("3"), Ok(ReorderDepth::Packets(3)));
        assert_eq!(
            reorder_depth("2ms"),
            Ok(ReorderDepth::Delay(Duration::from_millis(2)))
        );
        assert!(reorder_depth("0").is_err());
        assert!(reorder_depth("-3").is_err());
    }
}
