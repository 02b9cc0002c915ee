//! Live spend, the budget's pause and stalls, against a real `runboard serve`
//! and real batches whose cells are shell processes appending to their
//! progress file: the cost climbs as they write, a cap pauses the batch
//! within a poll (the overshoot measured), Resume is refused until the cap is
//! raised, the notification hook hears the pause, and a silent cell is
//! named stalled and cleared when it writes again.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::served::*;
use common::{wait_for, wait_until};
use serde_json::{json, Value};

/// A campaign whose cells append a call (1,000 input + 500 output tokens of
/// `paid-m`, priced 1.00 and 2.00 USD per 1,000: 2.00 USD a call) every
/// `gap_s` seconds, `calls` times, then report; `extra` is added to
/// `campaign.toml`.
fn spending_campaign(tmp: &Path, calls: u32, gap_s: f64, extra: &str) -> PathBuf {
    let root = tmp.join("campaign");
    // Braces doubled: the runner's command is a template.
    let line = r#"{{"model":"paid-m","input_tokens":1000,"output_tokens":500}}"#;
    let script = format!(
        "i=0; while [ $i -lt {calls} ]; do printf '%s\\n' '{line}' >> {{out}}/progress.jsonl; i=$((i+1)); sleep {gap_s}; done; \
         printf '{{{{\"score\": 1, \"input_tokens\": %d, \"output_tokens\": %d}}}}' $((i*1000)) $((i*500)) > {{out}}/result.json"
    );
    let f = server::demo::fixture::ConsoleFixture {
        name: "spend test".into(),
        command: vec!["sh".into(), "-c".into(), script],
        parallel: 1,
        models: "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\nprice_per_1k_tokens = 3.0\n\
                 price_input_per_1k = 1.0\nprice_output_per_1k = 2.0\n"
            .into(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), format!("{toml}{extra}")).unwrap();
    root
}

fn launch(addr: &str, label: &str, cells: u32) -> String {
    let path = draft(addr, json!({"label": label, "max_cells": cells, "model": "paid-m"}));
    let (code, l) = post(addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    l["run_set"].as_str().unwrap().to_owned()
}

fn spend(v: &Value) -> (u64, f64) {
    let s = &v["spend"];
    (s["total_tokens"].as_u64().unwrap_or(0), s["cost"].as_f64().unwrap_or(0.0))
}

#[test]
fn the_cost_climbs_as_cells_write_and_a_cap_pauses_the_batch_until_it_is_raised() {
    let tmp = tempfile::tempdir().unwrap();
    let heard = tmp.path().join("notified.jsonl");
    let extra = format!(
        "[budget]\nmax_cost = 40.0\npoll_s = 0.5\n[hooks]\nnotify = [\"sh\", \"-c\", \"cat >> {}; echo >> {}\"]\n",
        heard.display(),
        heard.display()
    );
    // 20 calls a second, 40 USD a second: the cap is reached in about a second.
    let root = spending_campaign(tmp.path(), 400, 0.05, &extra);
    let s = serve(&root, &tmp.path().join("data"));
    let run_set = launch(&s.addr, "spend", 2);
    let mut page = LivePage::default();

    // The cost climbs while the batch runs, split by kind and priced apart.
    let mut seen = Vec::new();
    wait_for("spend counted twice, growing", Duration::from_secs(30), || {
        let state = page.look(&s.addr);
        let (tokens, cost) = spend(&page.view);
        if state == "running" && tokens > 0 && seen.last().is_none_or(|(t, _)| tokens > *t) {
            seen.push((tokens, cost));
        }
        seen.len() >= 2 || state == "stopped_resumable"
    });
    let (first_tokens, first_cost) = seen[0];
    assert_eq!(first_tokens % 1500, 0, "whole calls only: {seen:?}");
    assert!((first_cost - first_tokens as f64 / 1500.0 * 2.0).abs() < 1e-6, "1.00 + 2×0.50 USD a call: {seen:?}");

    // The cap pauses it, resumably, and says which cap and what was spent.
    // A page following the version gets there, and never shows the batch
    // idle on the way: the pause's marker is written before the batch ends.
    wait_for("paused by the budget", Duration::from_secs(30), || page.look(&s.addr) == "stopped_resumable");
    assert!(!page.states.iter().any(|s| s == "idle"), "{:?}", page.states);
    let paused_at = Instant::now();
    let (_, v) = live_state(&s.addr);
    let words = v["words"].as_str().unwrap();
    assert!(words.contains("paused by the budget: the cap of 40.00 USD per batch:"), "{words}");
    assert!(words.contains("by paid-m, most in c-"), "{words}");
    // Nothing is written once it is paused; what it spent past the cap is
    // what its cell wrote between the poll that saw the cap and the pause.
    std::thread::sleep(Duration::from_millis(800));
    let (_, v) = live_state(&s.addr);
    let (_, cost) = spend(&v);
    let overshoot = cost - 40.0;
    eprintln!("budget overshoot: {overshoot:.2} USD at 40 USD/s, poll 0.5 s (paused {paused_at:?})");
    assert!(cost >= 40.0, "it paused at the cap, not before: {cost}");
    // At most one poll (0.5 s) and the pause itself (SIGTERM, well under 1 s) at 40 USD/s.
    assert!(overshoot <= 40.0 * 1.5, "spent {cost} against a cap of 40");
    let cap = &v["spend"]["caps"][0];
    assert_eq!((cap["key"].as_str(), cap["reached"].as_bool()), (Some("max_cost"), Some(true)), "{v}");

    // Resume is refused while the cap holds, with the key to raise.
    let (code, e) = post(&s.addr, "/api/control/resume", json!({"run_set": run_set}));
    assert_eq!(code, 422, "{e}");
    assert!(e.to_string().contains("raise [budget] max_cost in campaign.toml"), "{e}");

    // The hook heard the pause, as one JSON object.
    wait_for("the hook heard it", Duration::from_secs(10), || {
        std::fs::read_to_string(&heard).is_ok_and(|t| t.contains("budget_paused"))
    });
    let text = std::fs::read_to_string(&heard).unwrap();
    let event: Value =
        text.lines().find(|l| l.contains("budget_paused")).map(|l| serde_json::from_str(l).unwrap()).unwrap();
    assert_eq!(
        (event["run_set"].as_str(), event["cap"].as_str()),
        (Some(run_set.as_str()), Some("max_cost")),
        "{event}"
    );
    assert!(event["at"].is_string(), "{event}");

    // Raised, it resumes.
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), toml.replace("max_cost = 40.0", "max_cost = 100000.0")).unwrap();
    let (code, r) = post(&s.addr, "/api/control/resume", json!({"run_set": run_set}));
    assert_eq!(code, 200, "{r}");
    wait_for("running again", Duration::from_secs(30), || live_state(&s.addr).0 == "running");
    // Its resumed cell is counted on from where the pause left it.
    wait_for("counted on after the resume", Duration::from_secs(30), || spend(&live_state(&s.addr).1).1 > cost);
    assert_eq!(post(&s.addr, "/api/control/stop", json!({"run_sets": [run_set]})).0, 200);
}

#[test]
fn a_day_cap_refuses_the_next_batch_at_preflight_and_the_status_says_the_spend() {
    let tmp = tempfile::tempdir().unwrap();
    // Two calls a cell, then it ends: 4.00 USD a cell.
    let root = spending_campaign(tmp.path(), 2, 0.05, "[budget]\ndaily_max_cost = 6.0\n");
    let s = serve(&root, &tmp.path().join("data"));
    let run_set = launch(&s.addr, "day", 1);
    wait_for("ended", Duration::from_secs(30), || {
        let (state, v) = live_state(&s.addr);
        state == "idle" && v["run_set"] == run_set.as_str()
    });
    let (_, v) = live_state(&s.addr);
    assert_eq!(spend(&v), (3000, 4.0), "{v}");
    // 2.00 USD left today: a batch predicted at 4.00 is refused.
    let next = draft(&s.addr, json!({"label": "day2", "max_cells": 1, "model": "paid-m"}));
    let (code, pf) = post(&s.addr, "/api/preflight", json!({"path": next}));
    assert_eq!(code, 200, "{pf}");
    let refusals = pf["refusals"].to_string();
    assert!(refusals.contains("more than the 2.00 USD left under the day's and the campaign's caps"), "{pf}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_runboard"))
        .args(["status", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("spend: 3,000 tokens (2,000 in, 1,000 out) over 2 calls"), "{text}");
    assert!(text.contains("budget: the cap of 6.00 USD per UTC day: 4.00 USD spent"), "{text}");
}

#[test]
fn a_silent_cell_is_named_stalled_and_cleared_when_it_writes_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("campaign");
    let line = r#"{{"model":"paid-m","tokens":10}}"#;
    // One call, 4 s of silence, one call, 30 s more.
    let script = format!(
        "printf '%s\\n' '{line}' >> {{out}}/progress.jsonl; sleep 4; printf '%s\\n' '{line}' >> {{out}}/progress.jsonl; sleep 30"
    );
    let f = server::demo::fixture::ConsoleFixture {
        name: "stall test".into(),
        command: vec!["sh".into(), "-c".into(), script],
        parallel: 1,
        models: "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\nprice_per_1k_tokens = 1.0\n".into(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), format!("{toml}[budget]\npoll_s = 0.5\n[stall]\nafter_s = 2.0\n"))
        .unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let run_set = launch(&s.addr, "stall", 1);
    wait_for("stalled", Duration::from_secs(30), || {
        live_state(&s.addr).1["stalls"].as_array().is_some_and(|a| !a.is_empty())
    });
    let (_, v) = live_state(&s.addr);
    let stall = &v["stalls"][0];
    assert!(stall["words"].as_str().unwrap().contains("has written nothing for"), "{stall}");
    assert!(stall["last_wrote"].as_str().unwrap().starts_with("a progress line"), "{stall}");
    assert_eq!(stall["threshold_from"], "[stall] after_s");
    let cell = stall["cell"].as_str().unwrap().to_owned();
    assert!(v["cells"].as_array().unwrap().iter().any(|c| c["cell"] == cell.as_str() && c["stall"].is_object()), "{v}");
    let (_, o) = get(&s.addr, "/api/overview");
    assert!(o["attention"].as_array().unwrap().iter().any(|a| a["kind"] == "stalled"), "{o}");
    // It writes again: no longer stalled (until it is silent past 2 s again).
    assert!(
        wait_until(Duration::from_secs(10), || live_state(&s.addr).1["stalls"]
            .as_array()
            .is_some_and(|a| a.is_empty())),
        "cleared after its next write"
    );
    // Issue 40 (item 11): the operator ends just that cell; its batch records
    // it failed (exit 143) and ends, resumable.
    let (code, ended) = post(&s.addr, "/api/control/stop-cell", json!({"run_set": run_set, "cell": cell}));
    assert_eq!(code, 200, "{ended}");
    assert!(ended["processes"].as_u64().unwrap() >= 1, "{ended}");
    assert!(
        ended["words"].as_str().unwrap().contains(&format!("of cell {cell}; the rest of {run_set} runs on")),
        "{ended}"
    );
    wait_for("the cell recorded failed", Duration::from_secs(20), || {
        let (_, v) = live_state(&s.addr);
        v["cells"].as_array().unwrap().iter().any(|c| c["cell"] == cell.as_str() && c["status"] == "failed")
    });
    let (code, again) = post(&s.addr, "/api/control/stop-cell", json!({"run_set": run_set, "cell": cell}));
    assert_eq!(code, 409, "{again}");
    assert!(again["error"].as_str().unwrap().contains("is not running"), "{again}");
}

/// Issue 40 (items 2 and 3): a cell that counts its calls only in its
/// progress file — no tokens in a `result.json` — keeps what was counted
/// after its batch ends: its record holds the driver's count, and the
/// report, the catalogue and the next batch's prediction (priced per kind,
/// with no `price_per_1k_tokens`) all read it; a day's cost cap then
/// refuses a next batch predicted to spend past it.
#[test]
fn what_was_counted_outlives_the_batch_and_a_model_priced_per_kind_is_predicted() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("campaign");
    let line = r#"{{"model":"paid-m","input_tokens":1000,"output_tokens":500}}"#;
    // Three calls a cell, 2.00 USD each, and a line that is not a call
    // (skipped and said); a result.json with a score and no tokens.
    let script = format!(
        "printf '%s\\n' '{line}' oops >> {{out}}/progress.jsonl; \
         for i in 2 3; do printf '%s\\n' '{line}' >> {{out}}/progress.jsonl; sleep 0.05; done; \
         printf '{{{{\"score\": 1}}}}' > {{out}}/result.json"
    );
    let f = server::demo::fixture::ConsoleFixture {
        name: "counted test".into(),
        command: vec!["sh".into(), "-c".into(), script],
        parallel: 2,
        models: "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\nprice_input_per_1k = 1.0\nprice_output_per_1k = 2.0\n"
            .into(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), format!("{toml}[budget]\ndaily_max_cost = 20.0\n")).unwrap();
    let data = tmp.path().join("data");
    let s = serve(&root, &data);
    let run_set = launch(&s.addr, "counted", 2);
    wait_for("ended", Duration::from_secs(30), || {
        let (state, v) = live_state(&s.addr);
        state == "idle" && v["run_set"] == run_set.as_str()
    });
    // A console started afresh knows only the records.
    drop(s);
    let s = serve(&root, &data);
    let record: Value = {
        let cells = root.join("runsets").join(&run_set).join("cells");
        let first = std::fs::read_dir(cells).unwrap().flatten().next().unwrap().path();
        serde_json::from_slice(&std::fs::read(first).unwrap()).unwrap()
    };
    assert_eq!(record["counted"]["calls"], 3, "{record}");
    assert_eq!(
        (record["counted"]["input_tokens"].as_u64(), record["counted"]["source"].as_str()),
        (Some(3000), Some("progress"))
    );
    // Issue 40 (item 17): the skipped line is said, with its file and line.
    let (_, live) = get(&s.addr, "/api/live");
    let problems = live["problems"].to_string();
    assert!(problems.contains("/progress.jsonl line 2: not JSON") && problems.contains("skipped"), "{live}");
    let (code, r) = get(&s.addr, &format!("/api/reports/{run_set}"));
    assert_eq!(code, 200, "{r}");
    assert_eq!((r["tokens"].as_u64(), r["cells_with_tokens"].as_u64()), (Some(9000), Some(2)), "{r}");
    assert_eq!(r["cost"].as_f64(), Some(12.0), "priced by kind: 6,000 in at 1.00 + 3,000 out at 2.00");
    let (_, c) = get(&s.addr, "/api/catalogue");
    let m = c["models"].as_array().unwrap().iter().find(|m| m["name"] == "paid-m").unwrap().clone();
    assert_eq!((m["use"]["tokens"].as_u64(), m["use"]["cost"].as_f64()), (Some(9000), Some(12.0)), "{m}");
    // The next batch is predicted from that history, and priced: 2 cells of
    // 4,500 tokens at the dearest kind (2.00): 18.00 USD, more than the 8.00 left today.
    let next = draft(&s.addr, json!({"label": "counted2", "max_cells": 2, "model": "paid-m"}));
    let (code, pf) = post(&s.addr, "/api/preflight", json!({"path": next}));
    assert_eq!(code, 200, "{pf}");
    assert_eq!(
        (pf["prediction"]["tokens"].as_u64(), pf["prediction"]["cost"].as_f64()),
        (Some(9000), Some(18.0)),
        "{pf}"
    );
    assert!(
        pf["refusals"].to_string().contains("more than the 8.00 USD left under the day's and the campaign's caps"),
        "{pf}"
    );
}
