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

#[cfg(test)]
mod tests {
    use super::*;

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
}
