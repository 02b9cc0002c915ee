//! A run set's report: the batch's outcome, its cells, the failures with
//! their reasons, what it cost (tokens, and money where the catalogue prices
//! the model), how long it took, and the run directories its cells wrote.
//! Pure: the run set's records in, the report out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::drive::records::{BatchOutcome, CellRecord, CellStatus};
use crate::results::timing::secs;
use crate::runsets::RunSetSummary;
use crate::runview::RunRow;
use crate::spec::BatchSpec;

/// One cell as its report lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportCell {
    pub cell: String,
    pub factors: BTreeMap<String, Value>,
    pub status: CellStatus,
    pub attempts: u32,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub duration_s: Option<f64>,
    pub tokens: Option<u64>,
    pub score: Option<f64>,
    pub exit_code: Option<i32>,
    /// Why it failed, in words (`exit 3`, `killed by signal 9`).
    pub failure: Option<String>,
    /// Its log, relative to the campaign root.
    pub log: Option<String>,
}

/// A run directory one of the run set's cells wrote.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnedRunDir {
    pub path: String,
    pub cell: String,
    pub status_text: String,
    pub rounds_written: Option<u32>,
    pub rounds_planned: Option<u32>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Report {
    pub summary: RunSetSummary,
    pub outcome: Option<BatchOutcome>,
    pub model: Option<String>,
    pub endpoints: Vec<String>,
    /// The scope the cells are filtered by (empty: all of them).
    pub scope: String,
    /// From the batch's start to its end (to now while it runs).
    pub wall_s: Option<f64>,
    /// The listed cells' last attempts, added up.
    pub cell_hours: f64,
    pub tokens: u64,
    /// Cells that reported tokens.
    pub cells_with_tokens: usize,
    /// The model's catalogue price per 1,000 tokens, when it has one.
    pub price_per_1k_tokens: Option<f64>,
    /// `tokens / 1000 × price`, when priced.
    pub cost: Option<f64>,
    /// The currency of the price and the cost (the campaign's).
    #[serde(default)]
    pub currency: String,
    pub cells: Vec<ReportCell>,
    /// Failure reasons and how many cells each, most first.
    pub failures: Vec<(String, u64)>,
    pub runs: Vec<OwnedRunDir>,
    /// Records that could not be read, and why.
    pub problems: Vec<String>,
}

/// Why a cell failed, in words — the reason it reported, else how it
/// exited; none when it did not fail.
pub fn failure_words(c: &CellRecord) -> Option<String> {
    if c.status != CellStatus::Failed {
        return None;
    }
    if let Some(r) = &c.reason {
        return Some(r.clone());
    }
    Some(match c.exit_code {
        Some(code) if code > 128 && code < 160 => format!("killed by signal {} (exit {code})", code - 128),
        Some(code) => format!("exit {code}"),
        None => "ended without an exit status".into(),
    })
}

/// Everything the report needs from outside the run set's records.
pub struct ReportInputs<'a> {
    pub summary: RunSetSummary,
    pub outcome: Option<BatchOutcome>,
    pub spec: Option<&'a crate::spec::BatchSpec>,
    /// The cells in scope.
    pub cells: &'a [CellRecord],
    pub price_per_1k_tokens: Option<f64>,
    pub currency: String,
    /// Every run directory the run list knows (those under this run set's
    /// `out/` are its own).
    pub runs: &'a [RunRow],
    pub problems: Vec<String>,
    pub scope: String,
    pub now: crate::timefmt::Timestamp,
}

pub fn report(i: ReportInputs) -> Report {
    let now = i.now.millis() as f64 / 1000.0;
    let mut cells: Vec<ReportCell> = i
        .cells
        .iter()
        .map(|c| {
            let start = c.started_at.as_deref().and_then(secs);
            let end = c.ended_at.as_deref().and_then(secs).or((c.status == CellStatus::Running).then_some(now));
            ReportCell {
                cell: c.cell.clone(),
                factors: c.factors.clone(),
                status: c.status,
                attempts: c.attempts,
                started_at: c.started_at.clone(),
                ended_at: c.ended_at.clone(),
                duration_s: start.zip(end).map(|(a, b)| (b - a).max(0.0)),
                tokens: c.tokens,
                score: c.score,
                exit_code: c.exit_code,
                failure: failure_words(c),
                log: c.log.as_ref().map(|l| format!("runsets/{}/{l}", i.summary.name)),
            }
        })
        .collect();
    // Failures first, then by cell id: the page reads top down.
    cells.sort_by(|a, b| b.failure.is_some().cmp(&a.failure.is_some()).then_with(|| a.cell.cmp(&b.cell)));
    let mut failures: BTreeMap<String, u64> = BTreeMap::new();
    for f in cells.iter().filter_map(|c| c.failure.clone()) {
        *failures.entry(f).or_default() += 1;
    }
    let mut failures: Vec<(String, u64)> = failures.into_iter().collect();
    failures.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let tokens: u64 = cells.iter().filter_map(|c| c.tokens).sum();
    let cells_with_tokens = cells.iter().filter(|c| c.tokens.is_some()).count();
    let wall_s = i.outcome.as_ref().and_then(|o| {
        let a = secs(&o.started_at)?;
        let b = o.ended_at.as_deref().and_then(secs).unwrap_or(now);
        Some((b - a).max(0.0))
    });
    let prefix = format!("runsets/{}/out/", i.summary.name);
    let in_scope: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.cell.as_str()).collect();
    let runs = i
        .runs
        .iter()
        .filter_map(|r| {
            let cell = r.path.strip_prefix(&prefix)?.split('/').next()?;
            in_scope.contains(cell).then(|| OwnedRunDir {
                path: r.path.clone(),
                cell: cell.to_owned(),
                status_text: r.status_text.clone(),
                rounds_written: r.rounds_written,
                rounds_planned: r.rounds_planned,
            })
        })
        .collect();
    let endpoints = i.spec.map(BatchSpec::endpoints_used).unwrap_or_default();
    Report {
        model: i.spec.and_then(|s| s.model.clone()),
        endpoints,
        scope: i.scope,
        wall_s,
        cell_hours: cells.iter().filter_map(|c| c.duration_s).sum::<f64>() / 3600.0,
        tokens,
        cells_with_tokens,
        cost: i.price_per_1k_tokens.map(|p| tokens as f64 / 1000.0 * p),
        price_per_1k_tokens: i.price_per_1k_tokens,
        currency: i.currency.clone(),
        cells,
        failures,
        runs,
        problems: i.problems,
        summary: i.summary,
        outcome: i.outcome,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(cell: &str, status: CellStatus, exit: Option<i32>, tokens: Option<u64>) -> CellRecord {
        CellRecord {
            schema_version: 1,
            cell: cell.into(),
            factors: [("task".to_string(), json!("t1"))].into(),
            status,
            attempts: 1,
            started_at: Some("2026-11-30T10:00:00Z".into()),
            ended_at: Some("2026-11-30T10:00:30Z".into()),
            exit_code: exit,
            tokens,
            score: None,
            log: Some(format!("logs/cell-{cell}.log")),
            ..Default::default()
        }
    }

    #[test]
    fn a_report_adds_up_time_tokens_cost_and_failures_and_finds_its_run_dirs() {
        let cells = [
            rec("c-1", CellStatus::Done, Some(0), Some(1500)),
            rec("c-2", CellStatus::Failed, Some(3), None),
            rec("c-3", CellStatus::Failed, Some(137), Some(500)),
        ];
        let row = |path: &str| RunRow {
            name: "run".into(),
            path: path.into(),
            last_written: None,
            status: crate::runview::RunStatus::Starting,
            status_text: "starting".into(),
            rounds_written: None,
            rounds_planned: None,
            phase: None,
            model: None,
            process: crate::runview::ProcessCheck::NotRecorded,
            version: String::new(),
        };
        let runs = [row("runsets/b-1/out/c-1/run"), row("runsets/b-2/out/c-1/run"), row("elsewhere/run")];
        let r = report(ReportInputs {
            summary: RunSetSummary { name: "b-1".into(), ..Default::default() },
            outcome: None,
            spec: None,
            cells: &cells,
            price_per_1k_tokens: Some(0.5),
            currency: "USD".into(),
            runs: &runs,
            problems: vec![],
            scope: String::new(),
            now: crate::timefmt::Timestamp::from_millis(0),
        });
        assert_eq!((r.tokens, r.cells_with_tokens, r.cost), (2000, 2, Some(1.0)));
        assert!((r.cell_hours - 90.0 / 3600.0).abs() < 1e-9);
        assert_eq!(r.failures, vec![("exit 3".to_string(), 1), ("killed by signal 9 (exit 137)".to_string(), 1)]);
        assert_eq!(r.cells[0].cell, "c-2", "failures first");
        assert_eq!(r.cells[2].log.as_deref(), Some("runsets/b-1/logs/cell-c-1.log"));
        assert_eq!(r.runs.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), ["runsets/b-1/out/c-1/run"]);
    }
}
