//! `runboard drive` with real processes: a Python manager serving /health, `sh`
//! rooms and players, children that ignore SIGTERM and fork grandchildren.
//! Every test marks its children's environment and checks that no process
//! carrying the mark survives.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common;
use common::{wait_for, wait_until};

const BIN: &str = env!("CARGO_BIN_EXE_runboard");
const MANAGER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/manager.py");

struct Campaign {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    marker: String,
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A campaign with `extra` appended to its campaign.toml and a spec of `cells` tasks.
fn campaign(extra: &str, cells: &[&str]) -> Campaign {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("c");
    std::fs::create_dir_all(root.join("specs")).unwrap();
    std::fs::write(root.join("campaign.toml"), format!("schema_version = 1\nname = \"t\"\n{extra}")).unwrap();
    let cells: Vec<Value> = cells.iter().map(|t| serde_json::json!({"factors": {"task": t}})).collect();
    let spec = serde_json::json!({"schema_version": 1, "label": "b1", "cells": cells});
    std::fs::write(root.join("specs/b1.json"), serde_json::to_vec(&spec).unwrap()).unwrap();
    let marker = format!("rbtest-{}-{}", std::process::id(), tmp.path().file_name().unwrap().to_string_lossy());
    Campaign { _tmp: tmp, root, marker }
}

fn cluster_toml(port: u16, health_timeout: f64, players: &str) -> String {
    format!(
        r#"[cluster]
grace_s = 1.0
[cluster.manager]
command = ["python3", "{MANAGER}", "{port}"]
health_url = "http://127.0.0.1:{port}/health"
submit_url = "http://127.0.0.1:{port}/cells"
health_interval_s = 0.1
health_timeout_s = {health_timeout}
[cluster.rooms]
name = "room"
command = ["sh", "-c", "echo room {{index}} on $DISPLAY; exec sleep 600"]
count = 2
start_delay_s = 0.2
displays = [":7", ":8"]
{players}
"#
    )
}

fn drive(c: &Campaign, args: &[&str], env: &[(&str, &str)]) -> Child {
    Command::new(BIN)
        .arg("drive")
        .arg(c.root.join("specs"))
        .args(args)
        .env("RUNBOARD_TEST_MARK", &c.marker)
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

struct Ended {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn finish(mut child: Child, started: Instant) -> Ended {
    let mut stdout = String::new();
    let mut stderr = String::new();
    child.stdout.take().unwrap().read_to_string(&mut stdout).unwrap();
    child.stderr.take().unwrap().read_to_string(&mut stderr).unwrap();
    let status = child.wait().unwrap();
    Ended { code: status.code(), stdout, stderr, took: started.elapsed() }
}

fn run(c: &Campaign, args: &[&str], env: &[(&str, &str)]) -> Ended {
    let started = Instant::now();
    finish(drive(c, args, env), started)
}

/// Processes (other than zombies) whose environment carries `marker`.
fn marked(marker: &str) -> Vec<u32> {
    server::system::signals::pids_with_env("RUNBOARD_TEST_MARK", marker)
}

/// A process's arguments joined by spaces ("" once it is gone).
fn cmdline(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    raw.split(|&b| b == 0).filter(|a| !a.is_empty()).map(String::from_utf8_lossy).collect::<Vec<_>>().join(" ")
}

/// The processes carrying `marker` that run `command` (arguments joined by spaces).
fn marked_running(marker: &str, command: &str) -> Vec<u32> {
    marked(marker).into_iter().filter(|pid| cmdline(*pid) == command).collect()
}

fn runset(c: &Campaign) -> PathBuf {
    let dir = c.root.join("runsets");
    let mut sets: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().flatten().map(|e| e.path()).collect();
    sets.sort();
    sets.pop().expect("a run set")
}

fn outcome(set: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(set.join("batch_outcome.json")).unwrap()).unwrap()
}

/// Each process's name, final status and exit code.
type Statuses = Vec<(String, String, Option<i64>)>;

/// Final status of each process, from the run set's events.
fn statuses(set: &Path) -> Statuses {
    std::fs::read_to_string(set.join("events.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|e| e["event"] == "process_end")
        .map(|e| {
            let d = &e["detail"];
            (d["name"].as_str().unwrap().to_owned(), d["status"].as_str().unwrap().to_owned(), d["exit_code"].as_i64())
        })
        .collect()
}

#[test]
fn a_healthy_cluster_runs_every_cell_and_tears_down_clean() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 20.0, ""), &["t1", "t2", "t3"]);
    let e = run(&c, &[], &[]);
    assert_eq!(e.code, Some(0), "{}\n{}", e.stdout, e.stderr);
    let set = runset(&c);
    let o = outcome(&set);
    assert_eq!(o["status"], "completed");
    assert_eq!((o["planned"].as_u64(), o["completed"].as_u64()), (Some(3), Some(3)));
    let st = statuses(&set);
    assert_eq!(st[0], ("manager".into(), "DONE".into(), Some(0)));
    assert!(st[1..].iter().all(|(n, s, _)| n.starts_with("room-") && s == "STOPPED"), "{st:?}");
    // rooms got their displays round-robin; each log holds its own stream
    assert_eq!(std::fs::read_to_string(set.join("logs/room-1.log")).unwrap().trim(), "room 1 on :8");
    assert!(e.stdout.contains("NAME") && e.stdout.contains("room-0"), "process table shown: {}", e.stdout);
    assert!(marked(&c.marker).is_empty());
}

#[test]
fn health_never_ready_tears_down_and_says_why() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 1.0, ""), &["t1"]);
    let e = run(&c, &[], &[("MANAGER_READY_AFTER", "999")]);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let o = outcome(&runset(&c));
    assert_eq!(o["status"], "failed");
    assert_eq!(o["reason"], format!("manager was not healthy at http://127.0.0.1:{port}/health within 1 s"));
    assert_eq!(statuses(&runset(&c)), [("manager".to_owned(), "STOPPED".to_owned(), Some(143))]);
    assert!(marked(&c.marker).is_empty());
}

#[test]
fn a_manager_dying_during_the_health_wait_is_noticed_at_once() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 60.0, ""), &["t1"]);
    let e = run(&c, &[], &[("MANAGER_READY_AFTER", "999"), ("MANAGER_DIE_AFTER", "0.5")]);
    assert_eq!(e.code, Some(1));
    assert!(e.took < Duration::from_secs(10), "noticed after {:?}, not at the 60 s timeout", e.took);
    let o = outcome(&runset(&c));
    assert_eq!(o["reason"], format!("manager exited with code 5 while waiting for http://127.0.0.1:{port}/health"));
    assert!(marked(&c.marker).is_empty());
}

#[test]
fn a_player_exiting_3_terminates_the_cluster_with_every_status_right() {
    let port = free_port();
    let players = r#"[[cluster.players]]
name = "player"
command = ["sh", "-c", "sleep 0.5; exit 3"]
start_delay_s = 0.1
"#;
    let c = campaign(&cluster_toml(port, 20.0, players), &["t1"]);
    let e = run(&c, &[], &[("MANAGER_STAY", "1"), ("MANAGER_WORK_S", "30")]);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let set = runset(&c);
    assert_eq!(outcome(&set)["reason"], "player exited with code 3");
    let st = statuses(&set);
    let want = [
        ("manager", "STOPPED", Some(143)),
        ("room-0", "STOPPED", Some(143)),
        ("room-1", "STOPPED", Some(143)),
        ("player", "FAILED", Some(3)),
    ];
    let got: Vec<(&str, &str, Option<i64>)> = st.iter().map(|(n, s, c)| (n.as_str(), s.as_str(), *c)).collect();
    assert_eq!(got, want);
    assert!(marked(&c.marker).is_empty());
}

/// A cluster whose player `stubborn` runs `command`, beside a player that
/// fails after a second (so the cluster is torn down), driven with a 1 s
/// grace: the teardown, the process statuses recorded, and what survived.
fn stubborn_teardown(command: &str) -> (Ended, Statuses, Vec<u32>) {
    let players = format!(
        r#"[[cluster.players]]
name = "stubborn"
command = ["sh", "-c", {command:?}]
start_delay_s = 0.1
[[cluster.players]]
name = "crasher"
command = ["sh", "-c", "sleep 1; exit 4"]
start_delay_s = 0.1
"#
    );
    let c = campaign(&cluster_toml(free_port(), 20.0, &players), &["t1"]);
    let e = run(&c, &["--grace", "1"], &[("MANAGER_STAY", "1"), ("MANAGER_WORK_S", "30")]);
    let st = statuses(&runset(&c));
    (e, st, marked(&c.marker))
}

#[test]
fn a_child_ignoring_sigterm_and_its_grandchild_are_killed_after_the_grace() {
    // The player ignores TERM and starts a grandchild that ignores it too.
    let (e, st, left) = stubborn_teardown("trap '' TERM; sh -c \"trap '' TERM; sleep 600\" & sleep 600");
    assert_eq!(e.code, Some(1));
    let stubborn = st.iter().find(|s| s.0 == "stubborn").unwrap();
    assert_eq!(stubborn.1, "KILLED", "{st:?}");
    assert!(e.took < Duration::from_secs(15));
    assert!(left.is_empty(), "orphans survived: {left:?}");
}

#[test]
fn a_stubborn_player_whose_grandchild_escaped_is_recorded_killed_not_running() {
    // The player ignores TERM; its grandchild ignores it too and leaves the
    // player's process group (setsid), so the teardown's sweep of marked
    // processes kills — and reaps — the player itself.
    let (e, st, left) = stubborn_teardown("trap '' TERM; setsid sh -c \"trap '' TERM; sleep 600\" & sleep 600");
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let stubborn = st.iter().find(|s| s.0 == "stubborn").unwrap();
    assert_eq!((stubborn.1.as_str(), stubborn.2), ("KILLED", Some(137)), "{st:?}");
    assert!(st.iter().all(|s| s.1 != "RUNNING"), "nothing is left RUNNING after a teardown: {st:?}");
    assert!(left.is_empty(), "orphans survived: {left:?}");
}

#[test]
fn sigterm_to_the_driver_tears_down_and_records_stopped() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 20.0, ""), &["t1"]);
    let started = Instant::now();
    let child = drive(&c, &[], &[("MANAGER_STAY", "1"), ("MANAGER_WORK_S", "60")]);
    // Wait until the cells are submitted, then signal the driver (only the PID we started).
    let submitted = || {
        let Some(set) = std::fs::read_dir(c.root.join("runsets")).ok().and_then(|mut d| d.next()) else { return false };
        let events = std::fs::read_to_string(set.unwrap().path().join("events.jsonl")).unwrap_or_default();
        events.contains("\"submitted\"")
    };
    wait_for("the cells submitted", Duration::from_secs(20), submitted);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let e = finish(child, started);
    assert_eq!(e.code, Some(143), "{}", e.stderr);
    let o = outcome(&runset(&c));
    assert_eq!(o["status"], "stopped");
    assert_eq!(o["reason"], "stopped by a signal; resumable");
    assert!(marked(&c.marker).is_empty());
}

fn exec_toml(flag: &Path) -> String {
    format!(
        r#"[runner]
command = ["sh", "-c", "echo working on $1; if [ \"$1\" != b ]; then echo '{{{{\"tokens\": 120, \"score\": 0.5}}}}' > $RUNBOARD_CELL_DIR/result.json; elif [ ! -e \"$FLAG\" ]; then echo '{{{{\"tokens\": 999, \"reason\": \"first attempt broke\"}}}}' > $RUNBOARD_CELL_DIR/result.json; exit 1; fi", "_", "{{task}}"]
parallel = 2
env = {{ FLAG = "{}" }}
"#,
        flag.display()
    )
}

#[test]
fn resume_runs_only_unfinished_cells_and_nothing_left_starts_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let flag = tmp.path().join("flag");
    let c = campaign(&exec_toml(&flag), &["a", "b", "c"]);
    let e = run(&c, &["-i"], &[]);
    assert_eq!(e.code, Some(1), "one cell failed: {}", e.stderr);
    assert!(e.stdout.contains("] working on a"), "interactive prefixes lines: {}", e.stdout);
    let set = runset(&c);
    let o = outcome(&set);
    assert_eq!(o["status"], "completed_with_failures");
    assert_eq!((o["completed"].as_u64(), o["failed"].as_u64()), (Some(2), Some(1)));
    let cells = |set: &Path| -> Vec<Value> {
        let mut v: Vec<Value> = std::fs::read_dir(set.join("cells"))
            .unwrap()
            .flatten()
            .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
            .collect();
        v.sort_by_key(|r| r["factors"]["task"].as_str().unwrap().to_owned());
        v
    };
    let first = cells(&set);
    assert_eq!(first[0]["tokens"], 120);
    assert_eq!(first[0]["score"], 0.5);
    assert_eq!(first[1]["status"], "failed");
    assert_eq!(first[1]["exit_code"], 1);
    assert_eq!((first[1]["tokens"].as_u64(), first[1]["reason"].as_str()), (Some(999), Some("first attempt broke")));
    let first_start = outcome(&set)["started_at"].clone();

    std::fs::write(&flag, "").unwrap();
    let e = run(&c, &["--resume-into", set.to_str().unwrap()], &[]);
    assert_eq!(e.code, Some(0), "{}", e.stderr);
    let again = cells(&set);
    let attempts: Vec<u64> = again.iter().map(|r| r["attempts"].as_u64().unwrap()).collect();
    assert_eq!(attempts, [1, 2, 1], "only the failed cell ran again");
    assert!(again.iter().all(|r| r["status"] == "done"));
    // Issue 40 (item 4): the resumed cell reported nothing this time, and
    // nothing its failed attempt reported stays in its record.
    assert!(again[1].get("tokens").is_none_or(Value::is_null) && again[1].get("reason").is_none(), "{}", again[1]);
    let o = outcome(&set);
    assert_eq!(o["attempted"], 1);
    // Issue 40 (item 7): a resume says it ran the cells left, beside the
    // whole batch's count, and keeps when the batch first started.
    assert_eq!(o["reason"], "ran 1 cell left by an earlier attempt; 3 of the 3 planned cells are done", "{o}");
    assert_eq!(o["first_started_at"], first_start, "{o}");
    assert_ne!(o["started_at"], first_start, "{o}");

    let logs_before = std::fs::read_dir(set.join("logs")).unwrap().count();
    let e = run(&c, &["--resume-into", set.to_str().unwrap()], &[]);
    assert_eq!(e.code, Some(0));
    assert_eq!(outcome(&set)["status"], "nothing_to_do");
    assert!(e.stdout.contains("nothing was started"), "{}", e.stdout);
    assert_eq!(std::fs::read_dir(set.join("logs")).unwrap().count(), logs_before);
    assert!(marked(&c.marker).is_empty());
}

#[test]
fn bad_input_is_refused_before_anything_starts() {
    let tmp = tempfile::tempdir().unwrap();
    let flag = tmp.path().join("flag");
    let c = campaign(&exec_toml(&flag), &["a"]);
    // A malformed spec names its file and field.
    std::fs::write(
        c.root.join("specs/z-bad.json"),
        r#"{"schema_version": 1, "label": "b1", "cells": [{"factors": []}]}"#,
    )
    .unwrap();
    let e = run(&c, &[], &[]);
    assert_eq!(e.code, Some(2));
    assert!(e.stderr.contains("z-bad.json: cells[0].factors: must be an object, not an array"), "{}", e.stderr);
    assert!(!c.root.join("runsets").exists(), "nothing written");
    std::fs::remove_file(c.root.join("specs/z-bad.json")).unwrap();

    // An empty spec folder stops before the doctor.
    let empty = c.root.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let out = Command::new(BIN).arg("drive").arg(&empty).arg("--root").arg(&c.root).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no *.json spec files under") && !err.contains("doctor"), "{err}");

    // A blocking finding stops the run even with --force.
    std::fs::write(
        c.root.join("campaign.toml"),
        "schema_version = 1\nname = \"t\"\n[runner]\ncommand = [\"no-such-program-xyz\", \"{task}\"]\n",
    )
    .unwrap();
    let e = run(&c, &["--force"], &[]);
    assert_eq!(e.code, Some(2));
    assert!(e.stderr.contains("doctor: BLOCKING: command not found: no-such-program-xyz"), "{}", e.stderr);

    // A missing resume target.
    let e = run(&c, &["--resume-into", "/no/such/runset"], &[]);
    assert_eq!(e.code, Some(2));
    assert!(e.stderr.contains("--resume-into /no/such/runset: no such run set"), "{}", e.stderr);
}

#[test]
fn a_failed_submission_terminates_the_cluster() {
    let port = free_port();
    let nobody = free_port();
    let toml = cluster_toml(port, 20.0, "").replace(&format!("{port}/cells"), &format!("{nobody}/cells"));
    let c = campaign(&toml, &["t1"]);
    let e = run(&c, &[], &[("MANAGER_STAY", "1")]);
    assert_eq!(e.code, Some(1), "{}", e.stderr);
    let set = runset(&c);
    let reason = outcome(&set)["reason"].as_str().unwrap().to_owned();
    assert!(reason.starts_with(&format!("submitting 1 cells to http://127.0.0.1:{nobody}/cells failed: ")), "{reason}");
    let st = statuses(&set);
    assert!(st.iter().all(|(_, s, _)| s == "STOPPED"), "{st:?}");
    assert!(marked(&c.marker).is_empty());
}

#[test]
fn a_manager_exiting_0_without_finishing_its_cells_fails_the_batch() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 20.0, ""), &["t1", "t2"]);
    let e = run(&c, &[], &[("MANAGER_SKIP_CELLS", "1")]);
    assert_eq!(e.code, Some(1), "{}\n{}", e.stdout, e.stderr);
    let o = outcome(&runset(&c));
    assert_eq!(o["status"], "failed");
    assert_eq!((o["completed"].as_u64(), o["attempted"].as_u64()), (Some(0), Some(2)));
    let reason = o["reason"].as_str().unwrap();
    assert!(reason.contains("but 2 of 2 cells are not finished"), "{reason}");
    assert!(marked(&c.marker).is_empty());
}

#[test]
fn a_manager_answering_chunked_is_understood() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 20.0, ""), &["t1"]);
    let e = run(&c, &[], &[("MANAGER_CHUNKED", "1")]);
    assert_eq!(e.code, Some(0), "{}\n{}", e.stdout, e.stderr);
    assert_eq!(outcome(&runset(&c))["status"], "completed");
}

/// A player that leaves its process group with `setsid` and double-forks: only
/// the batch's environment mark can find its grandchild.
const ESCAPING_PLAYER: &str = r#"[[cluster.players]]
name = "escaper"
command = ["sh", "-c", "setsid sh -c 'sleep 600 & exit 0' & exec sleep 600"]
start_delay_s = 0.1
"#;

#[test]
fn a_descendant_escaping_with_setsid_is_torn_down_with_the_rest() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 20.0, ESCAPING_PLAYER), &["t1"]);
    let e = run(&c, &["--grace", "1"], &[("MANAGER_WORK_S", "1.5")]);
    assert_eq!(e.code, Some(0), "{}\n{}", e.stdout, e.stderr);
    assert!(marked(&c.marker).is_empty(), "the escaped grandchild survived: {:?}", marked(&c.marker));
}

#[test]
fn sigkill_to_the_driver_leaves_nothing_behind() {
    let port = free_port();
    let c = campaign(&cluster_toml(port, 20.0, ESCAPING_PLAYER), &["t1"]);
    let child = drive(&c, &["--grace", "1"], &[("MANAGER_STAY", "1"), ("MANAGER_WORK_S", "60")]);
    // Wait until every process is up and settled: the two rooms, the player and
    // its escaped grandchild each end as `sleep 600`. Counting marked processes
    // instead would race: the player's intermediate shells are marked too while
    // they fork.
    if !wait_until(Duration::from_secs(20), || marked_running(&c.marker, "sleep 600").len() == 4) {
        let _ =
            nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM);
        let e = finish(child, Instant::now());
        panic!("the cluster did not come up: {:?}\n{}\n{}", marked(&c.marker), e.stdout, e.stderr);
    }
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGKILL).unwrap();
    let e = finish(child, Instant::now());
    assert_eq!(e.code, None, "killed by a signal");
    let swept = wait_until(Duration::from_secs(10), || marked(&c.marker).is_empty());
    assert!(swept, "survivors of a killed driver: {:?}", marked(&c.marker));
    // The sentinel notes its sweep once it is over.
    let log = || std::fs::read_to_string(runset(&c).join("execution_log.md")).unwrap();
    wait_until(Duration::from_secs(10), || log().contains("the driver died"));
    assert!(log().contains("the driver died without tearing down; its sentinel ended"), "{}", log());
    let o = outcome(&runset(&c));
    assert_eq!(o["status"], "running", "the stale outcome a reader recognises by its driver");
    assert!(o["driver"]["pid"].as_u64().is_some());
}

#[test]
fn fifos_are_refused_by_name_never_opened() {
    let tmp = tempfile::tempdir().unwrap();
    let c = campaign(&exec_toml(&tmp.path().join("flag")), &["a"]);
    let fifo = |p: &Path| nix::unistd::mkfifo(p, nix::sys::stat::Mode::S_IRWXU).unwrap();
    // A FIFO given as the spec.
    fifo(&c.root.join("pipe.json"));
    let started = Instant::now();
    let out = Command::new(BIN).arg("drive").arg(c.root.join("pipe.json")).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("not a regular file (a FIFO)") && !err.contains("does not exist"), "{err}");
    // A FIFO inside a spec folder.
    fifo(&c.root.join("specs/zz.json"));
    let e = run(&c, &[], &[]);
    assert_eq!(e.code, Some(2));
    assert!(e.stderr.contains("zz.json: not a regular file (a FIFO)"), "{}", e.stderr);
    std::fs::remove_file(c.root.join("specs/zz.json")).unwrap();
    // A campaign.toml that is a FIFO.
    std::fs::remove_file(c.root.join("campaign.toml")).unwrap();
    fifo(&c.root.join("campaign.toml"));
    let e = run(&c, &["--root", c.root.to_str().unwrap()], &[]);
    assert_eq!(e.code, Some(2));
    assert!(e.stderr.contains("campaign.toml: not a regular file (a FIFO)"), "{}", e.stderr);
    assert!(started.elapsed() < Duration::from_secs(20), "no hang: {:?}", started.elapsed());
}

#[test]
fn a_stopped_cell_records_128_plus_the_signal_and_attempted_counts_started_cells() {
    let c = campaign("[runner]\ncommand = [\"sleep\", \"600\"]\nparallel = 1\ngrace_s = 5\n", &["a", "b", "c"]);
    let started = Instant::now();
    let child = drive(&c, &[], &[]);
    // Wait for the first cell (the driver and its sentinel carry the mark too).
    wait_for("the first cell", Duration::from_secs(20), || marked_running(&c.marker, "sleep 600").len() == 1);
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(child.id() as i32), nix::sys::signal::Signal::SIGTERM).unwrap();
    let e = finish(child, started);
    assert_eq!(e.code, Some(143), "{}", e.stderr);
    let set = runset(&c);
    let o = outcome(&set);
    assert_eq!((o["status"].as_str(), o["attempted"].as_u64()), (Some("stopped"), Some(1)));
    let recs: Vec<Value> = std::fs::read_dir(set.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap())
        .collect();
    let stopped: Vec<&Value> = recs.iter().filter(|r| r["status"] == "stopped").collect();
    assert_eq!(stopped.len(), 1, "{recs:?}");
    assert_eq!(stopped[0]["exit_code"], 143, "SIGTERM: 128 + 15");
    assert_eq!(recs.iter().filter(|r| r["status"] == "pending").count(), 2);
    assert!(marked(&c.marker).is_empty());
}

/// Each cell record of the run set, by its task.
fn cells_by_task(set: &Path) -> std::collections::BTreeMap<String, Value> {
    std::fs::read_dir(set.join("cells"))
        .unwrap()
        .flatten()
        .map(|e| serde_json::from_slice::<Value>(&std::fs::read(e.path()).unwrap()).unwrap())
        .map(|r| (r["factors"]["task"].as_str().unwrap().to_owned(), r))
        .collect()
}

/// A cell record's status and exit code.
fn status_and_exit(rec: &Value) -> (Option<&str>, Option<i64>) {
    (rec["status"].as_str(), rec["exit_code"].as_i64())
}

#[test]
fn a_cell_a_manager_signalled_just_before_the_driver_was_stopped_not_failed() {
    // systemd's StopUnit and Slurm's scancel signal every process of the
    // batch: a cell can die of that SIGTERM before the driver's own arrives.
    let c = campaign("[runner]\ncommand = [\"sleep\", \"600\"]\nparallel = 1\ngrace_s = 5\n", &["a", "b"]);
    let started = Instant::now();
    let child = drive(&c, &[], &[]);
    let driver = child.id();
    // The cell: the one marked process running `sleep 600` (the driver and
    // its sentinel carry the mark too).
    let cells = || marked_running(&c.marker, "sleep 600");
    wait_for("a cell started", Duration::from_secs(20), || cells().len() == 1);
    let cell = cells()[0];
    let term = |pid: u32| {
        nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::Signal::SIGTERM).unwrap()
    };
    term(cell);
    std::thread::sleep(Duration::from_millis(300));
    term(driver);
    let e = finish(child, started);
    assert_eq!(e.code, Some(143), "{}", e.stderr);
    let set = runset(&c);
    assert_eq!(outcome(&set)["status"], "stopped");
    let recs = cells_by_task(&set);
    assert_eq!(status_and_exit(&recs["a"]), (Some("stopped"), Some(143)), "{recs:?}");
    assert_eq!(recs["b"]["status"], "pending", "{recs:?}");
}

#[test]
fn a_cell_that_dies_of_sigterm_with_no_stop_following_is_failed() {
    let c = campaign(
        "[runner]\ncommand = [\"sh\", \"-c\", \"test {task} = b || kill -TERM $$\"]\nparallel = 1\ngrace_s = 5\n",
        &["a", "b"],
    );
    let e = run(&c, &[], &[]);
    let set = runset(&c);
    let recs = cells_by_task(&set);
    assert_eq!(status_and_exit(&recs["a"]), (Some("failed"), Some(143)), "{recs:?}");
    assert_eq!(recs["b"]["status"], "done", "{recs:?}");
    assert_ne!(outcome(&set)["status"], "stopped", "{}", e.stderr);
    // Its verdict waited for a stop that never came, and no longer.
    assert!(e.took < Duration::from_secs(10), "took {:?}", e.took);
}

#[test]
fn a_record_that_cannot_be_written_still_tears_down_the_running_cells() {
    // Cell a, when it runs, turns every other cell's record into a folder, so
    // writing the next cell's record fails right after that cell has started.
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("cell.sh");
    std::fs::write(
        &script,
        r#"if [ "$1" = a ]; then
  for f in "$RUNBOARD_RUNSET"/cells/*.json; do
    [ "$f" = "$RUNBOARD_RUNSET/cells/$RUNBOARD_CELL.json" ] || { rm -f "$f"; mkdir "$f"; }
  done
else
  exec sleep 600
fi
"#,
    )
    .unwrap();
    let toml = format!(
        "[runner]\ncommand = [\"sh\", {:?}, \"{{task}}\"]\nparallel = 1\ngrace_s = 1\n",
        script.display().to_string()
    );
    let c = campaign(&toml, &["a", "b"]);
    let e = run(&c, &[], &[]);
    assert_ne!(e.code, Some(0), "{}\n{}", e.stdout, e.stderr);
    assert!(e.took < Duration::from_secs(20), "{:?}", e.took);
    assert!(marked(&c.marker).is_empty(), "cell b was left running: {:?}", marked(&c.marker));
}

/// What `runboard init` writes runs as it is: the exec and cluster examples'
/// drafts drive to `completed` (the cluster's manager on a free port), each
/// cell's report recorded. (The Inspect example runs in `tests/inspect.rs`.)
#[test]
fn the_exec_and_cluster_examples_run_their_first_draft() {
    for example in ["exec", "cluster"] {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path().join(example);
        let init = Command::new(BIN).args(["init", root.to_str().unwrap(), "--example", example]).output().unwrap();
        assert!(init.status.success(), "{}", String::from_utf8_lossy(&init.stderr));
        if example == "cluster" {
            let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
            std::fs::write(root.join("campaign.toml"), toml.replace("9100", &free_port().to_string())).unwrap();
        }
        let check = Command::new(BIN).args(["check", "--root", root.to_str().unwrap()]).output().unwrap();
        let said = String::from_utf8_lossy(&check.stdout);
        assert!(check.status.success() && said.contains("0 blocking"), "{example}: {said}");
        let drive = Command::new(BIN)
            .args(["drive", "specs/drafts/first.json"])
            .current_dir(&root)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .output()
            .unwrap();
        assert!(drive.status.success(), "{example}: {}", String::from_utf8_lossy(&drive.stderr));
        let runset = std::fs::read_dir(root.join("runsets")).unwrap().flatten().find(|e| e.path().is_dir()).unwrap();
        let outcome: Value =
            serde_json::from_slice(&std::fs::read(runset.path().join("batch_outcome.json")).unwrap()).unwrap();
        assert_eq!(
            (outcome["status"].as_str(), outcome["completed"].as_u64()),
            (Some("completed"), Some(2)),
            "{example}: {outcome}"
        );
        for cell in std::fs::read_dir(runset.path().join("cells")).unwrap().flatten() {
            let rec: Value = serde_json::from_slice(&std::fs::read(cell.path()).unwrap()).unwrap();
            let seed = rec["factors"]["seed"].as_u64().unwrap();
            if example == "exec" {
                // cell.sh's report: 100 tokens a seed, and its own verdict:
                // even seeds pass.
                assert_eq!(rec["tokens"], seed * 100, "{rec}");
                assert_eq!(rec["passed"], seed.is_multiple_of(2), "{rec}");
            } else {
                assert_eq!(rec["tokens"], 100, "the manager's record: {rec}");
            }
        }
    }
    // A second init into a folder holding a campaign writes nothing and says why.
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("campaign.toml"), "mine").unwrap();
    let again = Command::new(BIN).args(["init", tmp.path().to_str().unwrap()]).output().unwrap();
    assert_eq!(again.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&again.stderr).contains("already holds campaign.toml: nothing written"));
    assert_eq!(std::fs::read_to_string(tmp.path().join("campaign.toml")).unwrap(), "mine");
}

/// A cell's stdout and stderr land in one log, in the order written, and a
/// log past `RUNBOARD_LOG_MAX_BYTES` is rotated to `.log.1`: at most two
/// files of at most the cap each, holding the newest output without a gap.
#[test]
fn a_cells_output_is_kept_in_order_and_rotated_at_the_cap() {
    let toml = r#"[runner]
command = ["sh", "-c", "i=0; while [ $i -lt 400 ]; do echo \"line $i out ........................................\"; echo \"line $i err\" >&2; i=$((i+1)); done"]
"#;
    let c = campaign(toml, &["a"]);
    let e = run(&c, &[], &[("RUNBOARD_LOG_MAX_BYTES", "8192")]);
    assert_eq!(e.code, Some(0), "{}", e.stderr);
    let logs = runset(&c).join("logs");
    let mut names: Vec<String> =
        std::fs::read_dir(&logs).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
    names.sort();
    let cell = names.iter().find(|n| n.starts_with("cell-") && n.ends_with(".log")).expect("the cell's log").clone();
    assert_eq!(names.iter().filter(|n| n.starts_with("cell-")).count(), 2, "the log and one rotated copy: {names:?}");
    let older = std::fs::read_to_string(logs.join(format!("{cell}.1"))).unwrap();
    let newer = std::fs::read_to_string(logs.join(&cell)).unwrap();
    for (what, text) in [("rotated", &older), ("current", &newer)] {
        assert!(text.len() as u64 <= 8192, "the {what} log is {} bytes, over the cap", text.len());
    }
    // Together they are the newest output, line after line with no gap, each
    // line's stdout before its stderr.
    let joined = format!("{older}{newer}");
    let lines: Vec<&str> = joined.lines().collect();
    let expected: Vec<String> = (0..400)
        .flat_map(|i| [format!("line {i} out ........................................"), format!("line {i} err")])
        .collect();
    let tail = &expected[expected.len() - lines.len() + 1..];
    assert_eq!(&lines[1..], tail, "the kept output is the newest, in order");
    assert!(expected[expected.len() - lines.len()].ends_with(lines[0]), "the first kept line is a whole or cut line");
    assert!(lines.len() > 100, "about 16 KiB of output kept: {} lines", lines.len());
}
