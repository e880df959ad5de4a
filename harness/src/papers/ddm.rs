//! The ddm paper's experiments and its command-line subcommands.

use crate::experiment::Experiment;

/// The paper's tables and figures.
pub fn experiments() -> Vec<Experiment> {
    Vec::new()
}

/// `harness ddm ...`: the user's own workloads.
#[derive(clap::Subcommand, Debug)]
pub enum Cmd {}

pub fn run_cmd(cmd: Cmd) -> anyhow::Result<()> {
    match cmd {}
}
