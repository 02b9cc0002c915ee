//! What the run list shows of a run (the run list's row), and the rules that
//! decide a run's status from what its files say.
//!
//! The list reads of each run only what it shows: the snapshot, the state file,
//! and the tail of the events file back to the latest open. The adapter gathers
//! those into [`ListInputs`]; [`summarise`] decides.

use serde::{Deserialize, Serialize};

// The events file's digest lives with the events; named here too, where the
// list's users find it.
pub use super::events::{EventsTail, Opened};
use super::records::{Snapshot, StateFile};
use crate::Timestamp;

/// Where a run stands, as the list shows it. Each variant carries its evidence.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum RunStatus {
    /// Snapshot written, no round state yet: the campaign has just started.
    Starting,
    /// Opened and not stopped since; its process is alive or lives on another host.
    Running,
    /// A stop follows the latest open (with events), or the state recorded a stop
    /// after the latest open and no call ended since (without events).
    Stopped { reason: Option<String> },
    /// Stopped with every planned round written (`rounds_written` ≥ the
    /// snapshot's `settings.rounds`): it ran to its end.
    Finished { reason: Option<String> },
    /// Opened on this host by a process that no longer exists, with no stop
    /// recorded: it crashed or was killed.
    Interrupted { pid: u32 },
    /// Its files cannot be read; the reason names the file and the error.
    Unreadable { reason: String },
}

impl RunStatus {
    /// One word for filters and CSS classes.
    pub fn label(&self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Stopped { .. } => "stopped",
            Self::Finished { .. } => "finished",
            Self::Interrupted { .. } => "interrupted",
            Self::Unreadable { .. } => "unreadable",
        }
    }

    /// The status in words, reason included: a status is never only a colour.
    pub fn describe(&self) -> String {
        match self {
            Self::Starting => "starting: no round written yet".to_owned(),
            Self::Running => "running".to_owned(),
            Self::Stopped { reason: Some(r) } => format!("stopped: {r}"),
            Self::Stopped { reason: None } => "stopped".to_owned(),
            Self::Finished { reason: Some(r) } => format!("finished: every planned round written ({r})"),
            Self::Finished { reason: None } => "finished: every planned round written".to_owned(),
            Self::Interrupted { pid } => {
                format!("interrupted: process {pid} is gone and no stop was recorded")
            }
            Self::Unreadable { reason } => format!("unreadable: {reason}"),
        }
    }
}

/// The process that opened the run last, as far as it can be checked from here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum ProcessCheck {
    /// The run's events name no process.
    NotRecorded,
    /// On this host, and alive.
    Alive { host: String, pid: u32 },
    /// On this host, and gone.
    Gone { host: String, pid: u32 },
    /// On another host: unknown, never "gone".
    OtherHost { host: String, pid: u32 },
}

/// Everything [`summarise`] needs, gathered by the adapter.
#[derive(Debug, Clone)]
pub struct ListInputs {
    /// The directory's name: what `find_run` looks up.
    pub name: String,
    /// Relative to the campaign root, `/`-separated.
    pub path: String,
    /// `Err` holds the reason, naming the file.
    pub snapshot: Result<Snapshot, String>,
    /// `None` while the state file is not written.
    pub state: Option<Result<StateFile, String>>,
    /// When the state file was last modified.
    pub state_written: Option<Timestamp>,
    /// `None` when the run writes no events file.
    pub events: Option<EventsTail>,
    /// When the newest call file was last modified (read only without events).
    pub last_call_written: Option<Timestamp>,
    pub process: ProcessCheck,
    /// The newest modification time among the run's files.
    pub last_written: Option<Timestamp>,
    pub version: String,
}

/// One row of the run list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRow {
    pub name: String,
    pub path: String,
    pub last_written: Option<Timestamp>,
    pub status: RunStatus,
    /// The status in words.
    pub status_text: String,
    pub rounds_written: Option<u32>,
    pub rounds_planned: Option<u32>,
    pub phase: Option<String>,
    pub model: Option<String>,
    pub process: ProcessCheck,
    pub version: String,
}

/// The run list: rows latest written first, the folders the scan could not enter
/// (with why), and a version that changes when any run writes, appears or goes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunList {
    pub runs: Vec<RunRow>,
    pub skipped: Vec<SkippedFolder>,
    pub version: String,
    /// The server's clock when the list was made, for "3 min ago".
    pub generated_at: Timestamp,
    /// Set only just after a server starts: the rows come from the list the
    /// server saved before (its list cache), written at this time, while one
    /// walk checks every run against its files. Rows may be out of date until
    /// it ends; the version then changes (even when no row did), and this is
    /// `None` from then on.
    #[serde(default)]
    pub from_cache: Option<Timestamp>,
}

/// A folder under the root that the scan could not enter, and why.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SkippedFolder {
    pub path: String,
    pub reason: String,
}

/// Decides a run's row from what its files say.
pub fn summarise(input: ListInputs) -> RunRow {
    let ListInputs {
        name,
        path,
        snapshot,
        state,
        state_written,
        events,
        last_call_written,
        process,
        last_written,
        version,
    } = input;
    let mut row = RunRow {
        name,
        path,
        last_written,
        status: RunStatus::Starting,
        status_text: String::new(),
        rounds_written: None,
        rounds_planned: None,
        phase: None,
        model: None,
        process: process.clone(),
        version,
    };
    let snapshot = match snapshot {
        Ok(s) => s,
        Err(reason) => return row.with_status(RunStatus::Unreadable { reason }),
    };
    row.rounds_planned = snapshot.settings.rounds;
    row.model = snapshot.settings.model.clone();
    let state = match state {
        None => None,
        Some(Ok(s)) => Some(s),
        Some(Err(reason)) => return row.with_status(RunStatus::Unreadable { reason }),
    };
    row.rounds_written = state.as_ref().map(|s| s.rounds_written);

    let status = match &events {
        Some(ev) => {
            let status = status_with_events(ev, &process, state.is_some());
            // A phase describes a run in progress; a stopped run has none.
            if !matches!(status, RunStatus::Stopped { .. }) {
                row.phase = ev.last_phase.clone();
            }
            status
        }
        None => status_without_events(state.as_ref(), state_written, last_call_written),
    };
    // A stop after the last planned round is the run's end, not an interruption
    // of it: "finished", a word and colour of its own.
    let status = match status {
        RunStatus::Stopped { reason }
            if row.rounds_planned.is_some_and(|p| row.rounds_written.is_some_and(|w| w >= p)) =>
        {
            RunStatus::Finished { reason }
        }
        other => other,
    };
    let mut row = row.with_status(status);
    if row.status == RunStatus::Running {
        // Say where it runs: "alive" is only ever claimed for this host.
        row.status_text = match &process {
            ProcessCheck::Alive { pid, .. } => format!("running: process {pid} is alive"),
            ProcessCheck::OtherHost { host, pid } => {
                format!("running on {host} (process {pid}; not checked from here)")
            }
            _ => "running".to_owned(),
        };
    }
    row
}

/// With events, a stop counts only when a stop event follows the latest open.
fn status_with_events(ev: &EventsTail, process: &ProcessCheck, has_state: bool) -> RunStatus {
    if let Some(reason) = &ev.stop_after_open {
        return RunStatus::Stopped { reason: reason.clone() };
    }
    if ev.last_open.is_none() && !has_state {
        return RunStatus::Starting;
    }
    match process {
        ProcessCheck::Gone { pid, .. } => RunStatus::Interrupted { pid: *pid },
        _ if !has_state => RunStatus::Starting,
        _ => RunStatus::Running,
    }
}

/// Without events, a stop counts only when the state file was written after the
/// run's latest open and no LLM call ended after it: a resumed run that has asked
/// the LLM since, or has written no state since it was opened, has not stopped.
fn status_without_events(
    state: Option<&StateFile>,
    state_written: Option<Timestamp>,
    last_call_written: Option<Timestamp>,
) -> RunStatus {
    let Some(state) = state else {
        return RunStatus::Starting;
    };
    let Some(stop) = &state.last_stop else {
        return RunStatus::Running;
    };
    let written = state.updated_at().or(state_written);
    let written_after_open = match (written, state.opened_at()) {
        (Some(w), Some(o)) => w > o,
        // No open recorded: the stop is the only evidence there is.
        (Some(_), None) => true,
        (None, _) => false,
    };
    let call_after_state = match (last_call_written, state_written.or(written)) {
        (Some(c), Some(w)) => c > w,
        _ => false,
    };
    if written_after_open && !call_after_state {
        RunStatus::Stopped { reason: stop.reason.clone() }
    } else {
        RunStatus::Running
    }
}

impl RunRow {
    fn with_status(mut self, status: RunStatus) -> Self {
        self.status_text = status.describe();
        self.status = status;
        self
    }
}

/// Orders rows latest written first; rows never written (unreadable ones may be)
/// go last; ties by path so the order is stable.
pub fn sort_latest_first(rows: &mut [RunRow]) {
    rows.sort_by(|a, b| b.last_written.cmp(&a.last_written).then_with(|| a.path.cmp(&b.path)));
}

#[cfg(test)]
mod tests {
    use super::super::records::Stop;
    use super::*;

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    fn inputs() -> ListInputs {
        ListInputs {
            name: "r".into(),
            path: "runs/r".into(),
            snapshot: Ok(Snapshot::default()),
            state: None,
            state_written: None,
            events: None,
            last_call_written: None,
            process: ProcessCheck::NotRecorded,
            last_written: None,
            version: "v".into(),
        }
    }

    fn lines(text: &str) -> EventsTail {
        EventsTail::from_lines(text.lines().map(str::as_bytes))
    }

    fn state(opened: &str, updated: &str, stop: bool) -> StateFile {
        StateFile {
            rounds_written: 2,
            opened_at: Some(opened.into()),
            updated_at: Some(updated.into()),
            last_stop: stop.then(|| Stop { at: Some(updated.into()), reason: Some("budget".into()) }),
            ..StateFile::default()
        }
    }

    #[test]
    fn stop_with_events_counts_only_after_the_latest_open() {
        let stopped = lines(
            r#"{"event":"open","host":"h","pid":1}
{"event":"phase","phase":"evaluate"}
{"event":"stop","reason":"done"}"#,
        );
        assert_eq!(stopped.stop_after_open, Some(Some("done".to_owned())));
        let resumed = lines(
            r#"{"event":"open","host":"h","pid":1}
{"event":"stop","reason":"done"}
{"event":"resume","host":"h","pid":2}
{"event":"phase","phase":"propose"}"#,
        );
        assert_eq!(resumed.stop_after_open, None);
        assert_eq!(resumed.last_phase.as_deref(), Some("propose"));
        assert_eq!(resumed.last_open.as_ref().unwrap().pid, Some(2));
    }

    #[test]
    fn status_table_with_events() {
        let alive = ProcessCheck::Alive { host: "h".into(), pid: 2 };
        let gone = ProcessCheck::Gone { host: "h".into(), pid: 2 };
        let elsewhere = ProcessCheck::OtherHost { host: "x".into(), pid: 2 };
        let open = r#"{"event":"open","host":"h","pid":2}"#;
        let stop = "{\"event\":\"open\"}\n{\"event\":\"stop\",\"reason\":\"finished\"}";
        let cases: Vec<(&str, ProcessCheck, bool, RunStatus)> = vec![
            (open, alive.clone(), true, RunStatus::Running),
            (open, gone.clone(), true, RunStatus::Interrupted { pid: 2 }),
            (open, elsewhere.clone(), true, RunStatus::Running),
            (open, alive, false, RunStatus::Starting),
            (open, gone, false, RunStatus::Interrupted { pid: 2 }),
            (stop, elsewhere, true, RunStatus::Stopped { reason: Some("finished".into()) }),
            ("", ProcessCheck::NotRecorded, false, RunStatus::Starting),
        ];
        for (text, process, has_state, want) in cases {
            let mut i = inputs();
            i.events = Some(lines(text));
            i.process = process.clone();
            if has_state {
                i.state = Some(Ok(StateFile::default()));
            }
            assert_eq!(summarise(i).status, want, "{text} / {process:?} / state {has_state}");
        }
    }

    #[test]
    fn a_stop_after_every_planned_round_is_finished_not_stopped() {
        let stop = "{\"event\":\"open\"}\n{\"event\":\"stop\",\"reason\":\"done\"}";
        for (written, want) in [(3, "finished"), (2, "stopped")] {
            let mut i = inputs();
            let mut snap = Snapshot::default();
            snap.settings.rounds = Some(3);
            i.snapshot = Ok(snap);
            i.events = Some(lines(stop));
            i.state = Some(Ok(StateFile { rounds_written: written, ..StateFile::default() }));
            let row = summarise(i);
            assert_eq!(row.status.label(), want, "{written} of 3 rounds");
            if want == "finished" {
                assert_eq!(row.status_text, "finished: every planned round written (done)");
            }
        }
    }

    #[test]
    fn stop_without_events_follows_the_seed() {
        let t0 = "2026-11-30T09:00:00Z";
        let t1 = "2026-11-30T09:10:00Z";
        let t2 = "2026-11-30T09:20:00Z";
        let stopped = RunStatus::Stopped { reason: Some("budget".into()) };
        // (state, state mtime, newest call, expected)
        let cases = [
            (state(t0, t1, true), t1, None, stopped.clone()),
            // an LLM call ended after the state was written: not stopped
            (state(t0, t1, true), t1, Some(t2), RunStatus::Running),
            // resumed, no state written since the open: the old stop does not count
            (state(t1, t1, true), t1, None, RunStatus::Running),
            (state(t2, t1, true), t1, None, RunStatus::Running),
            (state(t0, t1, false), t1, None, RunStatus::Running),
        ];
        for (st, written, call, want) in cases {
            let mut i = inputs();
            i.state = Some(Ok(st.clone()));
            i.state_written = Some(ts(written));
            i.last_call_written = call.map(ts);
            assert_eq!(summarise(i).status, want, "{st:?} call {call:?}");
        }
        assert_eq!(summarise(inputs()).status, RunStatus::Starting);
    }

    #[test]
    fn an_unreadable_file_becomes_the_reason() {
        let mut i = inputs();
        i.snapshot = Err("snapshot.json: line 1 column 2: expected value".into());
        let row = summarise(i);
        assert_eq!(row.status.label(), "unreadable");
        assert_eq!(row.status_text, "unreadable: snapshot.json: line 1 column 2: expected value");
        let mut i = inputs();
        i.state = Some(Err("state.json: EOF".into()));
        assert_eq!(summarise(i).status, RunStatus::Unreadable { reason: "state.json: EOF".into() });
    }

    #[test]
    fn broken_event_lines_are_counted_not_fatal() {
        let tail =
            lines("{\"event\":\"open\",\"pid\":1}\nnot json\n{\"event\":\"phase\",\"phase\":\"judge\",\"score\":NaN}");
        assert_eq!(tail.bad_lines, 1);
        assert_eq!(tail.last_phase.as_deref(), Some("judge"));
    }

    #[test]
    fn latest_written_first_then_by_path() {
        let row = |path: &str, t: Option<i64>| {
            let mut i = inputs();
            i.path = path.into();
            i.last_written = t.map(Timestamp);
            summarise(i)
        };
        let mut rows = vec![row("a", Some(1)), row("c", None), row("b", Some(5)), row("a2", Some(5))];
        sort_latest_first(&mut rows);
        let order: Vec<_> = rows.iter().map(|r| r.path.as_str()).collect();
        assert_eq!(order, ["a2", "b", "a", "c"]);
    }
}
