//! The diagnosis of a run: what is going wrong, read from its trials by
//! rules private to this module, their thresholds fixed here. Each finding counts
//! trials, not attempts: a trial is counted once whichever of its attempts met
//! the problem.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::admission::RoundThreshold;
use super::refusal::{self, RefusalKind};
use super::view::{RoundView, TrialView};

/// Below this many trials nothing is diagnosed: too few to tell a pattern.
const MIN_TRIALS: usize = 6;
/// Share of trials the gate refused.
const GATE_REFUSALS: f64 = 0.40;
/// Share of trials the gate refused as a repeat of the run's own candidate.
const OWN_REPEATS: f64 = 0.20;
/// Share of trials the evaluator refused for coverage.
const LOW_COVERAGE: f64 = 0.25;
/// Share of scored trials admission refused for correlation above the limit.
const CROWDED: f64 = 0.30;
/// Share of scored trials whose t (in their direction) fell below the round's threshold.
const WEAK_SIGNAL: f64 = 0.60;
/// Share of trials that needed more than one attempt.
const RETRIES: f64 = 0.30;
/// Written rounds in a row without an accepted factor.
const STALLED_ROUNDS: usize = 3;
/// How many trial names a finding quotes.
const EXAMPLES: usize = 5;

/// One problem the trials show.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// A stable name for the rule (for links and tests).
    pub rule: String,
    /// What is wrong, in a sentence.
    pub summary: String,
    /// What to look at or change.
    pub advice: String,
    /// Trials that met the problem, of how many it was judged over.
    pub trials: usize,
    pub of: usize,
    /// A few of those trials' names.
    pub examples: Vec<String>,
}

/// A trial with all its attempts.
struct Trial<'a> {
    name: String,
    attempts: Vec<&'a TrialView>,
}

impl Trial<'_> {
    fn any(&self, f: impl Fn(&TrialView) -> bool) -> bool {
        self.attempts.iter().any(|a| f(a))
    }
    fn scored(&self) -> bool {
        self.any(|a| a.t.is_some())
    }
}

/// Whether the attempt was refused the way `kind` says (the one classifier
/// the analysis uses too).
fn refused_as(t: &TrialView, kind: RefusalKind) -> bool {
    refusal::of_trial(t) == kind
}

/// Counts the trials (among `pool`) that meet `problem`, and reports them when
/// their share reaches `share`.
fn rule(
    out: &mut Vec<Finding>,
    pool: &[&Trial<'_>],
    share: f64,
    (rule, summary, advice): (&str, &str, &str),
    problem: impl Fn(&Trial<'_>) -> bool,
) {
    let hit: Vec<&&Trial<'_>> = pool.iter().filter(|t| problem(t)).collect();
    if pool.is_empty() || hit.is_empty() || (hit.len() as f64) < share * pool.len() as f64 {
        return;
    }
    out.push(Finding {
        rule: rule.to_owned(),
        summary: summary.to_owned(),
        advice: advice.to_owned(),
        trials: hit.len(),
        of: pool.len(),
        examples: hit.iter().take(EXAMPLES).map(|t| t.name.clone()).collect(),
    });
}

/// Diagnoses the written rounds, with each round's t threshold.
pub fn diagnose(rounds: &[Arc<RoundView>], thresholds: &[RoundThreshold]) -> Vec<Finding> {
    // Attempts grouped into trials, in ledger order.
    let mut index: BTreeMap<(u32, Option<u32>, Option<&str>), usize> = BTreeMap::new();
    let mut trials: Vec<Trial<'_>> = Vec::new();
    for t in rounds.iter().flat_map(|r| r.trials.iter()) {
        let key = (t.round, t.slot, t.trial.as_deref());
        let i = *index.entry(key).or_insert_with(|| {
            let name = t
                .trial
                .clone()
                .unwrap_or_else(|| format!("round {} slot {}", t.round, t.slot.map_or("?".into(), |s| s.to_string())));
            trials.push(Trial { name, attempts: Vec::new() });
            trials.len() - 1
        });
        trials[i].attempts.push(t);
    }
    let mut out = Vec::new();
    if trials.len() < MIN_TRIALS {
        return out;
    }
    let all: Vec<&Trial<'_>> = trials.iter().collect();
    let scored: Vec<&Trial<'_>> = trials.iter().filter(|t| t.scored()).collect();
    let threshold: BTreeMap<u32, f64> = thresholds.iter().filter_map(|r| Some((r.round, r.t?))).collect();

    rule(
        &mut out,
        &all,
        GATE_REFUSALS,
        (
            "gate_refusals",
            "The gate refuses many proposals before they are scored.",
            "Read the gate's refusal groups: proposals that do not parse or rewrite existing factors waste calls.",
        ),
        |t| t.any(|a| a.stage.as_deref() == Some("gate") && !a.is_accepted()),
    );
    rule(
        &mut out,
        &all,
        OWN_REPEATS,
        (
            "own_repeats",
            "The agent proposes its own earlier candidates again.",
            "The memory or the plan is not steering it away from what it already tried.",
        ),
        |t| t.any(|a| refused_as(a, RefusalKind::OwnRepeat)),
    );
    rule(
        &mut out,
        &all,
        LOW_COVERAGE,
        (
            "low_coverage",
            "Many candidates cover too little of the universe to be scored.",
            "Candidates lean on sparse fields or long windows; check the datasets' coverage.",
        ),
        |t| t.any(|a| refused_as(a, RefusalKind::LowCoverage)),
    );
    rule(
        &mut out,
        &scored,
        CROWDED,
        (
            "crowded",
            "Scored candidates correlate with existing factors above the limit.",
            "The search is circling known factors: see the ranking collisions and the admission map.",
        ),
        |t| t.any(|a| refused_as(a, RefusalKind::RankingCollision)),
    );
    rule(
        &mut out,
        &scored,
        WEAK_SIGNAL,
        (
            "weak_signal",
            "Most scored candidates fall short of their round's t threshold.",
            "Signals are weak for the trial count; the threshold rises with each round.",
        ),
        |t| {
            t.any(|a| match (a.directed_t(), threshold.get(&a.round)) {
                (Some(x), Some(th)) => x < *th,
                _ => false,
            })
        },
    );
    rule(
        &mut out,
        &all,
        RETRIES,
        (
            "retries",
            "Many trials needed more than one attempt.",
            "Replies are often unusable on the first try; look at truncated calls and the gate's reasons.",
        ),
        |t| t.attempts.len() > 1 || t.any(|a| a.attempt.is_some_and(|n| n > 1)),
    );

    // Stalled: the latest written rounds accepted nothing.
    let latest: Vec<&Arc<RoundView>> = rounds.iter().rev().take(STALLED_ROUNDS).collect();
    if rounds.len() >= STALLED_ROUNDS && latest.iter().all(|r| r.trials.iter().all(|t| !t.is_accepted())) {
        let mut names: Vec<String> =
            latest.iter().rev().flat_map(|r| r.trials.iter().filter_map(|t| t.trial.clone())).collect();
        names.dedup();
        out.push(Finding {
            rule: "stalled".into(),
            summary: format!("No factor accepted in the last {STALLED_ROUNDS} written rounds."),
            advice: "Consider stopping the run, or changing the plan or the memory before resuming.".into(),
            trials: trials.iter().filter(|t| latest.iter().any(|r| r.round == t.attempts[0].round)).count(),
            of: trials.len(),
            examples: names.into_iter().take(EXAMPLES).collect(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runview::admission::ThresholdSource;

    fn attempt(round: u32, slot: u32, n: u32, stage: &str, t: Option<f64>, reason: Option<&str>) -> TrialView {
        TrialView {
            round,
            slot: Some(slot),
            trial: Some(format!("r{round:02}s{slot}")),
            attempt: Some(n),
            t,
            stage: Some(stage.into()),
            accepted: Some(reason.is_none()),
            reason: reason.map(str::to_owned),
            ..TrialView::default()
        }
    }

    fn rounds(trials: Vec<TrialView>) -> Vec<Arc<RoundView>> {
        let mut by: BTreeMap<u32, Vec<TrialView>> = BTreeMap::new();
        for t in trials {
            by.entry(t.round).or_default().push(t);
        }
        by.into_iter().map(|(round, trials)| Arc::new(RoundView::new(round, trials))).collect()
    }

    fn found<'a>(f: &'a [Finding], rule: &str) -> Option<&'a Finding> {
        f.iter().find(|x| x.rule == rule)
    }

    #[test]
    fn diagnosis_counts_trials_not_attempts() {
        // Trial r01s1 met the gate three times; it is one trial of eight.
        let mut ts = vec![
            attempt(1, 1, 1, "gate", None, Some("reply 'x' does not parse")),
            attempt(1, 1, 2, "gate", None, Some("reply 'y' does not parse")),
            attempt(1, 1, 3, "gate", None, Some("reply 'z' does not parse")),
        ];
        for slot in 2..=8 {
            ts.push(attempt(1, slot, 1, "admission", Some(3.0), None));
        }
        let f = diagnose(&rounds(ts.clone()), &[]);
        assert!(found(&f, "gate_refusals").is_none(), "1 trial of 8, although 3 of 10 attempts: {f:?}");
        let retries = found(&f, "retries");
        assert!(retries.is_none(), "1 of 8 trials retried is below the threshold");
        // Three more gate-refused trials: 4 of 8 trials reach the 40 % share.
        for slot in 2..=4 {
            ts[slot + 1] = attempt(1, slot as u32, 1, "gate", None, Some("rewrite of factor f1"));
        }
        let f = diagnose(&rounds(ts), &[]);
        let g = found(&f, "gate_refusals").expect("4 of 8 trials");
        assert_eq!((g.trials, g.of), (4, 8));
    }

    #[test]
    fn weak_signal_uses_each_rounds_threshold_and_the_factors_direction() {
        let mut ts = Vec::new();
        for slot in 1..=6 {
            ts.push(attempt(1, slot, 1, "admission", Some(2.0), Some("t 2.00 below threshold 2.50")));
        }
        let th = [RoundThreshold { round: 1, t: Some(2.5), source: Some(ThresholdSource::Refusal) }];
        let f = diagnose(&rounds(ts.clone()), &th);
        assert_eq!(found(&f, "weak_signal").map(|x| x.trials), Some(6));
        // Read in its direction (negative training IC), a t of -3 is 3: above the threshold.
        for t in &mut ts {
            t.t = Some(-3.0);
            t.train_ic = Some(-0.02);
        }
        assert!(found(&diagnose(&rounds(ts), &th), "weak_signal").is_none());
    }

    #[test]
    fn stalled_and_too_few_trials() {
        let ts: Vec<TrialView> =
            (1..=4).flat_map(|r| (1..=2).map(move |s| attempt(r, s, 1, "admission", Some(1.0), Some("low")))).collect();
        let f = diagnose(&rounds(ts.clone()), &[]);
        let s = found(&f, "stalled").expect("stalled");
        assert_eq!((s.trials, s.of), (6, 8));
        assert!(diagnose(&rounds(ts[..4].to_vec()), &[]).is_empty(), "four trials are too few to diagnose");
    }
}
