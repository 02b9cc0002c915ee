//! The console end to end over REST, against a real `runboard serve` and real
//! batches (the local launcher's supervisor, `runboard drive`, the cells'
//! processes): coverage and drafting, every refusal of the launch path, the
//! live state through a batch, pause / resume / stop+abort, a unit that dies
//! before its batch, and a batch that outlives its server being killed.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::served::*;
use serde_json::{json, Value};

#[test]
fn coverage_and_drafting_follow_the_matrix_and_the_chains() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    let s = serve(&root, &tmp.path().join("data"));
    let (code, cov) = get(&s.addr, "/api/coverage?rows=condition&cols=phase");
    assert_eq!(code, 200, "{cov}");
    assert_eq!(cov["totals"], json!({"covered": 0, "running": 0, "failed": 0, "gap": 8}));
    assert_eq!(cov["grid"]["rows"], json!(["base", "treat"]));
    assert_eq!(cov["grid"]["squares"][0][1]["gap"], 2);
    assert_eq!(get(&s.addr, "/api/coverage?rows=colour").0, 422);

    // The chain: only warmups can be drafted before any is covered.
    let body = json!({"label": "w", "max_cells": 50, "endpoint": "gpu-a"});
    let (code, p) = post(&s.addr, "/api/drafts/preview", body.clone());
    assert_eq!(code, 200, "{p}");
    let cells = p["draft"]["spec"]["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    assert!(cells.iter().all(|c| c["factors"]["phase"] == "warmup"));
    assert_eq!(p["draft"]["held_back"][0]["cells"], 4);
    assert_eq!(p["draft"]["spec"]["model"], "local-m", "the endpoint's only model");

    // Run the warmups; then the mains become draftable and the coverage says so.
    let path = draft(&s.addr, body.clone());
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    wait_for("the warmups to finish", Duration::from_secs(60), || live_state(&s.addr).0 == "idle");
    let (_, cov) = get(&s.addr, "/api/coverage");
    assert_eq!(cov["totals"]["covered"], 4, "{cov}");
    let (_, page) = get(&s.addr, "/api/cells?state=gap&limit=2");
    assert_eq!((page["matching"].as_u64(), page["cells"].as_array().unwrap().len()), (Some(4), 2));
    let (_, p) = post(&s.addr, "/api/drafts/preview", body);
    assert!(p["draft"]["spec"]["cells"].as_array().unwrap().iter().all(|c| c["factors"]["phase"] == "main"), "{p}");
    let (_, sets) = get(&s.addr, "/api/runsets");
    assert_eq!(sets[0]["status"], "completed", "{sets}");
    assert_eq!(sets[0]["tags"], json!(["console"]));
    assert_eq!(sets[0]["done"], 4);

    // Every reason a draft cannot be made, at once.
    let (code, e) = post(
        &s.addr,
        "/api/drafts/preview",
        json!({"label": "bad label", "max_cells": 0, "filters": {"colour": ["red"]}, "model": "ghost"}),
    );
    assert_eq!(code, 422);
    assert_eq!(e["kind"], "refused");
    assert_eq!(e["reasons"].as_array().unwrap().len(), 4, "{e}");
}

#[test]
fn every_refusal_of_the_launch_path_says_why() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    std::fs::create_dir_all(root.join("specs/drafts")).unwrap();
    std::fs::create_dir_all(tmp.path().join("outside")).unwrap();
    let good = json!({"schema_version": 1, "label": "p", "model": "local-m", "endpoint": "gpu-a",
                      "cells": [{"factors": {"condition": "base", "task": "t1", "phase": "warmup", "seed": 1, "repetition": 0}}]});
    std::fs::write(tmp.path().join("outside/x.json"), good.to_string()).unwrap();
    std::os::unix::fs::symlink(tmp.path().join("outside/x.json"), root.join("specs/drafts/link.json")).unwrap();
    std::fs::write(
        root.join("specs/drafts/broken.json"),
        r#"{"schema_version": 1, "label": "p", "cells": [{"factors": []}]}"#,
    )
    .unwrap();
    let mut paid = good.clone();
    paid["model"] = json!("paid-m");
    paid["endpoint"] = json!("gpu-a");
    std::fs::write(root.join("specs/drafts/paid.json"), paid.to_string()).unwrap();
    std::fs::write(root.join("campaign-copy.json"), good.to_string()).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let cases: Vec<(Value, &str)> = vec![
        (json!({}), "path: missing"),
        (json!({"path": "/etc/passwd"}), "must be relative"),
        (json!({"path": "specs/../campaign-copy.json"}), "no '..'"),
        (json!({"path": "campaign-copy.json"}), "must be under specs/"),
        (json!({"path": "specs/drafts/none.json"}), "no such spec file"),
        (json!({"path": "specs/drafts/link.json"}), "leads outside specs/"),
        (json!({"path": "specs/drafts/broken.json"}), "specs/drafts/broken.json: cells[0].factors: must be an object"),
        (json!({"path": "specs/drafts/paid.json"}), "does not serve \"paid-m\""),
        (json!({"path": 7}), "body: path: invalid type"),
    ];
    for (body, want) in cases {
        let (code, e) = post(&s.addr, "/api/control/start", body.clone());
        assert_eq!(code, 422, "{body}: {e}");
        assert_eq!(e["kind"], "refused", "{body}: {e}");
        let reasons: Vec<&str> = e["reasons"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        assert!(reasons.iter().any(|r| r.contains(want)), "{body}: want {want:?} in {reasons:?}");
    }
    // Not JSON: refused, never launched.
    let (code, e) =
        http(&s.addr, "POST", "/api/control/start", Some("path=specs/x.json"), "application/x-www-form-urlencoded");
    assert_eq!((code, e["kind"].as_str()), (422, Some("refused")));
    // A preflight lists every reason together: the endpoint, and the paid
    // model's daily cap once a launch of it is in today's index.
    std::fs::create_dir_all(root.join("runsets")).unwrap();
    let now = runboard::Timestamp(
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64,
    );
    std::fs::write(
        root.join("runsets/run_index.csv"),
        format!(
            "run_set,spec,label,launched_at,kind,launcher,unit,tag,cells,model,endpoint\nold,specs/committed/0001-p.json,p,{},launch,local,rb-old,console,1,paid-m,\n",
            now.to_rfc3339()
        ),
    )
    .unwrap();
    let (code, pf) = post(&s.addr, "/api/preflight", json!({"path": "specs/drafts/paid.json"}));
    assert_eq!(code, 200, "{pf}");
    let reasons = pf["refusals"].as_array().unwrap();
    assert_eq!(reasons.len(), 2, "{pf}");
    assert!(reasons[1].as_str().unwrap().contains("daily cap of 1 batch(es) is reached"));
    assert!(!root.join("specs/committed").exists(), "nothing refused was committed");
    assert!(!root.join(".runboard/units").exists(), "nothing refused was launched");
}

#[test]
fn pause_resume_and_stop_steer_a_real_batch() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 1.5);
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "steer", "max_cells": 4, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    assert_eq!(l["spec"], "specs/committed/0001-steer.json");
    wait_for("running", Duration::from_secs(20), || live_state(&s.addr).0 == "running");
    let (_, v) = live_state(&s.addr);
    assert_eq!(v["run_set"], run_set.as_str());
    assert_eq!(v["totals"]["planned"], 4);

    let (code, r) = post(&s.addr, "/api/control/pause", json!({}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["marker"], "stopped_before_completion");
    let (state, v) = live_state(&s.addr);
    assert_eq!(state, "stopped_resumable", "{v}");
    assert!(v["resumable"].as_bool().unwrap());
    assert_eq!(post(&s.addr, "/api/control/pause", json!({})).0, 409, "nothing left to pause");

    let (code, r) = post(&s.addr, "/api/control/resume", json!({"run_set": run_set}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["unit"], format!("rb-{run_set}.r2"));
    wait_for("running again", Duration::from_secs(20), || live_state(&s.addr).0 == "running");

    let (code, r) = post(&s.addr, "/api/control/stop", json!({}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["marker"], "aborted_by_operator");
    let (state, v) = live_state(&s.addr);
    assert_eq!(state, "aborted", "{v}");
    assert!(!v["resumable"].as_bool().unwrap());
    let log = std::fs::read_to_string(root.join("runsets").join(&run_set).join("execution_log.md")).unwrap();
    assert!(log.contains("aborted by the operator"), "{log}");
    let auto: Value = serde_json::from_slice(&std::fs::read(root.join("auto/state.json")).unwrap()).unwrap();
    assert_eq!(auto["mode"], "off");
    let (code, e) = post(&s.addr, "/api/control/resume", json!({"run_set": run_set}));
    assert_eq!(code, 422, "an aborted run set is not resumed: {e}");
    assert_eq!(post(&s.addr, "/api/control/resume", json!({"run_set": "nope"})).0, 422);
    // No process of the batch is left.
    for u in std::fs::read_dir(root.join(".runboard/units")).unwrap().flatten() {
        if u.path().extension().is_some_and(|e| e == "json") {
            let rec: Value = serde_json::from_slice(&std::fs::read(u.path()).unwrap()).unwrap();
            assert!(rec["ended_at"].is_string(), "{rec}");
            let pid = rec["driver_pid"].as_u64().unwrap();
            assert!(!Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid), "driver {pid} still runs");
        }
    }
}

#[test]
fn a_unit_that_dies_before_its_batch_shows_launch_failed_and_why() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    // The runner's program does not exist: the driver's doctor refuses the
    // batch in the background (the preflight would have said so: skipped).
    let cfg = std::fs::read_to_string(root.join("campaign.toml"))
        .unwrap()
        .replace("[\"sh\", \"-c\",", "[\"no-such-harness-9\", \"-c\",");
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "doomed", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, e) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 422, "the preflight catches it: {e}");
    assert!(e["reasons"][0].as_str().unwrap().contains("no-such-harness-9"), "{e}");
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path, "skip_preflight": true}));
    assert_eq!(code, 200, "{l}");
    wait_for("launch_failed", Duration::from_secs(20), || live_state(&s.addr).0 == "launch_failed");
    let (_, v) = live_state(&s.addr);
    let f = &v["state"]["failure"];
    assert_eq!(f["exit_status"], 2);
    assert_eq!(f["refusal"], true);
    assert_eq!(f["title"], "The batch was refused before it started.");
    assert!(f["reason"].as_str().unwrap().contains("no-such-harness-9"), "{f}");
    assert!(v["words"].as_str().unwrap().contains("no-such-harness-9"));
}

#[test]
fn a_batch_outlives_its_server_killed_mid_batch_and_is_found_again() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 1.0);
    let data = tmp.path().join("data");
    let first = serve(&root, &data);
    let path = draft(&first.addr, json!({"label": "survive", "max_cells": 3, "endpoint": "gpu-a"}));
    let (code, l) = post(&first.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    wait_for("running", Duration::from_secs(20), || live_state(&first.addr).0 == "running");
    drop(first); // SIGKILL to the server, by its PID
    let again = serve(&root, &data);
    let (state, v) = live_state(&again.addr);
    assert_eq!(state, "running", "the batch survived the server: {v}");
    assert_eq!(v["run_set"], run_set.as_str());
    wait_for("the batch to end", Duration::from_secs(60), || live_state(&again.addr).0 == "idle");
    let (_, v) = live_state(&again.addr);
    assert_eq!(v["outcome"]["status"], "completed", "{v}");
    assert_eq!(v["totals"]["done"], 3);
    assert_eq!(v["totals"]["tokens"], 300);
    assert_eq!(v["unit"]["observation"]["exit_status"], 0, "its exit status is recorded: {v}");
}

#[test]
fn a_failing_lease_release_is_reported_and_the_pause_completes() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 2.0);
    let cfg = std::fs::read_to_string(root.join("campaign.toml")).unwrap()
        + "[hooks]\nrelease_lease = [\"sh\", \"-c\", \"echo lease controller unreachable; exit 3\"]\n";
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "lease", "max_cells": 2, "endpoint": "gpu-a"}));
    assert_eq!(post(&s.addr, "/api/control/start", json!({"path": path})).0, 200);
    wait_for("running", Duration::from_secs(20), || live_state(&s.addr).0 == "running");
    let (code, r) = post(&s.addr, "/api/control/pause", json!({}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["lease"]["ok"], false, "{r}");
    assert!(r["lease"]["status"].as_str().unwrap().contains('3'), "{r}");
    assert!(r["lease"]["output"].as_str().unwrap().contains("lease controller unreachable"), "{r}");
    assert_eq!(r["marker"], "stopped_before_completion", "the rest of the pause completed");
    assert_eq!(live_state(&s.addr).0, "stopped_resumable");
}

#[test]
fn two_launches_at_once_never_race() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    let s = serve(&root, &tmp.path().join("data"));
    let a = draft(&s.addr, json!({"label": "same", "max_cells": 1, "endpoint": "gpu-a"}));
    let b = draft(&s.addr, json!({"label": "same", "max_cells": 1, "endpoint": "gpu-a"}));
    assert_ne!(a, b, "two drafts saved at once get two names");
    let addr = s.addr.clone();
    let other = std::thread::spawn(move || post(&addr, "/api/control/start", json!({"path": b})));
    let first = post(&s.addr, "/api/control/start", json!({"path": a}));
    let second = other.join().unwrap();
    assert_eq!((first.0, second.0), (200, 200), "{} / {}", first.1, second.1);
    let specs: std::collections::BTreeSet<&str> =
        [first.1["spec"].as_str().unwrap(), second.1["spec"].as_str().unwrap()].into();
    assert_eq!(specs, ["specs/committed/0001-same.json", "specs/committed/0002-same.json"].into());
    assert_ne!(first.1["run_set"], second.1["run_set"], "each launch has its own run set");
    let index = std::fs::read_to_string(root.join("runsets/run_index.csv")).unwrap();
    assert_eq!(index.lines().count(), 3, "a header and one whole line per launch: {index}");
}

/// Two batches in flight (as on two lanes): the live state speaks for the
/// latest, and the other is listed beside it, never hidden.
#[test]
fn a_second_batch_in_flight_is_shown_beside_the_first() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 20.0);
    let s = serve(&root, &tmp.path().join("data"));
    let a = draft(&s.addr, json!({"label": "a", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, first) = post(&s.addr, "/api/control/start", json!({"path": a}));
    assert_eq!(code, 200, "{first}");
    wait_for("the first running", Duration::from_secs(30), || live_state(&s.addr).0 == "running");
    assert_eq!(live_state(&s.addr).1["others"], json!([]), "one batch: nothing beside it");
    let b = draft(&s.addr, json!({"label": "b", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, second) = post(&s.addr, "/api/control/start", json!({"path": b}));
    assert_eq!(code, 200, "{second}");
    let mut seen = Value::Null;
    wait_for("the second running and the first beside it", Duration::from_secs(30), || {
        let (st, v) = live_state(&s.addr);
        seen = v.clone();
        st == "running" && v["run_set"] == second["run_set"] && v["others"].as_array().is_some_and(|o| o.len() == 1)
    });
    let other = &seen["others"][0];
    assert_eq!(other["unit"], first["unit"], "{seen}");
    assert_eq!(other["run_set"], first["run_set"]);
    assert_eq!((other["state"].as_str(), other["backend"].as_str()), (Some("running"), Some("local")));
    let words = other["words"].as_str().unwrap();
    assert!(words.contains(first["run_set"].as_str().unwrap()) && words.ends_with("is running."), "{words}");
    // Stop acts on the batch on screen only: the other runs on, and is
    // stopped when named.
    let (code, r) = post(&s.addr, "/api/control/stop", json!({}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["run_sets"], json!([second["run_set"]]), "{r}");
    let (_, v) = live_state(&s.addr);
    assert_eq!(v["state"]["state"], "running", "the first batch runs on: {v}");
    assert_eq!(v["run_set"], first["run_set"], "{v}");
    let (code, r) = post(&s.addr, "/api/control/stop", json!({"run_sets": [first["run_set"]]}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(live_state(&s.addr).1["others"], json!([]), "nothing in flight after both stops");
}

/// The preflight agrees with the catalogue and warns, naming each, of what
/// does not stop a launch but should be known: an endpoint the catalogue says
/// is not available, covered cells run again, an endpoint shared with a
/// running batch, money spent (with its currency).
#[test]
fn the_preflight_warns_of_what_the_catalogue_says_reruns_a_shared_endpoint_and_money() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 20.0);
    let s = serve(&root, &tmp.path().join("data"));
    let local = draft(&s.addr, json!({"label": "loc", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, pf) = post(&s.addr, "/api/preflight", json!({"path": local}));
    assert_eq!(code, 200, "{pf}");
    let warned = |pf: &Value| {
        pf["warnings"].as_array().unwrap().iter().map(|w| w.as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let w = warned(&pf);
    assert!(
        w.iter().any(|w| w.starts_with(
            "the catalogue says: endpoint gpu-a: Not available: http://127.0.0.1:9/v1/models does not answer"
        )),
        "{w:?}"
    );
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": local}));
    assert_eq!(code, 200, "a warning does not stop a launch: {l}");
    wait_for("running", Duration::from_secs(30), || live_state(&s.addr).0 == "running");
    // A second batch on the same endpoint, while the first runs.
    let again = draft(&s.addr, json!({"label": "loc2", "max_cells": 1, "endpoint": "gpu-a"}));
    let (_, pf) = post(&s.addr, "/api/preflight", json!({"path": again}));
    let w = warned(&pf);
    let shared = format!("shares endpoint gpu-a with {}, running now", l["run_set"].as_str().unwrap());
    assert!(w.iter().any(|w| w.starts_with(&shared)), "{w:?}");
    // A paid model: the money, in the campaign's currency.
    let paid = draft(&s.addr, json!({"label": "paid", "max_cells": 1, "model": "paid-m"}));
    let (_, pf) = post(&s.addr, "/api/preflight", json!({"path": paid}));
    let w = warned(&pf);
    assert!(w.iter().any(|w| w.starts_with("spends money: paid-m is paid")), "no history yet: {w:?}");
    assert_eq!(pf["prediction"]["currency"], "USD", "{pf}");
    assert_eq!(post(&s.addr, "/api/control/stop", json!({"run_sets": [l["run_set"]]})).0, 200);
}

/// A campaign on default graces (none set: the runner's 35 s, the launcher's
/// 45 s) whose cells end at once on SIGTERM: a pause ends within seconds, the
/// cell recorded stopped (143, its `cell_end`), the batch stopped and resumable.
#[test]
fn a_pause_on_default_graces_ends_at_once_stopped_and_resumable() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 600.0);
    let cfg = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    let cfg = cfg.replace("parallel = 1\ngrace_s = 5\n", "parallel = 1\n").replace("[launcher]\ngrace_s = 8\n", "");
    assert!(!cfg.contains("grace_s"), "{cfg}");
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "slow", "max_cells": 2, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    wait_for("a cell running", Duration::from_secs(30), || live_state(&s.addr).1["totals"]["running"] == 1);
    let asked = Instant::now();
    let (code, r) = post(&s.addr, "/api/control/pause", json!({"run_set": run_set}));
    let took = asked.elapsed();
    assert_eq!(code, 200, "{r}");
    assert!(took < Duration::from_secs(5), "the pause took {took:?}: {r}");
    assert!(r["units"][0].as_str().unwrap().ends_with("ended after SIGTERM"), "{r}");
    let dir = root.join("runsets").join(&run_set);
    let outcome: Value = serde_json::from_slice(&std::fs::read(dir.join("batch_outcome.json")).unwrap()).unwrap();
    assert_eq!(outcome["status"], "stopped", "{outcome}");
    let cells: Vec<Value> = std::fs::read_dir(dir.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    let stopped: Vec<&Value> = cells.iter().filter(|c| c["status"] == "stopped").collect();
    assert_eq!(stopped.len(), 1, "{cells:?}");
    assert_eq!(stopped[0]["exit_code"], 143, "{cells:?}");
    let events = std::fs::read_to_string(dir.join("events.jsonl")).unwrap();
    assert!(
        events.lines().any(|l| l.contains("\"cell_end\"")
            && l.contains(stopped[0]["cell"].as_str().unwrap())
            && l.contains("\"stopped\"")),
        "{events}"
    );
    let (state, v) = live_state(&s.addr);
    assert_eq!(state, "stopped_resumable", "{v}");
    assert_eq!(v["resumable_run_sets"], json!([run_set]), "{v}");
    // The stopped-then-resumed cell is timed as paused, not retried.
    let (code, r) = post(&s.addr, "/api/control/resume", json!({"run_set": run_set}));
    assert_eq!(code, 200, "{r}");
    wait_for("running again", Duration::from_secs(30), || live_state(&s.addr).1["totals"]["running"] == 1);
    let (code, t) = get(&s.addr, &format!("/api/timing?run_set={run_set}"));
    assert_eq!(code, 200, "{t}");
    let text = t.to_string();
    assert!(text.contains("\"paused\""), "a paused phase: {text}");
    assert!(!text.contains("\"retried\""), "no retried phase: {text}");
    assert_eq!(post(&s.addr, "/api/control/stop", json!({"run_sets": [run_set]})).0, 200);
}

/// Stop names what it ends: names that are not run set names are refused and
/// nothing is touched; a stop of run sets that do not exist leaves the marker.
#[test]
fn a_stop_of_bad_or_missing_run_sets_touches_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 20.0);
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "real", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    wait_for("running", Duration::from_secs(30), || live_state(&s.addr).0 == "running");
    let marker = || std::fs::read_to_string(root.join("runsets/active_batch.json")).unwrap();
    let before = marker();
    let (code, e) = post(&s.addr, "/api/control/stop", json!({"run_sets": ["../../outside", "a/b"]}));
    assert_eq!(code, 422, "{e}");
    assert_eq!(e["reasons"].as_array().unwrap().len(), 2, "every bad name: {e}");
    let (code, e) = post(&s.addr, "/api/control/stop", json!({"run_sets": ["no-such-batch"]}));
    assert_eq!(code, 404, "{e}");
    assert!(e["reasons"][0].as_str().unwrap().contains("no-such-batch"), "{e}");
    assert_eq!(marker(), before, "the marker is untouched");
    assert_eq!(live_state(&s.addr).0, "running", "nothing was stopped");
    // A default stop then stops the real last batch.
    let (code, r) = post(&s.addr, "/api/control/stop", json!({}));
    assert_eq!(code, 200, "{r}");
    assert_eq!(r["run_sets"], json!([l["run_set"]]), "{r}");
}

/// The catalogue says of each model and endpoint whether it can be used now
/// and why not, probing the endpoints' `/v1/models` (a small stand-in
/// answers there: a GPU model server cannot run on this machine), and counts
/// what each was used for.
#[test]
fn the_catalogue_says_what_can_be_used_now_and_why_not() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    let s = serve(&root, &tmp.path().join("data"));
    let named = |c: &Value, list: &str, name: &str| {
        c[list].as_array().unwrap().iter().find(|m| m["name"] == name).cloned().unwrap_or_else(|| panic!("{c}"))
    };
    let (code, c) = get(&s.addr, "/api/catalogue");
    assert_eq!(code, 200, "{c}");
    assert_eq!(c["note"], "Availability and configuration: operational signals, not results.");
    let gpu = named(&c, "endpoints", "gpu-a");
    assert_eq!(gpu["available"], false, "{gpu}");
    let words = gpu["words"].as_str().unwrap();
    assert!(words.starts_with("Not available: http://127.0.0.1:9/v1/models does not answer: "), "{words}");
    assert_eq!(named(&c, "models", "local-m")["words"], "Not available: none of its endpoints is available (gpu-a).");
    assert_eq!(named(&c, "models", "paid-m")["words"], "Available: 1 of its daily cap of 1 left today.");
    let (code, bad) = get(&s.addr, "/api/catalogue?fresh=maybe");
    assert_eq!((code, bad["kind"].as_str()), (422, Some("bad_query")), "{bad}");
    assert!(bad.to_string().contains("must be true or false"), "{bad}");

    // The endpoint comes up: the next probe finds it.
    let up = stand_in_endpoint(json!([{"id": "local-m", "object": "model"}]));
    let cfg = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), cfg.replace("http://127.0.0.1:9/v1", &format!("http://{up}/v1")))
        .unwrap();
    let (_, c) = get(&s.addr, "/api/catalogue?fresh=true");
    let gpu = named(&c, "endpoints", "gpu-a");
    assert_eq!((gpu["available"].as_bool(), gpu["words"].as_str()), (Some(true), Some("Answers and reports local-m.")));
    assert_eq!(gpu["probe"]["reported"], json!(["local-m"]));
    assert_eq!(named(&c, "models", "local-m")["words"], "Available.");

    // A paid batch: its use is counted and its daily cap is reached.
    let path = draft(&s.addr, json!({"label": "paid", "max_cells": 1, "model": "paid-m"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    wait_for("the paid batch to end", Duration::from_secs(60), || live_state(&s.addr).0 == "idle");
    let (_, c) = get(&s.addr, "/api/catalogue");
    let paid = named(&c, "models", "paid-m");
    assert_eq!(paid["words"], "Not available: its daily cap of 1 is reached (1 launched today, UTC).", "{paid}");
    let used = &paid["use"];
    assert_eq!(
        (used["run_sets"].as_u64(), used["cells"].as_u64(), used["tokens"].as_u64()),
        (Some(1), Some(1), Some(100))
    );
    assert!((used["cost"].as_f64().unwrap() - 0.2).abs() < 1e-9, "100 tokens at 2.0 per 1k: {used}");
    assert_eq!(named(&c, "models", "local-m")["use"]["run_sets"], 0);
    let out = std::process::Command::new(BIN).args(["catalogue", "--root"]).arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(
        text.contains("model paid-m (paid): Not available: its daily cap of 1 is reached")
            && text.contains("1 run set(s), 1 cells, 100 tokens, cost 0.20")
            && text.contains("endpoint gpu-a (http://"),
        "{text}"
    );
    let out =
        std::process::Command::new(BIN).args(["catalogue", "--root"]).arg(tmp.path().join("nowhere")).output().unwrap();
    assert!(!out.status.success(), "a missing root is an error");
}

#[test]
fn a_cell_that_owns_a_run_directory_shows_its_rounds_and_trials() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    // Each cell is a simulated agent run written into the cell's own folder.
    let command = format!(
        r#"command = ["{BIN}", "simulate-run", "{{out}}", "--rounds", "2", "--step-ms", "0", "--seed", "{{seed}}"]"#
    );
    let cfg: Vec<String> = std::fs::read_to_string(root.join("campaign.toml"))
        .unwrap()
        .lines()
        .map(|l| if l.starts_with("command = ") { command.clone() } else { l.to_owned() })
        .collect();
    let cfg = cfg.join("\n");
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "runs", "max_cells": 2, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    wait_for("the batch to end", Duration::from_secs(60), || live_state(&s.addr).0 == "idle");
    let (_, v) = live_state(&s.addr);
    let cells = v["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{v}");
    for c in cells {
        let run = &c["run"];
        assert!(run["path"].as_str().unwrap().ends_with(c["cell"].as_str().unwrap()), "{c}");
        assert_eq!(run["rounds_written"], 2, "{c}");
        assert!(run["trials"].as_u64().unwrap() >= 2, "{c}");
        assert!(c["tokens"].as_u64().unwrap() > 0, "the simulated agent reports its tokens: {c}");
    }
}

/// A stand-in for an OpenAI-compatible model server: answers `GET
/// /v1/models` with `models` (a real GPU model server cannot run here; this
/// is the one request the pool check makes). Its address.
fn stand_in_endpoint(models: Value) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            let mut conn = conn;
            let mut buf = [0u8; 4096];
            let n = std::io::Read::read(&mut conn, &mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]);
            let (status, body) = if head.starts_with("GET /v1/models ") {
                ("200 OK", json!({"object": "list", "data": models}).to_string())
            } else {
                ("404 Not Found", "{}".to_owned())
            };
            let _ = std::io::Write::write_all(
                &mut conn,
                format!("HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len())
                    .as_bytes(),
            );
        }
    });
    addr
}

#[test]
fn a_resource_pool_is_refused_with_every_reason_or_spreads_its_cells_over_its_endpoints() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    let awq = json!([{"id": "local-m", "object": "model", "root": "/models/m-awq", "max_model_len": 32768}]);
    let fp16 = json!([{"id": "local-m", "object": "model", "root": "/models/m-fp16", "max_model_len": 32768}]);
    let (b, c, d) = (stand_in_endpoint(awq.clone()), stand_in_endpoint(awq), stand_in_endpoint(fp16));
    // A port nothing listens on: the probe cannot connect.
    let down = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().to_string();
    let mut cfg = std::fs::read_to_string(root.join("campaign.toml"))
        .unwrap()
        .replace("\"sh\", \"-c\", \"sleep", "\"sh\", \"-c\", \"echo {endpoint} > {out}/endpoint.txt; sleep");
    for (name, addr) in [("gpu-b", &b), ("gpu-c", &c), ("gpu-d", &d), ("gpu-down", &down)] {
        cfg += &format!(
            "[[endpoints]]\nname = \"{name}\"\nurl = \"http://{addr}/v1\"\nbackend = \"vllm\"\nmodels = [\"local-m\"]\nrequest_preset = \"p\"\n"
        );
    }
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    std::fs::create_dir_all(root.join("specs/drafts")).unwrap();
    let cells: Vec<Value> = (1..=2)
        .flat_map(|s| {
            ["base", "treat"].map(
                |c| json!({"factors": {"condition": c, "task": "t1", "phase": "warmup", "seed": s, "repetition": 0}}),
            )
        })
        .collect();
    let pool = |endpoints: Value, cells: &[Value]| {
        json!({"schema_version": 1, "label": "pool", "model": "local-m", "backend": "vllm",
               "endpoints": endpoints, "cells": cells})
    };
    std::fs::write(
        root.join("specs/drafts/bad-pool.json"),
        pool(json!(["gpu-b", "gpu-b", "gpu-a", "gpu-d", "gpu-down", "gpu-x"]), &[]).to_string(),
    )
    .unwrap();
    std::fs::write(root.join("specs/drafts/pool.json"), pool(json!(["gpu-b", "gpu-c"]), &cells).to_string()).unwrap();
    let s = serve(&root, &tmp.path().join("data"));

    // Every reason at once — also when the preflight is skipped.
    for skip in [false, true] {
        let (code, e) =
            post(&s.addr, "/api/control/start", json!({"path": "specs/drafts/bad-pool.json", "skip_preflight": skip}));
        assert_eq!(code, 422, "{e}");
        let reasons: Vec<&str> = e["reasons"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
        for want in [
            "the pool plans no cells",
            "endpoint \"gpu-b\" is named twice in the pool",
            "endpoint \"gpu-x\" is not in the catalogue",
            "endpoint \"gpu-down\"",
            "/models did not answer: cannot connect",
            "the endpoints do not serve the same model identity",
            "gpu-d serves /models/m-fp16 (max_model_len 32768)",
            "the endpoints do not share a request policy: gpu-a uses preset \"default\"; gpu-b uses preset \"p\"",
        ] {
            assert!(reasons.iter().any(|r| r.contains(want)), "skip {skip}: want {want:?} in {reasons:#?}");
        }
    }
    assert!(!root.join(".runboard/units").exists(), "nothing refused was launched");

    // A pool of the same serving: one batch, its cells spread over the pool.
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": "specs/drafts/pool.json"}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    wait_for("the pool's batch to end", Duration::from_secs(60), || live_state(&s.addr).0 == "idle");
    let (_, v) = live_state(&s.addr);
    assert_eq!(v["outcome"]["status"], "completed", "{v}");
    let spec: Value = serde_json::from_slice(&std::fs::read(root.join(l["spec"].as_str().unwrap())).unwrap()).unwrap();
    let mut used = std::collections::BTreeMap::new();
    for (i, cell) in spec["cells"].as_array().unwrap().iter().enumerate() {
        let id = runboard::console::spec::cell_id(&serde_json::from_value(cell["factors"].clone()).unwrap());
        let out = root.join("runsets").join(&run_set).join("out").join(&id).join("endpoint.txt");
        let endpoint = std::fs::read_to_string(&out).unwrap().trim().to_owned();
        assert_eq!(endpoint, ["gpu-b", "gpu-c"][i % 2], "cell {i} runs on endpoints[i mod 2]");
        *used.entry(endpoint).or_insert(0) += 1;
    }
    assert_eq!(used, [("gpu-b".to_owned(), 2), ("gpu-c".to_owned(), 2)].into());
}

#[test]
fn evidence_counts_the_ended_cells_with_intervals_and_says_where_failures_fall() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.1); // 100 tokens in 0.1 s: a plausible timing
                                          // Treat's cells fail (exit 1); base's pass.
    let cfg = std::fs::read_to_string(root.join("campaign.toml"))
        .unwrap()
        .replace("\"sh\", \"-c\", \"sleep", "\"sh\", \"-c\", \"test {condition} = base || exit 1; sleep")
        + "[results]\nprivate_factors = [\"seed\"]\n";
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let (code, e) = get(&s.addr, "/api/evidence");
    assert_eq!(code, 200, "{e}");
    assert_eq!((e["n"].as_u64(), e["overall"]["rate"].is_null()), (Some(0), true), "nothing ended yet: {e}");
    let path = draft(&s.addr, json!({"label": "ev", "max_cells": 4, "endpoint": "gpu-a"}));
    assert_eq!(post(&s.addr, "/api/control/start", json!({"path": path})).0, 200);
    wait_for("the batch to end", Duration::from_secs(60), || live_state(&s.addr).0 == "idle");
    let (code, e) = get(&s.addr, "/api/evidence?by=condition");
    assert_eq!(code, 200, "{e}");
    assert_eq!(e["n"], 4);
    let g = |i: usize| {
        (
            e["groups"][i]["level"].as_str(),
            e["groups"][i]["passes"]["successes"].as_u64(),
            e["groups"][i]["passes"]["n"].as_u64(),
        )
    };
    assert_eq!((g(0), g(1)), ((Some("base"), Some(2), Some(2)), (Some("treat"), Some(0), Some(2))));
    // 2/2: the Wilson interval's upper end is 1, its lower 0.342 (not 1 ± 0).
    let ci = &e["groups"][0]["passes"]["ci95"];
    assert!((ci["lo"].as_f64().unwrap() - 0.3424).abs() < 1e-3 && ci["hi"] == 1.0, "{ci}");
    assert_eq!(e["comparisons"][0]["level"], "treat");
    assert_eq!(e["comparisons"][0]["difference"], -1.0);
    assert_eq!(e["by_model"][0]["level"], "local-m", "the model from the run set's spec");
    assert_eq!(e["not_passed_by_reason"][0], json!({"reason": "exit 1", "cells": 2, "failed": 2}));
    let (code, bad) = get(&s.addr, "/api/evidence?by=colour");
    assert_eq!((code, bad["kind"].as_str()), (422, Some("bad_query")), "{bad}");
    let out = std::process::Command::new(BIN).args(["evidence", "--root"]).arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("base") && text.contains("2/2 = 100 % [34–100 %]") && text.contains("     2  exit 1 (failed)"),
        "{text}"
    );

    // The public export: the private factor and the cell ids left out, with
    // its provenance (run sets, committed specs, version, content hash).
    let (code, x) = get(&s.addr, "/api/evidence/export");
    assert_eq!(code, 200, "{x}");
    assert_eq!(
        x["columns"],
        json!(["condition", "task", "phase", "repetition", "model", "run_set", "passed", "score", "tokens"])
    );
    assert_eq!(x["rows"].as_array().unwrap().len(), 4);
    let p = &x["provenance"];
    assert_eq!(p["specs"], json!(["specs/committed/0001-ev.json"]));
    assert_eq!((p["private_factors"].clone(), p["content_hash"].as_str().map(str::len)), (json!(["seed"]), Some(16)));
    let (code, csv) = get_text(&s.addr, "/api/evidence/export?format=csv");
    assert_eq!(code, 200);
    assert!(csv.contains("# content_hash: ") && csv.contains("# specs: specs/committed/0001-ev.json"), "{csv}");
    assert!(csv.contains("\ncondition,task,phase,repetition,model,run_set,passed,score,tokens\n"), "{csv}");
    assert!(csv.contains("\n# private_factors: seed\n"), "{csv}");
    let data = csv.lines().filter(|l| !l.starts_with('#')).collect::<Vec<_>>().join("\n");
    assert!(!data.contains("seed"), "the private factor is left out of the rows: {csv}");
    assert!(!csv.contains(",c-"), "no cell ids: {csv}");
    let (code, bad) = get(&s.addr, "/api/evidence/export?format=xml");
    assert_eq!((code, bad["kind"].as_str()), (422, Some("bad_query")));

    // Charts drawn by the server, with their numbers.
    let rates = &e["charts"]["rates"];
    assert!(rates["svg"].as_str().unwrap().starts_with("<svg"), "{rates}");
    assert_eq!(rates["table"]["rows"][0], json!(["base (n=2)", "100", "34.2", "100"]));
    assert_eq!(e["charts"]["differences"]["table"]["rows"][0][0], "treat − base");

    // The scope: only base's cells; an unknown factor and a bad date are
    // refused with each reason; dates with no cell count nothing.
    let (code, e) = get(&s.addr, "/api/evidence?scope=condition%3Dbase");
    assert_eq!((code, e["n"].as_u64(), e["scope"].as_str()), (200, Some(2), Some("condition=base")), "{e}");
    let (code, bad) = get(&s.addr, "/api/evidence?scope=colour%3Dred%20from%3D2026-13-01");
    assert_eq!((code, bad["kind"].as_str()), (422, Some("bad_query")), "{bad}");
    let reason = bad["error"].as_str().unwrap_or_default();
    assert!(reason.contains("colour is not a factor") && reason.contains("not a date (YYYY-MM-DD)"), "{bad}");
    let (_, e) = get(&s.addr, "/api/evidence?scope=from%3D2000-01-01%20to%3D2000-01-02");
    assert_eq!(e["n"], 0, "{e}");
    let (_, x) = get(&s.addr, "/api/evidence/export?scope=condition%3Dtreat");
    assert_eq!((x["rows"].as_array().unwrap().len(), x["provenance"]["scope"].as_str()), (2, Some("condition=treat")));

    // Timing: the base cells count, the failed ones do not (and say why);
    // each cell's queue and run on the timeline.
    let (code, t) = get(&s.addr, "/api/timing");
    assert_eq!(code, 200, "{t}");
    let run_set = t["run_sets"][0].as_str().unwrap().to_owned();
    assert_eq!((t["run_sets"].as_array().unwrap().len(), t["run_set"].as_str()), (1, Some(run_set.as_str())));
    assert_eq!((t["validity"]["counted"].as_u64(), t["validity"]["not_counted"].as_u64()), (Some(2), Some(2)), "{t}");
    assert_eq!(t["validity"]["reasons"], json!([["not complete", 2]]));
    let cells = t["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 4);
    let svg = t["timeline"]["svg"].as_str().unwrap();
    for c in cells {
        assert!(svg.contains(c["cell"].as_str().unwrap()), "a row per cell");
        let phases: Vec<&str> =
            c["segments"].as_array().unwrap().iter().map(|s| s["phase"].as_str().unwrap()).collect();
        let last = if c["factors"]["condition"] == "base" { "running" } else { "failed" };
        assert_eq!(phases.last(), Some(&last), "{c}");
        assert_eq!(c["endpoint"], "gpu-a");
        assert_eq!(c["counts"], c["factors"]["condition"] == "base", "{c}");
    }
    assert_eq!(t["summary"]["counted"], 2);
    assert!(t["summary"]["median_s"].as_f64().unwrap() > 0.0, "{t}");
    let (code, t2) = get(&s.addr, "/api/timing?scope=condition%3Dtreat");
    assert_eq!(
        (code, t2["validity"]["counted"].as_u64(), t2["validity"]["not_counted"].as_u64()),
        (200, Some(0), Some(2))
    );
    let (code, bad) = get(&s.addr, "/api/timing?run_set=nope");
    assert_eq!((code, bad["kind"].as_str()), (422, Some("bad_query")), "{bad}");
    let out = std::process::Command::new(BIN).args(["timing", "--root"]).arg(&root).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("2 cells count, 2 do not") && text.contains("not complete: it failed"),
        "{text}"
    );
    let out = std::process::Command::new(BIN)
        .args(["timing", "--scope", "colour=red", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    assert!(
        !out.status.success() && String::from_utf8_lossy(&out.stderr).contains("colour is not a factor"),
        "{out:?}"
    );
}

#[test]
fn evidence_over_an_empty_campaign_and_a_broken_cell_record_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let s = serve(&empty, &tmp.path().join("data"));
    let (code, e) = get(&s.addr, "/api/evidence");
    assert_eq!((code, e["n"].as_u64()), (200, Some(0)), "{e}");
    assert_eq!(get(&s.addr, "/api/evidence/export").0, 200);
    let (code, t) = get(&s.addr, "/api/timing");
    assert_eq!((code, t["run_sets"].as_array().map(Vec::len)), (200, Some(0)), "{t}");
    let (code, o) = get(&s.addr, "/api/overview");
    assert_eq!(
        (code, o["totals"]["run_sets"].as_u64(), o["progress"]["svg"].as_str()),
        (200, Some(0), Some("")),
        "{o}"
    );
    assert_eq!(get(&s.addr, "/api/reports").1, json!([]));
    assert_eq!(get(&s.addr, "/api/cohorts"), (200, json!({"presets": [], "problem": null})));
    let (code, r) = get(&s.addr, "/api/research");
    assert_eq!((code, r["repaired"].clone(), r["state"]["questions"].clone()), (200, json!([]), json!([])), "{r}");
    let (code, p) = get(&s.addr, "/api/publish/status");
    assert_eq!((code, p["current_run_sets"].clone(), p["changed"].as_bool()), (200, json!([]), Some(true)), "{p}");
    drop(s);
    // One run set with a good record and a torn one: the torn one is skipped.
    let root = campaign(tmp.path(), 0.0);
    let cells = root.join("runsets/rs1/cells");
    std::fs::create_dir_all(&cells).unwrap();
    let factors = json!({"condition": "base", "task": "t1", "phase": "warmup", "seed": 1, "repetition": 0});
    let id = runboard::console::spec::cell_id(&serde_json::from_value(factors.clone()).unwrap());
    std::fs::write(
        cells.join(format!("{id}.json")),
        json!({"schema_version": 1, "cell": id, "factors": factors, "status": "done", "attempts": 1,
               "ended_at": "2026-12-01T00:00:00Z"})
        .to_string(),
    )
    .unwrap();
    std::fs::write(cells.join("c-000000000000.json"), b"{\"schema_version\": 1, \"cell\": \"c-0").unwrap();
    let s = serve(&root, &tmp.path().join("data2"));
    let (code, e) = get(&s.addr, "/api/evidence");
    assert_eq!(code, 200, "{e}");
    assert_eq!((e["n"].as_u64(), e["overall"]["successes"].as_u64()), (Some(1), Some(1)), "{e}");
    // Asked again after a record changed, the evidence follows (it is kept
    // between asks only while nothing changed).
    let mut rec: Value = serde_json::from_slice(&std::fs::read(cells.join(format!("{id}.json"))).unwrap()).unwrap();
    rec["status"] = json!("failed");
    rec["exit_code"] = json!(2);
    std::fs::write(cells.join(format!("{id}.json.tmp")), rec.to_string()).unwrap();
    std::fs::rename(cells.join(format!("{id}.json.tmp")), cells.join(format!("{id}.json"))).unwrap();
    let (_, e) = get(&s.addr, "/api/evidence");
    assert_eq!((e["n"].as_u64(), e["overall"]["successes"].as_u64()), (Some(1), Some(0)), "{e}");
    let (_, x) = get(&s.addr, "/api/evidence/export");
    assert_eq!(
        x["rows"][0][x["columns"].as_array().unwrap().iter().position(|c| c == "passed").unwrap()],
        false,
        "{x}"
    );
    let (code, t) = get(&s.addr, "/api/timing");
    assert_eq!(code, 200, "{t}");
    assert_eq!(t["cells"].as_array().map(Vec::len), Some(1), "the torn record is skipped: {t}");
    assert_eq!(t["cells"][0]["why_not"], json!(["not complete: it failed"]));
    // The overview and the report name the unreadable record.
    let (code, o) = get(&s.addr, "/api/overview");
    assert_eq!(code, 200, "{o}");
    let unreadable: Vec<&Value> =
        o["attention"].as_array().unwrap().iter().filter(|a| a["kind"] == "unreadable").collect();
    assert!(unreadable.len() == 1 && unreadable[0]["href"] == "/reports/rs1", "{o}");
    let (code, r) = get(&s.addr, "/api/reports/rs1");
    assert_eq!((code, r["problems"].as_array().map(Vec::len)), (200, Some(1)), "{r}");
}

#[test]
fn publish_runs_the_campaigns_command_one_at_a_time_within_its_limit_and_says_what_changed() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.0);
    let base = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    // Not set up: refused, saying what to set.
    let (code, r) = post(&s.addr, "/api/publish", json!({}));
    assert_eq!((code, r["kind"].as_str()), (422, Some("refused")), "{r}");
    assert!(r["error"].as_str().unwrap().contains("[publish] command"), "{r}");
    // A real command, given the export's files and hash in its environment.
    std::fs::write(
        root.join("campaign.toml"),
        format!(
            "{base}\n[publish]\ncommand = [\"sh\", \"-c\", \"echo pushing $RUNBOARD_CONTENT_HASH; head -n 1 \\\"$RUNBOARD_EXPORT_CSV\\\"; echo to stderr >&2; sleep 1\"]\ntimeout_s = 20\n"
        ),
    )
    .unwrap();
    let (code, st) = get(&s.addr, "/api/publish/status");
    assert_eq!(code, 200, "{st}");
    assert_eq!((st["words"].as_str(), st["changed"].as_bool()), (Some("Nothing has been published yet."), Some(true)));
    let hash = st["current_hash"].as_str().unwrap().to_owned();
    let (code, started) = post(&s.addr, "/api/publish", json!({}));
    assert_eq!(code, 202, "{started}");
    assert!(started["started_at"].is_string());
    let (code, busy) = post(&s.addr, "/api/publish", json!({}));
    assert_eq!((code, busy["kind"].as_str()), (409, Some("busy")), "one push at a time: {busy}");
    let (_, st) = get(&s.addr, "/api/publish/status");
    assert!(
        st["running"]["started_at"].is_string() && st["words"].as_str().unwrap().starts_with("A push is running"),
        "{st}"
    );
    wait_for("the push to end", Duration::from_secs(20), || get(&s.addr, "/api/publish/status").1["running"].is_null());
    let (_, st) = get(&s.addr, "/api/publish/status");
    let last = &st["last"];
    assert_eq!((last["exit_code"].as_i64(), last["timed_out"].as_bool()), (Some(0), Some(false)), "{st}");
    assert_eq!(
        last["output"].as_str().unwrap(),
        format!("pushing {hash}\n# format: runboard evidence export\nto stderr\n"),
        "stdout and stderr, as written"
    );
    assert_eq!(st["published"], st["last"]);
    assert_eq!((st["changed"].as_bool(), last["content_hash"].as_str()), (Some(false), Some(hash.as_str())));
    assert!(st["words"].as_str().unwrap().ends_with("nothing changed since."), "{st}");
    assert!(
        root.join(".runboard/publish/evidence.json").is_file() && root.join(".runboard/publish/evidence.csv").is_file()
    );

    // Past its time limit: killed, said so; what is published stays.
    std::fs::write(
        root.join("campaign.toml"),
        format!("{base}\n[publish]\ncommand = [\"sh\", \"-c\", \"echo slow; sleep 30\"]\ntimeout_s = 1\n"),
    )
    .unwrap();
    let t0 = std::time::Instant::now();
    assert_eq!(post(&s.addr, "/api/publish", json!({})).0, 202);
    wait_for("the slow push to be killed", Duration::from_secs(15), || {
        get(&s.addr, "/api/publish/status").1["running"].is_null()
    });
    assert!(t0.elapsed() < Duration::from_secs(10), "killed at its limit, not at its end");
    let (_, st) = get(&s.addr, "/api/publish/status");
    assert_eq!(
        (st["last"]["timed_out"].as_bool(), st["last"]["output"].as_str()),
        (Some(true), Some("slow\n")),
        "{st}"
    );
    assert_eq!(st["published"]["content_hash"].as_str(), Some(hash.as_str()));

    // The CLI: the status in words; a failing push exits 1 with its output.
    let out = std::process::Command::new(BIN).args(["publish", "--status", "--root"]).arg(&root).output().unwrap();
    assert!(out.status.success() && String::from_utf8_lossy(&out.stdout).starts_with("Published "), "{out:?}");
    std::fs::write(
        root.join("campaign.toml"),
        format!("{base}\n[publish]\ncommand = [\"sh\", \"-c\", \"echo refused by the remote; exit 3\"]\n"),
    )
    .unwrap();
    let out = std::process::Command::new(BIN).args(["publish", "--root"]).arg(&root).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code() == Some(1) && err.contains("failed with exit 3") && err.contains("refused by the remote"),
        "{out:?}"
    );
    // A bad [publish] is a refused campaign, with the reason.
    std::fs::write(root.join("campaign.toml"), format!("{base}\n[publish]\ncommand = []\ntimeout_s = 0\n")).unwrap();
    let (code, bad) = get(&s.addr, "/api/publish/status");
    assert_eq!(code, 422, "{bad}");
    assert!(bad.to_string().contains("publish.command must name a program"), "{bad}");
}

#[test]
fn cohort_presets_are_saved_renamed_deleted_and_compared_and_the_research_state_links_them() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.1); // 100 tokens in 0.1 s: a plausible timing
                                          // Treat's cells fail (exit 1); base's pass.
    let cfg = std::fs::read_to_string(root.join("campaign.toml"))
        .unwrap()
        .replace("\"sh\", \"-c\", \"sleep", "\"sh\", \"-c\", \"test {condition} = base || exit 1; sleep");
    std::fs::write(root.join("campaign.toml"), cfg).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "co", "max_cells": 4, "endpoint": "gpu-a"}));
    assert_eq!(post(&s.addr, "/api/control/start", json!({"path": path})).0, 200);
    wait_for("the batch to end", Duration::from_secs(60), || live_state(&s.addr).0 == "idle");

    let (code, v) = get(&s.addr, "/api/cohorts");
    assert_eq!((code, v), (200, json!({"presets": [], "problem": null})));
    // Bad input: every reason, nothing written.
    let (code, bad) = post(&s.addr, "/api/cohorts", json!({"name": "a,b", "scope": "colour=red"}));
    assert_eq!((code, bad["kind"].as_str()), (422, Some("refused")), "{bad}");
    assert_eq!(bad["reasons"].as_array().unwrap().len(), 2, "{bad}");
    assert!(!root.join("runsets/cohort_presets.json").exists());
    for (name, scope) in [("base", "condition=base"), ("treat", "condition=treat")] {
        let (code, v) = post(&s.addr, "/api/cohorts", json!({"name": name, "scope": scope, "note": "by condition"}));
        assert_eq!(code, 200, "{v}");
    }
    let (code, v) = post(&s.addr, "/api/cohorts/rename", json!({"from": "treat", "to": "treated"}));
    assert_eq!((code, v["presets"][1]["name"].as_str()), (200, Some("treated")), "{v}");
    let (code, bad) = post(&s.addr, "/api/cohorts/rename", json!({"from": "treated", "to": "base"}));
    assert_eq!((code, bad["kind"].as_str()), (422, Some("refused")), "{bad}");
    let (code, bad) = post(&s.addr, "/api/cohorts/delete", json!({"name": "nope"}));
    assert_eq!((code, bad["kind"].as_str()), (404, Some("not_found")), "{bad}");
    let file: Value =
        serde_json::from_slice(&std::fs::read(root.join("runsets/cohort_presets.json")).unwrap()).unwrap();
    assert_eq!(file["schema_version"], 1);
    assert_eq!(file["presets"].as_array().unwrap().len(), 2);

    // Side by side: every figure per cohort, the difference to the first.
    let (code, c) = get(&s.addr, "/api/cohorts/compare?names=base,treated");
    assert_eq!(code, 200, "{c}");
    let fig = |i: usize| (c["cohorts"][i]["passes"]["successes"].as_u64(), c["cohorts"][i]["passes"]["n"].as_u64());
    assert_eq!((fig(0), fig(1)), ((Some(2), Some(2)), (Some(0), Some(2))));
    assert_eq!(c["cohorts"][0]["validity"]["counted"], 2);
    assert_eq!(c["cohorts"][1]["validity"]["not_counted"], 2);
    assert_eq!(c["cohorts"][1]["validity"]["reasons"], json!([["not complete", 2]]));
    // Every evidence figure per cohort: by the factor, per task and model, what did not pass.
    assert_eq!(
        c["cohorts"][1]["evidence"]["not_passed_by_reason"],
        json!([{"reason": "exit 1", "cells": 2, "failed": 2}])
    );
    assert_eq!(c["cohorts"][0]["evidence"]["by_task"][0]["passes"]["n"], 2);
    assert_eq!(c["cohorts"][0]["evidence"]["charts"]["rates"]["svg"], "");
    let (_, by_seed) = get(&s.addr, "/api/cohorts/compare?names=base,treated&by=seed");
    assert_eq!(by_seed["cohorts"][0]["evidence"]["by"], "seed");
    assert_eq!(get(&s.addr, "/api/cohorts/compare?names=base&by=colour").0, 422);
    assert!(c["cohorts"][0]["timing"]["median_s"].as_f64().is_some());
    assert_eq!(
        (c["differences"][0]["name"].as_str(), c["differences"][0]["difference"].as_f64()),
        (Some("treated"), Some(-1.0))
    );
    assert!(c["charts"]["rates"]["svg"].as_str().unwrap().contains("treated (n=2)"));
    let (code, bad) = get(&s.addr, "/api/cohorts/compare?names=base,ghost");
    assert_eq!((code, bad["kind"].as_str()), (422, Some("bad_query")), "{bad}");

    // A damaged presets file: read says why, edits are refused, the file kept.
    std::fs::write(root.join("runsets/cohort_presets.json"), b"{\"schema_version\": 1, \"pre").unwrap();
    let (code, v) = get(&s.addr, "/api/cohorts");
    assert!(code == 200 && v["problem"].as_str().unwrap().contains("cohort_presets.json"), "{v}");
    let (code, bad) = post(&s.addr, "/api/cohorts", json!({"name": "x", "scope": ""}));
    assert_eq!((code, bad["kind"].as_str()), (422, Some("unreadable")), "{bad}");
    assert_eq!(std::fs::read(root.join("runsets/cohort_presets.json")).unwrap(), b"{\"schema_version\": 1, \"pre");
    std::fs::write(root.join("runsets/cohort_presets.json"), file.to_string()).unwrap();

    // The research state: missing is the default; saved whole and checked;
    // linked cohorts show their pass rate; damaged loads repaired.
    let (code, r) = get(&s.addr, "/api/research");
    assert_eq!((code, r["state"]["questions"].as_array().map(Vec::len)), (200, Some(0)), "{r}");
    let state = json!({"schema_version": 1, "questions": [{"id": "q1", "text": "Does the treatment help?",
        "hypotheses": [{"id": "h1", "text": "treated passes more", "status": "refuted", "cohorts": ["treated", "base"]}]}],
        "decisions": [], "settings": {"alpha": 0.05}});
    let (code, r) = post(&s.addr, "/api/research", state.clone());
    assert_eq!(code, 200, "{r}");
    let linked = &r["summary"]["questions"][0]["hypotheses"][0]["cohorts"];
    assert_eq!(
        (linked[0][0].as_str(), linked[0][1]["n"].as_u64(), linked[0][1]["successes"].as_u64()),
        (Some("treated"), Some(2), Some(0))
    );
    assert_eq!(r["summary"]["hypotheses_by_status"], json!({"refuted": 1}));
    let mut bad_state = state.clone();
    bad_state["questions"][0]["hypotheses"][0]["cohorts"] = json!(["ghost"]);
    bad_state["questions"][0]["text"] = json!("");
    let (code, bad) = post(&s.addr, "/api/research", bad_state);
    assert_eq!((code, bad["reasons"].as_array().map(Vec::len)), (422, Some(2)), "{bad}");
    let (code, r) = post(&s.addr, "/api/research/settings", json!({"alpha": null, "seed": 7}));
    assert_eq!((code, r["state"]["settings"].clone()), (200, json!({"seed": 7})), "{r}");
    let (code, r) = post(&s.addr, "/api/research/decisions", json!({"text": "drop the treatment", "question": "q1"}));
    assert_eq!((code, r["summary"]["latest_decisions"][0]["text"].as_str()), (200, Some("drop the treatment")), "{r}");
    let (code, bad) = post(&s.addr, "/api/research/decisions", json!({"text": "x", "question": "q9"}));
    assert_eq!(code, 422, "{bad}");
    let saved: Value = serde_json::from_slice(&std::fs::read(root.join("research/state.json")).unwrap()).unwrap();
    assert_eq!((saved["decisions"].as_array().unwrap().len(), saved["updated_at"].is_string()), (1, true));
    std::fs::write(root.join("research/state.json"), b"[\"not an object\"]").unwrap();
    let (code, r) = get(&s.addr, "/api/research");
    assert_eq!((code, r["repaired"].as_array().map(Vec::len)), (200, Some(1)), "{r}");
}

/// The sample view reads real Inspect logs of both formats (written by
/// Inspect itself: `tests/fixtures/inspect-logs/README.md`) from the cells'
/// folders, matches two cells' samples by id and epoch, and names the flips;
/// a log cut short lists what it holds and says so; every bad query is 422,
/// every missing thing 404, in words.
#[test]
fn the_sample_view_reads_both_inspect_log_formats_and_names_the_flips() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.1);
    common::generate::write_run_set(&root, "rs-s", 0..3, "completed", None);
    let cell = |i: usize| common::generate::cell_record(i, "done")["cell"].as_str().unwrap().to_owned();
    let (hasty, careful, cut) = (cell(0), cell(1), cell(2));
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/inspect-logs");
    let json_log = "2026-12-06T18-01-57-00-00_arithmetic_hasty.json";
    let eval_log = "2026-12-06T18-07-19-00-00_arithmetic_careful.eval";
    let place = |cell: &str, name: &str, bytes: &[u8]| {
        let dir = root.join("runsets/rs-s/out").join(cell).join("inspect");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join(name), bytes).unwrap();
    };
    let json_bytes = std::fs::read(fixtures.join(json_log)).unwrap();
    place(&hasty, json_log, &json_bytes);
    place(&careful, eval_log, &std::fs::read(fixtures.join(eval_log)).unwrap());
    // Cut in the middle of the fourth sample.
    let fourth = (0..4).fold(0, |at, _| at + 1 + String::from_utf8_lossy(&json_bytes[at..]).find("\"epoch\"").unwrap());
    place(&cut, json_log, &json_bytes[..fourth + 200]);
    let s = serve(&root, &tmp.path().join("data"));

    let (code, h) = get(&s.addr, &format!("/api/samples/rs-s/{hasty}"));
    assert_eq!(code, 200, "{h}");
    assert_eq!(
        (h["format"].as_str(), h["total"].as_u64(), h["scored"].as_u64(), h["passed"].as_u64()),
        (Some("json"), Some(6), Some(6), Some(2)),
        "{h}"
    );
    assert_eq!(h["log"], format!("runsets/rs-s/out/{hasty}/inspect/{json_log}"));
    let first = &h["samples"][0];
    assert_eq!(
        (first["id"].as_str(), first["epoch"].as_u64(), first["passed"].as_bool()),
        (Some("1"), Some(1), Some(false)),
        "{first}"
    );
    assert_eq!(
        (first["target"].as_str(), first["output"].as_str(), first["score"].as_str()),
        (Some("5"), Some("ANSWER: 6"), Some("I"))
    );
    assert!(first["input"].as_str().unwrap().starts_with("What is 2 + 3?"), "{first}");

    let (code, c) = get(&s.addr, &format!("/api/samples/rs-s/{careful}?limit=2&offset=1"));
    assert_eq!(code, 200, "{c}");
    assert_eq!(
        (c["format"].as_str(), c["total"].as_u64(), c["passed"].as_u64()),
        (Some("eval"), Some(6), Some(6)),
        "{c}"
    );
    let ids: Vec<_> = c["samples"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(ids, ["2", "3"], "a page from the offset, in id order");

    // The flips: the four the hasty model missed and the careful one did not.
    let (code, f) = get(&s.addr, &format!("/api/samples/rs-s/{hasty}?against=rs-s/{careful}&flipped=1"));
    assert_eq!(code, 200, "{f}");
    let ids: Vec<_> = f["samples"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap().to_owned()).collect();
    assert_eq!(
        (ids, f["flipped"].as_u64()),
        (vec!["1".to_owned(), "2".into(), "5".into(), "6".into()], Some(4)),
        "{f}"
    );
    assert_eq!(f["against_passed"], json!([true, true, true, true]));
    let (_, all) = get(&s.addr, &format!("/api/samples/rs-s/{hasty}?against=rs-s/{careful}"));
    assert_eq!((all["total"].as_u64(), all["flipped"].as_u64()), (Some(6), Some(4)), "without the filter: all six");

    let (code, k) = get(&s.addr, &format!("/api/samples/rs-s/{cut}"));
    assert_eq!(code, 200, "{k}");
    assert_eq!(k["total"], 3, "the three whole samples before the cut: {k}");
    assert!(k["problems"][0].as_str().unwrap().contains("the samples before it are listed"), "{k}");

    for (q, code, words) in [
        (format!("/api/samples/rs-s/{hasty}?limit=0"), 422, "limit 0: 1 to 1,000 samples"),
        (format!("/api/samples/rs-s/{hasty}?flipped=1"), 422, "flipped needs against=<run set>/<cell>"),
        (format!("/api/samples/rs-s/{hasty}?against=nope"), 422, "against \"nope\": <run set>/<cell>"),
        (format!("/api/samples/rs-s/{hasty}?flipped=maybe&against=rs-s/{careful}"), 422, "flipped \"maybe\": 1 or 0"),
        ("/api/samples/rs-s/no-such-cell".to_owned(), 404, "run set \"rs-s\" has no cell \"no-such-cell\""),
        ("/api/samples/nope/x".to_owned(), 404, "no run set \"nope\" under runsets/"),
    ] {
        let (got, v) = get(&s.addr, &q);
        assert_eq!((got, v["error"].as_str()), (code, Some(words)), "{q}: {v}");
    }
    let none = cell(0);
    std::fs::remove_dir_all(root.join("runsets/rs-s/out").join(&none)).unwrap();
    let (code, v) = get(&s.addr, &format!("/api/samples/rs-s/{none}"));
    assert_eq!(code, 404, "{v}");
    assert!(v["error"].as_str().unwrap().contains("keeps no samples: no Inspect log in runsets/rs-s/out/"), "{v}");
}
