//! Endpoint telemetry as data: what an endpoint is doing now, from two
//! sources that never stand in for each other.
//!
//! - **From the calls being written** (every endpoint a running batch uses):
//!   the calls that ended in the last [`WINDOW_S`] seconds — how many, tokens
//!   per second (all, and output alone), latency (median and 95th
//!   percentile), and requests in flight as the window's mean concurrency
//!   (the sum of each call's time inside the window over the window: Little's
//!   law, exact for the calls that ended; a call still in flight is counted
//!   when it ends, so a sudden stall reads low until then).
//! - **From the endpoint's own metrics** (a Prometheus text exposition, vLLM's
//!   `/metrics`): requests running and waiting, KV-cache use, and generation
//!   throughput from two reads of its token counter.
//!
//! An endpoint whose engine reports at least its `max_waiting` requests
//! waiting is **busy**: the autopilot launches nothing new on it and the
//! catalogue says so ([`busy`]). Nothing is inferred from a metrics read that
//! failed: it is shown as failed, never as idle.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::basics::timefmt::Timestamp;
use crate::campaign::EndpointEntry;

/// The window the call figures cover, in seconds.
pub const WINDOW_S: f64 = 60.0;
/// The most recent calls a cell keeps for them.
pub const RECENT_KEPT: usize = 256;
/// The most of a metrics answer read, in bytes (vLLM's is ~30 KiB).
pub const METRICS_MAX_BYTES: usize = 2 << 20;

/// One ended call as the figures need it.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CallTime {
    /// When it ended.
    pub at: Timestamp,
    /// How long it took, when the writer said (a call file's `started_at`
    /// to `ended_at`; a progress line's `latency_s`).
    pub latency_s: Option<f64>,
    pub output_tokens: u64,
    pub tokens: u64,
}

/// An endpoint's calls over the window.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallRates {
    pub window_s: f64,
    /// Calls that ended in the window.
    pub calls: u64,
    pub tokens_per_s: f64,
    pub output_tokens_per_s: f64,
    /// Of the calls in the window that gave their latency; none without any.
    pub latency_p50_s: Option<f64>,
    pub latency_p95_s: Option<f64>,
    /// The window's mean number of calls in flight, from those with a
    /// latency (none without any).
    pub in_flight: Option<f64>,
}

/// The figures of the calls that ended in `(now - window_s, now]`.
pub fn call_rates<'a>(calls: impl IntoIterator<Item = &'a CallTime>, now: Timestamp, window_s: f64) -> CallRates {
    let start = now.0 as f64 / 1000.0 - window_s;
    let end = now.0 as f64 / 1000.0;
    let mut out = CallRates { window_s, ..Default::default() };
    let (mut tokens, mut output, mut busy_s) = (0u64, 0u64, 0.0f64);
    let mut latencies = Vec::new();
    for c in calls {
        let at = c.at.0 as f64 / 1000.0;
        if at <= start || at > end {
            continue;
        }
        out.calls += 1;
        tokens += c.tokens;
        output += c.output_tokens;
        if let Some(l) = c.latency_s.filter(|l| l.is_finite() && *l >= 0.0) {
            latencies.push(l);
            busy_s += at - (at - l).max(start);
        }
    }
    out.tokens_per_s = tokens as f64 / window_s;
    out.output_tokens_per_s = output as f64 / window_s;
    out.latency_p50_s = crate::results::stats::quantile(&latencies, 0.5);
    out.latency_p95_s = crate::results::stats::quantile(&latencies, 0.95);
    out.in_flight = (!latencies.is_empty()).then(|| busy_s / window_s);
    out
}

/// One sample of a Prometheus text exposition.
#[derive(Debug, Clone, PartialEq)]
pub struct Sample {
    pub name: String,
    pub labels: Vec<(String, String)>,
    pub value: f64,
}

/// The samples of a Prometheus text exposition (format 0.0.4): comments and
/// blank lines skipped, a line that is not a sample named (by number) and
/// skipped, never a failure.
pub fn parse_exposition(text: &str) -> (Vec<Sample>, Vec<String>) {
    let mut samples = Vec::new();
    let mut problems = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        match sample(line) {
            Some(s) => samples.push(s),
            None if problems.len() < 5 => problems.push(format!("line {}: not a sample", i + 1)),
            None => {}
        }
    }
    (samples, problems)
}

fn sample(line: &str) -> Option<Sample> {
    let name_end = line.find(|c: char| c == '{' || c.is_whitespace())?;
    let name = &line[..name_end];
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':') {
        return None;
    }
    let mut rest = &line[name_end..];
    let mut labels = Vec::new();
    if let Some(body) = rest.strip_prefix('{') {
        let (parsed, after) = label_set(body)?;
        labels = parsed;
        rest = after;
    }
    // The value, then an optional timestamp (ignored).
    let value = rest.split_whitespace().next()?;
    let value = match value {
        "+Inf" | "Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        "NaN" => f64::NAN,
        v => v.parse().ok()?,
    };
    Some(Sample { name: name.to_owned(), labels, value })
}

/// `name="value",…}` (escapes `\\`, `\"`, `\n`) → the labels and what follows `}`.
fn label_set(mut s: &str) -> Option<(Vec<(String, String)>, &str)> {
    let mut out = Vec::new();
    loop {
        s = s.trim_start_matches([' ', ',']);
        if let Some(after) = s.strip_prefix('}') {
            return Some((out, after));
        }
        let eq = s.find('=')?;
        let key = s[..eq].trim().to_owned();
        s = s[eq + 1..].trim_start().strip_prefix('"')?;
        let mut value = String::new();
        let mut chars = s.char_indices();
        let end = loop {
            match chars.next()? {
                (i, '"') => break i,
                (_, '\\') => match chars.next()?.1 {
                    'n' => value.push('\n'),
                    c => value.push(c),
                },
                (_, c) => value.push(c),
            }
        };
        out.push((key, value));
        s = &s[end + 1..];
    }
}

/// What an engine's metrics said at one read: each figure summed over its
/// label sets (every model the engine serves); none when not exposed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct EngineRead {
    pub at: Timestamp,
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    /// KV-cache use, 0–1 (its highest over label sets).
    pub kv_cache_use: Option<f64>,
    pub generation_tokens_total: Option<f64>,
    pub prompt_tokens_total: Option<f64>,
}

/// The metric names read, each with the figure it gives (vLLM's names; the
/// older `gpu_cache_usage_perc` as well as `kv_cache_usage_perc`).
pub const METRIC_NAMES: [(&str, &str); 6] = [
    ("vllm:num_requests_running", "running"),
    ("vllm:num_requests_waiting", "waiting"),
    ("vllm:kv_cache_usage_perc", "kv_cache_use"),
    ("vllm:gpu_cache_usage_perc", "kv_cache_use"),
    ("vllm:generation_tokens_total", "generation_tokens_total"),
    ("vllm:prompt_tokens_total", "prompt_tokens_total"),
];

/// The figures of one exposition read at `at`.
pub fn engine_read(samples: &[Sample], at: Timestamp) -> EngineRead {
    let mut r = EngineRead { at, ..Default::default() };
    for s in samples.iter().filter(|s| s.value.is_finite()) {
        let Some((_, figure)) = METRIC_NAMES.iter().find(|(n, _)| *n == s.name) else { continue };
        let slot = match *figure {
            "running" => &mut r.running,
            "waiting" => &mut r.waiting,
            "kv_cache_use" => {
                r.kv_cache_use = Some(r.kv_cache_use.map_or(s.value, |x| x.max(s.value)));
                continue;
            }
            "generation_tokens_total" => &mut r.generation_tokens_total,
            _ => &mut r.prompt_tokens_total,
        };
        *slot = Some(slot.unwrap_or(0.0) + s.value);
    }
    r
}

/// An engine's state now, for people.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Engine {
    pub running: Option<f64>,
    pub waiting: Option<f64>,
    pub kv_cache_use: Option<f64>,
    /// Generation tokens per second between the last two reads (none after
    /// one read, or when the counter went back: the engine restarted).
    pub generation_tokens_per_s: Option<f64>,
    /// When it was read (ms since the epoch).
    pub read_at: Timestamp,
}

/// The engine now from its newest read and the one before.
pub fn engine(previous: Option<&EngineRead>, now: &EngineRead) -> Engine {
    let rate = previous.and_then(|p| {
        let dt = (now.at.0 - p.at.0) as f64 / 1000.0;
        let d = now.generation_tokens_total? - p.generation_tokens_total?;
        (dt > 0.0 && d >= 0.0).then(|| d / dt)
    });
    Engine {
        running: now.running,
        waiting: now.waiting,
        kv_cache_use: now.kv_cache_use,
        generation_tokens_per_s: rate,
        read_at: now.at,
    }
}

/// Where an endpoint's metrics are read: its `metrics_url`, else for a
/// `vllm` backend its base URL without `/v1` and with `/metrics`; none
/// otherwise (or when `metrics_url` is empty: reading turned off).
pub fn metrics_url(e: &EndpointEntry) -> Option<String> {
    match e.metrics_url.as_deref() {
        Some("") => None,
        Some(u) => Some(u.to_owned()),
        None if e.backend.eq_ignore_ascii_case("vllm") => {
            let base = e.url.trim_end_matches('/');
            Some(format!("{}/metrics", base.strip_suffix("/v1").unwrap_or(base)))
        }
        None => None,
    }
}

/// Why the autopilot launches nothing new on `e` now, if its engine is
/// busy: at least `max_waiting` requests waiting.
pub fn busy(e: &EndpointEntry, engine: Option<&Engine>) -> Option<String> {
    let limit = e.max_waiting?;
    let waiting = engine?.waiting?;
    (waiting >= f64::from(limit)).then(|| {
        format!(
            "endpoint {} is busy: {} requests waiting at its engine (max_waiting = {limit})",
            e.name,
            waiting.round()
        )
    })
}

/// One endpoint's telemetry, as the API answers it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointTelemetry {
    pub endpoint: String,
    pub backend: String,
    /// The running batches using it (run set names).
    pub run_sets: Vec<String>,
    pub calls: CallRates,
    /// Where its metrics are read (none: not read).
    pub metrics_url: Option<String>,
    pub engine: Option<Engine>,
    /// Why the last metrics read failed.
    pub engine_error: Option<String>,
    /// Its metrics' lines that were not samples (the first five).
    pub metrics_problems: Vec<String>,
    /// Why the autopilot launches nothing new on it now.
    pub busy: Option<String>,
    /// What the batches' gateways see of it now (summed over its running
    /// batches; none when no gateway serves it): the limit, the calls in
    /// flight and held, the 429/503/529s of the last minute.
    #[serde(default)]
    pub gateway: Option<crate::gateway::calls::EndpointCalls>,
    /// The whole in words.
    pub words: String,
}

/// The answer of `GET /api/telemetry`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TelemetryView {
    pub endpoints: Vec<EndpointTelemetry>,
    pub window_s: f64,
    /// When it was made (ms since the epoch).
    pub generated_at: Timestamp,
    pub note: String,
}

/// The view's note.
pub const NOTE: &str = "Operational signals, not results: calls from what running cells wrote in the last minute; \
     the engine from its own metrics.";

/// One endpoint's telemetry: its calls' figures, its metrics read (or why
/// not), and whether it is busy.
pub fn endpoint_telemetry(
    e: &EndpointEntry,
    run_sets: Vec<String>,
    calls: CallRates,
    metrics: Option<&Result<(Engine, Vec<String>), String>>,
) -> EndpointTelemetry {
    let (engine, engine_error, metrics_problems) = match metrics {
        Some(Ok((en, p))) => (Some(en.clone()), None, p.clone()),
        Some(Err(why)) => (None, Some(why.clone()), Vec::new()),
        None => (None, None, Vec::new()),
    };
    let busy = busy(e, engine.as_ref());
    let mut t = EndpointTelemetry {
        endpoint: e.name.clone(),
        backend: e.backend.clone(),
        run_sets,
        calls,
        metrics_url: metrics_url(e),
        engine,
        engine_error,
        metrics_problems,
        busy,
        gateway: None,
        words: String::new(),
    };
    t.words = words(&t);
    t
}

/// Adds what the gateways see of the endpoint, and says it.
pub fn with_gateway(mut t: EndpointTelemetry, g: Option<crate::gateway::calls::EndpointCalls>) -> EndpointTelemetry {
    t.gateway = g;
    t.words = words(&t);
    t
}

fn num(x: f64) -> String {
    crate::basics::numfmt::decimal(x, if x < 10.0 { 1 } else { 0 })
}

/// The telemetry in one line.
pub fn words(t: &EndpointTelemetry) -> String {
    let c = &t.calls;
    let mut parts = Vec::new();
    if c.calls == 0 {
        parts.push(format!("no call ended in the last {} s", c.window_s.round()));
    } else {
        let mut s = format!(
            "{} calls in the last {} s, {} tokens/s ({} output)",
            crate::basics::numfmt::thousands(c.calls),
            c.window_s.round(),
            num(c.tokens_per_s),
            num(c.output_tokens_per_s)
        );
        if let (Some(p50), Some(p95)) = (c.latency_p50_s, c.latency_p95_s) {
            s.push_str(&format!(", latency {} s median, {} s p95", num(p50), num(p95)));
        }
        if let Some(f) = c.in_flight {
            s.push_str(&format!(", {} in flight on average", num(f)));
        }
        parts.push(s);
    }
    if let Some(g) = &t.gateway {
        let limit = g.limit.map_or_else(
            || "no limit".to_owned(),
            |l| format!("{} at once", crate::basics::numfmt::count(l.into(), "call")),
        );
        parts.push(format!(
            "gateway: {limit}, {} in flight, {} held, {} × 429/503 in the last minute",
            g.in_flight, g.waiting, g.overloads_last_min
        ));
    }
    match (&t.engine, &t.engine_error) {
        (Some(en), _) => {
            let mut s = String::from("engine:");
            let mut any = false;
            let mut add = |x: Option<f64>, what: &str| {
                if let Some(v) = x {
                    s.push_str(&format!(" {} {what},", crate::basics::numfmt::decimal(v, 0)));
                    any = true;
                }
            };
            add(en.running, "running");
            add(en.waiting, "waiting");
            if let Some(kv) = en.kv_cache_use {
                s.push_str(&format!(" KV cache {}% used,", num(kv * 100.0)));
                any = true;
            }
            if let Some(g) = en.generation_tokens_per_s {
                s.push_str(&format!(" {} generated tokens/s,", num(g)));
                any = true;
            }
            if any {
                s.pop();
            } else {
                s.push_str(" its metrics name none of vLLM's figures");
            }
            parts.push(s);
        }
        (None, Some(why)) => parts.push(format!("engine metrics unreadable: {why}")),
        (None, None) => {}
    }
    if let Some(b) = &t.busy {
        parts.push(b.clone());
    }
    parts.join("; ")
}

/// The busy endpoints among `rows`, by name (the autopilot's input).
pub fn busy_endpoints(rows: &[EndpointTelemetry]) -> BTreeMap<String, String> {
    rows.iter().filter_map(|t| t.busy.clone().map(|b| (t.endpoint.clone(), b))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: i64) -> Timestamp {
        Timestamp(s * 1000)
    }

    #[test]
    fn call_rates_count_only_the_window_and_its_share_of_each_call() {
        let calls = [
            // Ended before the window: left out.
            CallTime { at: at(30), latency_s: Some(5.0), output_tokens: 100, tokens: 1000 },
            // Started 10 s before the window, 20 s long: 10 s inside it.
            CallTime { at: at(110), latency_s: Some(20.0), output_tokens: 60, tokens: 600 },
            CallTime { at: at(130), latency_s: Some(30.0), output_tokens: 60, tokens: 600 },
            CallTime { at: at(150), latency_s: None, output_tokens: 0, tokens: 300 },
            // After now: left out.
            CallTime { at: at(170), latency_s: Some(1.0), output_tokens: 9, tokens: 9 },
        ];
        let r = call_rates(&calls, at(160), 60.0);
        assert_eq!(r.calls, 3);
        assert!((r.tokens_per_s - 1500.0 / 60.0).abs() < 1e-9);
        assert!((r.output_tokens_per_s - 2.0).abs() < 1e-9);
        // In flight: (10 + 30) s of calls over 60 s.
        assert!((r.in_flight.unwrap() - 40.0 / 60.0).abs() < 1e-9);
        assert_eq!(r.latency_p50_s, Some(25.0));
        assert_eq!(r.latency_p95_s, Some(29.5));
        let none = call_rates(&calls[..1], at(160), 60.0);
        assert_eq!((none.calls, none.in_flight, none.latency_p50_s), (0, None, None));
    }

    const VLLM: &str = r#"# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="qwen3-32b"} 7.0
vllm:num_requests_running{engine="1",model_name="qwen3-32b"} 5.0
vllm:num_requests_waiting{engine="0",model_name="qwen3-32b"} 3.0
vllm:kv_cache_usage_perc{engine="0",model_name="qwen3-32b"} 0.41
vllm:kv_cache_usage_perc{engine="1",model_name="qwen3-32b"} 0.62
vllm:generation_tokens_total{engine="0",model_name="qwen3-32b"} 120000.0 1733300000000
vllm:prompt_tokens_total{model_name="a \"quoted\", name\\"} 5e5
vllm:time_to_first_token_seconds_bucket{le="+Inf",model_name="qwen3-32b"} +Inf
this line is { broken
"#;

    #[test]
    fn an_exposition_is_read_label_sets_summed_and_bad_lines_named() {
        let (samples, problems) = parse_exposition(VLLM);
        assert_eq!(samples.len(), 8);
        assert_eq!(problems, vec!["line 11: not a sample".to_owned()]);
        let quoted = samples.iter().find(|s| s.name == "vllm:prompt_tokens_total").unwrap();
        assert_eq!(quoted.labels, vec![("model_name".to_owned(), "a \"quoted\", name\\".to_owned())]);
        let r = engine_read(&samples, at(100));
        assert_eq!(r.running, Some(12.0));
        assert_eq!(r.waiting, Some(3.0));
        assert_eq!(r.kv_cache_use, Some(0.62));
        assert_eq!(r.generation_tokens_total, Some(120000.0));
        assert_eq!(r.prompt_tokens_total, Some(5e5));
        // Nothing readable is never a failure.
        assert_eq!(parse_exposition("\u{0}\u{1}{{{\n=\"\n").0, vec![]);
        assert_eq!(engine_read(&[], at(1)).running, None);
    }

    #[test]
    fn generation_throughput_comes_from_two_reads_and_a_restart_gives_none() {
        let first = EngineRead { at: at(100), generation_tokens_total: Some(1000.0), ..Default::default() };
        let second = EngineRead { at: at(104), generation_tokens_total: Some(3000.0), ..Default::default() };
        assert_eq!(engine(None, &first).generation_tokens_per_s, None);
        assert_eq!(engine(Some(&first), &second).generation_tokens_per_s, Some(500.0));
        let restarted = EngineRead { at: at(108), generation_tokens_total: Some(10.0), ..Default::default() };
        assert_eq!(engine(Some(&second), &restarted).generation_tokens_per_s, None);
    }

    fn ep(backend: &str, url: &str, metrics: Option<&str>, max_waiting: Option<u32>) -> EndpointEntry {
        EndpointEntry {
            name: "gpu-a".into(),
            url: url.into(),
            backend: backend.into(),
            metrics_url: metrics.map(str::to_owned),
            max_waiting,
            ..Default::default()
        }
    }

    #[test]
    fn the_metrics_url_is_vllms_by_default_and_can_be_named_or_turned_off() {
        assert_eq!(
            metrics_url(&ep("vllm", "http://127.0.0.1:8000/v1/", None, None)).as_deref(),
            Some("http://127.0.0.1:8000/metrics")
        );
        assert_eq!(metrics_url(&ep("sglang", "http://h:1/v1", None, None)), None);
        assert_eq!(
            metrics_url(&ep("sglang", "http://h:1/v1", Some("http://h:2/m"), None)).as_deref(),
            Some("http://h:2/m")
        );
        assert_eq!(metrics_url(&ep("vllm", "http://h:1/v1", Some(""), None)), None);
    }

    #[test]
    fn an_endpoint_is_busy_only_when_its_engine_says_enough_are_waiting() {
        let e = ep("vllm", "http://h:1/v1", None, Some(8));
        let waiting = |w: f64| Engine { waiting: Some(w), ..Default::default() };
        assert!(busy(&e, Some(&waiting(8.0))).unwrap().contains("8 requests waiting"));
        assert_eq!(busy(&e, Some(&waiting(7.0))), None);
        // An unread engine is never busy, nor is one without a limit.
        assert_eq!(busy(&e, None), None);
        assert_eq!(busy(&ep("vllm", "http://h:1/v1", None, None), Some(&waiting(99.0))), None);
        let t = endpoint_telemetry(&e, vec![], CallRates::default(), Some(&Err("no answer within 2 s".into())));
        assert_eq!(t.busy, None);
        assert!(t.words.contains("engine metrics unreadable: no answer within 2 s"), "{}", t.words);
        let en = Engine { running: Some(12.0), waiting: Some(9.0), kv_cache_use: Some(0.62), ..Default::default() };
        let t =
            endpoint_telemetry(&e, vec![], CallRates { window_s: 60.0, ..Default::default() }, Some(&Ok((en, vec![]))));
        assert_eq!(
            t.words,
            "no call ended in the last 60 s; engine: 12 running, 9 waiting, KV cache 62% used; \
             endpoint gpu-a is busy: 9 requests waiting at its engine (max_waiting = 8)"
        );
        assert_eq!(busy_endpoints(&[t]).len(), 1);
    }
}
