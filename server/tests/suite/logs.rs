//! A cell's log, live, against a real `runboard serve` and a real batch
//! whose cell writes numbered lines fast enough to be rotated several times:
//! read on chunk by chunk (`GET /api/logs/{run_set}/{name}?after=`) and as
//! server-sent events, across the rotations and across a server restart,
//! nothing lost and nothing twice; the unit's own log listed beside it; bad
//! names, positions and run sets refused in words.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::served::*;
use common::wait_for;
use serde_json::{json, Value};

const LINES: u32 = 600;

/// A campaign whose one cell writes `line <i>` and padding, `LINES` times,
/// 10 ms apart, alternately to stdout and stderr.
fn chatty_campaign(tmp: &Path) -> PathBuf {
    let root = tmp.join("campaign");
    let script = format!(
        "i=0; while [ $i -lt {LINES} ]; do if [ $((i % 2)) = 0 ]; then echo \"line $i ..........................................................\"; \
         else echo \"line $i ..........................................................\" >&2; fi; i=$((i+1)); sleep 0.01; done; \
         printf '{{{{\"score\": 1}}}}' > {{out}}/result.json"
    );
    let f = server::demo::fixture::ConsoleFixture {
        name: "logs test".into(),
        command: vec!["sh".into(), "-c".into(), script],
        parallel: 1,
        models: String::new(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    root
}

/// The line numbers in `text`, in order.
fn numbers(text: &str) -> Vec<u32> {
    text.lines().filter_map(|l| l.strip_prefix("line ")?.split_whitespace().next()?.parse().ok()).collect()
}

/// Whether `n` is a run of consecutive numbers ending at the last line.
fn contiguous_to_the_end(n: &[u32]) -> Result<(), String> {
    for w in n.windows(2) {
        if w[1] != w[0] + 1 {
            return Err(format!("{} then {}", w[0], w[1]));
        }
    }
    match n.last() {
        Some(&last) if last == LINES - 1 => Ok(()),
        other => Err(format!("ends at {other:?}")),
    }
}

fn read(addr: &str, rs: &str, name: &str, after: Option<&str>) -> Value {
    let q = after.map(|a| format!("?after={a}")).unwrap_or_default();
    let (code, v) = get(addr, &format!("/api/logs/{rs}/{name}{q}"));
    assert_eq!(code, 200, "{v}");
    v
}

/// The server-sent events of a log stream for `for_s` seconds: each chunk.
fn stream(addr: &str, rs: &str, name: &str, for_s: f64) -> Vec<(String, Value)> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
    let auth = common::served::auth_line(addr);
    write!(s, "GET /api/logs/{rs}/{name}/stream HTTP/1.1\r\nHost: {addr}\r\n{auth}Accept: text/event-stream\r\n\r\n")
        .unwrap();
    let mut r = BufReader::new(s);
    let until = Instant::now() + Duration::from_secs_f64(for_s);
    let mut events = Vec::new();
    // One event's fields, dispatched at the blank line that ends it.
    let (mut id, mut event, mut data) = (String::new(), String::new(), String::new());
    let mut line = String::new();
    while Instant::now() < until {
        line.clear();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            break;
        }
        let l = line.trim_end();
        let field = |name: &str| l.strip_prefix(name).map(|v| v.strip_prefix(' ').unwrap_or(v).to_owned());
        if let Some(v) = field("id:") {
            id = v;
        } else if let Some(v) = field("event:") {
            event = v;
        } else if let Some(v) = field("data:") {
            data = v;
        } else if l.is_empty() && !data.is_empty() {
            assert_eq!(event, "chunk", "{data}");
            events.push((std::mem::take(&mut id), serde_json::from_str(&std::mem::take(&mut data)).unwrap()));
        }
        // (Anything else is the chunked transfer's size lines.)
    }
    events
}

#[test]
fn a_cells_log_is_read_on_across_rotations_streams_and_a_server_restart() {
    let tmp = tempfile::tempdir().unwrap();
    let root = chatty_campaign(tmp.path());
    let env = [("RUNBOARD_LOG_MAX_BYTES".to_owned(), "4096".to_owned())];
    let mut server = serve_env(&root, &tmp.path().join("data"), &env);
    let path = draft(&server.addr, json!({"label": "chat", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&server.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let rs = l["run_set"].as_str().unwrap().to_owned();

    // The cell's log appears in the list, with the unit's own beside it.
    let mut name = String::new();
    wait_for("the cell's log", Duration::from_secs(20), || {
        let (_, v) = get(&server.addr, &format!("/api/logs/{rs}"));
        let logs = v["logs"].as_array().cloned().unwrap_or_default();
        match logs.iter().find(|l| l["kind"] == "process" && l["name"].as_str().is_some_and(|n| n.starts_with("cell-")))
        {
            Some(l) => {
                name = l["name"].as_str().unwrap().to_owned();
                assert_eq!(l["source"], format!("runsets/{rs}/logs/{name}.log"));
                let unit = logs.iter().find(|l| l["kind"] == "unit").expect("the unit's log");
                assert!(unit["source"].as_str().unwrap().starts_with(".runboard/units/"), "{unit}");
                true
            }
            None => false,
        }
    });

    // As server-sent events, for a while: chunks of appended lines, in order.
    let streamed = std::thread::spawn({
        let (addr, rs, name) = (server.addr.clone(), rs.clone(), name.clone());
        move || stream(&addr, &rs, &name, 1.5)
    });

    // Read on, chunk by chunk; halfway, the server is restarted and the
    // reader goes on from the same position.
    let first = read(&server.addr, &rs, &name, None);
    let mut text = first["text"].as_str().unwrap().to_owned();
    let mut after = first["next"].as_str().unwrap().to_owned();
    let mut restarted = false;
    wait_for("the cell's last line, read on", Duration::from_secs(60), || {
        let c = read(&server.addr, &rs, &name, Some(&after));
        assert!(c["reset"].is_null(), "nothing is lost between reads 50 ms apart: {c}");
        text.push_str(c["text"].as_str().unwrap());
        after = c["next"].as_str().unwrap().to_owned();
        if !restarted && numbers(&text).last().is_some_and(|&n| n >= LINES / 2) {
            // The first server ends before the next starts: a restart.
            let _ = server.child.kill();
            let _ = server.child.wait();
            server = serve_env(&root, &tmp.path().join("data"), &env);
            restarted = true;
        }
        numbers(&text).last() == Some(&(LINES - 1))
    });
    assert!(restarted);
    let read_lines = numbers(&text);
    contiguous_to_the_end(&read_lines).unwrap_or_else(|e| panic!("the lines read on are not whole: {e}"));
    assert!(read_lines.len() > 300, "most of the output was read on: {} lines", read_lines.len());
    let logs = root.join("runsets").join(&rs).join("logs");
    assert!(logs.join(format!("{name}.log.1")).exists(), "the log was rotated");
    assert!(std::fs::metadata(logs.join(format!("{name}.log"))).unwrap().len() <= 4096);

    let events = streamed.join().unwrap();
    assert!(events.len() >= 2, "the stream sent chunks as they came: {}", events.len());
    let mut streamed_text = String::new();
    for (id, chunk) in &events {
        assert_eq!(id, chunk["next"].as_str().unwrap(), "each event's id is where it leaves the reader");
        streamed_text.push_str(chunk["text"].as_str().unwrap());
    }
    let n = numbers(&streamed_text);
    for w in n.windows(2) {
        assert_eq!(w[1], w[0] + 1, "streamed lines in order, none lost or twice");
    }
    assert!(n.len() >= 20, "about 1.5 s of lines streamed: {}", n.len());

    // Bad asks say why.
    let (code, v) = get(&server.addr, &format!("/api/logs/{rs}/..%2Fspec"));
    assert_eq!(code, 422, "{v}");
    assert!(v["error"].as_str().unwrap_or_default().contains("name"), "{v}");
    let (code, v) = get(&server.addr, &format!("/api/logs/{rs}/{name}?after=junk"));
    assert_eq!(code, 422, "{v}");
    assert!(v.to_string().contains("not a position"), "{v}");
    let (code, v) = get(&server.addr, "/api/logs/no-such-set");
    assert_eq!(code, 404, "{v}");
    let (code, v) = get(&server.addr, &format!("/api/logs/{rs}/unit:nope"));
    assert_eq!(code, 404, "{v}");
}

#[test]
fn the_command_line_lists_a_run_sets_logs_prints_a_tail_and_refuses_a_bad_name() {
    let tmp = tempfile::tempdir().unwrap();
    let root = chatty_campaign(tmp.path());
    let server = serve(&root, &tmp.path().join("data"));
    let path = draft(&server.addr, json!({"label": "cli", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&server.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let rs = l["run_set"].as_str().unwrap().to_owned();
    let cli = |args: &[&str]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_runboard"))
            .args(args)
            .arg("--root")
            .arg(&root)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let mut listed = String::new();
    wait_for("a cell's log listed", Duration::from_secs(20), || {
        listed = cli(&["logs", &rs]).1;
        listed.contains("cell-")
    });
    let name = listed.split_whitespace().find(|w| w.starts_with("cell-")).unwrap().to_owned();
    assert!(listed.contains("process") && listed.contains(" bytes"), "{listed}");
    assert!(listed.contains(&format!("read one: runboard logs {rs} NAME")), "{listed}");
    wait_for("its tail printed", Duration::from_secs(20), || numbers(&cli(&["logs", &rs, &name]).1).len() >= 3);
    let (code, tail, _) = cli(&["logs", &rs, &name]);
    assert_eq!(code, Some(0));
    let n = numbers(&tail);
    assert!(n.windows(2).all(|w| w[1] == w[0] + 1), "the tail's lines in order: {tail}");
    let (code, _, err) = cli(&["logs", &rs, "../spec"]);
    assert_eq!(code, Some(2), "a refusal: {err}");
    assert!(err.contains("name \"../spec\""), "{err}");
    let (code, _, err) = cli(&["logs", "no-such-set"]);
    assert_eq!(code, Some(2), "{err}");
    // Issue 40 (item 14): without a run set, the live batch's logs (as
    // status, pause and stop default to it); a name it has no log of is
    // refused with its logs named, never an empty answer.
    let (code, alone, err) = cli(&["logs"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(alone.contains(&name) && alone.contains(&format!("read one: runboard logs {rs} NAME")), "{alone}");
    let (code, tail, _) = cli(&["logs", "-", &name]);
    assert_eq!(code, Some(0));
    assert!(!numbers(&tail).is_empty(), "{tail}");
    let (code, out, err) = cli(&["logs", &rs, "nosuch"]);
    assert_eq!(code, Some(2), "{out}");
    assert!(
        err.contains(&format!("run set {rs} has no log \"nosuch\" (yet); its logs: ")) && err.contains(&name),
        "{err}"
    );
    assert_eq!(post(&server.addr, "/api/control/stop", json!({"run_sets": [rs]})).0, 200);
}

/// Issue 40 (items 13 and 14): console commands pointed at a folder that is
/// not a campaign say so and exit 2; `logs` with nothing launched says why.
#[test]
fn console_commands_on_a_folder_that_is_not_a_campaign_say_so() {
    let tmp = tempfile::tempdir().unwrap();
    let empty = tmp.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let run = |args: &[&str], root: &std::path::Path| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_runboard"))
            .args(args)
            .arg("--root")
            .arg(root)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    for args in [&["status"][..], &["propose"], &["check"], &["coverage"], &["logs"], &["draft", "--label", "x"]] {
        let (code, out, err) = run(args, &empty);
        assert_eq!(code, Some(2), "{args:?}: {out}{err}");
        assert!(out.is_empty(), "{args:?} printed nothing else: {out}");
        assert!(err.contains(&format!("no campaign.toml in {}", empty.display())), "{args:?}: {err}");
    }
    let root = chatty_campaign(tmp.path());
    let (code, _, err) = run(&["logs"], &root);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("nothing has been launched yet; name a run set"), "{err}");
}
