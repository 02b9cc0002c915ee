//! What a refusal says, read from its stage and its text once, by one set of
//! rules that the analysis (collisions) and the diagnosis both use.
//!
//! - **Code collision** — a `gate` refusal mentioning `rewrite`, `refinement of
//!   parameters` or `shared subtree`: the candidate's code collides with an
//!   existing factor.
//! - **Own repeat** — a `gate` refusal of a `duplicate of` the run's `own`
//!   earlier candidate: not a collision with a factor.
//! - **Ranking collision** — an `admission` refusal of a `correlation` `above`
//!   the limit.
//! - **Low coverage** — an `evaluator` refusal for `coverage`.
//! - Anything else is `Other`.

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RefusalKind {
    CodeCollision,
    OwnRepeat,
    RankingCollision,
    LowCoverage,
    Other,
}

/// Reads a refusal: `stage` is the stage that refused, `reason` its words.
pub fn classify(stage: Option<&str>, reason: &str) -> RefusalKind {
    let lower = reason.to_lowercase();
    let has = |w: &str| lower.contains(w);
    match stage {
        Some("gate") if has("duplicate of") && has("own") => RefusalKind::OwnRepeat,
        Some("gate") if ["rewrite", "refinement of parameters", "shared subtree"].iter().any(|k| has(k)) => {
            RefusalKind::CodeCollision
        }
        Some("admission") if has("correlation") && has("above") => RefusalKind::RankingCollision,
        Some("evaluator") if has("coverage") => RefusalKind::LowCoverage,
        _ => RefusalKind::Other,
    }
}

/// The kind of a trial's refusal; `Other` when it records none.
pub fn of_trial(t: &super::view::TrialView) -> RefusalKind {
    t.reason.as_deref().map_or(RefusalKind::Other, |r| classify(t.stage.as_deref(), r))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_reads_one_way() {
        let cases = [
            ("gate", "rewrite of factor f3", RefusalKind::CodeCollision),
            ("gate", "refinement of parameters of f1", RefusalKind::CodeCollision),
            ("gate", "shared subtree with factor_12", RefusalKind::CodeCollision),
            ("gate", "duplicate of own earlier candidate r02s1", RefusalKind::OwnRepeat),
            ("gate", "reply 'x' does not parse", RefusalKind::Other),
            ("admission", "correlation 0.91 with f2 above limit 0.70", RefusalKind::RankingCollision),
            ("admission", "t 1.0 below threshold 2.5", RefusalKind::Other),
            ("evaluator", "coverage 0.41 below 0.80", RefusalKind::LowCoverage),
            ("evaluator", "rewrite", RefusalKind::Other),
        ];
        for (stage, reason, want) in cases {
            assert_eq!(classify(Some(stage), reason), want, "{stage}: {reason}");
        }
        assert_eq!(classify(None, "rewrite of f1"), RefusalKind::Other);
    }
}
