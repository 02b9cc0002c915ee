//! Drafting: the next batch filled from the matrix's gaps, in matrix order,
//! under the task library's chain rules, for a route (model, endpoint, prompt
//! variant, retry feedback) from the catalogue. A draft is a plan shown before
//! it is saved; launching it is [`crate::console::launch`]'s business.

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::campaign::CampaignConfig;
use crate::console::coverage::{CellState, Coverage};
use crate::console::matrix::{value_text, Matrix};
use crate::console::spec::{cell_id, valid_label, BatchSpec, Cell, SCHEMA_VERSION};

/// The most cells one draft may hold.
pub const MAX_DRAFT_CELLS: usize = 10_000;
/// How many cells a draft holds at most when `max_cells` is left out — the
/// same on REST, the pages and the CLI.
pub const DEFAULT_DRAFT_CELLS: usize = 20;

/// What the drafting form sends.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct DraftRequest {
    /// Names the batch (and its run set): 1–80 of `A-Za-z0-9-_.`.
    #[cfg_attr(feature = "cli", arg(long))]
    pub label: String,
    /// Factor → the values (as text) a cell may have; a factor left out takes any.
    /// (On the command line: `--filter FACTOR=V1,V2`, repeatable.)
    #[cfg_attr(feature = "cli", arg(skip))]
    pub filters: BTreeMap<String, Vec<String>>,
    /// At most this many cells: a whole number 1–10,000 (default 20). Read
    /// as a number so a bad one (-3, 1.5, 1e9) is refused quoting what was
    /// sent, never read as 0.
    #[cfg_attr(feature = "cli", arg(long, allow_negative_numbers = true))]
    pub max_cells: Option<f64>,
    /// The model the cells call, from the catalogue (implied by an endpoint
    /// serving one model, or a catalogue of one).
    #[cfg_attr(feature = "cli", arg(long))]
    pub model: Option<String>,
    /// The endpoint serving it (a local model needs one).
    #[cfg_attr(feature = "cli", arg(long))]
    pub endpoint: Option<String>,
    /// The prompt variant written to each cell.
    #[cfg_attr(feature = "cli", arg(long))]
    pub prompt_variant: Option<String>,
    /// Whether a retried attempt is told why the last one failed (written to
    /// the spec as `retry: {"feedback": …}`).
    #[cfg_attr(feature = "cli", arg(long, value_name = "true|false"))]
    pub retry_feedback: Option<bool>,
    /// Leave failed cells out (by default they are drafted again).
    #[cfg_attr(feature = "cli", arg(long))]
    pub skip_failed: bool,
}

/// Why eligible-looking cells were left out, counted, with one example.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeldBack {
    pub reason: String,
    pub cells: usize,
    pub example: String,
}

/// A draft: the spec, and what was left out and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Draft {
    pub spec: BatchSpec,
    /// Cells the filters keep that are gaps (or failed) and allowed by the chains.
    pub eligible: usize,
    pub held_back: Vec<HeldBack>,
}

/// `POST /api/drafts/preview`: the draft and what it is predicted to cost,
/// shown before it is saved.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DraftPreview {
    pub draft: Draft,
    pub prediction: crate::console::preflight::Prediction,
}

/// `POST /api/drafts`: where the draft was saved, and how to launch it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SavedDraft {
    /// Relative to the root (`specs/drafts/<label>-<time>.json`).
    pub path: String,
    pub cells: usize,
    /// What launches it, from the command line (the page's Launch button does
    /// the same).
    pub launch_hint: String,
}

/// The request's label, size and filters checked against the matrix, each
/// problem said in `bad`; the most cells the draft may hold.
fn checked_request(matrix: &Matrix, req: &DraftRequest, bad: &mut Vec<String>) -> usize {
    if !valid_label(&req.label) {
        bad.push(format!(
            "label {:?}: must be 1-80 letters, digits, '-', '_' or '.'",
            crate::console::spec::shorten(&req.label)
        ));
    }
    let max_cells = match req.max_cells {
        None => DEFAULT_DRAFT_CELLS,
        Some(n) if n.fract() == 0.0 && (1.0..=MAX_DRAFT_CELLS as f64).contains(&n) => n as usize,
        Some(n) => {
            bad.push(format!(
                "max_cells {n}: must be a whole number from 1 to {} (left out: {DEFAULT_DRAFT_CELLS})",
                crate::basics::numfmt::thousands(MAX_DRAFT_CELLS as u64)
            ));
            0
        }
    };
    for (factor, values) in &req.filters {
        if !matrix.factors.contains(factor) {
            bad.push(format!(
                "filters: {factor:?} is not a factor of the matrix (factors: {})",
                matrix.factors.join(", ")
            ));
            continue;
        }
        // A planned value is usually met in the first rows; only a wrong one
        // reads the whole matrix.
        let planned = |v: &str| {
            matrix.cells.iter().any(|c| c.factors.get(factor).is_some_and(|x| crate::console::matrix::value_is(x, v)))
        };
        for v in values.iter().filter(|v| !planned(v)) {
            bad.push(format!("filters: no planned cell has {factor} = {v:?}"));
        }
    }
    max_cells
}

/// The draft `req` asks for, or every reason it cannot be made.
pub fn from_gaps(
    matrix: &Matrix,
    coverage: &Coverage,
    cfg: &CampaignConfig,
    req: &DraftRequest,
) -> Result<Draft, Vec<String>> {
    let mut bad = Vec::new();
    let max_cells = checked_request(matrix, req, &mut bad);
    let (model, endpoint) = route(cfg, req, matrix.factors.iter().any(|f| f == "model"), &mut bad);
    if !bad.is_empty() {
        return Err(bad);
    }

    // Coverage is computed over this matrix, row for row: a cell's state is
    // at its own index. The planned cells' states by id are made only when a
    // task's phase chain asks about another cell.
    let states: std::cell::OnceCell<HashMap<&str, CellState>> = std::cell::OnceCell::new();
    let state_of = |id: &str| -> Option<CellState> {
        states
            .get_or_init(|| {
                let known: HashMap<&str, CellState> =
                    coverage.cells.iter().map(|c| (c.cell.as_str(), c.state)).collect();
                matrix
                    .cells
                    .iter()
                    .map(|c| (c.id.as_str(), known.get(c.id.as_str()).copied().unwrap_or(CellState::Gap)))
                    .collect()
            })
            .get(id)
            .copied()
    };
    let mut held: BTreeMap<String, (usize, String)> = BTreeMap::new();
    let mut hold = |reason: String, cell: &Cell| {
        let e = held.entry(reason).or_insert((0, cell.id.clone()));
        e.0 += 1;
    };
    let mut chosen = Vec::new();
    let mut eligible = 0;
    for (at, cell) in matrix.cells.iter().enumerate() {
        let keeps = req.filters.iter().all(|(f, values)| {
            values.is_empty()
                || cell.factors.get(f).is_some_and(|v| values.iter().any(|t| crate::console::matrix::value_is(v, t)))
        });
        if !keeps {
            continue;
        }
        let state = match coverage.cells.get(at) {
            Some(c) if c.cell == cell.id => c.state,
            _ => state_of(&cell.id).unwrap_or(CellState::Gap),
        };
        match state {
            CellState::Covered | CellState::Running => continue,
            CellState::Failed if req.skip_failed => continue,
            CellState::Failed | CellState::Gap => {}
        }
        if let Some(reason) = chain_block(cell, cfg, &state_of) {
            hold(reason, cell);
            continue;
        }
        eligible += 1;
        if chosen.len() < max_cells {
            chosen.push(cell.clone());
        }
    }
    let held_back: Vec<HeldBack> =
        held.into_iter().map(|(reason, (cells, example))| HeldBack { reason, cells, example }).collect();
    if chosen.is_empty() {
        let mut why = vec![format!(
            "no cell to draft: of the cells the filters keep, none is a gap{} ({})",
            if req.skip_failed { "" } else { " or failed" },
            coverage.totals.words()
        )];
        why.extend(held_back.iter().map(|h| format!("{} cell(s) held back: {}", h.cells, h.reason)));
        return Err(why);
    }
    let spec = BatchSpec {
        schema_version: SCHEMA_VERSION,
        label: req.label.clone(),
        cells: chosen,
        model,
        backend: endpoint.map(|e| e.backend.clone()),
        endpoint: endpoint.map(|e| e.name.clone()),
        endpoints: Vec::new(),
        prompt_variant: req.prompt_variant.clone().filter(|p| !p.trim().is_empty()),
        retry: req.retry_feedback.map(|f| json!({ "feedback": f })),
        request_preset: endpoint.and_then(|e| e.request_preset.clone()),
        artefacts: Vec::new(),
    };
    Ok(Draft { spec, eligible, held_back })
}

/// The model and endpoint the request names, checked against the catalogue.
/// A matrix with a `model` factor needs no model named: each cell carries
/// its own (the preflight checks each against the catalogue).
fn route<'c>(
    cfg: &'c CampaignConfig,
    req: &DraftRequest,
    cells_name_models: bool,
    bad: &mut Vec<String>,
) -> (Option<String>, Option<&'c crate::campaign::EndpointEntry>) {
    let given = |o: &Option<String>| o.as_deref().map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned);
    let mut model = given(&req.model);
    let endpoint = match given(&req.endpoint) {
        None => None,
        Some(name) => match cfg.endpoint(&name) {
            Some(e) => Some(e),
            None => {
                bad.push(format!("endpoint {name:?} is not in the catalogue"));
                None
            }
        },
    };
    if model.is_none() {
        // An endpoint serving one model implies it; so does a catalogue of one.
        if let Some([only]) = endpoint.map(|e| e.models.as_slice()) {
            model = Some(only.clone());
        } else if let ([only], None) = (cfg.models.as_slice(), endpoint) {
            model = Some(only.name.clone());
        }
    }
    if let Some(m) = &model {
        match cfg.model(m) {
            None if !cfg.models.is_empty() => bad.push(format!("model {m:?} is not in the catalogue")),
            Some(entry) if entry.kind == crate::campaign::ModelKind::Local && endpoint.is_none() => {
                bad.push(format!("model {m:?} is local: choose an endpoint that serves it"))
            }
            _ => {}
        }
        if let Some(e) = endpoint {
            if !e.models.contains(m) {
                bad.push(format!("endpoint {:?} does not serve {m:?} (it serves {})", e.name, e.models.join(", ")));
            }
        }
    } else if !cfg.models.is_empty() && !cells_name_models {
        let names: Vec<&str> = cfg.models.iter().map(|m| m.name.as_str()).collect();
        bad.push(format!(
            "model: name one (the catalogue has {}: {}; it is implied only by an endpoint serving one model, a catalogue of one, or a model factor in the matrix)",
            names.len(),
            names.join(", ")
        ));
    }
    (model, endpoint)
}

/// Why the chain holds `cell` back: its task's earlier phase, with the same
/// other factors, is planned and not covered yet. `state_of` answers for the
/// planned cells only (`None`: not planned).
pub fn chain_block(cell: &Cell, cfg: &CampaignConfig, state_of: &dyn Fn(&str) -> Option<CellState>) -> Option<String> {
    let task = cell.factors.get("task").map(value_text)?;
    let chain = &cfg.task(&task)?.phases;
    let phase = cell.factors.get("phase").map(value_text)?;
    let at = match chain.iter().position(|p| *p == phase) {
        Some(at) => at,
        None if chain.is_empty() => return None,
        None => return Some(format!("phase {phase:?} is not in task {task:?}'s chain ({})", chain.join(" → "))),
    };
    let earlier = chain.get(at.checked_sub(1)?)?;
    let mut factors = cell.factors.clone();
    factors.insert("phase".into(), Value::String(earlier.clone()));
    let id = cell_id(&factors);
    let planned_not_covered = matches!(state_of(&id), Some(state) if state != CellState::Covered);
    planned_not_covered.then(|| format!("task {task:?}: its earlier phase {earlier:?} is not covered yet"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{EndpointEntry, ModelEntry, ModelKind, TaskEntry};
    use crate::console::coverage::{compute, RunSetCells};
    use crate::console::matrix;
    use crate::drive::records::{CellRecord, CellStatus};

    fn cfg() -> CampaignConfig {
        let mut c = CampaignConfig::unnamed("t");
        c.tasks = vec![TaskEntry {
            name: "t1".into(),
            phases: vec!["warmup".into(), "main".into()],
            description: String::new(),
        }];
        c.models = vec![
            ModelEntry::new("qwen", ModelKind::Local, None, 0.0),
            ModelEntry::new("gpt", ModelKind::Paid, Some(3), 0.01),
        ];
        c.endpoints = vec![EndpointEntry {
            name: "gpu-a".into(),
            url: "http://127.0.0.1:9/v1".into(),
            backend: "vllm".into(),
            models: vec!["qwen".into()],
            request_preset: Some("default".into()),
            ..Default::default()
        }];
        c
    }

    fn m() -> Matrix {
        matrix::parse(
            b"condition,task,phase,seed,repetition\n\
              a,t1,warmup,1,0\na,t1,main,1,0\na,t1,warmup,2,0\na,t1,main,2,0\na,t2,x,1,0\n",
        )
    }

    fn req() -> DraftRequest {
        DraftRequest { label: "b1".into(), max_cells: Some(10.0), endpoint: Some("gpu-a".into()), ..Default::default() }
    }

    #[test]
    fn gaps_in_matrix_order_under_the_chain_rule() {
        let m = m();
        let done =
            RunSetCells { name: "rs".into(), live: false, cells: vec![CellRecord::new(&m.cells[0], CellStatus::Done)] };
        let cov = compute(&m, &[done]);
        let d = from_gaps(&m, &cov, &cfg(), &req()).unwrap();
        let ids: Vec<&str> = d.spec.cells.iter().map(|c| c.id.as_str()).collect();
        // seed 1: warmup done, so main may go; seed 2: warmup first, main held back.
        assert_eq!(ids, [&m.cells[1].id, &m.cells[2].id, &m.cells[4].id]);
        assert_eq!(d.held_back.len(), 1);
        assert_eq!(d.held_back[0].reason, "task \"t1\": its earlier phase \"warmup\" is not covered yet");
        assert_eq!(d.held_back[0].example, m.cells[3].id);
        assert_eq!(d.spec.model.as_deref(), Some("qwen"), "the endpoint's only model");
        assert_eq!((d.spec.backend.as_deref(), d.spec.request_preset.as_deref()), (Some("vllm"), Some("default")));
        let small = from_gaps(&m, &cov, &cfg(), &DraftRequest { max_cells: Some(1.0), ..req() }).unwrap();
        assert_eq!((small.spec.cells.len(), small.eligible), (1, 3));
        let filtered = DraftRequest { filters: [("task".into(), vec!["t2".into()])].into(), ..req() };
        assert_eq!(from_gaps(&m, &cov, &cfg(), &filtered).unwrap().spec.cells.len(), 1);
    }

    #[test]
    fn max_cells_left_out_is_the_default_and_a_bad_one_is_quoted() {
        let m = m();
        let cov = compute(&m, &[]);
        let d = from_gaps(&m, &cov, &cfg(), &DraftRequest { max_cells: None, ..req() }).unwrap();
        assert_eq!(d.spec.cells.len(), d.eligible.min(DEFAULT_DRAFT_CELLS));
        for (n, shown) in [(-3.0, "-3"), (1.5, "1.5"), (0.0, "0"), (1e9, "1000000000"), (10_001.0, "10001")] {
            let why = from_gaps(&m, &cov, &cfg(), &DraftRequest { max_cells: Some(n), ..req() }).unwrap_err();
            assert_eq!(
                why,
                [format!("max_cells {shown}: must be a whole number from 1 to 10,000 (left out: 20)")],
                "{n}"
            );
        }
        // As a request body: left out, null, or a number.
        for body in [r#"{"label": "b"}"#, r#"{"label": "b", "max_cells": null}"#] {
            let r: DraftRequest = crate::basics::json::from_body(body.as_bytes()).unwrap();
            assert_eq!(r.max_cells, None);
        }
        let r: DraftRequest = crate::basics::json::from_body(br#"{"label": "b", "max_cells": -3}"#).unwrap();
        assert_eq!(r.max_cells, Some(-3.0));
    }

    #[test]
    fn every_reason_a_draft_cannot_be_made_is_listed() {
        let m = m();
        let cov = compute(&m, &[]);
        let bad = DraftRequest {
            label: "no spaces".into(),
            max_cells: Some(0.0),
            filters: [("colour".into(), vec![]), ("task".into(), vec!["t9".into()])].into(),
            model: Some("gpt".into()),
            endpoint: Some("gpu-a".into()),
            ..Default::default()
        };
        let why = from_gaps(&m, &cov, &cfg(), &bad).unwrap_err();
        assert_eq!(why.len(), 5, "{why:#?}");
        assert!(why[0].starts_with("label \"no spaces\""));
        assert!(why.iter().any(|w| w.contains("\"colour\" is not a factor")));
        assert!(why.iter().any(|w| w.contains("no planned cell has task = \"t9\"")));
        assert!(why.iter().any(|w| w.contains("does not serve \"gpt\"")));
        let local = DraftRequest { endpoint: None, model: Some("qwen".into()), ..req() };
        assert_eq!(
            from_gaps(&m, &cov, &cfg(), &local).unwrap_err(),
            ["model \"qwen\" is local: choose an endpoint that serves it"]
        );
        // Nothing left: said with the counts.
        let all_done = RunSetCells {
            name: "rs".into(),
            live: false,
            cells: m.cells.iter().map(|c| CellRecord::new(c, CellStatus::Done)).collect(),
        };
        let why = from_gaps(&m, &compute(&m, &[all_done]), &cfg(), &req()).unwrap_err();
        assert_eq!(why, ["no cell to draft: of the cells the filters keep, none is a gap or failed (5 covered of 5)"]);
    }
}
