//! The one support module of the server's integration tests and benches
//! (a bench includes it by path): a served `runboard serve` and plain HTTP to
//! it, the console test campaign (`server::demo::fixture`, shared with the
//! end-to-end suite), simulated runs, generated run sets at scale, and the
//! bounded waits — no test or bench writes its own deadline loop.
#![allow(dead_code)]

pub mod generate;
pub mod served;
pub mod standin;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use server::demo::simulate::{simulate_run, SimEnd, SimOptions};

/// Writes a whole simulated run into `dir` (no pauses), in this process.
pub async fn write_run(dir: &Path, rounds: u32, seed: u64) -> SimEnd {
    let opts = SimOptions { rounds, slots: 2, step: Duration::ZERO, seed, ..SimOptions::default() };
    simulate_run(dir, &opts, std::future::pending()).await.expect("simulated run")
}

/// A campaign root with two finished runs, one nested deeper, and a broken one.
pub async fn campaign() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("campaign");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("campaign.toml"), "schema_version = 1\nname = \"test campaign\"\n").unwrap();
    write_run(&root.join("runs/a/first"), 2, 1).await;
    write_run(&root.join("runs/b/deeper/second"), 3, 2).await;
    let broken = root.join("runs/broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("snapshot.json"), "{\"schema_version\": 1, \"settings\": [").unwrap();
    (tmp, root)
}

/// A site root with a `pkg/` bundle stand-in and a public file.
pub fn site(tmp: &Path) -> PathBuf {
    let site = tmp.join("site");
    std::fs::create_dir_all(site.join("pkg")).unwrap();
    std::fs::write(site.join("pkg/runboard.js"), "console.log('v1');\n").unwrap();
    std::fs::write(site.join("pkg/runboard.css"), "body{}\n").unwrap();
    std::fs::write(site.join("favicon.ico"), [0u8, 0, 1, 0]).unwrap();
    site
}

/// Waits until `ok` holds, asking every 50 ms, at most `within`: whether it held.
pub fn wait_until(within: Duration, mut ok: impl FnMut() -> bool) -> bool {
    let until = Instant::now() + within;
    loop {
        if ok() {
            return true;
        }
        if Instant::now() >= until {
            return false;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until `ok` holds, at most `within`; fails the test naming `what` if not.
pub fn wait_for(what: &str, within: Duration, ok: impl FnMut() -> bool) {
    assert!(wait_until(within, ok), "timed out after {within:?} waiting for {what}");
}
