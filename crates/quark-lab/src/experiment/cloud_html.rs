//! The cloud study's section of the HTML report: a table per placement, the
//! ratio column shaded (green: below `tcp+tls`, red: above).

use std::fmt::Write;

use super::cloud::CloudSection;
use super::cloud_table::{HEADER, cells};
use crate::html::svg::esc;
use crate::results::Status;

/// Appends the section (nothing when the run was not the cloud study).
pub fn section(out: &mut String, s: &CloudSection) {
    out.push_str("<h2>Cloud study by placement</h2>\n");
    let _ = writeln!(
        out,
        "<p class=\"note\">Seed 004's matrix. CPU is client + server user + system time; cost at \
         ${}/vCPU-hour ({}). Ratios are protocol / {} in the same placement, scenario and size.</p>",
        s.vcpu_hour_price_usd,
        esc(&s.price_source),
        esc(&s.reference)
    );
    for p in &s.placements {
        let rtt = p
            .rtt_ms
            .map_or("RTT not measured (tcp ephemeral measures it)".into(), |r| {
                format!("RTT {r:.3} ms")
            });
        let seed = p
            .seed_name
            .as_deref()
            .map_or(String::new(), |n| format!(" — the seed's {}", esc(n)));
        let _ = writeln!(
            out,
            "<h3>{} <span class=\"note\">(net {}, {}{})</span></h3>",
            esc(&p.name),
            esc(&p.net),
            rtt,
            seed
        );
        out.push_str("<table><tr>");
        for h in HEADER {
            let _ = write!(out, "<th>{}</th>", esc(h));
        }
        out.push_str("</tr>\n");
        for r in s.rows.iter().filter(|r| r.placement == p.name) {
            let c = cells(r);
            out.push_str("<tr>");
            if r.status != Status::Ok || c.len() < HEADER.len() {
                for v in &c[..3] {
                    let _ = write!(out, "<td>{}</td>", esc(v));
                }
                let _ = write!(
                    out,
                    "<td class=\"err\" colspan=\"{}\">{}</td>",
                    HEADER.len() - 3,
                    esc(c.get(3).map_or("", |s| s.as_str()))
                );
            } else {
                let shade = r
                    .values
                    .as_ref()
                    .and_then(|v| v.p90_vs_ref)
                    .map(|x| if x <= 1.0 { "#dfd" } else { "#fdd" });
                for (i, v) in c.iter().enumerate() {
                    match (i + 1 == c.len(), shade) {
                        (true, Some(bg)) => {
                            let _ = write!(out, "<td style=\"background:{bg}\">{}</td>", esc(v));
                        }
                        _ => {
                            let _ = write!(out, "<td>{}</td>", esc(v));
                        }
                    }
                }
            }
            out.push_str("</tr>\n");
        }
        out.push_str("</table>\n");
    }
}
