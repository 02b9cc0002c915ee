//! The Inspect example's stand-in model server (`examples/inspect/
//! standin_model.py`) on a free loopback port, and the pinned Python that
//! `scripts/setup.sh` installs (Inspect AI and the `openai` SDK): the harness
//! tests' real parts.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The repository's root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The Python that has the pinned Inspect AI and `openai` SDK.
pub fn harness_python() -> PathBuf {
    let p = repo().join(".tools/inspect/bin/python");
    assert!(p.exists(), "{} is missing: run scripts/setup.sh (it installs Inspect AI there)", p.display());
    p
}

/// A running stand-in; ended when dropped.
pub struct StandIn {
    child: Child,
    /// Its base URL, `http://127.0.0.1:<port>/v1`.
    pub url: String,
}

impl Drop for StandIn {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the stand-in with `args` (`--delay`, `--log`, `--models`) on a free port.
pub fn stand_in(args: &[&str]) -> StandIn {
    let mut child = Command::new("python3")
        .arg(repo().join("examples/inspect/standin_model.py"))
        .args(["--port", "0"])
        .args(args)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().rsplit(' ').next().unwrap().to_owned();
    assert!(url.starts_with("http://127.0.0.1:") || url.starts_with("https://127.0.0.1:"), "{line:?}");
    StandIn { child, url }
}
