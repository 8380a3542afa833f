//! Helpers shared by the tests.

use std::path::Path;
use std::process::{Command, Output};

/// Run the real `memd` binary with `args` in memory directory `dir`.
pub fn memd(dir: &Path, args: &[&str]) -> Output {
    memd_with_stdin(dir, args, None)
}

pub fn memd_with_stdin(dir: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_memd"));
    cmd.arg("--dir").arg(dir).args(args);
    cmd.env_remove("MEMD_DIR");
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn memd");
    {
        let mut pipe = child.stdin.take().unwrap();
        if let Some(s) = stdin {
            pipe.write_all(s.as_bytes()).unwrap();
        }
    }
    child.wait_with_output().expect("memd runs")
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A fresh, initialised memory directory.
pub fn memory_dir() -> (tempfile::TempDir, memd::Layout) {
    let tmp = tempfile::tempdir().unwrap();
    let layout = memd::layout::init(tmp.path()).unwrap();
    (tmp, layout)
}
