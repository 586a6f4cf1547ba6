//! The `quark` command. `main` only parses and dispatches: each subcommand
//! lives in its own module.

use clap::{Parser, Subcommand};

mod bench;
mod lab;
mod report;

/// quark: a QUIC v1 stack and its performance lab.
#[derive(Debug, Parser)]
#[command(name = "quark", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Measure protocols: goodput, latency, requests/s, CPU and memory.
    Bench(bench::Args),
    /// Render a results file again (table, HTML).
    Report(report::Args),
    /// Internal: a lab server process (driven by `quark bench`).
    #[command(hide = true)]
    LabServer(quark_lab::child::ServerArgs),
    /// Internal: a lab client process (driven by `quark bench`).
    #[command(hide = true)]
    LabClient(quark_lab::child::ClientArgs),
}

fn main() {
    let cli = Cli::parse();
    let code = match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Report(args) => report::run(args),
        Command::LabServer(args) => lab::server(args),
        Command::LabClient(args) => lab::client(args),
    };
    std::process::exit(code);
}
