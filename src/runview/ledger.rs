//! The ledger and events files, read incrementally: a reader feeds the complete
//! lines appended since its last read and keeps what it parsed, so re-reading a
//! growing run costs what was appended, not the whole file.

use serde::de::Deserializer;
use serde::Deserialize;
use serde_json::Value;

use std::borrow::Cow;
use std::sync::Arc;

use super::view::{RoundView, TrialView};
use crate::json::{describe_error, from_slice_lenient, replace_non_finite};

/// A number, or `None` for anything else (a string, null, NaN read as null):
/// one wrong-typed field degrades that field only.
fn lenient_f64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<f64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_f64().filter(|f| f.is_finite()),
        _ => None,
    })
}

fn lenient_u64<'de, D: Deserializer<'de>>(d: D) -> Result<Option<u64>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::Number(n) => n.as_u64(),
        _ => None,
    })
}

fn lenient_string<'de, D: Deserializer<'de>>(d: D) -> Result<Option<String>, D::Error> {
    Ok(match Value::deserialize(d)? {
        Value::String(s) => Some(s),
        _ => None,
    })
}

fn lenient_bool<'de, D: Deserializer<'de>>(d: D) -> Result<Option<bool>, D::Error> {
    Ok(Value::deserialize(d)?.as_bool())
}

#[derive(Deserialize, Default)]
struct Outcome {
    #[serde(default, deserialize_with = "lenient_string")]
    stage: Option<String>,
    #[serde(default, deserialize_with = "lenient_bool")]
    accepted: Option<bool>,
    #[serde(default, deserialize_with = "lenient_string")]
    refused: Option<String>,
}

fn lenient_outcome<'de, D: Deserializer<'de>>(d: D) -> Result<Outcome, D::Error> {
    Ok(match Value::deserialize(d)? {
        v @ Value::Object(_) => serde_json::from_value(v).unwrap_or_default(),
        _ => Outcome::default(),
    })
}

/// A list of strings; anything else (or a non-string item) is left out.
fn lenient_strings<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(crate::json::strings(&Value::deserialize(d)?))
}

/// The operators the gate's graph for a trial uses: every `"op"` string in it,
/// at any depth, sorted and without repeats. The graph's shape beyond that is
/// the writer's; a graph that is not JSON objects and arrays yields none.
pub fn graph_operators(graph: &Value) -> Vec<String> {
    fn walk(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(map) => {
                if let Some(Value::String(op)) = map.get("op") {
                    out.push(op.clone());
                }
                map.values().for_each(|v| walk(v, out));
            }
            Value::Array(items) => items.iter().for_each(|v| walk(v, out)),
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(graph, &mut out);
    out.sort_unstable();
    out.dedup();
    out
}

fn lenient_graph<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(graph_operators(&Value::deserialize(d)?))
}

/// One ledger line, typed; every field optional and lenient.
#[derive(Deserialize)]
struct LedgerLine {
    #[serde(default, deserialize_with = "lenient_u64")]
    round: Option<u64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    slot: Option<u64>,
    #[serde(default, deserialize_with = "lenient_string")]
    trial: Option<String>,
    #[serde(default, deserialize_with = "lenient_u64")]
    attempt: Option<u64>,
    #[serde(default, deserialize_with = "lenient_f64")]
    t: Option<f64>,
    #[serde(default, deserialize_with = "lenient_f64")]
    train_ic: Option<f64>,
    #[serde(default, deserialize_with = "lenient_f64")]
    max_abs_corr: Option<f64>,
    #[serde(default, deserialize_with = "lenient_f64")]
    coverage: Option<f64>,
    #[serde(default, deserialize_with = "lenient_f64")]
    monotonicity: Option<f64>,
    #[serde(default, deserialize_with = "lenient_f64")]
    t_threshold: Option<f64>,
    #[serde(default, deserialize_with = "lenient_u64")]
    tokens: Option<u64>,
    #[serde(default, deserialize_with = "lenient_string")]
    factor: Option<String>,
    #[serde(default, deserialize_with = "lenient_string")]
    code: Option<String>,
    #[serde(default, deserialize_with = "lenient_strings")]
    parents: Vec<String>,
    #[serde(default, deserialize_with = "lenient_graph")]
    graph: Vec<String>,
    #[serde(default, deserialize_with = "lenient_outcome")]
    outcome: Outcome,
}

/// The same line read strictly: typed fields, no intermediate values. Most lines
/// are well formed, so this fast path is tried first; a line it refuses (a
/// wrong-typed field, a NaN) is read again leniently.
#[derive(Deserialize)]
struct StrictLine<'a> {
    round: Option<u32>,
    slot: Option<u32>,
    #[serde(borrow)]
    trial: Option<Cow<'a, str>>,
    attempt: Option<u32>,
    t: Option<f64>,
    train_ic: Option<f64>,
    max_abs_corr: Option<f64>,
    coverage: Option<f64>,
    monotonicity: Option<f64>,
    t_threshold: Option<f64>,
    tokens: Option<u64>,
    #[serde(borrow)]
    factor: Option<Cow<'a, str>>,
    #[serde(borrow)]
    code: Option<Cow<'a, str>>,
    #[serde(default)]
    parents: Vec<String>,
    #[serde(default)]
    graph: Option<Value>,
    #[serde(borrow, default)]
    outcome: Option<StrictOutcome<'a>>,
}

#[derive(Deserialize)]
struct StrictOutcome<'a> {
    #[serde(borrow)]
    stage: Option<Cow<'a, str>>,
    accepted: Option<bool>,
    #[serde(borrow)]
    refused: Option<Cow<'a, str>>,
}

fn finite(x: Option<f64>) -> Option<f64> {
    x.filter(|f| f.is_finite())
}

/// Parses one ledger line into a trial; `Err` names what is wrong.
pub fn parse_trial(line: &[u8]) -> Result<TrialView, String> {
    if let Ok(l) = serde_json::from_slice::<StrictLine<'_>>(line) {
        let round = l.round.ok_or("no round")?;
        let (stage, accepted, reason) = match l.outcome {
            Some(o) => (o.stage.map(Cow::into_owned), o.accepted.unwrap_or(false), o.refused.map(Cow::into_owned)),
            None => (None, false, None),
        };
        return Ok(TrialView {
            round,
            slot: l.slot,
            trial: l.trial.map(Cow::into_owned),
            attempt: l.attempt,
            t: finite(l.t),
            train_ic: finite(l.train_ic),
            max_abs_corr: finite(l.max_abs_corr),
            coverage: finite(l.coverage),
            monotonicity: finite(l.monotonicity),
            t_threshold: finite(l.t_threshold),
            tokens: l.tokens,
            stage,
            accepted,
            reason,
            factor: l.factor.map(Cow::into_owned),
            code: l.code.map(Cow::into_owned),
            parents: l.parents,
            operators: l.graph.as_ref().map(graph_operators).unwrap_or_default(),
        });
    }
    let parsed: Result<LedgerLine, _> = serde_json::from_slice(line);
    let l = match parsed {
        Ok(l) => l,
        Err(first) => match replace_non_finite(line) {
            Some(fixed) => serde_json::from_slice(&fixed).map_err(|e| describe_error(&e))?,
            None => return Err(describe_error(&first)),
        },
    };
    let round = l.round.and_then(|r| u32::try_from(r).ok()).ok_or("no round")?;
    Ok(TrialView {
        round,
        slot: l.slot.and_then(|s| u32::try_from(s).ok()),
        trial: l.trial,
        attempt: l.attempt.and_then(|a| u32::try_from(a).ok()),
        t: l.t,
        train_ic: l.train_ic,
        max_abs_corr: l.max_abs_corr,
        coverage: l.coverage,
        monotonicity: l.monotonicity,
        t_threshold: l.t_threshold,
        tokens: l.tokens,
        stage: l.outcome.stage,
        accepted: l.outcome.accepted.unwrap_or(false),
        reason: l.outcome.refused,
        factor: l.factor,
        code: l.code,
        parents: l.parents,
        operators: l.graph,
    })
}

/// What a growing JSONL file has parsed into so far. A reader feeds it the bytes
/// that follow what it consumed last time; it keeps complete lines only.
pub trait Incremental: Default {
    /// The count of complete lines consumed so far, blank ones included, so a
    /// problem's line number is the file's own.
    fn lines_mut(&mut self) -> &mut usize;

    /// Reads one complete, non-blank line, the `n`th of the file (1-based).
    fn read_line(&mut self, n: usize, line: &[u8]);

    /// Feeds bytes that continue the file from where the last feed's complete
    /// lines ended; returns how many bytes it consumed (complete lines only).
    fn feed(&mut self, bytes: &[u8]) -> usize {
        let Some(last_newline) = bytes.iter().rposition(|&b| b == b'\n') else { return 0 };
        for line in bytes[..last_newline].split(|&b| b == b'\n') {
            let n = {
                let count = self.lines_mut();
                *count += 1;
                *count
            };
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            if !line.iter().all(u8::is_ascii_whitespace) {
                self.read_line(n, line);
            }
        }
        last_newline + 1
    }

    fn from_bytes(bytes: &[u8]) -> Self {
        let mut s = Self::default();
        s.feed(bytes);
        s
    }
}

/// Everything parsed from a ledger so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LedgerState {
    /// Every trial read, grouped by round in round order, whatever the state
    /// says (the view takes the written rounds). Rounds are shared with the views
    /// made from them, so a view costs O(rounds), not O(trials).
    pub rounds: Vec<Arc<RoundView>>,
    /// `(line number, reason)` of lines that could not be read.
    pub problems: Vec<(usize, String)>,
    /// Complete lines consumed so far (blank ones included).
    pub lines: usize,
}

impl Incremental for LedgerState {
    fn lines_mut(&mut self) -> &mut usize {
        &mut self.lines
    }

    fn read_line(&mut self, n: usize, line: &[u8]) {
        match parse_trial(line) {
            Ok(t) => self.add(t),
            Err(e) => self.problems.push((n, e)),
        }
    }
}

impl LedgerState {
    fn add(&mut self, t: TrialView) {
        let at = match self.rounds.last() {
            // The usual case: the campaign appends round after round.
            Some(last) if last.round == t.round => self.rounds.len() - 1,
            _ => match self.rounds.binary_search_by_key(&t.round, |r| r.round) {
                Ok(i) => i,
                Err(i) => {
                    self.rounds.insert(i, Arc::new(RoundView::new(t.round, Vec::new())));
                    i
                }
            },
        };
        Arc::make_mut(&mut self.rounds[at]).push(t);
    }

    /// How many trials were read.
    pub fn trial_count(&self) -> usize {
        self.rounds.iter().map(|r| r.trials.len()).sum()
    }
}

/// Everything parsed from an events file so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventsLog {
    pub events: Vec<Value>,
    pub problems: Vec<(usize, String)>,
    pub lines: usize,
}

impl Incremental for EventsLog {
    fn lines_mut(&mut self) -> &mut usize {
        &mut self.lines
    }

    fn read_line(&mut self, n: usize, line: &[u8]) {
        match from_slice_lenient::<Value>(line) {
            Ok(v) if v.is_object() => self.events.push(v),
            Ok(_) => self.problems.push((n, "not a JSON object".into())),
            Err(e) => self.problems.push((n, describe_error(&e))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrong_typed_fields_degrade_alone() {
        let t = parse_trial(
            br#"{"round":2,"slot":"x","t":"high","max_abs_corr":NaN,"outcome":{"stage":7,"refused":"r"},"extra":[1]}"#,
        )
        .unwrap();
        assert_eq!((t.round, t.slot, t.t, t.max_abs_corr), (2, None, None, None));
        assert_eq!((t.stage, t.reason.as_deref()), (None, Some("r")));
        assert_eq!(parse_trial(br#"{"slot":1}"#).unwrap_err(), "no round");
        assert!(parse_trial(b"{oops").unwrap_err().starts_with("line 1 column 2"));
    }

    #[test]
    fn feeding_in_pieces_equals_reading_whole() {
        let text = b"{\"round\":1,\"t\":1.5}\n{\"round\":1,\"t\":2}\n\nbad\n{\"round\":2,\"t\":3}\n";
        let whole = LedgerState::from_bytes(text);
        let mut pieces = LedgerState::default();
        let mut offset = 0;
        for end in [7, 20, 26, 27, text.len()] {
            offset += pieces.feed(&text[offset..end]);
        }
        assert_eq!(offset, text.len());
        assert_eq!(pieces, whole);
        assert_eq!(whole.trial_count(), 3);
        assert_eq!(whole.rounds.iter().map(|r| r.round).collect::<Vec<_>>(), [1, 2]);
        // Line numbers are the file's own, blank lines included.
        assert_eq!(whole.problems, [(4, "line 1 column 1: expected value".to_owned())]);
    }
}
