//! Inspect AI as a cell: what `runboard cell inspect` decides, as functions of
//! Inspect's eval logs (its JSON log format: `inspect eval --log-format json`).
//!
//! A cell is one `inspect eval` of one task for one model. Its logs go to the
//! cell's own folder, so a resumed cell finds the log its stopped attempt
//! left (status `cancelled`: Inspect saves the samples it finished when it is
//! interrupted) and hands it to `inspect eval-retry`, which runs only the
//! samples that did not finish. When the eval ends, its log becomes the
//! cell's `result.json` (the cell contract): the headline metric as `score`,
//! accuracy as samples passed of samples scored, tokens from the model usage,
//! and Inspect's error as the failure's reason.
//!
//! Only the log's header fields are read (`status`, `eval`, `results`,
//! `stats`, `error`) and, of `samples`, how many there are; every field is
//! optional, so a log from another Inspect version yields what it has.

use std::collections::BTreeMap;

use serde::de::IgnoredAny;
use serde::Deserialize;

use crate::drive::result::{CellResult, Samples, REASON_MAX};

/// An eval log's `status`: closed, with what another version may write kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogStatus {
    /// Written when the eval starts; still so if it was killed outright.
    Started,
    Success,
    /// Interrupted (our stop reaches Inspect as an interrupt): the samples
    /// it finished are in the log.
    Cancelled,
    Error,
    Other(String),
}

impl<'de> Deserialize<'de> for LogStatus {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        Ok(match s.as_str() {
            "started" => Self::Started,
            "success" => Self::Success,
            "cancelled" => Self::Cancelled,
            "error" => Self::Error,
            _ => Self::Other(s),
        })
    }
}

/// The fields of an eval log runboard reads.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct LogHeader {
    #[serde(default)]
    pub status: Option<LogStatus>,
    #[serde(default)]
    pub eval: Option<EvalInfo>,
    #[serde(default)]
    pub results: Option<EvalResults>,
    #[serde(default)]
    pub stats: Option<EvalStats>,
    #[serde(default)]
    pub error: Option<EvalError>,
    /// One entry per sample the log holds (their content is skipped).
    #[serde(default)]
    pub samples: Option<Vec<SampleHead>>,
}

/// Of a sample, only whether it ended in an error: a cancelled eval's log
/// holds the samples it finished and those it was running when interrupted
/// (error `CancelledError()`), which a retry runs again.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct SampleHead {
    #[serde(default)]
    pub error: Option<IgnoredAny>,
    /// Its scores by scorer: only each one's value is kept.
    #[serde(default)]
    pub scores: Option<BTreeMap<String, ScoreHead>>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct ScoreHead {
    #[serde(default)]
    pub value: serde_json::Value,
}

/// A score's value as a number, as Inspect's `value_to_float` reads it:
/// `C` correct 1, `I` incorrect 0, `P` partial 0.5, `N` no answer 0,
/// numbers and booleans as they are; anything else is not a number.
pub fn score_value(v: &serde_json::Value) -> Option<f64> {
    match v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
        serde_json::Value::String(s) => match s.trim().to_ascii_uppercase().as_str() {
            "C" | "Y" | "YES" | "TRUE" => Some(1.0),
            "I" | "N" | "NO" | "FALSE" => Some(0.0),
            "P" => Some(0.5),
            other => other.parse::<f64>().ok(),
        },
        _ => None,
    }
}

impl LogHeader {
    /// The samples the log holds that finished without an error: what a
    /// retry keeps.
    pub fn finished_samples(&self) -> u64 {
        self.samples.as_ref().map_or(0, |s| s.iter().filter(|s| s.error.is_none()).count() as u64)
    }

    /// The finished samples' scores by the first scorer (the log's first,
    /// else each sample's first by name): how many were scored, and their sum.
    pub fn kept_scores(&self) -> (u64, f64) {
        let first = self.results.as_ref().and_then(|r| r.scores.first()).map(|s| s.name.as_str());
        let mut out = (0, 0.0);
        for s in self.samples.iter().flatten().filter(|s| s.error.is_none()) {
            let Some(scores) = &s.scores else { continue };
            let v = first.and_then(|f| scores.get(f)).or_else(|| scores.values().next());
            if let Some(x) = v.and_then(|v| score_value(&v.value)) {
                out.0 += 1;
                out.1 += x;
            }
        }
        out
    }
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct EvalInfo {
    #[serde(default)]
    pub task: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct EvalResults {
    #[serde(default)]
    pub total_samples: Option<u64>,
    #[serde(default)]
    pub completed_samples: Option<u64>,
    #[serde(default)]
    pub scores: Vec<EvalScore>,
    /// Which score and metric Inspect shows first (newer versions).
    #[serde(default)]
    pub headline: Option<Headline>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct EvalScore {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub scored_samples: Option<u64>,
    #[serde(default)]
    pub metrics: BTreeMap<String, Metric>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Metric {
    #[serde(default)]
    pub value: Option<f64>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Headline {
    #[serde(default)]
    pub score: Option<String>,
    #[serde(default)]
    pub metric: Option<String>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct EvalStats {
    #[serde(default)]
    pub model_usage: BTreeMap<String, Usage>,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct Usage {
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    #[serde(default)]
    pub total_tokens: u64,
}

#[derive(Debug, Clone, Default, Deserialize)]
pub struct EvalError {
    #[serde(default)]
    pub message: String,
}

/// What the adapter does on starting a cell, from the logs already in its
/// folder (file name, header), in any order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// No log yet: a fresh `inspect eval`.
    Eval,
    /// The newest log did not finish: `inspect eval-retry` it; `kept` of its
    /// samples finished and are not run again.
    Retry { log: String, kept: u64, total: Option<u64> },
    /// The newest log finished (an earlier attempt ended before reporting):
    /// report it without running anything.
    Report { log: String },
}

/// The latest attempt's log: Inspect names logs after their start time
/// (`2026-12-02T09-41-00-00-00_<task>_<id>.json`), so the greatest name.
pub fn newest(logs: &[(String, LogHeader)]) -> Option<&(String, LogHeader)> {
    logs.iter().max_by(|a, b| a.0.cmp(&b.0))
}

/// The newest log decides.
pub fn start(logs: &[(String, LogHeader)]) -> Start {
    let Some((name, h)) = newest(logs) else { return Start::Eval };
    match h.status {
        Some(LogStatus::Success) => Start::Report { log: name.clone() },
        _ => Start::Retry {
            log: name.clone(),
            kept: h.finished_samples(),
            total: h.results.as_ref().and_then(|r| r.total_samples),
        },
    }
}

/// How the cell ends, from its final log.
#[derive(Debug, Clone, PartialEq)]
pub struct Ending {
    pub result: CellResult,
    /// `done` (exit 0) or not (exit 1).
    pub done: bool,
}

/// The cell's report from its final log. A `success` log is `done`; any
/// other status fails the cell with Inspect's error as the reason.
pub fn ending(h: &LogHeader) -> Ending {
    let usage = h.stats.as_ref().map(|s| s.model_usage.values().collect::<Vec<_>>()).unwrap_or_default();
    let sum = |f: fn(&Usage) -> u64| (!usage.is_empty()).then(|| usage.iter().map(|u| f(u)).sum::<u64>());
    let mut result = CellResult {
        tokens: sum(|u| if u.total_tokens > 0 { u.total_tokens } else { u.input_tokens + u.output_tokens }),
        input_tokens: sum(|u| u.input_tokens),
        output_tokens: sum(|u| u.output_tokens),
        ..CellResult::default()
    };
    match &h.status {
        Some(LogStatus::Success) => {
            if let Some((metric, value, scored)) = headline(h) {
                result.score = Some(value);
                if metric == "accuracy" {
                    result.samples = scored
                        .filter(|&n| n > 0)
                        .map(|n| Samples { passed: ((value * n as f64).round() as u64).min(n), total: n });
                }
            }
            Ending { result, done: true }
        }
        status => {
            let said = h.error.as_ref().map(|e| first_line(&e.message)).filter(|m| !m.is_empty());
            result.reason = Some(match (status, said) {
                (_, Some(m)) => format!("inspect: {m}"),
                (Some(LogStatus::Cancelled), None) => "inspect: the eval was cancelled".into(),
                (Some(LogStatus::Started), None) => "inspect: the eval ended without finishing its log".into(),
                (Some(LogStatus::Other(s)), None) => format!("inspect: the eval ended with status {s:?}"),
                _ => "inspect: the eval log has no status".into(),
            });
            Ending { result, done: false }
        }
    }
}

/// The headline metric: the one the log names, else the first score's
/// `accuracy`, else its first metric — with the samples it scored.
fn headline(h: &LogHeader) -> Option<(String, f64, Option<u64>)> {
    let r = h.results.as_ref()?;
    let named = r.headline.as_ref().and_then(|hl| {
        let score = r.scores.iter().find(|s| Some(&s.name) == hl.score.as_ref())?;
        let metric = hl.metric.as_ref()?;
        Some((score, metric.clone()))
    });
    let (score, metric) = match named {
        Some(x) => x,
        None => {
            let score = r.scores.first()?;
            let metric = if score.metrics.contains_key("accuracy") {
                "accuracy".to_owned()
            } else {
                score.metrics.keys().next()?.clone()
            };
            (score, metric)
        }
    };
    let value = score.metrics.get(&metric)?.value.filter(|v| v.is_finite())?;
    Some((metric, value, score.scored_samples))
}

fn first_line(s: &str) -> String {
    let line = s.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or("");
    let mut end = line.len().min(REASON_MAX);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    line[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(json: &str) -> LogHeader {
        serde_json::from_str(json).unwrap()
    }

    /// Cut from a real log of `inspect eval` (inspect-ai 0.3.285).
    const SUCCESS: &str = r#"{"version": 2, "status": "success",
        "eval": {"task": "arithmetic", "model": "openai/standin-hasty", "config": {"epochs": 1}},
        "results": {"total_samples": 6, "completed_samples": 6, "scores": [{"name": "match", "scorer": "match",
          "scored_samples": 6, "unscored_samples": 0, "params": {"location": "end"},
          "metrics": {"accuracy": {"name": "accuracy", "value": 0.3333333333333333, "params": {}},
                      "stderr": {"name": "stderr", "value": 0.210818510677892, "params": {}}}}],
          "headline": {"scorer": "match", "score": "match", "metric": "accuracy"}},
        "stats": {"started_at": "2026-12-02T09:40:47+00:00", "model_usage":
          {"openai/standin-hasty": {"input_tokens": 120, "output_tokens": 18, "total_tokens": 138}}},
        "samples": [{"id": 1, "scores": {"match": {"value": "I"}}}, {"id": 2}]}"#;

    #[test]
    fn a_successful_eval_reports_its_accuracy_as_samples_and_its_tokens() {
        let e = ending(&header(SUCCESS));
        assert!(e.done);
        assert_eq!(e.result.score, Some(1.0 / 3.0));
        assert_eq!(e.result.samples, Some(Samples { passed: 2, total: 6 }));
        assert_eq!((e.result.tokens, e.result.input_tokens, e.result.output_tokens), (Some(138), Some(120), Some(18)));
        assert_eq!(e.result.reason, None);
    }

    #[test]
    fn an_eval_that_raised_fails_with_inspects_reason() {
        let e = ending(&header(
            r#"{"status": "error", "error": {"message": "ValueError('the grader cannot read this answer')",
                "traceback": "Traceback (most recent call last):\n  ..."},
                "stats": {"model_usage": {"openai/m": {"input_tokens": 20, "output_tokens": 3, "total_tokens": 23}}}}"#,
        ));
        assert!(!e.done);
        assert_eq!(e.result.reason.as_deref(), Some("inspect: ValueError('the grader cannot read this answer')"));
        assert_eq!(e.result.tokens, Some(23));
        assert_eq!(e.result.samples, None);
        let e = ending(&header(r#"{"status": "started"}"#));
        assert_eq!(e.result.reason.as_deref(), Some("inspect: the eval ended without finishing its log"));
        assert_eq!(e.result.tokens, None, "no usage recorded: no tokens made up");
    }

    #[test]
    fn without_a_headline_the_first_scores_accuracy_counts() {
        let e = ending(&header(
            r#"{"status": "success", "results": {"scores": [{"name": "includes", "scored_samples": 4,
                "metrics": {"mean": {"value": 0.1}, "accuracy": {"value": 0.75}}}]}}"#,
        ));
        assert_eq!((e.result.score, e.result.samples), (Some(0.75), Some(Samples { passed: 3, total: 4 })));
        // A metric that is not accuracy is a score, not a count of samples.
        let e = ending(&header(
            r#"{"status": "success", "results": {"scores": [{"name": "s", "metrics": {"mean": {"value": 0.4}}}]}}"#,
        ));
        assert_eq!((e.result.score, e.result.samples), (Some(0.4), None));
    }

    #[test]
    fn the_newest_log_decides_how_a_cell_starts() {
        assert_eq!(start(&[]), Start::Eval);
        // Cut from a real cancelled log: two samples finished, the third was
        // running when the eval was interrupted.
        let cancelled = header(
            r#"{"status": "cancelled", "results": null, "samples": [{"id": 1, "error": null}, {"id": 2},
                {"id": 3, "error": {"message": "CancelledError()", "traceback": "..."}}]}"#,
        );
        let logs = vec![
            ("2026-12-02T09-41-00-00-00_reverse_a.json".to_owned(), header(r#"{"status": "error"}"#)),
            ("2026-12-02T09-42-26-00-00_reverse_b.json".to_owned(), cancelled),
        ];
        assert_eq!(
            start(&logs),
            Start::Retry { log: "2026-12-02T09-42-26-00-00_reverse_b.json".into(), kept: 2, total: None }
        );
        let mut done = logs.clone();
        done.push(("2026-12-02T09-43-00-00-00_reverse_b.json".into(), header(SUCCESS)));
        assert_eq!(start(&done), Start::Report { log: "2026-12-02T09-43-00-00-00_reverse_b.json".into() });
    }

    #[test]
    fn an_unknown_status_is_kept_and_fails_the_cell_by_name() {
        let e = ending(&header(r#"{"status": "paused"}"#));
        assert_eq!(e.result.reason.as_deref(), Some("inspect: the eval ended with status \"paused\""));
    }
}
