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
    print_all(&script)
}

/// Print the man page, roff (e.g. `memd man > ~/.local/share/man/man1/memd.1`).
pub fn man() -> Result<()> {
    let page = clap_mangen::Man::new(super::Cli::command());
    let mut roff = Vec::new();
    page.render(&mut roff)?;
    print_all(&roff)
}

/// Write `bytes` to stdout; a reader that stops early (`| head`) is no
/// error. (clap_complete panics when it writes to a closed pipe itself.)
fn print_all(bytes: &[u8]) -> Result<()> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}
