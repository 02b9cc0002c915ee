//! `events.jsonl`, typed: each line is parsed once, when it is read, into a
//! [`RunEvent`]; every reader (the round in progress, calls, plans, admission
//! thresholds, the list's status) matches on the enum instead of poking at
//! JSON. A known field of the wrong type reads as `None` and is reported (see
//! `ledger::event_wrong_types`); kinds this build does not know are kept by
//! name, so a newer writer stays readable.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::plans::{plan_slots, PlanSlot};
use super::rows::CallEvent;
use crate::basics::json::from_slice_lenient;

/// One line of the events file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunEvent {
    /// When, as the writer wrote it (RFC 3339).
    pub at: Option<String>,
    pub kind: EventKind,
}

/// What happened, with the fields each kind carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum EventKind {
    /// The campaign started (`open`) or re-opened (`resume`) the run.
    Open { resumed: bool, host: Option<String>, pid: Option<u32>, settings: Option<Value> },
    /// The run stopped (finished, asked to stop, budget…).
    Stop { reason: Option<String> },
    /// The run entered a phase (`plan`, `propose`, `admit`, …).
    Phase { phase: Option<String>, round: Option<u32> },
    /// The plan of a round: a slot per pending trial, with the parents picked.
    Plan { round: Option<u32>, slots: Vec<PlanSlot> },
    /// An LLM call began.
    CallStart { call: Option<u32>, round: Option<u32>, slots: Vec<u32>, purpose: Option<String> },
    /// An LLM call ended.
    CallEnd { call: Option<u32>, round: Option<u32>, tokens: Option<u64>, truncated: Option<bool> },
    /// What admission judged a round by.
    Admission { round: Option<u32>, t_threshold: Option<f64>, correlation_limit: Option<f64> },
    /// A kind this build does not read (kept by name; `round` if it gives one).
    Other { name: String, round: Option<u32> },
}

fn u32_of(v: &Value, key: &str) -> Option<u32> {
    v.get(key)?.as_u64().and_then(|n| u32::try_from(n).ok())
}

fn str_of(v: &Value, key: &str) -> Option<String> {
    v.get(key)?.as_str().map(str::to_owned)
}

fn f64_of(v: &Value, key: &str) -> Option<f64> {
    v.get(key)?.as_f64().filter(|f| f.is_finite())
}

impl RunEvent {
    /// Reads one event line (already parsed as JSON; non-finite numbers as null).
    pub fn from_value(v: &Value) -> Self {
        let name = v.get("event").and_then(Value::as_str).unwrap_or("");
        let round = u32_of(v, "round");
        let kind = match name {
            "open" | "resume" => EventKind::Open {
                resumed: name == "resume",
                host: str_of(v, "host"),
                pid: u32_of(v, "pid"),
                settings: v.get("settings").filter(|s| s.is_object()).cloned(),
            },
            "stop" => EventKind::Stop { reason: str_of(v, "reason") },
            "phase" => EventKind::Phase { phase: str_of(v, "phase"), round },
            "plan" => EventKind::Plan { round, slots: plan_slots(v) },
            "call_start" => EventKind::CallStart {
                call: u32_of(v, "call"),
                round,
                slots: v
                    .get("slots")
                    .and_then(Value::as_array)
                    .map(|a| a.iter().filter_map(Value::as_u64).filter_map(|s| u32::try_from(s).ok()).collect())
                    .unwrap_or_default(),
                purpose: str_of(v, "purpose"),
            },
            "call_end" => EventKind::CallEnd {
                call: u32_of(v, "call"),
                round,
                tokens: v.get("tokens").and_then(Value::as_u64),
                truncated: v.get("truncated").and_then(Value::as_bool),
            },
            "admission" => EventKind::Admission {
                round,
                t_threshold: f64_of(v, "t_threshold"),
                correlation_limit: f64_of(v, "correlation_limit"),
            },
            other => EventKind::Other { name: other.to_owned(), round },
        };
        Self { at: str_of(v, "at"), kind }
    }

    /// The round it names, whatever its kind.
    pub fn round(&self) -> Option<u32> {
        match &self.kind {
            EventKind::Phase { round, .. }
            | EventKind::Plan { round, .. }
            | EventKind::CallStart { round, .. }
            | EventKind::CallEnd { round, .. }
            | EventKind::Admission { round, .. }
            | EventKind::Other { round, .. } => *round,
            EventKind::Open { .. } | EventKind::Stop { .. } => None,
        }
    }
}

/// What the readers need of the events, kept up to date one event at a time as
/// the file grows, so a view of a long run costs what was appended since the
/// last read, not a pass over every event.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EventsDigest {
    /// The latest open, a stop after it, the latest phase.
    pub tail: EventsTail,
    /// Every call, by number: what it concerned and its tokens.
    pub calls: BTreeMap<u32, CallEvent>,
    /// The settings of the latest open.
    pub opened_with: Option<Value>,
    /// The t threshold of each round's latest `admission` event.
    pub thresholds: BTreeMap<u32, f64>,
    /// Each round's latest plan, and whether a resume came after it.
    pub plans: BTreeMap<u32, (Vec<PlanSlot>, bool)>,
    /// What happened since the latest open (the round in progress).
    pub since_open: SinceOpen,
    /// Whether the run was ever opened.
    pub opened: bool,
}

/// The events since the latest open, digested.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SinceOpen {
    /// The highest round any event names.
    pub max_round: Option<u32>,
    /// Each round's latest plan: its slots.
    pub plans: BTreeMap<u32, Vec<u32>>,
    /// Each round's latest phase.
    pub phases: BTreeMap<u32, String>,
    /// The calls begun.
    pub calls: BTreeSet<u32>,
}

impl EventsDigest {
    pub fn from_events(events: &[RunEvent]) -> Self {
        let mut d = Self::default();
        events.iter().for_each(|e| d.add(e));
        d
    }

    /// Takes one more event into account (in file order).
    pub fn add(&mut self, ev: &RunEvent) {
        if let Some(r) = ev.round() {
            self.since_open.max_round = Some(self.since_open.max_round.map_or(r, |m| m.max(r)));
        }
        match &ev.kind {
            EventKind::Open { resumed, host, pid, settings } => {
                self.opened = true;
                self.tail.stop_after_open = None;
                self.tail.last_phase = None;
                self.tail.last_open = Some(Opened { host: host.clone(), pid: *pid });
                self.opened_with = settings.clone();
                self.since_open = SinceOpen::default();
                if *resumed {
                    self.plans.values_mut().for_each(|(_, resumed_since)| *resumed_since = true);
                }
            }
            EventKind::Stop { reason } => self.tail.stop_after_open = Some(reason.clone()),
            EventKind::Phase { phase: Some(p), round } => {
                self.tail.last_phase = Some(p.clone());
                if let Some(r) = round {
                    self.since_open.phases.insert(*r, p.clone());
                }
            }
            EventKind::Plan { round: Some(r), slots } => {
                self.plans.insert(*r, (slots.clone(), false));
                self.since_open.plans.insert(*r, slots.iter().map(|s| s.slot).collect());
            }
            EventKind::CallStart { call: Some(n), round, slots, purpose } => {
                let c = self.calls.entry(*n).or_insert_with(|| CallEvent::numbered(*n));
                c.round = *round;
                c.slots = slots.clone();
                c.purpose = purpose.clone();
                c.started_at = ev.at.clone();
                self.since_open.calls.insert(*n);
            }
            EventKind::CallEnd { call: Some(n), round, tokens, truncated } => {
                let c = self.calls.entry(*n).or_insert_with(|| CallEvent::numbered(*n));
                c.round = c.round.or(*round);
                c.tokens = *tokens;
                c.truncated = *truncated;
                c.ended_at = ev.at.clone();
            }
            EventKind::Admission { round: Some(r), t_threshold: Some(t), .. } => {
                self.thresholds.insert(*r, *t);
            }
            _ => {}
        }
    }
}

/// What the events file says, read from its end back to the latest open.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EventsTail {
    /// The latest `open` or `resume`: who opened the run, where.
    pub last_open: Option<Opened>,
    /// The reason of a `stop` after the latest open, if one came (`Some(None)`:
    /// a stop without a reason).
    pub stop_after_open: Option<Option<String>>,
    /// The latest phase entered (after the latest open).
    pub last_phase: Option<String>,
    /// Lines that could not be parsed (a broken line degrades nothing else).
    pub bad_lines: usize,
}

/// The process that opened the run, as its `open`/`resume` event says.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    pub host: Option<String>,
    pub pid: Option<u32>,
}

impl EventsTail {
    /// Digests complete lines given in file order. With a partial tail (lines
    /// before the latest open were not read) the result is the same as for the
    /// whole file, as long as the tail contains the latest open.
    pub fn from_lines<'a>(lines: impl IntoIterator<Item = &'a [u8]>) -> Self {
        let mut bad_lines = 0;
        let events: Vec<RunEvent> = lines
            .into_iter()
            .filter_map(|line| {
                let parsed = from_slice_lenient::<serde_json::Value>(line).ok().filter(|v| v.is_object());
                bad_lines += usize::from(parsed.is_none());
                parsed.map(|v| RunEvent::from_value(&v))
            })
            .collect();
        let mut tail = Self::from_events(&events);
        tail.bad_lines = bad_lines;
        tail
    }

    /// The same, from events already parsed.
    pub fn from_events(events: &[RunEvent]) -> Self {
        let mut tail = Self::default();
        for ev in events {
            match &ev.kind {
                EventKind::Open { host, pid, .. } => {
                    tail.stop_after_open = None;
                    tail.last_phase = None;
                    tail.last_open = Some(Opened { host: host.clone(), pid: *pid });
                }
                EventKind::Stop { reason } => tail.stop_after_open = Some(reason.clone()),
                EventKind::Phase { phase: Some(phase), .. } => tail.last_phase = Some(phase.clone()),
                _ => {}
            }
        }
        tail
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn every_kind_reads_its_fields_and_unknown_kinds_keep_their_name() {
        let ev = |v: Value| RunEvent::from_value(&v).kind;
        assert_eq!(
            ev(json!({"event": "resume", "host": "box", "pid": 7, "settings": {"a": 1}})),
            EventKind::Open { resumed: true, host: Some("box".into()), pid: Some(7), settings: Some(json!({"a": 1})) }
        );
        assert_eq!(
            ev(json!({"event": "call_start", "call": 3, "round": 2, "slots": [1, "x", 2], "purpose": "propose"})),
            EventKind::CallStart { call: Some(3), round: Some(2), slots: vec![1, 2], purpose: Some("propose".into()) }
        );
        assert_eq!(
            ev(json!({"event": "call_end", "call": "3", "tokens": 10})),
            EventKind::CallEnd { call: None, round: None, tokens: Some(10), truncated: None }
        );
        assert_eq!(
            ev(json!({"event": "admission", "round": 4, "t_threshold": 3.1})),
            EventKind::Admission { round: Some(4), t_threshold: Some(3.1), correlation_limit: None }
        );
        assert_eq!(
            ev(json!({"event": "lease", "round": 9})),
            EventKind::Other { name: "lease".into(), round: Some(9) }
        );
        let plan = ev(json!({"event": "plan", "round": 1, "slots": [{"slot": 1, "parents": ["a"]}, 3]}));
        let EventKind::Plan { slots, .. } = plan else { panic!() };
        assert_eq!(slots[0].picked.as_deref(), Some(&["a".to_owned()][..]));
        assert_eq!((slots[1].slot, slots[1].picked.is_none()), (3, true));
    }
}
