//! The samples behind a cell's number: what an Inspect AI eval log says of
//! each sample — its id and epoch, an excerpt of its input, target and
//! output, its score, whether it passed, and its error.
//!
//! Logs run to hundreds of MB (each sample keeps its whole transcript), so
//! nothing here holds a log: a JSON log (`--log-format json`) is read as a
//! stream, sample by sample, every field but the few shown skipped as it
//! passes (its `messages` and `events` are never kept); a `.eval` log is a
//! zip of one JSON file per sample, which the server's adapter opens one at a
//! time into [`row`]. What is kept of a sample is an excerpt of
//! [`EXCERPT_CHARS`] characters per field, so memory is bounded by one
//! sample's input, target and output while it is read, plus the rows asked
//! for.
//!
//! **Passed** is the first scorer's value read as Inspect's `value_to_float`
//! reads it ([`super::inspect::score_value`]): full credit (`C`, `true`, 1)
//! passes; anything less (`I`, `P`, 0.5) does not; a sample with no score, or
//! one that ended in an error, has no verdict. The first scorer is the log's
//! first (`results.scores[0]`) when the log says, else the first by name.

use std::collections::BTreeMap;
use std::io::Read;

use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;

use super::inspect::{score_value, EvalResults};

/// The format of an Inspect AI log.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LogFormat {
    /// One JSON document (`*.json`), read as a stream.
    #[default]
    Json,
    /// A zip archive of JSON files (`*.eval`), one sample file at a time.
    Eval,
}

impl LogFormat {
    pub const fn word(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Eval => "eval",
        }
    }

    /// The format a log's file name says (none: not an Inspect log).
    pub fn of_file(name: &str) -> Option<Self> {
        if name.ends_with(".json") {
            Some(Self::Json)
        } else if name.ends_with(".eval") {
            Some(Self::Eval)
        } else {
            None
        }
    }
}

crate::display_as_word!(LogFormat);

/// How many characters of each text a row keeps.
pub const EXCERPT_CHARS: usize = 300;

/// One sample as the sample view shows it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SampleRow {
    /// The dataset's id (numbers as text).
    pub id: String,
    pub epoch: u32,
    /// Excerpts (at most [`EXCERPT_CHARS`] characters; `…` when cut).
    pub input: String,
    pub target: String,
    pub output: String,
    /// The scorer the verdict is read from, and its value as written.
    pub scorer: Option<String>,
    pub score: Option<String>,
    /// Full credit by that scorer; none: not scored, or it ended in an error.
    pub passed: Option<bool>,
    /// Inspect's error for the sample (its message, excerpted).
    pub error: Option<String>,
}

impl SampleRow {
    /// The key a sample is matched by across cells: its id and epoch.
    pub fn key(&self) -> (String, u32) {
        (self.id.clone(), self.epoch)
    }
}

/// A sample's verdict in words: `passed`, `not passed`, `no verdict`.
pub fn verdict_words(passed: Option<bool>) -> &'static str {
    match passed {
        Some(true) => "passed",
        Some(false) => "not passed",
        None => "no verdict",
    }
}

/// A sample as a log writes it: only what a row needs is deserialized.
#[derive(Debug, Default, Deserialize)]
pub struct SampleRecord {
    #[serde(default)]
    id: Value,
    #[serde(default)]
    epoch: Option<u32>,
    #[serde(default)]
    input: Value,
    #[serde(default)]
    target: Value,
    #[serde(default)]
    output: Option<Output>,
    #[serde(default)]
    scores: Option<BTreeMap<String, Score>>,
    #[serde(default)]
    error: Option<SampleError>,
}

#[derive(Debug, Default, Deserialize)]
struct Output {
    /// Newer logs write the completion's text; older ones only `choices`.
    #[serde(default)]
    completion: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
}

#[derive(Debug, Default, Deserialize)]
struct Choice {
    #[serde(default)]
    message: Value,
}

#[derive(Debug, Default, Deserialize)]
struct Score {
    #[serde(default)]
    value: Value,
}

#[derive(Debug, Default, Deserialize)]
struct SampleError {
    #[serde(default)]
    message: String,
}

/// At most [`EXCERPT_CHARS`] characters of `s`, whitespace runs as one
/// space, `…` when cut.
pub fn excerpt(s: &str) -> String {
    let mut out = String::new();
    let mut count = 0;
    for word in s.split_whitespace() {
        if count > 0 {
            out.push(' ');
            count += 1;
        }
        for ch in word.chars() {
            if count >= EXCERPT_CHARS {
                out.push('…');
                return out;
            }
            out.push(ch);
            count += 1;
        }
    }
    out
}

/// The text of an input, target or message as Inspect writes them: a
/// string; a list of strings (targets); a chat message (`content` a string
/// or a list of parts with `text`); a list of messages — the last user
/// message's text, the question a sample asks.
fn text_of(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(items) if items.iter().all(Value::is_string) => {
            items.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(" | ")
        }
        Value::Array(items) => {
            let user = items.iter().rev().find(|m| m.get("role").and_then(Value::as_str) == Some("user"));
            user.or(items.last()).map(text_of).unwrap_or_default()
        }
        Value::Object(m) => match m.get("content") {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter_map(|p| p.get("text").and_then(Value::as_str).or_else(|| p.as_str()))
                .collect::<Vec<_>>()
                .join(" "),
            _ => m.get("text").and_then(Value::as_str).unwrap_or_default().to_owned(),
        },
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A row of a sample record; `scorer`: the log's first scorer when known.
pub fn row(rec: SampleRecord, scorer: Option<&str>) -> SampleRow {
    let output = rec.output.unwrap_or_default();
    let completion = output
        .completion
        .filter(|c| !c.is_empty())
        .or_else(|| output.choices.first().map(|c| text_of(&c.message)))
        .unwrap_or_default();
    let scores = rec.scores.unwrap_or_default();
    let chosen = scorer.and_then(|s| scores.get_key_value(s)).or_else(|| scores.iter().next());
    let value = chosen.map(|(_, s)| &s.value);
    let error = rec.error.map(|e| excerpt(&e.message)).filter(|e| !e.is_empty());
    SampleRow {
        id: match rec.id {
            Value::String(s) => s,
            Value::Null => String::new(),
            other => other.to_string(),
        },
        epoch: rec.epoch.unwrap_or(1),
        input: excerpt(&text_of(&rec.input)),
        target: excerpt(&text_of(&rec.target)),
        output: excerpt(&completion),
        scorer: chosen.map(|(name, _)| name.clone()),
        score: value.map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }),
        passed: if error.is_some() { None } else { value.and_then(score_value).map(|x| x >= 1.0) },
        error,
    }
}

/// The first scorer a log's results name.
pub fn first_scorer(results: &EvalResults) -> Option<String> {
    results.scores.first().map(|s| s.name.clone()).filter(|n| !n.is_empty())
}

/// Reads a JSON eval log as a stream, handing each sample's row to `each`
/// in the log's order; nothing else of the log is kept. An error names what
/// could not be read (the rows before it were handed on).
pub fn read_json_log<R: Read>(reader: R, each: &mut dyn FnMut(SampleRow)) -> Result<(), String> {
    let mut de = serde_json::Deserializer::from_reader(std::io::BufReader::with_capacity(64 * 1024, reader));
    de.deserialize_map(LogVisitor { each }).map_err(|e| format!("not a readable Inspect JSON log: {e}"))
}

struct LogVisitor<'a> {
    each: &'a mut dyn FnMut(SampleRow),
}

impl<'de> Visitor<'de> for LogVisitor<'_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("an Inspect eval log (a JSON object)")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        // Inspect writes `results` before `samples`; a log that does not is
        // read by each sample's first scorer by name.
        let mut scorer: Option<String> = None;
        while let Some(key) = map.next_key::<String>()? {
            match key.as_str() {
                "results" => {
                    let r: Option<EvalResults> = map.next_value()?;
                    scorer = r.as_ref().and_then(first_scorer);
                }
                "samples" => map.next_value_seed(Samples { each: &mut *self.each, scorer: scorer.as_deref() })?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

struct Samples<'a, 'b> {
    each: &'a mut dyn FnMut(SampleRow),
    scorer: Option<&'b str>,
}

impl<'de> DeserializeSeed<'de> for Samples<'_, '_> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Samples<'_, '_> {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of samples")
    }

    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while let Some(rec) = seq.next_element::<SampleRecord>()? {
            (self.each)(row(rec, self.scorer));
        }
        Ok(())
    }
}

/// The order of a `.eval` log's sample files (`samples/<id>_epoch_<n>.json`):
/// by id — numbers as numbers — then epoch; none for another entry.
pub fn eval_entry_key(name: &str) -> Option<(Option<u64>, String, u32)> {
    let stem = name.strip_prefix("samples/")?.strip_suffix(".json")?;
    let (id, epoch) = stem.rsplit_once("_epoch_")?;
    Some((id.parse().ok(), id.to_owned(), epoch.parse().ok()?))
}

/// One sample file of a `.eval` log, read as it streams out of the archive.
pub fn read_eval_sample<R: Read>(reader: R, scorer: Option<&str>) -> Result<SampleRow, String> {
    let rec: SampleRecord = serde_json::from_reader(std::io::BufReader::new(reader))
        .map_err(|e| format!("a sample that cannot be read: {e}"))?;
    Ok(row(rec, scorer))
}

/// A `.eval` log's `header.json`: the first scorer its results name.
pub fn eval_header_scorer<R: Read>(reader: R) -> Option<String> {
    #[derive(Deserialize)]
    struct Header {
        #[serde(default)]
        results: Option<EvalResults>,
    }
    let h: Header = serde_json::from_reader(std::io::BufReader::new(reader)).ok()?;
    h.results.as_ref().and_then(first_scorer)
}

/// Another cell's verdict on each of `rows`' samples, matched by id and
/// epoch (none: not in its log, or no verdict there).
pub fn verdicts_there(rows: &[SampleRow], other: &[SampleRow]) -> Vec<Option<bool>> {
    let there: BTreeMap<(String, u32), Option<bool>> = other.iter().map(|r| (r.key(), r.passed)).collect();
    rows.iter().map(|r| there.get(&r.key()).copied().flatten()).collect()
}

/// Whether a sample flipped between two cells: both scored it, and one
/// passed where the other did not.
pub fn flipped(here: Option<bool>, there: Option<bool>) -> bool {
    matches!((here, there), (Some(x), Some(y)) if x != y)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A JSON log as Inspect 0.3 writes it (`inspect eval suite.py@arithmetic
    /// --model openai/standin-hasty --log-format json`, trimmed to two
    /// samples; the fields runboard skips are kept in shape).
    const LOG: &str = r#"{
      "version": 2, "status": "success",
      "eval": {"task": "arithmetic", "model": "openai/standin-hasty"},
      "plan": {"steps": [{"solver": "generate"}]},
      "results": {"total_samples": 2, "completed_samples": 2,
        "scores": [{"name": "match", "scorer": "match", "metrics": {"accuracy": {"name": "accuracy", "value": 0.5}}}]},
      "stats": {"model_usage": {}},
      "samples": [
        {"id": 1, "epoch": 1, "input": "What is 2 + 3? Reply as ANSWER: <n>", "target": "5",
         "messages": [{"role": "user", "content": "What is 2 + 3?"}],
         "output": {"model": "standin-hasty", "choices": [{"message": {"content": [{"type": "text", "text": "ANSWER: 6"}], "role": "assistant"}, "stop_reason": "stop"}], "completion": "ANSWER: 6"},
         "scores": {"match": {"value": "I", "answer": "ANSWER: 6", "explanation": "ANSWER: 6", "history": []}},
         "events": [{"event": "model", "input": [], "output": {}}], "error": null},
        {"id": "two", "epoch": 2, "input": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": [{"type": "text", "text": "What is 12 + 7?"}]}],
         "target": ["19", "nineteen"],
         "output": {"choices": [{"message": {"content": "ANSWER: 19", "role": "assistant"}}]},
         "scores": {"match": {"value": "C"}, "aux": {"value": 0}}, "error": null}
      ]
    }"#;

    fn read(log: &str) -> (Vec<SampleRow>, Result<(), String>) {
        let mut rows = Vec::new();
        let r = read_json_log(log.as_bytes(), &mut |row| rows.push(row));
        (rows, r)
    }

    #[test]
    fn a_json_log_is_read_sample_by_sample_with_excerpts_scores_and_verdicts() {
        let (rows, r) = read(LOG);
        assert_eq!(r, Ok(()));
        assert_eq!(rows.len(), 2);
        let a = &rows[0];
        assert_eq!((a.id.as_str(), a.epoch, a.target.as_str(), a.output.as_str()), ("1", 1, "5", "ANSWER: 6"));
        assert_eq!(a.input, "What is 2 + 3? Reply as ANSWER: <n>");
        assert_eq!((a.scorer.as_deref(), a.score.as_deref(), a.passed), (Some("match"), Some("I"), Some(false)));
        let b = &rows[1];
        // A chat input: the last user message; a list target joined; no
        // `completion`: the first choice's text; the log's first scorer.
        assert_eq!((b.id.as_str(), b.epoch), ("two", 2));
        assert_eq!(
            (b.input.as_str(), b.target.as_str(), b.output.as_str()),
            ("What is 12 + 7?", "19 | nineteen", "ANSWER: 19")
        );
        assert_eq!((b.scorer.as_deref(), b.passed), (Some("match"), Some(true)));
    }

    #[test]
    fn an_errored_sample_has_no_verdict_and_a_broken_log_says_so_after_the_rows_it_read() {
        let log = r#"{"samples": [{"id": 1, "error": {"message": "ValueError('the grader cannot read this answer')", "traceback": "..."}, "scores": {"s": {"value": "C"}}}, {"id": 2, "scores": {"s": {"value": 0.5}}}, {"id": 3, "#;
        let (rows, r) = read(log);
        assert_eq!(rows.len(), 2, "the samples before the break are handed on");
        assert_eq!(
            (rows[0].passed, rows[0].error.as_deref()),
            (None, Some("ValueError('the grader cannot read this answer')"))
        );
        assert_eq!(
            (rows[1].passed, rows[1].score.as_deref()),
            (Some(false), Some("0.5")),
            "partial credit does not pass"
        );
        assert!(r.unwrap_err().starts_with("not a readable Inspect JSON log"));
        for broken in ["", "[]", "{\"samples\": 3}", "{\"samples\": [1, 2]}", "\u{0}"] {
            let (rows, r) = read(broken);
            assert!(rows.is_empty() && r.is_err(), "{broken:?}");
        }
        let (rows, r) = read(r#"{"status": "started", "samples": null}"#);
        assert!(rows.is_empty() && r.is_ok(), "a log still running has no samples yet");
    }

    #[test]
    fn excerpts_are_bounded_and_sample_files_order_by_id_then_epoch() {
        let long = "word ".repeat(1_000);
        let e = excerpt(&long);
        assert_eq!(e.chars().count(), EXCERPT_CHARS + 1);
        assert!(e.ends_with('…'));
        assert_eq!(excerpt("  a\n\n b  "), "a b");
        let mut names = ["samples/10_epoch_1.json", "samples/2_epoch_2.json", "samples/2_epoch_1.json", "header.json"];
        names.sort_by_key(|n| eval_entry_key(n));
        assert_eq!(
            names,
            ["header.json", "samples/2_epoch_1.json", "samples/2_epoch_2.json", "samples/10_epoch_1.json"]
        );
        assert_eq!(eval_entry_key("samples/a_b_epoch_3.json"), Some((None, "a_b".into(), 3)));
    }

    #[test]
    fn flips_pair_samples_by_id_and_epoch_where_both_were_scored() {
        let r = |id: &str, passed: Option<bool>| SampleRow { id: id.into(), epoch: 1, passed, ..Default::default() };
        let level = [r("1", Some(true)), r("2", Some(true)), r("3", None), r("4", Some(false)), r("6", Some(true))];
        let base =
            [r("1", Some(false)), r("2", Some(true)), r("3", Some(false)), r("4", Some(true)), r("5", Some(false))];
        let there = verdicts_there(&level, &base);
        assert_eq!(there, [Some(false), Some(true), Some(false), Some(true), None]);
        let f: Vec<_> = level
            .iter()
            .zip(&there)
            .filter(|(l, t)| flipped(l.passed, **t))
            .map(|(l, t)| (l.id.as_str(), l.passed, *t))
            .collect();
        assert_eq!(f, [("1", Some(true), Some(false)), ("4", Some(false), Some(true))]);
    }
}
