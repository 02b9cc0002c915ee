//! One table of cases run against every launcher backend, each the real
//! thing: the local supervisor; a real systemd user manager (in a private
//! mount namespace and cgroup, `scripts/fixtures/systemd-up.sh`), driven over
//! D-Bus; a real single-node Slurm with accounting
//! (`scripts/fixtures/slurm-up.sh`). A daemon that cannot start fails the
//! test — it is never skipped.
//!
//! The cases, in order, on one campaign: launch → running; the server killed
//! with SIGKILL and started again finds the unit at its first answer; the
//! backend cannot be asked (the manager or controller stopped with SIGSTOP;
//! for local, its unit record damaged) → `unknown` with the reason, and the
//! batch untouched; pause → `stopped_resumable`; resume → running; stop and
//! abort → `aborted`, nothing left running; a driver that refuses its batch
//! at the doctor → `launch_failed`, with the reason on the Live page; every
//! unit and job cleaned up. And each batch's cells reach the gateway its
//! driver runs inside the unit or job: a call of each cell to its
//! `{endpoint_url}` is answered by the stand-in model and counted.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::served::*;
use serde_json::{json, Value};

/// The Slurm fixture's ports are fixed: one at a time in this binary.
static SLURM_ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A daemon fixture started by its script, ended (by the PIDs it recorded)
/// when dropped.
struct Fixture {
    dir: PathBuf,
    down: PathBuf,
    vars: Vec<(String, String)>,
}

impl Fixture {
    fn up(name: &str, dir: &Path) -> Self {
        let scripts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/fixtures");
        let out = Command::new(scripts.join(format!("{name}-up.sh"))).arg(dir).output().unwrap();
        // Made before the check: a fixture that half started is ended too.
        let mut fixture = Self { dir: dir.to_owned(), down: scripts.join(format!("{name}-down.sh")), vars: Vec::new() };
        assert!(
            out.status.success(),
            "the {name} fixture did not start ({}): {}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        fixture.vars = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|l| l.split_once('=').map(|(k, v)| (k.to_owned(), v.to_owned())))
            .collect();
        fixture
    }

    fn var(&self, k: &str) -> String {
        self.vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()).unwrap_or_else(|| panic!("{k} not given"))
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        let out = Command::new(&self.down).arg(&self.dir).output();
        if let Ok(o) = out {
            if !o.status.success() {
                eprintln!("{}: {}", self.down.display(), String::from_utf8_lossy(&o.stderr));
            }
        }
    }
}

fn signal(pid: &str, sig: &str) {
    assert!(Command::new("kill").args([sig, pid]).status().unwrap().success(), "kill {sig} {pid}");
}

/// Makes the backend blind (`true`) or sighted again, given the root and unit.
type Blind = Box<dyn Fn(&Path, &str, bool)>;
/// What is left of the test's units in the backend.
type Leftovers = Box<dyn Fn(&Path) -> Vec<String>>;

/// How a backend is made blind (its state cannot be read) and sighted again,
/// and what is left of the test's units in it.
struct Backend {
    kind: &'static str,
    /// `[launcher]` lines added to the campaign.
    config: String,
    env: Vec<(String, String)>,
    blind: Blind,
    leftovers: Leftovers,
    /// Whether a stop ends even what left the batch's process group (each
    /// cell starts a `setsid sleep`): systemd's cgroup catches it.
    ends_escapees: bool,
}

fn table(b: Backend) {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 4.0);
    // The endpoint a real model server (the stand-in), each cell's first
    // step a call to it at its {endpoint_url}: the gateway of its batch.
    let model = common::standin::stand_in(&["--models", "local-m"]);
    std::fs::write(
        root.join("call.sh"),
        "curl -s -m 20 -X POST \"$RUNBOARD_ENDPOINT_URL/chat/completions\" -H 'content-type: application/json' \\\n  \
         -d '{\"model\": \"local-m\", \"messages\": [{\"role\": \"user\", \"content\": \"What is 2 + 3?\"}]}' \\\n  \
         -o \"$RUNBOARD_CELL_DIR/answer.json\"\n",
    )
    .unwrap();
    let mut cfg = std::fs::read_to_string(root.join("campaign.toml")).unwrap() + &b.config;
    cfg = cfg.replace("http://127.0.0.1:9/v1", &model.url).replacen(
        "[\"sh\", \"-c\", \"",
        "[\"sh\", \"-c\", \"sh call.sh; ",
        1,
    );
    assert!(cfg.contains("sh call.sh; sleep"), "{cfg}");
    let escaped = root.join("escaped.pids");
    if b.ends_escapees {
        // Not a child of the cell's process group any more: only the unit's
        // cgroup still holds it. (No job control in `sh -c`: `$!` is the sleep.)
        let start = format!("setsid sleep 600 & echo $! >> {}; sh call.sh; sleep", escaped.display());
        cfg = cfg.replacen("sh call.sh; sleep", &start, 1);
        assert!(cfg.contains("setsid"), "{cfg}");
    }
    std::fs::write(root.join("campaign.toml"), &cfg).unwrap();
    let data = tmp.path().join("data");
    let s = serve_env(&root, &data, &b.env);
    let kind = b.kind;

    // Launch: the backend named in the unit, the batch running.
    let path = draft(&s.addr, json!({"label": "steer", "max_cells": 4, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{kind}: {l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    let unit = l["unit"].as_str().unwrap().to_owned();
    wait_for("running", Duration::from_secs(40), || live_state(&s.addr).0 == "running");
    let (_, v) = live_state(&s.addr);
    assert_eq!(v["unit"]["backend"], kind, "{v}");
    assert_eq!(v["run_set"], run_set.as_str());
    // The running cell reached its batch's gateway inside the unit or job,
    // which answered it from the endpoint and counted the call.
    let out = root.join("runsets").join(&run_set).join("out");
    wait_for("a cell's call counted by its gateway", Duration::from_secs(30), || {
        std::fs::read_dir(&out).into_iter().flatten().flatten().any(|c| {
            let answered = std::fs::read_to_string(c.path().join("answer.json")).unwrap_or_default();
            let counted = std::fs::read_to_string(c.path().join("progress.jsonl")).unwrap_or_default();
            answered.contains("ANSWER: 5") && counted.contains("\"via\":\"gateway\"")
        })
    });

    // The server killed mid-batch and started again: found at once.
    drop(s);
    let s = serve_env(&root, &data, &b.env);
    let (state, v) = live_state(&s.addr);
    assert_eq!(state, "running", "{kind}: the first answer after a restart finds the batch: {v}");
    assert_eq!(v["unit"]["unit"], unit.as_str());

    // The backend cannot be asked: unknown, with the reason, and untouched.
    (b.blind)(&root, &unit, true);
    wait_for("unknown", Duration::from_secs(20), || live_state(&s.addr).0 == "unknown");
    let (_, v) = live_state(&s.addr);
    let reason = v["state"]["reason"].as_str().unwrap_or("").to_owned();
    assert!(!reason.is_empty(), "{kind}: unknown says why: {v}");
    assert!(v["words"].as_str().unwrap().contains(&reason), "{kind}: {v}");
    assert_eq!(v["resumable"], false);
    (b.blind)(&root, &unit, false);
    wait_for("running again", Duration::from_secs(20), || live_state(&s.addr).0 == "running");
    let rec: Value =
        serde_json::from_slice(&std::fs::read(root.join(format!(".runboard/units/{unit}.json"))).unwrap()).unwrap();
    assert!(rec["ended_at"].is_null(), "{kind}: the batch was not touched while its state was unknown: {rec}");

    // Pause → stopped, resumable; resume → running again.
    let (code, r) = post(&s.addr, "/api/control/pause", json!({}));
    assert_eq!(code, 200, "{kind}: {r}");
    assert_eq!(r["marker"], "stopped_before_completion");
    let (state, v) = live_state(&s.addr);
    assert_eq!(state, "stopped_resumable", "{kind}: {v}");
    let (code, r) = post(&s.addr, "/api/control/resume", json!({"run_set": run_set}));
    assert_eq!(code, 200, "{kind}: {r}");
    assert_eq!(r["unit"], format!("{unit}.r2"));
    wait_for("running after resume", Duration::from_secs(40), || live_state(&s.addr).0 == "running");
    if b.ends_escapees {
        // The resumed cell has started its escapee before it is stopped.
        wait_for("the resumed cell's escapee", Duration::from_secs(20), || {
            std::fs::read_to_string(&escaped).is_ok_and(|p| p.lines().count() >= 2)
        });
    }

    // Stop and abort: terminal; nothing of the batch runs.
    let (code, r) = post(&s.addr, "/api/control/stop", json!({}));
    assert_eq!(code, 200, "{kind}: {r}");
    assert_eq!(r["marker"], "aborted_by_operator");
    let (state, v) = live_state(&s.addr);
    assert_eq!(state, "aborted", "{kind}: {v}");
    assert!((b.leftovers)(&root).is_empty(), "{kind}: left after stop: {:?}", (b.leftovers)(&root));
    if b.ends_escapees {
        let pids = std::fs::read_to_string(&escaped).unwrap();
        assert!(pids.lines().count() >= 2, "{kind}: each run's cells started an escapee: {pids}");
        for pid in pids.lines().filter_map(|l| l.trim().parse::<u64>().ok()) {
            assert!(
                !Path::new(&format!("/proc/{pid}")).exists() || is_zombie(pid),
                "{kind}: process {pid}, which left its process group, outlived the stop"
            );
        }
    }

    // A driver that refuses its batch at the doctor: launch_failed, and why,
    // from the backend (its journal, its job's output, its log) — on the page.
    let cfg = cfg.replace("[\"sh\", \"-c\",", "[\"no-such-harness-9\", \"-c\",");
    std::fs::write(root.join("campaign.toml"), &cfg).unwrap();
    let path = draft(&s.addr, json!({"label": "doomed", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path, "skip_preflight": true}));
    assert_eq!(code, 200, "{kind}: {l}");
    wait_for("launch_failed", Duration::from_secs(40), || live_state(&s.addr).0 == "launch_failed");
    let (_, v) = live_state(&s.addr);
    let f = &v["state"]["failure"];
    assert_eq!(f["exit_status"], 2, "{kind}: {f}");
    assert_eq!(f["refusal"], true, "{kind}: {f}");
    assert!(f["reason"].as_str().unwrap_or("").contains("no-such-harness-9"), "{kind}: {f}");
    let (code, page) = get_text(&s.addr, "/live");
    assert_eq!(code, 200);
    assert!(page.contains("The batch was refused before it started."), "{kind}: the Live page says what happened");
    assert!(page.contains("no-such-harness-9"), "{kind}: the Live page says why");
    // The unit's own log says it too, read from where the backend keeps it
    // (a file, the journal, the job's output), though no run set folder was made.
    let (rs, unit) = (l["run_set"].as_str().unwrap(), l["unit"].as_str().unwrap());
    let (code, logs) = get(&s.addr, &format!("/api/logs/{rs}"));
    assert_eq!(code, 200, "{kind}: {logs}");
    assert!(logs["logs"].as_array().unwrap().iter().any(|e| e["name"] == format!("unit:{unit}")), "{kind}: {logs}");
    let (code, chunk) = get(&s.addr, &format!("/api/logs/{rs}/unit:{unit}"));
    assert_eq!(code, 200, "{kind}: {chunk}");
    assert!(chunk["text"].as_str().unwrap_or("").contains("no-such-harness-9"), "{kind}: {chunk}");
    assert!(!chunk["next"].as_str().unwrap_or("").is_empty(), "{kind}: a position to read on from: {chunk}");

    // Stop clears what is left (a failed systemd unit is reset).
    assert_eq!(post(&s.addr, "/api/control/stop", json!({})).0, 200);
    assert!((b.leftovers)(&root).is_empty(), "{kind}: left at the end: {:?}", (b.leftovers)(&root));
}

#[test]
fn the_local_launcher_passes_the_backend_table() {
    let units = |root: &Path| root.join(".runboard/units");
    table(Backend {
        kind: "local",
        config: String::new(),
        // The local supervisor ends the driver, whose teardown ends its
        // process groups: a process that left them is out of its reach.
        ends_escapees: false,
        env: Vec::new(),
        // The local launcher's state is its unit record: damaged (replaced
        // whole, as a bad write would), its state cannot be read.
        blind: Box::new(move |root, unit, on| {
            let rec = units(root).join(format!("{unit}.json"));
            let kept = units(root).join(format!("{unit}.json.kept"));
            let tmp = units(root).join("tmp.damaged");
            if on {
                std::fs::copy(&rec, &kept).unwrap();
                std::fs::write(&tmp, b"{\"schema_version\": 1, \"unit\": ").unwrap();
                std::fs::rename(&tmp, &rec).unwrap();
            } else {
                std::fs::rename(&kept, &rec).unwrap();
            }
        }),
        leftovers: Box::new(move |root| {
            let mut left = Vec::new();
            for e in std::fs::read_dir(units(root)).unwrap().flatten() {
                if e.path().extension().is_some_and(|x| x == "json") {
                    let rec: Value = serde_json::from_slice(&std::fs::read(e.path()).unwrap()).unwrap();
                    for key in ["pid", "driver_pid"] {
                        if let Some(pid) = rec[key].as_u64() {
                            if Path::new(&format!("/proc/{pid}")).exists() && !is_zombie(pid) {
                                left.push(format!("{} {key} {pid}", rec["unit"]));
                            }
                        }
                    }
                }
            }
            left
        }),
    });
}

#[test]
fn the_systemd_launcher_passes_the_backend_table() {
    let tmp = tempfile::tempdir().unwrap();
    let fx = Fixture::up("systemd", &tmp.path().join("sd"));
    let env: Vec<(String, String)> =
        ["DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"].iter().map(|k| ((*k).to_owned(), fx.var(k))).collect();
    let manager = fx.var("MANAGER_PID");
    let list_env = env.clone();
    table(Backend {
        kind: "systemd",
        ends_escapees: true,
        config: format!(
            "kind = \"systemd\"\nquery_timeout_s = 1\n[launcher.systemd]\njournal_dir = \"{}\"\n",
            fx.var("JOURNAL_DIR")
        ),
        env,
        // A user manager that does not answer (stopped): its units run on.
        blind: Box::new(move |_, _, on| signal(&manager, if on { "-STOP" } else { "-CONT" })),
        // What the manager still has loaded of the test's units.
        leftovers: Box::new(move |_| {
            let out = Command::new("systemctl")
                .args(["--user", "list-units", "--all", "--plain", "--no-legend", "rb-*"])
                .envs(list_env.iter().map(|(k, v)| (k, v)))
                .output()
                .unwrap();
            assert!(out.status.success(), "systemctl list-units: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).filter(|l| !l.trim().is_empty()).collect()
        }),
    });
    drop(fx);
}

#[test]
fn the_slurm_launcher_passes_the_backend_table() {
    let tmp = tempfile::tempdir().unwrap();
    let _one = SLURM_ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let fx = Fixture::up("slurm", &tmp.path().join("slurm"));
    let env = vec![("SLURM_CONF".to_owned(), fx.var("SLURM_CONF"))];
    let ctld = fx.var("SLURMCTLD_PID");
    let conf = fx.var("SLURM_CONF");
    table(Backend {
        kind: "slurm",
        // proctrack/linuxproc follows the job's processes by parentage, and
        // `scancel` signals them all (with proctrack/cgroup: by cgroup).
        ends_escapees: true,
        config: "kind = \"slurm\"\nquery_timeout_s = 1\n[launcher.slurm]\npartition = \"debug\"\ntime_limit = \"10\"\ncpus = 1\nmemory = \"100M\"\n".into(),
        env,
        // A controller that does not answer (stopped): its jobs run on.
        blind: Box::new(move |_, _, on| signal(&ctld, if on { "-STOP" } else { "-CONT" })),
        // The test's jobs still queued or running.
        leftovers: Box::new(move |_| {
            let out = Command::new("squeue").args(["-h", "-o", "%i %j %T"]).env("SLURM_CONF", &conf).output().unwrap();
            assert!(out.status.success(), "squeue: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).lines().map(str::to_owned).filter(|l| !l.trim().is_empty()).collect()
        }),
    });
    drop(fx);
}

/// What only Slurm has: a job Slurm refuses at submission (422 with Slurm's
/// reason, nothing left behind), and a job that waits in the queue — shown as
/// `starting` with Slurm's pending reason until it runs.
#[test]
fn slurm_refusals_and_pending_jobs_are_shown_as_slurm_says() {
    let tmp = tempfile::tempdir().unwrap();
    let _one = SLURM_ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let fx = Fixture::up("slurm", &tmp.path().join("slurm"));
    let env = vec![("SLURM_CONF".to_owned(), fx.var("SLURM_CONF"))];
    let root = campaign(tmp.path(), 3.0);
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    let base = std::fs::read_to_string(root.join("campaign.toml")).unwrap()
        + "kind = \"slurm\"\nquery_timeout_s = 2\n[launcher.slurm]\npartition = \"debug\"\n";
    // More memory than the node has: sbatch refuses the job.
    std::fs::write(root.join("campaign.toml"), base.clone() + "memory = \"900000M\"\n").unwrap();
    let s = serve_env(&root, &tmp.path().join("data"), &env);
    let path = draft(&s.addr, json!({"label": "big", "max_cells": 2, "endpoint": "gpu-a"}));
    let (code, e) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 422, "{e}");
    let reason = e["reasons"][0].as_str().unwrap();
    assert!(reason.starts_with("Slurm refused the job: sbatch: "), "{reason}");
    assert_eq!(live_state(&s.addr).0, "idle", "a refused launch is not a launched batch");
    let units: Vec<_> =
        std::fs::read_dir(root.join(".runboard/units")).map(|d| d.flatten().collect()).unwrap_or_default();
    assert!(units.is_empty(), "a refused launch leaves no unit: {units:?}");

    // Someone else's job holds every CPU of the node (as on a busy
    // cluster): our batch waits in the queue behind it.
    std::fs::write(root.join("campaign.toml"), base + &format!("cpus = {cpus}\n")).unwrap();
    let slurm = |args: &[&str]| {
        let out = Command::new(args[0]).args(&args[1..]).envs(env.iter().map(|(k, v)| (k, v))).output().unwrap();
        assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    let out_file = tmp.path().join("blocker.out");
    let blocker = slurm(&[
        "sbatch",
        "--parsable",
        "--partition=debug",
        &format!("--cpus-per-task={cpus}"),
        &format!("--output={}", out_file.display()),
        "--wrap=sleep 120",
    ]);
    // Cancelled however the test ends: the test made it.
    struct Cancel(String, Vec<(String, String)>);
    impl Drop for Cancel {
        fn drop(&mut self) {
            let _ = Command::new("scancel").arg(&self.0).envs(self.1.iter().map(|(k, v)| (k, v))).status();
        }
    }
    let _cancel = Cancel(blocker.clone(), env.clone());
    wait_for("the other job running", Duration::from_secs(30), || {
        slurm(&["squeue", "-h", "-j", &blocker, "-o", "%T"]) == "RUNNING"
    });
    let queued = draft(&s.addr, json!({"label": "queued", "max_cells": 2, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": queued}));
    assert_eq!(code, 200, "{l}");
    let mut seen = Value::Null;
    // Right after sbatch a job can be pending with no reason yet (Slurm
    // assigns one at its next scheduling pass): wait for the reason.
    let pending = || {
        let (_, v) = live_state(&s.addr);
        let ok = v["unit"]["unit"] == l["unit"]
            && v["state"]["state"] == "starting"
            && v["words"]
                .as_str()
                .is_some_and(|w| w.contains("Slurm: PENDING (Resources)") || w.contains("Slurm: PENDING (Priority)"));
        (ok, v)
    };
    let shown = wait_until(Duration::from_secs(30), || {
        let (shown, v) = pending();
        seen = v;
        shown
    });
    assert!(shown, "the queued batch is not shown as starting with Slurm's reason; the live view said: {seen}");
    // It runs once the other job ended.
    slurm(&["scancel", &blocker]);
    wait_for("the queued batch running", Duration::from_secs(60), || {
        let (st, v) = live_state(&s.addr);
        st == "running" && v["run_set"] == l["run_set"]
    });
    assert_eq!(post(&s.addr, "/api/control/stop", json!({})).0, 200);
    let out = Command::new("squeue").args(["-h"]).envs(env.iter().map(|(k, v)| (k, v))).output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).trim().is_empty(), "{}", String::from_utf8_lossy(&out.stdout));
}
