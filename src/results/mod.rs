//! Results: what the run sets' cell records say, as evidence a researcher
//! can write up — pass rates with 95 % Wilson intervals, differences between
//! levels with their verdicts (always-valid, for a family of comparisons:
//! [`sequential`]) beside the fixed-look Newcombe interval, per task and per
//! model, and where the cells that did not pass fall. Pure: cell records in,
//! figures out.
//!
//! **A cell's outcome** is its latest ended record over every run set (by
//! `ended_at`, then run set name): `done` is a pass — unless the campaign
//! sets `[results] pass_score`, when a `done` cell passes only with a score at
//! least that; `failed` is a failure. Cells that never ended (pending,
//! running, stopped) are not counted. Launch counts, holds and other
//! operational signals are never mixed into these figures.

pub mod cohorts;
pub mod export;
pub mod impact;
pub mod overview;
pub mod paired;
pub mod propose;
pub mod publish;
pub mod report;
pub mod research;
pub mod scope;
pub mod sequential;
pub mod stats;
pub mod timing;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::campaign::{CountUnit, ResultsConfig};
use crate::console::matrix::value_text;
use crate::drive::records::{CellRecord, CellStatus};
use stats::{difference, Interval, Proportion, Z95};

/// Percent-encodes a path segment or query value for a link (letters,
/// digits and `-_.~` stay as they are).
pub fn url_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// One cell's counted outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Outcome {
    pub cell: String,
    pub factors: BTreeMap<String, Value>,
    /// The model its batch ran (the run set's spec).
    pub model: Option<String>,
    pub run_set: String,
    pub passed: bool,
    /// Its process failed (it ended `failed`): one way not to pass — the
    /// other is to run to the end and not pass.
    #[serde(default)]
    pub failed: bool,
    /// Why it did not pass (`exit 3`, `score 0.40 below 0.80`, or the reason
    /// the cell reported).
    pub reason: Option<String>,
    pub score: Option<f64>,
    pub tokens: Option<u64>,
    pub ended_at: Option<String>,
    /// What it adds to a pass rate: `successes` of `trials` — 1 of 1 or 0 of
    /// 1 for a cell, its samples under `[results] count = "samples"`.
    pub successes: u64,
    pub trials: u64,
}

/// The records of one run set, as the outcomes are made from them.
pub struct RunSetRecords<'a> {
    pub name: &'a str,
    pub model: Option<&'a str>,
    pub cells: &'a [CellRecord],
}

/// Every cell's latest ended record, as an outcome, by the campaign's
/// `[results]` rules.
pub fn outcomes(run_sets: &[RunSetRecords], rules: &ResultsConfig) -> Vec<Outcome> {
    let mut latest: BTreeMap<&str, (&RunSetRecords, &CellRecord)> = BTreeMap::new();
    for rs in run_sets {
        for c in rs.cells.iter().filter(|c| matches!(c.status, CellStatus::Done | CellStatus::Failed)) {
            let newer = latest
                .get(c.cell.as_str())
                .is_none_or(|(ors, oc)| (c.ended_at.as_deref(), rs.name) > (oc.ended_at.as_deref(), ors.name));
            if newer {
                latest.insert(&c.cell, (rs, c));
            }
        }
    }
    latest
        .into_values()
        .map(|(rs, c)| {
            let (passed, reason) = verdict(c, rules.pass_score);
            let (successes, trials) = match (rules.count, c.status, c.samples) {
                (CountUnit::Samples, CellStatus::Done, Some(s)) => (s.passed, s.total),
                _ => (u64::from(passed), 1),
            };
            Outcome {
                cell: c.cell.clone(),
                factors: c.factors.clone(),
                model: rs.model.map(str::to_owned),
                run_set: rs.name.to_owned(),
                passed,
                failed: c.status == CellStatus::Failed,
                reason,
                score: c.score,
                tokens: c.tokens,
                ended_at: c.ended_at.clone(),
                successes,
                trials,
            }
        })
        .collect()
}

/// Whether an ended cell passed, and why not. A `done` cell's own `passed`
/// wins; else `pass_score`, when set, needs a score at least that.
pub fn verdict(c: &CellRecord, pass_score: Option<f64>) -> (bool, Option<String>) {
    match (c.status, c.passed, pass_score, c.score) {
        (CellStatus::Done, Some(true), _, _) | (CellStatus::Done, None, None, _) => (true, None),
        (CellStatus::Done, Some(false), _, _) => {
            (false, Some(c.reason.clone().unwrap_or_else(|| "the cell said it did not pass".into())))
        }
        (CellStatus::Done, None, Some(min), Some(s)) if s >= min => (true, None),
        (CellStatus::Done, None, Some(min), Some(s)) => (false, Some(format!("score {s:.2} below {min:.2}"))),
        (CellStatus::Done, None, Some(_), None) => (false, Some("no score reported".into())),
        _ => (false, c.failure_words()),
    }
}

/// One level's pass rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Group {
    pub level: String,
    pub passes: Proportion,
}

/// A level against the baseline (the first level): the difference of their
/// pass rates, its fixed-look 95 % interval, and the verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    pub level: String,
    pub baseline: String,
    pub difference: f64,
    /// Newcombe's 95 % interval, valid for **one look** at a size fixed in
    /// advance: read after every batch it excludes 0 by chance far more
    /// often than 5 % (not the verdict).
    pub ci95: Interval,
    /// The unpaired always-valid test of "no difference" ([`sequential`]).
    #[serde(default)]
    pub always_valid: sequential::AlwaysValid,
    /// The test that gives this level its verdict: the paired one when the
    /// level's cells have twins at the baseline, else the unpaired one.
    #[serde(default)]
    pub test: Test,
    /// The level's p-value (its `test`'s) adjusted for the family of
    /// comparisons on the page (Holm).
    #[serde(default = "no_evidence")]
    pub p_family: f64,
    /// The level's verdict: `p_family` at most [`sequential::ALPHA`] — holds
    /// however often the evidence is read, across the family.
    pub clear: bool,
}

/// Which always-valid test gives a level its verdict. One test per level:
/// two tests of the same level would share the family's error and each
/// need more evidence. The choice follows the design — whether the level's
/// cells were run on the baseline's tasks and seeds too — never results.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Test {
    /// The two pass rates as independent samples.
    #[default]
    Unpaired,
    /// The discordant pairs of twins (every other factor equal).
    Paired,
}

impl Comparison {
    /// "clear by the paired test (p = 0.003)", "open by the unpaired test (p = 0.21)".
    pub fn verdict_words(&self) -> String {
        format!(
            "{} by the {} test (p = {})",
            if self.clear { "clear" } else { "open" },
            match self.test {
                Test::Unpaired => "unpaired",
                Test::Paired => "paired",
            },
            paired::p_words(self.p_family)
        )
    }
}

/// A p-value where nothing was measured (serde's default for `p_family`).
pub(crate) fn no_evidence() -> f64 {
    1.0
}

impl Comparison {
    /// "treat − base: +70 points, clear by the unpaired test (p = 0.003);
    /// fixed-look 95 % interval +27 to +87 points".
    pub fn words(&self) -> String {
        format!(
            "{} − {}: {:+.0} points, {}; fixed-look 95 % interval {:+.0} to {:+.0} points",
            self.level,
            self.baseline,
            self.difference * 100.0,
            self.verdict_words(),
            self.ci95.lo * 100.0,
            self.ci95.hi * 100.0,
        )
    }
}

/// One counted outcome, as a sequential verdict takes it: when it ended
/// (the order key: its end, then its run set and cell) and what it adds.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Observed {
    pub at: (String, String, String),
    pub successes: u64,
    pub trials: u64,
}

impl Observed {
    pub fn of(o: &Outcome) -> Self {
        Self {
            at: (o.ended_at.clone().unwrap_or_default(), o.run_set.clone(), o.cell.clone()),
            successes: o.successes,
            trials: o.trials,
        }
    }
}

/// The family a page's verdicts are controlled as.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Family {
    /// How many comparisons it holds (each a verdict on the page).
    pub comparisons: usize,
    /// The family-wise error controlled: the chance that any comparison is
    /// called clear where nothing differs, however often the page is read.
    pub alpha: f64,
}

impl Default for Family {
    fn default() -> Self {
        Self { comparisons: 0, alpha: sequential::ALPHA }
    }
}

impl Family {
    /// "3 comparisons on this page: the chance that any is called clear
    /// where nothing differs is at most 5 %, however often it is read".
    pub fn words(&self) -> String {
        match self.comparisons {
            0 => "No comparison on this page yet.".into(),
            n => format!(
                "{}: the chance that {} called clear where nothing differs is at most {:.0} %, however often this page is read (always-valid p-values{}).",
                crate::basics::numfmt::count(n as u64, "comparison"),
                if n == 1 { "it is" } else { "any is" },
                self.alpha * 100.0,
                if n == 1 { "" } else { ", Holm's correction across them" },
            ),
        }
    }
}

/// The counted cells at one level of a factor that did not pass.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NotPassedCount {
    pub level: String,
    /// Cells that did not pass: failed, or ran and did not pass.
    pub not_passed: u64,
    /// Of those, the cells whose process failed.
    pub failed: u64,
    /// Counted cells at the level.
    pub n: u64,
}

/// One reason cells did not pass, and how many.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReasonCount {
    pub reason: String,
    pub cells: u64,
    /// Of those, the cells whose process failed.
    pub failed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Evidence {
    /// The factor the groups are by (`condition` by default).
    pub by: String,
    /// Counted cells (those that ended).
    pub n: u64,
    pub overall: Proportion,
    pub groups: Vec<Group>,
    pub comparisons: Vec<Comparison>,
    pub by_task: Vec<Group>,
    pub by_model: Vec<Group>,
    /// Per factor, the cells at each level that did not pass (and failed).
    pub not_passed_by_factor: BTreeMap<String, Vec<NotPassedCount>>,
    /// Why cells did not pass, most first.
    pub not_passed_by_reason: Vec<ReasonCount>,
    /// The scope the figures are over, as text (empty: every cell).
    #[serde(default)]
    pub scope: String,
    /// What the rates count: cells, or the samples cells reported
    /// (`[results] count`).
    #[serde(default)]
    pub count: CountUnit,
    /// Each level against the baseline over the cells run on both, every
    /// other factor equal (empty when no such pair ended).
    #[serde(default)]
    pub paired: Vec<paired::PairedComparison>,
    /// The family the verdicts (`comparisons` and `paired`) are controlled as.
    #[serde(default)]
    pub family: Family,
    /// Drawn by a server built with charts (empty otherwise).
    #[serde(default)]
    pub charts: EvidenceCharts,
}

impl Evidence {
    /// What was counted, in words: `12 ended cells`, or with samples
    /// `12 ended cells, 72 samples`.
    pub fn counted_words(&self) -> String {
        match self.count {
            CountUnit::Cells => format!("{} ended cells", self.n),
            CountUnit::Samples => format!("{} ended cells, {} samples", self.n, self.overall.n),
        }
    }
}

/// The evidence's charts: pass rates by level and the differences to the
/// baseline, each with its 95 % interval.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EvidenceCharts {
    pub rates: crate::charts::Chart,
    pub differences: crate::charts::Chart,
}

fn level_of(o: &Outcome, factor: &str) -> String {
    if factor == "model" && !o.factors.contains_key("model") {
        return o.model.clone().unwrap_or_else(|| "(none)".into());
    }
    o.factors.get(factor).map(value_text).unwrap_or_else(|| "(none)".into())
}

/// Pass rates by each level of `factor`, levels in `order` first (the
/// matrix's), then any others in name order.
pub fn groups(outcomes: &[Outcome], factor: &str, order: &[String]) -> Vec<Group> {
    let mut counts: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    for o in outcomes {
        let e = counts.entry(level_of(o, factor)).or_insert((0, 0));
        e.0 += o.successes;
        e.1 += o.trials;
    }
    let mut levels: Vec<String> = order.iter().filter(|l| counts.contains_key(*l)).cloned().collect();
    levels.extend(counts.keys().filter(|k| !order.contains(k)).cloned());
    levels
        .into_iter()
        .map(|l| {
            let (s, n) = counts[&l];
            Group { level: l, passes: Proportion::new(s, n) }
        })
        .collect()
}

/// Each group after the first against the first (the baseline): the
/// difference of their pass rates with its fixed-look Newcombe interval,
/// and the always-valid test over `streams` (each group's outcomes, in the
/// groups' order). The verdicts are set by [`settle`] once the family is known.
pub fn comparisons(groups: &[Group], streams: &[Vec<Observed>]) -> Vec<Comparison> {
    let Some((base, rest)) = groups.split_first() else { return Vec::new() };
    let empty = Vec::new();
    let base_stream = streams.first().unwrap_or(&empty);
    rest.iter()
        .enumerate()
        .filter_map(|(i, g)| {
            let (d, ci) = difference(g.passes.successes, g.passes.n, base.passes.successes, base.passes.n, Z95)?;
            let always_valid = unpaired_test(streams.get(i + 1).unwrap_or(&empty), base_stream);
            Some(Comparison {
                level: g.level.clone(),
                baseline: base.level.clone(),
                difference: d,
                ci95: ci,
                test: Test::Unpaired,
                p_family: always_valid.p_value,
                clear: always_valid.p_value <= sequential::ALPHA,
                always_valid,
            })
        })
        .collect()
}

/// The unpaired e-process over a level's and the baseline's outcomes, taken
/// in the order they ended.
/// Outcomes that ended at the same moment (a batch's cells recorded
/// together) are taken alternately, one of each side at a time: blocks of
/// one and one weigh both rates, where all of one side then all of the
/// other would make blocks of one against many. The order depends on the
/// ends and names only, never on the outcomes, so the test stays valid.
pub fn unpaired_test(level: &[Observed], baseline: &[Observed]) -> sequential::AlwaysValid {
    use sequential::Side;
    fn ranked(stream: &[Observed], side: Side) -> Vec<((&str, usize, u8), &Observed, Side)> {
        let mut mine: Vec<&Observed> = stream.iter().collect();
        mine.sort_by(|a, b| a.at.cmp(&b.at));
        let mut out = Vec::with_capacity(mine.len());
        let mut rank = 0usize;
        for (i, o) in mine.iter().enumerate() {
            rank = if i > 0 && mine[i - 1].at.0 == o.at.0 { rank + 1 } else { 0 };
            out.push(((o.at.0.as_str(), rank, side as u8), *o, side));
        }
        out
    }
    let mut all = ranked(level, Side::Level);
    all.extend(ranked(baseline, Side::Baseline));
    all.sort_by(|a, b| a.0.cmp(&b.0));
    let mut e = sequential::TwoProportions::default();
    for (_, o, side) in all {
        e.observe(side, o.successes, o.trials);
    }
    e.now()
}

/// Each group's outcomes in the order they ended, by level.
pub fn streams(outcomes: &[Outcome], factor: &str, groups: &[Group]) -> Vec<Vec<Observed>> {
    let mut by: BTreeMap<String, Vec<Observed>> = BTreeMap::new();
    for o in outcomes {
        by.entry(level_of(o, factor)).or_default().push(Observed::of(o));
    }
    groups.iter().map(|g| by.remove(&g.level).unwrap_or_default()).collect()
}

/// The family's verdicts: one per level, by its test — the paired one where
/// the level has pairs with the baseline, else the unpaired one — Holm over
/// the levels' always-valid p-values, each level then clear when its
/// adjusted p is at most α (the comparison and the paired comparison of a
/// level carry the same verdict); the paired intervals drawn at the level
/// the family leaves each. The family, for the page to say.
pub fn settle(comparisons: &mut [Comparison], paired: &mut [paired::PairedComparison]) -> Family {
    let alpha = sequential::ALPHA;
    // One verdict per level: (its comparison, its pairs), either may be
    // missing (a paired list judged alone, as its tests do).
    let mut levels: Vec<(Option<usize>, Option<usize>)> = (0..comparisons.len())
        .map(|i| (Some(i), paired.iter().position(|p| p.level == comparisons[i].level)))
        .collect();
    for j in 0..paired.len() {
        if !levels.iter().any(|(_, p)| *p == Some(j)) {
            levels.push((None, Some(j)));
        }
    }
    let ps: Vec<f64> = levels
        .iter()
        .map(|(c, p)| match (c, p) {
            (_, Some(j)) => paired[*j].always_valid.p_value,
            (Some(i), None) => comparisons[*i].always_valid.p_value,
            (None, None) => 1.0,
        })
        .collect();
    let adjusted = sequential::holm(&ps);
    for ((c, p), adj) in levels.iter().zip(&adjusted) {
        if let Some(c) = c.map(|i| &mut comparisons[i]) {
            c.test = if p.is_some() { Test::Paired } else { Test::Unpaired };
            c.p_family = *adj;
            c.clear = *adj <= alpha;
        }
        if let Some(p) = p.map(|j| &mut paired[j]) {
            let own = p.always_valid.p_value;
            p.settle(*adj, sequential::level_in_family(alpha, own, *adj));
        }
    }
    Family { comparisons: ps.len(), alpha }
}

/// The pass rate of these outcomes.
pub fn pass_rate(outcomes: &[Outcome]) -> Proportion {
    Proportion::new(outcomes.iter().map(|o| o.successes).sum(), outcomes.iter().map(|o| o.trials).sum())
}

/// The evidence by `by` (levels ordered as the matrix plans them: `order`),
/// its pairs whole cells.
pub fn evidence(outcomes: &[Outcome], by: &str, order: &BTreeMap<String, Vec<String>>) -> Evidence {
    evidence_with(outcomes, by, order, None)
}

/// The evidence, its pairs the twins' samples when `samples` are given
/// (`[results] count = "samples"`: [`paired`]).
pub fn evidence_with(
    outcomes: &[Outcome],
    by: &str,
    order: &BTreeMap<String, Vec<String>>,
    samples: Option<&paired::SampleVerdicts>,
) -> Evidence {
    let empty = Vec::new();
    let groups_by = groups(outcomes, by, order.get(by).unwrap_or(&empty));
    let mut comparisons = comparisons(&groups_by, &streams(outcomes, by, &groups_by));
    let levels: Vec<String> = groups_by.iter().map(|g| g.level.clone()).collect();
    let mut paired = paired::paired(outcomes, by, &levels, samples);
    let family = settle(&mut comparisons, &mut paired);
    let mut not_passed_by_factor = BTreeMap::new();
    let factors: std::collections::BTreeSet<&String> = outcomes.iter().flat_map(|o| o.factors.keys()).collect();
    for f in factors {
        // Cells, not trials: under `count = "samples"` a rate counts samples,
        // but a cell fails or does not pass as a whole.
        let mut at: BTreeMap<String, NotPassedCount> = BTreeMap::new();
        for o in outcomes {
            let level = level_of(o, f);
            let c = at.entry(level.clone()).or_insert(NotPassedCount { level, not_passed: 0, failed: 0, n: 0 });
            c.n += 1;
            c.not_passed += u64::from(!o.passed);
            c.failed += u64::from(o.failed);
        }
        let ordered = groups(outcomes, f, order.get(f).unwrap_or(&empty));
        not_passed_by_factor.insert(f.clone(), ordered.iter().filter_map(|g| at.remove(&g.level)).collect::<Vec<_>>());
    }
    let mut reasons: BTreeMap<&str, ReasonCount> = BTreeMap::new();
    for o in outcomes.iter().filter(|o| !o.passed) {
        let r = o.reason.as_deref().unwrap_or("no reason given");
        let c = reasons.entry(r).or_insert(ReasonCount { reason: r.to_owned(), cells: 0, failed: 0 });
        c.cells += 1;
        c.failed += u64::from(o.failed);
    }
    let mut not_passed_by_reason: Vec<ReasonCount> = reasons.into_values().collect();
    not_passed_by_reason.sort_by(|a, b| b.cells.cmp(&a.cells).then_with(|| a.reason.cmp(&b.reason)));
    #[cfg_attr(not(feature = "charts"), allow(unused_mut))]
    let mut e = Evidence {
        by: by.to_owned(),
        n: outcomes.len() as u64,
        overall: pass_rate(outcomes),
        comparisons,
        by_task: groups(outcomes, "task", order.get("task").unwrap_or(&empty)),
        by_model: groups(outcomes, "model", order.get("model").unwrap_or(&empty)),
        groups: groups_by,
        not_passed_by_factor,
        not_passed_by_reason,
        scope: String::new(),
        count: CountUnit::Cells,
        paired,
        family,
        charts: EvidenceCharts::default(),
    };
    #[cfg(feature = "charts")]
    {
        e.charts = interval_charts(
            &e.groups,
            &e.comparisons,
            &format!("Pass rate by {} (95 % Wilson interval)", e.by),
            "Difference to the baseline (fixed-look 95 % Newcombe interval)",
        );
    }
    e
}

/// The rates of `groups` with their Wilson intervals, and the `comparisons`
/// with their Newcombe intervals, drawn (the evidence's and the cohorts').
#[cfg(feature = "charts")]
pub fn interval_charts(
    groups: &[Group],
    comparisons: &[Comparison],
    rates_title: &str,
    differences_title: &str,
) -> EvidenceCharts {
    use crate::charts::{intervals, IntervalRow};
    let rates: Vec<IntervalRow> = groups
        .iter()
        .filter_map(|g| {
            let (rate, ci) = (g.passes.rate?, g.passes.ci95.as_ref()?);
            Some(IntervalRow { label: format!("{} (n={})", g.level, g.passes.n), estimate: rate, lo: ci.lo, hi: ci.hi })
        })
        .collect();
    let diffs: Vec<IntervalRow> = comparisons
        .iter()
        .map(|c| IntervalRow {
            label: format!("{} − {}", c.level, c.baseline),
            estimate: c.difference,
            lo: c.ci95.lo,
            hi: c.ci95.hi,
        })
        .collect();
    EvidenceCharts {
        rates: intervals(rates_title, "pass rate (%)", &rates, true),
        differences: intervals(differences_title, "difference in pass rate (percentage points)", &diffs, false),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(cond: &str, task: &str, seed: u32, status: CellStatus, ended: &str, score: Option<f64>) -> CellRecord {
        let factors: BTreeMap<String, Value> =
            [("condition", json!(cond)), ("task", json!(task)), ("seed", json!(seed))]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
        CellRecord {
            schema_version: 1,
            cell: crate::console::spec::cell_id(&factors),
            factors,
            status,
            attempts: 1,
            started_at: None,
            ended_at: Some(ended.into()),
            exit_code: if status == CellStatus::Failed { Some(3) } else { Some(0) },
            tokens: Some(10),
            score,
            log: None,
            ..Default::default()
        }
    }

    #[test]
    fn the_latest_ended_record_of_each_cell_counts_and_a_pass_score_applies() {
        use CellStatus::*;
        let early = vec![
            rec("base", "t1", 1, Failed, "2026-12-01T00:00:00Z", None),
            rec("base", "t1", 2, Stopped, "2026-12-01T00:00:00Z", None),
        ];
        let late = vec![
            rec("base", "t1", 1, Done, "2026-12-02T00:00:00Z", Some(0.4)),
            rec("treat", "t1", 1, Done, "2026-12-02T00:00:00Z", Some(0.9)),
        ];
        let sets = [
            RunSetRecords { name: "a", model: Some("qwen"), cells: &early },
            RunSetRecords { name: "b", model: Some("gpt"), cells: &late },
        ];
        let o = outcomes(&sets, &ResultsConfig::default());
        assert_eq!(o.len(), 2, "the stopped cell is not counted; the retried one once");
        assert!(o.iter().all(|o| o.passed && o.model.as_deref() == Some("gpt")));
        let o = outcomes(&sets, &ResultsConfig { pass_score: Some(0.5), ..ResultsConfig::default() });
        let base = o.iter().find(|o| o.factors["condition"] == "base").unwrap();
        assert_eq!((base.passed, base.reason.as_deref()), (false, Some("score 0.40 below 0.50")));
    }

    #[test]
    fn a_cells_own_verdict_reason_and_samples_count() {
        use crate::drive::result::Samples;
        use CellStatus::*;
        let with = |r: CellRecord, passed, samples, reason: Option<&str>| CellRecord {
            passed,
            samples,
            reason: reason.map(str::to_owned),
            ..r
        };
        let cells = vec![
            // 4 of 6 samples; its own verdict says it passed despite a low score.
            with(
                rec("base", "t1", 1, Done, "2026-12-01T00:00:00Z", Some(0.1)),
                Some(true),
                Some(Samples { passed: 4, total: 6 }),
                None,
            ),
            // 1 of 6 and the cell's own "no".
            with(
                rec("base", "t2", 1, Done, "2026-12-01T00:00:00Z", None),
                Some(false),
                Some(Samples { passed: 1, total: 6 }),
                Some("1 of 6"),
            ),
            // Failed with the harness's words: one trial, whatever the mode.
            with(
                rec("base", "t3", 1, Failed, "2026-12-01T00:00:00Z", None),
                None,
                None,
                Some("inspect: ValueError('x')"),
            ),
        ];
        let sets = [RunSetRecords { name: "a", model: None, cells: &cells }];
        let rules = ResultsConfig { pass_score: Some(0.5), ..ResultsConfig::default() };
        let o = outcomes(&sets, &rules);
        let reasons: Vec<_> = o.iter().filter_map(|o| o.reason.as_deref()).collect();
        assert_eq!(reasons.len(), 2);
        assert!(reasons.contains(&"1 of 6") && reasons.contains(&"inspect: ValueError('x')"), "{reasons:?}");
        assert_eq!(pass_rate(&o).successes, 1, "cells: the cell's own verdict wins over pass_score");
        assert_eq!(pass_rate(&o).n, 3);
        let o = outcomes(&sets, &ResultsConfig { count: CountUnit::Samples, ..rules });
        // Samples: 4 + 1 of 6 + 6, and the failed cell once: 5 of 13.
        assert_eq!((pass_rate(&o).successes, pass_rate(&o).n), (5, 13));
        let by_task: Vec<_> = groups(&o, "task", &[]).into_iter().map(|g| (g.passes.successes, g.passes.n)).collect();
        assert_eq!(by_task, [(4, 6), (1, 6), (0, 1)]);
        // Cells that did not pass, counted as cells (not samples): one ran
        // and said no, one's process failed — told apart.
        let e = evidence(&o, "condition", &BTreeMap::new());
        assert_eq!(
            e.not_passed_by_factor["condition"],
            [NotPassedCount { level: "base".into(), not_passed: 2, failed: 1, n: 3 }]
        );
        let reasons: Vec<_> = e.not_passed_by_reason.iter().map(|r| (r.reason.as_str(), r.cells, r.failed)).collect();
        assert_eq!(reasons, [("1 of 6", 1, 0), ("inspect: ValueError('x')", 1, 1)]);
    }

    /// One verdict per level: a level whose cells have twins at the baseline
    /// is judged by the paired test (on its comparison and its paired row
    /// alike), one without by the unpaired test; the family counts levels.
    #[test]
    fn each_level_has_one_verdict_by_the_test_its_design_allows() {
        use CellStatus::*;
        let mut cells = Vec::new();
        for s in 0..60 {
            let at = format!("2026-12-{:02}T00:00:00Z", 1 + s / 10);
            cells.push(rec("base", "t1", s, if s % 2 == 0 { Done } else { Failed }, &at, None));
            // twin: the same task and seed as each base cell; passes 9 in 10.
            cells.push(rec("twin", "t1", s, if s % 10 == 0 { Failed } else { Done }, &at, None));
            // alone: a task of its own, no twin; passes 9 in 10.
            cells.push(rec("alone", "t2", s, if s % 10 == 0 { Failed } else { Done }, &at, None));
        }
        let sets = [RunSetRecords { name: "a", model: None, cells: &cells }];
        let order = BTreeMap::from([("condition".to_owned(), ["base", "twin", "alone"].map(String::from).to_vec())]);
        let e = evidence(&outcomes(&sets, &ResultsConfig::default()), "condition", &order);
        assert_eq!(e.family.comparisons, 2, "two levels against the baseline: two verdicts");
        let (twin, alone) = (&e.comparisons[0], &e.comparisons[1]);
        assert_eq!((twin.level.as_str(), twin.test), ("twin", Test::Paired));
        assert_eq!((alone.level.as_str(), alone.test), ("alone", Test::Unpaired));
        let p = &e.paired[0];
        assert_eq!((p.level.as_str(), p.clear, p.p_family), ("twin", twin.clear, twin.p_family));
        assert!(twin.clear && alone.clear, "{twin:?} {alone:?}");
        // Holm over the two: the smaller p doubled, the larger as it is (or
        // the smaller's adjusted, whichever is more).
        let (pt, pa) = (p.always_valid.p_value, alone.always_valid.p_value);
        let (lo, hi) = if pt <= pa { (twin, alone) } else { (alone, twin) };
        assert!((lo.p_family - (2.0 * pt.min(pa)).min(1.0)).abs() < 1e-12);
        assert!((hi.p_family - pt.max(pa).max(lo.p_family)).abs() < 1e-12);
        assert!(twin.words().contains("clear by the paired test (p = "), "{}", twin.words());
        assert!(alone.words().contains("clear by the unpaired test (p = "), "{}", alone.words());
    }

    #[test]
    fn evidence_groups_compares_to_the_baseline_and_finds_the_cells_that_did_not_pass() {
        use CellStatus::*;
        let mut cells = Vec::new();
        // base: 2 of 10 pass; treat: 9 of 10.
        for s in 0..10 {
            cells.push(rec("base", "t1", s, if s < 2 { Done } else { Failed }, "2026-12-01T00:00:00Z", None));
            cells.push(rec("treat", "t2", s, if s < 9 { Done } else { Failed }, "2026-12-01T00:00:00Z", None));
        }
        let sets = [RunSetRecords { name: "a", model: Some("qwen"), cells: &cells }];
        let order = BTreeMap::from([("condition".to_owned(), vec!["base".to_owned(), "treat".to_owned()])]);
        let e = evidence(&outcomes(&sets, &ResultsConfig::default()), "condition", &order);
        assert_eq!((e.n, e.overall.successes), (20, 11));
        assert_eq!(
            e.groups.iter().map(|g| (g.level.as_str(), g.passes.successes, g.passes.n)).collect::<Vec<_>>(),
            [("base", 2, 10), ("treat", 9, 10)]
        );
        let c = &e.comparisons[0];
        assert_eq!((c.level.as_str(), c.baseline.as_str()), ("treat", "base"));
        assert!((c.difference - 0.7).abs() < 1e-12, "{c:?}");
        // Ten cells a side: the fixed-look interval excludes 0, but a verdict
        // that must hold however often it is read is not there yet.
        assert!(c.ci95.lo > 0.0 && !c.clear && c.p_family > 0.05, "{c:?}");
        assert_eq!((e.family.comparisons, e.paired.len()), (1, 0), "no pair: one comparison in the family");
        // Thirty more a side, as later batches: now it is clear.
        let mut more = cells.clone();
        for s in 10..40 {
            let at = format!("2026-12-0{}T00:00:00Z", 2 + s / 10);
            more.push(rec("base", "t1", s, if s % 5 == 0 { Done } else { Failed }, &at, None));
            more.push(rec("treat", "t2", s, if s % 10 == 0 { Failed } else { Done }, &at, None));
        }
        let sets = [RunSetRecords { name: "a", model: Some("qwen"), cells: &more }];
        let later = evidence(&outcomes(&sets, &ResultsConfig::default()), "condition", &order);
        let c = &later.comparisons[0];
        assert!(c.clear && c.p_family <= 0.05 && c.always_valid.e_value >= 20.0, "{c:?}");
        assert_eq!(e.by_model[0].level, "qwen");
        assert_eq!(
            e.not_passed_by_factor["condition"],
            [
                NotPassedCount { level: "base".into(), not_passed: 8, failed: 8, n: 10 },
                NotPassedCount { level: "treat".into(), not_passed: 1, failed: 1, n: 10 },
            ]
        );
        assert_eq!(e.not_passed_by_reason, [ReasonCount { reason: "exit 3".into(), cells: 9, failed: 9 }]);
        // Nothing ended: no rates, no comparisons, no panic.
        let none = evidence(&[], "condition", &order);
        assert_eq!((none.n, none.overall.rate, none.comparisons.len()), (0, None, 0));
    }
}
