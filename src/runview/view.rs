//! `RunView`: a read-only snapshot of one run, as its page shows it.
//!
//! [`read_view`] is pure: the adapter hands it the bytes of the run's files (and a
//! way to ask whether a process is alive on this host) and gets the view back.
//! Every part degrades on its own: a broken file or line becomes a [`Problem`]
//! with the reason, and the rest of the view is still shown.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::admission::{correlation_limit, round_thresholds, AdmissionLimits, RoundThreshold, ThresholdSource};
use super::events::{EventsDigest, SinceOpen};
use super::intraday::{is_intraday, session_operators};
use super::ledger::{EventsLog, LedgerState};
use super::memory::MemoryLog;
use super::plans::{plans, PlanView};
use super::records::StateFile;
use super::summary::{summarise, ListInputs, ProcessCheck, RunRow};
use crate::basics::json::{describe_error, from_slice_lenient};
use crate::Timestamp;

// The rows a run is read into live in `rows`, below every part that makes
// them; named here too, where the view's users have always found them.
pub use super::rows::{CallEvent, MemoryVersion, RoundTally, RoundView, TrialView};

/// The round being written now, replayed from the events since the last open.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct InProgress {
    pub round: u32,
    pub phase: Option<String>,
    /// The slots of its latest plan.
    pub slots: Vec<u32>,
    /// A pending trial per slot: the ledger shows none of this round until the
    /// state file counts it.
    pub pending: Vec<u32>,
    pub calls: Vec<CallEvent>,
}

/// One LLM call: read by its number from its own file (tokens, truncation and
/// reasoning are the provider's reply's); what it concerned only the events say.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CallView {
    pub call: u32,
    /// `calls/NNNN.json` as written (non-finite numbers as null).
    pub record: Value,
    /// Its round and slots, from the events; `None` for a run without events.
    pub concerned: Option<CallEvent>,
}

/// A part of the run that could not be read, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Problem {
    pub part: String,
    pub reason: String,
}

/// An accepted factor, from its trial's ledger line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AcceptedFactor {
    /// Its name as admission gave it, else its trial's.
    pub factor: String,
    pub round: u32,
    pub trial: Option<String>,
    pub t: Option<f64>,
    pub directed_t: Option<f64>,
    pub max_abs_corr: Option<f64>,
    /// The t threshold of its round, and where that was read.
    pub t_threshold: Option<f64>,
    pub threshold_source: Option<ThresholdSource>,
    pub intraday: bool,
    pub code: Option<String>,
}

/// What one written round holds, counted.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundCount {
    pub round: u32,
    pub attempts: usize,
    pub scored: usize,
    pub accepted: usize,
    pub tokens: u64,
}

/// Each written round counted, with its t threshold and its plan: the rounds
/// tab's own read (`GET /api/runs/{name}/rounds`). It grows with the run, so it
/// is not part of the view a live page polls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunRounds {
    pub round_counts: Vec<RoundCount>,
    pub plans: Vec<PlanView>,
    pub thresholds: Vec<RoundThreshold>,
}

/// A read-only snapshot of one run: its summary, the trials of its written
/// rounds, its accepted factors and its memory. The trials themselves are not
/// serialized (a run can hold millions): a page asks for them a page at a time
/// (`trials::trial_page`); the per-round counts, plans and thresholds
/// ([`RunRounds`]), the accepted factors, calls and memory versions likewise
/// travel on their own, so
/// what a live run's page polls costs the same at round 3 and at round 400.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunView {
    pub row: RunRow,
    /// `snapshot.json` → `settings`, as written.
    pub snapshot_settings: Value,
    /// Whether the run writes an events file (phase, calls and process come from it).
    pub has_events: bool,
    /// The settings the run was last opened with (its latest open/resume event).
    pub opened_with: Option<Value>,
    pub calls_total: u32,
    /// The calls of the round in progress: from the events, or for a run without
    /// events counted from the call files written since the state file.
    pub calls_in_progress: Option<u32>,
    pub tokens_total: u64,
    /// The written rounds (shared with the reader's cache, hence `Arc`).
    #[serde(skip)]
    pub rounds: Vec<Arc<RoundView>>,
    /// How many rounds are written (the length of `round_counts`).
    pub rounds_written: usize,
    /// Each written round counted; served with `plans` and `thresholds` by
    /// [`RunView::rounds_summary`], not with the view.
    #[serde(skip)]
    pub round_counts: Vec<RoundCount>,
    /// The accepted factors (grows with the run): its own read,
    /// `GET /api/runs/{name}/accepted`; the view carries their count.
    #[serde(skip)]
    pub accepted: Vec<AcceptedFactor>,
    pub accepted_count: usize,
    #[serde(skip)]
    pub plans: Vec<PlanView>,
    /// Each written round's t threshold.
    #[serde(skip)]
    pub thresholds: Vec<RoundThreshold>,
    pub correlation_limit: Option<f64>,
    pub admission_limits: AdmissionLimits,
    /// The run's session-aggregation operators (empty: no intraday dataset).
    pub session_operators: BTreeSet<String>,
    pub in_progress: Option<InProgress>,
    /// Every call, from the events. Like `rounds`, not serialized with the view
    /// (a long run makes thousands): asked for on their own.
    #[serde(skip)]
    pub calls: Vec<CallEvent>,
    /// Every memory version with its diff; asked for on their own, too. Shared
    /// with the reader's memory log, so a view re-made after a write costs no
    /// copy of the memory.
    #[serde(skip)]
    pub memory: Arc<Vec<MemoryVersion>>,
    /// How many memory versions there are.
    pub memory_versions: usize,
    pub problems: Vec<Problem>,
}

impl RunView {
    /// The view as it is served: without the parts that travel on their own
    /// (trials, calls, memory, per-round counts), so serving it copies none of
    /// them.
    pub fn header(&self) -> RunView {
        RunView {
            row: self.row.clone(),
            snapshot_settings: self.snapshot_settings.clone(),
            has_events: self.has_events,
            opened_with: self.opened_with.clone(),
            calls_total: self.calls_total,
            calls_in_progress: self.calls_in_progress,
            tokens_total: self.tokens_total,
            rounds: Vec::new(),
            rounds_written: self.rounds_written,
            round_counts: Vec::new(),
            accepted: Vec::new(),
            accepted_count: self.accepted_count,
            plans: Vec::new(),
            thresholds: Vec::new(),
            correlation_limit: self.correlation_limit,
            admission_limits: self.admission_limits,
            session_operators: self.session_operators.clone(),
            in_progress: self.in_progress.clone(),
            calls: Vec::new(),
            memory: Arc::default(),
            memory_versions: self.memory_versions,
            problems: self.problems.clone(),
        }
    }

    /// The per-round counts, plans and thresholds.
    /// Written rounds only: the round in progress (its plan, picked parents)
    /// is the view's `in_progress`, never a row of this table.
    pub fn rounds_summary(&self) -> RunRounds {
        let written = self.rounds_written as u32;
        RunRounds {
            round_counts: self.round_counts.clone(),
            plans: self.plans.iter().filter(|p| p.round <= written).cloned().collect(),
            thresholds: self.thresholds.iter().filter(|t| t.round <= written).cloned().collect(),
        }
    }
}

/// The run's files, as the adapter read them. `None`: the file does not exist;
/// `Err`: it exists but could not be read (the reason).
pub struct ViewInputs<'a> {
    pub name: String,
    pub path: String,
    pub snapshot: Result<&'a [u8], String>,
    pub state: Option<Result<&'a [u8], String>>,
    /// Parsed incrementally by the caller (see `ledger`).
    pub ledger: Option<Result<&'a LedgerState, String>>,
    pub events: Option<Result<&'a EventsLog, String>>,
    /// Numbers of the call files present.
    pub call_files: Vec<u32>,
    /// For a run without events: how many call files were written after the state
    /// file (the calls of the round in progress). `None` for a run with events.
    pub call_files_after_state: Option<u32>,
    /// The memory versions (`memory/round_NN.md`) as the reader keeps them.
    pub memory: &'a MemoryLog,
    /// Folders of the run that were not read, `(folder, reason)` (one leading
    /// outside the campaign root, say).
    pub folder_problems: Vec<(String, String)>,
    pub state_written: Option<Timestamp>,
    pub last_call_written: Option<Timestamp>,
    pub last_written: Option<Timestamp>,
    pub version: String,
}

fn problem(part: &str, reason: impl Into<String>) -> Problem {
    Problem { part: part.to_owned(), reason: reason.into() }
}

/// The round being written now, from the events since the last open: a round
/// a resume dropped left its events before that open. Only the calls begun
/// since then are its own — a call that began before a resume belongs to the
/// dropped round, even when it names the same round number.
fn round_in_progress(since: &SinceOpen, rounds_written: u32, calls: &BTreeMap<u32, CallEvent>) -> Option<InProgress> {
    let round = since.max_round?;
    if round <= rounds_written {
        return None;
    }
    let slots = since.plans.get(&round).cloned().unwrap_or_default();
    let calls = since.calls.iter().filter_map(|n| calls.get(n)).filter(|c| c.round == Some(round)).cloned().collect();
    Some(InProgress { round, phase: since.phases.get(&round).cloned(), pending: slots.clone(), slots, calls })
}

/// The accepted factors, each with its round's threshold: from each round's
/// tally, so this costs O(rounds + accepted), not O(trials).
fn accepted_factors(
    rounds: &[Arc<RoundView>],
    thresholds: &[RoundThreshold],
    session_ops: &BTreeSet<String>,
) -> Vec<AcceptedFactor> {
    rounds
        .iter()
        .zip(thresholds)
        .flat_map(|(r, th)| r.accepted().map(move |t| (t, th)))
        .map(|(t, th)| AcceptedFactor {
            factor: t.factor.clone().or_else(|| t.trial.clone()).unwrap_or_else(|| format!("round {}", t.round)),
            round: t.round,
            trial: t.trial.clone(),
            t: t.t,
            directed_t: t.directed_t(),
            max_abs_corr: t.max_abs_corr,
            t_threshold: th.t,
            threshold_source: th.source,
            intraday: is_intraday(t, session_ops),
            code: t.code.clone(),
        })
        .collect()
}

/// The events' digest as the reader made it, its unreadable lines (or the
/// whole file) said as problems; none without events.
fn events_digest<'a>(
    events: Option<&Result<&'a EventsLog, String>>,
    problems: &mut Vec<Problem>,
) -> Option<&'a EventsDigest> {
    match events? {
        Err(e) => {
            problems.push(problem("events.jsonl", e.clone()));
            None
        }
        Ok(log) => {
            for (line, reason) in &log.problems {
                problems.push(problem("events.jsonl", format!("line {line}: {reason}")));
            }
            Some(&log.digest)
        }
    }
}

/// The trials of the written rounds: the state bounds which ledger rounds
/// are read (rounds appended before the state caught up are not); the
/// ledger's unreadable lines said as problems.
fn written_rounds(
    ledger: Option<&Result<&LedgerState, String>>,
    rounds_written: u32,
    problems: &mut Vec<Problem>,
) -> Vec<Arc<RoundView>> {
    match ledger {
        None => Vec::new(),
        Some(Err(e)) => {
            problems.push(problem("ledger.jsonl", e.clone()));
            Vec::new()
        }
        Some(Ok(state)) => {
            for (line, reason) in &state.problems {
                problems.push(problem("ledger.jsonl", format!("line {line}: {reason}")));
            }
            state.rounds.iter().filter(|r| (1..=rounds_written).contains(&r.round)).cloned().collect()
        }
    }
}

/// Reads a view from the run's files. `probe(host, pid)` says what is known of
/// the process that opened the run last.
pub fn read_view(input: ViewInputs<'_>, probe: &dyn Fn(&str, u32) -> ProcessCheck) -> RunView {
    let mut problems = Vec::new();
    let snapshot: Result<Value, String> = input
        .snapshot
        .and_then(|b| from_slice_lenient(b).map_err(|e| describe_error(&e)))
        .map_err(|e| format!("snapshot.json: {e}"));
    let state: Option<Result<StateFile, String>> = input.state.map(|r| {
        r.and_then(|b| from_slice_lenient(b).map_err(|e| describe_error(&e))).map_err(|e| format!("state.json: {e}"))
    });
    let rounds_written = match &state {
        Some(Ok(s)) => s.rounds_written,
        _ => 0,
    };

    // Events: digested by the reader as it read them (each line once).
    let empty = EventsDigest::default();
    let events_present = input.events.is_some();
    let digest = events_digest(input.events.as_ref(), &mut problems).unwrap_or(&empty);
    let tail = &digest.tail;
    let process = match tail.last_open.as_ref().and_then(|o| Some((o.host.clone()?, o.pid?))) {
        Some((host, pid)) => probe(&host, pid),
        None => ProcessCheck::NotRecorded,
    };
    let row = summarise(ListInputs {
        name: input.name,
        path: input.path,
        snapshot: snapshot.clone().map(|v| serde_json::from_value(v).unwrap_or_default()),
        state: state.clone(),
        state_written: input.state_written,
        events: events_present.then(|| tail.clone()),
        last_call_written: input.last_call_written,
        process,
        last_written: input.last_written,
        version: input.version,
    });

    let calls: Vec<CallEvent> = digest.calls.values().cloned().collect();
    let tokens_total = calls.iter().filter_map(|c| c.tokens).sum();
    // Without events, the calls are counted from the call files.
    let calls_total = if events_present { calls.len() as u32 } else { input.call_files.len() as u32 };
    let in_progress =
        if digest.opened { round_in_progress(&digest.since_open, rounds_written, &digest.calls) } else { None };
    let opened_with = digest.opened_with.clone();

    let rounds = written_rounds(input.ledger.as_ref(), rounds_written, &mut problems);

    // Memory versions: compared once each, as the reader's log read them.
    for (round, reason) in input.memory.problems() {
        problems.push(problem(&format!("memory/round_{round:02}.md"), reason));
    }
    let memory = input.memory.versions().clone();
    for (folder, reason) in input.folder_problems {
        problems.push(problem(&folder, reason));
    }
    if let Err(e) = &snapshot {
        problems.insert(0, problem("snapshot.json", e.clone()));
    }
    if let Some(Err(e)) = &state {
        problems.insert(0, problem("state.json", e.clone()));
    }

    let thresholds = round_thresholds(&digest.thresholds, &rounds);
    let limit = correlation_limit(opened_with.as_ref(), &rounds);
    let session_ops = snapshot.as_ref().map(session_operators).unwrap_or_default();
    let accepted = accepted_factors(&rounds, &thresholds, &session_ops);
    let round_counts: Vec<RoundCount> = rounds
        .iter()
        .map(|r| RoundCount {
            round: r.round,
            attempts: r.trials.len(),
            scored: r.tally().scored,
            accepted: r.tally().accepted.len(),
            tokens: r.tally().tokens,
        })
        .collect();
    let plans = plans(events_present.then_some(&digest.plans), rounds_written, &rounds);

    RunView {
        row,
        snapshot_settings: snapshot.as_ref().ok().and_then(|s| s.get("settings").cloned()).unwrap_or(Value::Null),
        admission_limits: AdmissionLimits::from_opened_with(opened_with.as_ref()),
        has_events: events_present,
        opened_with,
        calls_total,
        calls_in_progress: if events_present {
            in_progress.as_ref().map(|p| p.calls.len() as u32)
        } else {
            input.call_files_after_state
        },
        tokens_total,
        rounds_written: round_counts.len(),
        accepted_count: accepted.len(),
        rounds,
        round_counts,
        accepted,
        plans,
        thresholds,
        correlation_limit: limit,
        session_operators: session_ops,
        in_progress: if events_present { in_progress } else { None },
        calls,
        memory_versions: memory.len(),
        memory,
        problems,
    }
}

#[cfg(test)]
mod tests {
    use super::super::ledger::Incremental;
    use super::*;

    fn inputs(state: &str, ledger: &str, events: Option<&str>) -> ViewInputs<'static> {
        let ledger: &'static LedgerState = Box::leak(Box::new(LedgerState::from_bytes(ledger.as_bytes())));
        let events: Option<&'static EventsLog> =
            events.map(|e| &*Box::leak(Box::new(EventsLog::from_bytes(e.as_bytes()))));
        let state: &'static str = Box::leak(state.to_owned().into_boxed_str());
        ViewInputs {
            name: "r".into(),
            path: "r".into(),
            snapshot: Ok(br#"{"schema_version":1,"settings":{"model":"qwen","rounds":5}}"#),
            state: Some(Ok(state.as_bytes())),
            ledger: Some(Ok(ledger)),
            events: events.map(Ok),
            call_files: vec![1, 2, 3],
            call_files_after_state: events.is_none().then_some(2),
            memory: Box::leak(Box::default()),
            folder_problems: Vec::new(),
            state_written: None,
            last_call_written: None,
            last_written: None,
            version: "v".into(),
        }
    }

    fn here(_: &str, pid: u32) -> ProcessCheck {
        ProcessCheck::Alive { host: "h".into(), pid }
    }

    const LEDGER: &str = r#"{"round":1,"slot":1,"t":2.9,"max_abs_corr":0.2,"outcome":{"stage":"admission","accepted":true}}
{"round":1,"slot":2,"t":NaN,"max_abs_corr":Infinity,"outcome":{"stage":"evaluator","refused":"coverage 0.41 below 0.80"}}
{"round":2,"slot":1,"t":1.0,"outcome":{"stage":"admission","refused":"t 1.00 below threshold 2.50"}}
{"round":3,"slot":1,"t":3."#;

    #[test]
    fn the_state_bounds_which_ledger_rounds_are_read() {
        let v = read_view(inputs(r#"{"rounds_written":1}"#, LEDGER, None), &here);
        assert_eq!(v.rounds.len(), 1, "round 2 is in the ledger but the state counts 1");
        let v = read_view(inputs(r#"{"rounds_written":2}"#, LEDGER, None), &here);
        assert_eq!(v.rounds.iter().map(|r| r.round).collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn a_torn_last_ledger_line_is_skipped_without_a_problem() {
        let v = read_view(inputs(r#"{"rounds_written":3}"#, LEDGER, None), &here);
        assert_eq!(v.rounds.len(), 2, "round 3 exists only as a torn line");
        assert!(v.problems.is_empty(), "{:?}", v.problems);
    }

    #[test]
    fn nan_and_infinity_read_as_none_so_the_view_is_strict_json() {
        let v = read_view(inputs(r#"{"rounds_written":1}"#, LEDGER, None), &here);
        let refused = &v.rounds[0].trials[1];
        assert_eq!((refused.t, refused.max_abs_corr), (None, None));
        assert_eq!(refused.reason.as_deref(), Some("coverage 0.41 below 0.80"));
        let text = serde_json::to_string(&v).unwrap();
        assert!(!text.contains("NaN") && !text.contains("Infinity"));
    }

    const EVENTS: &str = r#"{"at":"2026-11-30T09:00:00Z","event":"open","host":"h","pid":7,"settings":{"correlation_limit":0.7}}
{"event":"plan","round":1,"slots":[1,2]}
{"event":"call_start","call":1,"round":1,"slots":[1]}
{"event":"call_end","call":1,"round":1,"tokens":100,"truncated":false}
{"event":"plan","round":2,"slots":[1,2,3]}
{"event":"phase","phase":"propose","round":2}
{"event":"call_start","call":2,"round":2,"slots":[1],"purpose":"propose"}
{"event":"call_end","call":2,"round":2,"tokens":250,"truncated":true}
"#;

    #[test]
    fn the_round_in_progress_is_replayed_with_a_pending_trial_per_slot() {
        let v = read_view(inputs(r#"{"rounds_written":1}"#, LEDGER, Some(EVENTS)), &here);
        let p = v.in_progress.expect("round 2 in progress");
        assert_eq!(p.round, 2);
        assert_eq!(p.pending, [1, 2, 3]);
        assert_eq!(p.phase.as_deref(), Some("propose"));
        assert_eq!(p.calls.iter().map(|c| c.call).collect::<Vec<_>>(), [2]);
        assert_eq!((v.calls_total, v.tokens_total), (2, 350));
        assert_eq!(v.opened_with, Some(serde_json::json!({"correlation_limit": 0.7})));
        assert_eq!(v.calls[1].truncated, Some(true));
        assert_eq!(v.row.process, ProcessCheck::Alive { host: "h".into(), pid: 7 });
    }

    #[test]
    fn a_round_dropped_by_a_resume_is_not_in_progress() {
        // Round 2 was under way, then the run was resumed: round 2's events are
        // before the resume, and nothing since names a round past the state.
        let events = format!("{EVENTS}{{\"event\":\"resume\",\"host\":\"h\",\"pid\":8}}\n");
        let v = read_view(inputs(r#"{"rounds_written":1}"#, LEDGER, Some(&events)), &here);
        assert_eq!(v.in_progress, None);
    }

    #[test]
    fn calls_from_before_a_resume_are_not_in_the_round_in_progress() {
        // Round 2 was under way (call 2), the run was resumed, and round 2 is
        // being made again (call 3): only call 3 belongs to the round in progress.
        let events = format!(
            "{EVENTS}{{\"event\":\"resume\",\"host\":\"h\",\"pid\":8}}\n\
             {{\"event\":\"plan\",\"round\":2,\"slots\":[1]}}\n\
             {{\"event\":\"call_start\",\"call\":3,\"round\":2,\"slots\":[1]}}\n"
        );
        let v = read_view(inputs(r#"{"rounds_written":1}"#, LEDGER, Some(&events)), &here);
        let p = v.in_progress.expect("round 2 in progress again");
        assert_eq!(p.calls.iter().map(|c| c.call).collect::<Vec<_>>(), [3]);
        assert_eq!(v.calls_in_progress, Some(1));
        assert_eq!(v.calls_total, 3, "every call is still listed");
    }

    #[test]
    fn a_run_without_events_has_no_round_in_progress_and_counts_call_files() {
        let v = read_view(inputs(r#"{"rounds_written":1}"#, LEDGER, None), &here);
        assert_eq!(v.in_progress, None);
        assert_eq!(v.calls_total, 3);
        assert_eq!(v.calls_in_progress, Some(2), "the call files written since the state file");
        assert!(v.calls.is_empty());
        assert_eq!(v.row.phase, None);
    }

    #[test]
    fn a_broken_part_degrades_only_itself() {
        let mut i = inputs(
            r#"{"rounds_written":2}"#,
            "{\"round\":1}\nnot json\n{\"round\":2}\n",
            Some("{\"event\":\"open\"}\n{oops\n"),
        );
        i.memory = Box::leak(Box::new(MemoryLog::from_texts(vec![
            (2, Ok("a\nb\n".into())),
            (3, Err("not a regular file".into())),
            (4, Ok("a\nc\n".into())),
        ])));
        let v = read_view(i, &here);
        assert_eq!(v.rounds.len(), 2);
        let parts: Vec<(&str, &str)> = v.problems.iter().map(|p| (p.part.as_str(), p.reason.as_str())).collect();
        assert_eq!(parts.len(), 3, "{parts:?}");
        assert!(parts.contains(&("memory/round_03.md", "not a regular file")));
        assert!(parts.iter().any(|(p, r)| *p == "ledger.jsonl" && r.starts_with("line 2: ")));
        assert!(parts.iter().any(|(p, r)| *p == "events.jsonl" && r.starts_with("line 2: ")));
        // memory versions compare with the one before that could be read
        assert_eq!(v.memory.len(), 2);
        assert_eq!(v.memory[0].diff, None);
        assert!(v.memory[1].diff.as_ref().unwrap().contains(&crate::runview::diff::DiffLine::Added("c".into())));
    }

    #[test]
    fn an_unreadable_snapshot_is_a_problem_and_an_unreadable_row() {
        let mut i = inputs(r#"{"rounds_written":1}"#, LEDGER, None);
        i.snapshot = Ok(b"{\"settings\": ");
        let v = read_view(i, &here);
        assert_eq!(v.row.status.label(), "unreadable");
        assert!(v.problems[0].reason.starts_with("snapshot.json: line 1 column"), "{:?}", v.problems);
        assert_eq!(v.rounds.len(), 1, "the ledger still reads");
    }

    #[test]
    fn accepted_factors_say_their_rounds_threshold_and_whether_they_are_intraday() {
        let ledger = concat!(
            r#"{"round":1,"slot":1,"trial":"r01s1","t":3.0,"factor":"f1","graph":{"op":"rank","args":[{"op":"session_vwap"}]},"outcome":{"stage":"admission","accepted":true}}"#,
            "\n",
            r#"{"round":1,"slot":2,"trial":"r01s2","t":1.0,"outcome":{"stage":"admission","refused":"t 1.00 below threshold 2.50"}}"#,
            "\n",
            r#"{"round":2,"slot":1,"trial":"r02s1","t":-3.1,"train_ic":-0.02,"graph":{"op":"ts_mean"},"outcome":{"stage":"admission","accepted":true}}"#,
            "\n",
        );
        let mut i = inputs(r#"{"rounds_written":2}"#, ledger, None);
        i.snapshot = Ok(br#"{"settings":{},"datasets":[{"name":"bars_5m","intraday":true}],
            "operator_file":{"operators":[{"name":"session_vwap","class":"SessionAggregation"}]}}"#);
        let v = read_view(i, &here);
        let got: Vec<(&str, Option<f64>, bool, Option<f64>)> =
            v.accepted.iter().map(|a| (a.factor.as_str(), a.t_threshold, a.intraday, a.directed_t)).collect();
        assert_eq!(got, [("f1", Some(2.5), true, Some(3.0)), ("r02s1", Some(2.5), false, Some(3.1))]);
        assert_eq!(v.accepted[1].threshold_source, Some(ThresholdSource::CarriedOver));
        assert_eq!(v.round_counts.iter().map(|c| (c.attempts, c.accepted)).collect::<Vec<_>>(), [(2, 1), (1, 1)]);
        // The trials are not serialized with the view; their counts are.
        let json = serde_json::to_value(&v).unwrap();
        assert!(json.get("rounds").is_none() && json.get("round_counts").is_none());
        assert_eq!(json["rounds_written"], 2);
        let served = serde_json::to_value(v.rounds_summary()).unwrap();
        assert_eq!(served["round_counts"].as_array().unwrap().len(), 2);
    }
}
