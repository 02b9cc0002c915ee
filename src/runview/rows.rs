//! The rows a run is read into — trials, rounds, calls, memory versions —
//! made by the parts (`ledger`, `events`, `memory`, …) and assembled by
//! `view` into a [`RunView`](super::view::RunView). They depend on no part,
//! so every part can name them without depending on the view that uses the
//! parts.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::diff::DiffLine;

/// One trial attempt from the ledger.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialView {
    pub round: u32,
    pub slot: Option<u32>,
    pub trial: Option<String>,
    pub attempt: Option<u32>,
    /// Partial-IC t statistic; `None` when unscored or not finite.
    pub t: Option<f64>,
    /// The training IC; its sign is the direction admission reads the factor in.
    #[serde(default)]
    pub train_ic: Option<f64>,
    pub max_abs_corr: Option<f64>,
    /// Coverage and decile monotonicity the evaluator measured.
    #[serde(default)]
    pub coverage: Option<f64>,
    #[serde(default)]
    pub monotonicity: Option<f64>,
    /// The t threshold admission judged it against, when the line says.
    #[serde(default)]
    pub t_threshold: Option<f64>,
    pub tokens: Option<u64>,
    /// The stage that decided it (gate, evaluator, admission).
    pub stage: Option<String>,
    /// `outcome.accepted` as written: `None` when the line does not record it
    /// (missing or not a boolean) — never made up as `false`.
    pub accepted: Option<bool>,
    /// The refusal, in the stage's words.
    pub reason: Option<String>,
    /// The accepted factor's name.
    #[serde(default)]
    pub factor: Option<String>,
    /// The candidate's expression as proposed.
    #[serde(default)]
    pub code: Option<String>,
    /// The trials it was derived from.
    #[serde(default)]
    pub parents: Vec<String>,
    /// The operators of the graph the gate built for it (sorted, no repeats).
    #[serde(default)]
    pub operators: Vec<String>,
}

impl TrialView {
    /// Whether admission accepted it: only a recorded `true` counts.
    pub fn is_accepted(&self) -> bool {
        self.accepted == Some(true)
    }

    /// Its outcome in words: `accepted`, the refusal, `refused`, or `not
    /// recorded` when the line says neither.
    pub fn outcome_text(&self) -> String {
        match (self.accepted, &self.reason) {
            (Some(true), _) => "accepted".to_owned(),
            (_, Some(reason)) => reason.clone(),
            (Some(false), None) => "refused".to_owned(),
            (None, None) => "not recorded".to_owned(),
        }
    }

    /// The t in the factor's direction, as admission reads it: the sign of its
    /// training IC (a trial without one is read as written).
    pub fn directed_t(&self) -> Option<f64> {
        let sign = match self.train_ic {
            Some(ic) if ic < 0.0 => -1.0,
            _ => 1.0,
        };
        self.t.map(|t| t * sign)
    }
}

/// One round's trials from the ledger, with what the view needs of them tallied
/// as they are added, so assembling a view costs O(rounds), not O(trials). Add
/// trials with [`RoundView::push`] (or build with [`RoundView::new`]), which keep
/// the tally in step; read `trials` freely.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "RoundRecord")]
pub struct RoundView {
    pub round: u32,
    pub trials: Vec<TrialView>,
    #[serde(skip)]
    tally: RoundTally,
}

/// A round as serialized; read back through `RoundView::new`, so the tally is
/// rebuilt rather than left empty.
#[derive(Deserialize)]
struct RoundRecord {
    round: u32,
    trials: Vec<TrialView>,
}

impl From<RoundRecord> for RoundView {
    fn from(r: RoundRecord) -> Self {
        Self::new(r.round, r.trials)
    }
}

/// Kept in step with `RoundView::trials` by `RoundView::push`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoundTally {
    pub scored: usize,
    pub tokens: u64,
    /// Indices of the accepted attempts in `trials`.
    pub accepted: Vec<usize>,
    /// The slots the round's trials filled.
    pub slots: BTreeSet<u32>,
    /// The first `t_threshold` an accepted trial of the round carries.
    pub accepted_threshold: Option<f64>,
    /// The first t threshold a refusal of the round quotes.
    pub quoted_threshold: Option<f64>,
    /// The first correlation limit a refusal of the round quotes.
    pub quoted_limit: Option<f64>,
    /// The stages that decided the round's trials.
    pub stages: BTreeSet<String>,
}

impl RoundView {
    pub fn new(round: u32, trials: Vec<TrialView>) -> Self {
        let mut r = Self { round, trials: Vec::with_capacity(trials.len()), tally: RoundTally::default() };
        trials.into_iter().for_each(|t| r.push(t));
        r
    }

    /// Adds an attempt and tallies it.
    pub fn push(&mut self, t: TrialView) {
        let tally = &mut self.tally;
        tally.scored += usize::from(t.t.is_some());
        tally.tokens += t.tokens.unwrap_or(0);
        if let Some(slot) = t.slot {
            tally.slots.insert(slot);
        }
        if let Some(stage) = &t.stage {
            if !tally.stages.contains(stage) {
                tally.stages.insert(stage.clone());
            }
        }
        if t.is_accepted() {
            tally.accepted.push(self.trials.len());
            tally.accepted_threshold = tally.accepted_threshold.or(t.t_threshold);
        }
        if let Some(reason) = t.reason.as_deref() {
            if tally.quoted_threshold.is_none() {
                tally.quoted_threshold = number_after(reason, "threshold");
            }
            if tally.quoted_limit.is_none() {
                tally.quoted_limit = number_after(reason, "above limit");
            }
        }
        self.trials.push(t);
    }

    pub fn tally(&self) -> &RoundTally {
        &self.tally
    }

    /// The accepted attempts of the round, in ledger order.
    pub fn accepted(&self) -> impl Iterator<Item = &TrialView> {
        self.tally.accepted.iter().map(|&i| &self.trials[i])
    }
}

/// An LLM call as the events file tells it (what it concerned, its tokens).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallEvent {
    pub call: u32,
    pub round: Option<u32>,
    pub slots: Vec<u32>,
    pub purpose: Option<String>,
    pub tokens: Option<u64>,
    pub truncated: Option<bool>,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
}

impl CallEvent {
    /// A call known by its number only (so far).
    pub fn numbered(call: u32) -> Self {
        Self {
            call,
            round: None,
            slots: Vec::new(),
            purpose: None,
            tokens: None,
            truncated: None,
            started_at: None,
            ended_at: None,
        }
    }
}

/// A version of the distiller's memory (`memory/round_NN.md`, written before round NN).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MemoryVersion {
    pub round: u32,
    pub text: String,
    /// Compared line by line with the version before; `None` for the first, or
    /// when too large to compare.
    pub diff: Option<Vec<DiffLine>>,
}

/// The number after `word` in `text` (`"below threshold 2.50"` → 2.5).
pub fn number_after(text: &str, word: &str) -> Option<f64> {
    let at = text.find(word)? + word.len();
    let rest = text[at..].trim_start();
    let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-')).unwrap_or(rest.len());
    rest[..end].trim_end_matches('.').parse().ok().filter(|f: &f64| f.is_finite())
}
