//! What a run's trials say when read together: refusals grouped by stage and
//! reason, collisions read from refusal text, the admission map, and (from
//! `diagnosis`) what is going wrong. Pure functions of the trials; the thresholds
//! and the limit they are judged by come from `admission`, via the view.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::admission::RoundThreshold;
use super::diagnosis::{diagnose, Finding};
use super::refusal::RefusalKind;
use super::view::TrialView;

/// Unscored trials refused for the same reason at the same stage.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefusalGroup {
    pub stage: String,
    /// The reason with its numbers and quoted text folded away.
    pub reason: String,
    /// Trials (not attempts): a trial counts once whichever attempt met it.
    pub trials: usize,
    /// Up to three of the reasons as written.
    pub examples: Vec<String>,
}

/// Folds numbers to `#` and quoted reply or code to `"…"`, so reasons that differ
/// only in those are one reason.
pub fn fold_reason(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' | '\'' | '`' => {
                // A quote: skip to its closing twin (or the end).
                for d in chars.by_ref() {
                    if d == c {
                        break;
                    }
                }
                out.push_str("\"…\"");
            }
            c if c.is_ascii_digit() || (c == '-' && chars.peek().is_some_and(char::is_ascii_digit)) => {
                while chars.peek().is_some_and(|d| d.is_ascii_digit() || *d == '.' || *d == 'e') {
                    chars.next();
                }
                if !out.ends_with('#') {
                    out.push('#');
                }
            }
            c => out.push(c),
        }
    }
    out.trim().to_owned()
}

/// A trial's identity across its attempts: round, slot and trial name.
type TrialKey = (u32, Option<u32>, Option<String>);

/// The trials of one refusal group and a few of its reasons as written.
type Group = (BTreeSet<TrialKey>, Vec<String>);

fn trial_key(t: &TrialView) -> TrialKey {
    (t.round, t.slot, t.trial.clone())
}

/// The trials the evaluator never scored (no t), grouped by the stage that
/// refused them and their folded reason; the largest groups first.
pub fn refusal_groups(trials: &[&TrialView]) -> Vec<RefusalGroup> {
    let mut groups: BTreeMap<(String, String), Group> = BTreeMap::new();
    for t in trials.iter().filter(|t| t.t.is_none() && !t.is_accepted()) {
        let stage = t.stage.clone().unwrap_or_else(|| "unknown".into());
        let raw = t.reason.clone().unwrap_or_else(|| "(no reason given)".into());
        let g = groups.entry((stage, fold_reason(&raw))).or_default();
        g.0.insert(trial_key(t));
        if g.1.len() < 3 && !g.1.contains(&raw) {
            g.1.push(raw);
        }
    }
    let mut out: Vec<RefusalGroup> = groups
        .into_iter()
        .map(|((stage, reason), (ts, examples))| RefusalGroup { stage, reason, trials: ts.len(), examples })
        .collect();
    out.sort_by(|a, b| {
        b.trials.cmp(&a.trials).then_with(|| a.stage.cmp(&b.stage)).then_with(|| a.reason.cmp(&b.reason))
    });
    out
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CollisionKind {
    /// The gate found the candidate's code rewrites, only re-parameterises, or
    /// shares a subtree with an existing factor.
    Code,
    /// Admission found it correlates with an existing factor above the limit.
    Ranking,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Collision {
    pub kind: CollisionKind,
    pub round: u32,
    pub trial: Option<String>,
    /// The factors it collided with, as the refusal names them.
    pub with: Vec<String>,
    pub reason: String,
}

/// Factor names a refusal mentions: words like `f3` or `factor_12`.
fn named_factors(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|w| {
            let digits = w.trim_start_matches(|c: char| c.is_ascii_alphabetic() || c == '_');
            !digits.is_empty()
                && digits.len() < w.len()
                && digits.chars().all(|c| c.is_ascii_digit())
                && (w.starts_with('f') || w.starts_with("factor"))
        })
        .map(str::to_owned)
        .collect()
}

/// Reads collisions from refusal text. The gate's refusal of a duplicate of the
/// run's own earlier candidate is not a collision with a factor.
pub fn collisions(trials: &[&TrialView]) -> Vec<Collision> {
    let mut out = Vec::new();
    for t in trials {
        let Some(reason) = &t.reason else { continue };
        let kind = match super::refusal::of_trial(t) {
            RefusalKind::CodeCollision => Some(CollisionKind::Code),
            RefusalKind::RankingCollision => Some(CollisionKind::Ranking),
            RefusalKind::OwnRepeat | RefusalKind::LowCoverage | RefusalKind::Other => None,
        };
        if let Some(kind) = kind {
            out.push(Collision {
                kind,
                round: t.round,
                trial: t.trial.clone(),
                with: named_factors(reason),
                reason: reason.clone(),
            });
        }
    }
    out
}

/// A scored trial on the admission map: its partial-IC t in its direction (the
/// sign of its training IC, as admission reads it) against its largest absolute
/// correlation with an existing factor.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MapPoint {
    pub round: u32,
    pub trial: Option<String>,
    pub t: f64,
    pub max_abs_corr: f64,
    pub accepted: bool,
}

pub fn admission_map(trials: &[&TrialView]) -> Vec<MapPoint> {
    trials
        .iter()
        .filter_map(|t| {
            Some(MapPoint {
                round: t.round,
                trial: t.trial.clone(),
                t: t.directed_t()?,
                max_abs_corr: t.max_abs_corr?.abs(),
                accepted: t.is_accepted(),
            })
        })
        .collect()
}

/// Everything this module reads from a run's written trials, for its page.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunAnalysis {
    pub refusals: Vec<RefusalGroup>,
    pub collisions: Vec<Collision>,
    /// Each written round's t threshold.
    pub thresholds: Vec<RoundThreshold>,
    pub correlation_limit: Option<f64>,
    pub map: Vec<MapPoint>,
    pub diagnosis: Vec<Finding>,
    /// The admission map drawn (by a server built with charts; empty otherwise).
    #[serde(default)]
    pub admission_chart: crate::charts::Chart,
}

/// Reads the analysis of a run from its view.
pub fn analyse(view: &super::view::RunView) -> RunAnalysis {
    let all: Vec<&TrialView> = view.rounds.iter().flat_map(|r| r.trials.iter()).collect();
    #[cfg_attr(not(feature = "charts"), allow(unused_mut))]
    let mut a = RunAnalysis {
        refusals: refusal_groups(&all),
        collisions: collisions(&all),
        thresholds: view.thresholds.clone(),
        correlation_limit: view.correlation_limit,
        map: admission_map(&all),
        diagnosis: diagnose(&view.rounds, &view.thresholds),
        admission_chart: Default::default(),
    };
    #[cfg(feature = "charts")]
    {
        a.admission_chart = admission_chart(&a);
    }
    a
}

/// Partial-IC t in the factor's direction (vertical) against the largest
/// absolute correlation with an accepted factor (horizontal), one dot per
/// scored trial, with the latest t threshold and the correlation limit.
#[cfg(feature = "charts")]
pub fn admission_chart(a: &RunAnalysis) -> crate::charts::Chart {
    use crate::charts::{scatter, Dot, Rule};
    let dots: Vec<(Dot, String)> = a
        .map
        .iter()
        .map(|p| {
            let label = format!("{} (round {})", p.trial.as_deref().unwrap_or("?"), p.round);
            (Dot { x: p.max_abs_corr, y: p.t, group: usize::from(!p.accepted) }, label)
        })
        .collect();
    let mut rules = Vec::new();
    if let Some(t) = a.thresholds.iter().rev().find_map(|r| r.t) {
        rules.push(Rule::Horizontal { y: t, label: format!("t threshold {t:.2}") });
    }
    if let Some(c) = a.correlation_limit {
        rules.push(Rule::Vertical { x: c, label: format!("limit {c:.2}") });
    }
    scatter(
        "Admission map",
        ("largest |correlation| with an accepted factor", "partial-IC t (in its direction)"),
        &["accepted", "refused"],
        &dots,
        &rules,
        Some((0.0, 1.0)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn trial(round: u32, slot: u32, stage: &str, t: Option<f64>, reason: Option<&str>) -> TrialView {
        TrialView {
            round,
            slot: Some(slot),
            trial: Some(format!("r{round}s{slot}")),
            attempt: Some(1),
            t,
            max_abs_corr: t.map(|_| 0.3),
            tokens: None,
            stage: Some(stage.into()),
            accepted: Some(reason.is_none()),
            reason: reason.map(str::to_owned),
            ..TrialView::default()
        }
    }

    #[test]
    fn reasons_differing_only_in_numbers_or_quotes_are_one() {
        let cases = [
            ("coverage 0.41 below 0.80", "coverage # below #"),
            ("coverage 0.7 below 0.80", "coverage # below #"),
            ("reply \"rank(close)\" does not parse", "reply \"…\" does not parse"),
            ("code `ts_mean(x, 5)` is invalid", "code \"…\" is invalid"),
        ];
        for (text, want) in cases {
            assert_eq!(fold_reason(text), want, "{text}");
        }
    }

    #[test]
    fn unscored_trials_group_by_stage_and_reason_counting_trials_not_attempts() {
        let a = trial(1, 1, "evaluator", None, Some("coverage 0.41 below 0.80"));
        let mut a2 = a.clone();
        a2.attempt = Some(2);
        a2.reason = Some("coverage 0.33 below 0.80".into());
        let b = trial(1, 2, "evaluator", None, Some("coverage 0.10 below 0.80"));
        let c = trial(2, 1, "gate", None, Some("reply 'x' does not parse"));
        let scored = trial(2, 2, "admission", Some(1.0), Some("t 1.00 below threshold 2.50"));
        let groups = refusal_groups(&[&a, &a2, &b, &c, &scored]);
        assert_eq!(groups.len(), 2);
        assert_eq!(
            (groups[0].stage.as_str(), groups[0].reason.as_str(), groups[0].trials),
            ("evaluator", "coverage # below #", 2)
        );
        assert_eq!(groups[0].examples.len(), 3);
        assert_eq!(groups[1].trials, 1);
    }

    #[test]
    fn collisions_are_read_from_refusal_text_but_not_own_duplicates() {
        let cases = [
            trial(1, 1, "gate", None, Some("rewrite of factor f3")),
            trial(1, 2, "gate", None, Some("refinement of parameters only of f2")),
            trial(1, 3, "gate", None, Some("shared subtree with f1 and factor_12")),
            trial(2, 1, "gate", None, Some("duplicate of own earlier candidate r01s2")),
            trial(2, 2, "admission", Some(3.0), Some("correlation 0.85 with f4 above limit 0.70")),
            trial(2, 3, "evaluator", None, Some("coverage 0.2 below 0.8")),
        ];
        let refs: Vec<&TrialView> = cases.iter().collect();
        let got: Vec<(CollisionKind, Vec<String>)> = collisions(&refs).into_iter().map(|c| (c.kind, c.with)).collect();
        assert_eq!(
            got,
            [
                (CollisionKind::Code, vec!["f3".to_owned()]),
                (CollisionKind::Code, vec!["f2".to_owned()]),
                (CollisionKind::Code, vec!["f1".to_owned(), "factor_12".to_owned()]),
                (CollisionKind::Ranking, vec!["f4".to_owned()]),
            ]
        );
    }

    #[test]
    fn the_map_places_scored_trials_by_t_in_their_direction_against_largest_abs_correlation() {
        let scored = trial(1, 1, "admission", Some(-2.0), None);
        let unscored = trial(1, 2, "gate", None, Some("x"));
        let mut reversed = trial(1, 3, "admission", Some(-2.5), None);
        reversed.train_ic = Some(-0.04);
        let map = admission_map(&[&scored, &unscored, &reversed]);
        assert_eq!(map.len(), 2);
        assert_eq!((map[0].t, map[0].max_abs_corr, map[0].accepted), (-2.0, 0.3, true));
        assert_eq!(map[1].t, 2.5, "t in its direction: the sign of its training IC");
    }
}
