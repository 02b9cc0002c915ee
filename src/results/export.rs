//! The public export of the evidence: one row per counted cell (its
//! factors, model, whether it passed, its score and tokens) with a
//! provenance stamp — which run sets and committed specs it comes from, when
//! it was made, by which runboard, and a hash of its content. Factors the
//! campaign marks private (`[results] private_factors`) are left out, and so
//! are cell ids (derived from every factor, private ones included), run
//! directories, logs and any free text.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::Outcome;
use crate::console::matrix::value_text;
use crate::Timestamp;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// The run sets whose records are counted.
    pub run_sets: Vec<String>,
    /// Their committed specs (from the run index).
    pub specs: Vec<String>,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub generated_at: Timestamp,
    pub runboard_version: String,
    /// FNV-1a (64 bit, hex) over the columns and rows as compact JSON: equal
    /// exports have equal hashes (a change detector, not a signature).
    pub content_hash: String,
    /// The factors left out.
    pub private_factors: Vec<String>,
    /// The scope the export was made over (empty: every cell).
    #[serde(default)]
    pub scope: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Export {
    pub provenance: Provenance,
    pub columns: Vec<String>,
    pub rows: Vec<Vec<Value>>,
    /// The paired comparisons by `condition` (Evidence's), without their
    /// discordant pairs (which name cells), and without the per-task split
    /// when `task` is private.
    #[serde(default)]
    pub paired: Vec<super::paired::PairedComparison>,
    /// Each `condition` level against the baseline (Evidence's), with its
    /// verdict and fixed-look interval.
    #[serde(default)]
    pub comparisons: Vec<super::Comparison>,
    /// The family the verdicts are controlled as (Evidence's).
    #[serde(default)]
    pub family: super::Family,
}

/// How the export's verdicts are judged, as Evidence judges them: the
/// `condition` factor's levels in matrix order, and the samples that pair
/// under `count = "samples"` (none: cells pair).
#[derive(Debug, Clone, Copy, Default)]
pub struct Judged<'a> {
    pub levels: &'a [String],
    pub samples: Option<&'a super::paired::SampleVerdicts>,
}

/// The export of `outcomes`, leaving out `private` factors, its verdicts
/// `judged` as Evidence's.
pub fn export(
    outcomes: &[Outcome],
    factors: &[String],
    private: &[String],
    judged: Judged,
    specs: Vec<String>,
    now: Timestamp,
    version: &str,
) -> Export {
    // The verdicts as Evidence gives them by `condition`: the same family.
    let judged = (!private.iter().any(|p| p == "condition")).then(|| {
        let order = std::collections::BTreeMap::from([("condition".to_owned(), judged.levels.to_vec())]);
        super::evidence_with(outcomes, "condition", &order, judged.samples)
    });
    let (comparisons, family, paired) = match judged {
        None => Default::default(),
        Some(e) => (
            e.comparisons,
            e.family,
            e.paired
                .into_iter()
                .map(|mut p| {
                    p.discordant.clear();
                    if private.iter().any(|f| f == "task") {
                        p.by_task.clear();
                    }
                    p
                })
                .collect(),
        ),
    };
    let shown: Vec<&String> = factors.iter().filter(|f| !private.contains(f)).collect();
    let mut columns: Vec<String> = shown.iter().map(|f| (*f).clone()).collect();
    columns.extend(["model", "run_set", "passed", "score", "tokens"].map(String::from));
    let mut rows: Vec<Vec<Value>> = outcomes
        .iter()
        .map(|o| {
            let mut row: Vec<Value> = shown.iter().map(|f| o.factors.get(*f).cloned().unwrap_or(Value::Null)).collect();
            row.push(o.model.clone().map_or(Value::Null, Value::from));
            row.push(Value::from(o.run_set.clone()));
            row.push(Value::from(o.passed));
            row.push(o.score.map_or(Value::Null, Value::from));
            row.push(o.tokens.map_or(Value::Null, Value::from));
            row
        })
        .collect();
    // A stable order: by the shown factors' text, then run set.
    rows.sort_by_key(|r| r.iter().map(value_text).collect::<Vec<_>>());
    let run_sets: BTreeSet<String> = outcomes.iter().map(|o| o.run_set.clone()).collect();
    let content = serde_json::to_vec(&(&columns, &rows)).unwrap_or_default();
    Export {
        provenance: Provenance {
            run_sets: run_sets.into_iter().collect(),
            specs,
            generated_at: now,
            runboard_version: version.to_owned(),
            content_hash: format!("{:016x}", crate::basics::hash::fnv1a(&content)),
            private_factors: private.to_vec(),
            scope: String::new(),
        },
        columns,
        rows,
        paired,
        comparisons,
        family,
    }
}

/// The export as CSV: the provenance as leading `# key: value` lines (read
/// with `comment='#'`), then a header and one line per row.
pub fn to_csv(e: &Export) -> String {
    let p = &e.provenance;
    let mut out = format!(
        "# format: runboard evidence export\n# generated_at: {}\n# runboard_version: {}\n# content_hash: {}\n# run_sets: {}\n# specs: {}\n# private_factors: {}\n# scope: {}\n",
        p.generated_at.to_rfc3339(),
        p.runboard_version,
        p.content_hash,
        p.run_sets.join(" "),
        p.specs.join(" "),
        if p.private_factors.is_empty() { "(none)".to_owned() } else { p.private_factors.join(" ") },
        if p.scope.is_empty() { "(every cell)" } else { &p.scope }
    );
    if e.family.comparisons > 0 {
        out += &format!("# family: {}\n", e.family.words());
    }
    for c in &e.comparisons {
        out += &format!("# compared: {}\n", c.words());
    }
    for c in &e.paired {
        out += &format!("# paired: {}\n", c.words());
    }
    let mut w = csv::WriterBuilder::new().from_writer(Vec::new());
    let _ = w.write_record(&e.columns);
    for r in &e.rows {
        let _ = w.write_record(r.iter().map(|v| match v {
            Value::Null => String::new(),
            other => value_text(other),
        }));
    }
    out += &String::from_utf8_lossy(&w.into_inner().unwrap_or_default());
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn outcome(participant: &str, cond: &str, passed: bool) -> Outcome {
        Outcome {
            cell: format!("c-{participant}{cond}"),
            factors: [("participant", json!(participant)), ("condition", json!(cond))]
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect(),
            model: Some("qwen".into()),
            run_set: "rs1".into(),
            passed,
            failed: false,
            reason: (!passed).then(|| "exit 1".into()),
            score: Some(0.5),
            tokens: Some(10),
            ended_at: None,
            successes: u64::from(passed),
            trials: 1,
        }
    }

    #[test]
    fn private_factors_and_ids_stay_out_and_the_hash_follows_the_content() {
        let o = vec![outcome("alice", "base", true), outcome("bob", "treat", false)];
        let factors = vec!["participant".to_owned(), "condition".to_owned()];
        let now = Timestamp(0);
        let levels = ["base".to_owned(), "treat".to_owned()];
        let e = export(
            &o,
            &factors,
            &["participant".into()],
            Judged { levels: &levels, samples: None },
            vec!["specs/committed/0001-x.json".into()],
            now,
            "0.1.0",
        );
        assert_eq!(e.columns, ["condition", "model", "run_set", "passed", "score", "tokens"]);
        let csv = to_csv(&e);
        assert!(!csv.contains("alice") && !csv.contains("bob") && !csv.contains("c-"), "{csv}");
        assert!(csv.contains("# specs: specs/committed/0001-x.json\n"), "{csv}");
        // Every provenance line is `# key: value`, the key a plain word.
        let comments: Vec<&str> = csv.lines().take_while(|l| l.starts_with('#')).collect();
        // 8 of provenance, the family and the one comparison's verdict.
        assert_eq!(comments.len(), 10, "{csv}");
        assert!(
            csv.contains("# family: 1 comparison: ")
                && csv.contains("# compared: treat − base: -100 points, open by the unpaired test (p = "),
            "{csv}"
        );
        for l in &comments {
            let (key, _) = l[2..].split_once(": ").unwrap_or_else(|| panic!("not `# key: value`: {l}"));
            assert!(key.chars().all(|c| c.is_ascii_lowercase() || c == '_'), "key {key:?} in {l}");
        }
        assert!(csv.contains("# private_factors: participant\n"), "{csv}");
        assert!(csv.contains("condition,model,run_set,passed,score,tokens\nbase,qwen,rs1,true,0.5,10\n"), "{csv}");
        // The same content, the same hash; other content, another.
        // The export of some outcomes, as above but for its time and specs.
        let unscoped = |o: &[Outcome], at: Timestamp| {
            export(o, &factors, &["participant".into()], Judged { levels: &levels, samples: None }, vec![], at, "0.1.0")
        };
        let again = unscoped(&o, Timestamp(99));
        assert_eq!(again.provenance.content_hash, e.provenance.content_hash);
        let other = unscoped(&o[..1], now);
        assert_ne!(other.provenance.content_hash, e.provenance.content_hash);
        // Paired by condition over the other factors: alice and bob differ, so no pair.
        assert!(e.paired.is_empty());
        let paired = vec![outcome("alice", "base", false), outcome("alice", "treat", true)];
        let p = unscoped(&paired, now);
        assert_eq!(p.paired.len(), 1);
        assert_eq!((p.paired[0].table.b, p.paired[0].discordant.len()), (1, 0), "counted, the cells not named");
        let csv = to_csv(&p);
        assert!(csv.contains("# paired: treat − base over 1 pair: +100 pp ["), "{csv}");
        assert!(!csv.contains("alice") && !csv.contains("c-"), "{csv}");
    }
}
