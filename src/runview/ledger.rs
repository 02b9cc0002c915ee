//! The ledger and events files, read incrementally: a reader feeds the complete
//! lines appended since its last read and keeps what it parsed, so re-reading a
//! growing run costs what was appended, not the whole file.

use serde::Deserialize;
use serde_json::Value;

use std::borrow::Cow;
use std::sync::Arc;

use super::events::{EventsDigest, RunEvent};
use super::rows::{RoundView, TrialView};
use crate::basics::json::{describe_error, from_slice_lenient};

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

/// A field of a line that held a value of the wrong type: it reads as `null`
/// (nothing is made up) and is reported among the run's problems.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WrongType {
    /// The field's path in the line, e.g. `slot` or `outcome.accepted`.
    pub field: &'static str,
    /// What the format expects there.
    pub expected: &'static str,
    /// What the line held instead.
    pub found: &'static str,
}

impl std::fmt::Display for WrongType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}` is {}, not {}; read as null", self.field, self.found, self.expected)
    }
}

/// The JSON type of `v`, in words.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_u64() || n.is_i64() => "an integer",
        Value::Number(_) => "a fractional number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// Typed reads of one JSON object's fields that note every wrong-typed field.
/// Absent and `null` fields (`NaN` reads as `null`) are simply `None`.
pub struct Fields<'a> {
    obj: &'a serde_json::Map<String, Value>,
    prefix: &'static str,
    pub wrong: Vec<WrongType>,
}

impl<'a> Fields<'a> {
    pub fn new(obj: &'a serde_json::Map<String, Value>) -> Self {
        Self { obj, prefix: "", wrong: Vec::new() }
    }

    fn get(
        &mut self,
        key: &'static str,
        expected: &'static str,
        ok: impl FnOnce(&'a Value) -> bool,
    ) -> Option<&'a Value> {
        match self.obj.get(key) {
            None | Some(Value::Null) => None,
            Some(v) if ok(v) => Some(v),
            Some(v) => {
                let field = if self.prefix.is_empty() { key } else { self.prefix };
                self.wrong.push(WrongType { field, expected, found: kind_of(v) });
                None
            }
        }
    }

    /// A whole number that fits `u32`.
    pub fn u32(&mut self, key: &'static str) -> Option<u32> {
        let v = self.get(key, "a whole number", |v| v.as_u64().is_some_and(|n| u32::try_from(n).is_ok()))?;
        v.as_u64().and_then(|n| u32::try_from(n).ok())
    }

    pub fn u64(&mut self, key: &'static str) -> Option<u64> {
        self.get(key, "a whole number", |v| v.as_u64().is_some())?.as_u64()
    }

    pub fn f64(&mut self, key: &'static str) -> Option<f64> {
        self.get(key, "a number", Value::is_number)?.as_f64().filter(|f| f.is_finite())
    }

    pub fn string(&mut self, key: &'static str) -> Option<String> {
        self.get(key, "a string", Value::is_string)?.as_str().map(str::to_owned)
    }

    pub fn bool(&mut self, key: &'static str) -> Option<bool> {
        self.get(key, "a boolean", Value::is_boolean)?.as_bool()
    }

    /// A list of strings; an item that is not a string is left out and reported.
    pub fn strings(&mut self, key: &'static str) -> Vec<String> {
        let Some(items) = self.get(key, "an array of strings", Value::is_array).and_then(Value::as_array) else {
            return Vec::new();
        };
        if let Some(bad) = items.iter().find(|i| !i.is_string()) {
            self.wrong.push(WrongType { field: key, expected: "an array of strings", found: kind_of(bad) });
        }
        items.iter().filter_map(Value::as_str).map(str::to_owned).collect()
    }
}

/// Parses one ledger line into a trial; `Err` names what is wrong with the line
/// as a whole. A wrong-typed field reads as `None` and is listed in the second
/// value, so the reader can report it.
pub fn parse_trial_checked(line: &[u8]) -> Result<(TrialView, Vec<WrongType>), String> {
    if let Ok(l) = serde_json::from_slice::<StrictLine<'_>>(line) {
        let round = l.round.ok_or("no round")?;
        let (stage, accepted, reason) = match l.outcome {
            Some(o) => (o.stage.map(Cow::into_owned), o.accepted, o.refused.map(Cow::into_owned)),
            None => (None, None, None),
        };
        let trial = TrialView {
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
        };
        return Ok((trial, Vec::new()));
    }
    // The slow path: a wrong-typed field, a NaN, or not JSON at all.
    let v: Value = from_slice_lenient(line).map_err(|e| describe_error(&e))?;
    let obj = v.as_object().ok_or_else(|| format!("{}, not a JSON object", kind_of(&v)))?;
    let mut f = Fields::new(obj);
    let round = match obj.get("round") {
        None | Some(Value::Null) => return Err("no round".into()),
        Some(r) => r.as_u64().and_then(|n| u32::try_from(n).ok()).filter(|&n| n >= 1).ok_or_else(|| {
            format!("`round` is {}, not a whole number ≥ 1", if r.is_number() { "out of range" } else { kind_of(r) })
        })?,
    };
    let (stage, accepted, reason) = match obj.get("outcome") {
        None | Some(Value::Null) => (None, None, None),
        Some(Value::Object(o)) => {
            let mut of = Fields { obj: o, prefix: "", wrong: Vec::new() };
            let stage = of.string("stage");
            let accepted = of.bool("accepted");
            let refused = of.string("refused");
            f.wrong.extend(of.wrong.into_iter().map(|w| WrongType { field: outcome_field(w.field), ..w }));
            (stage, accepted, refused)
        }
        Some(other) => {
            f.wrong.push(WrongType { field: "outcome", expected: "an object", found: kind_of(other) });
            (None, None, None)
        }
    };
    let trial = TrialView {
        round,
        slot: f.u32("slot"),
        trial: f.string("trial"),
        attempt: f.u32("attempt"),
        t: f.f64("t"),
        train_ic: f.f64("train_ic"),
        max_abs_corr: f.f64("max_abs_corr"),
        coverage: f.f64("coverage"),
        monotonicity: f.f64("monotonicity"),
        t_threshold: f.f64("t_threshold"),
        tokens: f.u64("tokens"),
        stage,
        accepted,
        reason,
        factor: f.string("factor"),
        code: f.string("code"),
        parents: f.strings("parents"),
        operators: obj.get("graph").map(graph_operators).unwrap_or_default(),
    };
    Ok((trial, f.wrong))
}

/// The full name of a field of `outcome`.
fn outcome_field(key: &str) -> &'static str {
    match key {
        "stage" => "outcome.stage",
        "accepted" => "outcome.accepted",
        _ => "outcome.refused",
    }
}

/// Parses one ledger line into a trial; `Err` names what is wrong.
pub fn parse_trial(line: &[u8]) -> Result<TrialView, String> {
    parse_trial_checked(line).map(|(t, _)| t)
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
    /// `(line number, reason)` of lines that could not be read, and of fields
    /// that held the wrong type (read as null).
    pub problems: Vec<(usize, String)>,
    /// Complete lines consumed so far (blank ones included).
    pub lines: usize,
}

impl Incremental for LedgerState {
    fn lines_mut(&mut self) -> &mut usize {
        &mut self.lines
    }

    fn read_line(&mut self, n: usize, line: &[u8]) {
        match parse_trial_checked(line) {
            Ok((t, wrong)) => {
                self.problems.extend(wrong.iter().map(|w| (n, w.to_string())));
                self.add(t);
            }
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

/// Everything parsed from an events file so far, each line typed once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventsLog {
    /// How many events were read (each is digested, not kept).
    pub count: usize,
    /// What the readers need of them, kept up to date as lines are fed.
    pub digest: EventsDigest,
    pub problems: Vec<(usize, String)>,
    pub lines: usize,
}

impl Incremental for EventsLog {
    fn lines_mut(&mut self) -> &mut usize {
        &mut self.lines
    }

    fn read_line(&mut self, n: usize, line: &[u8]) {
        match from_slice_lenient::<Value>(line) {
            Ok(v) if v.is_object() => {
                self.problems.extend(event_wrong_types(&v).into_iter().map(|w| (n, w.to_string())));
                self.digest.add(&RunEvent::from_value(&v));
                self.count += 1;
            }
            Ok(_) => self.problems.push((n, "not a JSON object".into())),
            Err(e) => self.problems.push((n, describe_error(&e))),
        }
    }
}

/// The fields of an event line the readers use, and what each must be. A field
/// of another type reads as null wherever it is used; this lists them so the
/// run's problems say so.
const EVENT_FIELDS: [(&str, &str); 12] = [
    ("at", "a string"),
    ("event", "a string"),
    ("round", "a whole number"),
    ("call", "a whole number"),
    ("pid", "a whole number"),
    ("host", "a string"),
    ("tokens", "a whole number"),
    ("truncated", "a boolean"),
    ("phase", "a string"),
    ("reason", "a string"),
    ("slots", "an array"),
    ("settings", "an object"),
];

/// The known fields of an event line that hold the wrong type.
pub fn event_wrong_types(v: &Value) -> Vec<WrongType> {
    let Some(obj) = v.as_object() else { return Vec::new() };
    EVENT_FIELDS
        .iter()
        .filter_map(|&(field, expected)| {
            let v = obj.get(field)?;
            let ok = match expected {
                "a string" => v.is_string(),
                "a whole number" => v.is_u64(),
                "a boolean" => v.is_boolean(),
                "an array" => v.is_array(),
                _ => v.is_object(),
            };
            (!ok && !v.is_null()).then(|| WrongType { field, expected, found: kind_of(v) })
        })
        .collect()
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
        assert_eq!(t.accepted, None, "a missing outcome.accepted is not recorded, not false");
        assert_eq!(parse_trial(br#"{"slot":1}"#).unwrap_err(), "no round");
        assert!(parse_trial(b"{oops").unwrap_err().starts_with("line 1 column 2"));
    }

    #[test]
    fn wrong_typed_fields_are_reported_with_their_line_and_field() {
        let text = concat!(
            r#"{"round":1,"slot":1,"outcome":{"stage":"gate","accepted":true}}"#,
            "\n",
            r#"{"round":1,"slot":"two","t":"high","max_abs_corr":NaN,"parents":["a",3],"outcome":{"accepted":"yes"}}"#,
            "\n",
            r#"{"round":2,"outcome":"accepted"}"#,
            "\n",
        );
        let l = LedgerState::from_bytes(text.as_bytes());
        assert_eq!(l.trial_count(), 3, "wrong types degrade fields, not lines");
        let got: Vec<(usize, &str)> = l.problems.iter().map(|(n, r)| (*n, r.as_str())).collect();
        assert_eq!(
            got,
            [
                (2, "`outcome.accepted` is a string, not a boolean; read as null"),
                (2, "`slot` is a string, not a whole number; read as null"),
                (2, "`t` is a string, not a number; read as null"),
                (2, "`parents` is an integer, not an array of strings; read as null"),
                (3, "`outcome` is a string, not an object; read as null"),
            ]
        );
        let second = &l.rounds[0].trials[1];
        assert_eq!((second.accepted, second.slot, second.max_abs_corr), (None, None, None));
        assert_eq!(second.parents, ["a"]);
        assert_eq!(l.rounds[0].trials[0].accepted, Some(true));
        // NaN is a documented null, not a wrong type.
        assert!(!l.problems.iter().any(|(_, r)| r.contains("max_abs_corr")));
    }

    #[test]
    fn wrong_typed_event_fields_are_reported() {
        let e = EventsLog::from_bytes(
            b"{\"event\":\"call_start\",\"call\":\"7\",\"round\":2}\n{\"event\":\"stop\",\"reason\":null}\n",
        );
        assert_eq!(e.count, 2);
        assert_eq!(e.problems, [(1, "`call` is a string, not a whole number; read as null".to_owned())]);
    }

    #[test]
    fn the_events_digest_fed_in_pieces_equals_the_whole_file_read_at_once() {
        let text = concat!(
            "{\"event\":\"open\",\"host\":\"h\",\"pid\":1,\"settings\":{\"a\":1}}\n",
            "{\"event\":\"plan\",\"round\":1,\"slots\":[1,2]}\n",
            "{\"event\":\"call_start\",\"call\":1,\"round\":1,\"slots\":[1]}\n",
            "{\"event\":\"call_end\",\"call\":1,\"round\":1,\"tokens\":9}\n",
            "{\"event\":\"admission\",\"round\":1,\"t_threshold\":2.5}\n",
            "{\"event\":\"resume\",\"host\":\"h\",\"pid\":2}\n",
            "{\"event\":\"phase\",\"phase\":\"propose\",\"round\":2}\n",
            "{\"event\":\"stop\",\"reason\":\"done\"}\n",
        );
        let whole = EventsLog::from_bytes(text.as_bytes());
        for cut in [1, 40, 77, 150, 200, text.len() - 3] {
            let mut pieces = EventsLog::default();
            let mut offset = pieces.feed(&text.as_bytes()[..cut]);
            offset += pieces.feed(&text.as_bytes()[offset..]);
            assert_eq!(offset, text.len());
            assert_eq!(pieces, whole, "cut at {cut}");
        }
        let d = &whole.digest;
        assert_eq!(d.tail.stop_after_open, Some(Some("done".into())));
        assert!(d.plans[&1].1, "a resume came after round 1's plan");
        assert_eq!(d.since_open.max_round, Some(2));
        assert!(d.since_open.calls.is_empty(), "call 1 began before the resume");
        assert_eq!((d.calls[&1].tokens, d.thresholds[&1]), (Some(9), 2.5));
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
