//! The index on object storage (`[index] uri = "s3://…"`,
//! src/index/store.rs) against a real S3-compatible server: moto's
//! (`moto_server`, from PyPI), which `scripts/install-s3.sh` puts in a
//! virtualenv under the target directory and `MEMD_MOTO` names (else
//! `moto_server` on the PATH). Without it these tests skip and say why,
//! except in CI (`CI=true`), where they fail.
//!
//! The memories embed with the lexical embedder: what is under test is
//! where the table lives and what survives the store, not the embedder.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::{Duration, Instant};

use crate::support::{memd_bin, stderr, stdout};

pub(crate) const BUCKET: &str = "memd-test";

/// A moto S3 server on 127.0.0.1, stopped when dropped.
pub(crate) struct S3 {
    child: Option<Child>,
    port: u16,
    /// `moto_server` (`None`: a client of a server started elsewhere).
    moto: Option<PathBuf>,
}

impl Drop for S3 {
    fn drop(&mut self) {
        self.stop();
    }
}

/// `moto_server`, or `None` (the test skips; in CI it fails).
fn moto() -> Option<PathBuf> {
    let path = std::env::var_os("MEMD_MOTO").map_or_else(|| "moto_server".into(), PathBuf::from);
    let found = Command::new(&path).arg("--help").output().is_ok();
    if !found {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI runs scripts/install-s3.sh: moto_server must be here ({})",
            path.display()
        );
        eprintln!(
            "skipped: the object storage tests need moto's S3 server (scripts/install-s3.sh)"
        );
    }
    found.then_some(path)
}

impl S3 {
    /// A server with [`BUCKET`] made; `None` without moto.
    pub(crate) fn start() -> Option<S3> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let moto = Some(moto()?);
        let mut s3 = S3 {
            child: None,
            port,
            moto,
        };
        s3.restart();
        Some(s3)
    }

    /// The server started again on its port: empty, as moto keeps its
    /// objects in memory (so every table in it is gone).
    fn restart(&mut self) {
        self.stop();
        let child = Command::new(self.moto.as_ref().expect("a server this test started"))
            .args(["-H", "127.0.0.1", "-p", &self.port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        let until = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < until, "moto_server did not listen");
            std::thread::sleep(Duration::from_millis(100));
        }
        let (status, body) = self.request("PUT", &format!("/{BUCKET}"));
        assert_eq!(status, 200, "making the bucket: {body}");
    }

    /// A client of the server this process's `AWS_ENDPOINT_URL` names
    /// ([`Self::export_env`]); it stops nothing when dropped.
    pub(crate) fn from_env() -> S3 {
        let url = std::env::var("AWS_ENDPOINT_URL").expect("AWS_ENDPOINT_URL");
        let port = url.rsplit(':').next().unwrap().parse().unwrap();
        S3 {
            child: None,
            port,
            moto: None,
        }
    }

    /// Delete the table of memory `name` under `[index] uri` `uri`
    /// (every key under it), as a store that lost it would.
    pub(crate) fn delete_table(&self, uri: &str, name: &str) {
        let prefix = uri.strip_prefix(&format!("s3://{BUCKET}/")).unwrap();
        loop {
            let keys = self.keys(&format!("{prefix}/{name}/"));
            if keys.is_empty() {
                return;
            }
            for key in keys {
                let (status, body) = self.request("DELETE", &format!("/{BUCKET}/{key}"));
                assert_eq!(status, 204, "deleting {key}: {body}");
            }
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// One request as the account of [`Self::env`]'s key: moto does not
    /// check signatures, but takes a request without one for an
    /// anonymous user's, who may not delete an object.
    fn request(&self, method: &str, path: &str) -> (u16, String) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        let auth = "AWS4-HMAC-SHA256 Credential=memd-test/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=0";
        write!(
            s,
            "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: {auth}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        )
        .unwrap();
        let mut reply = String::new();
        s.read_to_string(&mut reply).unwrap();
        let status = reply
            .split(' ')
            .nth(1)
            .and_then(|c| c.parse().ok())
            .unwrap_or(0);
        (status, reply)
    }

    /// The keys of the bucket under `prefix`.
    fn keys(&self, prefix: &str) -> Vec<String> {
        let (status, body) = self.request(
            "GET",
            &format!("/{BUCKET}?list-type=2&max-keys=1000&prefix={prefix}"),
        );
        assert_eq!(status, 200, "listing the bucket: {body}");
        body.split("<Key>")
            .skip(1)
            .filter_map(|k| k.split("</Key>").next())
            .map(str::to_string)
            .collect()
    }

    /// The store's credentials and endpoint, as memd reads them.
    fn env(&self) -> [(&'static str, String); 5] {
        [
            ("AWS_ACCESS_KEY_ID", "memd-test".into()),
            ("AWS_SECRET_ACCESS_KEY", "memd-test".into()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ENDPOINT_URL", self.url()),
            ("AWS_ALLOW_HTTP", "true".into()),
        ]
    }

    /// [`Self::env`] set in this process, for the memories it opens
    /// itself and the daemons it starts (which inherit it). Only memd's
    /// S3 store reads these variables, and only for a memory whose
    /// `[index] uri` is set.
    pub(crate) fn export_env(&self) {
        for (k, v) in self.env() {
            // SAFETY: the test that calls this sets the same values before
            // it opens any memory; nothing else in the process reads or
            // writes them.
            unsafe { std::env::set_var(k, v) };
        }
    }

    /// `memd` with `args` in memory `dir`, its store's credentials and
    /// endpoint in the environment.
    fn memd(&self, dir: &Path, args: &[&str]) -> Output {
        Command::new(memd_bin())
            .arg("--dir")
            .arg(dir)
            .args(args)
            .env_remove("MEMD_DIR")
            .env_remove("MEMD_LOG")
            .envs(self.env())
            .output()
            .unwrap()
    }

    /// Memory `name` under `parent`, its table under `s3://BUCKET/agents`.
    fn memory(&self, parent: &Path, name: &str) -> PathBuf {
        let dir = parent.join(name);
        crate::trust::ok(&dir, &["init"]);
        std::fs::write(
            dir.join("memd.toml"),
            format!("[embedder]\nkind = \"lexical\"\n\n[index]\nuri = \"s3://{BUCKET}/agents\"\n"),
        )
        .unwrap();
        dir
    }

    fn ok(&self, dir: &Path, args: &[&str]) -> String {
        let out = self.memd(dir, args);
        assert!(
            out.status.success(),
            "memd {args:?}: {}\n{}",
            stdout(&out),
            stderr(&out)
        );
        stdout(&out)
    }

    /// The table's version manifests, by key.
    fn manifests(&self, name: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .keys(&format!("agents/{name}/"))
            .into_iter()
            .filter(|k| k.contains("/_versions/"))
            .collect();
        v.sort();
        v
    }
}

const FACTS: [&str; 3] = [
    "The user keeps bees in the garden",
    "The user's sister lives in Lisbon",
    "The user plays the cello on Sundays",
];

fn add_facts(s3: &S3, dir: &Path, facts: &[&str]) {
    for f in facts {
        s3.ok(dir, &["add", f]);
    }
}

/// Every fact of `facts` is the first hit of a search for its own words.
fn finds_each(s3: &S3, dir: &Path, facts: &[&str]) {
    for f in facts {
        let out = s3.ok(dir, &["search", f, "-k", "1"]);
        assert!(out.contains(f), "search {f:?} found {out:?}");
    }
}

/// `fact` is in `dir`'s newest day file, whatever the store did to the
/// `add` that wrote it (`added`).
fn in_day_file(dir: &Path, fact: &str, added: &Output) {
    let day = dir.join(format!("archive/{}.md", crate::support::archive_day(dir)));
    assert!(
        std::fs::read_to_string(&day).unwrap().contains(fact),
        "the fact is in the day file whatever the store does: {}",
        stderr(added)
    );
}

#[test]
fn an_index_on_s3_keeps_its_table_in_the_bucket_and_finds_every_fact() {
    let Some(s3) = S3::start() else { return };
    let parent = tempfile::tempdir().unwrap();
    let dir = s3.memory(parent.path(), "alice");
    add_facts(&s3, &dir, &FACTS);
    finds_each(&s3, &dir, &FACTS);
    assert!(
        !dir.join(".memd/index/lance").exists(),
        "the table is not in the memory"
    );
    let keys = s3.keys("agents/alice/");
    assert!(
        keys.iter().any(|k| k.contains(".lance/data/")),
        "the table's data is in the bucket: {keys:?}"
    );
    s3.ok(&dir, &["check"]);

    s3.ok(&dir, &["reindex", "--clear"]);
    finds_each(&s3, &dir, &FACTS);
    s3.ok(&dir, &["check"]);
}

#[test]
fn a_memory_copied_to_another_root_keeps_its_table_on_s3() {
    let Some(s3) = S3::start() else { return };
    let (from, to) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let dir = s3.memory(from.path(), "bob");
    add_facts(&s3, &dir, &FACTS);
    finds_each(&s3, &dir, &FACTS);
    let before = s3.manifests("bob");
    assert!(!before.is_empty(), "the table has versions");

    let moved = to.path().join("bob");
    let copied = Command::new("cp").arg("-a").arg(&dir).arg(&moved).status();
    assert!(copied.unwrap().success());
    std::fs::remove_dir_all(&dir).unwrap();
    finds_each(&s3, &moved, &FACTS);
    s3.ok(&moved, &["check"]);
    let after = s3.manifests("bob");
    assert!(
        before.iter().any(|m| after.contains(m)),
        "the table was built anew (a rebuild drops every version): {before:?} then {after:?}"
    );
}

#[test]
fn a_store_that_does_not_answer_fails_the_search_and_loses_no_fact() {
    let Some(mut s3) = S3::start() else { return };
    let parent = tempfile::tempdir().unwrap();
    let dir = s3.memory(parent.path(), "carol");
    add_facts(&s3, &dir, &FACTS[..2]);
    s3.stop();

    let started = Instant::now();
    in_day_file(&dir, FACTS[2], &s3.memd(&dir, &["add", FACTS[2]]));
    let searched = s3.memd(&dir, &["search", FACTS[0]]);
    assert!(!searched.status.success(), "{}", stdout(&searched));
    let why = stderr(&searched);
    assert!(
        why.contains("does not answer") && !why.contains("panicked") && why.len() < 1_000,
        "a clear error: {why}"
    );
    eprintln!(
        "add and search against a store that is down took {:?}",
        started.elapsed()
    );

    // moto comes back empty: the table is gone, and memd builds it anew
    // from the files rather than trust its own record of what it held.
    s3.restart();
    finds_each(&s3, &dir, &FACTS);
    s3.ok(&dir, &["check"]);
}

#[test]
fn a_bucket_that_does_not_exist_is_named_and_no_fact_is_lost() {
    let Some(s3) = S3::start() else { return };
    let parent = tempfile::tempdir().unwrap();
    let dir = s3.memory(parent.path(), "erin");
    let config = std::fs::read_to_string(dir.join("memd.toml")).unwrap();
    std::fs::write(
        dir.join("memd.toml"),
        config.replace(BUCKET, "memd-no-such-bucket"),
    )
    .unwrap();
    in_day_file(&dir, FACTS[0], &s3.memd(&dir, &["add", FACTS[0]]));
    let searched = s3.memd(&dir, &["search", FACTS[0]]);
    assert!(!searched.status.success());
    let why = stderr(&searched);
    assert!(
        why.contains("bucket does not exist")
            && why.contains("s3://memd-no-such-bucket/agents/erin"),
        "{why}"
    );
}

#[test]
fn an_index_uri_that_is_not_s3_is_refused_naming_the_key() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("dave");
    crate::trust::ok(&dir, &["init"]);
    for bad in ["/tmp/elsewhere", "gs://bucket/x", "s3://"] {
        std::fs::write(dir.join("memd.toml"), format!("[index]\nuri = \"{bad}\"\n")).unwrap();
        let out = crate::support::memd(&dir, &["search", "anything"]);
        assert!(!out.status.success(), "{bad}: {}", stdout(&out));
        assert!(
            stderr(&out).contains("[index] uri"),
            "{bad}: {}",
            stderr(&out)
        );
    }
}
