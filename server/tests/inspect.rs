//! Inspect AI as cells, for real: the example campaign (`examples/inspect/`)
//! driven through the console over REST — launch, live, a pause mid-eval,
//! resume with Inspect's own `eval-retry` (finished samples kept, not
//! asked of the model again), then Evidence, Timing and Reports. Inspect is
//! the pinned `inspect-ai` that `scripts/setup.sh` installs into
//! `.tools/inspect/`; the model is the example's deterministic stand-in
//! (`standin_model.py`, which can inject 429s and slow calls), or a real
//! engine (llama.cpp's server with SmolLM2-135M, `.tools/llama/`). Evidence's
//! rates are checked against the accuracy Inspect itself reads from the same
//! logs (`inspect log dump`), not against figures worked out here. Through
//! the batch's gateway: tokens to the engine's usage, pushback waited out
//! unstalled, and a batch cap that pauses the evals (overshoot printed).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::served::*;
use serde_json::{json, Value};

/// Held by each test that runs Inspect evals: each starts several Pythons,
/// and two such tests at once on two cores make an eval's start alone longer
/// than the short stall thresholds these tests use.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

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

/// [`inspect_campaign`] with its model paid (100.00 USD per 1,000 tokens:
/// a sample's call about 2 USD), its endpoint held to `max_concurrency`
/// calls at once, and `budget` as its `[budget]` table's lines.
fn paid_inspect_campaign(tmp: &Path, url: &str, max_concurrency: u32, budget: &str) -> PathBuf {
    let root = inspect_campaign(tmp, url);
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    let toml = toml.replace("kind = \"local\"", "kind = \"paid\"\nprice_per_1k_tokens = 100.0").replace(
        "backend = \"openai-compatible\"",
        &format!("backend = \"openai-compatible\"\nmax_concurrency = {max_concurrency}"),
    );
    std::fs::write(root.join("campaign.toml"), format!("{toml}\n[budget]\n{budget}\n")).unwrap();
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
    let _one = one_at_a_time();
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
    let mut cells = std::collections::BTreeMap::new();
    for task in ["arithmetic", "reverse"] {
        let (code, e) = get(&s.addr, &format!("/api/evidence?by=model&scope=task%3D{task}"));
        assert_eq!(code, 200, "{e}");
        assert_eq!(e["count"], "samples");
        // The two models' cells are twins: their six samples pair by id.
        let p = &e["paired"][0];
        assert_eq!((p["unit"].as_str(), p["twins_without_samples"].as_u64()), (Some("samples"), Some(0)), "{p}");
        let t = &p["table"];
        let n: u64 = ["a", "b", "c", "d"].iter().map(|k| t[k].as_u64().unwrap()).sum();
        assert_eq!(n, 6, "{task}: six sample pairs: {p}");
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
            // The sample view reads the same log: every sample, its verdict
            // Inspect's (full credit passes), with excerpts.
            let cell = rec["cell"].as_str().unwrap().to_owned();
            let (code, v) = get(&s.addr, &format!("/api/samples/{run_set}/{cell}"));
            assert_eq!(code, 200, "{v}");
            assert_eq!((v["format"].as_str(), &v["total"]), (Some("json"), &d["results"]["completed_samples"]), "{v}");
            let (passed, scored) = (v["passed"].as_f64().unwrap(), v["scored"].as_f64().unwrap());
            assert!(
                (passed / scored - accuracy).abs() < 1e-12,
                "{task} {m}: samples {passed}/{scored}, Inspect {accuracy}"
            );
            assert!(
                v["samples"][0]["input"].as_str().unwrap().len() > 5 && v["samples"][0]["scorer"] == "match",
                "{v}"
            );
            cells.insert((task, m.to_owned()), cell);
            seen.push((task, m.to_owned(), accuracy));
        }
    }
    assert_eq!(seen.len(), 4, "{seen:?}");
    // The samples that flipped between the two models on arithmetic: each
    // listed passed on one and not on the other.
    let (hasty, careful) =
        (&cells[&("arithmetic", "standin-hasty".to_owned())], &cells[&("arithmetic", "standin-careful".to_owned())]);
    let (code, f) = get(&s.addr, &format!("/api/samples/{run_set}/{hasty}?against={run_set}/{careful}&flipped=1"));
    assert_eq!(code, 200, "{f}");
    let flipped = f["samples"].as_array().unwrap();
    assert!(!flipped.is_empty() && f["flipped"].as_u64() == Some(flipped.len() as u64), "{f}");
    for (row, there) in flipped.iter().zip(f["against_passed"].as_array().unwrap()) {
        assert_eq!(
            (row["passed"].as_bool(), there.as_bool()),
            (Some(false), Some(true)),
            "hasty missed, careful did not: {f}"
        );
    }
    assert!(seen.iter().any(|s| s.2 < 1.0), "the hasty model misses some: {seen:?}");
    let (_, e) = get(&s.addr, "/api/evidence?by=model");
    let reasons = e["not_passed_by_reason"].to_string();
    assert!(reasons.contains("inspect: ValueError('the grader cannot read this answer')"), "{reasons}");

    // Timing: a paused cell's time does not count, and says why.
    let (code, t) = get(&s.addr, &format!("/api/timing?run_set={run_set}"));
    assert_eq!(code, 200, "{t}");
    let cells = t["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 5, "{t}");
    let paused = cells.iter().find(|c| c["cell"] == kept_cell.as_str()).unwrap();
    assert!(paused["why_not"].to_string().contains("paused"), "{paused}");
    assert!(cells.iter().any(|c| c["counts"] == true), "{t}");

    // Reports: each cell's tokens are Inspect's model usage, or what its
    // gateway counted of its calls when that is more — the paused eval's
    // call its stop cut short was answered and counted, and Inspect's
    // report leaves it out — summed over the cells; the failed cell's
    // failure is Inspect's reason.
    let (code, rep) = get(&s.addr, &format!("/api/reports/{run_set}"));
    assert_eq!(code, 200, "{rep}");
    let (mut tokens, mut reported_of_paused, mut counted_of_paused) = (0, 0, 0);
    for c in rs_dir.join("out").read_dir().unwrap().flatten() {
        let r: Value = serde_json::from_slice(&std::fs::read(c.path().join("result.json")).unwrap()).unwrap();
        let reported = r["tokens"].as_u64().unwrap();
        let counted: u64 = progress_lines(&c.path())
            .iter()
            .map(|l| {
                ["input_tokens", "output_tokens", "cached_tokens"].iter().filter_map(|f| l[f].as_u64()).sum::<u64>()
            })
            .sum();
        tokens += reported.max(counted);
        if c.file_name().to_str() == Some(kept_cell.as_str()) {
            (reported_of_paused, counted_of_paused) = (reported, counted);
        }
    }
    assert_eq!(rep["tokens"].as_u64(), Some(tokens), "{rep}");
    assert!(counted_of_paused >= reported_of_paused, "{counted_of_paused} counted, {reported_of_paused} reported");
    let failed = rep["cells"].as_array().unwrap().iter().find(|c| c["status"] == "failed").unwrap();
    assert_eq!(failed["failure"], "inspect: ValueError('the grader cannot read this answer')", "{failed}");
}

/// The streamed half of the engine test's cell: the openai SDK through its
/// `{endpoint_url}`, one question whole, then twice streamed without asking
/// for usage (greedy: the same words each time); it stays running a few
/// seconds after, for Live to be read. What it saw goes to `{out}/client.json`.
const STREAMER: &str = r#"
import json, os, sys, time
from openai import OpenAI
url, out = sys.argv[1], sys.argv[2]
client = OpenAI(base_url=url, api_key="not-needed")
ask = dict(model="smollm2", messages=[{"role": "user", "content": "Name a colour."}], max_tokens=16, temperature=0)
whole = client.chat.completions.create(**ask)
texts, usage_seen = [], False
for _ in range(2):
    chunks = list(client.chat.completions.create(stream=True, **ask))
    texts.append("".join(c.choices[0].delta.content or "" for c in chunks if c.choices))
    usage_seen = usage_seen or any(getattr(c, "usage", None) for c in chunks)
json.dump({"whole": whole.choices[0].message.content,
           "whole_usage": [whole.usage.prompt_tokens, whole.usage.completion_tokens],
           "streamed": texts, "usage_seen": usage_seen}, open(os.path.join(out, "client.json"), "w"))
time.sleep(4)
json.dump({"score": 1}, open(os.path.join(out, "result.json"), "w"))
"#;

/// Every progress line of a cell.
fn progress_lines(out: &Path) -> Vec<Value> {
    std::fs::read_to_string(out.join("progress.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The one cell folder of a run set's `out/`.
fn only_cell_out(rs_dir: &Path) -> PathBuf {
    let outs: Vec<PathBuf> = std::fs::read_dir(rs_dir.join("out")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(outs.len(), 1, "{outs:?}");
    outs[0].clone()
}

/// A real engine (issue 36): llama.cpp's OpenAI-compatible server with a
/// real small model (SmolLM2-135M), built from the package registries by
/// `scripts/setup.sh`. One Inspect eval through the batch's gateway: each
/// of its calls counted, the tokens exactly the usage the engine reported
/// (as Inspect's own log records it). Then an SDK cell streaming from it
/// without asking for usage: llama.cpp ends such a stream with no usage even
/// when asked, so the gateway counts each as a call whose tokens are
/// unknown, and Live and the cell's record say so.
#[test]
fn a_real_engine_through_the_gateway_counts_an_inspect_eval_to_the_token_and_says_a_stream_without_usage() {
    let _one = one_at_a_time();
    common::standin::harness_python();
    let engine = common::standin::engine();
    let tmp = tempfile::tempdir().unwrap();

    let root = inspect_campaign(tmp.path(), &engine.url);
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    // Short answers (a 135M model may otherwise write until its context is
    // full), and chat completions: Inspect's OpenAI provider calls the
    // Responses API, which llama.cpp's server does not serve.
    let capped = toml.replace(
        r#""--max-connections", "1"]"#,
        r#""--max-connections", "1", "--max-tokens", "48", "-M", "responses_api=false"]"#,
    );
    assert_ne!(capped, toml);
    std::fs::write(root.join("campaign.toml"), capped).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "engine", "max_cells": 1, "endpoint": "standin"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let rs_dir = root.join("runsets").join(l["run_set"].as_str().unwrap());
    wait_for("the Inspect eval to end", Duration::from_secs(240), || live_state(&s.addr).0 == "idle");
    let (_, v) = live_state(&s.addr);
    assert_eq!(v["cells"][0]["status"], "done", "{v}");

    // What Inspect recorded of the engine's answers, and what the gateway counted.
    let out = only_cell_out(&rs_dir);
    let log = dump(eval_logs(&out).last().expect("an eval log"));
    assert_eq!(log["status"], "success", "{}", log["error"]);
    let usage = log["stats"]["model_usage"].as_object().unwrap();
    let of = |field: &str| usage.values().map(|u| u[field].as_u64().unwrap()).sum::<u64>();
    let (engine_in, engine_out) = (of("input_tokens"), of("output_tokens"));
    let lines = progress_lines(&out);
    let samples = log["samples"].as_array().unwrap().len();
    assert_eq!((samples, lines.len()), (6, 6), "one counted call per sample: {lines:?}");
    assert!(lines.iter().all(|l| l["via"] == "gateway" && l["latency_s"].is_number()), "{lines:?}");
    let sum = |field: &str| lines.iter().map(|l| l[field].as_u64().unwrap_or(0)).sum::<u64>();
    assert_eq!(
        (sum("input_tokens") + sum("cached_tokens"), sum("output_tokens")),
        (engine_in, engine_out),
        "the gateway counted exactly the usage the engine reported"
    );
    assert!(engine_in > 6 * 20 && engine_out > 6, "real prompts and answers: {engine_in} in, {engine_out} out");
    assert_eq!(v["cells"][0]["tokens"].as_u64(), Some(engine_in + engine_out), "{v}");
    drop(s);

    // A stream without usage, from a plain SDK script.
    let script = tmp.path().join("streamer.py");
    std::fs::write(&script, STREAMER).unwrap();
    let root = tmp.path().join("sdk");
    let f = server::demo::fixture::ConsoleFixture {
        name: "engine stream".into(),
        command: vec![
            common::standin::harness_python().display().to_string(),
            script.display().to_string(),
            "{endpoint_url}".into(),
            "{out}".into(),
        ],
        parallel: 1,
        models: String::new(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), toml.replace("http://127.0.0.1:9/v1", &engine.url)).unwrap();
    let s = serve(&root, &tmp.path().join("data-sdk"));
    let path = draft(&s.addr, json!({"label": "stream", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let rs_dir = root.join("runsets").join(l["run_set"].as_str().unwrap());
    // While it runs, Live says two calls reported no usage.
    let mut said = Value::Null;
    wait_for("Live to say the streams without usage", Duration::from_secs(120), || {
        let (state, v) = live_state(&s.addr);
        let seen = state == "running" && v["spend"]["unmetered_calls"] == 2;
        if seen {
            said = v;
        }
        seen
    });
    assert_eq!(
        (said["spend"]["calls"].as_u64(), said["cells"][0]["spend"]["unmetered_calls"].as_u64()),
        (Some(3), Some(2))
    );
    wait_for("the batch to end", Duration::from_secs(60), || live_state(&s.addr).0 == "idle");

    let out = only_cell_out(&rs_dir);
    let client: Value = serde_json::from_slice(&std::fs::read(out.join("client.json")).unwrap()).unwrap();
    let whole = client["whole"].as_str().unwrap();
    assert!(!whole.is_empty());
    assert_eq!(client["streamed"], json!([whole, whole]), "greedy answers, whole and streamed, alike");
    assert_eq!(client["usage_seen"], false, "the client got no usage chunk it did not ask for");
    let lines = progress_lines(&out);
    assert_eq!(lines.len(), 3, "{lines:?}");
    assert_eq!(
        (lines[0]["input_tokens"].as_u64(), lines[0]["output_tokens"].as_u64()),
        (client["whole_usage"][0].as_u64(), client["whole_usage"][1].as_u64()),
        "the whole answer: the engine's usage"
    );
    for l in &lines[1..] {
        assert_eq!((&l["usage"], &l["tokens"], &l["via"]), (&json!("missing"), &json!(0), &json!("gateway")), "{l}");
    }
    let cell = only_cell_record(&rs_dir);
    assert_eq!((cell["counted"]["calls"].as_u64(), cell["counted"]["unmetered_calls"].as_u64()), (Some(3), Some(2)));
}

/// The one cell record of a run set.
fn only_cell_record(rs_dir: &Path) -> Value {
    let recs: Vec<PathBuf> = std::fs::read_dir(rs_dir.join("cells")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(recs.len(), 1, "{recs:?}");
    serde_json::from_slice(&std::fs::read(&recs[0]).unwrap()).unwrap()
}

/// The Inspect example's evals through the batch's gateway when the model
/// pushes back (issue 36): the stand-in answers every 4th call 429 with
/// `Retry-After: 2` and one question 10 s late; the endpoint allows one call
/// at once for both cells; the models are priced. On Live, while no cell
/// has ended, cost climbs and a quiet cell is explained (its call in
/// flight, its calls held, the 429s); no Inspect cell is called stalled
/// though the slow call is longer than the stall threshold; at the end
/// Live's cost is every counted call, priced.
#[test]
fn inspect_evals_through_the_gateway_wait_out_429s_and_a_slow_call_unstalled() {
    let _one = one_at_a_time();
    common::standin::harness_python();
    let tmp = tempfile::tempdir().unwrap();
    let model = common::standin::stand_in(&[
        "--delay",
        "0.3",
        "--overload-every",
        "4",
        "--retry-after",
        "2",
        "--slow",
        "stone=10",
    ]);
    let root = paid_inspect_campaign(tmp.path(), &model.url, 1, "poll_s = 0.5");
    let s = serve(&root, &tmp.path().join("data"));
    // The two tasks on one model; "Reverse the word: stone" is the slow one.
    let filters = json!({"model": ["standin-careful"], "task": ["arithmetic", "reverse"]});
    let body = json!({"label": "pushback", "max_cells": 2, "endpoint": "standin", "filters": filters});
    let path = draft(&s.addr, body);
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let rs_dir = root.join("runsets").join(l["run_set"].as_str().unwrap());

    let (mut cost_before_any_end, mut quiet, mut overloads) = (0.0f64, QuietSeen::default(), 0);
    wait_for("the batch to end", Duration::from_secs(300), || {
        let (state, v) = live_state(&s.addr);
        assert_eq!(v["stalls"], json!([]), "an Inspect cell waiting on its model is never stalled: {v}");
        let cells = v["cells"].as_array().cloned().unwrap_or_default();
        quiet.look(&v, 8.5);
        overloads = overloads.max(v["rate_limits"]["standin"]["overloads_last_min"].as_u64().unwrap_or(0));
        if state == "running" && cells.iter().all(|c| c["status"] == "running" || c["status"] == "pending") {
            cost_before_any_end = cost_before_any_end.max(v["spend"]["cost"].as_f64().unwrap_or(0.0));
        }
        state == "idle"
    });
    let (_, v) = live_state(&s.addr);
    eprintln!("seen on Live: {:?}; {:?}; {overloads} × 429 in a minute", quiet.in_flight, quiet.waiting);
    assert_eq!(v["totals"]["done"], 2, "{v}");
    assert!(cost_before_any_end > 0.0, "cost climbed on Live before any eval ended");
    assert!(quiet.in_flight.is_some_and(|w| w.starts_with("one call in flight for ")), "the slow call, said");
    assert!(quiet.waiting.is_some_and(|w| w.starts_with("waiting on standin: ")), "the held calls, said");
    assert!(overloads > 0, "the 429s, counted");

    // Live's cost: every counted call (one per sample), priced.
    let (mut spent, mut calls) = (0.0, 0);
    for entry in std::fs::read_dir(rs_dir.join("out")).unwrap().flatten() {
        for l in progress_lines(&entry.path()) {
            spent += (l["input_tokens"].as_u64().unwrap() + l["output_tokens"].as_u64().unwrap()) as f64 * 0.1;
            calls += 1;
        }
    }
    // Six samples a task and each eval's own first call (Inspect's probe,
    // "Please say 'hello, world'"), each counted once: a 429 is not a call spent.
    assert_eq!(calls, 14);
    let live_cost = v["totals"]["cost"].as_f64().unwrap();
    assert!((live_cost - spent).abs() < 0.01, "Live says {live_cost}, the calls {spent}");
}

#[test]
fn inspect_evals_through_the_gateway_are_paused_at_a_batch_cap_and_the_page_says_so() {
    let _one = one_at_a_time();
    common::standin::harness_python();
    let tmp = tempfile::tempdir().unwrap();
    let model = common::standin::stand_in(&["--delay", "0.3"]);
    let root = paid_inspect_campaign(tmp.path(), &model.url, 2, "max_cost = 16.0\npoll_s = 0.5");
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "capped", "max_cells": 4, "endpoint": "standin"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let rs_dir = root.join("runsets").join(l["run_set"].as_str().unwrap());

    // Followed as the Live page follows it: paused with the cap in its
    // words, never shown idle on the way — whether the gateway (refusing
    // the calls past the cap) or the console's guard ended it first.
    let mut page = LivePage::default();
    wait_for("the batch to be paused at its cap", Duration::from_secs(300), || {
        page.look(&s.addr) == "stopped_resumable"
    });
    let v = page.view.clone();
    eprintln!("the page showed {:?}; the batch's outcome: {}", page.states, v["outcome"]);
    assert!(!page.states.iter().any(|s| s == "idle"), "{:?}", page.states);
    let why = v["state"]["reason"].as_str().unwrap_or_default();
    assert!(why.starts_with("paused by the budget: the cap of 16.00 USD per batch: "), "{v}");

    // What was spent: every counted call, priced as Live prices it. Two
    // calls at a time (max_concurrency = 2): past the cap, at most the
    // calls in flight when it was reached (about 2 USD each).
    let mut spent = 0.0;
    for entry in std::fs::read_dir(rs_dir.join("out")).unwrap().flatten() {
        for l in progress_lines(&entry.path()) {
            let tokens = l["input_tokens"].as_u64().unwrap() + l["output_tokens"].as_u64().unwrap();
            spent += tokens as f64 * 0.1;
        }
    }
    println!("Inspect through the gateway at a 16.00 USD cap: {spent:.2} USD spent ({:.2}× the cap)", spent / 16.0);
    assert!((16.0..=16.0 * 1.35).contains(&spent), "spent {spent:.2} USD under a 16.00 USD cap");
    let (_, now) = live_state(&s.addr);
    let live_cost = now["spend"]["cost"].as_f64().unwrap();
    assert!((live_cost - spent).abs() < 0.01, "Live says {live_cost}, the calls {spent}");
}
