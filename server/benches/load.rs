//! The console under load, and what one request for a growing run costs.
//!
//! `cargo bench -p server --bench load [-- SECONDS CLIENTS]` (default 60 s, 200
//! clients) starts the real `runboard serve` on a generated campaign (200 finished
//! runs plus one run a simulated agent writes live, a round every ~2 s), then:
//!
//! 1. **Per-request cost of a live run as it grows**: one client asks for the
//!    live run's view after each of its rounds (the first request after a
//!    write makes the view again from what was appended) and once more right
//!    after (the view as made, shared); the figures are the median times at a
//!    few rounds and at many, and their ratios (flat ≈ 1).
//! 2. **Load**: CLIENTS clients each poll the list version every 2 s, the list
//!    every 10 s and the live run every second, for SECONDS; then latency p50 /
//!    p99 / max, errors, and the server's threads and resident memory at the
//!    peak and 10 s after the load ends.
//!
//! All figures come from one run; compare ratios across machines, not times.

use std::process::{Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The binary under test: this build, or `RUNBOARD_BIN` (another build, to compare).
#[path = "../tests/common/mod.rs"]
mod common;

fn bin() -> String {
    std::env::var("RUNBOARD_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_runboard").to_owned())
}

fn proc_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find_map(|l| l.strip_prefix(field).map(|v| v.split_whitespace().next().unwrap_or("0").parse().unwrap_or(0)))
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let secs = args.first().copied().unwrap_or(60);
    let clients = args.get(1).copied().unwrap_or(200) as usize;
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("campaign");
    std::fs::create_dir_all(&root).unwrap();
    std::fs::write(root.join("campaign.toml"), "schema_version = 1\nname = \"load\"\n").unwrap();
    let t = Instant::now();
    for i in 0..200 {
        let dir = root.join(format!("runs/batch-{}/run-{i:03}", i / 20));
        let ok = Command::new(bin())
            .args(["simulate-run", "--rounds", "3", "--step-ms", "0", "--seed"])
            .arg((i + 1).to_string())
            .arg(&dir)
            .status()
            .unwrap();
        assert!(ok.success());
    }
    eprintln!("generated 200 runs in {:.1} s", t.elapsed().as_secs_f64());
    let live = root.join("runs/live/growing");
    let mut writer = Command::new(bin())
        .args(["simulate-run", "--rounds", "100000", "--slots", "3", "--step-ms", "30", "--seed", "99"])
        .arg(&live)
        .stdout(Stdio::null())
        .spawn()
        .unwrap();
    let mut server = common::served::served(common::served::serve_command(&bin(), &root).spawn().unwrap());
    let base = format!("http://{}", server.addr);
    let pid = server.child.id();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let client = common::served::client(&server.addr);

    // 1. The cost of one request for the live run as it grows.
    let live_url = format!("{base}/api/runs/growing");
    let rounds_of = |v: &serde_json::Value| v["row"]["rounds_written"].as_u64().unwrap_or(0);
    let mut by_rounds: Vec<(u64, f64)> = Vec::new();
    // The request right after it (nothing written in between): the view as
    // made, shared.
    let mut again_by_rounds: Vec<(u64, f64)> = Vec::new();
    rt.block_on(async {
        let until = Instant::now() + Duration::from_secs(secs.max(30));
        let mut last = u64::MAX;
        while Instant::now() < until {
            let t = Instant::now();
            let v: serde_json::Value = client.get(&live_url).send().await.unwrap().json().await.unwrap();
            let took = t.elapsed().as_secs_f64() * 1e3;
            let r = rounds_of(&v);
            if r != last {
                by_rounds.push((r, took));
                last = r;
                let t = Instant::now();
                let again: serde_json::Value = client.get(&live_url).send().await.unwrap().json().await.unwrap();
                if rounds_of(&again) == r {
                    again_by_rounds.push((r, t.elapsed().as_secs_f64() * 1e3));
                }
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
    let median_of = |xs: &[(u64, f64)]| {
        let mut v: Vec<f64> = xs.iter().map(|x| x.1).collect();
        v.sort_by(f64::total_cmp);
        percentile(&v, 0.5)
    };
    // The median of the first ten and of the last ten, and their ratio.
    let early_late = |what: &str, xs: &[(u64, f64)]| {
        let n = xs.len();
        let (early, late) = (&xs[..n.min(10)], &xs[n.saturating_sub(10)..]);
        let span = |p: &[(u64, f64)]| format!("{}–{}", p.first().map_or(0, |x| x.0), p.last().map_or(0, |x| x.0));
        println!(
            "live run, {what}: {:.2} ms at rounds {}, {:.2} ms at rounds {} (ratio {:.2})",
            median_of(early),
            span(early),
            median_of(late),
            span(late),
            median_of(late) / median_of(early).max(1e-9)
        );
    };
    early_late("one request after each written round", &by_rounds);
    early_late("the next request (nothing written since)", &again_by_rounds);

    // 2. Load.
    let latencies = Arc::new(Mutex::new(Vec::<f64>::new()));
    let errors = Arc::new(Mutex::new(0usize));
    let (mut peak_threads, mut peak_rss) = (0u64, 0u64);
    rt.block_on(async {
        let until = Instant::now() + Duration::from_secs(secs);
        let mut tasks = Vec::new();
        for c in 0..clients {
            let (client, base, lat, err) = (client.clone(), base.clone(), latencies.clone(), errors.clone());
            tasks.push(tokio::spawn(async move {
                // Spread the clients over the first second.
                tokio::time::sleep(Duration::from_millis((c as u64 * 1000) / clients as u64)).await;
                let mut tick = 0u64;
                while Instant::now() < until {
                    let mut urls = vec![format!("{base}/api/runs/growing")];
                    if tick.is_multiple_of(2) {
                        urls.push(format!("{base}/api/runs/version"));
                    }
                    if tick.is_multiple_of(10) {
                        urls.push(format!("{base}/api/runs"));
                    }
                    for url in urls {
                        let t = Instant::now();
                        let ok = match client.get(&url).send().await {
                            Ok(r) => r.status().is_success() && r.bytes().await.is_ok(),
                            Err(_) => false,
                        };
                        if ok {
                            lat.lock().unwrap().push(t.elapsed().as_secs_f64() * 1e3);
                        } else {
                            *err.lock().unwrap() += 1;
                        }
                    }
                    tick += 1;
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }));
        }
        while Instant::now() < until {
            peak_threads = peak_threads.max(proc_field(pid, "Threads:"));
            peak_rss = peak_rss.max(proc_field(pid, "VmRSS:"));
            tokio::time::sleep(Duration::from_millis(500)).await;
        }
        for t in tasks {
            let _ = t.await;
        }
    });
    std::thread::sleep(Duration::from_secs(10));
    let (after_threads, after_rss) = (proc_field(pid, "Threads:"), proc_field(pid, "VmRSS:"));
    let mut lat = latencies.lock().unwrap().clone();
    lat.sort_by(f64::total_cmp);
    println!(
        "{clients} clients for {secs} s: {} requests, {} errors; latency p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms",
        lat.len(),
        errors.lock().unwrap(),
        percentile(&lat, 0.5),
        percentile(&lat, 0.99),
        lat.last().copied().unwrap_or(0.0)
    );
    println!(
        "server threads {peak_threads} at the peak, {after_threads} 10 s after; resident memory {:.1} MB at the peak, {:.1} MB after",
        peak_rss as f64 / 1024.0,
        after_rss as f64 / 1024.0
    );
    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM);
    let _ = server.child.wait();
    let _ = writer.kill();
    let _ = writer.wait();
}
