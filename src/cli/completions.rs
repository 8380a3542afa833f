//! `memd completions SHELL` and `memd man`: generated from the command
//! line's own definition (clap), so they never fall behind it.

use anyhow::Result;
use clap::CommandFactory;

#[derive(clap::Args)]
pub struct Args {
    /// The shell to complete for: bash, zsh, fish, elvish or powershell.
    shell: clap_complete::Shell,
}

/// Print the completion script for `args.shell` (e.g. `memd completions
/// bash > ~/.local/share/bash-completion/completions/memd`).
pub fn run(args: Args) -> Result<()> {
    let mut cmd = super::Cli::command();
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut cmd, "memd", &mut script);
    super::out::write(&script)
}

/// Print the man page, roff (e.g. `memd man > ~/.local/share/man/man1/memd.1`).
pub fn man() -> Result<()> {
    let page = clap_mangen::Man::new(super::Cli::command());
    let mut roff = Vec::new();
    page.render(&mut roff)?;
    super::out::write(&roff)
}
