//! `browserctl completions SHELL`: a completion script generated from the clap definitions.

use super::output::Stop;

/// `cli` is browserctl's whole command (passed in, so this module need not import its parent).
pub fn run(shell: clap_complete::Shell, mut cli: clap::Command) -> Result<(), Stop> {
    let mut out = Vec::new();
    clap_complete::generate(shell, &mut cli, "browserctl", &mut out);
    super::output::print(&String::from_utf8_lossy(&out))
}
