//! Endpoint telemetry against a real `runboard serve`, a real batch whose
//! cells are shell processes appending calls (with their latency) to their
//! progress file, and a small stand-in for a vLLM server's `/metrics` (no GPU
//! here): the calls' rates and latency, the engine's queue, KV cache and
//! throughput, an endpoint made busy by its queue (the catalogue says so), and
//! a metrics endpoint that never answers bounded to its timeout.

use crate::common;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::served::*;
use common::wait_for;
use serde_json::{json, Value};

/// A stand-in for vLLM's metrics: two engines' gauges, a generation counter
/// that grows 1,000 tokens a second, `waiting` as set; silent (accepts, never
/// answers) while `hang` is set.
struct StandIn {
    addr: String,
    waiting: Arc<AtomicU64>,
    hang: Arc<AtomicBool>,
}

fn stand_in() -> StandIn {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap().to_string();
    let waiting = Arc::new(AtomicU64::new(2));
    let hang = Arc::new(AtomicBool::new(false));
    let (w, h) = (waiting.clone(), hang.clone());
    let started = Instant::now();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let (w, h) = (w.clone(), h.clone());
            std::thread::spawn(move || {
                let _ = conn.set_read_timeout(Some(Duration::from_secs(5)));
                let mut reader = BufReader::new(conn.try_clone().unwrap());
                let mut request = String::new();
                let _ = reader.read_line(&mut request);
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                if h.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_secs(10));
                    return;
                }
                let body = if request.starts_with("GET /metrics") {
                    let generated = 50_000.0 + started.elapsed().as_secs_f64() * 1000.0;
                    format!(
                        "# TYPE vllm:num_requests_running gauge\n\
                         vllm:num_requests_running{{engine=\"0\",model_name=\"local-m\"}} 4\n\
                         vllm:num_requests_running{{engine=\"1\",model_name=\"local-m\"}} 3\n\
                         vllm:num_requests_waiting{{engine=\"0\",model_name=\"local-m\"}} {}\n\
                         vllm:kv_cache_usage_perc{{engine=\"0\",model_name=\"local-m\"}} 0.5\n\
                         vllm:generation_tokens_total{{engine=\"0\",model_name=\"local-m\"}} {generated}\n",
                        w.load(Ordering::SeqCst)
                    )
                } else {
                    r#"{"object":"list","data":[{"id":"local-m"}]}"#.to_owned()
                };
                let _ = write!(
                    conn,
                    "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
            });
        }
    });
    StandIn { addr, waiting, hang }
}

/// A campaign on endpoint `gpu-a` at `endpoint` (its metrics read there,
/// `max_waiting = 4`) whose cells append a call of 1,000 + 500 tokens taking
/// 0.2 s every 0.1 s, 300 times.
fn campaign_on(tmp: &Path, endpoint: &str) -> PathBuf {
    let root = tmp.join("campaign");
    // Braces doubled: the runner's command is a template.
    let script = "i=0; while [ $i -lt 300 ]; do \
         printf '{{\"ts\":\"%s\",\"input_tokens\":1000,\"output_tokens\":500,\"latency_s\":0.2}}\\n' \
         \"$(date -u +%Y-%m-%dT%H:%M:%S.%3NZ)\" >> {out}/progress.jsonl; i=$((i+1)); sleep 0.1; done; \
         echo '{{\"score\": 1}}' > {out}/result.json"
        .to_owned();
    let f = server::demo::fixture::ConsoleFixture {
        name: "telemetry test".into(),
        command: vec!["sh".into(), "-c".into(), script],
        parallel: 2,
        models: String::new(),
        default_graces: false,
    };
    server::demo::fixture::write_console_campaign(&root, &f).unwrap();
    let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
    let toml =
        toml.replace("url = \"http://127.0.0.1:9/v1\"", &format!("url = \"http://{endpoint}/v1\"\nmax_waiting = 4"));
    std::fs::write(root.join("campaign.toml"), format!("{toml}[budget]\npoll_s = 0.5\n")).unwrap();
    root
}

fn gpu_a(addr: &str) -> Value {
    let (code, t) = get(addr, "/api/telemetry");
    assert_eq!(code, 200, "{t}");
    t["endpoints"].as_array().unwrap().iter().find(|e| e["endpoint"] == "gpu-a").cloned().unwrap()
}

#[test]
fn an_endpoints_calls_and_engine_are_shown_live_its_queue_makes_it_busy_and_a_silent_engine_is_bounded() {
    let tmp = tempfile::tempdir().unwrap();
    let engine = stand_in();
    let root = campaign_on(tmp.path(), &engine.addr);
    let s = serve(&root, &tmp.path().join("data"));
    let path = draft(&s.addr, json!({"label": "tel", "max_cells": 2, "model": "local-m", "endpoint": "gpu-a"}));
    let (code, l) = post(&s.addr, "/api/control/start", json!({"path": path}));
    assert_eq!(code, 200, "{l}");
    let run_set = l["run_set"].as_str().unwrap().to_owned();

    // The calls: two cells each ending a 0.2 s call every ~0.1 s + the write.
    // The engine: read twice (5 s apart) for its throughput.
    wait_for("calls counted and the engine read twice", Duration::from_secs(40), || {
        let e = gpu_a(&s.addr);
        e["calls"]["calls"].as_u64().unwrap_or(0) >= 20 && e["engine"]["generation_tokens_per_s"].is_number()
    });
    let e = gpu_a(&s.addr);
    assert_eq!(e["run_sets"], json!([run_set]), "{e}");
    let c = &e["calls"];
    assert_eq!(c["window_s"], 60.0);
    assert!((c["latency_p50_s"].as_f64().unwrap() - 0.2).abs() < 1e-9, "{c}");
    assert!((c["latency_p95_s"].as_f64().unwrap() - 0.2).abs() < 1e-9, "{c}");
    // 1,500 tokens a call, a third of it output.
    let (tps, out) = (c["tokens_per_s"].as_f64().unwrap(), c["output_tokens_per_s"].as_f64().unwrap());
    assert!((tps - c["calls"].as_f64().unwrap() * 1500.0 / 60.0).abs() < 1e-6 && (tps - 3.0 * out).abs() < 1e-6, "{c}");
    assert!(c["in_flight"].as_f64().unwrap() > 0.0, "{c}");
    let en = &e["engine"];
    assert_eq!(
        (en["running"].as_f64(), en["waiting"].as_f64(), en["kv_cache_use"].as_f64()),
        (Some(7.0), Some(2.0), Some(0.5))
    );
    let generated = en["generation_tokens_per_s"].as_f64().unwrap();
    assert!((500.0..2000.0).contains(&generated), "the stand-in generates 1,000 tokens/s: {generated}");
    assert_eq!(e["metrics_url"], format!("http://{}/metrics", engine.addr));
    assert!(e["busy"].is_null(), "2 waiting, max_waiting 4: {e}");
    let words = e["words"].as_str().unwrap();
    assert!(words.contains("engine: 7 running, 2 waiting, KV cache 50% used"), "{words}");

    // Its queue at max_waiting: busy, and the catalogue says so.
    engine.waiting.store(9, Ordering::SeqCst);
    wait_for("busy", Duration::from_secs(15), || gpu_a(&s.addr)["busy"].is_string());
    let busy = gpu_a(&s.addr)["busy"].as_str().unwrap().to_owned();
    assert_eq!(busy, "endpoint gpu-a is busy: 9 requests waiting at its engine (max_waiting = 4)");
    let (_, cat) = get(&s.addr, "/api/catalogue");
    let row = cat["endpoints"].as_array().unwrap().iter().find(|r| r["name"] == "gpu-a").unwrap().clone();
    assert_eq!(row["busy"].as_str(), Some(busy.as_str()), "{row}");
    assert!(row["words"].as_str().unwrap().contains("the autopilot starts nothing new on it"), "{row}");

    // The CLI says the same.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_runboard"))
        .args(["telemetry", "--root"])
        .arg(&root)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success() && text.contains("gpu-a (vllm) serving") && text.contains("is busy"), "{text}");

    // An engine that never answers: the read is bounded (2 s), said, and
    // never taken for an idle or a busy one.
    engine.hang.store(true, Ordering::SeqCst);
    std::thread::sleep(Duration::from_secs(5)); // past the 5 s the last read is kept
    let asked = Instant::now();
    let e = gpu_a(&s.addr);
    assert!(asked.elapsed() < Duration::from_secs(4), "bounded: {:?}", asked.elapsed());
    assert_eq!(e["engine_error"], "no answer within 2 s", "{e}");
    assert!(e["engine"].is_null() && e["busy"].is_null(), "{e}");
    assert_eq!(post(&s.addr, "/api/control/stop", json!({"run_sets": [run_set]})).0, 200);
}
