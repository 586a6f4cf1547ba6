//! The impairment options shared by `quark relay` and `quark link up`.

use anyhow::{anyhow, bail};
use quark_netem::{LinkConfig, Profile, RateLimit, parse};

/// How the emulated link treats traffic (each option applies to both directions
/// and overrides the profile's setting).
#[derive(Debug, Clone, Default, clap::Args)]
pub(crate) struct ImpairArgs {
    /// Network profile: lan, interop, blackhole, reorder0.1, reorder1, or
    /// rtt<ms>-loss<pct>[-reorder<pct>][-rate<mbit>] (e.g. rtt30-loss1).
    #[arg(long)]
    profile: Option<String>,
    /// One-way delay, e.g. 10ms.
    #[arg(long)]
    delay: Option<String>,
    /// Delay varies uniformly within ± this (order kept), e.g. 1ms.
    #[arg(long)]
    jitter: Option<String>,
    /// Random loss, e.g. 1%.
    #[arg(long)]
    loss: Option<String>,
    /// Burst loss (Gilbert–Elliott) P,R[,LOSS_BAD[,LOSS_GOOD]] in percent:
    /// p(good→bad), p(bad→good), loss in each state (default 100%, 0%).
    #[arg(long, value_name = "P,R[,BAD[,GOOD]]")]
    burst: Option<String>,
    /// Share of datagrams held back and overtaken, e.g. 0.1%.
    #[arg(long)]
    reorder: Option<String>,
    /// How far reordered datagrams fall behind: packets (3) or time (2ms) [default: 1ms].
    #[arg(long, value_name = "N|TIME")]
    reorder_depth: Option<String>,
    /// Share of datagrams delivered twice, e.g. 0.1%.
    #[arg(long)]
    duplicate: Option<String>,
    /// Share of datagrams with one flipped byte, e.g. 0.01%.
    #[arg(long)]
    corrupt: Option<String>,
    /// Bottleneck rate, e.g. 100mbit (all units are bits).
    #[arg(long)]
    rate: Option<String>,
    /// Bottleneck queue: bytes (64KB) or packets (25p) [default: one BDP, ≥ 64KB].
    #[arg(long)]
    queue: Option<String>,
    /// Blackhole periods ON/OFF[xN]: traffic flows ON, is dropped OFF, repeating
    /// (N times), e.g. 5s/2s.
    #[arg(long, value_name = "ON/OFF[xN]")]
    blackhole: Option<String>,
    /// Seed of the random impairments [default: 1].
    #[arg(long)]
    seed: Option<String>,
}

/// A parsed impairment setup.
#[derive(Debug, Clone)]
pub(crate) struct Impairment {
    /// Profile name, or `custom`.
    pub(crate) name: String,
    /// Client → server (relay: toward `--to`; link: namespace b → a).
    pub(crate) up: LinkConfig,
    /// Server → client.
    pub(crate) down: LinkConfig,
    pub(crate) seed: u64,
}

impl Impairment {
    /// One line for people.
    pub(crate) fn describe(&self) -> String {
        let rtt = self.up.delay + self.down.delay;
        format!(
            "{} (seed {})",
            quark_netem::profile::describe(&self.name, &self.up, rtt),
            self.seed
        )
    }
}

impl ImpairArgs {
    /// The link configuration. `overhead` is the header bytes a rate limit adds
    /// per datagram (28 for UDP payloads, 0 for whole IP packets).
    pub(crate) fn build(&self, overhead: u32) -> anyhow::Result<Impairment> {
        let (name, mut c) = match &self.profile {
            Some(p) => {
                let p = Profile::parse(p)?;
                (p.name.clone(), p.up)
            }
            None => ("custom".to_string(), LinkConfig::default()),
        };
        let custom = self.profile.is_none();
        if let Some(v) = &self.delay {
            c.delay = parse::duration(v).map_err(|e| anyhow!("--delay: {e}"))?;
        }
        if let Some(v) = &self.jitter {
            c.jitter = parse::duration(v).map_err(|e| anyhow!("--jitter: {e}"))?;
        }
        if let Some(v) = &self.loss {
            c.loss = parse::percent(v).map_err(|e| anyhow!("--loss: {e}"))?;
        }
        if let Some(v) = &self.burst {
            c.burst = Some(parse::burst(v).map_err(|e| anyhow!("--burst: {e}"))?);
        }
        if let Some(v) = &self.reorder {
            c.reorder = parse::percent(v).map_err(|e| anyhow!("--reorder: {e}"))?;
        }
        if let Some(v) = &self.reorder_depth {
            c.reorder_depth =
                parse::reorder_depth(v).map_err(|e| anyhow!("--reorder-depth: {e}"))?;
        }
        if let Some(v) = &self.duplicate {
            c.duplicate = parse::percent(v).map_err(|e| anyhow!("--duplicate: {e}"))?;
        }
        if let Some(v) = &self.corrupt {
            c.corrupt = parse::percent(v).map_err(|e| anyhow!("--corrupt: {e}"))?;
        }
        if let Some(v) = &self.rate {
            let bps = parse::rate(v).map_err(|e| anyhow!("--rate: {e}"))?;
            c.rate = Some(RateLimit::with_bdp_queue(bps, c.delay * 2));
        }
        if let Some(v) = &self.queue {
            let q = parse::queue(v).map_err(|e| anyhow!("--queue: {e}"))?;
            match c.rate.as_mut() {
                Some(r) => r.queue = q,
                None => bail!("--queue needs --rate (or a profile with a rate)"),
            }
        }
        if let Some(r) = c.rate.as_mut() {
            r.overhead = overhead;
        }
        if let Some(v) = &self.blackhole {
            c.blackhole = Some(parse::blackhole(v).map_err(|e| anyhow!("--blackhole: {e}"))?);
        }
        let seed = match &self.seed {
            Some(s) => s
                .trim()
                .parse()
                .map_err(|_| anyhow!("--seed: '{s}' is not a whole number"))?,
            None => 1,
        };
        c.validate()?;
        let name = if custom || !self.overrides_anything() {
            name
        } else {
            format!("{name}+custom")
        };
        Ok(Impairment {
            name,
            up: c.clone(),
            down: c,
            seed,
        })
    }

    fn overrides_anything(&self) -> bool {
        [
            &self.delay,
            &self.jitter,
            &self.loss,
            &self.burst,
            &self.reorder,
            &self.reorder_depth,
            &self.duplicate,
            &self.corrupt,
            &self.rate,
            &self.queue,
            &self.blackhole,
        ]
        .iter()
        .any(|o| o.is_some())
    }
}
