//! The autopilot end to end: a real `runboard serve --auto-tick 1` over a
//! campaign with the local launcher and real batches. Auto mode on launches a
//! batch, holds while it runs, closes its iteration when it ends, launches
//! the next, and stops at the daily cap — saying why at every step; the
//! settings are refused with every reason; explain is a dry run; the CLI
//! shows the same.

use crate::common;

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

fn cli(root: &std::path::Path, args: &[&str], input: Option<&str>) -> (bool, String) {
    use std::io::Write;
    let mut child = std::process::Command::new(BIN)
        .arg("auto")
        .args(args)
        .arg("--root")
        .arg(root)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    if let Some(i) = input {
        child.stdin.take().unwrap().write_all(i.as_bytes()).unwrap();
    }
    drop(child.stdin.take());
    let out = child.wait_with_output().unwrap();
    (out.status.success(), format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr)))
}

fn log_events(root: &std::path::Path) -> Vec<String> {
    std::fs::read_to_string(root.join("auto/log.jsonl"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter_map(|v| v["event"].as_str().map(str::to_owned))
        .collect()
}

/// The notification hook hears the notable events on its standard input; a
/// hook that fails is logged and changes nothing else.
#[test]
fn the_notification_hook_hears_launches_and_its_failure_is_only_logged() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.5);
    let heard = tmp.path().join("heard.jsonl");
    let cfg = std::fs::read_to_string(root.join("campaign.toml")).unwrap().replace("daily_cap = 1", "daily_cap = 5")
        + &format!("[hooks]\nnotify = [\"sh\", \"-c\", \"cat >> {}; echo >> {}\"]\n", heard.display(), heard.display());
    std::fs::write(root.join("campaign.toml"), &cfg).unwrap();
    let settings =
        json!({"models": ["paid-m"], "tasks": ["t1"], "daily_caps": {"paid-m": 3}, "wait_minutes": 0, "max_cells": 1});
    assert!(cli(&root, &["settings", "-"], Some(&settings.to_string())).0);
    let (ok, text) = cli(&root, &["on"], None);
    assert!(ok, "{text}");
    let (ok, text) = cli(&root, &["tick"], None);
    assert!(ok && text.contains("launch auto-1"), "{text}");
    let lines: Vec<Value> = std::fs::read_to_string(&heard)
        .unwrap()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 1, "{lines:?}");
    // Its launch is said as every batch's is (docs/formats.md, "Notifications").
    assert_eq!(lines[0]["event"], "batch_launched");
    assert_eq!(lines[0]["model"], "paid-m");
    assert_eq!(lines[0]["tag"], "auto", "{lines:?}");

    // A hook that fails: logged as notify_failed; the tick did its work.
    let failing = cfg.replace(&format!("cat >> {}; echo >> {}", heard.display(), heard.display()), "exit 3");
    std::fs::write(root.join("campaign.toml"), failing).unwrap();
    wait_for("the first batch to end", Duration::from_secs(30), || {
        serde_json::from_str::<Value>(&cli(&root, &["status", "--json"], None).1).unwrap()["state"]["current"]
            .is_object()
            && std::process::Command::new(BIN)
                .args(["status", "--json", "--root"])
                .arg(&root)
                .output()
                .map(|o| serde_json::from_slice::<Value>(&o.stdout).unwrap()["state"]["state"] == "idle")
                .unwrap_or(false)
    });
    let (ok, text) = cli(&root, &["tick"], None);
    assert!(ok, "{text}");
    let (ok, text) = cli(&root, &["tick"], None);
    assert!(ok, "{text}");
    let events = log_events(&root);
    assert!(events.contains(&"notify_failed".to_owned()), "{events:?}");
    assert_eq!(
        events.iter().filter(|e| *e == "batch_launched").count(),
        2,
        "the failing hook stopped nothing: {events:?}"
    );
    std::process::Command::new(BIN).args(["stop", "--root"]).arg(&root).output().unwrap();
}

/// A tick that fails (here: `campaign.toml` broken under it) is logged as
/// `tick_exception`, and the loop goes on — once fixed, it launches.
#[test]
fn a_failing_tick_is_logged_and_the_loop_goes_on() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.5);
    let good = std::fs::read_to_string(root.join("campaign.toml")).unwrap().replace("daily_cap = 1", "daily_cap = 5");
    std::fs::write(root.join("campaign.toml"), &good).unwrap();
    let settings =
        json!({"models": ["paid-m"], "tasks": ["t1"], "daily_caps": {"paid-m": 1}, "wait_minutes": 0, "max_cells": 1});
    assert!(cli(&root, &["settings", "-"], Some(&settings.to_string())).0);
    let s = serve_with(&root, &tmp.path().join("data"), &[], &["--auto-tick", "0.3"]);
    std::fs::write(root.join("campaign.toml"), "schema_version = 1\nname = \n").unwrap();
    // Turned on: the answer (the view) cannot be made from a broken
    // campaign.toml (422, unreadable), but the mode is saved.
    let (code, e) = post(&s.addr, "/api/auto/on", json!({}));
    assert_eq!((code, e["kind"].as_str()), (422, Some("unreadable")), "{e}");
    let state: Value = serde_json::from_slice(&std::fs::read(root.join("auto/state.json")).unwrap()).unwrap();
    assert_eq!(state["mode"], "on");
    wait_for("tick_exception", Duration::from_secs(10), || log_events(&root).contains(&"tick_exception".to_owned()));
    std::fs::write(root.join("campaign.toml"), &good).unwrap();
    wait_for("a launch after the fix", Duration::from_secs(10), || {
        log_events(&root).contains(&"batch_launched".to_owned())
    });
    wait_for("its end", Duration::from_secs(30), || live_state(&s.addr).0 == "idle");
    assert_eq!(post(&s.addr, "/api/control/stop", json!({})).0, 200);
}

/// The state file survives its writer being killed: SIGKILL at random
/// moments while 10,000 saves are made leaves no unparseable state file, and
/// no temporary file once a writer saves again.
#[test]
fn kill_9_during_10000_state_saves_leaves_no_unparseable_state_file() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let state = root.join("auto/state.json");
    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let (mut kills, mut checks, mut saves) = (0u32, 0u32, 0u64);
    let deadline = std::time::Instant::now() + Duration::from_secs(240);
    while saves < 10_000 {
        assert!(std::time::Instant::now() < deadline, "10,000 saves took too long ({saves} made)");
        let mut child = std::process::Command::new(BIN)
            .args(["__auto-save-loop", "--until", "10000", "--root"])
            .arg(root)
            .spawn()
            .unwrap();
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        std::thread::sleep(Duration::from_micros(2_000 + rng % 40_000));
        // SIGKILL, by its PID: mid-write, mid-rename, wherever it is.
        if child.try_wait().unwrap().is_none() {
            child.kill().unwrap();
            kills += 1;
        }
        child.wait().unwrap();
        if let Ok(bytes) = std::fs::read(&state) {
            let v: Value = serde_json::from_slice(&bytes)
                .unwrap_or_else(|e| panic!("an unparseable state file after {kills} kills: {e}"));
            let loaded = runboard::auto::load(Some(&bytes));
            assert!(loaded.repaired.is_empty(), "{:?}", loaded.repaired);
            let verdict = v["last_decision"]["verdict"].as_str().unwrap_or("");
            saves = verdict.strip_prefix("save ").and_then(|n| n.parse().ok()).unwrap_or(0);
            checks += 1;
        }
    }
    assert!(kills >= 20, "only {kills} kills: the test did not test much");
    // One clean save sweeps what killed writers left.
    let out = std::process::Command::new(BIN).args(["auto", "off", "--root"]).arg(root).output().unwrap();
    let _ = out;
    let left: Vec<String> = std::fs::read_dir(root.join("auto"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp-"))
        .collect();
    assert!(left.is_empty(), "temporary files left: {left:?}");
    eprintln!("{saves} saves, {kills} kills, {checks} checks, 0 unparseable");
}
