//! Paired comparisons: where a level and the baseline were run on the same
//! cell otherwise — every other factor equal (task, phase, seed,
//! repetition, …) — their outcomes form a pair, and the difference is read
//! from the pairs that disagree. Pairing removes what the task and seed
//! contribute to both, so a paired difference is often far tighter than the
//! independent one Evidence shows beside it.
//!
//! **Method.** Per level against the baseline, the pairs' 2×2 table (both
//! passed, only the level, only the baseline, neither) and the difference of
//! the two pass rates over the pairs, `(b − c)/n`. **The verdict** is one
//! test: the always-valid e-process over the discordant pairs in the order
//! they were completed ([`super::sequential::Discordant`]), Holm-adjusted
//! with the page's other comparisons; **its interval** is the same
//! e-process's confidence sequence for the share `q` of discordant pairs the
//! level wins, at the level the family leaves this comparison, shown as a
//! difference `(2q − 1)·(b + c)/n` — so it excludes 0 exactly when the
//! verdict is clear. Newcombe's paired score interval (his method 10) is kept
//! beside it as the fixed-look interval. A pair compares cells, so a cell
//! passes or fails as a whole (under `[results] count = "samples"` too).
//! **Which tasks drive it**: the discordant pairs per task, most net first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sequential::{self, AlwaysValid, Discordant};
use super::stats::{paired_difference, Interval, PairTable, Z95};
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
    /// The run sets the two cells' counted outcomes are from (the sample
    /// view's address: `/samples/<run set>/<cell>`).
    #[serde(default)]
    pub level_run_set: String,
    #[serde(default)]
    pub baseline_run_set: String,
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
    /// Newcombe's paired 95 % interval: valid for one look at a size fixed
    /// in advance (not the verdict).
    pub ci95: Interval,
    /// The always-valid test over the discordant pairs.
    #[serde(default)]
    pub always_valid: AlwaysValid,
    /// Its p-value adjusted for the page's family (Holm).
    #[serde(default = "super::no_evidence")]
    pub p_family: f64,
    /// The verdict's interval for the difference: the confidence sequence
    /// at `interval_level` — it excludes 0 exactly when `clear`.
    #[serde(default = "whole")]
    pub interval: Interval,
    /// The confidence the interval is drawn at (0.95 alone in its family;
    /// more when the family shares out the error).
    #[serde(default = "conf95")]
    pub interval_level: f64,
    /// The verdict: `p_family` at most α.
    pub clear: bool,
    /// Per task, the most net discordant first.
    pub by_task: Vec<TaskPairs>,
    /// Every discordant pair, in key order.
    pub discordant: Vec<DiscordantPair>,
    /// Whether the level won each discordant pair, in the order the pairs
    /// were completed (the later of the two ends): the test's input.
    #[serde(skip)]
    pub discordant_in_order: Vec<bool>,
}

fn whole() -> Interval {
    Interval { lo: -1.0, hi: 1.0 }
}

fn conf95() -> f64 {
    1.0 - sequential::ALPHA
}

impl PairedComparison {
    /// "memory − baseline over 8 pairs: +50 pp [−8, +100] (always-valid,
    /// 97.5 %); 4 only memory passed, 0 only baseline; p = 0.13 — open".
    pub fn words(&self) -> String {
        let t = &self.table;
        format!(
            "{} − {} over {} pair{}: {:+.0} pp [{:+.0}, {:+.0}] (always-valid, {}); {} only {} passed, {} only {}; p = {} — {}",
            self.level,
            self.baseline,
            t.n(),
            if t.n() == 1 { "" } else { "s" },
            self.difference * 100.0,
            self.interval.lo * 100.0,
            self.interval.hi * 100.0,
            confidence_words(self.interval_level),
            t.b,
            self.level,
            t.c,
            self.baseline,
            p_words(self.p_family),
            if self.clear { "clear" } else { "open" },
        )
    }

    /// The verdict at `p_family` and the interval at the level the family
    /// leaves this comparison (`alpha_here`).
    pub fn settle(&mut self, p_family: f64, alpha_here: f64) {
        self.p_family = p_family;
        self.clear = p_family <= sequential::ALPHA;
        self.interval_level = 1.0 - alpha_here;
        let q = self.test().interval(alpha_here);
        let t = &self.table;
        let share = (t.b + t.c) as f64 / t.n().max(1) as f64;
        self.interval = Interval { lo: (2.0 * q.lo - 1.0) * share, hi: (2.0 * q.hi - 1.0) * share };
    }

    /// The e-process over the discordant pairs, in the order they were completed.
    fn test(&self) -> Discordant {
        let mut d = Discordant::default();
        for p in &self.discordant_in_order {
            d.observe(*p);
        }
        d
    }
}

/// A confidence for people: `95 %`, `97.5 %`, `98.33 %`.
pub fn confidence_words(c: f64) -> String {
    let pct = c * 100.0;
    let s = format!("{pct:.2}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    format!("{s} %")
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
/// the pairs the outcomes make; a level with no pair is left out. Each
/// verdict and its interval are left open until [`super::settle`] sets them
/// for the family they are judged in (the interval is made once, there).
pub fn paired<'a>(outcomes: &'a [Outcome], by: &str, levels: &[String]) -> Vec<PairedComparison> {
    let Some(baseline) = levels.first() else { return Vec::new() };
    // key (every other factor) → level → the outcome.
    let mut by_key: BTreeMap<String, BTreeMap<String, &'a Outcome>> = BTreeMap::new();
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
        let mut completed: Vec<((&str, &str), bool)> = Vec::new();
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
                let end = |o: &'a Outcome| o.ended_at.as_deref().unwrap_or("");
                completed.push(((end(l).max(end(b)), key.as_str()), l.passed));
                discordant.push(DiscordantPair {
                    key: key.clone(),
                    task,
                    level_cell: l.cell.clone(),
                    baseline_cell: b.cell.clone(),
                    level_run_set: l.run_set.clone(),
                    baseline_run_set: b.run_set.clone(),
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
        completed.sort_by(|x, y| x.0.cmp(&y.0));
        let mut p = PairedComparison {
            level: level.clone(),
            baseline: baseline.clone(),
            always_valid: AlwaysValid::default(),
            p_family: 1.0,
            interval: whole(),
            interval_level: conf95(),
            clear: false,
            table,
            difference,
            ci95,
            by_task,
            discordant,
            discordant_in_order: completed.into_iter().map(|(_, w)| w).collect(),
        };
        p.always_valid = p.test().now();
        // Its verdict and interval are set by `super::settle`, with the family.
        out.push(p);
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
            failed: false,
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
        let mut p = paired(&outs, "condition", &levels);
        assert_eq!(p.len(), 1, "a level with no pair is left out");
        crate::results::settle(&mut [], &mut p);
        let m = &p[0];
        assert_eq!(m.table, PairTable { a: 1, b: 4, c: 1, d: 1 });
        assert_eq!(m.difference, 3.0 / 7.0);
        assert_eq!(Some((m.difference, m.ci95)), paired_difference(m.table, Z95));
        // The verdict's test: the discordant pairs in the order completed
        // (no ends here: by key), the level winning 4 of 5.
        assert_eq!(m.discordant_in_order, [true, false, true, true, true]);
        let mut d = Discordant::default();
        m.discordant_in_order.iter().for_each(|w| d.observe(*w));
        assert_eq!(m.always_valid, d.now());
        // Alone in its family: the interval at 95 %, containing 0 (open).
        assert_eq!(m.interval_level, 0.95);
        assert!(!m.clear && m.interval.lo < 0.0 && m.interval.hi > 0.0, "{:?}", m.interval);
        assert_eq!(m.by_task.iter().map(|t| t.task.as_str()).collect::<Vec<_>>(), ["t1", "t2"]);
        assert_eq!(m.by_task[0].table, PairTable { a: 1, b: 3, c: 0, d: 0 });
        assert_eq!(m.discordant.len(), 5);
        assert!(m
            .discordant
            .iter()
            .any(|d| d.key == "seed=1 task=t2" && !d.level_passed && d.baseline_cell == "base-t2-1"));
        assert_eq!(m.words(), format!(
            "memory − base over 7 pairs: +43 pp [{:+.0}, {:+.0}] (always-valid, 95 %); 4 only memory passed, 1 only base; p = {} — open",
            m.interval.lo * 100.0, m.interval.hi * 100.0, p_words(m.p_family)
        ));
        assert_eq!(confidence_words(0.975), "97.5 %");
        assert_eq!(confidence_words(1.0 - 0.05 / 3.0), "98.33 %");
        assert_eq!(p_words(0.0129), "0.013");
        assert_eq!(p_words(0.00001), "< 0.0001");
    }
}
