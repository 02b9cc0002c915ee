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
//! beside it as the fixed-look interval. **What a pair is**: two cells —
//! each passing or not as a whole — or, when rates count samples (`[results]
//! count = "samples"`) and both twins' samples can be read, each sample the
//! two cells share (the same id and epoch): a pair of samples is then the
//! unit of the table and the test, as it is of the rates. Twins whose
//! samples cannot both be read are left out then (counted in
//! `twins_without_samples`), so one comparison never mixes units.
//! **Which tasks drive it**: the discordant pairs per task, most net first.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::sequential::{self, AlwaysValid, Discordant};
use super::stats::{paired_difference, Interval, PairTable, Z95};
use super::Outcome;
use crate::console::matrix::value_text;

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
    /// When samples are paired: the sample, `id` (`id#epoch` past the first
    /// epoch) — the level's and the baseline's verdicts on it differ.
    #[serde(default)]
    pub sample: Option<String>,
}

/// A sample within a cell: its id and epoch.
pub type SampleKey = (String, u32);

/// One cell's scored samples: `(id, epoch)` → passed (shared: a reader
/// keeps each log's verdicts and hands them out without copying).
pub type CellVerdicts = std::sync::Arc<BTreeMap<SampleKey, bool>>;

/// Each cell's scored samples, by cell id: what pairs samples (`[results]
/// count = "samples"`).
pub type SampleVerdicts = BTreeMap<String, CellVerdicts>;

/// One pair twins make: the sample (none: the two cells), each side's verdict.
struct Unit {
    sample: Option<SampleKey>,
    level: bool,
    baseline: bool,
}

/// When a pair was completed (the later end, the twins' key, the sample),
/// the order the verdict's test takes pairs in.
type Completed<'a> = (&'a str, &'a str, Option<SampleKey>);

/// What a paired comparison pairs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PairUnit {
    #[default]
    Cells,
    Samples,
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
    /// What each pair in `table` is: two cells, or two cells' same sample.
    #[serde(default)]
    pub unit: PairUnit,
    /// With samples paired: twins left out because one side's samples could
    /// not be read (no log; a cell that keeps none).
    #[serde(default)]
    pub twins_without_samples: u64,
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
            "{} − {} over {} {}pair{}: {:+.0} pp [{:+.0}, {:+.0}] (always-valid, {}); {} only {} passed, {} only {}; p = {} — {}",
            self.level,
            self.baseline,
            t.n(),
            match self.unit {
                PairUnit::Cells => "",
                PairUnit::Samples => "sample ",
            },
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
/// `samples`: pair the twins' samples (see the module), else whole cells.
pub fn paired<'a>(
    outcomes: &'a [Outcome],
    by: &str,
    levels: &[String],
    samples: Option<&SampleVerdicts>,
) -> Vec<PairedComparison> {
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
        // (the later end, the twins' key, the sample) → whether the level won.
        let mut completed: Vec<(Completed, bool)> = Vec::new();
        let mut without = 0u64;
        for (key, at) in &by_key {
            let (Some(l), Some(b)) = (at.get(level), at.get(baseline)) else { continue };
            let task = l.factors.get("task").map(value_text).unwrap_or_default();
            // The pairs these twins make: the two cells, or each shared sample.
            let units: Vec<Unit> = match samples {
                None => vec![Unit { sample: None, level: l.passed, baseline: b.passed }],
                Some(all) => match (all.get(&l.cell), all.get(&b.cell)) {
                    (Some(ls), Some(bs)) => ls
                        .iter()
                        .filter_map(|(k, lp)| Some(Unit { sample: Some(k.clone()), level: *lp, baseline: *bs.get(k)? }))
                        .collect(),
                    _ => {
                        without += 1;
                        continue;
                    }
                },
            };
            let end = |o: &'a Outcome| o.ended_at.as_deref().unwrap_or("");
            let t = tasks.entry(task.clone()).or_default();
            for Unit { sample, level: lp, baseline: bp } in units {
                for tab in [&mut table, &mut *t] {
                    match (lp, bp) {
                        (true, true) => tab.a += 1,
                        (true, false) => tab.b += 1,
                        (false, true) => tab.c += 1,
                        (false, false) => tab.d += 1,
                    }
                }
                if lp != bp {
                    completed.push(((end(l).max(end(b)), key.as_str(), sample.clone()), lp));
                    discordant.push(DiscordantPair {
                        key: key.clone(),
                        task: task.clone(),
                        level_cell: l.cell.clone(),
                        baseline_cell: b.cell.clone(),
                        level_run_set: l.run_set.clone(),
                        baseline_run_set: b.run_set.clone(),
                        level_passed: lp,
                        sample: sample.map(|(id, epoch)| if epoch > 1 { format!("{id}#{epoch}") } else { id }),
                    });
                }
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
            unit: if samples.is_some() { PairUnit::Samples } else { PairUnit::Cells },
            twins_without_samples: without,
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
        let mut p = paired(&outs, "condition", &levels, None);
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

    /// Under `count = "samples"` twins pair their shared samples (same id
    /// and epoch): the table counts sample pairs, a discordant one names its
    /// sample, and twins whose samples cannot both be read are left out and
    /// counted — whole cells are never mixed in.
    #[test]
    fn samples_are_paired_by_id_and_epoch_when_samples_are_counted() {
        let outs = vec![
            o("base", "t1", 1, false),
            o("memory", "t1", 1, true),
            o("base", "t1", 2, true),
            o("memory", "t1", 2, true),
        ];
        let v = |xs: &[(&str, u32, bool)]| -> CellVerdicts {
            std::sync::Arc::new(xs.iter().map(|(id, e, p)| ((id.to_string(), *e), *p)).collect())
        };
        let mut samples = SampleVerdicts::new();
        // Seed 1: samples 1–3 shared (3 has a second epoch on the level only).
        samples.insert("base-t1-1".into(), v(&[("1", 1, true), ("2", 1, false), ("3", 1, false)]));
        samples.insert("memory-t1-1".into(), v(&[("1", 1, true), ("2", 1, true), ("3", 1, true), ("3", 2, false)]));
        // Seed 2: the baseline's samples cannot be read.
        samples.insert("memory-t1-2".into(), v(&[("1", 1, true)]));
        let levels = ["base".to_owned(), "memory".to_owned()];
        let p = paired(&outs, "condition", &levels, Some(&samples));
        let m = &p[0];
        assert_eq!((m.unit, m.twins_without_samples), (PairUnit::Samples, 1));
        assert_eq!(m.table, PairTable { a: 1, b: 2, c: 0, d: 0 }, "three shared samples; epoch 2 of 3 is not shared");
        assert_eq!(m.discordant.iter().map(|d| d.sample.as_deref()).collect::<Vec<_>>(), [Some("2"), Some("3")]);
        assert_eq!(m.discordant_in_order, [true, true]);
        assert!(m.words().starts_with("memory − base over 3 sample pairs: "), "{}", m.words());
        // Without sample verdicts: the cells, as before.
        let cells = paired(&outs, "condition", &levels, None);
        assert_eq!((cells[0].unit, cells[0].table.n()), (PairUnit::Cells, 2));
    }
}
