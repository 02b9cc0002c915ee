//! The scope: which cells a results view looks at — one filter shared by the
//! evidence, timing and report views, written in the URL as `?scope=` and in
//! the CLI as `--scope`.
//!
//! It is text a person can type: terms separated by spaces, each
//! `key=value[,value…]`.
//!
//! - a factor of the matrix, or `model` (the run set's model): the cell's value
//!   is one of those listed (`task=t1,t2`);
//! - `tag`: the cell's run set carries one of these run tags;
//! - `from`, `to`: `YYYY-MM-DD` (UTC, both inclusive) — the day the cell ended
//!   (for a run set: the day it started).
//!
//! Values of one key are alternatives; different keys must all hold. A key
//! given twice adds its values. Matching is on the value's text (`seed=1`
//! matches the number 1 and the string "1"). An empty scope is everything.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::Date;

use crate::console::matrix::value_text;

/// Keys the scope gives its own meaning (a factor of the same name can only
/// be reached through its other levels… so campaigns should avoid them).
pub const RESERVED: [&str; 4] = ["tag", "from", "to", "model"];

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Scope {
    /// Factor (or `model`) → the values allowed.
    pub factors: BTreeMap<String, Vec<String>>,
    pub tags: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

/// Why a scope text was refused: every problem, in words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScopeError(pub Vec<String>);

impl fmt::Display for ScopeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0.join("; "))
    }
}

fn parse_day(s: &str) -> Option<Date> {
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    Date::parse(s, &fmt).ok()
}

impl Scope {
    /// Reads a scope written as text; `factors` are the matrix's factor names.
    pub fn parse(text: &str, factors: &[String]) -> Result<Scope, ScopeError> {
        let mut scope = Scope::default();
        let mut problems = Vec::new();
        for term in text.split_whitespace() {
            let Some((key, values)) = term.split_once('=') else {
                problems.push(format!("`{}`: not key=value", cut(term)));
                continue;
            };
            let values: Vec<String> =
                values.split(',').map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned).collect();
            if values.is_empty() {
                problems.push(format!("`{}`: no value", cut(term)));
                continue;
            }
            match key {
                "tag" => scope.tags.extend(values),
                "from" | "to" => {
                    if values.len() > 1 {
                        problems.push(format!("`{}`: one date only", cut(term)));
                    } else if parse_day(&values[0]).is_none() {
                        problems.push(format!("`{}`: not a date (YYYY-MM-DD)", cut(term)));
                    } else if key == "from" {
                        scope.from = Some(values[0].clone());
                    } else {
                        scope.to = Some(values[0].clone());
                    }
                }
                k if k == "model" || factors.iter().any(|f| f == k) => {
                    scope.factors.entry(k.to_owned()).or_default().extend(values)
                }
                k => problems.push(format!(
                    "`{}`: {} is not a factor of the matrix (factors: {}), nor tag, from, to or model",
                    cut(term),
                    cut(k),
                    if factors.is_empty() { "none yet".to_owned() } else { factors.join(", ") }
                )),
            }
        }
        if let (Some(a), Some(b)) = (&scope.from, &scope.to) {
            if a > b {
                problems.push(format!("from={a} is after to={b}"));
            }
        }
        for v in scope.factors.values_mut().chain([&mut scope.tags]) {
            v.sort();
            v.dedup();
        }
        if problems.is_empty() {
            Ok(scope)
        } else {
            Err(ScopeError(problems))
        }
    }

    pub fn is_empty(&self) -> bool {
        self.factors.is_empty() && self.tags.is_empty() && self.from.is_none() && self.to.is_none()
    }

    /// The scope as text, in a canonical order (what the URL carries).
    pub fn text(&self) -> String {
        // `model` first, then the factors in name order (as documented).
        let (model, factors): (Vec<_>, Vec<_>) = self.factors.iter().partition(|(k, _)| *k == "model");
        let mut terms: Vec<String> =
            model.into_iter().chain(factors).map(|(k, v)| format!("{k}={}", v.join(","))).collect();
        if !self.tags.is_empty() {
            terms.push(format!("tag={}", self.tags.join(",")));
        }
        terms.extend(self.from.iter().map(|d| format!("from={d}")));
        terms.extend(self.to.iter().map(|d| format!("to={d}")));
        terms.join(" ")
    }

    /// Whether a cell's factors (and its run set's model) are in scope.
    pub fn factors_match(&self, factors: &BTreeMap<String, Value>, model: Option<&str>) -> bool {
        self.factors.iter().all(|(k, allowed)| {
            let v = if k == "model" && !factors.contains_key("model") {
                model.map(str::to_owned)
            } else {
                factors.get(k).map(value_text)
            };
            v.is_some_and(|v| allowed.contains(&v))
        })
    }

    /// Whether a cell's record is in scope: its factors (and its run set's
    /// model) match, and it ended (not yet ended: started) within the dates.
    pub fn cell_matches(&self, c: &crate::drive::records::CellRecord, model: Option<&str>) -> bool {
        self.factors_match(&c.factors, model) && self.day_matches(c.ended_at.as_deref().or(c.started_at.as_deref()))
    }

    /// Whether a run set carrying these tags is in scope.
    pub fn tags_match(&self, run_set_tags: &[String]) -> bool {
        self.tags.is_empty() || self.tags.iter().any(|t| run_set_tags.contains(t))
    }

    /// Whether a moment (an RFC 3339 timestamp) falls within the dates. A
    /// moment not known is out of scope when there are dates.
    pub fn day_matches(&self, at: Option<&str>) -> bool {
        if self.from.is_none() && self.to.is_none() {
            return true;
        }
        let Some(day) = at.and_then(|a| a.get(..10)) else { return false };
        self.from.as_deref().is_none_or(|f| day >= f) && self.to.as_deref().is_none_or(|t| day <= t)
    }
}

fn cut(s: &str) -> &str {
    match s.char_indices().nth(80) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn factors() -> Vec<String> {
        vec!["task".into(), "seed".into(), "condition".into()]
    }

    #[test]
    fn a_scope_reads_factors_tags_and_dates_and_writes_itself_back() {
        let s =
            Scope::parse("task=t2,t1  tag=nightly from=2026-11-01 to=2026-11-30 task=t1 model=m1", &factors()).unwrap();
        assert_eq!(s.factors["task"], vec!["t1", "t2"]);
        assert_eq!(s.tags, vec!["nightly"]);
        assert_eq!(s.text(), "model=m1 task=t1,t2 tag=nightly from=2026-11-01 to=2026-11-30");
        assert_eq!(Scope::parse(&s.text(), &factors()).unwrap(), s);
        assert!(Scope::parse("  ", &factors()).unwrap().is_empty());
        // `model` first even where a factor sorts before it.
        let s = Scope::parse("seed=2 condition=base model=m1", &factors()).unwrap();
        assert_eq!(s.text(), "model=m1 condition=base seed=2");
    }

    #[test]
    fn every_problem_is_named() {
        let e = Scope::parse("task lang=py from=2026-13-01 to=x,y seed=", &factors()).unwrap_err();
        assert_eq!(e.0.len(), 5, "{e}");
        assert!(e.0[0].contains("`task`: not key=value"));
        assert!(e.0[1].contains("lang is not a factor of the matrix (factors: task, seed, condition)"));
        assert!(e.0[2].contains("not a date"));
        assert!(e.0[3].contains("one date only"));
        assert!(e.0[4].contains("no value"));
        let e = Scope::parse("from=2026-12-01 to=2026-11-01", &factors()).unwrap_err();
        assert_eq!(e.0, vec!["from=2026-12-01 is after to=2026-11-01".to_string()]);
    }

    #[test]
    fn matching_is_on_the_values_text_and_all_keys_must_hold() {
        let s = Scope::parse("seed=1 model=m1", &factors()).unwrap();
        let f: BTreeMap<String, Value> = [("seed".to_string(), json!(1)), ("task".into(), json!("t1"))].into();
        assert!(s.factors_match(&f, Some("m1")));
        assert!(!s.factors_match(&f, Some("m2")));
        assert!(!s.factors_match(&f, None));
        let f2: BTreeMap<String, Value> = [("seed".to_string(), json!("1"))].into();
        assert!(s.factors_match(&f2, Some("m1")));
    }

    #[test]
    fn dates_are_inclusive_days_and_an_unknown_moment_is_out_when_dated() {
        let s = Scope::parse("from=2026-11-01 to=2026-11-30", &factors()).unwrap();
        assert!(s.day_matches(Some("2026-11-30T23:59:59Z")));
        assert!(s.day_matches(Some("2026-11-01T00:00:00Z")));
        assert!(!s.day_matches(Some("2026-12-01T00:00:00Z")));
        assert!(!s.day_matches(None));
        assert!(Scope::default().day_matches(None));
        let t = Scope::parse("tag=a,b", &factors()).unwrap();
        assert!(t.tags_match(&["b".into()]));
        assert!(!t.tags_match(&[]));
    }
}
