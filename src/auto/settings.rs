//! The autopilot's settings: what it may launch, and how it chooses. Saved
//! as the operator gave them (`settings` in the state file); validated
//! against the campaign every time they are used — a catalogue or matrix
//! that changed under them makes them invalid, with every reason.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::campaign::{CampaignConfig, ModelKind};
use crate::console::matrix::{value_text, Matrix};

/// The most batches a paid model may be given per UTC day by the autopilot.
pub const MAX_DAILY_CAP: u32 = 50;

/// How the next cells are chosen.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Objective {
    /// The first slot with gaps, in the settings' order; cells in matrix order.
    #[default]
    FillGaps,
    /// The slot whose cells are least covered.
    LeastCovered,
    /// The slot whose next cells would most narrow a comparison still open,
    /// at the rates observed so far (`results::impact`).
    ExpectedImpact,
}

/// What counts a cell as done when coverage is measured.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountBasis {
    /// Only cells that passed (covered).
    #[default]
    Covered,
    /// Any attempted cell (covered or failed).
    Attempted,
}

/// The settings as the operator writes them (`POST /api/auto/settings`).
/// Unknown keys are refused by [`validate`] (beside every other reason).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Settings {
    /// Enabled models (catalogue names), in the order `fill_gaps` tries them.
    pub models: Vec<String>,
    /// Enabled values of the matrix's `build` factor (when it has one).
    pub builds: Vec<String>,
    /// Enabled tasks (values of the matrix's `task` factor).
    pub tasks: Vec<String>,
    /// Enabled prompt variants.
    pub prompt_variants: Vec<String>,
    /// Enabled retry-feedback values.
    pub retry_feedback: Vec<bool>,
    /// Paid model → batches the autopilot may launch per UTC day (1–50);
    /// every enabled paid model needs one.
    pub daily_caps: BTreeMap<String, u32>,
    /// Labels of the batches it launches start with this (then `-<n>`).
    pub label_prefix: String,
    pub objective: Objective,
    pub count_basis: CountBasis,
    /// Between one batch ending and the next launching (0–1440).
    pub wait_minutes: f64,
    /// Cells per batch (1–10,000).
    pub max_cells: usize,
    /// One lane per endpoint (and per paid model), each with its own batch.
    pub parallel_lanes: bool,
    /// How long a failing endpoint is quarantined (1–1440).
    pub endpoint_retry_minutes: f64,
    /// A hold longer than this is announced to the notification hook (1–10080).
    pub hold_notify_minutes: f64,
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            models: Vec::new(),
            builds: Vec::new(),
            tasks: Vec::new(),
            prompt_variants: vec!["default".into()],
            retry_feedback: vec![false],
            daily_caps: BTreeMap::new(),
            label_prefix: "auto".into(),
            objective: Objective::FillGaps,
            count_basis: CountBasis::Covered,
            wait_minutes: 5.0,
            max_cells: 20,
            parallel_lanes: false,
            endpoint_retry_minutes: 30.0,
            hold_notify_minutes: 30.0,
        }
    }
}

/// Parses and checks settings against the campaign: the settings, or every
/// reason they cannot be used.
pub fn validate(raw: &Value, cfg: &CampaignConfig, matrix: &Matrix) -> Result<Settings, Vec<String>> {
    // Unknown keys and wrong shapes are named, and the rest is still checked:
    // one bad key never hides the other reasons.
    let (s, mut bad) = crate::basics::json::object_lenient::<Settings>(raw, "settings");
    let Some(s) = s else { return Err(bad) };
    let levels = matrix.levels();
    let level_texts = |f: &str| -> Option<Vec<String>> { levels.get(f).map(|v| v.iter().map(value_text).collect()) };

    if s.models.is_empty() {
        bad.push("enable at least one model".into());
    }
    for m in &s.models {
        match cfg.model(m) {
            None => bad.push(format!("model {m:?} is not in the catalogue")),
            Some(entry) if entry.kind == ModelKind::Local => {
                let serving: Vec<_> = cfg.endpoints.iter().filter(|e| e.models.contains(m)).collect();
                if serving.is_empty() {
                    bad.push(format!("local model {m:?} is served by no endpoint of the catalogue"));
                } else if serving.iter().all(|e| e.request_preset.is_none()) {
                    bad.push(format!("local model {m:?}: no endpoint serving it has a request_preset"));
                }
                if s.daily_caps.contains_key(m) {
                    bad.push(format!("daily_caps: {m:?} is a local model; caps are for paid models"));
                }
            }
            Some(_) => match s.daily_caps.get(m) {
                None => bad.push(format!("paid model {m:?} needs a daily cap (1-{MAX_DAILY_CAP})")),
                Some(c) if !(1..=MAX_DAILY_CAP).contains(c) => {
                    bad.push(format!("daily_caps: {m:?}: {c} is not between 1 and {MAX_DAILY_CAP}"))
                }
                Some(_) => {}
            },
        }
    }
    for m in s.daily_caps.keys().filter(|m| !s.models.contains(m)) {
        bad.push(format!("daily_caps: {m:?} is not an enabled model"));
    }
    match level_texts("build") {
        Some(known) => {
            if s.builds.is_empty() {
                bad.push("enable at least one build".into());
            }
            for b in s.builds.iter().filter(|b| !known.contains(b)) {
                bad.push(format!("build {b:?} is not a level of the matrix's build factor"));
            }
        }
        None if !s.builds.is_empty() => bad.push("builds: the matrix has no build factor".into()),
        None => {}
    }
    if s.tasks.is_empty() {
        bad.push("enable at least one task".into());
    }
    match level_texts("task") {
        Some(known) => {
            for t in s.tasks.iter().filter(|t| !known.contains(t)) {
                bad.push(format!("task {t:?} is not planned in the matrix"));
            }
        }
        None if !s.tasks.is_empty() => bad.push("tasks: the matrix has no task factor".into()),
        None => {}
    }
    if s.prompt_variants.is_empty() {
        bad.push("enable at least one prompt variant".into());
    }
    if s.prompt_variants.iter().any(|p| p.trim().is_empty()) {
        bad.push("a prompt variant is empty".into());
    }
    if s.retry_feedback.is_empty() {
        bad.push("enable at least one retry-feedback value".into());
    }
    let prefix_ok = (1..=40).contains(&s.label_prefix.len())
        && s.label_prefix.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if !prefix_ok {
        bad.push(format!(
            "label_prefix {:?}: must be 1-40 letters, digits, '-', '_' or '.'",
            crate::console::spec::shorten(&s.label_prefix)
        ));
    }
    if !(s.wait_minutes.is_finite() && (0.0..=1440.0).contains(&s.wait_minutes)) {
        bad.push("wait_minutes must be between 0 and 1440".into());
    }
    if !(1..=crate::console::draft::MAX_DRAFT_CELLS).contains(&s.max_cells) {
        bad.push(format!("max_cells must be between 1 and {}", crate::console::draft::MAX_DRAFT_CELLS));
    }
    if !(s.endpoint_retry_minutes.is_finite() && (1.0..=1440.0).contains(&s.endpoint_retry_minutes)) {
        bad.push("endpoint_retry_minutes must be between 1 and 1440".into());
    }
    if !(s.hold_notify_minutes.is_finite() && (1.0..=10080.0).contains(&s.hold_notify_minutes)) {
        bad.push("hold_notify_minutes must be between 1 and 10080".into());
    }
    if bad.is_empty() {
        Ok(s)
    } else {
        Err(bad)
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::campaign::{EndpointEntry, ModelEntry};
    use serde_json::json;

    pub(crate) fn campaign() -> (CampaignConfig, Matrix) {
        let mut c = CampaignConfig::unnamed("x");
        c.models = vec![
            ModelEntry::new("qwen", ModelKind::Local, None, 0.0),
            ModelEntry::new("gpt", ModelKind::Paid, Some(5), 1.0),
        ];
        c.endpoints = vec![EndpointEntry {
            name: "gpu-a".into(),
            url: "http://127.0.0.1:9/v1".into(),
            backend: "vllm".into(),
            models: vec!["qwen".into()],
            request_preset: Some("p".into()),
            ..Default::default()
        }];
        let csv = "condition,task,phase,seed,repetition\nbase,t1,main,1,0\ntreat,t1,main,1,0\nbase,t2,main,1,0\n";
        (c, crate::console::matrix::parse(csv.as_bytes()))
    }

    #[test]
    fn good_settings_pass_and_every_bad_one_is_named() {
        let (cfg, m) = campaign();
        let ok = json!({"models": ["qwen", "gpt"], "tasks": ["t1"], "daily_caps": {"gpt": 3}});
        let s = validate(&ok, &cfg, &m).unwrap();
        assert_eq!((s.max_cells, s.wait_minutes, s.objective), (20, 5.0, Objective::FillGaps));

        let bad = json!({"models": ["ghost", "gpt"], "builds": ["b1"], "tasks": ["t9"], "prompt_variants": [],
                         "retry_feedback": [], "daily_caps": {"gpt": 99, "qwen": 1}, "label_prefix": "no spaces",
                         "wait_minutes": -1, "max_cells": 0});
        let why = validate(&bad, &cfg, &m).unwrap_err();
        for want in [
            "model \"ghost\" is not in the catalogue",
            "daily_caps: \"gpt\": 99 is not between 1 and 50",
            "daily_caps: \"qwen\" is not an enabled model",
            "builds: the matrix has no build factor",
            "task \"t9\" is not planned in the matrix",
            "enable at least one prompt variant",
            "enable at least one retry-feedback value",
            "label_prefix \"no spaces\"",
            "wait_minutes must be between 0 and 1440",
            "max_cells must be between 1 and 10000",
        ] {
            assert!(why.iter().any(|w| w.contains(want)), "want {want:?} in {why:#?}");
        }
        assert_eq!(
            validate(&json!({}), &cfg, &m).unwrap_err(),
            ["enable at least one model", "enable at least one task"]
        );
        // An unknown key is named and the other reasons are still given.
        let typo = validate(&json!({"modles": ["qwen"], "wait_minutes": -1}), &cfg, &m).unwrap_err();
        assert_eq!(typo[0], "settings: modles: unknown field", "{typo:?}");
        for want in ["enable at least one model", "wait_minutes must be between 0 and 1440"] {
            assert!(typo.iter().any(|w| w.contains(want)), "want {want:?} in {typo:#?}");
        }
        let wrong = validate(&json!({"models": "qwen"}), &cfg, &m).unwrap_err();
        assert!(wrong[0].starts_with("settings: models: invalid type"), "{wrong:?}");
        let paid = validate(&json!({"models": ["gpt"], "tasks": ["t1"]}), &cfg, &m).unwrap_err();
        assert_eq!(paid, ["paid model \"gpt\" needs a daily cap (1-50)"]);
    }
}
