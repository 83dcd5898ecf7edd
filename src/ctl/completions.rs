//! `browserctl completions SHELL`: a completion script generated from the clap definitions.

use super::output::Stop;
use clap::CommandFactory;

pub fn run(shell: clap_complete::Shell) -> Result<(), Stop> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut super::Cli::command(), "browserctl", &mut out);
    super::output::print(&String::from_utf8_lossy(&out))
}
