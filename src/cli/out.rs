//! Standard output for the commands. A reader that stops early (`memd
//! entries | head -1`) closes the pipe: memd then ends as the programs of
//! a shell pipeline do, killed by SIGPIPE, quietly (a shell reports 141),
//! instead of panicking (Rust ignores SIGPIPE, so `println!` panics on a
//! closed pipe). Every command prints through [`print`] (the `outln!` and
//! `out!` macros of `cli`), which returns [`Closed`] for that case; main
//! ends the process with [`end_as_a_pipe_does`]. Any other write error (a
//! full disk under `> file`) is an error like any other.

use std::fmt;
use std::io::Write;

/// Standard output was closed by its reader.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub struct Closed;

/// Write `bytes` to standard output, whole.
pub fn write(bytes: &[u8]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Closed.into()),
        Err(e) => Err(anyhow::Error::new(e).context("writing to standard output")),
    }
}

/// Write formatted text to standard output.
pub fn print(args: fmt::Arguments) -> anyhow::Result<()> {
    match args.as_str() {
        Some(s) => write(s.as_bytes()),
        None => write(args.to_string().as_bytes()),
    }
}

/// Whether `e` is (or was caused by) standard output closed.
pub fn closed(e: &anyhow::Error) -> bool {
    e.chain().any(|c| c.is::<Closed>())
}

/// End the process as SIGPIPE ends a program whose output was closed: no
/// message, the status a shell reports for it.
pub fn end_as_a_pipe_does() -> ! {
    // SAFETY: resetting one signal's disposition and raising it; the
    // process ends at the raise.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
        libc::raise(libc::SIGPIPE);
    }
    std::process::exit(128 + libc::SIGPIPE)
}
