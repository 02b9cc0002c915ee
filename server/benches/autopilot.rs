//! One autopilot tick at scale: `cargo bench -p server --bench autopilot`.
//!
//! A 100,000-row matrix (10 conditions × 100 tasks × 100 seeds) and 1,000 run
//! sets of 100 cell records each, half of the matrix covered; settings that
//! enable every task on one local model and endpoint. Measured in process,
//! the tick as the loop runs it minus the launch (a dry run: observe, decide,
//! draft): the first tick of a fresh server ("server-cold": files in the page
//! cache, nothing parsed) and warm ticks (nothing changed), for each
//! objective; reported as a fraction of the 30 s interval (target ≤ 1 %).
//! Then the proposal guide's ranking over the same campaign (`GET
//! /api/propose`: every task × condition weighed, the best five drafted and
//! predicted), server-cold; warm with nothing changed (the proposals as last
//! made); and warm but asked anew (another Δ each time, so everything is
//! ranked and drafted again from the parsed records), against the same budget.

use std::path::Path;
use std::time::Instant;

use serde_json::json;

fn factors(i: usize) -> serde_json::Value {
    json!({"condition": format!("c{}", i % 10), "task": format!("t{}", (i / 10) % 100), "phase": "p",
           "seed": i / 1000, "repetition": 0})
}

fn write_run_set(root: &Path, name: &str, cells: std::ops::Range<usize>) {
    let dir = root.join("runsets").join(name);
    std::fs::create_dir_all(dir.join("cells")).unwrap();
    for i in cells.clone() {
        let f = factors(i);
        let map: std::collections::BTreeMap<String, serde_json::Value> = serde_json::from_value(f.clone()).unwrap();
        // Every other cell passed; the rest failed (drafted again).
        let status = if i % 2 == 0 { "done" } else { "failed" };
        let rec = json!({"schema_version": 1, "cell": runboard::console::spec::cell_id(&map), "factors": f, "status": status,
            "attempts": 1, "started_at": "2026-12-01T00:00:00.000Z", "ended_at": "2026-12-01T00:01:00.000Z",
            "exit_code": 0, "tokens": 1000, "score": 0.5, "log": null});
        std::fs::write(dir.join("cells").join(format!("{}.json", rec["cell"].as_str().unwrap())), rec.to_string())
            .unwrap();
    }
    let outcome = json!({"schema_version": 1, "label": name, "status": "completed", "reason": "",
        "planned": cells.len(), "attempted": cells.len(), "completed": cells.len() / 2, "failed": cells.len() / 2,
        "started_at": "2026-12-01T00:00:00.000Z"});
    std::fs::write(dir.join("batch_outcome.json"), outcome.to_string()).unwrap();
}

fn main() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    std::fs::write(
        root.join("campaign.toml"),
        "schema_version = 1\nname = \"tick\"\n[runner]\ncommand = [\"true\"]\n[[models]]\nname = \"m\"\nkind = \"local\"\n\
         [[endpoints]]\nname = \"e\"\nurl = \"http://127.0.0.1:9/v1\"\nbackend = \"vllm\"\nmodels = [\"m\"]\nrequest_preset = \"p\"\n",
    )
    .unwrap();
    let t = Instant::now();
    let mut m = String::from("condition,task,phase,seed,repetition\n");
    for i in 0..100_000 {
        let f = factors(i);
        m += &format!("{},{},p,{},0\n", f["condition"].as_str().unwrap(), f["task"].as_str().unwrap(), f["seed"]);
    }
    std::fs::write(root.join("matrix.csv"), m).unwrap();
    // 1,000 run sets cover the first 50,000 cells' records… spread over the
    // matrix so every task has both gaps and covered cells.
    for rs in 0..1000 {
        let start = (rs * 100) % 100_000;
        write_run_set(root, &format!("rs-{rs:04}"), start..start + 50);
    }
    eprintln!("generated a 100,000-row matrix and 1,000 run sets in {:.1} s", t.elapsed().as_secs_f64());
    let tasks: Vec<String> = (0..100).map(|t| format!("t{t}")).collect();
    for objective in ["fill_gaps", "least_covered", "expected_impact"] {
        let campaign = server::campaign::Campaign::open(root);
        let settings =
            json!({"models": ["m"], "tasks": tasks, "max_cells": 20, "wait_minutes": 0, "objective": objective});
        let mut state = runboard::auto::AutoState { mode: runboard::auto::Mode::On, settings, ..Default::default() };
        state.session.started_at = Some(runboard::Timestamp(0));
        server::auto::auto_state::save(root, &state).unwrap();
        let t = Instant::now();
        let cold = server::auto::autopilot::explain(&campaign).unwrap();
        let cold_s = t.elapsed().as_secs_f64();
        assert_eq!(cold.launches.len(), 1, "{}", cold.verdict);
        let mut warm = Vec::new();
        for _ in 0..5 {
            let t = Instant::now();
            let r = server::auto::autopilot::explain(&campaign).unwrap();
            warm.push(t.elapsed().as_secs_f64());
            assert_eq!(r.launches.len(), 1);
        }
        warm.sort_by(f64::total_cmp);
        println!(
            "tick ({objective}), 100,000-row matrix, 1,000 run sets: server-cold {:.0} ms ({:.2} % of 30 s), warm {:.0} ms ({:.3} % of 30 s, median of 5); decided: {}",
            cold_s * 1e3,
            cold_s / 30.0 * 100.0,
            warm[2] * 1e3,
            warm[2] / 30.0 * 100.0,
            cold.launches[0].why
        );
    }
    let params = runboard::results::propose::ProposeParams::default();
    let campaign = server::campaign::Campaign::open(root);
    let t = Instant::now();
    let cold = campaign.propose(&params).unwrap();
    let cold_s = t.elapsed().as_secs_f64();
    assert_eq!(cold.proposals.len(), 5, "{:?}", cold.notes);
    let mut warm = Vec::new();
    for _ in 0..5 {
        let t = Instant::now();
        let p = campaign.propose(&params).unwrap();
        warm.push(t.elapsed().as_secs_f64());
        assert_eq!(p.proposals, cold.proposals);
    }
    warm.sort_by(f64::total_cmp);
    let mut anew = Vec::new();
    for i in 0..5 {
        let asked =
            runboard::results::propose::ProposeParams { delta: Some(format!("{}", 21 + i)), ..Default::default() };
        let t = Instant::now();
        let p = campaign.propose(&asked).unwrap();
        anew.push(t.elapsed().as_secs_f64());
        assert_eq!(p.proposals[0].words, cold.proposals[0].words);
    }
    anew.sort_by(f64::total_cmp);
    let pct = |s: f64| format!("{:.0} ms ({:.3} % of 30 s)", s * 1e3, s / 30.0 * 100.0);
    println!(
        "proposal guide, 100,000-row matrix, 1,000 run sets ({} candidates weighed, 5 drafted): server-cold {}, warm {} as last made, warm asked anew {} (medians of 5); first: {}",
        cold.considered,
        pct(cold_s),
        pct(warm[2]),
        pct(anew[2]),
        cold.proposals[0].words
    );
}
