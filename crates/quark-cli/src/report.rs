//! `quark report FILE.json [--html OUT]`: prints the table again and renders HTML.

use std::path::PathBuf;

use quark_lab::results::Report;

/// Options of `quark report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A results file written by `quark bench --json`.
    file: PathBuf,
    /// Write an HTML report with charts here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

fn load(args: &Args) -> anyhow::Result<Report> {
    let text = std::fs::read_to_string(&args.file)?;
    let mut report = Report::from_json(&text)?;
    // Files from before a column was added get it from their cells.
    quark_lab::experiment::cloud::update(&mut report);
    Ok(report)
}

/// Runs `quark report`; returns the exit code.
pub(crate) fn run(args: Args) -> i32 {
    let report = match load(&args) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("error: cannot read {}: {e:#}", args.file.display());
            return 2;
        }
    };
    print!("{}", quark_lab::table::render(&report));
    if let Some(out) = &args.html
        && let Err(e) = std::fs::write(out, quark_lab::html::render(&report))
    {
        eprintln!("error: cannot write {}: {e}", out.display());
        return 1;
    }
    0
}
