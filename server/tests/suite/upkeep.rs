//! Upkeep against a real `runboard serve` and a real batch whose supervisor
//! and driver are killed (SIGKILL, as an OOM killer or a reboot would):
//! the unit whose process is gone, the run set left saying `running`, a stale
//! draft, a killed writer's temporary file, an orphaned log and an ended run
//! set's logs are each listed with their safe action; each action is done
//! only with the listed token, logged, and refused for a live batch.

use crate::common;

use std::path::Path;
use std::time::{Duration, SystemTime};

use common::served::*;
use common::wait_for;
use serde_json::{json, Value};

fn upkeep(addr: &str) -> Value {
    let (code, v) = get(addr, "/api/upkeep");
    assert_eq!(code, 200, "{v}");
    v
}

fn finding(v: &Value, kind: &str, target: &str) -> Option<Value> {
    v["findings"].as_array().unwrap().iter().find(|f| f["kind"] == kind && f["target"] == target).cloned()
}

fn act(addr: &str, f: &Value) -> (u16, Value) {
    post(addr, "/api/upkeep", json!({"action": f["action"], "target": f["target"], "token": f["token"]}))
}

fn set_age(path: &Path, secs: u64) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - Duration::from_secs(secs)).unwrap();
}

fn kill9(pid: u64) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
}

#[test]
fn what_was_left_lying_about_is_listed_and_each_safe_action_done_once_confirmed_never_on_a_live_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 60.0);
    let s = serve(&root, &tmp.path().join("data"));

    // A batch whose supervisor and driver are then killed outright.
    let path = draft(&s.addr, json!({"label": "killed", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let (rs, unit) = (l["run_set"].as_str().unwrap().to_owned(), l["unit"].as_str().unwrap().to_owned());
    let rs_dir = root.join("runsets").join(&rs);
    wait_for("the cell running", Duration::from_secs(30), || live_state(&s.addr).1["cells"][0]["status"] == "running");
    let record: Value =
        serde_json::from_slice(&std::fs::read(root.join(".runboard/units").join(format!("{unit}.json"))).unwrap())
            .unwrap();
    let outcome: Value = serde_json::from_slice(&std::fs::read(rs_dir.join("batch_outcome.json")).unwrap()).unwrap();
    let (supervisor, driver) = (record["pid"].as_u64().unwrap(), outcome["driver"]["pid"].as_u64().unwrap());
    kill9(supervisor);
    kill9(driver);

    // What it left, and what a user left.
    let drafted = root.join(draft(&s.addr, json!({"label": "forgotten", "max_cells": 1, "endpoint": "gpu-a"})));
    set_age(&drafted, 15 * 86_400);
    let mut gone = std::process::Command::new("true").spawn().unwrap();
    let dead_pid = gone.id();
    gone.wait().unwrap();
    let temp = root.join(format!("runsets/.run_tags.json.tmp-{dead_pid}-0"));
    std::fs::write(&temp, b"{\"half\": ").unwrap();
    set_age(&temp, 3600);
    // A temporary file whose writer lives (this test) is never listed.
    let live_temp = root.join(format!("runsets/.run_tags.json.tmp-{}-0", std::process::id()));
    std::fs::write(&live_temp, b"{").unwrap();
    set_age(&live_temp, 3600);
    let orphan = root.join(".runboard/units/rb-ghost.log");
    std::fs::write(&orphan, b"old output\n").unwrap();

    let rel = |p: &Path| p.strip_prefix(&root).unwrap().to_string_lossy().into_owned();
    let mut v = Value::Null;
    wait_for("the killed batch's unit and run set listed", Duration::from_secs(30), || {
        v = upkeep(&s.addr);
        finding(&v, "gone_unit", &unit).is_some() && finding(&v, "interrupted_run_set", &rs).is_some()
    });
    let unit_f = finding(&v, "gone_unit", &unit).unwrap();
    assert!(unit_f["words"].as_str().unwrap().contains("supervisor-killed"), "{unit_f}");
    let rs_f = finding(&v, "interrupted_run_set", &rs).unwrap();
    assert!(rs_f["words"].as_str().unwrap().contains(&format!("its driver (pid {driver} on ")), "{rs_f}");
    assert!(rs_f["question"].as_str().unwrap().starts_with(&format!("Mark run set {rs} interrupted?")), "{rs_f}");
    let draft_f = finding(&v, "stale_draft", &rel(&drafted)).expect("the old draft");
    let temp_f = finding(&v, "temp_file", &rel(&temp)).expect("the dead writer's temporary file");
    assert!(temp_f["words"].as_str().unwrap().contains(&format!("pid {dead_pid}")), "{temp_f}");
    assert!(finding(&v, "temp_file", &rel(&live_temp)).is_none(), "a live writer's file is not listed");
    let orphan_f = finding(&v, "orphaned_log", ".runboard/units/rb-ghost.log").expect("the orphaned log");
    let disk = v["disk"].as_array().unwrap().iter().find(|d| d["run_set"] == rs.as_str()).unwrap().clone();
    assert!(disk["bytes"].as_u64().unwrap() > 0 && disk["state"] == "interrupted", "{disk}");

    // Refused: an unknown action, a stale token, a target not listed.
    let (code, e) = post(&s.addr, "/api/upkeep", json!({"action": "shred", "target": rs, "token": "x"}));
    assert_eq!(code, 422, "{e}");
    assert!(e.to_string().contains("not one of delete_draft"), "{e}");
    let (code, e) = post(&s.addr, "/api/upkeep", json!({"action": "mark_interrupted", "target": rs, "token": "old"}));
    assert_eq!(code, 422, "{e}");
    assert!(e.to_string().contains("changed since it was listed"), "{e}");
    let (code, e) =
        post(&s.addr, "/api/upkeep", json!({"action": "delete_draft", "target": "campaign.toml", "token": "x"}));
    assert_eq!(code, 422, "{e}");
    assert!(root.join("campaign.toml").exists());

    // Each action, with the listed token.
    let (code, d) = act(&s.addr, &unit_f);
    assert_eq!(code, 200, "{d}");
    let record: Value =
        serde_json::from_slice(&std::fs::read(root.join(".runboard/units").join(format!("{unit}.json"))).unwrap())
            .unwrap();
    assert_eq!(record["result"], "supervisor-killed", "{record}");
    assert!(record["ended_at"].is_string(), "{record}");
    let (code, d) = act(&s.addr, &rs_f);
    assert_eq!(code, 200, "{d}");
    let outcome: Value = serde_json::from_slice(&std::fs::read(rs_dir.join("batch_outcome.json")).unwrap()).unwrap();
    assert_eq!(outcome["status"], "stopped", "{outcome}");
    assert!(outcome["reason"].as_str().unwrap().starts_with("interrupted: its driver"), "{outcome}");
    // The Live page says it as a pause, with why; its running cell is stopped.
    let (state, live) = live_state(&s.addr);
    assert_eq!(state, "stopped_resumable", "{live}");
    assert!(live["words"].as_str().unwrap().contains("interrupted: its driver"), "{live}");
    assert_eq!(live["cells"][0]["status"], "stopped", "{live}");
    // Done once: not listed again, so a second ask is refused.
    let (code, _) = act(&s.addr, &rs_f);
    assert_eq!(code, 422);
    for f in [&draft_f, &temp_f, &orphan_f] {
        let (code, d) = act(&s.addr, f);
        assert_eq!(code, 200, "{d}");
        assert_eq!(d["freed_bytes"], f["bytes"], "{d}");
    }
    assert!(!drafted.exists() && !temp.exists() && !orphan.exists() && live_temp.exists());

    // The ended run set's logs, compressed.
    let v = upkeep(&s.addr);
    let logs_f = finding(&v, "run_set_logs", &rs).expect("its logs, now it has ended");
    let (code, d) = act(&s.addr, &logs_f);
    assert_eq!(code, 200, "{d}");
    let logs: Vec<String> = std::fs::read_dir(rs_dir.join("logs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(!logs.is_empty() && logs.iter().all(|n| n.ends_with(".gz")), "{logs:?}");

    // Never a live batch: a running one is not listed, and asking is refused.
    let path = draft(&s.addr, json!({"label": "live", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let live_rs = l["run_set"].as_str().unwrap().to_owned();
    wait_for("running", Duration::from_secs(30), || live_state(&s.addr).0 == "running");
    let v = upkeep(&s.addr);
    assert!(
        v["findings"].as_array().unwrap().iter().all(|f| f["target"] != live_rs.as_str() && f["target"] != l["unit"]),
        "{v}"
    );
    let (code, e) =
        post(&s.addr, "/api/upkeep", json!({"action": "mark_interrupted", "target": live_rs, "token": "x"}));
    assert_eq!(code, 422, "{e}");
    assert!(e.to_string().contains("not (or no longer) listed"), "{e}");

    // Every action logged, one JSON line each.
    let log = std::fs::read_to_string(root.join(".runboard/upkeep.jsonl")).unwrap();
    let actions: Vec<String> =
        log.lines().map(|l| serde_json::from_str::<Value>(l).unwrap()["action"].as_str().unwrap().to_owned()).collect();
    assert_eq!(
        actions,
        ["record_unit_end", "mark_interrupted", "delete_draft", "sweep_temp", "delete_log", "archive_logs"]
    );

    // The command line: the list numbered; an action unconfirmed is refused.
    let cli = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_runboard")).args(args).arg("--root").arg(&root).output().unwrap()
    };
    let out = cli(&["upkeep"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("disk: ") && text.contains(&rs), "{text}");
    std::fs::write(&orphan, b"again\n").unwrap();
    let out = cli(&["upkeep"]);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.contains("rb-ghost.log")).unwrap().to_owned();
    let n = line.trim().split('.').next().unwrap().to_owned();
    let id = line.split_whitespace().nth(1).unwrap().to_owned();
    assert!(id.starts_with("u-"), "{line}");
    let out = cli(&["upkeep", "--do", &n]);
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not confirmed"));
    assert!(orphan.exists());
    // Issue 40 (item 15): a number with --yes is refused (it names whatever is
    // there now); the id names this finding, and a finding that changed since
    // it was listed is not acted on.
    let out = cli(&["upkeep", "--do", &n, "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("give the finding's id as listed"));
    std::fs::write(&orphan, b"again, and longer now\n").unwrap();
    let out = cli(&["upkeep", "--do", &id, "--yes"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("no finding has this id now"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(orphan.exists());
    let text = String::from_utf8_lossy(&cli(&["upkeep"]).stdout).into_owned();
    let line = text.lines().find(|l| l.contains("rb-ghost.log")).unwrap().to_owned();
    let id = line.split_whitespace().nth(1).unwrap().to_owned();
    let out = cli(&["upkeep", "--do", &id, "--yes"]);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stdout).contains("deleted the log .runboard/units/rb-ghost.log"));
    assert!(!orphan.exists());
    assert_eq!(post(&s.addr, "/api/control/stop", json!({"run_sets": [live_rs]})).0, 200);
}
