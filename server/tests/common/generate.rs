//! Generated campaigns for the benches: cell records, outcomes and specs of
//! run sets as `runboard drive` writes them.

use std::path::Path;

use serde_json::json;

pub fn factors(i: usize) -> serde_json::Value {
    json!({"condition": format!("c{}", i % 10), "task": format!("t{}", (i / 10) % 100), "phase": "p",
           "seed": i / 1000, "repetition": 0})
}

pub fn cell_record(i: usize, status: &str) -> serde_json::Value {
    let f = factors(i);
    let map: std::collections::BTreeMap<String, serde_json::Value> = serde_json::from_value(f.clone()).unwrap();
    json!({"schema_version": 1, "cell": runboard::console::spec::cell_id(&map), "factors": f, "status": status,
           "attempts": 1, "started_at": "2026-12-01T00:00:00.000Z", "ended_at": "2026-12-01T00:01:00.000Z",
           "exit_code": 0, "tokens": 1000, "score": 0.5, "log": null})
}

pub fn write_run_set(root: &Path, name: &str, cells: std::ops::Range<usize>, status: &str, driver_pid: Option<u32>) {
    let dir = root.join("runsets").join(name);
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    for i in cells.clone() {
        let rec = cell_record(i, if status == "running" { "pending" } else { "done" });
        std::fs::write(dir.join("cells").join(format!("{}.json", rec["cell"].as_str().unwrap())), rec.to_string())
            .unwrap();
    }
    let host = nix::unistd::gethostname().unwrap().into_string().unwrap();
    let outcome = json!({"schema_version": 1, "label": name, "status": status, "reason": "",
        "planned": cells.len(), "attempted": 0, "completed": 0, "failed": 0,
        "started_at": "2026-12-01T00:00:00.000Z",
        "driver": driver_pid.map(|pid| json!({"host": host, "pid": pid}))});
    std::fs::write(dir.join("batch_outcome.json"), outcome.to_string()).unwrap();
    let spec = json!({"schema_version": 1, "label": name,
        "cells": cells.map(|i| json!({"factors": factors(i)})).collect::<Vec<_>>()});
    std::fs::write(dir.join("spec.json"), spec.to_string()).unwrap();
}
