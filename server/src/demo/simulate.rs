//! `runboard simulate-run DIR`: a small simulated agent campaign that writes a
//! realistic run directory over time, in the order a real campaign does (snapshot
//! first; a round's trials appended to the ledger before the state is rewritten;
//! call files written whole when a call ends). It is what the demo campaign runs
//! and what the reader tests read while it writes. It is a stand-in for a real
//! agent, which needs a GPU model server this machine cannot run.

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runboard::runview::files;
use serde_json::{json, Value};

use crate::files::atomic::write_atomic;

/// What to simulate.
#[derive(Debug, Clone)]
pub struct SimOptions {
    pub rounds: u32,
    pub slots: u32,
    /// Pause between steps (a call, a trial); zero writes the whole run at once.
    pub step: Duration,
    pub seed: u64,
    pub model: String,
    /// Continue a run that exists (a `resume` event) instead of starting one.
    pub resume: bool,
    /// After this many rounds, write half a ledger line and exit without a stop,
    /// as a crash would.
    pub crash_after: Option<u32>,
}

impl Default for SimOptions {
    fn default() -> Self {
        Self {
            rounds: 6,
            slots: 3,
            step: Duration::from_millis(1500),
            seed: 1,
            model: "qwen3-32b".into(),
            resume: false,
            crash_after: None,
        }
    }
}

/// The simulated agent's pass rate by condition and task — the demo's
/// ground truth, so its Evidence has differences to find: memory helps a
/// little on momentum and a lot on reversal.
pub const PASS_RATES: [(&str, &str, f64); 4] = [
    ("baseline", "momentum", 0.70),
    ("memory", "momentum", 0.80),
    ("baseline", "reversal", 0.35),
    ("memory", "reversal", 0.75),
];

/// Whether a simulated cell with these factors passes, and why not: a draw,
/// deterministic by the cell's factors (FNV-1a of `condition|task|phase|
/// seed|repetition`, mixed by splitmix64's finaliser so keys that differ in
/// one character spread, as a fraction of 2⁶⁴), under its [`PASS_RATES`] rate.
/// None for a cell without a condition and task in the table (it reports no
/// verdict, so it passes when it ends cleanly).
pub fn cell_verdict(factors: &serde_json::Map<String, Value>) -> Option<(bool, Option<String>)> {
    let (rate, key) = rate_and_key(factors)?;
    let task = runboard::console::matrix::value_text(factors.get("task")?);
    Some(if draw(&key) < rate {
        (true, None)
    } else if task == "reversal" {
        (false, Some("no factor cleared the admission threshold in time".into()))
    } else {
        (false, Some("the hold-out IC fell below the acceptance bar".into()))
    })
}

/// A cell's pass rate (its condition and task's) and its draw key.
fn rate_and_key(factors: &serde_json::Map<String, Value>) -> Option<(f64, String)> {
    let text = |k: &str| factors.get(k).map(runboard::console::matrix::value_text).unwrap_or_default();
    let (condition, task) = (text("condition"), text("task"));
    let rate = PASS_RATES.iter().find(|(c, t, _)| *c == condition && *t == task)?.2;
    Some((rate, [condition.as_str(), task.as_str(), &text("phase"), &text("seed"), &text("repetition")].join("|")))
}

/// A draw in [0, 1), deterministic by `key`.
fn draw(key: &str) -> f64 {
    runboard::basics::hash::mix64(runboard::basics::hash::fnv1a(key.as_bytes())) as f64 / 2f64.powi(64)
}

/// The checks a simulated cell makes of its factor, as samples.
pub const CHECKS: u32 = 6;

/// The demo's cells keep their checks as the samples of an eval log in
/// Inspect AI's JSON format (`{out}/inspect/`, where `runboard cell inspect`
/// keeps them: [`crate::cell::LOG_DIR`]), so the sample view and
/// Evidence's flips have samples to show: check `k` passes by its own draw
/// under the cell's rate — twins (the same task and seed under two
/// conditions) are asked the same checks. None for a cell without a rate.
pub fn checks_log(factors: &serde_json::Map<String, Value>, model: &str) -> Option<Value> {
    let (rate, key) = rate_and_key(factors)?;
    let task = runboard::console::matrix::value_text(factors.get("task")?);
    let seed = factors.get("seed").map(runboard::console::matrix::value_text).unwrap_or_default();
    let passes: Vec<bool> = (1..=CHECKS).map(|k| draw(&format!("{key}|check {k}")) < rate).collect();
    let samples: Vec<Value> = passes
        .iter()
        .zip(1..)
        .map(|(passed, k)| {
            let ic = if *passed { 0.021 + 0.001 * f64::from(k) } else { 0.004 + 0.001 * f64::from(k) };
            json!({
                "id": k, "epoch": 1,
                "input": format!("Check {k} of {task} (seed {seed}): propose a factor and test it on hold-out window {k}."),
                "target": "hold-out IC at least 0.02",
                "output": {"model": model, "completion": format!("factor f{k}: hold-out IC {ic:.3}")},
                "scores": {"holdout": {"value": if *passed { "C" } else { "I" }}},
                "error": null,
            })
        })
        .collect();
    let accuracy = passes.iter().filter(|p| **p).count() as f64 / f64::from(CHECKS);
    Some(json!({
        "version": 2, "status": "success",
        "eval": {"task": task, "model": format!("simulated/{model}"), "created": now()},
        "results": {"total_samples": CHECKS, "completed_samples": CHECKS,
            "scores": [{"name": "holdout", "scorer": "holdout", "metrics": {"accuracy": {"name": "accuracy", "value": accuracy}}}]},
        "samples": samples,
    }))
}

/// How a simulation ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SimEnd {
    Finished,
    Stopped,
    Crashed,
}

/// A small deterministic generator, so a seed reproduces a run.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

fn now() -> String {
    crate::system::clock::now().to_rfc3339()
}

struct Writer {
    dir: PathBuf,
    rng: Rng,
    calls: u32,
    /// Tokens its calls used (this attempt).
    tokens: u64,
}

/// A trial the planner may pick as a parent (what the simulated agent remembers).
#[derive(Clone)]
struct PoolEntry {
    trial: String,
    round: u32,
    t: Option<f64>,
    accepted: bool,
    factor: Option<String>,
    parents: Vec<String>,
}

impl PoolEntry {
    /// Adds the trial a ledger line records to the pool, in place of any earlier
    /// attempt of the same trial.
    fn remember(pool: &mut Vec<PoolEntry>, trial: &str, round: u32, line: &Value) {
        pool.retain(|p| p.trial != trial);
        pool.push(PoolEntry {
            trial: trial.to_owned(),
            round,
            t: line["t"].as_f64(),
            accepted: line["outcome"]["accepted"] == true,
            factor: line["factor"].as_str().map(str::to_owned),
            parents: runboard::basics::json::strings(&line["parents"]),
        });
    }
}

/// The simulated operator file: what the snapshot records of it. Two operators
/// aggregate within a session, one of them through a subclass.
const OPERATORS: [(&str, &str, &[&str]); 7] = [
    ("ts_mean", "TimeSeries", &[]),
    ("ts_rank", "TimeSeries", &[]),
    ("delta", "TimeSeries", &[]),
    ("rank", "CrossSection", &[]),
    ("zscore", "CrossSection", &[]),
    ("session_vwap", "SessionAggregation", &[]),
    ("session_range", "SessionRange", &["SessionAggregation"]),
];

const FIELDS: [&str; 4] = ["close", "volume", "high", "low"];

/// Writes a JSON line with `NaN` where the value holds the marker string, as a
/// Python writer does for a correlation over an empty pool.
fn with_raw_nan(value: &Value) -> serde_json::Result<Vec<u8>> {
    let text = serde_json::to_string(value)?;
    Ok(text.replace("\"__NaN__\"", "NaN").into_bytes())
}

impl Writer {
    fn append(&self, file: &str, value: &Value) -> std::io::Result<()> {
        let mut f = OpenOptions::new().create(true).append(true).open(self.dir.join(file))?;
        let mut line = with_raw_nan(value)?;
        line.push(b'\n');
        f.write_all(&line)
    }

    /// A random candidate expression: its code and the graph the gate builds of it.
    fn candidate(&mut self, intraday: bool) -> (String, Value) {
        let field = FIELDS[self.rng.range(0, FIELDS.len() as u64 - 1) as usize];
        let window = self.rng.range(3, 40);
        let inner = OPERATORS[self.rng.range(0, 2) as usize].0;
        let (code, graph) = if intraday {
            let session = OPERATORS[self.rng.range(5, 6) as usize].0;
            (
                format!("rank({inner}({session}({field}), {window}))"),
                json!({"op": "rank", "args": [{"op": inner, "args": [{"op": session, "args": [{"field": field}]}, window]}]}),
            )
        } else {
            let outer = OPERATORS[self.rng.range(3, 4) as usize].0;
            (
                format!("{outer}({inner}({field}, {window}))"),
                json!({"op": outer, "args": [{"op": inner, "args": [{"field": field}, window]}]}),
            )
        };
        (code, graph)
    }

    fn write_json(&self, sub: &str, file: &str, value: &Value) -> std::io::Result<()> {
        self.write_text(sub, file, &String::from_utf8_lossy(&serde_json::to_vec_pretty(value)?))
    }

    /// Writes `sub/file` whole (a reader sees the old file or the new, never half).
    fn write_text(&self, sub: &str, file: &str, text: &str) -> std::io::Result<()> {
        fs::create_dir_all(self.dir.join(sub))?;
        write_atomic(&self.dir.join(sub).join(file), text.as_bytes())
    }

    fn event(&self, event: &str, mut fields: Value) -> std::io::Result<()> {
        let obj = fields.as_object_mut().expect("event fields are an object");
        obj.insert("at".into(), json!(now()));
        obj.insert("event".into(), json!(event));
        self.append(files::EVENTS, &fields)
    }

    fn state(&self, rounds_written: u32, opened_at: &str, last_stop: Option<(&str, &str)>) -> std::io::Result<()> {
        let state = json!({
            "schema_version": 1,
            "rounds_written": rounds_written,
            "opened_at": opened_at,
            "updated_at": now(),
            "last_stop": last_stop.map(|(at, reason)| json!({"at": at, "reason": reason})),
        });
        write_atomic(&self.dir.join(files::STATE), &serde_json::to_vec_pretty(&state)?)
    }

    fn call(&mut self, round: u32, slot: u32, purpose: &str, model: &str) -> std::io::Result<u64> {
        self.calls += 1;
        let n = self.calls;
        self.event("call_start", json!({"call": n, "round": round, "slots": [slot], "purpose": purpose}))?;
        let prompt = self.rng.range(900, 4000);
        let completion = self.rng.range(150, 1400);
        let reasoning = self.rng.range(0, 900);
        let truncated = self.rng.unit() < 0.05;
        let record = json!({
            "schema_version": 1,
            "call": n,
            "model": model,
            "request": {"messages": [{"role": "user", "content": format!("Propose a factor for slot {slot} of round {round}.")}]},
            "reply": {"content": format!("rank(ts_mean(close, {}))", self.rng.range(3, 40)), "finish_reason": if truncated {"length"} else {"stop"}},
            "reasoning": format!("Round {round}, slot {slot}: momentum was saturated, so try a mean-reversion window."),
            "tokens": {"prompt": prompt, "completion": completion, "reasoning": reasoning},
            "truncated": truncated,
            "started_at": now(),
            "ended_at": now(),
        });
        fs::create_dir_all(self.dir.join(files::CALLS_DIR))?;
        write_atomic(
            &self.dir.join(files::CALLS_DIR).join(format!("{n:04}.json")),
            &serde_json::to_vec_pretty(&record)?,
        )?;
        let total = prompt + completion + reasoning;
        self.tokens += total;
        self.event("call_end", json!({"call": n, "round": round, "tokens": total, "truncated": truncated}))?;
        Ok(total)
    }
}

/// Where a run stands when the writer opens it: a fresh run at round 1, or
/// a resumed one read back from its files.
struct Opened {
    start_round: u32,
    /// What the agent remembers of earlier rounds (from the ledger on a resume).
    pool: Vec<PoolEntry>,
    /// Factors accepted so far.
    factors: u32,
    /// A resumed run's previous stop, kept in its state until it stops again.
    previous_stop: Option<(String, String)>,
    opened_at: String,
}

impl Writer {
    /// Opens the run: a new one writes its snapshot; a resumed one reads its
    /// state, calls and ledger back (dropping what the round it resumes had
    /// appended). Then the `open` or `resume` event, and a new run's state.
    fn open(&mut self, opts: &SimOptions) -> anyhow::Result<Opened> {
        let dir = self.dir.clone();
        let mut opened =
            Opened { start_round: 1, pool: Vec::new(), factors: 0, previous_stop: None, opened_at: String::new() };
        if opts.resume {
            let state: Value = fs::read(dir.join(files::STATE))
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or(Value::Null);
            opened.start_round = state["rounds_written"].as_u64().unwrap_or(0) as u32 + 1;
            if let (Some(at), Some(reason)) = (state["last_stop"]["at"].as_str(), state["last_stop"]["reason"].as_str())
            {
                opened.previous_stop = Some((at.to_owned(), reason.to_owned()));
            }
            self.calls = fs::read_dir(dir.join(files::CALLS_DIR)).map(|d| d.count() as u32).unwrap_or(0);
            let ledger = fs::read(dir.join(files::LEDGER)).unwrap_or_default();
            for line in ledger.split(|b| *b == b'\n') {
                let Ok(v) = runboard::basics::json::from_slice_lenient::<Value>(line) else { continue };
                let (Some(trial), Some(round)) = (v["trial"].as_str(), v["round"].as_u64()) else { continue };
                if round as u32 >= opened.start_round {
                    continue; // appended by the round the resume drops
                }
                opened.factors += u32::from(v["outcome"]["accepted"] == true);
                PoolEntry::remember(&mut opened.pool, trial, round as u32, &v);
            }
        } else {
            let operators: Vec<Value> = OPERATORS
                .iter()
                .map(|(name, class, bases)| json!({"name": name, "class": class, "bases": bases}))
                .collect();
            let snapshot = json!({
                "schema_version": 1,
                "name": dir.file_name().map(|n| n.to_string_lossy().into_owned()),
                "created_at": now(),
                "settings": {"model": opts.model, "rounds": opts.rounds, "slots_per_round": opts.slots,
                              "correlation_limit": 0.7, "admission": {"min_coverage": 0.8, "min_monotonicity": 0.6}},
                "operator_file": {"path": "operators.py", "operators": operators},
                "datasets": [{"name": "daily_bars", "intraday": false}, {"name": "bars_5m", "intraday": true}],
            });
            write_atomic(&dir.join(files::SNAPSHOT), &serde_json::to_vec_pretty(&snapshot)?)?;
        }
        opened.opened_at = now();
        let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default();
        let kind = if opts.resume { "resume" } else { "open" };
        self.event(
            kind,
            json!({"host": host, "pid": std::process::id(), "settings": {
                "model": opts.model, "correlation_limit": 0.7,
                "admission": {"min_coverage": 0.8, "min_monotonicity": 0.6}}}),
        )?;
        if !opts.resume {
            self.state(0, &opened.opened_at, None)?;
        }
        Ok(opened)
    }

    /// The round's trial graph: the pool's nodes as they were added, and the
    /// order the planner picks them in. None before anything is in the pool.
    fn write_graph(&self, round: u32, pool: &[PoolEntry], picks: &[String]) -> anyhow::Result<()> {
        if pool.is_empty() {
            return Ok(());
        }
        let nodes: Vec<Value> = pool
            .iter()
            .map(|p| {
                json!({"trial": p.trial, "round": p.round, "parents": p.parents,
                             "score": p.t.map_or(json!("__NaN__"), |t| json!((t * 100.0).round() / 100.0)),
                             "accepted": p.accepted})
            })
            .collect();
        let graph = json!({"schema_version": 1, "round": round, "nodes": nodes, "pick_order": picks});
        fs::create_dir_all(self.dir.join(files::TRIAL_GRAPH_DIR))?;
        let mut bytes = with_raw_nan(&graph)?;
        bytes.push(b'\n');
        write_atomic(&self.dir.join(files::TRIAL_GRAPH_DIR).join(format!("round_{round:02}.json")), &bytes)?;
        Ok(())
    }

    /// Scores a parsed candidate and judges it the way a campaign does: the
    /// gate and the evaluator refuse before a trial is scored (no t, no
    /// correlation); admission checks the correlation limit, then decile
    /// monotonicity, then the t threshold. Fills `line` and counts an
    /// admitted factor in `factors`.
    fn judge(&mut self, line: &mut Value, round: u32, threshold: f64, factors: &mut u32) {
        let t = (self.rng.unit() * 6.0) - 1.0;
        let train_ic = (self.rng.unit() - 0.3) * 0.08;
        // Admission reads the factor in the direction of its training IC.
        let t = if train_ic < 0.0 { -t } else { t };
        // With no factor admitted yet, the correlation is over an empty pool: NaN.
        let corr = if *factors == 0 { f64::NAN } else { self.rng.unit() };
        // Scored candidates cover enough (the evaluator refuses the others);
        // admission still requires decile monotonicity.
        let coverage = 0.8 + self.rng.unit() * 0.2;
        let monotonicity = 0.4 + self.rng.unit() * 0.6;
        let (outcome, scored) = match self.rng.range(0, 9) {
            0 => {
                let f = self.rng.range(1, 9);
                let text = match self.rng.range(0, 3) {
                    0 => format!("rewrite of factor f{f}"),
                    1 => format!("refinement of parameters only of f{f}"),
                    2 => format!("shared subtree with f{f} and f{}", self.rng.range(1, 9)),
                    _ if round > 1 => format!("duplicate of own earlier candidate r{:02}s1", round - 1),
                    _ => format!("rewrite of factor f{f}"),
                };
                (json!({"stage": "gate", "accepted": false, "refused": text}), false)
            }
            1 => (
                json!({"stage": "evaluator", "accepted": false, "refused": format!("coverage {:.2} below 0.80", self.rng.unit() * 0.8)}),
                false,
            ),
            // Admission: the correlation limit first, then the t threshold.
            _ if !corr.is_nan() && corr > 0.7 => {
                let f = self.rng.range(1, 9);
                (
                    json!({"stage": "admission", "accepted": false, "refused": format!("correlation {corr:.2} with f{f} above limit 0.70")}),
                    true,
                )
            }
            _ if monotonicity < 0.6 => (
                json!({"stage": "admission", "accepted": false, "refused": format!("decile monotonicity {monotonicity:.2} below 0.60")}),
                true,
            ),
            _ if t.abs() > threshold => (json!({"stage": "admission", "accepted": true}), true),
            _ => (
                json!({"stage": "admission", "accepted": false, "refused": format!("t {:.2} below threshold {threshold:.2}", t.abs())}),
                true,
            ),
        };
        if scored {
            line["t"] = json!(t);
            line["train_ic"] = json!(train_ic);
            line["max_abs_corr"] = if corr.is_nan() { json!("__NaN__") } else { json!(corr) };
            line["coverage"] = json!(coverage);
            line["monotonicity"] = json!(monotonicity);
            if outcome["accepted"] == true {
                *factors += 1;
                line["factor"] = json!(format!("f{factors}"));
                line["t_threshold"] = json!(threshold);
            }
        } else {
            line["t"] = Value::Null;
        }
        line["outcome"] = outcome;
    }

    /// The agent's memory notes before the next round.
    fn write_memory(&self, round: u32, accepted: &[&Value]) -> std::io::Result<()> {
        let mut notes = format!("# Memory before round {}\n\n- mean reversion works on short windows\n", round + 1);
        if round >= 2 {
            notes += "- volume-weighted signals collide with f1\n";
        }
        for a in accepted {
            notes +=
                &format!("- {} accepted: {}\n", a["factor"].as_str().unwrap_or("?"), a["code"].as_str().unwrap_or("?"));
        }
        notes += &format!("- round {round} accepted {} factors\n", accepted.len());
        self.write_text(files::MEMORY_DIR, &format!("round_{:02}.md", round + 1), &notes)
    }

    /// An early report, written after round 2 — before the contribution
    /// table and the selection flag existed.
    fn write_early_report(&self, pool: &[PoolEntry]) -> std::io::Result<()> {
        let factors: Vec<Value> = pool
            .iter()
            .filter(|p| p.accepted)
            .map(
                |p| json!({"factor": p.factor.as_deref().unwrap_or(&p.trial), "trial": p.trial, "ic": 0.021, "t": p.t}),
            )
            .collect();
        self.write_json(
            files::ACCEPTANCE_DIR,
            "validation.json",
            &json!({"segment": "validation", "written_at": now(), "factors": factors, "metrics": {"ic": 0.018}}),
        )
    }

    /// The final reports: a validation report with the contribution table
    /// and the selection flag, and a hold-out report recording the hold-out
    /// lock's opens.
    fn write_final_reports(&mut self, pool: &[PoolEntry]) -> std::io::Result<()> {
        let accepted: Vec<&PoolEntry> = pool.iter().filter(|p| p.accepted).collect();
        let share = 1.0 / accepted.len().max(1) as f64;
        let report_factors: Vec<Value> = accepted
            .iter()
            .enumerate()
            .map(|(i, p)| json!({"factor": p.factor.as_deref().unwrap_or(&p.trial), "trial": p.trial, "ic": 0.02 + 0.001 * i as f64, "t": p.t, "selected": i % 4 != 3}))
            .collect();
        let contribution: Vec<Value> = accepted
            .iter()
            .map(|p| json!({"factor": p.factor.as_deref().unwrap_or(&p.trial), "share": share}))
            .collect();
        let digest = format!("{:08x}", self.rng.next() as u32);
        self.write_json(
            files::ACCEPTANCE_DIR,
            &format!("validation_{digest}.json"),
            &json!({"schema_version": 2, "segment": "validation", "digest": digest, "written_at": now(),
                    "factors": report_factors, "contribution": contribution, "metrics": {"ic": 0.024, "sharpe": 1.1}}),
        )?;
        self.write_json(
            files::ACCEPTANCE_DIR,
            &format!("holdout_{digest}.json"),
            &json!({"schema_version": 2, "segment": "holdout", "digest": digest, "written_at": now(),
                    "factors": report_factors, "contribution": contribution, "metrics": {"ic": 0.015},
                    "holdout_opens": [{"at": now(), "by": "runboard simulate-run", "reason": "final evaluation"}]}),
        )
    }

    /// Run as a batch's cell (the exec runner sets RUNBOARD_CELL_DIR): what
    /// the runner reads from `{out}/result.json` — the tokens this attempt
    /// used, accepted factors per round as its score, and whether it passed
    /// (by its factors, `cell_verdict`) — and the cell's checks as an
    /// Inspect-format log.
    fn write_cell_result(&self, opts: &SimOptions, accepted: u32) -> anyhow::Result<()> {
        if std::env::var_os("RUNBOARD_CELL_DIR").is_none() {
            return Ok(());
        }
        let score = f64::from(accepted) / f64::from(opts.rounds.max(1));
        let factors: serde_json::Map<String, Value> =
            std::env::var("RUNBOARD_FACTORS").ok().and_then(|f| serde_json::from_str(&f).ok()).unwrap_or_default();
        let mut result = json!({"tokens": self.tokens, "score": score});
        if let Some((passed, reason)) = cell_verdict(&factors) {
            result["passed"] = json!(passed);
            if let Some(r) = reason {
                result["reason"] = json!(r);
            }
        }
        write_atomic(&self.dir.join("result.json"), &serde_json::to_vec(&result)?)?;
        if let Some(log) = checks_log(&factors, &opts.model) {
            let logs = self.dir.join(crate::cell::LOG_DIR);
            fs::create_dir_all(&logs)?;
            let name = format!(
                "{}_{}_simulated.json",
                now().replace(':', "-"),
                log["eval"]["task"].as_str().unwrap_or("task")
            );
            write_atomic(&logs.join(name), &serde_json::to_vec(&log)?)?;
        }
        Ok(())
    }
}

/// Writes (or continues) a run in `dir` until it is finished, `stop` resolves, or
/// the configured crash point.
pub async fn simulate_run(
    dir: &Path,
    opts: &SimOptions,
    stop: impl std::future::Future<Output = ()>,
) -> anyhow::Result<SimEnd> {
    tokio::pin!(stop);
    fs::create_dir_all(dir)?;
    let mut w = Writer {
        dir: dir.to_path_buf(),
        rng: Rng(opts.seed.max(1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1),
        calls: 0,
        tokens: 0,
    };
    let Opened { start_round, mut pool, mut factors, previous_stop, opened_at } = w.open(opts)?;
    let mut rounds_written = start_round - 1;

    // Waits one step; on a stop request, records the stop the way a campaign does
    // (a stop event, then the state with its last stop) and ends the run.
    macro_rules! pause {
        () => {
            if !opts.step.is_zero() {
                tokio::select! {
                    _ = tokio::time::sleep(opts.step) => {}
                    _ = &mut stop => {
                        let at = now();
                        w.event("stop", json!({"reason": "stopped by signal"}))?;
                        w.state(rounds_written, &opened_at, Some((&at, "stopped by signal")))?;
                        return Ok(SimEnd::Stopped);
                    }
                }
            }
        };
    }
    for round in start_round..=opts.rounds {
        // The t threshold rises with the number of trials judged so far.
        let threshold = 2.5 + 0.05 * f64::from(round - 1);
        w.event("phase", json!({"phase": "plan", "round": round}))?;
        // The planner ranks the scored pool by t and picks parents in that order.
        let mut ranked: Vec<&PoolEntry> = pool.iter().filter(|p| p.t.is_some()).collect();
        ranked.sort_by(|a, b| b.t.map(f64::abs).partial_cmp(&a.t.map(f64::abs)).unwrap_or(std::cmp::Ordering::Equal));
        let picks: Vec<String> = ranked.iter().take(opts.slots as usize).map(|p| p.trial.clone()).collect();
        let slot_parents: Vec<Vec<String>> = (0..opts.slots as usize)
            .map(|i| if picks.is_empty() || i % 3 == 2 { Vec::new() } else { vec![picks[i % picks.len()].clone()] })
            .collect();
        w.write_graph(round, &pool, &picks)?;
        let plan: Vec<Value> =
            slot_parents.iter().enumerate().map(|(i, p)| json!({"slot": i + 1, "parents": p})).collect();
        w.event("plan", json!({"round": round, "slots": plan}))?;
        pause!();
        w.event("phase", json!({"phase": "propose", "round": round}))?;
        let mut trials = Vec::new();
        for slot in 1..=opts.slots {
            let name = format!("r{round:02}s{slot}");
            let parents = slot_parents[slot as usize - 1].clone();
            // One in five proposals does not parse at first and is asked again.
            let attempts = if w.rng.unit() < 0.2 { 2 } else { 1 };
            for attempt in 1..=attempts {
                let tokens = w.call(round, slot, "propose", &opts.model)?;
                pause!();
                let intraday = w.rng.unit() < 0.25;
                let (code, graph) = w.candidate(intraday);
                let mut line = json!({"round": round, "slot": slot, "trial": name, "attempt": attempt,
                                      "parents": parents, "code": code, "tokens": tokens});
                if attempt < attempts {
                    let bad = &code[..code.len() / 2];
                    line["outcome"] =
                        json!({"stage": "gate", "accepted": false, "refused": format!("reply '{bad}' does not parse")});
                    line["t"] = Value::Null;
                } else {
                    line["graph"] = graph;
                    w.judge(&mut line, round, threshold, &mut factors);
                }
                trials.push(line);
            }
        }
        w.event("phase", json!({"phase": "admit", "round": round}))?;
        w.event("admission", json!({"round": round, "t_threshold": threshold, "correlation_limit": 0.7}))?;
        if opts.crash_after == Some(round.saturating_sub(1)) && round > 1 {
            // A crash mid-append: half a line, no newline, no state, no stop.
            let mut f = OpenOptions::new().create(true).append(true).open(dir.join(files::LEDGER))?;
            let line = serde_json::to_vec(&trials[0])?;
            f.write_all(&line[..line.len() / 2])?;
            return Ok(SimEnd::Crashed);
        }
        for trial in &trials {
            w.append(files::LEDGER, trial)?;
        }
        for t in &trials {
            if let Some(name) = t["trial"].as_str() {
                PoolEntry::remember(&mut pool, name, round, t);
            }
        }
        let accepted: Vec<&Value> = trials.iter().filter(|t| t["outcome"]["accepted"] == true).collect();
        w.write_memory(round, &accepted)?;
        rounds_written = round;
        // A resumed run keeps its previous stop in the state until it stops again.
        w.state(rounds_written, &opened_at, previous_stop.as_ref().map(|(a, r)| (a.as_str(), r.as_str())))?;
        if round == 2.min(opts.rounds) {
            w.write_early_report(&pool)?;
        }
        pause!();
    }
    w.write_final_reports(&pool)?;
    let at = now();
    w.event("stop", json!({"reason": "finished all rounds"}))?;
    w.state(rounds_written, &opened_at, Some((&at, "finished all rounds")))?;
    w.write_cell_result(opts, factors)?;
    Ok(SimEnd::Finished)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn factors(condition: &str, task: &str, phase: &str, seed: i64) -> serde_json::Map<String, Value> {
        json!({"condition": condition, "task": task, "phase": phase, "seed": seed, "repetition": 0})
            .as_object()
            .cloned()
            .unwrap()
    }

    /// A cell's checks are an eval log the sample view reads (Inspect's JSON
    /// format); twins are asked the same checks, and the demo's reversal
    /// twins (memory against the baseline, seed 1) have flips to show.
    #[test]
    fn a_cells_checks_are_an_inspect_format_log_with_flips_between_twins() {
        let read = |c: &str| {
            let log = checks_log(&factors(c, "reversal", "explore", 1), "qwen3-32b").unwrap();
            let mut rows = Vec::new();
            runboard::harness::samples::read_json_log(serde_json::to_vec(&log).unwrap().as_slice(), &mut |r| {
                rows.push(r)
            })
            .unwrap();
            rows
        };
        let (memory, baseline) = (read("memory"), read("baseline"));
        assert_eq!(memory.len(), CHECKS as usize);
        assert_eq!(
            memory.iter().map(|r| &r.input).collect::<Vec<_>>(),
            baseline.iter().map(|r| &r.input).collect::<Vec<_>>()
        );
        assert!(memory[0].input.starts_with("Check 1 of reversal (seed 1)"), "{:?}", memory[0]);
        assert!(memory.iter().all(|r| r.scorer.as_deref() == Some("holdout") && r.passed.is_some()));
        let there = runboard::harness::samples::verdicts_there(&memory, &baseline);
        assert!(memory.iter().zip(&there).any(|(m, b)| runboard::harness::samples::flipped(m.passed, *b)));
        assert_eq!(checks_log(&factors("other", "reversal", "explore", 1), "m"), None, "no rate, no checks");
    }

    /// The demo's history (explore, seeds 1–4) as the draws fall: memory
    /// passes all four on both tasks; the baseline 3 of 4 on momentum and 1
    /// of 4 on reversal — so reversal's difference is settled, momentum's open.
    #[test]
    fn the_simulated_verdicts_depend_on_condition_and_task_and_are_deterministic() {
        let passes = |c: &str, t: &str| -> Vec<bool> {
            (1..=4).map(|seed| cell_verdict(&factors(c, t, "explore", seed)).unwrap().0).collect()
        };
        assert_eq!(passes("baseline", "momentum"), [true, false, true, true]);
        assert_eq!(passes("memory", "momentum"), [true; 4]);
        assert_eq!(passes("baseline", "reversal"), [false, false, false, true]);
        assert_eq!(passes("memory", "reversal"), [true; 4]);
        assert_eq!(
            cell_verdict(&factors("baseline", "reversal", "explore", 1)),
            Some((false, Some("no factor cleared the admission threshold in time".into())))
        );
        assert_eq!(
            cell_verdict(&factors("baseline", "momentum", "explore", 2)).unwrap().1.as_deref(),
            Some("the hold-out IC fell below the acceptance bar")
        );
        assert_eq!(cell_verdict(&factors("other", "momentum", "explore", 1)), None, "not in the table: no verdict");
        assert_eq!(cell_verdict(&serde_json::Map::new()), None);
    }
}
