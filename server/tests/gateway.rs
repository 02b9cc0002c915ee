//! The batch gateway with real parts (issue 36): a real batch launched
//! through `runboard serve`, whose cell is a Python script using the
//! official `openai` SDK (the pinned one `scripts/setup.sh` installs in
//! `.tools/inspect/`) against the example's stand-in model server — a
//! whole answer and a stream that did not ask for usage — through nothing
//! but its `{endpoint_url}`. Every call is counted from the answer into the
//! cell's `progress.jsonl`; the client receives what it would without the
//! gateway; a path without the batch's secret is refused.

mod common;

use std::path::{Path, PathBuf};
use std::time::Duration;

use common::served::*;
use serde_json::{json, Value};

/// A campaign whose cells run `script` with the pinned harness Python, given
/// `{endpoint_url}`, `{out}` and `args`, `parallel` at a time, its catalogue
/// with `catalogue` (more `[[models]]`/`[[endpoints]]` tables) added.
fn sdk_campaign(tmp: &Path, script: &Path, args: &[&str], parallel: u32, catalogue: String) -> PathBuf {
    let root = tmp.join("campaign");
    let mut command = vec![
        common::standin::harness_python().display().to_string(),
        script.display().to_string(),
        "{endpoint_url}".into(),
        "{out}".into(),
    ];
    command.extend(args.iter().map(|a| a.to_string()));
    let f = server::demo::fixture::ConsoleFixture {
        name: "gateway test".into(),
        command,
        parallel,
        models: catalogue,
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    root
}

/// A paid model (`prices`: its price keys) and an endpoint serving it at
/// `url` (`extra`: more of the endpoint's keys), as catalogue tables.
fn paid_route(model: &str, prices: &str, endpoint: &str, url: &str, backend: &str, extra: &str) -> String {
    format!(
        "[[models]]\nname = \"{model}\"\nkind = \"paid\"\n{prices}\n\
         [[endpoints]]\nname = \"{endpoint}\"\nurl = \"{url}\"\nbackend = \"{backend}\"\nmodels = [\"{model}\"]\n\
         request_preset = \"default\"\n{extra}"
    )
}

/// Drafts `body` (`POST /api/drafts`), launches it and waits for its batch
/// to end; its run set and the live view then.
fn run_to_end(addr: &str, body: Value, within: Duration) -> (String, Value) {
    let path = draft(addr, body);
    let (code, l) = post(addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    wait_for("the batch to end", within, || {
        let (state, v) = live_state(addr);
        state == "idle" && v["run_set"] == run_set.as_str()
    });
    (run_set.clone(), live_state(addr).1)
}

/// The cell: the openai SDK, whole and streamed, through `{endpoint_url}`;
/// the same raw streamed request direct and through the gateway, compared;
/// a path without the secret. What it saw goes to `{out}/client.json`.
const CLIENT: &str = r#"
import json, os, re, sys, urllib.request, urllib.error
from openai import OpenAI
url, out, direct = sys.argv[1], sys.argv[2], sys.argv[3]
client = OpenAI(base_url=url, api_key="sk-not-kept")
whole = client.chat.completions.create(model="local-m", messages=[{"role": "user", "content": "What is 2 + 3?"}])
chunks = list(client.chat.completions.create(
    model="local-m", messages=[{"role": "user", "content": "Reverse the word: gateway"}], stream=True))
streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
def raw(base):
    body = json.dumps({"model": "local-m", "stream": True, "messages": [{"role": "user", "content": "What is 1 + 1?"}]}).encode()
    req = urllib.request.Request(base + "/chat/completions", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return re.sub(rb'"created": \d+', b'"created": 0', r.read())
try:
    urllib.request.urlopen(url.replace(url.split("/")[3], "0" * 32) + "/models", timeout=10)
    stranger = 200
except urllib.error.HTTPError as e:
    stranger = e.code
json.dump({
    "url": url, "env": os.environ.get("RUNBOARD_ENDPOINT_URL"),
    "whole": whole.choices[0].message.content, "whole_usage": whole.usage.prompt_tokens + whole.usage.completion_tokens,
    "streamed": streamed, "stream_usage_seen": any(getattr(c, "usage", None) for c in chunks),
    "raw_same": raw(url) == raw(direct), "stranger": stranger,
}, open(os.path.join(out, "client.json"), "w"))
"#;

#[test]
fn an_sdk_cell_is_counted_through_the_gateway_and_receives_what_it_asked_for() {
    let model = common::standin::stand_in(&["--models", "local-m"]);
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let catalogue = "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\nprice_per_1k_tokens = 1.0\n".to_owned();
    let root = sdk_campaign(tmp.path(), &script, &[&model.url], 1, catalogue);
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), toml.replace("http://127.0.0.1:9/v1", &model.url)).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let (run_set, v) =
        run_to_end(&s.addr, json!({"label": "gw", "max_cells": 1, "endpoint": "gpu-a"}), Duration::from_secs(60));
    let cell = v["cells"][0]["cell"].as_str().unwrap().to_owned();
    assert_eq!(v["cells"][0]["status"], "done", "{v}");
    let out = root.join("runsets").join(&run_set).join("out").join(&cell);
    let client: Value = serde_json::from_slice(&std::fs::read(out.join("client.json")).unwrap()).unwrap();

    // The cell's own path on the gateway, with the batch's secret.
    let url = client["url"].as_str().unwrap();
    let parts: Vec<&str> = url.split('/').collect();
    assert!(url.starts_with("http://127.0.0.1:") && !url.starts_with(&model.url), "{url}");
    assert_eq!((parts[3].len(), parts[4], parts[5]), (32, cell.as_str(), "gpu-a"), "{url}");
    assert_eq!(client["env"], client["url"], "RUNBOARD_ENDPOINT_URL is the same path");
    // The client got its answers, and no usage chunk it did not ask for.
    assert_eq!((client["whole"].as_str(), client["streamed"].as_str()), (Some("ANSWER: 5"), Some("ANSWER: yawetag")));
    assert_eq!(client["stream_usage_seen"], false, "{client}");
    assert_eq!(client["raw_same"], true, "a raw stream is the same bytes with and without the gateway");
    assert_eq!(client["stranger"], 404, "a path without the secret is refused");

    // Every call through it is one progress line, its tokens the usage the
    // endpoint reported (the stand-in: words of the prompt + 10 in, words
    // out): "What is 2 + 3?" 15 in, the stream's "Reverse the word: gateway"
    // 14, the raw "What is 1 + 1?" 15; two words out each.
    let lines: Vec<Value> = std::fs::read_to_string(out.join("progress.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let tokens: Vec<(u64, u64)> =
        lines.iter().map(|l| (l["input_tokens"].as_u64().unwrap(), l["output_tokens"].as_u64().unwrap())).collect();
    assert_eq!(tokens, [(15, 2), (14, 2), (15, 2)], "{lines:?}");
    assert_eq!(client["whole_usage"], 17, "the client saw the usage the gateway counted");
    assert!(lines.iter().all(|l| l["model"] == "local-m" && l["via"] == "gateway" && l["latency_s"].is_number()));
    // What was counted is the cell's spend: on Live and in its report.
    assert_eq!(v["cells"][0]["tokens"], 50, "{v}");
    let (_, r) = get(&s.addr, &format!("/api/reports/{run_set}"));
    assert_eq!(r["tokens"], 50, "{r}");
}

/// A cell spending 2.00 USD a call (the stand-in's 15 input and 2 output
/// tokens of "What is 2 + 3?", priced 100 and 250 USD per 1,000) every
/// 0.09 s through the openai SDK, until a call is refused or it is stopped;
/// with `own`, it writes its own progress line after each call (a cell the
/// gateway does not see). Stopped (SIGTERM), it tries one call more. What
/// a call was refused with, and how many requests its client sent for it,
/// go to `{out}/refused.json`.
const SPENDER: &str = r#"
import datetime, json, os, signal, sys, time, httpx, openai
url, out, own = sys.argv[1], sys.argv[2], sys.argv[3] == "own"
sent = []
client = openai.OpenAI(base_url=url, api_key="sk-not-kept",
                       http_client=httpx.Client(event_hooks={"request": [lambda r: sent.append(1)]}))
class Stopped(Exception):
    pass
def stop(*_):
    raise Stopped()
signal.signal(signal.SIGTERM, stop)
def ask():
    return client.chat.completions.create(model="paid-m", messages=[{"role": "user", "content": "What is 2 + 3?"}])
def refused(e, why):
    json.dump({"status": e.status_code, "retry": e.response.headers.get("x-should-retry"), "body": e.response.json(),
               "why": why, "sent_for_it": len(sent) - before}, open(os.path.join(out, "refused.json"), "w"))
try:
    for _ in range(400):
        before = len(sent)
        try:
            ask()
        except openai.APIStatusError as e:
            refused(e, "in the loop")
            sys.exit(3)
        if own:
            with open(os.path.join(out, "progress.jsonl"), "a") as f:
                ts = datetime.datetime.now(datetime.timezone.utc).isoformat()
                f.write(json.dumps({"ts": ts, "model": "paid-m", "input_tokens": 15, "output_tokens": 2}) + "\n")
        time.sleep(0.09)
except Stopped:
    # Asked to stop: one more call, to see what a call past the cap gets.
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    before = len(sent)
    try:
        ask()
    except openai.APIStatusError as e:
        refused(e, "after the stop")
    sys.exit(4)
"#;

/// Runs two spending cells at once under a 40 USD batch cap (40 USD/s in
/// all) — through the gateway, or (`gateway = false`) writing their own
/// progress and held by the console's guard alone (its default `poll_s`, 2 s) — and
/// returns what they spent (every progress line: a call), the live view
/// once the batch ended, and the run set's folder (in the temporary folder
/// returned with it).
fn spend_to_the_cap(through_gateway: bool) -> (f64, Value, PathBuf, tempfile::TempDir) {
    let model = common::standin::stand_in(&["--models", "paid-m"]);
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("spender.py");
    std::fs::write(&script, SPENDER).unwrap();
    let mode = if through_gateway { "seen" } else { "own" };
    let prices = "price_per_1k_tokens = 250.0\nprice_input_per_1k = 100.0\nprice_output_per_1k = 250.0";
    let gateway = format!("gateway = {through_gateway}\n");
    let catalogue = paid_route("paid-m", prices, "paid-api", &model.url, "openai", &gateway);
    let root = sdk_campaign(tmp.path(), &script, &[mode], 2, catalogue);
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), format!("{toml}[budget]\nmax_cost = 40.0\n")).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "cap", "max_cells": 2, "model": "paid-m", "endpoint": "paid-api"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    wait_for("the batch to stop at its cap", Duration::from_secs(60), || {
        let (state, v) = live_state(&s.addr);
        (state == "idle" && v["run_set"] == run_set.as_str()) || state == "stopped_resumable"
    });
    let (_, v) = live_state(&s.addr);
    let dir = root.join("runsets").join(&run_set);
    let mut ends = Vec::new();
    for cell in std::fs::read_dir(dir.join("out")).unwrap() {
        let text = std::fs::read_to_string(cell.unwrap().path().join("progress.jsonl")).unwrap_or_default();
        for line in text.lines() {
            let l: Value = serde_json::from_str(line).unwrap();
            assert_eq!((l["input_tokens"].as_u64(), l["output_tokens"].as_u64()), (Some(15), Some(2)), "{line}");
            ends.push(runboard::basics::timefmt::Timestamp::parse_rfc3339(l["ts"].as_str().unwrap()).unwrap().0);
        }
    }
    ends.sort();
    let spent = ends.len() as f64 * 2.0;
    let rate = (ends.len() - 1) as f64 * 2.0 / ((ends[ends.len() - 1] - ends[0]) as f64 / 1000.0);
    eprintln!("{mode}: {spent:.2} USD spent at {rate:.1} USD/s");
    (spent, v, dir, tmp)
}

#[test]
fn a_cap_holds_at_the_gateway_within_what_was_in_flight() {
    let (before, ..) = spend_to_the_cap(false);
    let (after, v, dir, _tmp) = spend_to_the_cap(true);
    eprintln!(
        "cap overshoot at about 40 USD/s (cap 40.00 USD): {before:.2} USD spent held by the console's guard alone \
         ({:.2}×), {after:.2} USD through the gateway ({:.2}×)",
        before / 40.0,
        after / 40.0
    );
    // Every call that reached the cap was let through; the two cells had at
    // most one call each in flight when it was reached: 42.00 USD at most.
    assert!((40.0..=42.0).contains(&after), "spent {after} USD under a cap of 40");
    // The guard alone pauses at its next poll: what the batch spends until
    // then is measured (printed), not bounded here.
    assert!(before >= 40.0, "the guard paused it at the cap, not before: {before}");

    // Each cell's next call was refused, once, with a status its SDK does
    // not retry and a body naming the cap and the spend.
    let refused: Vec<Value> = std::fs::read_dir(dir.join("out"))
        .unwrap()
        .filter_map(|e| std::fs::read(e.unwrap().path().join("refused.json")).ok())
        .map(|b| serde_json::from_slice(&b).unwrap())
        .collect();
    assert!(!refused.is_empty(), "a cell was refused a call");
    for r in &refused {
        assert_eq!((r["status"].as_u64(), r["retry"].as_str()), (Some(402), Some("false")), "{r}");
        assert_eq!(r["sent_for_it"], 1, "the refusal was not retried: {r}");
        assert_eq!(r["body"]["error"]["code"], "budget_reached", "{r}");
        let message = r["body"]["error"]["message"].as_str().unwrap();
        assert!(message.contains("the cap of 40.00 USD per batch: 4"), "{message}");
    }
    // The batch paused itself, resumably, saying why.
    let outcome: Value = serde_json::from_slice(&std::fs::read(dir.join("batch_outcome.json")).unwrap()).unwrap();
    assert_eq!(outcome["status"], "stopped", "{outcome}");
    let reason = outcome["reason"].as_str().unwrap();
    assert!(reason.starts_with("paused by the budget: the cap of 40.00 USD per batch: 4"), "{reason}");
    assert!(reason.ends_with("; resumable"), "{reason}");
    // Live says so as it says the console's pause.
    assert_eq!(v["state"]["state"], "stopped_resumable", "{v}");
    let words = v["words"].as_str().unwrap();
    assert!(words.contains("can be resumed (paused by the budget: the cap of 40.00 USD per batch: 4"), "{words}");
}

#[test]
fn a_quiet_cell_is_explained_by_its_calls_and_one_rate_limit_holds_every_cell() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("requests.jsonl");
    let log_arg = log.display().to_string();
    // Every 4th call overloaded (429, Retry-After: 2); "slowly" answered 12 s late.
    let model = common::standin::stand_in(&[
        "--models",
        "paid-m",
        "--delay",
        "0.2",
        "--overload-every",
        "4",
        "--retry-after",
        "2",
        "--slow",
        "slowly=12",
        "--log",
        &log_arg,
    ]);
    // Plain openai-SDK calls, eight a cell (the fixture says which is slow).
    let script = common::standin::repo().join("server/tests/fixtures/gateway_caller.py");
    let catalogue =
        paid_route("paid-m", "price_per_1k_tokens = 1.0", "paid-api", &model.url, "openai", "max_concurrency = 2\n");
    let root = sdk_campaign(tmp.path(), &script, &["{seed}-{phase}-{condition}"], 3, catalogue);
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    // A stall threshold well under the slow call and past a cell's start (Python and its SDK loading).
    std::fs::write(root.join("campaign.toml"), format!("{toml}[stall]\nafter_s = 6.0\n[budget]\npoll_s = 0.5\n"))
        .unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "quiet", "max_cells": 3, "model": "paid-m", "endpoint": "paid-api"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();

    let (mut quiet, mut limits) = (QuietSeen::default(), None);
    let mut tokens_before_any_end = 0;
    let (mut status_text, mut telemetry) = (None, None);
    wait_for("the batch to end", Duration::from_secs(120), || {
        let (state, v) = live_state(&s.addr);
        let cells = v["cells"].as_array().cloned().unwrap_or_default();
        assert_eq!(v["stalls"], json!([]), "a cell calling through its gateway is never stalled: {v}");
        quiet.look(&v, 3.5);
        if v["rate_limits"]["paid-api"]["overloads_last_min"].as_u64() > Some(0) {
            limits = Some(v["rate_limits"]["paid-api"].clone());
            // Endpoint telemetry for a paid route: from the gateway's calls.
            if telemetry.is_none() {
                let (_, t) = get(&s.addr, "/api/telemetry");
                let e =
                    t["endpoints"].as_array().unwrap().iter().find(|e| e["endpoint"] == "paid-api").unwrap().clone();
                if e["gateway"]["overloads_last_min"].as_u64() > Some(0) && e["calls"]["latency_p50_s"].is_number() {
                    telemetry = Some(e);
                }
            }
        }
        if state == "running" && cells.iter().all(|c| c["status"] == "running") {
            tokens_before_any_end = tokens_before_any_end.max(v["spend"]["total_tokens"].as_u64().unwrap_or(0));
        }
        if state == "running" && status_text.is_none() && quiet.in_flight.is_some() {
            let out = std::process::Command::new(env!("CARGO_BIN_EXE_runboard"))
                .args(["status", "--root"])
                .arg(&root)
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout).into_owned();
            if text.contains("in flight for") || text.contains("waiting on paid-api") {
                status_text = Some(text);
            }
        }
        state == "idle" && v["run_set"] == run_set.as_str()
    });
    eprintln!(
        "seen on Live: {:?}; {:?}; rate limit {limits:?}\nstatus:\n{}",
        quiet.in_flight,
        quiet.waiting,
        status_text.as_deref().unwrap_or("")
    );
    let in_flight = quiet.in_flight.expect("the slow call was seen in flight");
    assert!(in_flight.starts_with("one call in flight for "), "{in_flight}");
    let waiting = quiet.waiting.expect("a call held by the rate limit was seen");
    assert!(waiting.starts_with("waiting on paid-api: ") && waiting.contains("held by the rate limit"), "{waiting}");
    let limits = limits.expect("the endpoint's overloads were seen");
    assert_eq!(limits["max"], 2, "{limits}");
    assert!(limits["limit"].as_u64() <= Some(2), "{limits}");
    assert!(tokens_before_any_end > 0, "tokens climbed before any cell ended");
    let telemetry = telemetry.expect("telemetry showed the endpoint's latency and 429s");
    let words = telemetry["words"].as_str().unwrap();
    assert!(words.contains("latency") && words.contains("× 429/503 in the last minute"), "{words}");
    let status_text = status_text.expect("runboard status said why a cell was quiet");
    assert!(status_text.contains("rate limit paid-api: "), "{status_text}");

    // One limit for every cell: the endpoint never had more than 2 calls of
    // the batch at once; and every answered call was counted once.
    let requests: Vec<Value> =
        std::fs::read_to_string(&log).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    let most = requests.iter().filter_map(|r| r["concurrent"].as_u64()).max().unwrap();
    assert!(most <= 2, "the endpoint saw {most} calls at once under max_concurrency = 2");
    let (_, v) = live_state(&s.addr);
    assert!(v["cells"].as_array().unwrap().iter().all(|c| c["status"] == "done"), "{v}");
    let dir = root.join("runsets").join(&run_set).join("out");
    let lines: usize = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path().join("progress.jsonl")).unwrap().lines().count())
        .sum();
    assert_eq!(lines, 24, "8 answered calls a cell, each one line");
    assert_eq!(requests.len(), 24, "answered requests logged by the stand-in (its 429s are not)");
    // The calls file goes with the gateway.
    assert!(!root.join("runsets").join(&run_set).join(".gateway-calls.json").exists());
}

/// A paid route is an `https://` URL: the gateway reaches it over TLS,
/// trusting the system's roots (here `SSL_CERT_FILE`: a test CA that signed
/// the stand-in's certificate), and counts its calls as any other's.
#[test]
fn an_https_endpoint_is_reached_through_the_gateway_and_counted() {
    let tmp = tempfile::tempdir().unwrap();
    let pki = tmp.path().join("pki");
    std::fs::create_dir_all(&pki).unwrap();
    let openssl = |args: &[&str]| {
        let out = std::process::Command::new("openssl").args(args).current_dir(&pki).output().unwrap();
        assert!(out.status.success(), "openssl {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=runboard test CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "leaf.key",
        "-out",
        "leaf.csr",
        "-subj",
        "/CN=127.0.0.1",
    ]);
    std::fs::write(pki.join("leaf.ext"), "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n").unwrap();
    openssl(&[
        "x509",
        "-req",
        "-in",
        "leaf.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "leaf.pem",
        "-days",
        "2",
        "-extfile",
        "leaf.ext",
    ]);
    let (cert, key) = (pki.join("leaf.pem").display().to_string(), pki.join("leaf.key").display().to_string());
    let model = common::standin::stand_in(&["--models", "paid-m", "--tls", &cert, &key]);
    assert!(model.url.starts_with("https://127.0.0.1:"), "{}", model.url);

    let script = common::standin::repo().join("server/tests/fixtures/gateway_caller.py");
    let catalogue = paid_route("paid-m", "price_per_1k_tokens = 1.0", "paid-api", &model.url, "openai", "");
    let root = sdk_campaign(tmp.path(), &script, &["plain"], 1, catalogue);
    let trust = [("SSL_CERT_FILE".to_owned(), pki.join("ca.pem").display().to_string())];
    let s = serve_env(&root, &tmp.path().join("data"), &trust);
    let body = json!({"label": "tls", "max_cells": 1, "model": "paid-m", "endpoint": "paid-api"});
    let (run_set, v) = run_to_end(&s.addr, body, Duration::from_secs(60));
    assert_eq!(v["cells"][0]["status"], "done", "{v}");
    let cell = v["cells"][0]["cell"].as_str().unwrap();
    let out = root.join("runsets").join(&run_set).join("out").join(cell);
    let lines: Vec<Value> = std::fs::read_to_string(out.join("progress.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 8, "{lines:?}");
    assert!(lines.iter().all(|l| l["via"] == "gateway" && l["input_tokens"].as_u64() > Some(0)), "{lines:?}");
    assert!(v["cells"][0]["cost"].as_f64() > Some(0.0), "priced as it ran: {v}");
}

/// The cell: the official `anthropic` SDK through `{endpoint_url}` (the
/// catalogue's URL is the API's root, as `https://api.anthropic.com` is), a
/// whole message and a stream, and the same raw streamed request direct and
/// through the gateway, compared byte for byte.
const ANTHROPIC_CLIENT: &str = r#"
import anthropic, json, os, sys, urllib.request
url, out, direct = sys.argv[1], sys.argv[2], sys.argv[3]
client = anthropic.Anthropic(base_url=url, api_key="sk-ant-not-kept")
whole = client.messages.create(model="claude-m", max_tokens=64, messages=[{"role": "user", "content": "What is 2 + 3?"}])
with client.messages.stream(model="claude-m", max_tokens=64,
                            messages=[{"role": "user", "content": "Reverse the word: gateway"}]) as s:
    streamed = "".join(s.text_stream)
    final = s.get_final_message()
def raw(base):
    body = json.dumps({"model": "claude-m", "max_tokens": 64, "stream": True,
                       "messages": [{"role": "user", "content": "What is 1 + 1?"}]}).encode()
    req = urllib.request.Request(base + "/v1/messages", data=body,
                                 headers={"Content-Type": "application/json", "x-api-key": "sk-ant-not-kept",
                                          "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return r.read()
usage = lambda u: [u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens, u.output_tokens]
json.dump({"whole": whole.content[0].text, "whole_usage": usage(whole.usage),
           "streamed": streamed, "stream_usage": usage(final.usage),
           "raw_same": raw(url) == raw(direct)}, open(os.path.join(out, "client.json"), "w"))
"#;

#[test]
fn an_anthropic_sdk_cell_is_counted_with_its_cache_and_receives_what_it_asked_for() {
    let model = common::standin::stand_in(&["--models", "claude-m"]);
    let root_url = model.url.trim_end_matches("/v1").to_owned();
    let tmp = tempfile::tempdir().unwrap();
    let script = tmp.path().join("client.py");
    std::fs::write(&script, ANTHROPIC_CLIENT).unwrap();
    let catalogue = paid_route("claude-m", "price_per_1k_tokens = 1.0", "anthropic", &root_url, "anthropic", "");
    let root = sdk_campaign(tmp.path(), &script, &[&root_url], 1, catalogue);
    let s = serve(&root, &tmp.path().join("data"));
    let body = json!({"label": "claude", "max_cells": 1, "model": "claude-m", "endpoint": "anthropic"});
    let (run_set, v) = run_to_end(&s.addr, body, Duration::from_secs(60));
    assert_eq!(v["cells"][0]["status"], "done", "{v}");
    let out = root.join("runsets").join(&run_set).join("out").join(v["cells"][0]["cell"].as_str().unwrap());
    let client: Value = serde_json::from_slice(&std::fs::read(out.join("client.json")).unwrap()).unwrap();
    assert_eq!((client["whole"].as_str(), client["streamed"].as_str()), (Some("ANSWER: 5"), Some("ANSWER: yawetag")));
    assert_eq!(client["raw_same"], true, "a raw stream is the same bytes with and without the gateway");
    // What was recorded is what the endpoint reported to the client: input
    // and cache writes as input, cache reads as cached, output.
    let lines: Vec<Value> = std::fs::read_to_string(out.join("progress.jsonl"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    for (line, reported) in lines.iter().zip([&client["whole_usage"], &client["stream_usage"]]) {
        let r: Vec<u64> = reported.as_array().unwrap().iter().map(|x| x.as_u64().unwrap()).collect();
        let got = (line["input_tokens"].as_u64(), line["cached_tokens"].as_u64(), line["output_tokens"].as_u64());
        assert_eq!(got, (Some(r[0] + r[1]), Some(r[2]), Some(r[3])), "{line} against {reported}");
        assert_eq!(line["model"], "claude-m");
    }
}
