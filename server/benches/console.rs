//! The console at scale.
//!
//! `cargo bench -p server --bench console [-- SECONDS CLIENTS]` (default 60 s,
//! 200 clients):
//!
//! 1. **Coverage** over a 100,000-row matrix and 1,000 run sets (100 cell
//!    records each), in process: the first coverage of a fresh console (files
//!    in the page cache, nothing parsed: "server-cold"), then warm (nothing
//!    changed), then after one run set changed; the ratio cold ÷ warm.
//! 2. **`/api/live` under load**: a real `runboard serve` on a campaign whose
//!    live batch has 10,000 cells; CLIENTS clients poll `/api/live` every
//!    second for SECONDS; latency p50 / p99 / max, errors, and how many cell
//!    records the server read during the load while nothing changed (must be 0).
//!
//! All figures come from one run; compare ratios across machines, not times.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;

#[path = "../tests/common/mod.rs"]
mod common;
use common::generate::{factors, write_run_set};

fn bin() -> String {
    std::env::var("RUNBOARD_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_runboard").to_owned())
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn coverage(secs_unused: u64) {
    let _ = secs_unused;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(root.join("campaign.toml"), "schema_version = 1\nname = \"coverage\"\n").unwrap();
    let t = Instant::now();
    let mut m = String::from("condition,task,phase,seed,repetition\n");
    for i in 0..100_000 {
        let f = factors(i);
        m += &format!("{},{},p,{},0\n", f["condition"].as_str().unwrap(), f["task"].as_str().unwrap(), f["seed"]);
    }
    std::fs::write(root.join("matrix.csv"), m).unwrap();
    for rs in 0..1000 {
        write_run_set(root, &format!("rs-{rs:04}"), rs * 100..rs * 100 + 100, "completed", None);
    }
    eprintln!("generated a 100,000-row matrix and 1,000 run sets in {:.1} s", t.elapsed().as_secs_f64());
    let campaign = server::campaign::Campaign::open(root);
    let t = Instant::now();
    let cold = campaign.coverage_view(None, None).unwrap();
    let cold_s = t.elapsed().as_secs_f64();
    assert_eq!(cold.totals.covered, 100_000);
    let mut warm = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let v = campaign.coverage_view(None, None).unwrap();
        warm.push(t.elapsed().as_secs_f64());
        assert_eq!(v.totals.covered, 100_000);
    }
    warm.sort_by(f64::total_cmp);
    write_run_set(root, "rs-0000", 0..100, "running", None);
    let t = Instant::now();
    campaign.coverage_view(None, None).unwrap();
    let one_changed = t.elapsed().as_secs_f64();
    println!(
        "coverage, 100,000 cells over 1,000 run sets: server-cold {:.0} ms, warm {:.0} ms (median of 5), one run set changed {:.0} ms; cold ÷ warm {:.1}×",
        cold_s * 1e3,
        warm[2] * 1e3,
        one_changed * 1e3,
        cold_s / warm[2]
    );
}

fn live(secs: u64, clients: usize) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("campaign");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("campaign.toml"), "schema_version = 1\nname = \"live\"\n[runner]\ncommand = [\"true\"]\n")
        .unwrap();
    // A live batch of 10,000 cells: its driver is this process (alive), its
    // unit this process too (its PID and start time).
    let me = std::process::id();
    write_run_set(&root, "big", 0..10_000, "running", Some(me));
    let start = std::fs::read_to_string(format!("/proc/{me}/stat")).unwrap();
    let pid_start: u64 = start[start.rfind(')').unwrap() + 1..].split_whitespace().nth(19).unwrap().parse().unwrap();
    std::fs::create_dir_all(root.join(".runboard/units")).unwrap();
    std::fs::write(
        root.join(".runboard/units/rb-big.json"),
        json!({"schema_version": 1, "unit": "rb-big", "backend": "local", "run_set": "big", "spec": "specs/committed/0001-big.json",
               "command": ["runboard", "drive"], "started_at": "2026-12-01T00:00:00.000Z", "pid": me, "pid_start": pid_start,
               "driver_pid": me})
        .to_string(),
    )
    .unwrap();
    let mut server = common::served::served(
        common::served::serve_command(&bin(), &root).arg("--data-dir").arg(tmp.path().join("data")).spawn().unwrap(),
    );
    let base = format!("http://{}", server.addr);
    let pid = server.child.id();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = common::served::client(&server.addr);
    let reads = |rt: &tokio::runtime::Runtime| -> u64 {
        rt.block_on(async {
            let v: serde_json::Value =
                client.get(format!("{base}/api/debug/readers")).send().await.unwrap().json().await.unwrap();
            v["campaign"]["cell_files_read"].as_u64().unwrap_or(u64::MAX)
        })
    };
    // The first look reads the batch.
    let first: serde_json::Value =
        rt.block_on(async { client.get(format!("{base}/api/live")).send().await.unwrap().json().await.unwrap() });
    assert_eq!(first["state"]["state"], "running", "{}", first["words"]);
    assert_eq!(first["totals"]["planned"], 10_000);
    let before = reads(&rt);
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let errors = Arc::new(Mutex::new(0usize));
    rt.block_on(async {
        let until = Instant::now() + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for c in 0..clients {
            let (client, base, lat, err) = (client.clone(), base.clone(), latencies.clone(), errors.clone());
            tasks.push(tokio::spawn(async move {
                tokio::time::sleep(Duration::from_millis((c as u64 * 1000) / clients as u64)).await;
                while Instant::now() < until {
                    let t = Instant::now();
                    let ok = match client.get(format!("{base}/api/live")).send().await {
                        Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                        Err(_) => false,
                    };
                    if ok {
                        lat.lock().unwrap().push(t.elapsed().as_secs_f64() * 1e3);
                    } else {
                        *err.lock().unwrap() += 1;
                    }
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }));
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    let after = reads(&rt);
    let mut lat = latencies.lock().unwrap().clone();
    lat.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&lat, 0.5), percentile(&lat, 0.99));
    println!(
        "/api/live, 10,000-cell batch, {clients} clients polling every second for {secs} s: {} requests, {} errors; p50 {p50:.1} ms, p99 {p99:.1} ms (p99 ÷ p50 {:.1}), max {:.1} ms; cell records read while nothing changed: {}",
        lat.len(),
        errors.lock().unwrap(),
        p99 / p50.max(1e-9),
        lat.last().copied().unwrap_or(0.0),
        after.saturating_sub(before)
    );
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM);
    let _ = server.child.wait();
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let secs = args.first().copied().unwrap_or(60);
    let clients = args.get(1).copied().unwrap_or(200) as usize;
    coverage(secs);
    live(secs, clients);
}
