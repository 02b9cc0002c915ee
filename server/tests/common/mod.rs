//! Helpers shared by the server's integration tests.
#![allow(dead_code)]

pub mod served;

use std::path::{Path, PathBuf};
use std::time::Duration;

use server::simulate::{simulate_run, SimEnd, SimOptions};

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
