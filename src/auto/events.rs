//! The autopilot's event log as one closed enum: every kind of line
//! `auto/log.jsonl` holds, each with the fields of its `detail`. The tick, the
//! server's controls and the pages speak these variants, never event words;
//! `docs/formats.md` lists them (a test keeps the list and the enum alike).
//!
//! The file format is unchanged — one `{at, event, detail}` object per line —
//! and reading never fails: a line of a kind this version does not know (an
//! older or newer writer), or whose detail does not fit its kind, is kept as
//! [`AutoEvent::Unrecognised`] with its words and detail as written, shown
//! and saved back as it was.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::Mode;
use crate::drive::records::BatchStatus;
use crate::Timestamp;

/// Why auto mode is on but launches nothing (`hold.reason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldReason {
    /// Its own batch, or one it did not launch, is running (or cannot be read).
    BatchRunning,
    /// Its batch's state cannot be read.
    StateUnknown,
    /// A paused batch waits to be resumed or stopped.
    BatchPaused,
    /// Finishing: waiting for its batches to end.
    Finishing,
    /// The saved settings cannot be used.
    SettingsInvalid,
    /// The wait between batches.
    Waiting,
    /// No slot can be launched (every reason is in the words).
    NoEligibleSlot,
    /// Its last launch was refused.
    LaunchFailed,
    /// A day or campaign cap of `[budget]` is reached.
    BudgetReached,
}

impl HoldReason {
    pub const ALL: [Self; 9] = [
        Self::BatchRunning,
        Self::StateUnknown,
        Self::BatchPaused,
        Self::Finishing,
        Self::SettingsInvalid,
        Self::Waiting,
        Self::NoEligibleSlot,
        Self::LaunchFailed,
        Self::BudgetReached,
    ];

    /// The reason's code, as the state file writes it.
    pub fn word(self) -> &'static str {
        match self {
            Self::BatchRunning => "batch_running",
            Self::StateUnknown => "state_unknown",
            Self::BatchPaused => "batch_paused",
            Self::Finishing => "finishing",
            Self::SettingsInvalid => "settings_invalid",
            Self::Waiting => "waiting",
            Self::NoEligibleSlot => "no_eligible_slot",
            Self::LaunchFailed => "launch_failed",
            Self::BudgetReached => "budget_reached",
        }
    }
}

/// How one of the autopilot's batches ended: its batch outcome's status, or
/// `unit_failed` when its unit ended without writing one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BatchEnd {
    Outcome(BatchStatus),
    UnitFailed,
}

impl BatchEnd {
    pub fn word(self) -> &'static str {
        match self {
            Self::Outcome(s) => s.word(),
            Self::UnitFailed => "unit_failed",
        }
    }
}

impl Serialize for BatchEnd {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.word())
    }
}

impl<'de> Deserialize<'de> for BatchEnd {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let word = String::deserialize(d)?;
        if word == Self::UnitFailed.word() {
            return Ok(Self::UnitFailed);
        }
        BatchStatus::deserialize(serde::de::value::StrDeserializer::<D::Error>::new(&word)).map(Self::Outcome)
    }
}

/// One kind of event and its detail. Timestamps in a detail are RFC 3339.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", content = "detail", rename_all = "snake_case")]
pub enum AutoEvent {
    /// The operator turned auto mode on; `was` the mode before.
    AutoOn {
        was: Mode,
    },
    /// The operator set it to finish (let its batches end, then off).
    AutoFinishing {
        was: Mode,
    },
    /// Turned off: by the operator (or a stop), with why.
    AutoOff {
        was: Mode,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        reason: Option<String>,
    },
    /// Finishing, its last batch ended: auto mode is off.
    AutoFinished {},
    /// The operator saved settings; the detail is the settings object.
    SettingsSaved(Value),
    /// The state file had to be repaired to load (each repair in words).
    StateRepaired {
        repairs: Vec<String>,
    },
    /// A hold began (a hold that goes on is not logged again).
    Hold {
        reason: HoldReason,
        words: String,
    },
    /// A hold has lasted longer than `hold_notify_minutes` (once per hold).
    HoldLong {
        reason: HoldReason,
        words: String,
        #[serde(with = "crate::basics::timefmt::rfc3339")]
        since: Timestamp,
    },
    BatchLaunched {
        unit: String,
        run_set: String,
        spec: String,
        lane: String,
        model: String,
        endpoint: Option<String>,
        cells: usize,
        why: String,
    },
    LaunchFailed {
        lane: String,
        model: String,
        endpoint: Option<String>,
        reasons: Vec<String>,
    },
    BatchFinished {
        unit: String,
        run_set: String,
        lane: String,
        status: BatchEnd,
        cells_attempted: Option<usize>,
        passes: Option<usize>,
        /// Why its unit died, in words, when it did.
        failure: Option<String>,
    },
    /// A parallel lane's batch ended (after `batch_finished`).
    LaneFinished {
        lane: String,
        status: BatchEnd,
    },
    CreditFlagged {
        model: String,
        #[serde(with = "crate::basics::timefmt::rfc3339")]
        until: Timestamp,
        reason: String,
    },
    CreditExpired {
        model: String,
    },
    EndpointQuarantined {
        endpoint: String,
        lane: String,
        #[serde(with = "crate::basics::timefmt::rfc3339")]
        retry_at: Timestamp,
        failures: u32,
        reason: String,
    },
    EndpointReleased {
        endpoint: String,
    },
    EndpointRecovered {
        endpoint: String,
    },
    CloseoutDeferred {
        run_set: String,
        stage: String,
        message: String,
    },
    CloseoutResolved {},
    /// The notification hook failed for the event named `event`.
    NotifyFailed {
        event: String,
        why: String,
    },
    /// A tick failed or panicked; the loop went on.
    TickException {
        error: String,
    },
    /// A line this version does not know, kept as written.
    #[serde(skip)]
    Unrecognised {
        event: String,
        detail: Value,
    },
}

impl AutoEvent {
    /// The event's word (`batch_launched`, …), as the log writes it.
    pub fn kind(&self) -> &str {
        // Exhaustive: a new variant must name its word here (and in KINDS).
        match self {
            Self::AutoOn { .. } => "auto_on",
            Self::AutoFinishing { .. } => "auto_finishing",
            Self::AutoOff { .. } => "auto_off",
            Self::AutoFinished {} => "auto_finished",
            Self::SettingsSaved(_) => "settings_saved",
            Self::StateRepaired { .. } => "state_repaired",
            Self::Hold { .. } => "hold",
            Self::HoldLong { .. } => "hold_long",
            Self::BatchLaunched { .. } => "batch_launched",
            Self::LaunchFailed { .. } => "launch_failed",
            Self::BatchFinished { .. } => "batch_finished",
            Self::LaneFinished { .. } => "lane_finished",
            Self::CreditFlagged { .. } => "credit_flagged",
            Self::CreditExpired { .. } => "credit_expired",
            Self::EndpointQuarantined { .. } => "endpoint_quarantined",
            Self::EndpointReleased { .. } => "endpoint_released",
            Self::EndpointRecovered { .. } => "endpoint_recovered",
            Self::CloseoutDeferred { .. } => "closeout_deferred",
            Self::CloseoutResolved {} => "closeout_resolved",
            Self::NotifyFailed { .. } => "notify_failed",
            Self::TickException { .. } => "tick_exception",
            Self::Unrecognised { event, .. } => event,
        }
    }

    /// The event's detail, as the log writes it.
    pub fn detail(&self) -> Value {
        match self {
            Self::Unrecognised { detail, .. } => detail.clone(),
            known => match serde_json::to_value(known) {
                Ok(Value::Object(mut m)) => m.remove("detail").unwrap_or(Value::Object(Default::default())),
                _ => Value::Null,
            },
        }
    }

    /// The event in words, for people (the page's history, `runboard auto`).
    pub fn words(&self) -> String {
        let on_endpoint = |e: &Option<String>| e.as_deref().map(|e| format!(" on {e}")).unwrap_or_default();
        match self {
            Self::AutoOn { was } => format!("Auto mode turned on (was {}).", was.word()),
            Self::AutoFinishing { was } => {
                format!("Auto mode set to finish: its batches end, nothing new launches (was {}).", was.word())
            }
            Self::AutoOff { was, reason } => match reason {
                Some(r) => format!("Auto mode off (was {}): {r}.", was.word()),
                None => format!("Auto mode off (was {}).", was.word()),
            },
            Self::AutoFinished {} => "Finished: its last batch ended; auto mode is off.".into(),
            Self::SettingsSaved(_) => "Settings saved.".into(),
            Self::StateRepaired { repairs } => format!("The state file was repaired to load: {}.", repairs.join("; ")),
            Self::Hold { words, .. } => format!("Holds: {words}."),
            Self::HoldLong { words, since, .. } => format!("Still holding since {}: {words}.", since.to_display()),
            Self::BatchLaunched { run_set, model, endpoint, cells, why, .. } => {
                format!("Launched {run_set}: {cells} cell(s) of {model}{} — {why}.", on_endpoint(endpoint))
            }
            Self::LaunchFailed { model, endpoint, reasons, .. } => {
                format!("A launch of {model}{} was refused: {}.", on_endpoint(endpoint), reasons.join("; "))
            }
            Self::BatchFinished { run_set, status, cells_attempted, passes, failure, .. } => {
                let mut w = format!("{run_set} ended: {}", status.word().replace('_', " "));
                if let (Some(a), Some(p)) = (cells_attempted, passes) {
                    w += &format!(", {p} of {a} attempted cell(s) passed");
                }
                if let Some(f) = failure {
                    w += &format!(" ({f})");
                }
                w + "."
            }
            Self::LaneFinished { lane, status } => {
                format!("Lane {lane} is free ({}).", status.word().replace('_', " "))
            }
            Self::CreditFlagged { model, until, reason } => {
                format!("{model} is held back until {}: its route could not spend ({reason}).", until.to_display())
            }
            Self::CreditExpired { model } => format!("{model}'s credit flag expired."),
            Self::EndpointQuarantined { endpoint, retry_at, failures, reason, .. } => format!(
                "Endpoint {endpoint} quarantined until {} ({reason}; {failures} failure(s) in a row).",
                retry_at.to_display()
            ),
            Self::EndpointReleased { endpoint } => {
                format!("Endpoint {endpoint}'s quarantine ended: its next batch is the probe.")
            }
            Self::EndpointRecovered { endpoint } => {
                format!("Endpoint {endpoint} recovered: its failures are forgotten.")
            }
            Self::CloseoutDeferred { run_set, stage, message } => {
                format!("{run_set}: publication stage {stage} failed ({message}); listed for backfill.")
            }
            Self::CloseoutResolved {} => "A failed publication stage no longer fails.".into(),
            Self::NotifyFailed { event, why } => format!("Notifying {event} failed: {why}."),
            Self::TickException { error } => format!("A tick failed: {error}; the loop goes on."),
            Self::Unrecognised { event, detail } => format!("{event}: {detail}"),
        }
    }

    /// Whether the notification hook hears of it from the autopilot. Its
    /// launches and their ends are said as every batch's are
    /// (`crate::live::notice`), not twice.
    pub fn notified(&self) -> bool {
        matches!(
            self,
            Self::CreditFlagged { .. }
                | Self::LaneFinished { .. }
                | Self::HoldLong { .. }
                | Self::EndpointQuarantined { .. }
        )
    }

    /// The event of `event` with `detail`: its variant when the detail fits,
    /// otherwise kept as [`AutoEvent::Unrecognised`].
    pub fn from_parts(event: String, detail: Value) -> Self {
        // Kinds without fields were written with `{}`; an older writer's null fits too.
        let detail = if detail.is_null() { Value::Object(Default::default()) } else { detail };
        let tagged = serde_json::json!({ "event": event, "detail": detail });
        serde_json::from_value(tagged).unwrap_or(Self::Unrecognised { event, detail })
    }

    /// Every kind's word, as [`AutoEvent::kind`] says it (for the docs' list
    /// and its test).
    pub const KINDS: [&'static str; 21] = [
        "auto_on",
        "auto_finishing",
        "auto_off",
        "auto_finished",
        "settings_saved",
        "state_repaired",
        "hold",
        "hold_long",
        "batch_launched",
        "launch_failed",
        "batch_finished",
        "lane_finished",
        "credit_flagged",
        "credit_expired",
        "endpoint_quarantined",
        "endpoint_released",
        "endpoint_recovered",
        "closeout_deferred",
        "closeout_resolved",
        "notify_failed",
        "tick_exception",
    ];
}

/// One line of the event log, and of the state's history.
#[derive(Debug, Clone, PartialEq)]
pub struct LogEvent {
    pub at: Timestamp,
    pub event: AutoEvent,
}

/// A line as written: `{at, event, detail}`.
#[derive(Serialize, Deserialize)]
struct Line {
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    at: Timestamp,
    event: String,
    #[serde(default)]
    detail: Value,
}

impl Serialize for LogEvent {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        Line { at: self.at, event: self.event.kind().to_owned(), detail: self.event.detail() }.serialize(s)
    }
}

impl<'de> Deserialize<'de> for LogEvent {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let line = Line::deserialize(d)?;
        Ok(Self { at: line.at, event: AutoEvent::from_parts(line.event, line.detail) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at() -> Timestamp {
        Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()
    }

    #[test]
    fn a_line_reads_as_its_variant_and_writes_back_the_same() {
        let lines = [
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "hold", "detail": {"reason": "waiting", "words": "waiting 5 min"}}),
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "batch_finished", "detail": {"unit": "rb-1", "run_set": "a",
                   "lane": "serial", "status": "unit_failed", "cells_attempted": null, "passes": null, "failure": "killed"}}),
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "lane_finished", "detail": {"lane": "gpu-a", "status": "completed_with_failures"}}),
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "auto_finished", "detail": {}}),
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "settings_saved", "detail": {"models": ["m"]}}),
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "credit_flagged", "detail": {"model": "gpt",
                   "until": "2026-12-02T00:00:00.000Z", "reason": "402"}}),
        ];
        for line in lines {
            let e: LogEvent = serde_json::from_value(line.clone()).unwrap();
            assert!(!matches!(e.event, AutoEvent::Unrecognised { .. }), "{line}");
            assert_eq!(serde_json::to_value(&e).unwrap(), line);
        }
        let e: LogEvent = serde_json::from_value(lines_kind("lane_finished")).unwrap();
        assert_eq!(
            e.event,
            AutoEvent::LaneFinished { lane: "gpu-a".into(), status: BatchEnd::Outcome(BatchStatus::Completed) }
        );
        assert_eq!(e.event.kind(), "lane_finished");
    }

    fn lines_kind(kind: &str) -> Value {
        json!({"at": "2026-12-01T10:00:00Z", "event": kind, "detail": {"lane": "gpu-a", "status": "completed"}})
    }

    #[test]
    fn an_unknown_kind_or_a_detail_that_does_not_fit_is_kept_as_written() {
        for line in [
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "lane_paused", "detail": {"lane": "x"}}),
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "hold", "detail": {"reason": "sideways", "words": "?"}}),
            json!({"at": "2026-12-01T10:00:00.000Z", "event": "batch_finished", "detail": 7}),
        ] {
            let e: LogEvent = serde_json::from_value(line.clone()).unwrap();
            assert!(matches!(e.event, AutoEvent::Unrecognised { .. }), "{line}");
            assert_eq!(e.event.kind(), line["event"].as_str().unwrap());
            assert_eq!(serde_json::to_value(&e).unwrap(), line, "saved back as written");
        }
        // A line without a detail (an older writer) reads, as an empty one.
        let e: LogEvent =
            serde_json::from_value(json!({"at": "2026-12-01T10:00:00Z", "event": "closeout_resolved"})).unwrap();
        assert_eq!((e.at, e.event), (at(), AutoEvent::CloseoutResolved {}));
    }

    /// One of each variant: its serde word is its `kind()`, listed in KINDS.
    fn one_of_each() -> Vec<AutoEvent> {
        let s = || "x".to_owned();
        let end = BatchEnd::Outcome(BatchStatus::Completed);
        vec![
            AutoEvent::AutoOn { was: Mode::Off },
            AutoEvent::AutoFinishing { was: Mode::On },
            AutoEvent::AutoOff { was: Mode::On, reason: None },
            AutoEvent::AutoFinished {},
            AutoEvent::SettingsSaved(json!({})),
            AutoEvent::StateRepaired { repairs: vec![] },
            AutoEvent::Hold { reason: HoldReason::Waiting, words: s() },
            AutoEvent::HoldLong { reason: HoldReason::Waiting, words: s(), since: at() },
            AutoEvent::BatchLaunched {
                unit: s(),
                run_set: s(),
                spec: s(),
                lane: s(),
                model: s(),
                endpoint: None,
                cells: 1,
                why: s(),
            },
            AutoEvent::LaunchFailed { lane: s(), model: s(), endpoint: None, reasons: vec![] },
            AutoEvent::BatchFinished {
                unit: s(),
                run_set: s(),
                lane: s(),
                status: end,
                cells_attempted: None,
                passes: None,
                failure: None,
            },
            AutoEvent::LaneFinished { lane: s(), status: end },
            AutoEvent::CreditFlagged { model: s(), until: at(), reason: s() },
            AutoEvent::CreditExpired { model: s() },
            AutoEvent::EndpointQuarantined { endpoint: s(), lane: s(), retry_at: at(), failures: 1, reason: s() },
            AutoEvent::EndpointReleased { endpoint: s() },
            AutoEvent::EndpointRecovered { endpoint: s() },
            AutoEvent::CloseoutDeferred { run_set: s(), stage: s(), message: s() },
            AutoEvent::CloseoutResolved {},
            AutoEvent::NotifyFailed { event: s(), why: s() },
            AutoEvent::TickException { error: s() },
        ]
    }

    #[test]
    fn every_kind_is_listed_once_and_is_its_variants_word() {
        let all = one_of_each();
        assert_eq!(all.len(), AutoEvent::KINDS.len());
        for e in all {
            let line = serde_json::to_value(LogEvent { at: at(), event: e.clone() }).unwrap();
            assert_eq!(line["event"], e.kind());
            assert!(AutoEvent::KINDS.contains(&e.kind()), "{} is not in KINDS", e.kind());
            assert!(e.words().ends_with('.') && e.words().len() > 5, "{}: {}", e.kind(), e.words());
            let back: LogEvent = serde_json::from_value(line).unwrap();
            assert_eq!(back.event, e, "round trip");
        }
        let mut kinds = AutoEvent::KINDS.to_vec();
        kinds.sort_unstable();
        kinds.dedup();
        assert_eq!(kinds.len(), AutoEvent::KINDS.len(), "a kind listed twice");
    }
}
