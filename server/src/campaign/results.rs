//! The results views' reads: the evidence (and its public export) and the
//! timing, over the cells a scope selects. The figures are made by the core
//! (`runboard::results`); this module chooses the records.

use std::collections::BTreeMap;
use std::sync::Arc;

use runboard::drive::records::CellRecord;
use runboard::results::scope::Scope;
use runboard::results::timing::{self, RunSetTiming, TimingView};
use runboard::results::{self as core, RunSetRecords};

use super::records::RunSetRead;
use super::{ApiError, Campaign};

/// The cells of a run set in scope: all of them (shared, not copied), or
/// those the scope kept.
pub enum InScope {
    All,
    Some(Vec<CellRecord>),
}

/// Run sets in scope, each with its cells in scope.
pub struct Scoped {
    pub scope: Scope,
    /// Newest first (by the time the batch started, then name).
    pub run_sets: Vec<(Arc<RunSetRead>, InScope)>,
}

/// What a figure was made from: the run sets in scope (each the shared
/// value read, compared by pointer: a run set read again is a new value),
/// the matrix, and the question (factor, scope, pass score).
struct MemoKey {
    sets: Vec<Arc<RunSetRead>>,
    matrix: Arc<runboard::console::matrix::Matrix>,
    question: String,
}

impl MemoKey {
    fn same(&self, other: &MemoKey) -> bool {
        self.question == other.question
            && Arc::ptr_eq(&self.matrix, &other.matrix)
            && self.sets.len() == other.sets.len()
            && self.sets.iter().zip(&other.sets).all(|(a, b)| Arc::ptr_eq(a, b))
    }
}

/// The evidence, the export and the proposals as last made: asked again
/// while no record changed, they are answered without counting 100,000
/// cells again.
#[derive(Default)]
pub struct ResultsMemo {
    evidence: std::sync::Mutex<Option<(MemoKey, core::Evidence)>>,
    export: std::sync::Mutex<Option<(MemoKey, core::export::Export)>>,
    proposals: std::sync::Mutex<Option<(MemoKey, runboard::results::propose::Proposals)>>,
}

/// The run set's model (from the spec it was driven with).
fn model_of(rs: &RunSetRead) -> Option<&str> {
    rs.spec.as_ref().and_then(|s| s.as_ref().ok()).and_then(|s| s.model.as_deref())
}

/// The records of a run set that a scope keeps.
fn scope_cells(scope: &Scope, rs: &RunSetRead) -> Vec<CellRecord> {
    rs.cells.iter().filter(|c| scope.cell_matches(c, model_of(rs))).cloned().collect()
}

/// A run set's cells in scope.
fn cells_of<'a>(rs: &'a RunSetRead, kept: &'a InScope) -> &'a [CellRecord] {
    match kept {
        InScope::All => &rs.cells,
        InScope::Some(v) => v,
    }
}

/// The factor evidence is grouped by: `condition` unless one is asked for,
/// which must be a factor of the matrix or `model` (the default is always
/// answered: an empty campaign has no factors yet).
fn by_factor<'a>(matrix: &runboard::console::matrix::Matrix, by: Option<&'a str>) -> Result<&'a str, ApiError> {
    let Some(asked) = by.map(str::trim).filter(|b| !b.is_empty()) else { return Ok("condition") };
    if asked == "model" || matrix.factors.iter().any(|f| f == asked) {
        return Ok(asked);
    }
    Err(ApiError::bad_query(&runboard::runview::trials::BadQuery {
        field: "by".into(),
        value: asked.to_owned(),
        problem: match matrix.factors.is_empty() {
            true => "not a factor: the campaign has no matrix.csv (only model can group it)".into(),
            false => format!("not a factor of the matrix (factors: {}, or model)", matrix.factors.join(", ")),
        },
    }))
}

/// Each factor's levels as text, in the matrix's order (how groups are listed).
fn level_order(matrix: &runboard::console::matrix::Matrix) -> BTreeMap<String, Vec<String>> {
    matrix
        .levels()
        .into_iter()
        .map(|(k, v)| (k, v.iter().map(runboard::console::matrix::value_text).collect()))
        .collect()
}

impl Campaign {
    /// Reads a scope's text against the matrix's factors; a 422 naming every
    /// problem when it cannot be read.
    pub fn scope(&self, text: Option<&str>) -> Result<Scope, ApiError> {
        let matrix = self.records.matrix();
        Scope::parse(text.unwrap_or(""), &matrix.factors).map_err(|e| {
            ApiError::bad_query(&runboard::runview::trials::BadQuery {
                field: "scope".into(),
                value: text.unwrap_or("").to_owned(),
                problem: e.to_string(),
            })
        })
    }

    /// The run sets and cells a scope selects: run sets carrying one of its
    /// tags, cells whose factors (and model) match and which ended (or, not
    /// yet ended, started) within its dates.
    pub fn scoped(&self, scope: Scope) -> Result<Scoped, ApiError> {
        let tags = if scope.tags.is_empty() { None } else { Some(self.records.tags().map_err(ApiError::unreadable)?) };
        // Only factors and dates choose cells; without them a run set's
        // cells are all in scope, shared as read.
        let filters_cells = !scope.factors.is_empty() || scope.from.is_some() || scope.to.is_some();
        let mut run_sets: Vec<(Arc<RunSetRead>, InScope)> = self
            .records
            .run_sets()
            .into_iter()
            .filter(|rs| tags.as_ref().is_none_or(|t| scope.tags_match(&t.of(&rs.name))))
            .filter_map(|rs| {
                if !filters_cells {
                    return Some((rs, InScope::All));
                }
                let cells = scope_cells(&scope, &rs);
                (!cells.is_empty()).then_some((rs, InScope::Some(cells)))
            })
            .collect();
        let started = |rs: &RunSetRead| rs.outcome_ok().map(|o| o.started_at.clone()).unwrap_or_default();
        run_sets.sort_by(|a, b| started(&b.0).cmp(&started(&a.0)).then_with(|| b.0.name.cmp(&a.0.name)));
        Ok(Scoped { scope, run_sets })
    }

    /// `GET /api/evidence?by=&scope=`: the results by a factor (default
    /// `condition`), per task and model, and the cells that did not pass.
    pub fn evidence(&self, by: Option<&str>, scope: Option<&str>) -> Result<core::Evidence, ApiError> {
        let cfg = self.config()?;
        let matrix = self.records.matrix();
        let by = by_factor(&matrix, by)?;
        let scoped = self.scoped(self.scope(scope)?)?;
        let key = MemoKey {
            sets: scoped.run_sets.iter().map(|(rs, _)| rs.clone()).collect(),
            matrix: matrix.clone(),
            question: format!("{by}\n{}\n{:?}", scoped.scope.text(), cfg.results),
        };
        let mut made = self.results_made.evidence.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, e)) = made.as_ref() {
            if k.same(&key) {
                return Ok(e.clone());
            }
        }
        let outcomes = outcomes(&scoped, &cfg.results);
        let samples = self.pairing_samples(&cfg, &outcomes);
        let mut e = core::evidence_with(&outcomes, by, &level_order(&matrix), samples.as_ref());
        e.scope = scoped.scope.text();
        e.count = cfg.results.count;
        *made = Some((key, e.clone()));
        Ok(e)
    }

    /// Every cell's counted outcome, unscoped: what the autopilot's expected
    /// impact judges its comparisons by (Evidence's verdict).
    pub fn every_outcome(&self) -> Result<Vec<core::Outcome>, ApiError> {
        let cfg = self.config()?;
        let scoped = self.scoped(self.scope(None)?)?;
        Ok(outcomes(&scoped, &cfg.results))
    }

    /// `GET /api/propose`: the next batches ranked by what they would
    /// resolve (`runboard::results::propose`), over every run set's counted
    /// cells; each drafted with the asked route, else the newest batch's.
    pub fn propose(
        &self,
        q: &runboard::results::propose::ProposeParams,
    ) -> Result<runboard::results::propose::Proposals, ApiError> {
        use runboard::results::propose::{propose, ProposeInput};
        let cfg = self.config()?;
        let made = self.coverage();
        let (matrix, coverage) = (&made.0, &made.1);
        let query = q.parse(matrix).map_err(|e| ApiError::bad_query(&e))?;
        let scoped = self.scoped(Scope::default())?;
        // Everything the ranking reads comes from these run sets, the matrix,
        // the campaign's settings and the question: while none changes, the
        // proposals stand.
        let key = MemoKey {
            sets: scoped.run_sets.iter().map(|(rs, _)| rs.clone()).collect(),
            matrix: self.records.matrix(),
            question: format!("{query:?}\n{cfg:?}"),
        };
        let mut memo = self.results_made.proposals.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, p)) = memo.as_ref() {
            if k.same(&key) {
                return Ok(p.clone());
            }
        }
        let outcomes = outcomes(&scoped, &cfg.results);
        // Newest first: the first run set whose spec reads names the route.
        let newest_route = scoped.run_sets.iter().find_map(|(rs, _)| {
            let spec = rs.spec.as_ref()?.as_ref().ok()?;
            Some((spec.model.clone(), spec.endpoint.clone()))
        });
        let history = self.history();
        let input = ProposeInput { matrix, coverage, outcomes: &outcomes, cfg: &cfg, history: &history, newest_route };
        let proposals = propose(&input, &query);
        *memo = Some((key, proposals.clone()));
        Ok(proposals)
    }

    /// `GET /api/evidence/export?scope=`: every counted cell, private
    /// factors left out, with its provenance.
    pub fn evidence_export(&self, scope: Option<&str>) -> Result<core::export::Export, ApiError> {
        let cfg = self.config()?;
        let matrix = self.records.matrix();
        let scoped = self.scoped(self.scope(scope)?)?;
        let (index, _) = self.records.run_index();
        let key = MemoKey {
            sets: scoped.run_sets.iter().map(|(rs, _)| rs.clone()).collect(),
            matrix: matrix.clone(),
            // The committed specs come from the run index; the private
            // factors from campaign.toml.
            question: format!("{}\n{:?}\n{}", scoped.scope.text(), cfg.results, index.len()),
        };
        let mut made = self.results_made.export.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, x)) = made.as_ref() {
            if k.same(&key) {
                let mut x = x.clone();
                x.provenance.generated_at = crate::system::clock::now();
                return Ok(x);
            }
        }
        let outcomes = outcomes(&scoped, &cfg.results);
        let mut counted: Vec<&str> = outcomes.iter().map(|o| o.run_set.as_str()).collect();
        counted.sort_unstable();
        counted.dedup();
        let mut specs: Vec<String> = index
            .iter()
            .filter(|e| counted.binary_search(&e.run_set.as_str()).is_ok())
            .map(|e| e.spec.clone())
            .collect();
        specs.sort();
        specs.dedup();
        let samples = self.pairing_samples(&cfg, &outcomes);
        let order = level_order(&matrix);
        let judged = core::export::Judged {
            levels: order.get("condition").map_or(&[][..], Vec::as_slice),
            samples: samples.as_ref(),
        };
        let mut export = core::export::export(
            &outcomes,
            &matrix.factors,
            &cfg.results.private_factors,
            judged,
            specs,
            crate::system::clock::now(),
            env!("CARGO_PKG_VERSION"),
        );
        export.provenance.scope = scoped.scope.text();
        *made = Some((key, export.clone()));
        Ok(export)
    }

    /// Every cell's timing in the scope (each run set's events read, cached).
    pub(super) fn timings_of(&self, scoped: &Scoped) -> Vec<timing::CellTiming> {
        let events: Vec<Arc<Vec<timing::TimedEvent>>> =
            scoped.run_sets.iter().map(|(rs, _)| self.records.events(&rs.name)).collect();
        let inputs: Vec<RunSetTiming> = scoped
            .run_sets
            .iter()
            .zip(&events)
            .map(|((rs, kept), ev)| RunSetTiming {
                name: &rs.name,
                spec: rs.spec.as_ref().and_then(|s| s.as_ref().ok()),
                cells: cells_of(rs, kept),
                events: ev,
            })
            .collect();
        timing::timings(&inputs, crate::system::clock::now())
    }

    /// `GET /api/timing?scope=&run_set=`: one run set's timeline, and over
    /// the scope which timings count, the durations and the throughput.
    pub fn timing(&self, scope: Option<&str>, run_set: Option<&str>) -> Result<TimingView, ApiError> {
        let scoped = self.scoped(self.scope(scope)?)?;
        let run_set = run_set.map(str::trim).filter(|r| !r.is_empty());
        if let Some(name) = run_set {
            if !scoped.run_sets.iter().any(|(rs, _)| rs.name == name) {
                return Err(ApiError::bad_query(&runboard::runview::trials::BadQuery {
                    field: "run_set".into(),
                    value: name.to_owned(),
                    problem: "no such run set in the scope".into(),
                }));
            }
        }
        let all = self.timings_of(&scoped);
        let names = scoped.run_sets.iter().map(|(rs, _)| rs.name.clone()).collect();
        Ok(timing::timing_view(&all, names, run_set, scoped.scope.text()))
    }
}

impl Campaign {
    /// `GET /api/overview`: the campaign's progress over time, the latest
    /// batches and what needs attention.
    pub fn overview(&self) -> Result<runboard::results::overview::OverviewView, ApiError> {
        use runboard::results::overview::{self as ov, Attention, AttentionKind, OverviewView, Totals};
        let live = self.live_shared();
        let sets = self.records.run_sets();
        let mut run_sets = self.summaries(&sets);
        run_sets.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.name.cmp(&a.name)));
        // The autopilot's state as it is on disk (read quietly: this page is
        // polled, and the Auto page names repairs).
        let auto_path = self.records.root().join(crate::auto::auto_state::STATE_FILE);
        let auto = crate::files::fsread::read_regular(&auto_path).ok().map(|b| runboard::auto::load(Some(&b)));
        let mut attention = ov::attention(
            &live.state,
            &live.words,
            &live.resumable_run_sets,
            auto.as_ref().map(|l| &l.state),
            &run_sets,
        );
        // Cells quiet for a reason worth a look (calls held by a rate limit,
        // a call in flight too long), cells gone silent, and a cap reached.
        for c in &live.cells {
            use runboard::gateway::calls::Quiet;
            if let Some(q @ (Quiet::Waiting { .. } | Quiet::InFlight { long: true, .. })) = &c.quiet {
                attention.push(Attention {
                    kind: if matches!(q, Quiet::Waiting { .. }) {
                        AttentionKind::Waiting
                    } else {
                        AttentionKind::CallLong
                    },
                    words: format!("{}: {}", c.cell, q.words()),
                    href: "/live".into(),
                });
            }
        }
        for st in &live.stalls {
            attention.push(Attention {
                kind: AttentionKind::Stalled,
                words: format!("Stalled: {}", st.words),
                href: "/live".into(),
            });
        }
        for c in live.spend.iter().flat_map(|s| &s.caps).filter(|c| c.reached) {
            attention.push(Attention {
                kind: AttentionKind::Budget,
                words: format!("Budget: {} — reached", c.words),
                href: "/live".into(),
            });
        }
        if let Some(l) = crate::live::notify::last_failure(self.records.root()) {
            attention.push(Attention {
                kind: AttentionKind::NotifyFailed,
                words: format!("Notifying {} failed at {}: {}", l.event, l.at.to_display(), l.failed.join("; ")),
                href: "/auto".into(),
            });
        }
        if let Some(l) = auto.as_ref().filter(|l| !l.repaired.is_empty()) {
            attention.push(Attention {
                kind: AttentionKind::AutoRepaired,
                words: format!("The autopilot's state file was repaired: {}", l.repaired.join("; ")),
                href: "/auto".into(),
            });
        }
        let matrix = self.records.matrix();
        if !matrix.problems.is_empty() {
            attention.push(Attention {
                kind: AttentionKind::Unreadable,
                words: format!("matrix.csv: {} row(s) not taken: {}", matrix.problems.len(), matrix.problems[0]),
                href: "/coverage".into(),
            });
        }
        // The next step, when nothing else is under way: draft from the gaps.
        let gaps = self.coverage().1.totals.gap;
        let idle = matches!(live.state, runboard::live::LiveState::Idle { .. });
        if gaps > 0 && idle {
            attention.push(Attention {
                kind: AttentionKind::NextStep,
                words: format!(
                    "{} planned cell{} {} gaps: see what the next cells would resolve, and draft the next batch, on the proposal guide (Next).",
                    runboard::basics::numfmt::thousands(gaps as u64),
                    if gaps == 1 { "" } else { "s" },
                    if gaps == 1 { "is a" } else { "are" }
                ),
                href: "/next".into(),
            });
        }
        let points = ov::progress(sets.iter().flat_map(|rs| rs.cells.iter()), crate::system::clock::now(), ov::SAMPLES);
        let last = points.last().copied();
        let series = |name: &str, f: fn(&ov::ProgressPoint) -> usize| runboard::charts::Series {
            name: name.into(),
            points: points.iter().map(|p| (p.at, f(p) as f64)).collect(),
        };
        let progress = runboard::charts::lines_over_time(
            "Campaign progress",
            "cells",
            &[
                series("covered (done)", |p| p.covered),
                series("failed", |p| p.failed),
                series("running", |p| p.running),
            ],
        );
        Ok(OverviewView {
            totals: Totals {
                planned: matrix.cells.len(),
                covered: last.map_or(0, |p| p.covered),
                failed: last.map_or(0, |p| p.failed),
                running: last.map_or(0, |p| p.running),
                run_sets: run_sets.len(),
            },
            live_words: live.words.clone(),
            progress,
            latest: run_sets.into_iter().take(ov::LATEST).collect(),
            attention,
        })
    }
}

impl Campaign {
    /// `GET /api/reports?scope=`: the run sets with cells in scope, newest
    /// first.
    pub fn reports(&self, scope: Option<&str>) -> Result<Vec<runboard::runsets::RunSetSummary>, ApiError> {
        // Those with a cell in scope (its factors, and the day it ended).
        let scoped = self.scoped(self.scope(scope)?)?;
        let sets: Vec<Arc<RunSetRead>> = scoped.run_sets.into_iter().map(|(rs, _)| rs).collect();
        Ok(self.summaries(&sets))
    }

    /// `GET /api/reports/{run_set}?scope=`: one run set's report, its cells
    /// filtered by the scope; `runs` is the run list (for its run folders).
    pub fn report(
        &self,
        name: &str,
        scope: Option<&str>,
        runs: &[runboard::runview::RunRow],
    ) -> Result<runboard::results::report::Report, ApiError> {
        let scope = self.scope(scope)?;
        let Some(rs) = self.records.run_set(name) else {
            return Err(ApiError::not_found(format!("no run set {name:?} under runsets/")));
        };
        let cfg = self.config()?;
        let spec = rs.spec.as_ref().and_then(|s| s.as_ref().ok());
        let cells = scope_cells(&scope, &rs);
        let summary = self.summaries(std::slice::from_ref(&rs)).pop().unwrap_or_default();
        Ok(runboard::results::report::report(runboard::results::report::ReportInputs {
            outcome: rs.outcome_ok().cloned(),
            spec,
            cells: &cells,
            prices: runboard::live::spend::prices_of(&cfg, model_of(&rs)),
            pass_score: cfg.results.pass_score,
            currency: cfg.currency.clone(),
            runs,
            problems: rs.problems.clone(),
            scope: scope.text(),
            now: crate::system::clock::now(),
            summary,
        }))
    }
}

impl Campaign {
    fn presets(&self) -> Result<runboard::results::cohorts::Presets, String> {
        let path = self.records.root().join(runboard::results::cohorts::PRESETS_FILE);
        let bytes = self.records.within().read_opt(&path).transpose()?;
        runboard::results::cohorts::parse(bytes.as_deref())
            .map_err(|e| format!("{}: {e}", runboard::results::cohorts::PRESETS_FILE))
    }

    /// `GET /api/cohorts`.
    pub fn cohorts(&self) -> runboard::results::cohorts::CohortsView {
        match self.presets() {
            Ok(p) => runboard::results::cohorts::CohortsView { presets: p.presets, problem: None },
            Err(e) => runboard::results::cohorts::CohortsView { presets: Vec::new(), problem: Some(e) },
        }
    }

    /// Saves, renames or deletes a preset under the campaign lock, and
    /// replaces the file atomically. A file that cannot be read is left as
    /// it is (422, nothing changed).
    pub fn cohort_edit(
        &self,
        edit: impl FnOnce(
            &mut runboard::results::cohorts::Presets,
            &[String],
        ) -> Result<(), runboard::results::cohorts::EditError>,
    ) -> Result<runboard::results::cohorts::CohortsView, ApiError> {
        use runboard::results::cohorts::EditError;
        let _lock = self.lock()?;
        let mut presets =
            self.presets().map_err(|e| ApiError::unreadable(format!("{e}; fix or remove it (nothing was changed)")))?;
        let factors = self.records.matrix().factors.clone();
        edit(&mut presets, &factors).map_err(|e| match e {
            EditError::Refused(r) => ApiError::refused(r),
            EditError::NoSuchPreset(n) => ApiError::not_found(format!("no cohort preset named {n:?}")),
        })?;
        crate::files::atomic::write_json(&self.records.root().join(runboard::results::cohorts::PRESETS_FILE), &presets)
            .map_err(|e| crate::web::error::internal("writing the presets", e))?;
        Ok(runboard::results::cohorts::CohortsView { presets: presets.presets, problem: None })
    }

    /// `GET /api/cohorts/compare?names=a,b`: each named preset's figures,
    /// the first as the baseline.
    pub fn cohort_compare(
        &self,
        names: Option<&str>,
        by: Option<&str>,
    ) -> Result<runboard::results::cohorts::Comparison, ApiError> {
        use runboard::results::cohorts::{compare, CohortFigures};
        let presets = self.presets().map_err(ApiError::unreadable)?;
        let names: Vec<&str> = names.unwrap_or("").split(',').map(str::trim).filter(|n| !n.is_empty()).collect();
        let bad = |problem: String| {
            ApiError::bad_query(&runboard::runview::trials::BadQuery {
                field: "names".into(),
                value: names.join(","),
                problem,
            })
        };
        if names.is_empty() {
            return Err(bad("name one or more cohort presets, comma-separated".into()));
        }
        let unknown: Vec<&str> = names.iter().copied().filter(|n| presets.get(n).is_none()).collect();
        if !unknown.is_empty() {
            return Err(bad(format!("no preset named {}", unknown.join(", "))));
        }
        let cfg = self.config()?;
        let matrix = self.records.matrix();
        let by = by_factor(&matrix, by)?;
        let order = level_order(&matrix);
        let mut figures = Vec::new();
        for name in names {
            let preset = presets.get(name).cloned().unwrap_or_else(|| unreachable!("checked above"));
            let scoped = self.scoped(self.scope(Some(&preset.scope))?)?;
            let outcomes = outcomes(&scoped, &cfg.results);
            let all = self.timings_of(&scoped);
            let samples = self.pairing_samples(&cfg, &outcomes);
            let mut evidence = core::evidence_with(&outcomes, by, &order, samples.as_ref());
            // The comparison draws its own charts; each cohort's would be
            // sent for nothing.
            evidence.charts = Default::default();
            evidence.scope = preset.scope.clone();
            evidence.count = cfg.results.count;
            figures.push(CohortFigures {
                name: preset.name.clone(),
                scope: preset.scope.clone(),
                passes: evidence.overall,
                run_sets: scoped.run_sets.len(),
                tokens: outcomes.iter().filter_map(|o| o.tokens).sum(),
                evidence,
                timing: timing::summary(&all),
                validity: timing::validity(&all),
                observed: outcomes.iter().map(runboard::results::Observed::of).collect(),
            });
        }
        Ok(compare(figures))
    }
}

impl Campaign {
    fn research_loaded(&self) -> runboard::results::research::Loaded {
        let path = self.records.root().join(runboard::results::research::RESEARCH_FILE);
        let bytes = self.records.within().read_opt(&path).and_then(Result::ok);
        runboard::results::research::load(bytes.as_deref())
    }

    fn research_view(&self, loaded: runboard::results::research::Loaded) -> runboard::results::research::ResearchView {
        use runboard::results::research::{linked_cohorts, summary, ResearchView};
        let presets = self.presets().unwrap_or_default();
        let rules = self.config().map(|c| c.results.clone()).unwrap_or_default();
        let mut rates = BTreeMap::new();
        for name in linked_cohorts(&loaded.state) {
            let Some(p) = presets.get(&name) else { continue };
            let Ok(scope) = self.scope(Some(&p.scope)) else { continue };
            let Ok(scoped) = self.scoped(scope) else { continue };
            rates.insert(name, core::pass_rate(&outcomes(&scoped, &rules)));
        }
        let summary = summary(&loaded.state, &rates);
        ResearchView { state: loaded.state, repaired: loaded.repaired, summary }
    }

    /// `GET /api/research`: the research state (repaired if it must be), its summary.
    pub fn research(&self) -> runboard::results::research::ResearchView {
        self.research_view(self.research_loaded())
    }

    /// Changes the research state under the campaign lock: checked (422 with
    /// every reason), stamped, and written whole, atomically.
    pub fn research_edit(
        &self,
        edit: impl FnOnce(&mut runboard::results::research::ResearchState) -> Result<(), Vec<String>>,
    ) -> Result<runboard::results::research::ResearchView, ApiError> {
        let _lock = self.lock()?;
        let mut state = self.research_loaded().state;
        edit(&mut state).map_err(|why| ApiError::with_reasons(runboard::api::ErrorKind::Busy, why))?;
        let names: Vec<String> = self.presets().unwrap_or_default().presets.into_iter().map(|p| p.name).collect();
        let problems = runboard::results::research::problems(&state, &names);
        if !problems.is_empty() {
            return Err(ApiError::refused(problems));
        }
        state.updated_at = Some(crate::system::clock::now());
        crate::files::atomic::write_json(&self.records.root().join(runboard::results::research::RESEARCH_FILE), &state)
            .map_err(|e| crate::web::error::internal("writing the research state", e))?;
        Ok(self.research_view(runboard::results::research::Loaded { state, repaired: Vec::new() }))
    }

    /// `POST /api/research`: replaces the state whole — unless that would
    /// lose a recorded decision or overwrite a newer save (409 with why).
    pub fn research_replace(
        &self,
        new: runboard::results::research::ResearchState,
    ) -> Result<runboard::results::research::ResearchView, ApiError> {
        self.research_edit(move |s| {
            let why = runboard::results::research::replace_problems(s, &new);
            if !why.is_empty() {
                return Err(why);
            }
            *s = new;
            Ok(())
        })
    }
}

/// Every cell's latest ended record in scope, as an outcome.
fn outcomes(scoped: &Scoped, rules: &runboard::campaign::ResultsConfig) -> Vec<core::Outcome> {
    let records: Vec<RunSetRecords> = scoped
        .run_sets
        .iter()
        .map(|(rs, kept)| RunSetRecords { name: &rs.name, model: model_of(rs), cells: cells_of(rs, kept) })
        .collect();
    core::outcomes(&records, rules)
}
