//! Paired comparisons: where a level and the baseline were run on the same
//! cell otherwise — every other factor equal (task, phase, seed,
//! repetition, …) — their outcomes form a pair, and the difference is read
//! from the pairs that disagree. Pairing removes what the task and seed
//! contribute to both, so a paired difference is often far tighter than the
//! independent one Evidence shows beside it.
//!
//! **Method.** Per level against the baseline, the pairs' 2×2 table (both
//! passed, only the level, only the baseline, neither); the difference of
//! the two pass rates over the pairs, `(b − c)/n`, with Newcombe's paired
//! score interval (his method 10 for paired data) and McNemar's exact test
//! on the discordant pairs ([`super::stats`]). A pair compares cells, so a
//! cell passes or fails as a whole (under `[results] count = "samples"` too).
//! **Which tasks drive it**: the discordant pairs per task, most net first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::stats::{mcnemar_exact, paired_difference, Interval, PairTable, Z95};
use super::Outcome;
use crate::matrix::value_text;

/// One pair whose outcomes differ (the concordant ones are only counted).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DiscordantPair {
    /// The other factors, as `factor=value` joined by spaces.
    pub key: String,
    pub task: String,
    pub level_cell: String,
    pub baseline_cell: String,
    /// Whether the level's cell passed (and so the baseline's did not).
    pub level_passed: bool,
}

/// One task's share of the pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskPairs {
    pub task: String,
    pub table: PairTable,
    /// `(b − c)/n` over the task's pairs.
    pub difference: f64,
}

/// A level against the baseline, over the pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PairedComparison {
    pub level: String,
    pub baseline: String,
    pub table: PairTable,
    pub difference: f64,
    pub ci95: Interval,
    /// McNemar's exact two-sided p-value.
    pub p_value: f64,
    /// Whether the interval excludes 0.
    pub clear: bool,
    /// Per task, the most net discordant first.
    pub by_task: Vec<TaskPairs>,
    /// Every discordant pair, in key order.
    pub discordant: Vec<DiscordantPair>,
}

impl PairedComparison {
    /// "memory − baseline over 12 pairs: +25 pp [+4, +44]; 4 pairs only memory passed, 1 only baseline (McNemar p = 0.38)".
    pub fn words(&self) -> String {
        let t = &self.table;
        format!(
            "{} − {} over {} pair{}: {:+.0} pp [{:+.0}, {:+.0}]; {} only {} passed, {} only {} (McNemar exact p = {})",
            self.level,
            self.baseline,
            t.n(),
            if t.n() == 1 { "" } else { "s" },
            self.difference * 100.0,
            self.ci95.lo * 100.0,
            self.ci95.hi * 100.0,
            t.b,
            self.level,
            t.c,
            self.baseline,
            p_words(self.p_value)
        )
    }
}

/// A p-value for people: two significant figures, `< 0.0001` below that.
pub fn p_words(p: f64) -> String {
    if p < 1e-4 {
        "< 0.0001".into()
    } else if p >= 0.1 {
        format!("{p:.2}")
    } else {
        format!("{p:.1e}").parse::<f64>().map(|x| format!("{x}")).unwrap_or_else(|_| format!("{p}"))
    }
}

/// The level an outcome is at (the route's model when `by` is `model` and
/// the matrix has no such factor).
fn level_of(o: &Outcome, by: &str) -> Option<String> {
    match o.factors.get(by) {
        Some(v) => Some(value_text(v)),
        None if by == "model" => o.model.clone(),
        None => None,
    }
}

/// Every level after the first (`levels[0]`, the baseline) against it, over
/// the pairs the outcomes make; a level with no pair is left out.
pub fn paired(outcomes: &[Outcome], by: &str, levels: &[String]) -> Vec<PairedComparison> {
    let Some(baseline) = levels.first() else { return Vec::new() };
    // key (every other factor) → level → the outcome.
    let mut by_key: BTreeMap<String, BTreeMap<String, &Outcome>> = BTreeMap::new();
    for o in outcomes {
        let Some(level) = level_of(o, by) else { continue };
        let key: Vec<String> =
            o.factors.iter().filter(|(k, _)| *k != by).map(|(k, v)| format!("{k}={}", value_text(v))).collect();
        by_key.entry(key.join(" ")).or_default().insert(level, o);
    }
    let mut out = Vec::new();
    for level in levels.iter().skip(1) {
        let mut table = PairTable::default();
        let mut tasks: BTreeMap<String, PairTable> = BTreeMap::new();
        let mut discordant = Vec::new();
        for (key, at) in &by_key {
            let (Some(l), Some(b)) = (at.get(level), at.get(baseline)) else { continue };
            let task = l.factors.get("task").map(value_text).unwrap_or_default();
            let t = tasks.entry(task.clone()).or_default();
            for tab in [&mut table, t] {
                match (l.passed, b.passed) {
                    (true, true) => tab.a += 1,
                    (true, false) => tab.b += 1,
                    (false, true) => tab.c += 1,
                    (false, false) => tab.d += 1,
                }
            }
            if l.passed != b.passed {
                discordant.push(DiscordantPair {
                    key: key.clone(),
                    task,
                    level_cell: l.cell.clone(),
                    baseline_cell: b.cell.clone(),
                    level_passed: l.passed,
                });
            }
        }
        let Some((difference, ci95)) = paired_difference(table, Z95) else { continue };
        let mut by_task: Vec<TaskPairs> = tasks
            .into_iter()
            .map(|(task, t)| TaskPairs { task, difference: (t.b as f64 - t.c as f64) / t.n() as f64, table: t })
            .collect();
        // Most net discordant first (the direction of the whole first).
        let sign = if table.b >= table.c { 1 } else { -1 };
        by_task.sort_by_key(|t| std::cmp::Reverse(sign * (t.table.b as i64 - t.table.c as i64)));
        out.push(PairedComparison {
            level: level.clone(),
            baseline: baseline.clone(),
            p_value: mcnemar_exact(table.b, table.c),
            clear: ci95.lo > 0.0 || ci95.hi < 0.0,
            table,
            difference,
            ci95,
            by_task,
            discordant,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn o(cond: &str, task: &str, seed: i64, passed: bool) -> Outcome {
        let factors: BTreeMap<String, serde_json::Value> =
            [("condition", json!(cond)), ("task", json!(task)), ("seed", json!(seed))]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
        Outcome {
            cell: format!("{cond}-{task}-{seed}"),
            factors,
            model: Some("m".into()),
            run_set: "rs".into(),
            passed,
            reason: None,
            score: None,
            tokens: None,
            ended_at: None,
            successes: u64::from(passed),
            trials: 1,
        }
    }

    #[test]
    fn pairs_match_every_other_factor_and_the_tasks_that_drive_it_come_first() {
        let mut outs = Vec::new();
        // t1: memory passes where base fails on seeds 1–3; both pass seed 4.
        for seed in 1..=4 {
            outs.push(o("base", "t1", seed, seed == 4));
            outs.push(o("memory", "t1", seed, true));
        }
        // t2: one pair each way, one both-fail.
        outs.extend([o("base", "t2", 1, true), o("memory", "t2", 1, false)]);
        outs.extend([o("base", "t2", 2, false), o("memory", "t2", 2, true)]);
        outs.extend([o("base", "t2", 3, false), o("memory", "t2", 3, false)]);
        // Unpaired: memory seed 9 has no base cell.
        outs.push(o("memory", "t2", 9, true));
        let levels = ["base".to_owned(), "memory".to_owned(), "other".to_owned()];
        let p = paired(&outs, "condition", &levels);
        assert_eq!(p.len(), 1, "a level with no pair is left out");
        let m = &p[0];
        assert_eq!(m.table, PairTable { a: 1, b: 4, c: 1, d: 1 });
        assert_eq!(m.difference, 3.0 / 7.0);
        assert_eq!(Some((m.difference, m.ci95)), paired_difference(m.table, Z95));
        assert_eq!(m.p_value, mcnemar_exact(4, 1));
        assert_eq!(m.by_task.iter().map(|t| t.task.as_str()).collect::<Vec<_>>(), ["t1", "t2"]);
        assert_eq!(m.by_task[0].table, PairTable { a: 1, b: 3, c: 0, d: 0 });
        assert_eq!(m.discordant.len(), 5);
        assert!(m
            .discordant
            .iter()
            .any(|d| d.key == "seed=1 task=t2" && !d.level_passed && d.baseline_cell == "base-t2-1"));
        assert_eq!(m.words(), format!(
            "memory − base over 7 pairs: +43 pp [{:+.0}, {:+.0}]; 4 only memory passed, 1 only base (McNemar exact p = 0.38)",
            m.ci95.lo * 100.0, m.ci95.hi * 100.0
        ));
        assert_eq!(p_words(0.0129), "0.013");
        assert_eq!(p_words(0.00001), "< 0.0001");
    }
}
