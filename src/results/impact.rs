//! What the next cells would resolve: the measure behind choosing what to run
//! next. Pure: counts in, figures out.
//!
//! **A comparison** is a level's pass rate against the baseline's, with the
//! fixed-look 95 % Newcombe hybrid score interval Evidence shows (see
//! [`super::stats`]) — what the next cells would narrow — and its verdict,
//! which the caller gives ([`super::sequential`]): settled when clear.
//!
//! **Expected narrowing.** Running `k` more cells of the level (and `k_base`
//! of the baseline) is expected to leave each rate where it is now — the
//! observed rate, or ½ for a group with nothing observed, the least
//! informed guess and the widest interval — and to add the trials: the
//! counts become `s + p̂·k` of `n + k` (successes may be fractional). What
//! the cells would buy is measured on an interval that, like the verdict,
//! holds however often it is read: the **always-valid margin**, the
//! half-width of [`super::sequential::difference_interval`] (each rate's
//! Beta-mixture confidence sequence at α/2), today against after. The
//! fixed-look Newcombe interval Evidence shows is narrowed the same way, for
//! the words (labelled "at one look"). Adding trials at a fixed rate never
//! widens either (tested below).
//!
//! **Cells to resolve a difference.** To tell rates `p₁` and `p₂` apart
//! (`Δ = p₁ − p₂ ≠ 0`) with a two-sided test at confidence `1 − α` and power
//! `1 − β`, each group needs
//!
//! ```text
//! n = ( z(1 − α/2) · √(2 p̄ (1 − p̄)) + z(1 − β) · √(p₁(1 − p₁) + p₂(1 − p₂)) )² / Δ²,   p̄ = (p₁ + p₂)/2
//! ```
//!
//! cells, rounded up — the normal approximation for two independent
//! proportions without continuity correction (Fleiss, Levin & Paik,
//! *Statistical Methods for Rates and Proportions*, 3rd ed., 2003, §4.2).
//! `z` is the standard normal quantile. That is the size for **one look**
//! fixed in advance; the verdict, which holds however often it is read,
//! needs more: [`cells_to_settle`] finds how many by running the verdict's
//! own test ([`super::sequential::TwoProportions`]) on simulated cells.

use super::sequential::{difference_interval, Side, TwoProportions, ALPHA};
use super::stats::{difference_counts, Interval, Z95};

/// A group's counts: `successes` of `n` trials.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Counts {
    pub successes: u64,
    pub n: u64,
}

impl Counts {
    /// The rate the next trials are expected at: the observed one, ½ when
    /// nothing was observed.
    pub fn expected_rate(self) -> f64 {
        if self.n == 0 {
            0.5
        } else {
            self.successes as f64 / self.n as f64
        }
    }

    /// These counts after `k` more trials at the expected rate.
    fn plus(self, k: u64) -> (f64, f64) {
        (self.successes as f64 + self.expected_rate() * k as f64, (self.n + k) as f64)
    }
}

/// What `k` more cells of a level would do to its comparison with the baseline.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Narrowing {
    /// Today's difference and its fixed-look interval (none when a group
    /// has no trial yet).
    pub today: Option<(f64, Interval)>,
    /// The fixed-look interval's expected half-width after the cells.
    pub after: f64,
    /// The expected fixed-look interval after the cells.
    pub interval: Interval,
    /// The always-valid margin today (1, the widest, when a group has no
    /// trial yet) and expected after the cells: what the ranking weighs.
    pub margin: f64,
    pub margin_after: f64,
    /// The comparison's verdict today (set by the caller from the
    /// always-valid test: [`super::sequential`]): settled when clear.
    pub clear: bool,
}

impl Narrowing {
    /// Today's half-width.
    pub fn now(&self) -> Option<f64> {
        self.today.map(|(_, i)| (i.hi - i.lo) / 2.0)
    }

    /// Whether the comparison is settled: its verdict is clear.
    pub fn settled(&self) -> bool {
        self.clear
    }

    /// How much the always-valid margin shrinks.
    pub fn gain(&self) -> f64 {
        (self.margin - self.margin_after).max(0.0)
    }

    /// What the cells would do, in words: "now +25 pp [−28, +70] at one
    /// look, would narrow to about ±40 pp; always-valid ±62 → ±55 pp", with
    /// " (settled: its verdict is clear)" after the interval when it is.
    pub fn words(&self) -> String {
        use crate::basics::numfmt::signed_pp as pp;
        let pct = |x: f64| format!("{:.0}", x * 100.0);
        let settled = if self.settled() { " (settled: its verdict is clear)" } else { "" };
        let (now, verb) = match self.today {
            Some((d, i)) => (format!("now {} pp [{}, {}] at one look{settled}", pp(d), pp(i.lo), pp(i.hi)), "narrow"),
            None => ("not measured yet".to_owned(), "be measured"),
        };
        format!(
            "{now}, would {verb} to about ±{} pp; always-valid ±{} → ±{} pp",
            pct(self.after),
            pct(self.margin),
            pct(self.margin_after)
        )
    }

    /// The ranking score: open comparisons (not clear by the verdict)
    /// first, by their gain; settled ones after every open one. To nine
    /// decimals: margins equal but for rounding (a rate of 3 of 4 is as
    /// uncertain as 1 of 4) tie, and ties keep the matrix's order.
    pub fn rank(&self) -> f64 {
        let score = if self.settled() { self.gain() } else { 1.0 + self.gain() };
        (score * 1e9).round() / 1e9
    }
}

/// The expected effect of `k_level` more cells of `level` and `k_base` more
/// of `baseline` on the difference `level − baseline`.
pub fn narrowing(level: Counts, baseline: Counts, k_level: u64, k_base: u64) -> Option<Narrowing> {
    let (s1, n1) = level.plus(k_level);
    let (s2, n2) = baseline.plus(k_base);
    let (_, interval) = difference_counts(s1, n1, s2, n2, Z95)?;
    let (s1_now, n1_now, s2_now, n2_now) =
        (level.successes as f64, level.n as f64, baseline.successes as f64, baseline.n as f64);
    let today = difference_counts(s1_now, n1_now, s2_now, n2_now, Z95);
    let half = |i: Interval| (i.hi - i.lo) / 2.0;
    let margin =
        if today.is_some() { half(difference_interval((s1_now, n1_now), (s2_now, n2_now), ALPHA)) } else { 1.0 };
    let margin_after = half(difference_interval((s1, n1), (s2, n2), ALPHA));
    Some(Narrowing { today, after: half(interval), interval, margin, margin_after, clear: false })
}

/// The comparison that `k` more trials of `levels[at]` would narrow most,
/// among a task's levels (`levels[0]` is the baseline): a level after the
/// first feeds its own difference to the baseline; the baseline feeds every
/// difference, and the one it would narrow most (by [`Narrowing::rank`]) is
/// chosen. `clear` is each level's verdict against the baseline (by index;
/// the baseline's own entry unused). The index of the level compared with
/// the baseline, and the narrowing; none without an interval to narrow.
pub fn best_comparison(levels: &[Counts], clear: &[bool], at: usize, k: u64) -> Option<(usize, Narrowing)> {
    let base = *levels.first()?;
    let clear_at = |j: usize| clear.get(j).copied().unwrap_or(false);
    if at > 0 {
        return narrowing(*levels.get(at)?, base, k, 0).map(|n| (at, Narrowing { clear: clear_at(at), ..n }));
    }
    let mut best: Option<(usize, Narrowing)> = None;
    for (j, level) in levels.iter().enumerate().skip(1) {
        if let Some(n) = narrowing(*level, base, 0, k).map(|n| Narrowing { clear: clear_at(j), ..n }) {
            if best.as_ref().is_none_or(|(_, b)| n.rank() > b.rank()) {
                best = Some((j, n));
            }
        }
    }
    best
}

/// The standard normal quantile: the `z` with Φ(z) = `p`, for 0 < p < 1
/// (Acklam's rational approximation, relative error below 1.2·10⁻⁹).
pub fn normal_quantile(p: f64) -> Option<f64> {
    if !(p > 0.0 && p < 1.0) {
        return None;
    }
    const A: [f64; 6] = [
        -3.969_683_028_665_376e1,
        2.209_460_984_245_205e2,
        -2.759_285_104_469_687e2,
        1.383_577_518_672_69e2,
        -3.066_479_806_614_716e1,
        2.506_628_277_459_239,
    ];
    const B: [f64; 5] = [
        -5.447_609_879_822_406e1,
        1.615_858_368_580_409e2,
        -1.556_989_798_598_866e2,
        6.680_131_188_771_972e1,
        -1.328_068_155_288_572e1,
    ];
    const C: [f64; 6] = [
        -7.784_894_002_430_293e-3,
        -3.223_964_580_411_365e-1,
        -2.400_758_277_161_838,
        -2.549_732_539_343_734,
        4.374_664_141_464_968,
        2.938_163_982_698_783,
    ];
    const D: [f64; 4] =
        [7.784_695_709_041_462e-3, 3.224_671_290_700_398e-1, 2.445_134_137_142_996, 3.754_408_661_907_416];
    let tail = |q: f64| {
        (((((C[0] * q + C[1]) * q + C[2]) * q + C[3]) * q + C[4]) * q + C[5])
            / ((((D[0] * q + D[1]) * q + D[2]) * q + D[3]) * q + 1.0)
    };
    const LOW: f64 = 0.02425;
    Some(if p < LOW {
        tail((-2.0 * p.ln()).sqrt())
    } else if p > 1.0 - LOW {
        -tail((-2.0 * (1.0 - p).ln()).sqrt())
    } else {
        let q = p - 0.5;
        let r = q * q;
        (((((A[0] * r + A[1]) * r + A[2]) * r + A[3]) * r + A[4]) * r + A[5]) * q
            / (((((B[0] * r + B[1]) * r + B[2]) * r + B[3]) * r + B[4]) * r + 1.0)
    })
}

/// Cells per group to tell `p1` from `p2` at `confidence` (two-sided, e.g.
/// 0.95) with `power` (e.g. 0.8): the formula in the module's doc. None when
/// the rates are equal or a figure is outside (0, 1).
pub fn cells_needed(p1: f64, p2: f64, confidence: f64, power: f64) -> Option<u64> {
    let in_unit = |x: f64| x > 0.0 && x < 1.0;
    if !(in_unit(p1) || p1 == 0.0 || p1 == 1.0) || !(in_unit(p2) || p2 == 0.0 || p2 == 1.0) || p1 == p2 {
        return None;
    }
    let z_a = normal_quantile(1.0 - (1.0 - confidence) / 2.0)?;
    let z_b = normal_quantile(power)?;
    let pbar = (p1 + p2) / 2.0;
    let root = z_a * (2.0 * pbar * (1.0 - pbar)).sqrt() + z_b * (p1 * (1.0 - p1) + p2 * (1.0 - p2)).sqrt();
    let n = root * root / ((p1 - p2) * (p1 - p2));
    // A hair below a whole number is that number (floating point), not the next.
    Some((n - 1e-9).ceil().max(1.0) as u64)
}

/// Simulated campaigns behind [`cells_to_settle`]: its figure's 80th
/// percentile moves by about ±4 % between seeds at this many.
const SETTLE_CAMPAIGNS: u64 = 400;

/// The most cells per group [`cells_to_settle`] looks at (it gives up at
/// once when one fixed look needs more than a third of it).
const SETTLE_MOST: u64 = 6_000;

/// Cells per group by which the verdict — the unpaired always-valid test at
/// α = 0.05, read after every cell — settles a true difference of `p1`
/// against `p2` the right way in `power` of campaigns: the test itself run
/// on 400 simulated campaigns whose cells pass at those rates, one cell of
/// each group at a time (seeded: the same figure every time). None when the
/// rates are equal, outside [0, 1], or it needs more than 6,000.
pub fn cells_to_settle(p1: f64, p2: f64, power: f64) -> Option<u64> {
    let ok = |x: f64| (0.0..=1.0).contains(&x);
    if !ok(p1) || !ok(p2) || p1 == p2 || !(0.0..1.0).contains(&power) {
        return None;
    }
    if cells_needed(p1, p2, 1.0 - ALPHA, power)? * 3 > SETTLE_MOST {
        return None;
    }
    // SplitMix64, seeded: the same campaigns every call.
    let mut rng = 0x5eed_u64;
    let mut draw = |p: f64| {
        rng = rng.wrapping_add(crate::basics::hash::GOLDEN_GAMMA);
        ((crate::basics::hash::mix64(rng) >> 11) as f64 / (1u64 << 53) as f64) < p
    };
    let mut settled_at: Vec<u64> = (0..SETTLE_CAMPAIGNS)
        .map(|_| {
            let mut test = TwoProportions::default();
            let (mut wins, mut n) = (0i64, 0u64);
            while n < SETTLE_MOST {
                n += 1;
                let (a, b) = (draw(p1), draw(p2));
                wins += i64::from(a) - i64::from(b);
                test.observe(Side::Level, u64::from(a), 1);
                test.observe(Side::Baseline, u64::from(b), 1);
                if test.now().p_value <= ALPHA {
                    // Settled the right way, or (rarely) the wrong one.
                    return if (wins > 0) == (p1 > p2) { n } else { u64::MAX };
                }
            }
            u64::MAX
        })
        .collect();
    settled_at.sort_unstable();
    let at = settled_at[((SETTLE_CAMPAIGNS as f64 * power).ceil() as usize).saturating_sub(1)];
    (at != u64::MAX).then_some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The verdict's own figure, beside the fixed look's: 0.5 against 0.7
    /// needs 93 a group for one look; the always-valid test, read after
    /// every cell, settles 80 % of such campaigns by about 1.4–1.8× that
    /// (the verdicts bench measures 1.53× for this test at 10 cells a
    /// batch). Seeded: the same figure every call.
    #[test]
    fn cells_to_settle_runs_the_verdicts_test_and_needs_more_than_one_look() {
        let fixed = cells_needed(0.7, 0.5, 0.95, 0.8).unwrap();
        let seq = cells_to_settle(0.7, 0.5, 0.8).unwrap();
        let ratio = seq as f64 / fixed as f64;
        assert!((1.3..=2.0).contains(&ratio), "{seq} against {fixed}: {ratio:.2}×");
        assert_eq!(cells_to_settle(0.7, 0.5, 0.8), Some(seq));
        // A larger difference settles sooner; a tiny one not by 6,000.
        assert!(cells_to_settle(0.9, 0.5, 0.8).unwrap() < seq);
        assert_eq!(cells_to_settle(0.501, 0.5, 0.8), None);
        assert_eq!(cells_to_settle(0.5, 0.5, 0.8), None);
        assert_eq!(cells_to_settle(1.2, 0.5, 0.8), None);
    }
    use proptest::prelude::*;

    fn c(successes: u64, n: u64) -> Counts {
        Counts { successes, n }
    }

    /// Worked by hand. Wilson, 3 of 10, z = 1.96: centre (0.3 + 1.9208/10)
    /// / 1.38415 = 0.35550, half 1.41603 · √(0.021 + 0.0096037) = 0.24772:
    /// [0.1078, 0.6032]; 6 of 10: [0.3127, 0.8318]. Newcombe, 3/10 − 6/10 =
    /// −0.3: lo −0.3 − √(0.1922² + 0.2318²) = −0.6011, hi −0.3 +
    /// √(0.3032² + 0.2873²) = 0.1177 — half-width 0.3594, and it includes 0.
    /// Ten more of the level at 0.3 (6 of 20): Wilson [0.1455, 0.5190],
    /// lo −0.3 − √(0.1545² + 0.2318²) = −0.5786, hi −0.3 + √(0.2190² +
    /// 0.2873²) = 0.0613 — half-width 0.3199.
    #[test]
    fn ten_more_cells_narrow_a_comparison_as_worked_by_hand() {
        let n = narrowing(c(3, 10), c(6, 10), 10, 0).unwrap();
        let r4 = |x: f64| (x * 1e4).round() / 1e4;
        assert_eq!(r4(n.now().unwrap()), 0.3594);
        assert_eq!(r4(n.after), 0.3199);
        assert_eq!((r4(n.interval.lo), r4(n.interval.hi)), (-0.5786, 0.0613));
        assert!(!n.settled());
        // The always-valid margin (each rate's Beta(1, 1) mixture set at
        // 2.5 %, found by bisection in a separate Python script over
        // `lgamma`): 3 of 10 → [0.0285, 0.7624], 6 of 10 → [0.2376,
        // 0.9715]; the difference [−0.9082, +0.5943], margin 0.7512; after
        // ten more at 0.3 (6 of 20): [−0.8712, +0.4824], margin 0.6768.
        assert_eq!((r4(n.margin), r4(n.margin_after)), (0.7512, 0.6768));
        assert_eq!(r4(n.gain()), 0.0745);
        // Nothing observed of the level: it is expected at ½, and it gains
        // from the widest interval.
        let fresh = narrowing(c(0, 0), c(6, 10), 10, 0).unwrap();
        assert_eq!(fresh.now(), None);
        assert!(fresh.gain() > n.gain());
        assert_eq!(narrowing(c(0, 0), c(0, 0), 0, 0), None, "no trials on either side: no interval");
    }

    /// Published: Fleiss, Levin & Paik (2003), and the tables derived from
    /// the same formula — 93 per group for 0.5 against 0.7 and 199 for 0.1
    /// against 0.2 (α = 0.05 two-sided, power 0.8, no continuity correction);
    /// 0.5 against 0.7 at power 0.9: 124.
    #[test]
    fn cells_needed_match_the_published_values() {
        assert_eq!(cells_needed(0.5, 0.7, 0.95, 0.8), Some(93));
        assert_eq!(cells_needed(0.7, 0.5, 0.95, 0.8), Some(93), "symmetric");
        assert_eq!(cells_needed(0.1, 0.2, 0.95, 0.8), Some(199));
        assert_eq!(cells_needed(0.5, 0.7, 0.95, 0.9), Some(124));
        assert_eq!(cells_needed(0.5, 0.5, 0.95, 0.8), None, "equal rates are never told apart");
        assert_eq!(cells_needed(0.5, 1.2, 0.95, 0.8), None);
        let z = |p| normal_quantile(p).unwrap();
        assert!((z(0.975) - Z95).abs() < 1e-8 && (z(0.8) - 0.841_621_233_6).abs() < 1e-8);
        assert!((z(0.01) + 2.326_347_874).abs() < 1e-8 && normal_quantile(1.0).is_none());
    }

    #[test]
    fn the_baseline_narrows_the_comparison_it_helps_most() {
        // Baseline 6/10; level 1 at 3/10 (open), level 2 at 10/10 (settled:
        // its verdict, given, is clear) — though level 2's interval would
        // narrow more.
        let levels = [c(6, 10), c(3, 10), c(10, 10)];
        let clear = [false, false, true];
        let (j, n) = best_comparison(&levels, &clear, 0, 10).unwrap();
        assert_eq!(j, 1, "the open comparison first");
        assert_eq!(Some(n), narrowing(c(3, 10), c(6, 10), 0, 10));
        let (j, n) = best_comparison(&levels, &clear, 2, 5).unwrap();
        let settled = narrowing(c(10, 10), c(6, 10), 5, 0).map(|n| Narrowing { clear: true, ..n });
        assert_eq!((j, Some(n)), (2, settled));
        assert!(n.settled());
        assert_eq!(best_comparison(&levels[..1], &clear, 0, 10), None, "a baseline alone has nothing to compare");
        assert_eq!(best_comparison(&[], &[], 0, 10), None);
    }

    proptest! {
        /// More cells never widen the expected interval, at one look or always-valid.
        #[test]
        fn more_cells_never_widen_an_interval(s1 in 0u64..60, extra1 in 0u64..60, s2 in 0u64..60, extra2 in 0u64..60, k in 0u64..200) {
            let (a, b) = (c(s1, s1 + extra1), c(s2, s2 + extra2));
            if let (Some(x), Some(y)) = (narrowing(a, b, k, 0), narrowing(a, b, k + 1, 0)) {
                prop_assert!(y.after <= x.after + 1e-12, "{x:?} then {y:?}");
                prop_assert!(y.margin_after <= x.margin_after + 1e-9, "{x:?} then {y:?}");
                if let Some(now) = x.now() {
                    prop_assert!(x.after <= now + 1e-12);
                }
                prop_assert!(x.margin_after <= x.margin + 1e-9, "{x:?}");
            }
        }

        /// A settled comparison ranks below any open one.
        #[test]
        fn a_settled_comparison_ranks_below_an_open_one(
            s1 in 0u64..40, f1 in 1u64..40, s2 in 0u64..40, f2 in 1u64..40,
            t1 in 0u64..40, g1 in 1u64..40, t2 in 0u64..40, g2 in 1u64..40, k in 1u64..50,
        ) {
            let x = narrowing(c(s1, s1 + f1), c(s2, s2 + f2), k, 0).unwrap();
            let y = narrowing(c(t1, t1 + g1), c(t2, t2 + g2), k, 0).unwrap();
            // Verdicts as the caller gives them (here: where the counts differ by half).
            let x = Narrowing { clear: (s1 as f64 / (s1 + f1) as f64 - s2 as f64 / (s2 + f2) as f64).abs() > 0.5, ..x };
            let y = Narrowing { clear: (t1 as f64 / (t1 + g1) as f64 - t2 as f64 / (t2 + g2) as f64).abs() > 0.5, ..y };
            if x.settled() != y.settled() {
                let (settled, open) = if x.settled() { (x, y) } else { (y, x) };
                prop_assert!(open.rank() > settled.rank());
            }
        }
    }
}
