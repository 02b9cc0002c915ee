//! The batch gateway with real parts (issue 36): a real batch launched
//! through `runboard serve`, whose cell is a Python script using the
//! official `openai` SDK (the pinned one `scripts/setup.sh` installs in
//! `.tools/inspect/`) against the example's stand-in model server — a
//! whole answer and a stream that did not ask for usage — through nothing
//! but its `{endpoint_url}`. Every call is counted from the answer into the
//! cell's `progress.jsonl`; the client receives what it would without the
//! gateway; a path without the batch's secret is refused.

mod common;

use std::time::Duration;

use common::served::*;
use serde_json::{json, Value};

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
    let python = common::standin::harness_python();
    let model = common::standin::stand_in(&["--models", "local-m"]);
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("campaign");
    let script = tmp.path().join("client.py");
    std::fs::write(&script, CLIENT).unwrap();
    let f = server::fixture::ConsoleFixture {
        name: "gateway test".into(),
        command: vec![
            python.display().to_string(),
            script.display().to_string(),
            "{endpoint_url}".into(),
            "{out}".into(),
            model.url.clone(),
        ],
        parallel: 1,
        models: "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\nprice_per_1k_tokens = 1.0\n".into(),
        default_graces: false,
    };
    server::fixture::write_console_campaign(&root, &f).unwrap();
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    std::fs::write(root.join("campaign.toml"), toml.replace("http://127.0.0.1:9/v1", &model.url)).unwrap();
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "gw", "max_cells": 1, "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();
    wait_for("the batch to end", Duration::from_secs(60), || {
        let (state, v) = live_state(&s.addr);
        state == "idle" && v["run_set"] == run_set.as_str()
    });
    let (_, v) = live_state(&s.addr);
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
