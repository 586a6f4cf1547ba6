//! `quark report FILE.json[.gz] [--html OUT]`: prints the table again and renders HTML.

use std::path::PathBuf;

use quark_lab::results::Report;

/// Options of `quark report`.
#[derive(Debug, clap::Args)]
pub(crate) struct Args {
    /// A results file written by `quark bench --json`, or that file gzipped
    /// (as docs/results keeps the larger ones).
    file: PathBuf,
    /// Write an HTML report with charts here.
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
}

fn load(args: &Args) -> anyhow::Result<Report> {
    let bytes = std::fs::read(&args.file)?;
    let text = if bytes.starts_with(&[0x1f, 0x8b]) {
        let mut text = String::new();
        std::io::Read::read_to_string(&mut flate2::read::GzDecoder::new(&bytes[..]), &mut text)?;
        text
    } else {
        String::from_utf8(bytes)?
    };
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
