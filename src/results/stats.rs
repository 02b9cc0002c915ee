//! The statistics the results views show: a proportion's 95 % Wilson score
//! interval, and the difference of two independent proportions with
//! Newcombe's hybrid score interval (his method 10), which keeps within
//! [-1, 1] and behaves at 0 and n where the Wald interval does not.

use serde::{Deserialize, Serialize};

/// The standard normal quantile for a two-sided 95 % interval.
pub const Z95: f64 = 1.959_963_984_540_054;

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Interval {
    pub lo: f64,
    pub hi: f64,
}

/// A proportion: `successes` of `n`, its estimate and 95 % Wilson interval.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Proportion {
    pub successes: u64,
    pub n: u64,
    /// `successes / n` (none when `n` is 0).
    pub rate: Option<f64>,
    pub ci95: Option<Interval>,
}

impl Proportion {
    pub fn new(successes: u64, n: u64) -> Self {
        let rate = (n > 0).then(|| successes as f64 / n as f64);
        Self { successes, n, rate, ci95: wilson(successes, n, Z95) }
    }
}

/// The Wilson score interval for `successes` of `n` (none when `n` is 0).
pub fn wilson(successes: u64, n: u64, z: f64) -> Option<Interval> {
    wilson_counts(successes as f64, n as f64, z)
}

/// [`wilson`] over counts that may be fractional (expected successes: the
/// proposal guide's projections); none unless `0 ≤ successes ≤ n` and `n > 0`.
pub fn wilson_counts(successes: f64, n: f64, z: f64) -> Option<Interval> {
    if !(n > 0.0 && (0.0..=n).contains(&successes)) {
        return None;
    }
    let p = successes / n;
    let z2 = z * z;
    let denom = 1.0 + z2 / n;
    let centre = (p + z2 / (2.0 * n)) / denom;
    let half = z / denom * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt();
    Some(Interval { lo: (centre - half).max(0.0), hi: (centre + half).min(1.0) })
}

/// The difference `p1 - p2` of two independent proportions and its
/// Newcombe hybrid score interval (none when either `n` is 0).
pub fn difference(s1: u64, n1: u64, s2: u64, n2: u64, z: f64) -> Option<(f64, Interval)> {
    difference_counts(s1 as f64, n1 as f64, s2 as f64, n2 as f64, z)
}

/// [`difference`] over counts that may be fractional.
pub fn difference_counts(s1: f64, n1: f64, s2: f64, n2: f64, z: f64) -> Option<(f64, Interval)> {
    let (a, b) = (wilson_counts(s1, n1, z)?, wilson_counts(s2, n2, z)?);
    let (p1, p2) = (s1 / n1, s2 / n2);
    let d = p1 - p2;
    let lo = d - ((p1 - a.lo).powi(2) + (b.hi - p2).powi(2)).sqrt();
    let hi = d + ((a.hi - p1).powi(2) + (p2 - b.lo).powi(2)).sqrt();
    Some((d, Interval { lo: lo.max(-1.0), hi: hi.min(1.0) }))
}

/// A paired 2×2 table: over `n` pairs, both passed (`a`), only the first
/// passed (`b`), only the second (`c`), neither (`d`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PairTable {
    pub a: u64,
    pub b: u64,
    pub c: u64,
    pub d: u64,
}

impl PairTable {
    pub fn n(&self) -> u64 {
        self.a + self.b + self.c + self.d
    }
}

/// The paired difference `p₁ − p₂ = (b − c)/n` with Newcombe's score-based
/// interval for paired data (Newcombe 1998, *Improved confidence intervals
/// for the difference between binomial proportions based on paired data*,
/// Statistics in Medicine 17:2635–2650, method 10): the Wilson intervals
/// (l₁, u₁) of p₁ = (a + b)/n and (l₂, u₂) of p₂ = (a + c)/n, combined with
/// the correlation φ of the pairs:
///
/// ```text
/// lo = D − √((p₁ − l₁)² − 2φ(p₁ − l₁)(u₂ − p₂) + (u₂ − p₂)²)
/// hi = D + √((u₁ − p₁)² − 2φ(u₁ − p₁)(p₂ − l₂) + (p₂ − l₂)²)
/// φ  = C / √((a+b)(c+d)(a+c)(b+d)),  C = ad − bc − n/2 when ad − bc > n/2,
///      ad − bc when it is negative, else 0 (φ = 0 when a margin is empty)
/// ```
///
/// None without a pair.
pub fn paired_difference(t: PairTable, z: f64) -> Option<(f64, Interval)> {
    let n = t.n();
    let (l1u1, l2u2) = (wilson(t.a + t.b, n, z)?, wilson(t.a + t.c, n, z)?);
    let nf = n as f64;
    let (p1, p2) = ((t.a + t.b) as f64 / nf, (t.a + t.c) as f64 / nf);
    let d = (t.b as f64 - t.c as f64) / nf;
    let margins = ((t.a + t.b) * (t.c + t.d) * (t.a + t.c) * (t.b + t.d)) as f64;
    let cross = t.a as f64 * t.d as f64 - t.b as f64 * t.c as f64;
    let c = if cross > nf / 2.0 {
        cross - nf / 2.0
    } else if cross < 0.0 {
        cross
    } else {
        0.0
    };
    let phi = if margins > 0.0 { c / margins.sqrt() } else { 0.0 };
    let (dl1, du1) = (p1 - l1u1.lo, l1u1.hi - p1);
    let (dl2, du2) = (p2 - l2u2.lo, l2u2.hi - p2);
    let lo = d - (dl1 * dl1 - 2.0 * phi * dl1 * du2 + du2 * du2).max(0.0).sqrt();
    let hi = d + (du1 * du1 - 2.0 * phi * du1 * dl2 + dl2 * dl2).max(0.0).sqrt();
    Some((d, Interval { lo: lo.max(-1.0), hi: hi.min(1.0) }))
}

/// The `q` quantile of `xs` (linear between the two nearest ranks, as
/// numpy's default), ignoring values that are not finite.
pub fn quantile(xs: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let at = q.clamp(0.0, 1.0) * (v.len() - 1) as f64;
    let (lo, hi) = (at.floor() as usize, at.ceil() as usize);
    Some(v[lo] + (v[hi] - v[lo]) * (at - lo as f64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_linear_between_ranks_and_skip_what_is_not_finite() {
        assert_eq!(quantile(&[3.0, 1.0, 2.0, f64::NAN], 0.5), Some(2.0));
        assert_eq!(quantile(&[1.0, 2.0, 3.0, 4.0], 0.25), Some(1.75), "numpy: np.quantile([1,2,3,4], .25)");
        assert_eq!(quantile(&[], 0.5), None);
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 0.00005 + 1e-12
    }

    /// Newcombe (1998), "Two-sided confidence intervals for the single
    /// proportion", Statistics in Medicine 17:857–872, Table II, method 3
    /// (the Wilson score interval without continuity correction).
    #[test]
    fn wilson_intervals_match_the_published_table() {
        for (s, n, lo, hi) in
            [(81, 263, 0.2553, 0.3662), (15, 148, 0.0624, 0.1605), (0, 20, 0.0, 0.1611), (1, 29, 0.0061, 0.1718)]
        {
            let i = wilson(s, n, Z95).unwrap();
            assert!(close((i.lo * 1e4).round() / 1e4, lo) && close((i.hi * 1e4).round() / 1e4, hi), "{s}/{n}: {i:?}");
        }
        assert_eq!(wilson(0, 0, Z95), None);
    }

    /// Newcombe (1998), "Interval estimation for the difference between
    /// independent proportions", Statistics in Medicine 17:873–890, Table II,
    /// method 10 (the hybrid score interval).
    #[test]
    fn differences_match_the_published_table() {
        for (s1, n1, s2, n2, lo, hi) in [
            (56, 70, 48, 80, 0.0524, 0.3339),
            (9, 10, 3, 10, 0.1705, 0.8090),
            (6, 7, 2, 7, 0.0582, 0.8062),
            (5, 56, 0, 29, -0.0381, 0.1926),
            (0, 10, 0, 20, -0.1611, 0.2775),
            (0, 10, 0, 10, -0.2775, 0.2775),
            (10, 10, 0, 20, 0.6791, 1.0),
            (10, 10, 0, 10, 0.6075, 1.0),
        ] {
            let (_, i) = difference(s1, n1, s2, n2, Z95).unwrap();
            let r = |x: f64| (x * 1e4).round() / 1e4;
            assert!(close(r(i.lo), lo) && close(r(i.hi), hi), "{s1}/{n1} - {s2}/{n2}: {i:?}");
        }
    }

    /// Paired data, worked by hand (each line's figures also computed apart
    /// from this code). Altman et al. (2000), *Statistics with Confidence*,
    /// Table 6.2 (a = 14, b = 5, c = 0, d = 22; n = 41): p₁ = 19/41 with
    /// Wilson [0.3206, 0.6125], p₂ = 14/41 with [0.2156, 0.4945]; ad − bc =
    /// 308 > n/2, so C = 287.5 and φ = 287.5/√(19·22·14·27) = 0.7233; D =
    /// 0.1220, lo = 0.1220 − √(0.1428² − 2·0.7233·0.1428·0.1530 + 0.1530²) =
    /// 0.0115, hi = 0.2265. StatsDirect's McNemar example (a = 20, b = 12,
    /// c = 2, d = 16): D = 0.2 [0.0562, 0.3292].
    #[test]
    fn the_paired_interval_as_worked_by_hand() {
        let r = |x: f64| (x * 1e4).round() / 1e4;
        for (t, d, lo, hi) in [
            (PairTable { a: 14, b: 5, c: 0, d: 22 }, 0.122, 0.0115, 0.2265),
            (PairTable { a: 20, b: 12, c: 2, d: 16 }, 0.2, 0.0562, 0.3292),
            // No discordant pair: centred on 0.
            (PairTable { a: 3, b: 0, c: 0, d: 3 }, 0.0, -0.2551, 0.2551),
            // φ = −1 (every pair discordant).
            (PairTable { a: 0, b: 4, c: 1, d: 0 }, 0.6, -0.2489, 0.9276),
        ] {
            let (got, i) = paired_difference(t, Z95).unwrap();
            assert!(close(r(got), d) && close(r(i.lo), lo) && close(r(i.hi), hi), "{t:?}: {got} {i:?}");
        }
        assert_eq!(paired_difference(PairTable::default(), Z95), None);
    }
}
