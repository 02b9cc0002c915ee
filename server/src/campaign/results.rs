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
