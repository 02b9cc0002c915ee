//! A trial's lineage: the trials it was derived from, generation by
//! generation, computed from the ledger with the admission limits the run was
//! last opened with (the defaults without events), so each ancestor says whether
//! it met them.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::admission::AdmissionLimits;
use super::view::{RoundView, TrialView};

/// How many generations back a lineage goes; a ledger whose parents form a very
/// long chain (or a cycle, which a sane writer never makes) is cut there.
pub const MAX_GENERATIONS: usize = 64;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Ancestor {
    pub trial: String,
    /// 1 for a parent, 2 for a grandparent, …
    pub generation: usize,
    /// The ancestor's latest attempt; `None` when no written round holds it.
    pub record: Option<TrialView>,
    /// Whether it met the admission limits; `None` when not found or unmeasured.
    pub met_limits: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lineage {
    pub trial: TrialView,
    pub limits: AdmissionLimits,
    pub ancestors: Vec<Ancestor>,
    /// The lineage was cut at [`MAX_GENERATIONS`].
    pub cut: bool,
}

/// The lineage of `trial` (its name) among the written rounds; `None` when no
/// written round holds it.
pub fn lineage(rounds: &[Arc<RoundView>], trial: &str, limits: AdmissionLimits) -> Option<Lineage> {
    // The latest attempt of each trial: a retried trial is one trial.
    let mut by_name: HashMap<&str, &TrialView> = HashMap::new();
    for t in rounds.iter().flat_map(|r| r.trials.iter()) {
        if let Some(name) = t.trial.as_deref() {
            by_name.insert(name, t);
        }
    }
    let own = *by_name.get(trial)?;
    let mut seen: HashSet<&str> = HashSet::from([trial]);
    let mut ancestors = Vec::new();
    let mut frontier: Vec<&str> = own.parents.iter().map(String::as_str).collect();
    let mut generation = 0;
    while !frontier.is_empty() && generation < MAX_GENERATIONS {
        generation += 1;
        let mut next = Vec::new();
        for name in frontier {
            if !seen.insert(name) {
                continue;
            }
            let record = by_name.get(name).copied();
            if let Some(r) = record {
                next.extend(r.parents.iter().map(String::as_str));
            }
            ancestors.push(Ancestor {
                trial: name.to_owned(),
                generation,
                met_limits: record.and_then(|r| limits.met_by(r)),
                record: record.cloned(),
            });
        }
        frontier = next;
    }
    Some(Lineage { trial: own.clone(), limits, ancestors, cut: !frontier.is_empty() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(round: u32, name: &str, parents: &[&str], coverage: f64) -> TrialView {
        TrialView {
            round,
            trial: Some(name.into()),
            parents: parents.iter().map(|p| (*p).to_owned()).collect(),
            coverage: Some(coverage),
            monotonicity: Some(0.7),
            ..TrialView::default()
        }
    }

    #[test]
    fn a_trials_lineage_is_computed_from_the_ledger_with_the_admission_settings_of_the_last_open() {
        let rounds = vec![
            Arc::new(RoundView::new(1, vec![t(1, "a", &[], 0.9), t(1, "b", &[], 0.6)])),
            Arc::new(RoundView::new(2, vec![t(2, "c", &["a", "b"], 0.9)])),
            Arc::new(RoundView::new(3, vec![t(3, "d", &["c", "ghost"], 0.9)])),
        ];
        let defaults = AdmissionLimits::from_opened_with(None);
        let l = lineage(&rounds, "d", defaults).unwrap();
        let got: Vec<(&str, usize, Option<bool>)> =
            l.ancestors.iter().map(|a| (a.trial.as_str(), a.generation, a.met_limits)).collect();
        assert_eq!(got, [("c", 1, Some(true)), ("ghost", 1, None), ("a", 2, Some(true)), ("b", 2, Some(false))]);
        // Opened with a lower coverage limit, b met it.
        let open = json!({"admission": {"min_coverage": 0.5}});
        let l = lineage(&rounds, "d", AdmissionLimits::from_opened_with(Some(&open))).unwrap();
        assert_eq!(l.ancestors[3].met_limits, Some(true));
        assert!(lineage(&rounds, "nope", defaults).is_none());
    }

    #[test]
    fn a_cycle_in_parents_ends() {
        let rounds = vec![Arc::new(RoundView::new(1, vec![t(1, "a", &["b"], 0.9), t(1, "b", &["a"], 0.9)]))];
        let l = lineage(&rounds, "a", AdmissionLimits::from_opened_with(None)).unwrap();
        assert_eq!(l.ancestors.len(), 1);
        assert!(!l.cut);
    }
}
