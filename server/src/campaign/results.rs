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

/// Run sets in scope, each with its cells in scope.
pub struct Scoped {
    pub scope: Scope,
    /// Newest first (by the time the batch started, then name).
    pub run_sets: Vec<(Arc<RunSetRead>, Vec<CellRecord>)>,
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
        let mut run_sets: Vec<(Arc<RunSetRead>, Vec<CellRecord>)> = self
            .records
            .run_sets()
            .into_iter()
            .filter(|rs| tags.as_ref().is_none_or(|t| scope.tags_match(&t.of(&rs.name))))
            .filter_map(|rs| {
                let model = rs.spec.as_ref().and_then(|s| s.as_ref().ok()).and_then(|s| s.model.clone());
                let cells: Vec<CellRecord> = if scope.is_empty() {
                    rs.cells.clone()
                } else {
                    rs.cells
                        .iter()
                        .filter(|c| scope.factors_match(&c.factors, model.as_deref()))
                        .filter(|c| scope.day_matches(c.ended_at.as_deref().or(c.started_at.as_deref())))
                        .cloned()
                        .collect()
                };
                (!cells.is_empty() || scope.is_empty()).then_some((rs, cells))
            })
            .collect();
        let started = |rs: &RunSetRead| rs.outcome_ok().map(|o| o.started_at.clone()).unwrap_or_default();
        run_sets.sort_by(|a, b| started(&b.0).cmp(&started(&a.0)).then_with(|| b.0.name.cmp(&a.0.name)));
        Ok(Scoped { scope, run_sets })
    }

    /// `GET /api/evidence?by=&scope=`: the results by a factor (default
    /// `condition`), per task and model, and the failure axes.
    pub fn evidence(&self, by: Option<&str>, scope: Option<&str>) -> Result<core::Evidence, ApiError> {
        let cfg = self.config()?;
        let matrix = self.records.matrix();
        let asked = by.map(str::trim).filter(|b| !b.is_empty());
        let by = asked.unwrap_or("condition");
        // The default is always answered (an empty campaign has no factors
        // yet); a factor asked for by name must exist.
        let known = asked.is_none() || matrix.factors.iter().any(|f| f == by) || by == "model";
        if !known {
            return Err(ApiError::bad_query(&runboard::runview::trials::BadQuery {
                field: "by".into(),
                value: by.to_owned(),
                problem: format!("not a factor of the matrix (factors: {}, or model)", matrix.factors.join(", ")),
            }));
        }
        let scoped = self.scoped(self.scope(scope)?)?;
        let outcomes = outcomes(&scoped, cfg.results.pass_score);
        let order: BTreeMap<String, Vec<String>> = matrix
            .levels()
            .into_iter()
            .map(|(k, v)| (k, v.iter().map(runboard::matrix::value_text).collect()))
            .collect();
        let mut e = core::evidence(&outcomes, by, &order);
        e.scope = scoped.scope.text();
        Ok(e)
    }

    /// `GET /api/evidence/export?scope=`: every counted cell, private
    /// factors left out, with its provenance.
    pub fn evidence_export(&self, scope: Option<&str>) -> Result<core::export::Export, ApiError> {
        let cfg = self.config()?;
        let matrix = self.records.matrix();
        let scoped = self.scoped(self.scope(scope)?)?;
        let outcomes = outcomes(&scoped, cfg.results.pass_score);
        let mut counted: Vec<&str> = outcomes.iter().map(|o| o.run_set.as_str()).collect();
        counted.sort_unstable();
        counted.dedup();
        let (index, _) = self.records.run_index();
        let mut specs: Vec<String> = index
            .iter()
            .filter(|e| counted.binary_search(&e.run_set.as_str()).is_ok())
            .map(|e| e.spec.clone())
            .collect();
        specs.sort();
        specs.dedup();
        let mut export = core::export::export(
            &outcomes,
            &matrix.factors,
            &cfg.results.private_factors,
            specs,
            crate::clock::now(),
            env!("CARGO_PKG_VERSION"),
        );
        export.provenance.scope = scoped.scope.text();
        Ok(export)
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
        let events: Vec<Arc<Vec<timing::TimedEvent>>> =
            scoped.run_sets.iter().map(|(rs, _)| self.records.events(&rs.name)).collect();
        let inputs: Vec<RunSetTiming> = scoped
            .run_sets
            .iter()
            .zip(&events)
            .map(|((rs, cells), ev)| RunSetTiming {
                name: &rs.name,
                spec: rs.spec.as_ref().and_then(|s| s.as_ref().ok()),
                cells,
                events: ev,
            })
            .collect();
        let all = timing::timings(&inputs, crate::clock::now());
        let names = scoped.run_sets.iter().map(|(rs, _)| rs.name.clone()).collect();
        Ok(timing::timing_view(&all, names, run_set, scoped.scope.text()))
    }
}

impl Campaign {
    /// `GET /api/overview`: the campaign's progress over time, the latest
    /// batches and what needs attention.
    pub fn overview(&self) -> Result<runboard::results::overview::OverviewView, ApiError> {
        use runboard::results::overview::{self as ov, Attention, OverviewView, Totals};
        let live = self.live_shared();
        let mut run_sets = self.run_sets();
        run_sets.sort_by(|a, b| b.started_at.cmp(&a.started_at).then_with(|| b.name.cmp(&a.name)));
        // The autopilot's state as it is on disk (read quietly: this page is
        // polled, and the Auto page names repairs).
        let auto_path = self.records.root().join(crate::auto_state::STATE_FILE);
        let auto = crate::fsread::read_regular(&auto_path).ok().map(|b| runboard::auto::load(Some(&b)));
        let mut attention = ov::attention(&live.state, &live.words, auto.as_ref().map(|l| &l.state), &run_sets);
        if let Some(l) = auto.as_ref().filter(|l| !l.repaired.is_empty()) {
            attention.push(Attention {
                kind: "auto_repaired".into(),
                words: format!("The autopilot's state file was repaired: {}", l.repaired.join("; ")),
                href: "/auto".into(),
            });
        }
        let matrix = self.records.matrix();
        if !matrix.problems.is_empty() {
            attention.push(Attention {
                kind: "unreadable".into(),
                words: format!("matrix.csv: {} row(s) not taken: {}", matrix.problems.len(), matrix.problems[0]),
                href: "/coverage".into(),
            });
        }
        let sets = self.records.run_sets();
        let points = ov::progress(sets.iter().flat_map(|rs| rs.cells.iter()), crate::clock::now(), ov::SAMPLES);
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
        let scoped = self.scoped(self.scope(scope)?)?;
        let by_name: BTreeMap<String, runboard::runsets::RunSetSummary> =
            self.run_sets().into_iter().map(|s| (s.name.clone(), s)).collect();
        // Those with a cell in scope (its factors, and the day it ended).
        Ok(scoped.run_sets.iter().filter_map(|(rs, _)| by_name.get(&rs.name).cloned()).collect())
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
        let model = spec.and_then(|s| s.model.clone());
        let cells: Vec<CellRecord> = rs
            .cells
            .iter()
            .filter(|c| scope.factors_match(&c.factors, model.as_deref()))
            .filter(|c| scope.day_matches(c.ended_at.as_deref().or(c.started_at.as_deref())))
            .cloned()
            .collect();
        let summary = self.run_sets().into_iter().find(|s| s.name == rs.name).unwrap_or_default();
        let price = model.as_deref().and_then(|m| cfg.model(m)).map(|m| m.price_per_1k_tokens).filter(|p| *p > 0.0);
        Ok(runboard::results::report::report(runboard::results::report::ReportInputs {
            outcome: rs.outcome_ok().cloned(),
            spec,
            cells: &cells,
            price_per_1k_tokens: price,
            runs,
            problems: rs.problems.clone(),
            scope: scope.text(),
            now: crate::clock::now(),
            summary,
        }))
    }
}

/// Every cell's latest ended record in scope, as an outcome.
fn outcomes(scoped: &Scoped, pass_score: Option<f64>) -> Vec<core::Outcome> {
    let models: Vec<Option<String>> = scoped
        .run_sets
        .iter()
        .map(|(rs, _)| rs.spec.as_ref().and_then(|s| s.as_ref().ok()).and_then(|s| s.model.clone()))
        .collect();
    let records: Vec<RunSetRecords> = scoped
        .run_sets
        .iter()
        .zip(&models)
        .map(|((rs, cells), m)| RunSetRecords { name: &rs.name, model: m.as_deref(), cells })
        .collect();
    core::outcomes(&records, pass_score)
}
