//! The run list at 10,000 and 100,000 runs, in one run, as ratios.
//!
//! `cargo bench -p server --bench scale [-- N1 N2]` (default 10,000 and
//! 100,000) generates each tree of run directories (the `list_runs` bench's
//! shape: a snapshot, a state, an events log and a ledger each) and measures:
//! - in process: the full list cold (every file parsed) and walked again
//!   (a `stat` per file: what a list costs without a server's watch), and
//!   the memory the index holds per run (this process's resident set after
//!   the cold list, less before it);
//! - the real server (`runboard serve --root` on loopback): start to the first
//!   page of 100 answered over HTTP without the list cache (a fresh data
//!   folder) and with it (the same folder, the cache the first start saved);
//!   then, warm, over HTTP (best of 5): the first page of 100, the whole list,
//!   the list version; and the server's peak resident set.
//!
//! Every figure of both sizes comes from this one run; compare the ratios.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use server::runview::RunIndex;

#[path = "../tests/common/mod.rs"]
mod common;
use common::served::get_text;

#[path = "list_runs.rs"]
#[allow(dead_code)]
mod list_runs;

/// This process's resident set (`VmRSS`) or a process's peak (`VmHWM`), in KiB.
fn status_kib(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| s.lines().find(|l| l.starts_with(field)).map(str::to_owned))
        .and_then(|l| l.split_whitespace().nth(1).and_then(|v| v.parse().ok()))
        .unwrap_or(0)
}

fn best_of<T>(n: usize, mut f: impl FnMut() -> T) -> (f64, T) {
    let mut best = f64::MAX;
    let mut last = None;
    for _ in 0..n {
        let t = Instant::now();
        let v = f();
        best = best.min(t.elapsed().as_secs_f64());
        last = Some(v);
    }
    (best, last.unwrap())
}

/// What the real server did.
struct Served {
    start_s: f64,
    /// Best of 5, once started: the first page of 100, the whole list, the version.
    first_page_s: f64,
    full_list_s: f64,
    version_s: f64,
    peak_kib: u64,
}

/// Starts the real server on `root` with `data`: the seconds from spawn to
/// the first page of 100 answered, then warm requests over HTTP, and the
/// server's peak resident set (KiB).
fn serve_and_ask(root: &Path, data: &Path) -> Served {
    let t = Instant::now();
    let child = Command::new(env!("CARGO_BIN_EXE_runboard"))
        .args(["serve", "--port", "0", "--root"])
        .arg(root)
        .arg("--data-dir")
        .arg(data)
        .env("RUNBOARD_TOKEN", "")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let child = common::served::served(child);
    let addr = child.addr.clone();
    let (status, body) = get_text(&addr, "/api/runs?limit=100");
    let start_s = t.elapsed().as_secs_f64();
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"runs\""), "a page of runs");
    // Warm: once the server's watch of the root is set up (it starts after
    // the first list; without it every list walks the tree).
    std::thread::sleep(Duration::from_secs(3));
    let (first_page_s, _) = best_of(5, || get_text(&addr, "/api/runs?limit=100"));
    let (full_list_s, (_, all)) = best_of(5, || get_text(&addr, "/api/runs?limit=1000000"));
    assert!(all.len() > body.len());
    let (version_s, _) = best_of(5, || get_text(&addr, "/api/runs/version"));
    let peak_kib = status_kib(&child.child.id().to_string(), "VmHWM:");
    // The list cache is saved in the background after a full list (80 MiB at
    // 100,000 runs): wait until it is written and quiet before this server
    // (the PID started here) is asked to stop.
    let cache_len = || {
        std::fs::read_dir(data.join("list-cache"))
            .map(|d| d.flatten().filter_map(|e| e.metadata().ok()).map(|m| m.len()).sum::<u64>())
            .unwrap_or(0)
    };
    let mut last = (0, Instant::now());
    while last.1.elapsed() < Duration::from_secs(2) || last.0 == 0 {
        std::thread::sleep(Duration::from_millis(200));
        let now = cache_len();
        if now != last.0 {
            last = (now, Instant::now());
        }
        assert!(t.elapsed() < Duration::from_secs(300), "the list cache was never written");
    }
    let mut child = child;
    let _ =
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.child.id() as i32), nix::sys::signal::Signal::SIGTERM);
    let _ = child.child.wait();
    Served { start_s, first_page_s, full_list_s, version_s, peak_kib }
}

struct Figures {
    runs: usize,
    cold_s: f64,
    walk_s: f64,
    kib_per_run: f64,
    fresh: Served,
    cached: Served,
}

fn measure(runs: usize) -> Figures {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("runs");
    let t = Instant::now();
    list_runs::write_tree(&root, runs);
    eprintln!("generated {runs} run directories in {:.1} s", t.elapsed().as_secs_f64());

    let before = status_kib("self", "VmRSS:");
    let index = RunIndex::new(&root);
    let (cold_s, cold) = best_of(1, || index.list_shared());
    assert_eq!(cold.runs.len(), runs);
    let after = status_kib("self", "VmRSS:");
    // Without a server's watch every list walks the tree (a `stat` per file).
    let (walk_s, _) = best_of(3, || index.list_shared());
    let kib_per_run = after.saturating_sub(before) as f64 / runs as f64;
    drop((index, cold));

    let data = tmp.path().join("data");
    let fresh = serve_and_ask(&root, &data);
    let cached = serve_and_ask(&root, &data);
    Figures { runs, cold_s, walk_s, kib_per_run, fresh, cached }
}

fn main() {
    let sizes: Vec<usize> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let sizes = if sizes.len() == 2 { sizes } else { vec![10_000, 100_000] };
    let (a, b) = (measure(sizes[0]), measure(sizes[1]));
    let ms = |s: f64| format!("{:10.2} ms", s * 1000.0);
    println!("the run list at {} and {} runs (one run; ratio = larger ÷ smaller):", a.runs, b.runs);
    println!("{:48} {:>13} {:>13} {:>7}", "", a.runs, b.runs, "ratio");
    let row = |what: &str, x: f64, y: f64| println!("{what:48} {} {} {:7.2}", ms(x), ms(y), y / x);
    row("in process: full list, cold (every file parsed)", a.cold_s, b.cold_s);
    row("in process: full list, walked again (no watch)", a.walk_s, b.walk_s);
    row("server: start → first page, no list cache", a.fresh.start_s, b.fresh.start_s);
    row("server: start → first page, with the list cache", a.cached.start_s, b.cached.start_s);
    row("server: first page of 100, warm (HTTP)", a.cached.first_page_s, b.cached.first_page_s);
    row("server: full list, warm (HTTP)", a.cached.full_list_s, b.cached.full_list_s);
    row("server: list version, warm (HTTP)", a.cached.version_s, b.cached.version_s);
    println!(
        "{:48} {:10.2} KiB {:10.2} KiB {:7.2}",
        "in process: index memory per run (resident)",
        a.kib_per_run,
        b.kib_per_run,
        b.kib_per_run / a.kib_per_run
    );
    let mib = |k: u64| k as f64 / 1024.0;
    println!(
        "{:48} {:10.1} MiB {:10.1} MiB {:7.2}",
        "server: peak resident set (cached start)",
        mib(a.cached.peak_kib),
        mib(b.cached.peak_kib),
        b.cached.peak_kib as f64 / a.cached.peak_kib as f64
    );
    println!(
        "{:48} {:10.2} KiB {:10.2} KiB {:7.2}",
        "server: peak resident set per run",
        a.cached.peak_kib as f64 / a.runs as f64,
        b.cached.peak_kib as f64 / b.runs as f64,
        (b.cached.peak_kib as f64 / b.runs as f64) / (a.cached.peak_kib as f64 / a.runs as f64)
    );
}
