//! Inspect AI as cells, for real: the example campaign (`examples/inspect/`)
//! driven through the console over REST — launch, live, a pause mid-eval,
//! resume with Inspect's own `eval-retry` (finished samples kept, not
//! asked of the model again), then Evidence, Timing and Reports. Inspect is
//! the pinned `inspect-ai` that `scripts/setup.sh` installs into
//! `.tools/inspect/`; the model is the example's deterministic stand-in
//! (`standin_model.py`: no model server can run here). Evidence's rates are
//! checked against the accuracy Inspect itself reads from the same logs
//! (`inspect log dump`), not against figures worked out here.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::served::*;
use serde_json::{json, Value};

/// The example's stand-in model, each request logged to `dir/requests.jsonl`.
struct StandIn {
    server: common::standin::StandIn,
    log: PathBuf,
}

fn stand_in(dir: &Path, delay_s: f64) -> StandIn {
    let log = dir.join("requests.jsonl");
    let server = common::standin::stand_in(&["--delay", &delay_s.to_string(), "--log", log.to_str().unwrap()]);
    StandIn { server, log }
}

/// The model's sample requests so far, per (model, task). Inspect's own
/// probe ("Please say 'hello, world'") is not a sample.
fn sample_requests(log: &Path) -> BTreeMap<(String, String), usize> {
    let mut counts = BTreeMap::new();
    for line in std::fs::read_to_string(log).unwrap_or_default().lines() {
        let Ok(r) = serde_json::from_str::<Value>(line) else { continue };
        let prompt = r["prompt"].as_str().unwrap_or("");
        // The suite's prompts: arithmetic asks for a reply format, the task
        // that raises ("What is 1 + 1?") does not.
        let task = if prompt.contains("Reply as ANSWER") {
            "arithmetic"
        } else if prompt.contains("Reverse the word") {
            "reverse"
        } else if prompt.contains("What is 1 + 1?") {
            "broken"
        } else {
            continue;
        };
        *counts.entry((r["model"].as_str().unwrap_or("").to_owned(), task.to_owned())).or_insert(0) += 1;
    }
    counts
}

/// The example campaign, pointed at the stand-in and the pinned Inspect.
fn inspect_campaign(tmp: &Path, url: &str) -> PathBuf {
    let root = tmp.join("campaign");
    std::fs::create_dir_all(&root).unwrap();
    let example = common::standin::repo().join("examples/inspect");
    for f in ["matrix.csv", "suite.py"] {
        std::fs::copy(example.join(f), root.join(f)).unwrap();
    }
    let toml = std::fs::read_to_string(example.join("campaign.toml")).unwrap();
    assert!(toml.contains("http://127.0.0.1:8791/v1"));
    // A stall threshold a healthy eval's silences never reach, but short:
    // the evals run longer than it.
    let toml = format!("{}\n[stall]\nafter_s = 8.0\n", toml.replace("http://127.0.0.1:8791/v1", url));
    std::fs::write(root.join("campaign.toml"), toml).unwrap();
    std::os::unix::fs::symlink(common::standin::repo().join(".tools/inspect"), root.join(".venv")).unwrap();
    root
}

/// A cell's eval logs, oldest first.
fn eval_logs(cell_dir: &Path) -> Vec<PathBuf> {
    let mut logs: Vec<PathBuf> = std::fs::read_dir(cell_dir.join("inspect"))
        .map(|d| d.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|e| e == "json")).collect())
        .unwrap_or_default();
    logs.sort();
    logs
}

/// What Inspect itself says of a log (`inspect log dump`).
fn dump(log: &Path) -> Value {
    let out = Command::new(common::standin::harness_python())
        .args(["-m", "inspect_ai", "log", "dump"])
        .arg(log)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn inspect_evals_run_as_cells_pause_resume_with_eval_retry_and_evidence_equals_inspects_accuracy() {
    let tmp = tempfile::tempdir().unwrap();
    common::standin::harness_python();
    let model = stand_in(tmp.path(), 0.5);
    let root = inspect_campaign(tmp.path(), &model.server.url);
    let s = serve(&root, &tmp.path().join("data"));

    // Launch the whole matrix: 2 tasks × 2 models, and the eval that raises.
    let path = draft(&s.addr, json!({"label": "inspect", "max_cells": 10, "endpoint": "standin"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    let rs_dir = root.join("runsets").join(&run_set);
    wait_for("running", Duration::from_secs(60), || live_state(&s.addr).0 == "running");
    let (_, v) = live_state(&s.addr);
    assert_eq!(v["totals"]["planned"], 5, "{v}");

    // Pause once one eval has had three samples answered (one at a time:
    // `--max-connections 1`), so at least two of its samples have finished.
    // While the evals run: tokens and their samples climb on Live (the
    // calls through the gateway, the samples from Inspect's hook), and no
    // cell is called stalled.
    let (mut tokens_running, mut so_far) = (0, None);
    wait_for("an eval three samples in", Duration::from_secs(120), || {
        let (_, v) = live_state(&s.addr);
        assert_eq!(v["stalls"], json!([]), "a healthy Inspect cell is never stalled: {v}");
        if v["totals"]["done"] == 0 && v["totals"]["failed"] == 0 {
            tokens_running = tokens_running.max(v["spend"]["total_tokens"].as_u64().unwrap_or(0));
        }
        for c in v["cells"].as_array().into_iter().flatten() {
            if c["so_far"]["finished"].as_u64() >= Some(2) {
                so_far = Some(c["so_far"].clone());
            }
        }
        sample_requests(&model.log).values().any(|&n| n >= 3) && so_far.is_some()
    });
    assert!(tokens_running > 0, "tokens climbed before any cell ended");
    let so_far = so_far.unwrap();
    assert_eq!(so_far["total"], 6, "each task has 6 samples: {so_far}");
    let (_, v) = live_state(&s.addr);
    assert!(v["totals"]["running"].as_u64().unwrap() >= 1, "cells run while Inspect works: {v}");
    let (code, r) = post(&s.addr, "/api/control/pause", json!({}));
    assert_eq!(code, 200, "{r}");
    let (state, v) = live_state(&s.addr);
    assert_eq!(state, "stopped_resumable", "{v}");
    // A request the stopped evals sent just before the pause may still be
    // being logged by the stand-in's thread: count once the log is still.
    let mut before = sample_requests(&model.log);
    wait_for("the stand-in's request log to settle", Duration::from_secs(15), || {
        std::thread::sleep(Duration::from_millis(700));
        let now = sample_requests(&model.log);
        let still = now == before;
        before = now;
        still
    });

    // What each stopped cell's Inspect saved: a cancelled log with the
    // samples it finished.
    let mut kept: BTreeMap<String, (String, String, usize)> = BTreeMap::new();
    for entry in std::fs::read_dir(rs_dir.join("cells")).unwrap().flatten() {
        let rec: Value = serde_json::from_slice(&std::fs::read(entry.path()).unwrap()).unwrap();
        if rec["status"] != "stopped" {
            continue;
        }
        let cell = rec["cell"].as_str().unwrap().to_owned();
        if let Some(last) = eval_logs(&rs_dir.join("out").join(&cell)).last() {
            let d = dump(last);
            assert_eq!(d["status"], "cancelled", "a stopped cell's eval log: {}", d["status"]);
            // Finished: the samples without an error (the one running at the
            // pause is saved as `CancelledError()`).
            let n = d["samples"].as_array().map_or(0, |s| s.iter().filter(|s| s["error"].is_null()).count());
            let (m, t) = (rec["factors"]["model"].as_str().unwrap(), rec["factors"]["task"].as_str().unwrap());
            kept.insert(cell, (format!("standin-{}", m.trim_start_matches("standin-")), t.to_owned(), n));
        }
    }
    let (kept_cell, (kept_model, kept_task, kept_n)) =
        kept.iter().max_by_key(|(_, (_, _, n))| *n).map(|(c, k)| (c.clone(), k.clone())).expect("a stopped eval");
    assert!(kept_n >= 2, "the paused eval kept its finished samples: {kept:?}");

    // Resume: the stopped evals go on with `inspect eval-retry`.
    let (code, r) = post(&s.addr, "/api/control/resume", json!({"run_set": run_set}));
    assert_eq!(code, 200, "{r}");
    wait_for("the batch to end", Duration::from_secs(240), || live_state(&s.addr).0 == "idle");
    // Issue 36: Inspect's calls went through the batch's gateway (the
    // resume's too, at the address its log names) and each was counted.
    for entry in std::fs::read_dir(rs_dir.join("out")).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path().join("progress.jsonl")).unwrap_or_default();
        let lines: Vec<Value> = text.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert!(!lines.is_empty(), "{}: no call counted", entry.path().display());
        assert!(
            lines.iter().all(|l| l["via"] == "gateway" && l["input_tokens"].as_u64().unwrap() > 0),
            "{}: {lines:?}",
            entry.path().display()
        );
    }
    let (_, v) = live_state(&s.addr);
    assert_eq!(v["outcome"]["status"], "completed_with_failures", "{v}");
    assert_eq!((v["totals"]["done"].as_u64(), v["totals"]["failed"].as_u64()), (Some(4), Some(1)), "{v}");
    let log = std::fs::read_to_string(rs_dir.join("logs").join(format!("cell-{kept_cell}.log"))).unwrap();
    assert!(
        log.contains("resuming with inspect eval-retry")
            && log.contains(&format!("{kept_n} of 6 samples finished and are kept")),
        "{log}"
    );
    // The kept samples were not asked of the model again: the resume asked
    // exactly the six less those kept (a fresh eval would ask all six).
    let after = sample_requests(&model.log);
    let key = (kept_model.clone(), kept_task.clone());
    let asked_on_resume = after[&key] - before[&key];
    assert_eq!(asked_on_resume, 6 - kept_n, "{key:?}: {kept_n} kept; asked before {before:?}, after {after:?}");

    // Evidence counts samples, and each rate is Inspect's own accuracy.
    let mut seen = Vec::new();
    for task in ["arithmetic", "reverse"] {
        let (code, e) = get(&s.addr, &format!("/api/evidence?by=model&scope=task%3D{task}"));
        assert_eq!(code, 200, "{e}");
        assert_eq!(e["count"], "samples");
        for g in e["groups"].as_array().unwrap() {
            let m = g["level"].as_str().unwrap();
            let rec = std::fs::read_dir(rs_dir.join("cells"))
                .unwrap()
                .flatten()
                .map(|f| serde_json::from_slice::<Value>(&std::fs::read(f.path()).unwrap()).unwrap())
                .find(|r| r["factors"]["task"] == task && r["factors"]["model"] == m)
                .unwrap();
            let final_log = eval_logs(&rs_dir.join("out").join(rec["cell"].as_str().unwrap())).pop().unwrap();
            let d = dump(&final_log);
            assert_eq!(d["status"], "success");
            let accuracy = d["results"]["scores"][0]["metrics"]["accuracy"]["value"].as_f64().unwrap();
            let rate = g["passes"]["rate"].as_f64().unwrap();
            assert!((rate - accuracy).abs() < 1e-12, "{task} {m}: Evidence {rate}, Inspect {accuracy}");
            assert_eq!(g["passes"]["n"], d["results"]["completed_samples"], "{task} {m}");
            seen.push((task, m.to_owned(), accuracy));
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    assert!(seen.iter().any(|s| s.2 < 1.0), "the hasty model misses some: {seen:?}");
    let (_, e) = get(&s.addr, "/api/evidence?by=model");
    let reasons = e["failures_by_reason"].to_string();
    assert!(reasons.contains("inspect: ValueError('the grader cannot read this answer')"), "{reasons}");

    // Timing: a paused cell's time does not count, and says why.
    let (code, t) = get(&s.addr, &format!("/api/timing?run_set={run_set}"));
    assert_eq!(code, 200, "{t}");
    let cells = t["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 5, "{t}");
    let paused = cells.iter().find(|c| c["cell"] == kept_cell.as_str()).unwrap();
    assert!(paused["why_not"].to_string().contains("paused"), "{paused}");
    assert!(cells.iter().any(|c| c["counts"] == true), "{t}");

    // Reports: tokens are Inspect's model usage, summed over the cells; the
    // failed cell's failure is Inspect's reason.
    let (code, rep) = get(&s.addr, &format!("/api/reports/{run_set}"));
    assert_eq!(code, 200, "{rep}");
    let mut tokens = 0;
    for c in rs_dir.join("out").read_dir().unwrap().flatten() {
        let r: Value = serde_json::from_slice(&std::fs::read(c.path().join("result.json")).unwrap()).unwrap();
        tokens += r["tokens"].as_u64().unwrap();
    }
    assert_eq!(rep["tokens"].as_u64(), Some(tokens), "{rep}");
    let failed = rep["cells"].as_array().unwrap().iter().find(|c| c["status"] == "failed").unwrap();
    assert_eq!(failed["failure"], "inspect: ValueError('the grader cannot read this answer')", "{failed}");
}
