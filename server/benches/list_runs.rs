//! Listing 10,000 run directories, cold and warm.
//!
//! `cargo bench -p server --bench list_runs [-- RUNS]` generates its own tree of
//! RUNS run directories (default 10,000) in a temp folder, then times:
//! - cold: a fresh index (nothing cached) lists the tree — every snapshot, state
//!   and events tail is read and parsed (the OS page cache is warm: the tree was
//!   just written);
//! - warm: the same index lists the unchanged tree again — a walk and a `stat` per
//!   file, no file parsed (checked: the run fails if any file is re-parsed);
//! - version: the cheap list version a page polls.
//!
//! Figures are per 1,000 runs, with the warm/cold ratio, all from one run.

use std::path::Path;
use std::time::Instant;

use server::runview::RunIndex;

pub fn write_tree(root: &Path, runs: usize) {
    for i in 0..runs {
        let dir = root.join(format!("batch-{:03}/run-{i:05}", i / 100));
        std::fs::create_dir_all(dir.join("calls")).unwrap();
        std::fs::write(
            dir.join("snapshot.json"),
            format!(r#"{{"schema_version":1,"name":"run-{i}","created_at":"2026-11-30T09:00:00Z","settings":{{"model":"qwen3-32b","rounds":8,"slots_per_round":3}}}}"#),
        )
        .unwrap();
        std::fs::write(
            dir.join("state.json"),
            r#"{"schema_version":1,"rounds_written":4,"opened_at":"2026-11-30T09:00:00Z","updated_at":"2026-11-30T09:30:00Z","last_stop":null}"#,
        )
        .unwrap();
        let mut events =
            String::from("{\"at\":\"2026-11-30T09:00:00Z\",\"event\":\"open\",\"host\":\"elsewhere\",\"pid\":7}\n");
        for r in 1..=4 {
            events.push_str(&format!(
                "{{\"at\":\"2026-11-30T09:0{r}:00Z\",\"event\":\"phase\",\"phase\":\"propose\",\"round\":{r}}}\n"
            ));
            events.push_str(&format!(
                "{{\"at\":\"2026-11-30T09:0{r}:30Z\",\"event\":\"call_end\",\"call\":{r},\"tokens\":1800}}\n"
            ));
        }
        std::fs::write(dir.join("events.jsonl"), events).unwrap();
        std::fs::write(dir.join("ledger.jsonl"), "{\"round\":1,\"slot\":1,\"t\":2.1}\n".repeat(12)).unwrap();
    }
}

fn main() {
    let runs: usize = std::env::args().skip(1).find_map(|a| a.parse().ok()).unwrap_or(10_000);
    let tmp = tempfile::tempdir().unwrap();
    let t = Instant::now();
    write_tree(tmp.path(), runs);
    eprintln!("generated {runs} run directories in {:.1} s", t.elapsed().as_secs_f64());

    let index = RunIndex::new(tmp.path());
    let t = Instant::now();
    let cold = index.list();
    let cold_s = t.elapsed().as_secs_f64();
    assert_eq!(cold.runs.len(), runs);
    let parsed_cold = index.files_parsed();

    let mut warm_s = f64::MAX;
    for _ in 0..3 {
        let t = Instant::now();
        let warm = index.list();
        warm_s = warm_s.min(t.elapsed().as_secs_f64());
        assert_eq!(warm.version, cold.version);
    }
    let reparsed = index.files_parsed() - parsed_cold;
    assert_eq!(reparsed, 0, "a warm re-list of an unchanged tree re-parsed {reparsed} files");

    let t = Instant::now();
    let v = index.list_version();
    let version_s = t.elapsed().as_secs_f64();
    assert_eq!(v, cold.version);

    let per_k = |s: f64| s * 1000.0 / runs as f64 * 1000.0;
    println!("list_runs over {runs} run directories ({parsed_cold} files parsed cold, 0 warm)");
    println!("  cold list : {:8.1} ms per 1,000 runs", per_k(cold_s));
    println!("  warm list : {:8.1} ms per 1,000 runs  ({:.2} of cold)", per_k(warm_s), warm_s / cold_s);
    println!("  version   : {:8.1} ms per 1,000 runs  ({:.2} of cold)", per_k(version_s), version_s / cold_s);
}
