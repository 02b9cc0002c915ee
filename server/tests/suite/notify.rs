//! A word for every batch event, against a real `runboard serve`, real
//! batches (shell processes as cells), a real notification hook and a real
//! HTTP receiver on loopback: each launch, each end (completed, stopped,
//! aborted) and a launch failure is heard once by both, as one JSON object,
//! manual batches alike; a failing webhook is logged and shown and stops
//! nothing; without a server, the CLI says what it launched.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::served::*;
use common::wait_for;
use serde_json::{json, Value};

/// An HTTP receiver on loopback: keeps each POSTed JSON body and answers
/// with `status` (changeable while it runs).
struct Receiver {
    url: String,
    bodies: Arc<Mutex<Vec<Value>>>,
    status: Arc<AtomicU16>,
}

fn receiver() -> Receiver {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/hooks/runboard", listener.local_addr().unwrap());
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let status = Arc::new(AtomicU16::new(200));
    let (kept, answer) = (bodies.clone(), status.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(stream);
            let mut line = String::new();
            let mut length = 0usize;
            let mut request_line = String::new();
            reader.read_line(&mut request_line).unwrap_or_default();
            loop {
                line.clear();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut body = vec![0u8; length];
            if reader.read_exact(&mut body).is_ok() && request_line.starts_with("POST /hooks/runboard ") {
                if let Ok(v) = serde_json::from_slice(&body) {
                    kept.lock().unwrap().push(v);
                }
            }
            let code = answer.load(Ordering::Relaxed);
            let _ = reader
                .get_mut()
                .write_all(format!("HTTP/1.1 {code} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n").as_bytes());
        }
    });
    Receiver { url, bodies, status }
}

/// A campaign whose cells take `cell_s` seconds and pass, with the hook
/// appending each object to `heard` and the webhook at `url`.
fn campaign(tmp: &Path, cell_s: f64, heard: &Path, url: &str) -> PathBuf {
    let root = tmp.join("campaign");
    let f = server::demo::fixture::ConsoleFixture {
        name: "notify test".into(),
        command: vec![
            "sh".into(),
            "-c".into(),
            format!("sleep {cell_s}; printf '{{{{\"score\": 1}}}}' > {{out}}/result.json"),
        ],
        parallel: 1,
        models: "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\nprice_per_1k_tokens = 1.0\n".into(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    let extra = format!(
        "[budget]\npoll_s = 0.5\n[hooks]\nnotify = [\"sh\", \"-c\", \"cat >> {h}; echo >> {h}\"]\nwebhook = \"{url}\"\n",
        h = heard.display()
    );
    std::fs::write(root.join("campaign.toml"), format!("{toml}{extra}")).unwrap();
    root
}

fn heard_by_hook(heard: &Path) -> Vec<Value> {
    std::fs::read_to_string(heard)
        .unwrap_or_default()
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The `(event, outcome)` pairs said of `run_set`, in order.
fn said_of(objects: &[Value], run_set: &str) -> Vec<(String, String)> {
    objects
        .iter()
        .filter(|o| o["run_set"] == run_set)
        .map(|o| (o["event"].as_str().unwrap().to_owned(), o["outcome"].as_str().unwrap_or("").to_owned()))
        .collect()
}

fn pair(e: &str, o: &str) -> (String, String) {
    (e.to_owned(), o.to_owned())
}

fn launch(addr: &str, label: &str, cells: u32) -> String {
    let path = draft(addr, json!({"label": label, "max_cells": cells, "model": "paid-m"}));
    let (code, l) = post(addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    l["run_set"].as_str().unwrap().to_owned()
}

#[test]
fn every_batch_event_is_heard_once_by_the_hook_and_a_loopback_webhook() {
    let tmp = tempfile::tempdir().unwrap();
    let heard = tmp.path().join("heard.jsonl");
    let rx = receiver();
    let root = campaign(tmp.path(), 1.0, &heard, &rx.url);
    let s = serve(&root, &tmp.path().join("data"));
    let both = |run_set: &str, want: &[(String, String)]| {
        wait_for("the hook and the webhook to hear it", Duration::from_secs(30), || {
            said_of(&heard_by_hook(&heard), run_set) == want && said_of(&rx.bodies.lock().unwrap(), run_set) == want
        });
    };

    // A batch launched by hand runs to its end.
    let done = launch(&s.addr, "done", 1);
    both(&done, &[pair("batch_launched", ""), pair("batch_ended", "completed")]);
    let objects = heard_by_hook(&heard);
    let launched = objects.iter().find(|o| o["event"] == "batch_launched").unwrap();
    assert_eq!((launched["cells"].as_u64(), launched["model"].as_str()), (Some(1), Some("paid-m")), "{launched}");
    assert_eq!(launched["resumed"], false);
    assert!(launched["words"].as_str().unwrap().starts_with(&format!("{done} launched as unit ")), "{launched}");
    let ended = objects.iter().find(|o| o["event"] == "batch_ended").unwrap();
    assert_eq!(ended["cells"], json!({"planned": 1, "completed": 1, "failed": 0}), "{ended}");
    assert!(ended["at"].as_str().is_some_and(|a| a.ends_with('Z')), "{ended}");
    assert!(ended["words"].as_str().unwrap().contains("completed: 1 of 1 cell(s) completed"), "{ended}");

    // Paused while it runs: stopped (resumable); resumed: launched again, said so.
    let paused = launch(&s.addr, "paused", 3);
    wait_for("running", Duration::from_secs(20), || live_state(&s.addr).0 == "running");
    assert_eq!(post(&s.addr, "/api/control/pause", json!({"run_set": paused})).0, 200);
    both(&paused, &[pair("batch_launched", ""), pair("batch_ended", "stopped")]);
    let (code, r) = post(&s.addr, "/api/control/resume", json!({"run_set": paused}));
    assert_eq!(code, 200, "{r}");
    both(
        &paused,
        &[
            pair("batch_launched", ""),
            pair("batch_ended", "stopped"),
            pair("batch_launched", ""),
            pair("batch_ended", "completed"),
        ],
    );
    let resumed: Vec<Value> =
        heard_by_hook(&heard).into_iter().filter(|o| o["run_set"] == paused.as_str() && o["resumed"] == true).collect();
    assert_eq!(resumed.len(), 1, "the resume is said as one: {resumed:?}");

    // Stopped and aborted by the operator.
    let aborted = launch(&s.addr, "aborted", 3);
    wait_for("running", Duration::from_secs(20), || live_state(&s.addr).0 == "running");
    assert_eq!(post(&s.addr, "/api/control/stop", json!({"run_sets": [aborted]})).0, 200);
    both(&aborted, &[pair("batch_launched", ""), pair("batch_ended", "aborted")]);

    // A launch that fails: its unit dies before its batch begins; said why.
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), toml.replacen("[\"sh\", \"-c\",", "[\"no-such-harness-9\", \"-c\",", 1))
        .unwrap();
    let path = draft(&s.addr, json!({"label": "doomed", "max_cells": 1, "model": "paid-m"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path, "skip_preflight": true}));
    assert_eq!(code, 200, "{l}");
    let doomed = l["run_set"].as_str().unwrap().to_owned();
    let heard_it = common::wait_until(Duration::from_secs(30), || {
        said_of(&heard_by_hook(&heard), &doomed).contains(&pair("launch_failed", ""))
            && said_of(&rx.bodies.lock().unwrap(), &doomed).contains(&pair("launch_failed", ""))
    });
    assert!(heard_it, "the launch failure heard: {:?} {:?}", heard_by_hook(&heard), live_state(&s.addr).1["state"]);
    let failed = heard_by_hook(&heard).into_iter().find(|o| o["event"] == "launch_failed").unwrap();
    assert!(failed["why"].as_str().unwrap().contains("no-such-harness-9"), "{failed}");
    std::fs::write(root.join("campaign.toml"), &toml).unwrap();

    // Each object was heard once by each: nothing said twice.
    let hook_count = heard_by_hook(&heard).len();
    assert_eq!(hook_count, rx.bodies.lock().unwrap().len());
    std::thread::sleep(Duration::from_secs(2));
    assert_eq!(heard_by_hook(&heard).len(), hook_count, "nothing is said again");

    // The webhook fails (HTTP 500): logged and shown; the batch runs on and the hook still hears it.
    rx.status.store(500, Ordering::Relaxed);
    let unheard = launch(&s.addr, "unheard", 1);
    wait_for("ended, heard by the hook", Duration::from_secs(30), || {
        said_of(&heard_by_hook(&heard), &unheard) == [pair("batch_launched", ""), pair("batch_ended", "completed")]
    });
    wait_for("the failure shown on the Overview", Duration::from_secs(10), || {
        get(&s.addr, "/api/overview").1["attention"].as_array().is_some_and(|a| {
            a.iter().any(|x| {
                x["kind"] == "notify_failed" && x["words"].as_str().is_some_and(|w| w.contains("answered HTTP 500"))
            })
        })
    });
    let log = std::fs::read_to_string(root.join("auto/log.jsonl")).unwrap();
    assert!(log.contains("notify_failed") && log.contains("answered HTTP 500"), "{log}");
    drop(s);

    // No server: the CLI says the batch it launched, at once.
    rx.status.store(200, Ordering::Relaxed);
    let text = cli_ok(&root, &["launch", &path]);
    let cli_set = text.split_whitespace().nth(1).unwrap().to_owned();
    assert_eq!(said_of(&heard_by_hook(&heard), &cli_set), [pair("batch_launched", "")], "{text}");
    assert_eq!(said_of(&rx.bodies.lock().unwrap(), &cli_set), [pair("batch_launched", "")]);
    cli_ok(&root, &["stop", &cli_set]);
}

/// Runs `runboard <args> --root <root>`: its output, or its standard error.
fn cli(root: &Path, args: &[&str]) -> Result<String, String> {
    let out =
        std::process::Command::new(env!("CARGO_BIN_EXE_runboard")).args(args).arg("--root").arg(root).output().unwrap();
    match out.status.success() {
        true => Ok(String::from_utf8_lossy(&out.stdout).into_owned()),
        false => Err(String::from_utf8_lossy(&out.stderr).into_owned()),
    }
}

fn cli_ok(root: &Path, args: &[&str]) -> String {
    cli(root, args).unwrap_or_else(|e| panic!("runboard {args:?}: {e}"))
}

#[test]
fn a_webhook_off_loopback_is_refused_unless_its_host_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let root = campaign(tmp.path(), 0.1, &tmp.path().join("heard"), "http://hooks.example.org/x");
    let err = cli(&root, &["catalogue"]).expect_err("refused");
    assert!(err.contains("hooks.example.org is neither loopback nor listed in [hooks] webhook_hosts"), "{err}");
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(
        root.join("campaign.toml"),
        toml.replace("[hooks]\n", "[hooks]\nwebhook_hosts = [\"hooks.example.org\"]\n"),
    )
    .unwrap();
    cli_ok(&root, &["catalogue"]);
}
