//! Options shared by the QUIC subcommands.

use clap::Args;
use quark::CcAlgorithm;
use quark::{EndpointConfig, TransportConfig};
use std::path::PathBuf;

/// Transport tuning common to `serve` and `get`.
#[derive(Args, Debug, Clone)]
pub(crate) struct TransportArgs {
    /// Congestion controller: newreno, cubic (default), bbr (for lossy paths) or
    /// bbr1 (BBR's v1 model alone, to compare).
    #[arg(long, default_value = "cubic")]
    pub(crate) cc: CcAlgorithm,
    /// TLS 1.3 cipher suites to offer (aes128, aes256, chacha20); default: all.
    #[arg(long, value_delimiter = ',')]
    pub(crate) cipher: Vec<String>,
    /// Idle timeout in seconds.
    #[arg(long, default_value_t = 30)]
    pub(crate) idle_timeout: u64,
    /// Busy-poll the socket for this many microseconds after work instead of
    /// sleeping (lower latency for a core's worth of CPU while traffic flows; 0: off;
    /// 200 on loopback: the window must outlast the peer's whole turn).
    #[arg(long, default_value_t = 0, value_name = "US")]
    pub(crate) busy_poll: u64,
    /// Write a qlog file (JSON-SEQ, for qvis) per connection into this
    /// directory, as `<odcid>_<server|client>.sqlog`. The QLOGDIR environment
    /// variable does the same.
    #[arg(long, value_name = "DIR")]
    pub(crate) qlog_dir: Option<PathBuf>,
    /// Do not take part in the latency spin bit (RFC 9000 §17.4), which
    /// shows observers on the path the RTT; the bit is then random.
    #[arg(long)]
    pub(crate) no_spin_bit: bool,
}

impl TransportArgs {
    pub(crate) fn transport_config(&self) -> TransportConfig {
        TransportConfig {
            congestion_control: self.cc,
            max_idle_timeout: std::time::Duration::from_secs(self.idle_timeout),
            spin_bit: !self.no_spin_bit,
            ..TransportConfig::default()
        }
    }

    /// Endpoint settings: the qlog directory (the runtime falls back on QLOGDIR).
    pub(crate) fn endpoint_config(&self) -> EndpointConfig {
        EndpointConfig {
            qlog_dir: self.qlog_dir.clone(),
            ..EndpointConfig::default()
        }
    }

    pub(crate) fn busy_poll(&self) -> std::time::Duration {
        std::time::Duration::from_micros(self.busy_poll)
    }

    pub(crate) fn cipher_suites(&self) -> anyhow::Result<Vec<rustls::SupportedCipherSuite>> {
        self.cipher
            .iter()
            .map(|c| Ok(quark::tls::cipher_suite(c)?))
            .collect()
    }
}

/// A QUIC version on the command line: 1 (RFC 9000), 2 (RFC 9369), or a
/// version number in hex (0x6b3343cf).
pub(crate) fn parse_quic_version(s: &str) -> Result<u32, String> {
    match s.trim() {
        "1" => Ok(quark::VERSION_1),
        "2" => Ok(quark::VERSION_2),
        other => {
            let hex = other.strip_prefix("0x").unwrap_or(other);
            match u32::from_str_radix(hex, 16) {
                Ok(v) if v == quark::VERSION_1 || v == quark::VERSION_2 => Ok(v),
                _ => Err(format!("unknown QUIC version {other:?} (1 or 2)")),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quic_versions_parse() {
        assert_eq!(parse_quic_version("1"), Ok(quark::VERSION_1));
        assert_eq!(parse_quic_version("2"), Ok(quark::VERSION_2));
        assert_eq!(parse_quic_version("0x6b3343cf"), Ok(quark::VERSION_2));
        assert!(parse_quic_version("3").is_err());
        assert!(parse_quic_version("0x1a2a3a4a").is_err());
    }
}
