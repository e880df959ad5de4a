//! `harness`: the papers' experiments, users' own workloads, and the GPU self-test.

mod experiment;
mod papers;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

/// Marks an error as the user's (bad input or usage): the process exits with code 2.
#[derive(Debug)]
pub struct BadInput(pub anyhow::Error);

impl std::fmt::Display for BadInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:#}", self.0)
    }
}
impl std::error::Error for BadInput {}

/// Wraps an error about the user's input so that the binary exits with code 2.
pub fn bad_input(e: impl Into<anyhow::Error>) -> anyhow::Error {
    anyhow::Error::new(BadInput(e.into()))
}

#[derive(Parser, Debug)]
#[command(name = "harness", version, about = "gpu-match: GPU matching for pub/sub and simulation middleware")]
struct Cli {
    #[command(subcommand)]
    cmd: Top,
}

#[derive(Subcommand, Debug)]
enum Top {
    /// CCM (content-based matching): match your own subscriptions and events.
    #[command(subcommand)]
    Ccm(papers::ccm::Cmd),
    /// CLCB (location-aware pub/sub): match your own subscriptions and events.
    #[command(subcommand)]
    Clcb(papers::clcb::Cmd),
    /// Holistic XML twig filtering: filter your own documents against your queries.
    #[command(subcommand)]
    Xml(papers::xml::Cmd),
    /// HLA DDM region matching: match your own regions.
    #[command(subcommand)]
    Ddm(papers::ddm::Cmd),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.cmd {
        Top::Ccm(c) => papers::ccm::run_cmd(c),
        Top::Clcb(c) => papers::clcb::run_cmd(c),
        Top::Xml(c) => papers::xml::run_cmd(c),
        Top::Ddm(c) => papers::ddm::run_cmd(c),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e:#}");
            if e.chain().any(|c| c.is::<BadInput>()) {
                ExitCode::from(2)
            } else {
                ExitCode::from(1)
            }
        }
    }
}
