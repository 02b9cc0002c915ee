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

use crate::atomic::write_atomic;

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
    crate::clock::now().to_rfc3339()
}

struct Writer {
    dir: PathBuf,
    rng: Rng,
    calls: u32,
}

impl Writer {
    fn append(&self, file: &str, value: &Value) -> std::io::Result<()> {
        let mut f = OpenOptions::new().create(true).append(true).open(self.dir.join(file))?;
        let mut line = serde_json::to_vec(value)?;
        line.push(b'\n');
        f.write_all(&line)
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
        self.event("call_end", json!({"call": n, "round": round, "tokens": total, "truncated": truncated}))?;
        Ok(total)
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
    let mut w =
        Writer { dir: dir.to_path_buf(), rng: Rng(opts.seed.max(1).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1), calls: 0 };
    let mut start_round = 1;
    if opts.resume {
        let state: Value =
            fs::read(dir.join(files::STATE)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null);
        start_round = state["rounds_written"].as_u64().unwrap_or(0) as u32 + 1;
        w.calls = fs::read_dir(dir.join(files::CALLS_DIR)).map(|d| d.count() as u32).unwrap_or(0);
    } else {
        let snapshot = json!({
            "schema_version": 1,
            "name": dir.file_name().map(|n| n.to_string_lossy().into_owned()),
            "created_at": now(),
            "settings": {"model": opts.model, "rounds": opts.rounds, "slots_per_round": opts.slots,
                          "correlation_limit": 0.7, "admission": {"min_coverage": 0.8, "min_monotonicity": 0.6}},
            "operator_file": "operators.py",
            "datasets": [{"name": "daily_bars", "intraday": false}],
        });
        write_atomic(&dir.join(files::SNAPSHOT), &serde_json::to_vec_pretty(&snapshot)?)?;
    }
    let opened_at = now();
    let host = nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default();
    let kind = if opts.resume { "resume" } else { "open" };
    w.event(
        kind,
        json!({"host": host, "pid": std::process::id(), "settings": {"model": opts.model, "correlation_limit": 0.7}}),
    )?;
    if !opts.resume {
        w.state(0, &opened_at, None)?;
    }
    let mut previous_stop: Option<(String, String)> = None;
    if opts.resume {
        let state: Value =
            fs::read(dir.join(files::STATE)).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or(Value::Null);
        if let (Some(at), Some(reason)) = (state["last_stop"]["at"].as_str(), state["last_stop"]["reason"].as_str()) {
            previous_stop = Some((at.to_owned(), reason.to_owned()));
        }
    }

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
        w.event("phase", json!({"phase": "plan", "round": round}))?;
        let slots: Vec<u32> = (1..=opts.slots).collect();
        w.event("plan", json!({"round": round, "slots": slots}))?;
        pause!();
        w.event("phase", json!({"phase": "propose", "round": round}))?;
        let mut trials = Vec::new();
        for slot in 1..=opts.slots {
            let tokens = w.call(round, slot, "propose", &opts.model)?;
            pause!();
            let t = (w.rng.unit() * 6.0) - 1.0;
            let corr = if w.rng.unit() < 0.1 { f64::NAN } else { w.rng.unit() };
            // The gate and the evaluator refuse before a trial is scored: no t, no correlation.
            let (outcome, scored) = match w.rng.range(0, 9) {
                0 => {
                    let f = w.rng.range(1, 9);
                    let text = match w.rng.range(0, 3) {
                        0 => format!("rewrite of factor f{f}"),
                        1 => format!("refinement of parameters only of f{f}"),
                        2 => format!("shared subtree with f{f} and f{}", w.rng.range(1, 9)),
                        _ => format!("duplicate of own earlier candidate r{:02}s1", round.saturating_sub(1).max(1)),
                    };
                    (json!({"stage": "gate", "refused": text}), false)
                }
                1 => {
                    let coverage = w.rng.unit() * 0.8;
                    (json!({"stage": "evaluator", "refused": format!("coverage {coverage:.2} below 0.80")}), false)
                }
                // Admission: the correlation limit first, then the t threshold.
                _ if !corr.is_nan() && corr > 0.7 => {
                    let f = w.rng.range(1, 9);
                    (
                        json!({"stage": "admission", "refused": format!("correlation {corr:.2} with f{f} above limit 0.70")}),
                        true,
                    )
                }
                _ if t > 2.5 => (json!({"stage": "admission", "accepted": true}), true),
                _ => (json!({"stage": "admission", "refused": format!("t {t:.2} below threshold 2.50")}), true),
            };
            let (t, corr) = if scored {
                (json!(t), if corr.is_nan() { Value::Null } else { json!(corr) })
            } else {
                (Value::Null, Value::Null)
            };
            trials.push(json!({"round": round, "slot": slot, "trial": format!("r{round:02}s{slot}"), "attempt": 1,
                                "t": t, "max_abs_corr": corr,
                                "tokens": tokens, "outcome": outcome}));
        }
        w.event("phase", json!({"phase": "admit", "round": round}))?;
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
        fs::create_dir_all(dir.join("memory"))?;
        fs::write(dir.join("memory").join(format!("round_{:02}.md", round + 1)),
                  format!("# Memory before round {}\n\n- mean reversion works on short windows\n- round {round} accepted {} factors\n",
                          round + 1, trials.iter().filter(|t| t["outcome"]["accepted"] == true).count()))?;
        rounds_written = round;
        // A resumed run keeps its previous stop in the state until it stops again.
        w.state(rounds_written, &opened_at, previous_stop.as_ref().map(|(a, r)| (a.as_str(), r.as_str())))?;
        pause!();
    }
    let at = now();
    w.event("stop", json!({"reason": "finished all rounds"}))?;
    w.state(rounds_written, &opened_at, Some((&at, "finished all rounds")))?;
    Ok(SimEnd::Finished)
}
