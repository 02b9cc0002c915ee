//! Reading a run whose ledger is large, and re-reading it after an append.
//!
//! `cargo bench -p server --bench read_run [-- MIB]` writes a run whose ledger is
//! MIB mebibytes (default 1024) of realistic trial lines, then reports, all from
//! one run:
//! - baseline: bare `serde_json` parsing each line into a `Value` (file already in
//!   memory, so it is pure parsing);
//! - cold: runboard's reader (read the file, parse every line, build the view);
//!   the ratio of throughputs must be at least 0.5;
//! - after a 1 MiB append: the re-read (only the appended bytes are read and
//!   parsed), as a ratio to reading a run of just that 1 MiB cold; and the same
//!   re-read with the whole view assembled again (which is O(trials), not O(bytes)).

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use server::runview::{read_run, refresh, ProcessProbe, RunCursors, Within};

/// A trial line as a campaign writes it: parents, code, the gate's graph, the
/// evaluator's measures and admission's outcome (one in thirty accepted).
fn line(i: u64) -> String {
    let round = i / 3 + 1;
    let slot = i % 3 + 1;
    let t = (i % 997) as f64 / 331.0;
    let window = 3 + i % 37;
    let outcome = if i.is_multiple_of(30) {
        format!("\"factor\":\"f{i}\",\"t_threshold\":2.5,\"outcome\":{{\"stage\":\"admission\",\"accepted\":true}}")
    } else {
        format!("\"outcome\":{{\"stage\":\"admission\",\"refused\":\"t {t:.2} below threshold 2.50\"}}")
    };
    format!(
        "{{\"round\":{round},\"slot\":{slot},\"trial\":\"r{round:06}s{slot}\",\"attempt\":1,\"parents\":[\"r{:06}s{slot}\"],\
         \"code\":\"rank(ts_mean(close, {window}))\",\
         \"graph\":{{\"op\":\"rank\",\"args\":[{{\"op\":\"ts_mean\",\"args\":[{{\"field\":\"close\"}},{window}]}}]}},\
         \"t\":{t:.6},\"train_ic\":{:.6},\"max_abs_corr\":{:.6},\"coverage\":0.9,\"monotonicity\":0.7,\"tokens\":{},{outcome}}}\n",
        round.saturating_sub(1).max(1),
        ((i % 13) as f64 - 4.0) / 100.0,
        (i % 89) as f64 / 97.0,
        900 + i % 1500,
    )
}

/// Appends lines from `from` until `bytes` are written; returns the next index.
fn append(dir: &Path, from: u64, bytes: u64) -> u64 {
    let f = std::fs::OpenOptions::new().create(true).append(true).open(dir.join("ledger.jsonl")).unwrap();
    let mut w = std::io::BufWriter::with_capacity(1 << 20, f);
    let (mut i, mut written) = (from, 0u64);
    while written < bytes {
        let l = line(i);
        w.write_all(l.as_bytes()).unwrap();
        written += l.len() as u64;
        i += 1;
    }
    w.flush().unwrap();
    std::fs::write(dir.join("state.json"), format!("{{\"schema_version\":1,\"rounds_written\":{}}}", i / 3 + 1))
        .unwrap();
    i
}

fn run_dir(root: &Path, name: &str) -> std::path::PathBuf {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("snapshot.json"), r#"{"schema_version":1,"settings":{"model":"m"}}"#).unwrap();
    dir
}

fn main() {
    let mib: u64 = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(1024);
    let tmp = tempfile::tempdir().unwrap();
    let big = run_dir(tmp.path(), "big");
    let next = append(&big, 0, mib << 20);
    let size = std::fs::metadata(big.join("ledger.jsonl")).unwrap().len();
    let probe = ProcessProbe::this_host();

    // Baseline: bare serde_json over the same lines, bytes already in memory.
    let bytes = std::fs::read(big.join("ledger.jsonl")).unwrap();
    let t = Instant::now();
    let mut n = 0usize;
    for l in bytes.split(|&b| b == b'\n').filter(|l| !l.is_empty()) {
        let v: serde_json::Value = serde_json::from_slice(l).unwrap();
        n += usize::from(v.is_object());
    }
    let base = t.elapsed().as_secs_f64();
    drop(bytes);

    let mut cursors = RunCursors::default();
    let t = Instant::now();
    let view = read_run(&Within::new(tmp.path()), &big, "big", "big", &probe, &mut cursors);
    let cold = t.elapsed().as_secs_f64();
    let trials: usize = view.rounds.iter().map(|r| r.trials.len()).sum();
    assert_eq!(trials, n, "every line read");
    drop(view);

    // Append 1 MiB and re-read with the same cursors.
    append(&big, next, 1 << 20);
    let t = Instant::now();
    let read = refresh(&Within::new(tmp.path()), &big, &mut cursors);
    let reread = t.elapsed().as_secs_f64();
    assert!((1 << 20..2 << 20).contains(&read), "re-read {read} bytes");
    append(&big, next + 100_000, 1 << 20);
    let t = Instant::now();
    let _ = read_run(&Within::new(tmp.path()), &big, "big", "big", &probe, &mut cursors);
    let reread_view = t.elapsed().as_secs_f64();

    // Reading a run of just 1 MiB, cold.
    let small = run_dir(tmp.path(), "small");
    append(&small, 0, 1 << 20);
    let t = Instant::now();
    let _ = read_run(&Within::new(tmp.path()), &small, "small", "small", &probe, &mut RunCursors::default());
    let small_cold = t.elapsed().as_secs_f64();

    let mbs = |s: f64| size as f64 / s / 1e6;
    println!("ledger of {:.0} MiB, {n} lines", size as f64 / (1 << 20) as f64);
    println!("  bare serde_json (Value) : {:7.1} MB/s", mbs(base));
    println!("  runboard cold read      : {:7.1} MB/s  ({:.2} of bare serde_json)", mbs(cold), base / cold);
    println!(
        "  after a 1 MiB append: re-read {:.1} ms = {:.2} x reading 1 MiB cold ({:.1} ms); with the view rebuilt {:.1} ms",
        reread * 1e3,
        reread / small_cold,
        small_cold * 1e3,
        reread_view * 1e3
    );
}
