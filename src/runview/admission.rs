//! What admission judged a run's trials by: each round's t threshold, the
//! correlation limit, and the least coverage and decile monotonicity it required
//!. Each is read from the best source the run has and says which; none
//! is made up — a value nothing gives is `None`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use std::sync::Arc;

use super::rows::{RoundView, TrialView};

/// The least coverage and decile monotonicity admission required, as the run's
/// last open recorded them .
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct AdmissionLimits {
    pub min_coverage: f64,
    pub min_monotonicity: f64,
    pub source: LimitsSource,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitsSource {
    /// The `settings.admission` of the run's latest open or resume event.
    LastOpen,
    /// The campaign's defaults: the run has no events, or its open names none.
    Defaults,
}

impl AdmissionLimits {
    /// The campaign's defaults, used for a run whose events do not say.
    pub const DEFAULT_MIN_COVERAGE: f64 = 0.8;
    pub const DEFAULT_MIN_MONOTONICITY: f64 = 0.6;

    /// The limits from the settings of the latest open (`None`: no events, or no
    /// open). A field the open lacks takes its default.
    pub fn from_opened_with(opened_with: Option<&Value>) -> Self {
        let admission = opened_with.and_then(|s| s.get("admission")).filter(|a| a.is_object());
        let field = |k: &str| admission.and_then(|a| a.get(k)).and_then(Value::as_f64).filter(|f| f.is_finite());
        match admission {
            Some(_) => Self {
                min_coverage: field("min_coverage").unwrap_or(Self::DEFAULT_MIN_COVERAGE),
                min_monotonicity: field("min_monotonicity").unwrap_or(Self::DEFAULT_MIN_MONOTONICITY),
                source: LimitsSource::LastOpen,
            },
            None => Self {
                min_coverage: Self::DEFAULT_MIN_COVERAGE,
                min_monotonicity: Self::DEFAULT_MIN_MONOTONICITY,
                source: LimitsSource::Defaults,
            },
        }
    }

    /// Whether a trial's measures meet these limits; `None` when it lacks one.
    pub fn met_by(&self, t: &TrialView) -> Option<bool> {
        Some(t.coverage? >= self.min_coverage && t.monotonicity? >= self.min_monotonicity)
    }
}

/// Where a round's t threshold was read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThresholdSource {
    /// An `admission` event of the round.
    AdmissionEvent,
    /// An accepted factor of the round says which threshold it passed.
    AcceptedFactor,
    /// A refusal of the round quotes it.
    Refusal,
    /// The round gives none; the round before's carries over.
    CarriedOver,
}

/// A written round's t threshold: one per round, since a round's candidates are
/// judged at the same trial count.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct RoundThreshold {
    pub round: u32,
    pub t: Option<f64>,
    pub source: Option<ThresholdSource>,
}

/// Each written round's t threshold: the one its admission events give; without
/// them the one an accepted factor of the round says, else the one its refusals
/// quote, carried over from the round before when the round gives none; `None`
/// while nothing gives one.
pub fn round_thresholds(from_events: &BTreeMap<u32, f64>, rounds: &[Arc<RoundView>]) -> Vec<RoundThreshold> {
    let mut carried: Option<f64> = None;
    rounds
        .iter()
        .map(|r| {
            let round = r.round;
            let found = from_events
                .get(&round)
                .map(|t| (*t, ThresholdSource::AdmissionEvent))
                .or_else(|| r.tally().accepted_threshold.map(|t| (t, ThresholdSource::AcceptedFactor)))
                .or_else(|| r.tally().quoted_threshold.map(|t| (t, ThresholdSource::Refusal)));
            match found {
                Some((t, source)) => {
                    carried = Some(t);
                    RoundThreshold { round, t: Some(t), source: Some(source) }
                }
                None => RoundThreshold { round, t: carried, source: carried.map(|_| ThresholdSource::CarriedOver) },
            }
        })
        .collect()
}

/// The correlation limit: the one the run was last opened with, else (without
/// events) one a refusal quotes; `None` while nothing gives it.
pub fn correlation_limit(opened_with: Option<&Value>, rounds: &[Arc<RoundView>]) -> Option<f64> {
    opened_with
        .and_then(|s| s.get("correlation_limit"))
        .and_then(Value::as_f64)
        .filter(|f| f.is_finite())
        .or_else(|| rounds.iter().find_map(|r| r.tally().quoted_limit))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runview::events::{EventsDigest, RunEvent};
    use serde_json::json;

    fn trial(round: u32, accepted: bool, reason: Option<&str>, t_threshold: Option<f64>) -> TrialView {
        TrialView {
            round,
            accepted: Some(accepted),
            reason: reason.map(str::to_owned),
            t_threshold,
            ..TrialView::default()
        }
    }

    #[test]
    fn a_rounds_t_threshold_comes_from_admission_events_then_accepted_factors_then_refusals_carried_over() {
        let r1 = [trial(1, false, Some("t 1.00 below threshold 2.50"), None)];
        let r2 = [trial(2, true, None, None)];
        let r3 = [trial(3, true, None, Some(2.6)), trial(3, false, Some("t 1 below threshold 9.0"), None)];
        let r4 = [trial(4, false, Some("t 1.00 below threshold 2.75"), None)];
        let r0 = [trial(0, false, Some("x"), None)];
        let rounds: Vec<Arc<RoundView>> = [(0, &r0[..]), (1, &r1), (2, &r2), (3, &r3), (4, &r4)]
            .into_iter()
            .map(|(n, ts)| Arc::new(RoundView::new(n, ts.to_vec())))
            .collect();
        let got: Vec<(u32, Option<f64>, Option<ThresholdSource>)> =
            round_thresholds(&BTreeMap::new(), &rounds).into_iter().map(|r| (r.round, r.t, r.source)).collect();
        use ThresholdSource::*;
        assert_eq!(
            got,
            [
                (0, None, None),
                (1, Some(2.5), Some(Refusal)),
                (2, Some(2.5), Some(CarriedOver)),
                (3, Some(2.6), Some(AcceptedFactor)),
                (4, Some(2.75), Some(Refusal)),
            ]
        );
        // An admission event outranks what the trials say.
        let events = [RunEvent::from_value(&json!({"event": "admission", "round": 4, "t_threshold": 3.1}))];
        let r = round_thresholds(&EventsDigest::from_events(&events).thresholds, &rounds);
        assert_eq!((r[4].t, r[4].source), (Some(3.1), Some(AdmissionEvent)));
    }

    #[test]
    fn the_correlation_limit_is_the_last_opens_else_a_quoted_one_else_none() {
        let quoted = trial(1, false, Some("correlation 0.9 with f2 above limit 0.65"), None);
        let rounds = [Arc::new(RoundView::new(1, vec![quoted]))];
        assert_eq!(correlation_limit(None, &rounds), Some(0.65));
        let settings = json!({"correlation_limit": 0.7});
        assert_eq!(correlation_limit(Some(&settings), &rounds), Some(0.7));
        assert_eq!(correlation_limit(None, &[]), None);
    }

    #[test]
    fn admission_limits_are_the_last_opens_or_the_defaults_without_events() {
        let d = AdmissionLimits::from_opened_with(None);
        assert_eq!((d.min_coverage, d.min_monotonicity, d.source), (0.8, 0.6, LimitsSource::Defaults));
        let open = json!({"admission": {"min_coverage": 0.5}});
        let l = AdmissionLimits::from_opened_with(Some(&open));
        assert_eq!((l.min_coverage, l.min_monotonicity, l.source), (0.5, 0.6, LimitsSource::LastOpen));
        let ok = TrialView { coverage: Some(0.55), monotonicity: Some(0.7), ..TrialView::default() };
        let unmeasured = TrialView { coverage: Some(0.9), ..TrialView::default() };
        assert_eq!((l.met_by(&ok), d.met_by(&ok), l.met_by(&unmeasured)), (Some(true), Some(false), None));
    }
}
