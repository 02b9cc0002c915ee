//! A run set's report: the batch's outcome, its cells, the failures with
//! their reasons, what it cost (tokens, and money where the catalogue prices
//! the model), how long it took, and the run directories its cells wrote.
//! Pure: the run set's records in, the report out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::console::spec::BatchSpec;
use crate::drive::records::{BatchOutcome, CellRecord, CellStatus};
use crate::results::timing::secs;
use crate::runsets::RunSetSummary;
use crate::runview::RunRow;

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
    /// What it spent: reported, else counted of its calls.
    pub tokens: Option<u64>,
    /// Its tokens priced by kind (none: not priced, or nothing spent).
    #[serde(default)]
    pub cost: Option<f64>,
    pub score: Option<f64>,
    /// Whether it passed, by Evidence's rule (none: it has not ended done or failed).
    #[serde(default)]
    pub passed: Option<bool>,
    pub exit_code: Option<i32>,
    /// Why it failed, in words (`exit 3`, `killed by signal 9`).
    pub failure: Option<String>,
    /// Why a cell that ran did not pass (`score 0.40 below 0.80`, the reason it
    /// reported): none when it passed, or failed (see `failure`).
    #[serde(default)]
    pub not_passed: Option<String>,
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
    /// Cells with tokens: reported, or counted of their calls.
    pub cells_with_tokens: usize,
    /// The model's catalogue prices per 1,000 tokens, when it has any.
    #[serde(default)]
    pub prices: Option<crate::live::spend::Prices>,
    /// The cells' tokens priced by kind (a total alone at the dearest), when priced.
    pub cost: Option<f64>,
    /// The currency of the price and the cost (the campaign's).
    #[serde(default)]
    pub currency: String,
    pub cells: Vec<ReportCell>,
    /// Failure reasons and how many cells each, most first.
    pub failures: Vec<(String, u64)>,
    /// Cells that ran and did not pass: each reason and how many, most first.
    #[serde(default)]
    pub not_passed: Vec<(String, u64)>,
    /// Cells that ended done and passed.
    #[serde(default)]
    pub passed: usize,
    pub runs: Vec<OwnedRunDir>,
    /// Records that could not be read, and why.
    pub problems: Vec<String>,
}

/// Reasons and how many cells gave each, most first.
fn by_reason(reasons: impl Iterator<Item = String>) -> Vec<(String, u64)> {
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    for r in reasons {
        *counts.entry(r).or_default() += 1;
    }
    let mut out: Vec<(String, u64)> = counts.into_iter().collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    out
}

/// Everything the report needs from outside the run set's records.
pub struct ReportInputs<'a> {
    pub summary: RunSetSummary,
    pub outcome: Option<BatchOutcome>,
    pub spec: Option<&'a crate::console::spec::BatchSpec>,
    /// The cells in scope.
    pub cells: &'a [CellRecord],
    pub prices: Option<crate::live::spend::Prices>,
    /// `[results] pass_score`.
    pub pass_score: Option<f64>,
    pub currency: String,
    /// Every run directory the run list knows (those under this run set's
    /// `out/` are its own).
    pub runs: &'a [RunRow],
    pub problems: Vec<String>,
    pub scope: String,
    pub now: crate::basics::timefmt::Timestamp,
}

pub fn report(i: ReportInputs) -> Report {
    let now = i.now.millis() as f64 / 1000.0;
    let mut cells: Vec<ReportCell> = i
        .cells
        .iter()
        .map(|c| {
            let start = c.started_at.as_deref().and_then(secs);
            let end = c.ended_at.as_deref().and_then(secs).or((c.status == CellStatus::Running).then_some(now));
            let spent = crate::live::spend::cell_spend(Some(c), None, i.prices, "");
            let ran = matches!(c.status, CellStatus::Done | CellStatus::Failed);
            let (passed, why_not) = crate::results::verdict(c, i.pass_score);
            ReportCell {
                cell: c.cell.clone(),
                factors: c.factors.clone(),
                status: c.status,
                attempts: c.attempts,
                started_at: c.started_at.clone(),
                ended_at: c.ended_at.clone(),
                duration_s: start.zip(end).map(|(a, b)| (b - a).max(0.0)),
                tokens: c.tokens_total(),
                cost: spent.cost.filter(|_| spent.source != crate::live::spend::SpendSource::None),
                score: c.score,
                passed: ran.then_some(passed),
                exit_code: c.exit_code,
                failure: c.failure_words(),
                not_passed: why_not.filter(|_| c.status == CellStatus::Done),
                log: c.log.as_ref().map(|l| format!("runsets/{}/{l}", i.summary.name)),
            }
        })
        .collect();
    // Failures first, then by cell id: the page reads top down.
    cells.sort_by(|a, b| b.failure.is_some().cmp(&a.failure.is_some()).then_with(|| a.cell.cmp(&b.cell)));
    let failures = by_reason(cells.iter().filter_map(|c| c.failure.clone()));
    let not_passed = by_reason(cells.iter().filter_map(|c| c.not_passed.clone()));
    let passed = cells.iter().filter(|c| c.passed == Some(true)).count();
    let cost = i.prices.map(|_| cells.iter().filter_map(|c| c.cost).sum::<f64>());
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
        cost,
        prices: i.prices,
        currency: i.currency.clone(),
        cells,
        failures,
        not_passed,
        passed,
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
            prices: Some(crate::live::spend::Prices { input: 0.5, output: 0.5, cached: 0.5 }),
            pass_score: None,
            currency: "USD".into(),
            runs: &runs,
            problems: vec![],
            scope: String::new(),
            now: crate::basics::timefmt::Timestamp::from_millis(0),
        });
        assert_eq!((r.tokens, r.cells_with_tokens, r.cost), (2000, 2, Some(1.0)));
        assert_eq!((r.passed, r.not_passed.len()), (1, 0));
        assert!((r.cell_hours - 90.0 / 3600.0).abs() < 1e-9);
        assert_eq!(r.failures, vec![("exit 3".to_string(), 1), ("killed by signal 9 (exit 137)".to_string(), 1)]);
        assert_eq!(r.cells[0].cell, "c-2", "failures first");
        assert_eq!(r.cells[2].log.as_deref(), Some("runsets/b-1/logs/cell-c-1.log"));
        assert_eq!(r.runs.iter().map(|d| d.path.as_str()).collect::<Vec<_>>(), ["runsets/b-1/out/c-1/run"]);
    }

    /// Issue 40 (items 2, 3, 7): what was counted of a cell's calls is its
    /// spend in the report when it reported none, priced by kind; a cell that
    /// ran and did not pass is listed as such, apart from failures.
    #[test]
    fn a_report_counts_what_was_counted_prices_by_kind_and_lists_cells_that_did_not_pass() {
        let mut counted = rec("c-1", CellStatus::Done, Some(0), None);
        counted.score = Some(0.9);
        counted.counted = Some(crate::drive::records::Counted {
            calls: 60,
            input_tokens: 60_000,
            output_tokens: 60_000,
            ..Default::default()
        });
        let mut low = rec("c-2", CellStatus::Done, Some(0), Some(1000));
        low.score = Some(0.2);
        let cells = [counted, low];
        let r = report(ReportInputs {
            summary: RunSetSummary { name: "b-1".into(), ..Default::default() },
            outcome: None,
            spec: None,
            cells: &cells,
            prices: Some(crate::live::spend::Prices { input: 0.01, output: 0.02, cached: 0.0 }),
            pass_score: Some(0.5),
            currency: "USD".into(),
            runs: &[],
            problems: vec![],
            scope: String::new(),
            now: crate::basics::timefmt::Timestamp::from_millis(0),
        });
        assert_eq!((r.tokens, r.cells_with_tokens), (121_000, 2));
        // 60 × 0.01 + 60 × 0.02 = 1.80 counted; 1,000 reported unsplit at the dearest: 0.02.
        assert!((r.cost.unwrap() - 1.82).abs() < 1e-9, "{:?}", r.cost);
        assert!(r.failures.is_empty());
        assert_eq!(r.not_passed, vec![("score 0.20 below 0.50".to_string(), 1)]);
        assert_eq!(r.passed, 1);
        let c2 = r.cells.iter().find(|c| c.cell == "c-2").unwrap();
        assert_eq!((c2.passed, c2.not_passed.as_deref()), (Some(false), Some("score 0.20 below 0.50")));
    }
}
