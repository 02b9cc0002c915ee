//! Acceptance reports: `acceptance/<segment>[_<digest>].json`, what the
//! accepted factors did on a data segment. A report that records opens of the
//! hold-out (the hold-out lock's opens) is a hold-out report.
//!
//! Reports are read as written: a report written before the contribution table
//! or the selection flag existed reads with `None` for them — nothing it lacks is
//! made up.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::basics::json::{describe_error, from_slice_lenient};

/// One opening of the hold-out segment, as the hold-out lock recorded it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HoldoutOpen {
    pub at: Option<String>,
    pub by: Option<String>,
    pub reason: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReportFactor {
    pub factor: String,
    pub trial: Option<String>,
    pub ic: Option<f64>,
    pub t: Option<f64>,
    /// Whether the final selection kept it; `None` in a report older than the flag.
    pub selected: Option<bool>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Contribution {
    pub factor: String,
    pub share: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptanceReport {
    /// The file's name in `acceptance/`.
    pub file: String,
    pub segment: String,
    pub digest: Option<String>,
    pub written_at: Option<String>,
    /// Records opens of the hold-out: a hold-out report.
    pub holdout: bool,
    pub opens: Vec<HoldoutOpen>,
    pub factors: Vec<ReportFactor>,
    /// The contribution table; `None` in a report older than the table.
    pub contribution: Option<Vec<Contribution>>,
    /// Segment-level figures, as written (non-finite numbers as null).
    pub metrics: Value,
}

/// A report file, or the reason it cannot be read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ReportEntry {
    Report(AcceptanceReport),
    Unreadable { file: String, reason: String },
}

/// Splits `<segment>[_<digest>].json`: the digest is the part after the last
/// underscore when it is at least six hexadecimal digits, so a segment's own
/// underscores (`2024_h2`) stay in the segment.
pub fn parse_file_name(name: &str) -> Option<(String, Option<String>)> {
    let stem = name.strip_suffix(".json")?;
    if stem.is_empty() {
        return None;
    }
    match stem.rsplit_once('_') {
        Some((segment, digest))
            if !segment.is_empty() && digest.len() >= 6 && digest.chars().all(|c| c.is_ascii_hexdigit()) =>
        {
            Some((segment.to_owned(), Some(digest.to_owned())))
        }
        _ => Some((stem.to_owned(), None)),
    }
}

fn text(v: &Value) -> Option<String> {
    v.as_str().map(str::to_owned)
}

fn number(v: &Value) -> Option<f64> {
    v.as_f64().filter(|f| f.is_finite())
}

/// Reads one report file.
pub fn parse(file: &str, bytes: &[u8]) -> ReportEntry {
    let unreadable = |reason: String| ReportEntry::Unreadable { file: file.to_owned(), reason };
    let Some((segment, digest)) = parse_file_name(file) else {
        return unreadable("not named <segment>[_<digest>].json".into());
    };
    let v: Value = match from_slice_lenient(bytes) {
        Ok(v @ Value::Object(_)) => v,
        Ok(_) => return unreadable("not a JSON object".into()),
        Err(e) => return unreadable(describe_error(&e)),
    };
    let opens: Vec<HoldoutOpen> = v["holdout_opens"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|o| HoldoutOpen { at: text(&o["at"]), by: text(&o["by"]), reason: text(&o["reason"]) })
                .collect()
        })
        .unwrap_or_default();
    let factors = v["factors"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|f| {
                    Some(ReportFactor {
                        factor: text(&f["factor"])?,
                        trial: text(&f["trial"]),
                        ic: number(&f["ic"]),
                        t: number(&f["t"]),
                        selected: f["selected"].as_bool(),
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    let contribution = v["contribution"].as_array().map(|a| {
        a.iter()
            .filter_map(|c| Some(Contribution { factor: text(&c["factor"])?, share: number(&c["share"]) }))
            .collect()
    });
    ReportEntry::Report(AcceptanceReport {
        file: file.to_owned(),
        segment,
        digest,
        written_at: text(&v["written_at"]),
        holdout: !opens.is_empty(),
        opens,
        factors,
        contribution,
        metrics: v.get("metrics").cloned().unwrap_or(Value::Null),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reports_file_name_gives_its_segment_and_digest() {
        let cases = [
            ("validation.json", Some(("validation", None))),
            ("holdout_9f3a1c.json", Some(("holdout", Some("9f3a1c")))),
            ("2024_h2.json", Some(("2024_h2", None))),
            ("2024_h2_0a1b2c3d.json", Some(("2024_h2", Some("0a1b2c3d")))),
            ("notes.txt", None),
        ];
        for (name, want) in cases {
            let got = parse_file_name(name);
            let got = got.as_ref().map(|(s, d)| (s.as_str(), d.as_deref()));
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn a_report_that_records_opens_of_the_holdout_is_a_holdout_report() {
        let ReportEntry::Report(r) = parse(
            "holdout_9f3a1c.json",
            br#"{"factors": [{"factor": "f3", "ic": 0.03, "t": 2.9, "selected": true}],
                 "contribution": [{"factor": "f3", "share": 1.0}],
                 "holdout_opens": [{"at": "2026-11-30T10:00:00Z", "by": "alice", "reason": "final check"}]}"#,
        ) else {
            panic!("readable")
        };
        assert!(r.holdout);
        assert_eq!(r.opens[0].by.as_deref(), Some("alice"));
        assert_eq!(r.factors[0].selected, Some(true));
        assert_eq!(r.contribution.as_ref().map(Vec::len), Some(1));
    }

    #[test]
    fn an_older_report_reads_none_for_what_it_lacks_nothing_made_up() {
        let ReportEntry::Report(r) = parse(
            "validation.json",
            br#"{"factors": [{"factor": "f1", "ic": NaN}, {"ic": 1}], "metrics": {"ic": 0.02}}"#,
        ) else {
            panic!("readable")
        };
        assert!(!r.holdout);
        assert_eq!(r.contribution, None, "written before the contribution table");
        assert_eq!(r.factors.len(), 1, "a factor without a name is left out");
        assert_eq!((r.factors[0].selected, r.factors[0].ic), (None, None));
        assert_eq!(r.metrics["ic"], 0.02);
    }

    #[test]
    fn a_broken_report_says_why() {
        let ReportEntry::Unreadable { reason, .. } = parse("x.json", b"[1,") else { panic!() };
        assert!(reason.starts_with("line 1 column"), "{reason}");
        let ReportEntry::Unreadable { reason, .. } = parse("x.json", b"[1]") else { panic!() };
        assert_eq!(reason, "not a JSON object");
    }
}
