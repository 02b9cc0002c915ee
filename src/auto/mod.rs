//! The autopilot's records: the state file (`auto/state.json`) and its event
//! log (`auto/log.jsonl`), see `docs/formats.md`.
//!
//! Loading never fails: a missing file is the default state; an empty,
//! damaged or non-object file is the default state and says why; a field that
//! is missing (an older format) takes its default, and a field of the wrong
//! shape is dropped to its default and named — the rest of the file is kept.
//! The next save writes the whole state.

pub mod events;
pub mod schedule;
pub mod settings;
pub mod tick;
pub mod view;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::Timestamp;

pub use events::{AutoEvent, BatchEnd, HoldReason, LogEvent};

pub const SCHEMA_VERSION: u32 = 1;
/// The events the state keeps a copy of (the log keeps them all).
pub const HISTORY_KEPT: usize = 50;

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    #[default]
    Off,
    On,
    /// Let the current batch end, launch nothing more, then off.
    Finishing,
}

impl Mode {
    /// `off`, `on` or `finishing`, as the state file and the pages say it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Off => "off",
            Self::On => "on",
            Self::Finishing => "finishing",
        }
    }

    /// The mode a word names, as [`Mode::word`] says it.
    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Off, Self::On, Self::Finishing].into_iter().find(|m| m.word() == word)
    }
}

/// Why auto mode is on but not launching, since when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hold {
    pub reason: HoldReason,
    /// The reason in words.
    #[serde(default)]
    pub words: String,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub since: Timestamp,
}

/// One batch the autopilot launched in its session, closed when it ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Iteration {
    #[serde(default)]
    pub unit: String,
    #[serde(default)]
    pub run_set: String,
    #[serde(default)]
    pub spec: String,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub cells: usize,
    #[serde(default, with = "crate::basics::timefmt::rfc3339::option")]
    pub launched_at: Option<Timestamp>,
    #[serde(default, with = "crate::basics::timefmt::rfc3339::option")]
    pub ended_at: Option<Timestamp>,
    /// How it ended, once it did.
    #[serde(default)]
    pub status: Option<BatchEnd>,
    #[serde(default)]
    pub cells_attempted: Option<usize>,
    #[serde(default)]
    pub passes: Option<usize>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Session {
    #[serde(default, with = "crate::basics::timefmt::rfc3339::option")]
    pub started_at: Option<Timestamp>,
    /// Filled in on load when an older file lacks it.
    #[serde(default)]
    pub iterations: Vec<Iteration>,
    #[serde(default)]
    pub ended_reason: Option<String>,
}

/// The batch the autopilot launched and is waiting for (on one lane).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Current {
    pub unit: String,
    pub label: String,
    pub spec: String,
    pub run_set: String,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub launched_at: Timestamp,
    #[serde(default)]
    pub backend: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default)]
    pub endpoint: Option<String>,
    #[serde(default)]
    pub request_preset: Option<String>,
    #[serde(default)]
    pub prompt_variant: Option<String>,
    #[serde(default)]
    pub retry_feedback: Option<bool>,
    #[serde(default)]
    pub cells: usize,
}

impl Current {
    /// The lane its route runs on (its endpoint, or `api:<model>`): where a
    /// serial batch sits too, should lanes be turned on.
    pub fn route_lane(&self) -> String {
        tick::lane_of(self.model.as_deref().unwrap_or(""), self.endpoint.as_deref())
    }
}

/// An endpoint quarantined after a failure, until `retry_at`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointFailure {
    /// Failures in a row (a batch that succeeds on it forgets them).
    pub failures: u32,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub retry_at: Timestamp,
    #[serde(default)]
    pub reason: String,
    /// The quarantine ended (`retry_at` passed): the next batch on it is a
    /// probe; another failure quarantines it longer (the circuit breaker).
    #[serde(default)]
    pub released: bool,
}

/// A paid model held back after a credit-like failure, until `until` (the
/// next UTC midnight).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CreditFlag {
    #[serde(default)]
    pub reason: String,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub until: Timestamp,
}

/// A run set whose publication stage failed: listed once, by run set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Backfill {
    pub run_set: String,
    #[serde(default)]
    pub stage: String,
    #[serde(default)]
    pub message: String,
}

/// How a lane's last batch ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneOutcome {
    pub unit: String,
    pub run_set: String,
    pub status: BatchEnd,
}

/// What the last tick decided, and when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Decision {
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub at: Timestamp,
    pub verdict: String,
}

/// `auto/state.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoState {
    pub schema_version: u32,
    #[serde(default)]
    pub mode: Mode,
    /// The operator's settings as saved — kept as written, so the Auto page
    /// shows (and `settings::validate` names) whatever they hold, a key the
    /// catalogue no longer knows included. Read them with
    /// [`AutoState::settings_read`].
    #[serde(default = "empty_object")]
    pub settings: Value,
    #[serde(default)]
    pub session: Session,
    #[serde(default)]
    pub current: Option<Current>,
    /// Per lane (endpoint name), with parallel lanes.
    #[serde(default)]
    pub currents: BTreeMap<String, Current>,
    /// Per lane: how its last batch ended.
    #[serde(default)]
    pub lane_outcomes: BTreeMap<String, LaneOutcome>,
    /// Per lane: when its last batch ended.
    #[serde(default, with = "crate::basics::timefmt::rfc3339::map")]
    pub lane_finished_at: BTreeMap<String, Timestamp>,
    #[serde(default)]
    pub endpoint_failures: BTreeMap<String, EndpointFailure>,
    #[serde(default, with = "crate::basics::timefmt::rfc3339::option")]
    pub last_batch_finished_at: Option<Timestamp>,
    #[serde(default)]
    pub credit_flags: BTreeMap<String, CreditFlag>,
    #[serde(default)]
    pub closeout_backfill: Vec<Backfill>,
    /// UTC day (`2026-12-01`) → model → batches launched.
    #[serde(default)]
    pub daily_launches: BTreeMap<String, BTreeMap<String, u32>>,
    #[serde(default)]
    pub last_decision: Option<Decision>,
    #[serde(default)]
    pub hold: Option<Hold>,
    /// The newest [`HISTORY_KEPT`] events (the log holds them all).
    #[serde(default)]
    pub history: Vec<LogEvent>,
}

fn empty_object() -> Value {
    Value::Object(Default::default())
}

impl Default for AutoState {
    fn default() -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            mode: Mode::Off,
            settings: empty_object(),
            session: Session::default(),
            current: None,
            currents: BTreeMap::new(),
            lane_outcomes: BTreeMap::new(),
            lane_finished_at: BTreeMap::new(),
            endpoint_failures: BTreeMap::new(),
            last_batch_finished_at: None,
            credit_flags: BTreeMap::new(),
            closeout_backfill: Vec::new(),
            daily_launches: BTreeMap::new(),
            last_decision: None,
            hold: None,
            history: Vec::new(),
        }
    }
}

/// A loaded state, and what was repaired to load it (empty: nothing).
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    pub state: AutoState,
    pub repaired: Vec<String>,
}

/// Loads the state file's bytes (`None`: no file). Never fails.
pub fn load(bytes: Option<&[u8]>) -> Loaded {
    let Some(bytes) = bytes else {
        return Loaded { state: AutoState::default(), repaired: Vec::new() };
    };
    let mut repaired = Vec::new();
    let mut obj = match crate::basics::json::from_slice_lenient::<Value>(bytes) {
        _ if bytes.iter().all(u8::is_ascii_whitespace) => {
            repaired.push("the file is empty; a default state is used".into());
            return Loaded { state: AutoState::default(), repaired };
        }
        Ok(Value::Object(m)) => m,
        Ok(other) => {
            let kind = match other {
                Value::Array(_) => "an array",
                Value::String(_) => "a string",
                Value::Number(_) => "a number",
                Value::Bool(_) => "a boolean",
                _ => "null",
            };
            repaired.push(format!("the file holds {kind}, not an object; a default state is used"));
            return Loaded { state: AutoState::default(), repaired };
        }
        Err(e) => {
            repaired.push(format!(
                "the file does not parse ({}); a default state is used",
                crate::basics::json::describe_error(&e)
            ));
            return Loaded { state: AutoState::default(), repaired };
        }
    };
    if obj.get("schema_version").and_then(Value::as_u64) != Some(u64::from(SCHEMA_VERSION)) {
        if obj.contains_key("schema_version") {
            repaired.push(format!("schema_version {} read as {SCHEMA_VERSION}", obj["schema_version"]));
        }
        obj.insert("schema_version".into(), Value::from(SCHEMA_VERSION));
    }
    // A field of the wrong shape is dropped to its default, one at a time,
    // named by the path serde stopped at, as deep as that path goes: a bad
    // `session.iterations` loses only the iterations, never `started_at`; a
    // bad iteration loses only itself. The rest is kept.
    for _ in 0..64 {
        match serde_path_to_error::deserialize::<_, AutoState>(Value::Object(obj.clone())) {
            Ok(state) => return Loaded { state, repaired },
            Err(e) => {
                let path = e.path().to_string();
                match remove_at(&mut obj, &path) {
                    Some(what) => repaired.push(format!("{path}: {}; {what}", e.into_inner())),
                    None => {
                        repaired.push(format!("{path}: {}; a default state is used", e.into_inner()));
                        return Loaded { state: AutoState::default(), repaired };
                    }
                }
            }
        }
    }
    Loaded { state: AutoState::default(), repaired }
}

/// Removes the value at `path` (serde_path_to_error's `a.b[3].c`) so it takes
/// its default; says what was done. A path that cannot be followed (a map key
/// holding `.` or `[`) removes its top-level field instead. `None` when not
/// even that exists.
fn remove_at(obj: &mut serde_json::Map<String, Value>, path: &str) -> Option<String> {
    #[derive(Debug)]
    enum Seg {
        Key(String),
        Index(usize),
    }
    let mut segs = Vec::new();
    for part in path.split('.') {
        let (key, rest) = part.split_once('[').map_or((part, ""), |(k, r)| (k, r));
        if !key.is_empty() {
            segs.push(Seg::Key(key.to_owned()));
        }
        for idx in rest.split('[').filter(|x| !x.is_empty()) {
            segs.push(Seg::Index(idx.trim_end_matches(']').parse().ok()?));
        }
    }
    let top = match segs.first() {
        Some(Seg::Key(k)) if k != "?" => k.clone(),
        _ => return None,
    };
    let whole =
        |obj: &mut serde_json::Map<String, Value>| obj.remove(&top).map(|_| format!("`{top}` read as its default"));
    let (last, parents) = segs.split_last()?;
    let mut at: &mut Value = obj.get_mut(&top)?;
    if parents.len() > 1 {
        for seg in &parents[1..] {
            let next = match (seg, at) {
                (Seg::Key(k), Value::Object(m)) => m.get_mut(k),
                (Seg::Index(i), Value::Array(a)) => a.get_mut(*i),
                _ => None,
            };
            match next {
                Some(v) => at = v,
                None => return whole(obj),
            }
        }
    } else if parents.is_empty() {
        return whole(obj);
    }
    let done = match (last, at) {
        (Seg::Key(k), Value::Object(m)) => m.remove(k).map(|_| format!("`{path}` read as its default")),
        (Seg::Index(i), Value::Array(a)) if *i < a.len() => {
            a.remove(*i);
            Some("that entry was dropped".to_owned())
        }
        _ => None,
    };
    match done {
        Some(d) => Some(d),
        None => whole(obj),
    }
}

/// Where one lane stands, from the state's records of it (its batch in
/// `current` or `currents`, its endpoint in `endpoint_failures`, its last end
/// in `lane_finished_at` and `lane_outcomes`): one enum, read in one place.
#[derive(Debug, Clone, PartialEq)]
pub enum Lane<'a> {
    /// Running the autopilot's batch (its current).
    Running(&'a Current),
    /// Its endpoint is quarantined until `until`, after `failures` failures in a row.
    Quarantined { until: Timestamp, failures: u32, reason: &'a str },
    /// Idle since its last batch ended (`None`: none ended on it), and how that ended.
    Idle { since: Option<Timestamp>, last: Option<&'a LaneOutcome> },
}

impl AutoState {
    /// The saved settings as [`settings::Settings`]: each key that is
    /// missing, unknown or of the wrong shape takes the default `Settings`
    /// owns (the checks, with every reason, are [`settings::validate`]).
    pub fn settings_read(&self) -> settings::Settings {
        crate::basics::json::object_lenient::<settings::Settings>(&self.settings, "settings").0.unwrap_or_default()
    }

    /// Where the lane `lane` (served by `endpoint`, if local) stands at `now`.
    /// A serial batch occupies the lane of its route.
    pub fn lane(&self, lane: &str, endpoint: Option<&str>, now: Timestamp) -> Lane<'_> {
        let serial = self.current.as_ref().filter(|c| c.route_lane() == lane);
        if let Some(c) = self.currents.get(lane).or(serial) {
            return Lane::Running(c);
        }
        if let Some(f) = endpoint.and_then(|e| self.endpoint_failures.get(e)).filter(|f| f.retry_at > now) {
            return Lane::Quarantined { until: f.retry_at, failures: f.failures, reason: &f.reason };
        }
        Lane::Idle { since: self.lane_finished_at.get(lane).copied(), last: self.lane_outcomes.get(lane) }
    }

    /// Keeps a copy of `event` in the history (the newest [`HISTORY_KEPT`]).
    /// Append it to the log first.
    pub fn remember(&mut self, event: LogEvent) {
        self.history.push(event);
        let excess = self.history.len().saturating_sub(HISTORY_KEPT);
        self.history.drain(..excess);
    }

    /// Auto mode off, the current work cleared (what a stop does), with the
    /// event to log. Returns whether it was on or finishing.
    pub fn turn_off(&mut self, reason: &str, now: Timestamp) -> (bool, LogEvent) {
        let was = self.mode;
        self.mode = Mode::Off;
        self.current = None;
        self.currents.clear();
        self.hold = None;
        self.session.ended_reason = Some(reason.to_owned());
        let event = LogEvent { at: now, event: AutoEvent::AutoOff { was, reason: Some(reason.to_owned()) } };
        (was != Mode::Off, event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_settings_are_read_with_the_defaults_settings_owns() {
        let mut st: AutoState = serde_json::from_value(serde_json::json!({"schema_version": 1})).unwrap();
        let fresh = st.settings_read();
        assert_eq!(fresh, settings::Settings::default());
        // A wrong shape and an unknown key fall back; the rest is read.
        st.settings = serde_json::json!({"parallel_lanes": true, "wait_minutes": "soon", "colour": 1});
        let read = st.settings_read();
        assert!(read.parallel_lanes);
        assert_eq!(read.wait_minutes, settings::Settings::default().wait_minutes);
        assert_eq!(read.hold_notify_minutes, 30.0);
    }

    #[test]
    fn whatever_the_file_holds_a_state_loads() {
        assert_eq!(load(None), Loaded { state: AutoState::default(), repaired: vec![] });
        for (bytes, why) in [
            (&b""[..], "empty"),
            (b"  \n", "empty"),
            (b"[1, 2]", "an array, not an object"),
            (b"\"on\"", "a string"),
            (b"{\"mode\": \"on\", \"sett", "does not parse"),
        ] {
            let l = load(Some(bytes));
            assert_eq!(l.state, AutoState::default(), "{bytes:?}");
            assert!(l.repaired[0].contains(why), "{bytes:?}: {:?}", l.repaired);
        }
    }

    #[test]
    fn an_older_or_partly_damaged_file_keeps_what_it_can() {
        // An older file: no schema_version, a session without iterations.
        let old =
            br#"{"mode": "on", "settings": {"wait_minutes": 5}, "session": {"started_at": "2026-09-01T00:00:00Z"}}"#;
        let l = load(Some(old));
        assert_eq!(l.state.mode, Mode::On);
        assert_eq!(l.state.settings["wait_minutes"], 5);
        assert!(l.state.session.iterations.is_empty());
        assert!(l.state.session.started_at.is_some());
        assert_eq!(l.state.schema_version, SCHEMA_VERSION);
        // Wrong shapes: each dropped to its default and named; the rest kept.
        let damaged = br#"{"schema_version": 1, "mode": "sideways", "hold": {"reason": "x"},
                           "credit_flags": {"gpt": {"until": "2026-12-02T00:00:00Z"}}, "history": 7}"#;
        let l = load(Some(damaged));
        assert_eq!(l.state.mode, Mode::Off);
        assert!(l.state.hold.is_none());
        assert_eq!(l.state.credit_flags.len(), 1, "kept");
        assert!(l.state.history.is_empty());
        // The hold twice: its unknown reason first, then the hold without one.
        assert_eq!(l.repaired.len(), 4, "{:?}", l.repaired);
        assert!(l.repaired.iter().any(|r| r.starts_with("hold.reason: unknown variant `x`")), "{:?}", l.repaired);
        assert!(l.repaired.iter().any(|r| r.starts_with("mode:")), "{:?}", l.repaired);
        // What loads saves whole and loads again the same.
        let text = serde_json::to_vec(&l.state).unwrap();
        assert_eq!(load(Some(&text)).state, l.state);
        assert!(load(Some(&text)).repaired.is_empty());
    }

    #[test]
    fn a_wrong_field_inside_the_session_loses_only_that_field() {
        let bad = br#"{"schema_version": 1, "mode": "on",
                       "session": {"started_at": "2026-11-30T08:00:00Z", "iterations": "many", "ended_reason": null}}"#;
        let l = load(Some(bad));
        assert_eq!(l.state.session.started_at, Some(Timestamp::parse_rfc3339("2026-11-30T08:00:00Z").unwrap()));
        assert!(l.state.session.iterations.is_empty());
        assert_eq!(l.state.mode, Mode::On);
        assert_eq!(l.repaired.len(), 1, "{:?}", l.repaired);
        assert!(l.repaired[0].starts_with("session.iterations:"), "{:?}", l.repaired);
        // Field by field inside an iteration too: the others and the session stay.
        let bad = br#"{"session": {"started_at": "2026-11-30T08:00:00Z", "iterations": [
                         {"unit": "rb-1", "run_set": "a", "spec": "s", "cells": 2},
                         {"unit": 7},
                         {"unit": "rb-3", "run_set": "c", "spec": "s", "cells": "x"}]}}"#;
        let l = load(Some(bad));
        let units: Vec<&str> = l.state.session.iterations.iter().map(|i| i.unit.as_str()).collect();
        assert!(l.state.session.started_at.is_some(), "{:?}", l.repaired);
        assert_eq!(units, ["rb-1", "", "rb-3"], "{:?}", l.repaired);
        assert_eq!(l.state.session.iterations[2].cells, 0, "the wrong-typed field alone took its default");
        assert_eq!(l.state.session.iterations[2].run_set, "c");
    }

    #[test]
    fn a_lane_is_running_quarantined_or_idle_since_its_last_end() {
        let now = Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap();
        let mut s = AutoState::default();
        assert_eq!(s.lane("gpu-a", Some("gpu-a"), now), Lane::Idle { since: None, last: None });
        let cur = Current {
            unit: "rb-1".into(),
            label: "auto-1".into(),
            spec: "s".into(),
            run_set: "rs".into(),
            launched_at: now,
            backend: None,
            model: Some("qwen".into()),
            endpoint: Some("gpu-a".into()),
            request_preset: None,
            prompt_variant: None,
            retry_feedback: None,
            cells: 2,
        };
        // A serial batch occupies its route's lane.
        s.current = Some(cur.clone());
        assert_eq!(s.lane("gpu-a", Some("gpu-a"), now), Lane::Running(&cur));
        assert!(matches!(s.lane("gpu-b", Some("gpu-b"), now), Lane::Idle { .. }));
        s.current = None;
        let later = Timestamp(now.0 + 60_000);
        s.endpoint_failures.insert(
            "gpu-a".into(),
            EndpointFailure { failures: 2, retry_at: later, reason: "its batch failed".into(), released: false },
        );
        s.lane_finished_at.insert("gpu-a".into(), now);
        assert_eq!(
            s.lane("gpu-a", Some("gpu-a"), now),
            Lane::Quarantined { until: later, failures: 2, reason: "its batch failed" }
        );
        // Once the quarantine's time has passed: idle since its last end.
        assert_eq!(s.lane("gpu-a", Some("gpu-a"), later), Lane::Idle { since: Some(now), last: None });
    }

    #[test]
    fn the_history_keeps_the_newest_fifty_and_a_stop_turns_auto_off() {
        let mut s = AutoState { mode: Mode::Finishing, ..AutoState::default() };
        for i in 0..60 {
            s.remember(LogEvent { at: Timestamp(i), event: AutoEvent::TickException { error: format!("e{i}") } });
        }
        assert_eq!(s.history.len(), HISTORY_KEPT);
        assert_eq!(s.history[0].event, AutoEvent::TickException { error: "e10".into() });
        let (was_on, ev) = s.turn_off("stop and abort by the operator", Timestamp(99));
        assert!(was_on);
        assert_eq!(
            (s.mode, ev.event),
            (
                Mode::Off,
                AutoEvent::AutoOff { was: Mode::Finishing, reason: Some("stop and abort by the operator".into()) }
            )
        );
    }
}
