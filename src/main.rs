//! The `memd` binary: parse the arguments, run the command, and map an
//! error to an exit code (after ripgrep's `crates/core/main.rs`). The
//! commands live in `cli/`, one file each.

use std::process::ExitCode;

use clap::Parser;

use memd::error::Kind;
use memd::remedy::Surface;

mod cli;

/// Large blocks in 2 MiB pages: most of a one-shot search's time was
/// page faults ([`memd::alloc`]).
#[global_allocator]
static ALLOC: memd::alloc::Huge = memd::alloc::Huge;

fn main() -> ExitCode {
    // Past a file-size limit (RLIMIT_FSIZE) the kernel kills a writer with
    // SIGXFSZ in the middle of its write, before it can cut a half-written
    // append back. Ignored, the write fails with EFBIG instead, and the
    // append undoes itself (memd::atomic::append_whole).
    // SAFETY: setting a signal's disposition to SIG_IGN at start, before
    // any thread exists, races with nothing.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
    memd::embed::onnx::no_telemetry_before_threads();
    let args = match cli::Cli::try_parse() {
        Ok(args) => args,
        Err(e) => return clap_said(&e),
    };
    match cli::run(args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) if cli::out::closed(&e) => cli::out::end_as_a_pipe_does(),
        Err(e) => {
            let memd_error = e.chain().find_map(|c| c.downcast_ref::<memd::Error>());
            let kind = memd_error.map_or(Kind::Other, memd::Error::kind);
            let remedy = memd_error.and_then(memd::Error::remedy);
            // How to find an id, in the command line's words (memd's
            // errors name no surface's commands).
            let hint = match kind {
                Kind::NotFound => {
                    " (`memd forget --match TEXT` lists entries and facts by their words; `memd runs` lists runs)"
                }
                _ => "",
            };
            let said = memd::remedy::with(format!("{e:#}"), remedy, Surface::Cli);
            eprintln!("memd: {said}{hint}");
            exit_code(kind)
        }
    }
}

/// What clap says of the arguments (help, a version, a usage error),
/// with its exit code; its output closed by the reader ends memd as any
/// command's does ([`cli::out`]).
fn clap_said(e: &clap::Error) -> ExitCode {
    if let Err(io) = e.print()
        && io.kind() == std::io::ErrorKind::BrokenPipe
    {
        cli::out::end_as_a_pipe_does();
    }
    ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2))
}

/// Exit codes, documented in docs/CLI.md (one table for every command): 1 a failure, 2 a request that
/// cannot succeed as given (clap's code for usage errors too), 3 busy (try
/// again later), 4 no such id, 5 a file that needs fixing by hand, 6 done
/// in part (the rest is pending and tried again).
fn exit_code(kind: Kind) -> ExitCode {
    ExitCode::from(match kind {
        Kind::Other => 1,
        Kind::Invalid => 2,
        Kind::Busy => 3,
        Kind::NotFound => 4,
        Kind::Corrupt => 5,
        Kind::Unfinished => 6,
    })
}
