//! The proposal guide: which batches, run next, would most change what is
//! known — ranked, each said in words with its predicted cost and time, and
//! each a draft request the operator can save and launch through the usual
//! preflight. It never launches anything. Pure: the matrix, the coverage, the
//! counted outcomes, the catalogue and the history in; the ranking out.
//!
//! **Candidates.** For each task (and each model, when the matrix plans a
//! `model` factor and the guide is not by model) and each level of the
//! factor compared (`condition` by default), the cells still to run: gaps,
//! and failed cells (which it would re-run). The comparison a candidate feeds
//! is the task's difference of that level to the baseline — the factor's
//! first level in the matrix — counted as Evidence counts (a cell's latest
//! ended record; samples under `[results] count = "samples"`). The
//! baseline's own cells feed every difference of the task; the one they
//! would narrow most is named.
//!
//! **Ranking.** By [`super::impact`]: open comparisons (not clear by the
//! verdict — the unpaired always-valid test, Holm across every comparison the
//! guide makes — or nothing measured yet) before settled ones, each by how
//! much the next cells — up to `max_cells`, at the rates observed — would
//! narrow its 95 % Newcombe interval. Only the best `top` are drafted (a
//! draft walks the matrix); a draft the chain rules shorten is scored again
//! by the cells it really holds.

use std::borrow::Cow;
use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::impact::{best_comparison, cells_needed, cells_to_settle, narrowing as narrowing_of, Counts, Narrowing};
use super::stats::Interval;
use super::Outcome;
use crate::campaign::{CampaignConfig, CountUnit};
use crate::console::coverage::{CellState, Coverage};
use crate::console::draft::{DraftRequest, HeldBack, DEFAULT_DRAFT_CELLS, MAX_DRAFT_CELLS};
use crate::console::matrix::{value_text, Matrix};
use crate::console::preflight::{History, Prediction};
use crate::runview::trials::BadQuery;

/// How many candidates are drafted and answered when `top` is left out.
pub const DEFAULT_TOP: usize = 5;
/// The most candidates one answer drafts.
pub const MAX_TOP: usize = 50;
/// The difference the power calculation is for, in percentage points, when
/// `delta` is left out.
pub const DEFAULT_DELTA_PP: f64 = 20.0;
/// The confidence and power of the cells-needed figure.
pub const CONFIDENCE: f64 = 0.95;
pub const POWER: f64 = 0.8;

/// `GET /api/propose`'s query, as text (each field checked by [`Self::parse`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct ProposeParams {
    /// The factor compared within each task (default `condition`).
    #[cfg_attr(feature = "cli", arg(long))]
    pub by: Option<String>,
    /// Cells per proposed batch, 1–10,000 (default 20).
    #[cfg_attr(feature = "cli", arg(long))]
    pub max_cells: Option<String>,
    /// How many proposals, 1–50 (default 5).
    #[cfg_attr(feature = "cli", arg(long))]
    pub top: Option<String>,
    /// The route the drafts name (default: the newest batch's route).
    #[cfg_attr(feature = "cli", arg(long))]
    pub model: Option<String>,
    /// The drafts' endpoint (default: the newest batch's).
    #[cfg_attr(feature = "cli", arg(long))]
    pub endpoint: Option<String>,
    /// The difference, in percentage points, the cells-needed figure is for (default 20).
    #[cfg_attr(feature = "cli", arg(long))]
    pub delta: Option<String>,
}

/// The query, read.
#[derive(Debug, Clone, PartialEq)]
pub struct ProposeQuery {
    pub by: String,
    pub max_cells: usize,
    pub top: usize,
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub delta: f64,
}

impl ProposeParams {
    /// The query, or the first field that cannot be read and why.
    pub fn parse(&self, matrix: &Matrix) -> Result<ProposeQuery, BadQuery> {
        let bad =
            |field: &str, value: &str, problem: String| BadQuery { field: field.into(), value: value.into(), problem };
        let text = |o: &Option<String>| o.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
        let whole = |field: &str, o: &Option<String>, default: usize, max: usize| match text(o) {
            None => Ok(default),
            Some(t) => match t.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(bad(
                    field,
                    &t,
                    format!("must be a whole number from 1 to {}", crate::basics::numfmt::thousands(max as u64)),
                )),
            },
        };
        // The default is always answered (a campaign without a matrix gets
        // a note); a factor asked for must be the matrix's.
        let asked = text(&self.by);
        let by = asked.clone().unwrap_or_else(|| "condition".into());
        if asked.is_some() && !matrix.factors.contains(&by) {
            return Err(bad(
                "by",
                &by,
                match matrix.factors.is_empty() {
                    true => "not a factor: the campaign has no matrix.csv".into(),
                    false => format!("not a factor of the matrix (factors: {})", matrix.factors.join(", ")),
                },
            ));
        }
        if by == "task" {
            return Err(bad("by", &by, "the guide compares levels within a task; choose another factor".into()));
        }
        let delta = match text(&self.delta) {
            None => DEFAULT_DELTA_PP,
            Some(t) => match t.trim_end_matches("pp").trim().parse::<f64>() {
                Ok(d) if d > 0.0 && d < 100.0 => d,
                _ => {
                    return Err(bad("delta", &t, "must be a number of percentage points above 0 and below 100".into()))
                }
            },
        };
        Ok(ProposeQuery {
            by,
            max_cells: whole("max_cells", &self.max_cells, DEFAULT_DRAFT_CELLS, MAX_DRAFT_CELLS)?,
            top: whole("top", &self.top, DEFAULT_TOP, MAX_TOP)?,
            model: text(&self.model),
            endpoint: text(&self.endpoint),
            delta,
        })
    }
}

/// What the guide reads, gathered by the adapter.
pub struct ProposeInput<'a> {
    pub matrix: &'a Matrix,
    pub coverage: &'a Coverage,
    /// Every cell's counted outcome (Evidence's, over every run set).
    pub outcomes: &'a [Outcome],
    pub cfg: &'a CampaignConfig,
    pub history: &'a History,
    /// The route of the newest batch (model, endpoint), the drafts' default.
    pub newest_route: Option<(Option<String>, Option<String>)>,
}

/// A difference to the baseline with its 95 % interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Difference {
    pub difference: f64,
    pub ci95: Interval,
}

/// One proposed batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Proposal {
    pub task: String,
    /// The level of the compared factor whose cells it runs.
    pub level: String,
    /// The model its cells plan, when the matrix has a model factor.
    pub model: Option<String>,
    /// The difference it narrows: `compared − baseline`.
    pub compared: String,
    pub baseline: String,
    /// Trials counted today on each side (cells, or samples).
    pub n_compared: u64,
    pub n_baseline: u64,
    /// Today's difference (none while a side has nothing counted).
    pub today: Option<Difference>,
    /// The fixed-look interval's expected half-width after the batch, and
    /// the expected interval (for one look: the words, not the ranking).
    pub after: f64,
    pub after_ci95: Interval,
    /// The always-valid margin of the difference today (1 while a side has
    /// nothing counted) and expected after the batch: the half-width of an
    /// interval that holds however often it is read
    /// ([`super::sequential::difference_interval`]). The ranking weighs how
    /// much it shrinks.
    #[serde(default)]
    pub margin: f64,
    #[serde(default)]
    pub margin_after: f64,
    /// Its verdict is clear (the guide's family: see the module).
    pub settled: bool,
    /// Cells per group to tell a difference of the query's `delta` from the
    /// baseline's rate at 95 % confidence and 80 % power (the formula in
    /// [`super::impact`]) — for one look at a size fixed in advance; none
    /// when the rate leaves no room for it.
    pub cells_needed: Option<u64>,
    /// Cells per group by which the verdict (the unpaired always-valid test,
    /// read after every cell) settles that difference in 80 % of simulated
    /// campaigns ([`super::impact::cells_to_settle`]); none as above, or
    /// past 6,000.
    #[serde(default)]
    pub cells_to_settle: Option<u64>,
    /// The ranking score: 1 + the gain (how much the always-valid margin
    /// shrinks) for an open comparison, the gain for a settled one.
    pub score: f64,
    /// The cells still to run that it draws from (gaps and failed cells).
    pub open_cells: usize,
    /// Cells in its draft; of them, failed cells it re-runs.
    pub cells: usize,
    pub reruns: usize,
    pub held_back: Vec<HeldBack>,
    /// What it would resolve, in words.
    pub words: String,
    /// The draft request that makes it (`POST /api/drafts`).
    pub request: DraftRequest,
    /// Its predicted tokens, cost and hours, with a low–high range (none when
    /// it cannot be drafted as it is).
    pub prediction: Option<Prediction>,
    /// Why it cannot be drafted as it is (e.g. name a model), if it cannot.
    pub refused: Vec<String>,
}

/// `GET /api/propose`: the ranking.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Proposals {
    pub by: String,
    pub baseline: Option<String>,
    pub count: CountUnit,
    pub max_cells: usize,
    pub delta_pp: f64,
    /// The drafts' route in words, and where it came from.
    pub route: String,
    /// How the ranking is made, in words.
    pub how: String,
    /// Candidates considered (every task × level with a cell to run).
    pub considered: usize,
    /// The best, best first.
    pub proposals: Vec<Proposal>,
    /// Why there is nothing to propose, or what could not be weighed.
    pub notes: Vec<String>,
}

/// A candidate before it is drafted.
struct Candidate {
    task: String,
    model: Option<String>,
    level: usize,
    open_cells: usize,
    reruns_open: usize,
    /// Trials a cell adds, on average, in this group (1 for cells).
    per_cell: f64,
    compared: usize,
    narrowing: Narrowing,
}

/// The group a cell's counts and candidates fall in: its task, and its model
/// when candidates are split by model.
type GroupKey = (String, Option<String>);

/// Counts per group and level: successes, trials, counted cells, open cells,
/// failed open cells.
#[derive(Default, Clone)]
struct Tally {
    successes: u64,
    trials: u64,
    cells: u64,
    open: usize,
    failed: usize,
    /// Its counted outcomes in the order they ended: the verdict's input.
    observed: Vec<super::Observed>,
}

/// The groups cells fall in, found by borrowed texts while counting
/// 100,000 cells; a group's key is owned once, when it is first seen.
#[derive(Default)]
struct Groups<'a> {
    by: &'a str,
    levels: &'a [String],
    split_by_model: bool,
    index: HashMap<(Cow<'a, str>, Option<Cow<'a, str>>), usize>,
    keys: Vec<GroupKey>,
}

impl<'a> Groups<'a> {
    /// A cell's group and level (`None`: its level of `by` is not planned).
    fn place(&mut self, factors: &'a BTreeMap<String, Value>) -> Option<(usize, usize)> {
        let level = factors.get(self.by).map(text_of)?;
        let at = self.levels.iter().position(|l| *l == level)?;
        let model = if self.split_by_model { factors.get("model").map(text_of) } else { None };
        let key = (factors.get("task").map(text_of).unwrap_or_default(), model);
        let group = match self.index.get(&key) {
            Some(&g) => g,
            None => {
                self.keys.push((key.0.to_string(), key.1.as_ref().map(|m| m.to_string())));
                self.index.insert(key, self.keys.len() - 1);
                self.keys.len() - 1
            }
        };
        Some((group, at))
    }

    /// The tally of a placed cell, the group's row made when it is new.
    fn tally<'t>(&self, tallied: &'t mut Vec<Vec<Tally>>, (group, at): (usize, usize)) -> &'t mut Tally {
        if tallied.len() <= group {
            tallied.resize(group + 1, vec![Tally::default(); self.levels.len()]);
        }
        &mut tallied[group][at]
    }
}

/// Each group's verdicts, level by level against its baseline (the first):
/// the unpaired always-valid test of each, Holm across every comparison the
/// guide makes (its family), clear at α — as Evidence decides.
fn verdicts(tallied: &[Vec<Tally>]) -> Vec<Vec<bool>> {
    let mut at: Vec<(usize, usize)> = Vec::new();
    let mut p: Vec<f64> = Vec::new();
    for (g, levels) in tallied.iter().enumerate() {
        let Some(base) = levels.first() else { continue };
        for (l, t) in levels.iter().enumerate().skip(1).filter(|(_, t)| t.trials > 0 && base.trials > 0) {
            at.push((g, l));
            p.push(super::unpaired_test(&t.observed, &base.observed).p_value);
        }
    }
    let mut out: Vec<Vec<bool>> = tallied.iter().map(|l| vec![false; l.len()]).collect();
    for ((g, l), adjusted) in at.into_iter().zip(super::sequential::holm(&p)) {
        out[g][l] = adjusted <= super::sequential::ALPHA;
    }
    out
}

/// A factor value's text, borrowed where it is a string.
fn text_of(v: &Value) -> Cow<'_, str> {
    match v {
        Value::String(s) => Cow::Borrowed(s),
        other => Cow::Owned(other.to_string()),
    }
}

/// The ranking the query asks for.
pub fn propose(input: &ProposeInput, q: &ProposeQuery) -> Proposals {
    let ProposeInput { matrix, coverage, outcomes, cfg, .. } = *input;
    let levels: Vec<String> =
        matrix.levels().get(&q.by).map(|v| v.iter().map(value_text).collect()).unwrap_or_default();
    let split_by_model = q.by != "model" && matrix.factors.iter().any(|f| f == "model");
    let mut groups = Groups { by: &q.by, levels: &levels, split_by_model, ..Default::default() };
    let mut tallied: Vec<Vec<Tally>> = Vec::new();
    for c in &coverage.cells {
        if let Some(t) = groups.place(&c.factors).map(|at| groups.tally(&mut tallied, at)) {
            t.open += usize::from(matches!(c.state, CellState::Gap | CellState::Failed));
            t.failed += usize::from(c.state == CellState::Failed);
        }
    }
    for o in outcomes {
        if let Some(t) = groups.place(&o.factors).map(|at| groups.tally(&mut tallied, at)) {
            t.successes += o.successes;
            t.trials += o.trials;
            t.cells += 1;
            t.observed.push(super::Observed::of(o));
        }
    }
    let groups = groups.keys;
    let clear = verdicts(&tallied);
    let tallies: BTreeMap<GroupKey, Vec<Tally>> = groups.iter().cloned().zip(tallied).collect();
    let mut candidates: Vec<Candidate> = Vec::new();
    for (gi, g) in groups.iter().enumerate() {
        let ts = &tallies[g];
        let counts: Vec<Counts> = ts.iter().map(|t| Counts { successes: t.successes, n: t.trials }).collect();
        let (all_trials, all_cells) = ts.iter().fold((0, 0), |(n, c), t| (n + t.trials, c + t.cells));
        for (at, t) in ts.iter().enumerate().filter(|(_, t)| t.open > 0) {
            let per_cell = match (t.cells, all_cells) {
                (0, 0) => 1.0,
                (0, _) => all_trials as f64 / all_cells as f64,
                (c, _) => t.trials as f64 / c as f64,
            };
            let k = t.open.min(q.max_cells);
            let Some((compared, narrowing)) = best_comparison(&counts, &clear[gi], at, trials(k, per_cell)) else {
                continue;
            };
            candidates.push(Candidate {
                task: g.0.clone(),
                model: g.1.clone(),
                level: at,
                open_cells: t.open,
                reruns_open: t.failed,
                per_cell,
                compared,
                narrowing,
            });
        }
    }
    // Best first; ties keep the matrix's order (a stable sort).
    candidates.sort_by(|a, b| b.narrowing.rank().total_cmp(&a.narrowing.rank()));
    let considered = candidates.len();
    let (route_model, route_endpoint, route) = route(input, q, split_by_model);
    // Made once for every draft: which planned cells failed (a draft's
    // re-runs).
    let failed: std::collections::HashSet<&str> =
        coverage.cells.iter().filter(|x| x.state == CellState::Failed).map(|x| x.cell.as_str()).collect();
    let mut proposals: Vec<Proposal> = candidates
        .into_iter()
        .take(q.top)
        .map(|c| {
            let counts = &tallies[&(c.task.clone(), c.model.clone())];
            drafted(input, q, &levels, counts, c, (route_model.clone(), route_endpoint.clone()), &failed)
        })
        .collect();
    proposals.sort_by(|a, b| b.score.total_cmp(&a.score));
    let mut notes = Vec::new();
    if matrix.cells.is_empty() {
        notes.push("nothing is planned: the campaign has no matrix.csv, or it has no rows".into());
    } else if levels.len() < 2 {
        notes.push(format!(
            "the matrix plans {} level(s) of {}: there is no difference to narrow (compare by another factor)",
            levels.len(),
            q.by
        ));
    } else if considered == 0 {
        notes.push(format!("no planned cell is left to run ({})", coverage.totals.words()));
    }
    Proposals {
        by: q.by.clone(),
        baseline: levels.first().cloned(),
        count: cfg.results.count,
        max_cells: q.max_cells,
        delta_pp: q.delta,
        route,
        how: format!(
            "Each task's difference of a {by} to the baseline ({}), as Evidence counts it: the batches whose cells would most narrow the always-valid margin of an open difference (one whose verdict is not clear) come first, then those of settled ones. The margin is the half-width of a 95 % interval that holds however often it is read, as the verdict does; the one-look interval Evidence shows narrows too, and is said beside it. The next cells are expected at the rates observed so far (½ where nothing is observed yet).",
            levels.first().map_or("none", String::as_str),
            by = q.by
        ),
        considered,
        proposals,
        notes,
    }
}

/// Trials `k` cells add at `per_cell` each.
fn trials(k: usize, per_cell: f64) -> u64 {
    (k as f64 * per_cell).round().max(k.min(1) as f64) as u64
}

/// The drafts' model and endpoint, and the route in words.
fn route(input: &ProposeInput, q: &ProposeQuery, cells_name_models: bool) -> (Option<String>, Option<String>, String) {
    let words = |m: &Option<String>, e: &Option<String>| match (m, e) {
        (Some(m), Some(e)) => format!("model {m} on endpoint {e}"),
        (Some(m), None) => format!("model {m}"),
        (None, Some(e)) => format!("endpoint {e}"),
        (None, None) => String::new(),
    };
    if q.model.is_some() || q.endpoint.is_some() {
        return (q.model.clone(), q.endpoint.clone(), format!("{} (asked for)", words(&q.model, &q.endpoint)));
    }
    if cells_name_models {
        return (None, None, "each cell's own model (the matrix's model factor)".into());
    }
    match &input.newest_route {
        Some((m, e)) if m.is_some() || e.is_some() => {
            (m.clone(), e.clone(), format!("{} (the newest batch's route)", words(m, e)))
        }
        _ => (None, None, "none chosen: name a model (and an endpoint for a local one) to draft".into()),
    }
}

/// A candidate drafted: its cells, prediction and words.
fn drafted(
    input: &ProposeInput,
    q: &ProposeQuery,
    levels: &[String],
    tallies: &[Tally],
    c: Candidate,
    (model, endpoint): (Option<String>, Option<String>),
    failed: &std::collections::HashSet<&str>,
) -> Proposal {
    let level = levels[c.level].clone();
    let mut filters = BTreeMap::from([("task".to_owned(), vec![c.task.clone()]), (q.by.clone(), vec![level.clone()])]);
    if let Some(m) = &c.model {
        filters.insert("model".into(), vec![m.clone()]);
    }
    let request = DraftRequest {
        label: label(&["next", &c.task, &level]),
        filters,
        max_cells: Some(c.open_cells.min(q.max_cells) as f64),
        model,
        endpoint,
        ..Default::default()
    };
    let counts: Vec<Counts> = tallies.iter().map(|t| Counts { successes: t.successes, n: t.trials }).collect();
    let (mut cells, mut narrowing, mut held_back, mut reruns) =
        (c.open_cells.min(q.max_cells), c.narrowing, Vec::new(), c.reruns_open.min(c.open_cells.min(q.max_cells)));
    let (prediction, refused) =
        match crate::console::draft::from_gaps(input.matrix, input.coverage, input.cfg, &request) {
            Ok(d) => {
                if d.spec.cells.len() != cells {
                    cells = d.spec.cells.len();
                    // The same comparison, with the cells the draft really holds.
                    let k = trials(cells, c.per_cell);
                    let again = match c.level {
                        0 => narrowing_of(counts[c.compared], counts[0], 0, k),
                        at => narrowing_of(counts[at], counts[0], k, 0),
                    };
                    if let Some(n) = again {
                        narrowing = n;
                    }
                }
                reruns = d.spec.cells.iter().filter(|x| failed.contains(x.id.as_str())).count();
                held_back = d.held_back;
                (Some(crate::console::preflight::predict(&d.spec, input.cfg, input.history)), Vec::new())
            }
            Err(why) => (None, why),
        };
    let (compared, baseline) = (levels[c.compared].clone(), levels[0].clone());
    let side = |at: usize| tallies[at].trials;
    let base_rate = counts[0].expected_rate();
    let d = q.delta / 100.0;
    let target = if base_rate + d <= 1.0 { base_rate + d } else { base_rate - d };
    let per_cell = c.per_cell.max(1e-9);
    let per_group = |trials: u64| (trials as f64 / per_cell).ceil() as u64;
    let in_range = (0.0..=1.0).contains(&target);
    let cells_needed = in_range.then(|| cells_needed(target, base_rate, CONFIDENCE, POWER)).flatten().map(per_group);
    let cells_to_settle = in_range.then(|| cells_to_settle(target, base_rate, POWER)).flatten().map(per_group);
    let today = narrowing.today.map(|(difference, ci95)| Difference { difference, ci95 });
    let words = words(&c.task, &q.by, &level, c.model.as_deref(), &compared, &baseline, cells, reruns, &narrowing);
    Proposal {
        task: c.task,
        level,
        model: c.model,
        compared,
        baseline,
        n_compared: side(c.compared),
        n_baseline: side(0),
        today,
        after: narrowing.after,
        after_ci95: narrowing.interval,
        margin: narrowing.margin,
        margin_after: narrowing.margin_after,
        settled: narrowing.settled(),
        cells_needed,
        cells_to_settle,
        score: narrowing.rank(),
        open_cells: c.open_cells,
        cells,
        reruns,
        held_back,
        words,
        request,
        prediction,
        refused,
    }
}

/// "12 more cells on task reversal, condition memory: the difference to
/// baseline, now −8 pp [−31, +15], would narrow to about ±11 pp".
#[allow(clippy::too_many_arguments)]
fn words(
    task: &str,
    by: &str,
    level: &str,
    model: Option<&str>,
    compared: &str,
    baseline: &str,
    cells: usize,
    reruns: usize,
    n: &Narrowing,
) -> String {
    let on_model = model.map(|m| format!(", model {m}")).unwrap_or_default();
    let rerun = match reruns {
        0 => String::new(),
        1 => " (1 of them a failed cell run again)".into(),
        r => format!(" ({r} of them failed cells run again)"),
    };
    let which = if compared == level {
        format!("the difference to {baseline}")
    } else {
        format!("the difference {compared} − {baseline}")
    };
    let now = n.words();
    format!(
        "{cells} more cell{} on task {task}, {by} {level}{on_model}{rerun}: {which}, {now}",
        if cells == 1 { "" } else { "s" }
    )
}

/// A draft label from parts: letters, digits, `-`, `_`, `.` kept, anything
/// else a `-`, at most 60 characters (the draft's time is added to its file).
fn label(parts: &[&str]) -> String {
    let joined = parts.join("-");
    let mut out: String = joined
        .chars()
        .map(|ch| if ch.is_ascii_alphanumeric() || matches!(ch, '-' | '_' | '.') { ch } else { '-' })
        .take(60)
        .collect();
    if out.is_empty() {
        out.push_str("next");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{ModelEntry, ModelKind};
    use crate::console::coverage::{compute, RunSetCells};
    use crate::console::preflight::Sample;
    use crate::drive::records::{CellRecord, CellStatus};
    use crate::results::{outcomes, RunSetRecords};

    /// Two conditions × two tasks × six seeds. Task t1: base 5 of 6 pass,
    /// mem 2 of 3 ended (1 failed) and 3 gaps. Task t2: base 3 of 3 pass,
    /// mem 0 of 3 (−100 pp, open: too few to settle), with 3 gaps each.
    fn campaign() -> (Matrix, Vec<CellRecord>) {
        let mut csv = String::from("condition,task,phase,seed,repetition\n");
        for cond in ["base", "mem"] {
            for task in ["t1", "t2"] {
                for seed in 1..=6 {
                    csv.push_str(&format!("{cond},{task},p,{seed},0\n"));
                }
            }
        }
        let m = crate::console::matrix::parse(csv.as_bytes());
        let cell = |cond: &str, task: &str, seed: i64| {
            m.cells
                .iter()
                .find(|c| c.factors["condition"] == cond && c.factors["task"] == task && c.factors["seed"] == seed)
                .unwrap()
        };
        let mut recs = Vec::new();
        let mut rec = |cond, task, seed, status| {
            let mut r = CellRecord::new(cell(cond, task, seed), status);
            r.ended_at = Some(format!("2026-12-01T00:00:{seed:02}Z"));
            r.started_at = Some("2026-12-01T00:00:00Z".into());
            r.tokens = Some(1000 * seed as u64);
            recs.push(r);
        };
        for seed in 1..=6 {
            rec("base", "t1", seed, if seed == 6 { CellStatus::Failed } else { CellStatus::Done });
        }
        for seed in 1..=3 {
            rec("mem", "t1", seed, if seed == 3 { CellStatus::Failed } else { CellStatus::Done });
            rec("base", "t2", seed, CellStatus::Done);
            rec("mem", "t2", seed, CellStatus::Failed);
        }
        (m, recs)
    }

    fn cfg() -> CampaignConfig {
        let mut c = CampaignConfig::unnamed("t");
        c.models = vec![
            ModelEntry::new("gpt", ModelKind::Paid, None, 0.5),
            ModelEntry::new("claude", ModelKind::Paid, None, 1.0),
        ];
        c
    }

    fn answer(q: &ProposeParams, newest: Option<&str>) -> Proposals {
        let (m, recs) = campaign();
        let cov = compute(&m, &[RunSetCells { name: "rs1".into(), live: false, cells: recs.clone() }]);
        let cfg = cfg();
        let outs = outcomes(&[RunSetRecords { name: "rs1", model: Some("gpt"), cells: &recs }], &cfg.results);
        let mut history = History::default();
        for r in &recs {
            let task = value_text(&r.factors["task"]);
            history.by_task.entry(task).or_default().push(Sample { tokens: r.tokens, seconds: Some(60.0) });
        }
        let input = ProposeInput {
            matrix: &m,
            coverage: &cov,
            outcomes: &outs,
            cfg: &cfg,
            history: &history,
            newest_route: newest.map(|m| (Some(m.to_owned()), None)),
        };
        propose(&input, &q.parse(&m).unwrap())
    }

    #[test]
    fn open_differences_rank_before_settled_ones_and_say_what_they_would_resolve() {
        let p = answer(&ProposeParams::default(), Some("gpt"));
        assert_eq!((p.by.as_str(), p.baseline.as_deref()), ("condition", Some("base")));
        // t1 base (1 failed to re-run), t1 mem (3 gaps + 1 failed), t2 base, t2 mem.
        assert_eq!(p.considered, 4);
        // Every comparison is open (see below): ranked by what they would
        // narrow; t1's mem cells, for one.
        let first = p.proposals.iter().find(|x| x.task == "t1" && x.level == "mem").unwrap();
        assert_eq!((first.task.as_str(), first.level.as_str(), first.compared.as_str()), ("t1", "mem", "mem"));
        assert!(!first.settled);
        // mem 2/3 against base 5/6: today −17 pp; with 4 more mem cells at ⅔.
        let today = first.today.unwrap();
        assert_eq!((today.difference * 100.0).round(), -17.0);
        assert_eq!((first.open_cells, first.cells, first.reruns), (4, 4, 1));
        assert_eq!(
            first.words,
            format!(
                "4 more cells on task t1, condition mem (1 of them a failed cell run again): the difference to base, now −17 pp [{:+.0}, {:+.0}] at one look, would narrow to about ±{:.0} pp; always-valid ±{:.0} → ±{:.0} pp",
                today.ci95.lo * 100.0,
                today.ci95.hi * 100.0,
                first.after * 100.0,
                first.margin * 100.0,
                first.margin_after * 100.0
            )
            .replace("[-", "[−")
        );
        assert!(first.after < (today.ci95.hi - today.ci95.lo) / 2.0, "the interval narrows");
        // The always-valid margin is wider than the one look's and narrows too.
        assert!(first.margin_after < first.margin && first.margin > (today.ci95.hi - today.ci95.lo) / 2.0);
        assert_eq!(first.request.filters["task"], ["t1"]);
        assert_eq!(first.request.filters["condition"], ["mem"]);
        assert_eq!((first.request.model.as_deref(), first.request.max_cells), (Some("gpt"), Some(4.0)));
        assert_eq!(first.request.label, "next-t1-mem");
        // Its cost from t1's history (median 3,000 tokens a cell at 0.50 a 1,000).
        let pr = first.prediction.as_ref().unwrap();
        assert_eq!((pr.cells, pr.tokens, pr.cost), (4, 12_000, Some(6.0)));
        assert!(pr.range.is_some());
        // 20 pp from base's 5/6 cannot go up: the power calculation is for
        // 5/6 − 20 pp against 5/6: 75.55 by the formula, so 76 per group.
        assert_eq!(first.cells_needed, Some(76));
        let settle = first.cells_to_settle.unwrap();
        assert!(settle > 76 && settle < 76 * 2, "the verdict needs more than one look: {settle}");
        // t2 (0/3 against 3/3): its fixed-look interval excludes 0, but three
        // cells a side settle nothing under repeated looks — it stays open.
        assert!(
            p.proposals.iter().all(|x| !x.settled),
            "{:?}",
            p.proposals.iter().map(|x| &x.words).collect::<Vec<_>>()
        );
        assert!(p.proposals.windows(2).all(|w| w[0].score >= w[1].score));
    }

    /// The guide's verdicts are Evidence's test, Holm across its family: 30
    /// passes against 30 failures, one a batch each, is clear; 3 against 3 is
    /// not, in the same family.
    #[test]
    fn a_comparison_is_settled_by_the_verdict_not_the_fixed_look_interval() {
        let tally = |passes: bool, n: u64| {
            let observed: Vec<crate::results::Observed> = (0..n)
                .map(|i| crate::results::Observed {
                    at: (format!("2026-12-01T00:{:02}:{:02}Z", i / 60, i % 60), "rs".into(), format!("c{i}")),
                    successes: u64::from(passes),
                    trials: 1,
                })
                .collect();
            Tally { successes: if passes { n } else { 0 }, trials: n, cells: n, observed, ..Default::default() }
        };
        let groups = vec![vec![tally(true, 30), tally(false, 30)], vec![tally(true, 3), tally(false, 3)]];
        assert_eq!(verdicts(&groups), [[false, true], [false, false]]);
        // Their narrowing, given the verdicts: the settled one ranks after the open one.
        let counts = |g: &[Tally]| g.iter().map(|t| Counts { successes: t.successes, n: t.trials }).collect::<Vec<_>>();
        let (_, settled) = best_comparison(&counts(&groups[0]), &[false, true], 1, 4).unwrap();
        let (_, open) = best_comparison(&counts(&groups[1]), &[false, false], 1, 4).unwrap();
        assert!(settled.settled() && !open.settled() && open.rank() > settled.rank());
        let said = words("t2", "condition", "mem", None, "mem", "base", 4, 0, &settled);
        assert!(said.contains("at one look (settled: its verdict is clear)"), "{said}");
    }

    #[test]
    fn without_a_route_the_proposal_says_what_to_name_and_top_bounds_the_answer() {
        let p = answer(&ProposeParams { top: Some("2".into()), ..Default::default() }, None);
        assert_eq!(p.proposals.len(), 2);
        assert!(p.route.starts_with("none chosen"), "{}", p.route);
        let first = &p.proposals[0];
        assert_eq!(first.prediction, None);
        assert!(first.refused.iter().any(|r| r.starts_with("model: name one")), "{:?}", first.refused);
        let asked = answer(&ProposeParams { model: Some("claude".into()), ..Default::default() }, Some("gpt"));
        assert_eq!(asked.route, "model claude (asked for)");
        assert_eq!(asked.proposals[0].prediction.as_ref().unwrap().cost, Some(12.0));
    }

    #[test]
    fn a_bad_query_names_its_field() {
        let (m, _) = campaign();
        let bad = |p: ProposeParams| p.parse(&m).unwrap_err();
        assert_eq!(bad(ProposeParams { by: Some("task".into()), ..Default::default() }).field, "by");
        let e = bad(ProposeParams { by: Some("colour".into()), ..Default::default() });
        assert_eq!(e.problem, "not a factor of the matrix (factors: condition, task, phase, seed, repetition)");
        for (field, p) in [
            ("max_cells", ProposeParams { max_cells: Some("0".into()), ..Default::default() }),
            ("top", ProposeParams { top: Some("51".into()), ..Default::default() }),
            ("delta", ProposeParams { delta: Some("150".into()), ..Default::default() }),
            ("delta", ProposeParams { delta: Some("x".into()), ..Default::default() }),
        ] {
            assert_eq!(bad(p).field, field);
        }
        let q = ProposeParams { delta: Some("10pp".into()), ..Default::default() }.parse(&m).unwrap();
        assert_eq!((q.delta, q.max_cells, q.top), (10.0, DEFAULT_DRAFT_CELLS, DEFAULT_TOP));
        // One level of the factor: nothing to compare, said so.
        let one = answer(&ProposeParams { by: Some("phase".into()), ..Default::default() }, Some("gpt"));
        assert!(one.proposals.is_empty() && one.notes[0].contains("1 level(s) of phase"), "{:?}", one.notes);
    }
}
