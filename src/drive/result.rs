//! A cell's own report, `{out}/result.json`: the part of the cell contract a
//! harness writes (docs/formats.md, *The cell contract*; schema
//! `docs/schemas/cell-result.schema.json`). The driver reads it once the cell
//! has ended and copies what it says into the cell's record.
//!
//! Every field is optional, and a field of the wrong shape is left out with a
//! problem named (never a guess): a half-broken report still gives what it
//! can, and no content makes the reader fail.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How many of a cell's samples passed: a cell that ran several (an Inspect
/// eval of a task's dataset, say). Evidence counts these instead of the cell
/// when `[results] count = "samples"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Samples {
    pub passed: u64,
    pub total: u64,
}

/// What `result.json` reported, each field only when it was there and fit
/// (and what an adapter writes: the fields it has, no nulls).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CellResult {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub score: Option<f64>,
    /// The cell's own verdict; wins over `[results] pass_score` for a `done` cell.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub samples: Option<Samples>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    /// In the campaign's currency.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Why the cell failed, in its own words (cut to [`REASON_MAX`] bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The report's name in the cell's folder.
pub const RESULT_FILE: &str = "result.json";

/// A cell's live samples report (`{out}/samples.json`), which a cell may
/// replace while it runs: `runboard cell inspect` writes it from Inspect's
/// hooks at each sample's end and every 10 s.
pub const SAMPLES_FILE: &str = "samples.json";

/// What a running cell said of its samples so far.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct SamplesSoFar {
    pub finished: u64,
    /// None: not known yet.
    pub total: Option<u64>,
    /// The mean score of the finished samples that were scored (0–1 for a
    /// pass/fail score).
    pub score: Option<f64>,
}

impl SamplesSoFar {
    /// Reads a report field by field; none when it holds no `finished`
    /// count (half-written, or not one).
    pub fn parse(bytes: &[u8]) -> Option<Self> {
        let v: serde_json::Value = serde_json::from_slice(bytes).ok()?;
        let finished = v.get("finished")?.as_u64()?;
        let total = v.get("total").and_then(serde_json::Value::as_u64).filter(|t| *t >= finished);
        let score = v.get("score").and_then(serde_json::Value::as_f64).filter(|s| s.is_finite());
        Some(Self { finished, total, score })
    }

    /// "37 of 120 samples, 62 % so far" (a score outside 0–1 as it is).
    pub fn words(&self) -> String {
        let of = match self.total {
            Some(t) => {
                format!(
                    "{} of {} samples",
                    crate::basics::numfmt::thousands(self.finished),
                    crate::basics::numfmt::thousands(t)
                )
            }
            None => crate::basics::numfmt::count(self.finished, "sample"),
        };
        match self.score {
            Some(s) if (0.0..=1.0).contains(&s) => format!("{of}, {:.0} % so far", s * 100.0),
            Some(s) => format!("{of}, score {s:.2} so far"),
            None => of,
        }
    }
}

/// The longest reason kept from a report (a traceback is not a reason).
pub const REASON_MAX: usize = 300;

impl CellResult {
    /// Reads a report leniently: what fits is kept, each field that does not
    /// is named in the problems. Not a JSON object: nothing kept, one problem.
    pub fn parse(bytes: &[u8]) -> (Self, Vec<String>) {
        let mut problems = Vec::new();
        let v = match crate::basics::json::from_slice_lenient::<Value>(bytes) {
            Ok(Value::Object(m)) => m,
            Ok(_) => return (Self::default(), vec!["result.json: not a JSON object".into()]),
            Err(e) => return (Self::default(), vec![format!("result.json: {e}")]),
        };
        let mut field = |name: &str, ok: fn(&Value) -> bool, want: &str| -> Option<Value> {
            let x = v.get(name).filter(|x| !x.is_null())?;
            if ok(x) {
                Some(x.clone())
            } else {
                problems.push(format!(
                    "result.json: {name}: must be {want}, not {}",
                    crate::console::spec::shorten(&x.to_string())
                ));
                None
            }
        };
        fn count(x: &Value) -> bool {
            x.as_u64().is_some()
        }
        fn number(x: &Value) -> bool {
            x.as_f64().is_some_and(f64::is_finite)
        }
        fn money(x: &Value) -> bool {
            number(x) && x.as_f64().is_some_and(|c| c >= 0.0)
        }
        let samples = field(
            "samples",
            |x| {
                let (p, t) = (x.get("passed").and_then(Value::as_u64), x.get("total").and_then(Value::as_u64));
                matches!((p, t), (Some(p), Some(t)) if p <= t && t > 0)
            },
            "{\"passed\": n, \"total\": m} with 0 <= n <= m and m > 0",
        )
        .map(|x| Samples { passed: x["passed"].as_u64().unwrap_or(0), total: x["total"].as_u64().unwrap_or(0) });
        let r = Self {
            score: field("score", number, "a number").and_then(|x| x.as_f64()),
            passed: field("passed", Value::is_boolean, "true or false").and_then(|x| x.as_bool()),
            samples,
            tokens: field("tokens", count, "a whole number >= 0").and_then(|x| x.as_u64()),
            input_tokens: field("input_tokens", count, "a whole number >= 0").and_then(|x| x.as_u64()),
            output_tokens: field("output_tokens", count, "a whole number >= 0").and_then(|x| x.as_u64()),
            cost: field("cost", money, "a number >= 0").and_then(|x| x.as_f64()),
            reason: field("reason", Value::is_string, "a string")
                .and_then(|x| x.as_str().map(|s| cut(s.trim(), REASON_MAX)))
                .filter(|s| !s.is_empty()),
        };
        (r, problems)
    }
}

/// `s` cut to at most `max` bytes, the `…` that says so included, at a
/// character boundary.
fn cut(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max.saturating_sub('…'.len_utf8());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_live_samples_report_is_read_field_by_field_and_said_in_words() {
        let r = SamplesSoFar::parse(br#"{"finished": 37, "total": 120, "score": 0.6216, "at": 1}"#).unwrap();
        assert_eq!(r.words(), "37 of 120 samples, 62 % so far");
        let r = SamplesSoFar::parse(br#"{"finished": 1, "total": null, "score": null}"#).unwrap();
        assert_eq!(r.words(), "1 sample");
        assert_eq!(
            SamplesSoFar::parse(br#"{"finished": 5, "total": 3, "score": 4.5}"#).unwrap().words(),
            "5 samples, score 4.50 so far"
        );
        assert_eq!(SamplesSoFar::parse(br#"{"finished": "5"}"#), None);
        assert_eq!(SamplesSoFar::parse(br#"{"finished": 3, "tot"#), None);
    }

    #[test]
    fn a_full_report_is_read_field_by_field() {
        let (r, problems) = CellResult::parse(
            br#"{"score": 0.5, "passed": false, "samples": {"passed": 3, "total": 6}, "tokens": 138,
                "input_tokens": 120, "output_tokens": 18, "cost": 0.02, "reason": " 3 of 6 wrong "}"#,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            r,
            CellResult {
                score: Some(0.5),
                passed: Some(false),
                samples: Some(Samples { passed: 3, total: 6 }),
                tokens: Some(138),
                input_tokens: Some(120),
                output_tokens: Some(18),
                cost: Some(0.02),
                reason: Some("3 of 6 wrong".into()),
            }
        );
    }

    #[test]
    fn a_field_that_does_not_fit_is_left_out_and_named() {
        let (r, problems) = CellResult::parse(
            br#"{"tokens": -3, "score": "high", "samples": {"passed": 7, "total": 6}, "cost": 1.5, "passed": 1}"#,
        );
        assert_eq!(r, CellResult { cost: Some(1.5), ..CellResult::default() });
        assert_eq!(problems.len(), 4, "{problems:?}");
        assert!(
            problems.iter().any(|p| p == "result.json: tokens: must be a whole number >= 0, not -3"),
            "{problems:?}"
        );
        assert!(problems.iter().any(|p| p.starts_with("result.json: samples: must be {\"passed\"")), "{problems:?}");
    }

    #[test]
    fn broken_content_keeps_nothing_and_says_why() {
        for bytes in [&b"{\"tokens\": 1"[..], b"[1, 2]", b"\xff\xfe", b""] {
            let (r, problems) = CellResult::parse(bytes);
            assert_eq!(r, CellResult::default());
            assert_eq!(problems.len(), 1, "{:?}", String::from_utf8_lossy(bytes));
        }
        // A long reason is cut at a character boundary.
        let long = format!("{{\"reason\": \"{}\"}}", "é".repeat(400));
        let (r, _) = CellResult::parse(long.as_bytes());
        let reason = r.reason.unwrap();
        // Issue 40 (item 18): at most 300 bytes, the ellipsis included.
        assert!(
            reason.len() <= REASON_MAX && reason.len() > REASON_MAX - 4 && reason.ends_with('…'),
            "{}",
            reason.len()
        );
    }
}
