//! The autopilot end to end: a real `runboard serve --auto-tick 1` over a
//! campaign with the local launcher and real batches. Auto mode on launches a
//! batch, holds while it runs, closes its iteration when it ends, launches
//! the next, and stops at the daily cap — saying why at every step; the
//! settings are refused with every reason; explain is a dry run; the CLI
//! shows the same.

mod common;

use std::time::Duration;

use common::served::*;
use serde_json::{json, Value};

fn auto(addr: &str) -> Value {
    let (code, v) = get(addr, "/api/auto");
    assert_eq!(code, 200, "{v}");
    v
}

#[test]
fn auto_mode_launches_waits_closes_and_stops_at_the_cap() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 1.5);
    // The catalogue allows five paid batches a day; the autopilot's own cap is two.
    let cfg = std::fs::read_to_string(root.join("campaign.toml")).unwrap().replace("daily_cap = 1", "daily_cap = 5");
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    let s = serve_with(&root, &tmp.path().join("data"), &[], &["--auto-tick", "1"]);

    // Off: it says so, and launches nothing.
    let v = auto(&s.addr);
    assert_eq!(v["state"]["mode"], "off");
    assert_eq!(v["tick_s"], 1.0);
    assert!(v["explain"]["verdict"].as_str().unwrap().starts_with("off"), "{v}");

    // Settings are refused with every reason, and nothing is saved.
    let (code, e) = post(
        &s.addr,
        "/api/auto/settings",
        json!({"models": ["ghost", "paid-m"], "tasks": [], "wait_minutes": -3, "label_prefix": "a b"}),
    );
    assert_eq!(code, 422, "{e}");
    let reasons: Vec<&str> = e["reasons"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    for want in [
        "model \"ghost\" is not in the catalogue",
        "paid model \"paid-m\" needs a daily cap",
        "enable at least one task",
        "wait_minutes must be between 0 and 1440",
        "label_prefix \"a b\"",
    ] {
        assert!(reasons.iter().any(|r| r.contains(want)), "want {want:?} in {reasons:#?}");
    }
    assert_eq!(post(&s.addr, "/api/auto/settings", json!({"modles": []})).0, 422);
    assert_eq!(auto(&s.addr)["state"]["settings"], json!({}));

    let settings = json!({"models": ["paid-m"], "tasks": ["t1"], "daily_caps": {"paid-m": 2},
                          "wait_minutes": 0, "max_cells": 2, "label_prefix": "ap"});
    let (code, v) = post(&s.addr, "/api/auto/settings", settings.clone());
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["settings_problems"], json!([]));
    // The dry run says what it would do, without doing it.
    let (code, x) = get(&s.addr, "/api/auto/explain");
    assert_eq!(code, 200);
    assert!(x["verdict"].as_str().unwrap().starts_with("off"), "still off: {x}");

    let (code, v) = post(&s.addr, "/api/auto/on", json!({}));
    assert_eq!(code, 200, "{v}");
    assert_eq!(v["state"]["mode"], "on");
    // The first batch: launched by the loop, held on while it runs.
    wait_for("the first batch running", Duration::from_secs(30), || live_state(&s.addr).0 == "running");
    wait_for("batch_running", Duration::from_secs(10), || auto(&s.addr)["state"]["hold"]["reason"] == "batch_running");
    let v = auto(&s.addr);
    assert_eq!(v["state"]["current"]["model"], "paid-m", "{v}");
    assert_eq!(v["lanes"][0]["status"], "busy");
    // It closes, launches the second, and stops at the cap.
    wait_for("the cap", Duration::from_secs(90), || {
        let v = auto(&s.addr);
        v["state"]["hold"]["reason"] == "no_eligible_slot" && v["state"]["current"].is_null()
    });
    let v = auto(&s.addr);
    let words = v["state"]["hold"]["words"].as_str().unwrap();
    assert!(words.contains("the autopilot's daily cap of 2 is reached"), "{words}");
    let its = v["state"]["session"]["iterations"].as_array().unwrap();
    assert_eq!(its.len(), 2, "{v}");
    for it in its {
        assert_eq!(it["status"], "completed", "{it}");
        assert_eq!((it["cells_attempted"].as_u64(), it["passes"].as_u64()), (Some(2), Some(2)));
    }
    assert_eq!(v["caps"][0]["auto_today"], 2);
    assert_eq!(v["lanes"][0]["status"], "capped");
    // The log: two launches, two ends; the run index tags them `auto`.
    let (_, log) = get(&s.addr, "/api/auto/log?limit=1000");
    let events: Vec<&str> = log["events"].as_array().unwrap().iter().filter_map(|e| e["event"].as_str()).collect();
    assert_eq!(events.iter().filter(|e| **e == "batch_launched").count(), 2, "{events:?}");
    assert_eq!(events.iter().filter(|e| **e == "batch_finished").count(), 2, "{events:?}");
    assert_eq!(events.first(), Some(&"hold"), "newest first: {events:?}");
    let index = std::fs::read_to_string(root.join("runsets/run_index.csv")).unwrap();
    assert_eq!(index.lines().filter(|l| l.contains(",auto,")).count(), 2, "{index}");
    // The state file and the log agree: the history holds the newest events.
    let state: Value = serde_json::from_slice(&std::fs::read(root.join("auto/state.json")).unwrap()).unwrap();
    assert_eq!(state["history"].as_array().unwrap().last().unwrap()["event"], "hold");
    // The CLI says the same.
    let out = std::process::Command::new(BIN).args(["auto", "status", "--root"]).arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("auto mode: on") && text.contains("daily cap of 2"), "{text}");
    let out = std::process::Command::new(BIN).args(["auto", "explain", "--root"]).arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("holds, because nothing can be launched") && text.contains("[ok] settings: valid"), "{text}");
    // Stop and abort turns it off.
    let (code, r) = post(&s.addr, "/api/control/stop", json!({}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(auto(&s.addr)["state"]["mode"], "off");
    let (code, e) = post(&s.addr, "/api/auto/sideways", json!({}));
    assert_eq!((code, e["kind"].as_str()), (404, Some("not_found")));
}
