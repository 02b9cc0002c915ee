//! Process and cell statuses, and the records a run set keeps.

use serde::{Deserialize, Serialize};

use crate::console::spec::Cell;

use super::result::{CellResult, Samples};

/// A process the driver started (`ProcessStatus`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProcessStatus {
    /// No exit code yet.
    Running,
    /// Exited with code 0.
    Done,
    /// Exited with a non-zero code, or was ended by a signal it did not get from us.
    Failed { code: i32 },
    /// Ended by the driver's SIGTERM within the grace period (a clean teardown).
    Stopped,
    /// Forcibly stopped by the driver (SIGKILL) after its grace period.
    Killed,
}

impl ProcessStatus {
    pub const fn is_running(self) -> bool {
        matches!(self, Self::Running)
    }
    pub fn label(self) -> &'static str {
        match self {
            Self::Running => "RUNNING",
            Self::Done => "DONE",
            Self::Failed { .. } => "FAILED",
            Self::Stopped => "STOPPED",
            Self::Killed => "KILLED",
        }
    }
}

/// Where a cell stands in a run set.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CellStatus {
    #[default]
    Pending,
    Running,
    Done,
    Failed,
    /// The batch was stopped while this cell ran.
    Stopped,
}

/// `cells/<cell id>.json` in a run set: one cell's latest attempt.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellRecord {
    pub schema_version: u32,
    pub cell: String,
    pub factors: std::collections::BTreeMap<String, serde_json::Value>,
    pub status: CellStatus,
    /// How many times this cell has been started in this run set.
    #[serde(default)]
    pub attempts: u32,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub ended_at: Option<String>,
    #[serde(default)]
    pub exit_code: Option<i32>,
    /// Reported by the cell (its `result.json`), never made up.
    #[serde(default)]
    pub tokens: Option<u64>,
    #[serde(default)]
    pub score: Option<f64>,
    #[serde(default)]
    pub log: Option<String>,
    /// The rest of what the cell reported (`result.json`), each only when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passed: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<Samples>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_tokens: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cost: Option<f64>,
    /// Why it failed, in the cell's own words.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// What the driver counted of its calls when it ended (its progress
    /// file, else its call files): the record of what it spent when its
    /// report says nothing of tokens. Absent when nothing was counted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counted: Option<Counted>,
}

/// A cell's calls as the driver counted them when it ended, every attempt's
/// (`cells/<id>.json` → `counted`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counted {
    pub calls: u64,
    #[serde(default)]
    pub input_tokens: u64,
    #[serde(default)]
    pub output_tokens: u64,
    /// Cached input, not also in `input_tokens`.
    #[serde(default)]
    pub cached_tokens: u64,
    /// Reported as a total only.
    #[serde(default)]
    pub unsplit_tokens: u64,
    /// Calls whose answer reported no usage (`"usage": "missing"`): counted
    /// as calls, their tokens unknown and in none of the counts above.
    #[serde(default, skip_serializing_if = "crate::basics::json::is_zero")]
    pub unmetered_calls: u64,
    pub source: CountSource,
}

impl Counted {
    pub fn total(&self) -> u64 {
        self.input_tokens + self.output_tokens + self.cached_tokens + self.unsplit_tokens
    }
}

/// Where a cell's calls were counted from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountSource {
    /// `{out}/progress.jsonl`, one line per call.
    #[default]
    Progress,
    /// The call files of the run directory it owns (`{out}/calls/NNNN.json`).
    Calls,
}

impl CountSource {
    pub fn word(self) -> &'static str {
        match self {
            Self::Progress => "progress",
            Self::Calls => "calls",
        }
    }
}

impl CellRecord {
    /// Why a cell failed, in words — the reason it reported, else how it
    /// exited; none when it did not fail.
    pub fn failure_words(&self) -> Option<String> {
        if self.status != CellStatus::Failed {
            return None;
        }
        if let Some(r) = &self.reason {
            return Some(r.clone());
        }
        Some(match self.exit_code {
            Some(code) if code > 128 && code < 160 => format!("killed by signal {} (exit {code})", code - 128),
            Some(code) => format!("exit {code}"),
            None => "ended without an exit status".into(),
        })
    }

    pub fn new(cell: &Cell, status: CellStatus) -> Self {
        Self { schema_version: 1, cell: cell.id.clone(), factors: cell.factors.clone(), status, ..Self::default() }
    }

    /// The tokens it reported in all: `tokens`, else its split's sum.
    pub fn tokens_reported(&self) -> Option<u64> {
        self.tokens.or(match (self.input_tokens, self.output_tokens) {
            (None, None) => None,
            (i, o) => Some(i.unwrap_or(0) + o.unwrap_or(0)),
        })
    }

    /// The tokens it spent: what it reported, else what was counted of its
    /// calls — or what was counted when that is more: a harness does not
    /// report a call its stop cut short, which the endpoint answered (and
    /// billed) and the batch's gateway counted (none: neither).
    pub fn tokens_total(&self) -> Option<u64> {
        let counted = self.counted.as_ref().map(Counted::total);
        match (self.tokens_reported(), counted) {
            (Some(r), Some(c)) => Some(r.max(c)),
            (r, c) => r.or(c),
        }
    }

    /// A new attempt starts: nothing an earlier attempt reported or was
    /// counted of stays in the record (a report is always the latest
    /// attempt's; the count is made again, of every attempt, when it ends).
    pub fn start_attempt(&mut self, started_at: String) {
        self.take_result(CellResult::default());
        self.status = CellStatus::Running;
        self.attempts += 1;
        self.started_at = Some(started_at);
        self.ended_at = None;
        self.exit_code = None;
        self.counted = None;
    }

    /// Takes what the cell reported for its latest attempt: every reported
    /// field is replaced, so nothing an earlier attempt said survives.
    pub fn take_result(&mut self, r: CellResult) {
        let CellResult { score, passed, samples, tokens, input_tokens, output_tokens, cost, reason } = r;
        (self.score, self.passed, self.samples, self.tokens) = (score, passed, samples, tokens);
        (self.input_tokens, self.output_tokens, self.cost, self.reason) = (input_tokens, output_tokens, cost, reason);
    }
}

/// How a batch ended (`batch_outcome.json` → `status`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchStatus {
    /// Still running (written at start so a reader sees the batch).
    Running,
    /// Every remaining cell ran and succeeded.
    Completed,
    /// It ran to the end but some cells failed.
    CompletedWithFailures,
    /// A child failed, health never came, or a submission failed: the cluster was torn down.
    Failed,
    /// Stopped by a signal (pause/stop): resumable.
    Stopped,
    /// Resume found every cell done: nothing was started.
    NothingToDo,
}

/// `batch_outcome.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchOutcome {
    pub schema_version: u32,
    pub label: String,
    pub status: BatchStatus,
    /// Why, in words.
    pub reason: String,
    pub planned: usize,
    pub attempted: usize,
    pub completed: usize,
    pub failed: usize,
    /// When this attempt of the batch started (a resume's own start).
    pub started_at: String,
    #[serde(default)]
    pub ended_at: Option<String>,
    /// When the batch first started, kept across resumes (absent in a run
    /// set never resumed, or written before it was kept: `started_at`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_started_at: Option<String>,
    /// The `runboard drive` process writing this run set: while `status` is
    /// `running`, a reader on the same host whose process is gone knows the
    /// driver was killed (the outcome is stale), not that the batch still runs.
    #[serde(default)]
    pub driver: Option<DriverProcess>,
    /// Why the driver paused the batch itself — a cap of `[budget]` its
    /// gateway held — in words; the batch is stopped and resumable, as if
    /// the console had paused it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<String>,
}

impl BatchOutcome {
    /// The outcome once the runner returned `status` and `reason`, from the
    /// cell records as they stand then (`after`, by cell id): `planned` the
    /// batch's cells, `left` those this attempt ran, `attempted` how many it
    /// started, `paused` why the gateway held it at a cap (a stop it asked
    /// for is the budget's pause). A batch is complete only when its cells
    /// are: a runner that ends 0 with cells still pending or running did
    /// not finish it; a resume that ran only the cells left says so beside
    /// the whole batch's count. `ended_at` is the caller's to set.
    pub fn settle(
        &mut self,
        (status, reason): (BatchStatus, String),
        paused: Option<String>,
        (planned, left): (&[Cell], &[Cell]),
        attempted: usize,
        after: &std::collections::BTreeMap<String, CellRecord>,
    ) {
        let reason = match (status, paused) {
            (BatchStatus::Stopped, Some(cap)) => {
                let why = format!("paused by the budget: {cap}");
                self.paused = Some(why.clone());
                format!("{why}; resumable")
            }
            (_, _) => reason,
        };
        let status_of = |c: &Cell| after.get(&c.id).map(|r| r.status);
        self.attempted = attempted;
        self.completed = planned.iter().filter(|c| status_of(c) == Some(CellStatus::Done)).count();
        self.failed = left.iter().filter(|c| status_of(c) == Some(CellStatus::Failed)).count();
        let unfinished: Vec<&str> = left
            .iter()
            .filter(|c| status_of(c).is_none_or(|s| matches!(s, CellStatus::Pending | CellStatus::Running)))
            .map(|c| c.id.as_str())
            .collect();
        let (status, reason) = match status {
            BatchStatus::Completed if !unfinished.is_empty() => (
                BatchStatus::Failed,
                format!(
                    "{reason}, but {} of {} cells are not finished (still pending or running: {}); resumable",
                    unfinished.len(),
                    left.len(),
                    unfinished.iter().take(5).copied().collect::<Vec<_>>().join(", ")
                        + if unfinished.len() > 5 { ", …" } else { "" }
                ),
            ),
            BatchStatus::Completed if self.failed > 0 => (BatchStatus::CompletedWithFailures, reason),
            s => (s, reason),
        };
        // A resume ran only the cells left: say so beside the whole batch's count.
        self.reason = if left.len() < planned.len()
            && matches!(status, BatchStatus::Completed | BatchStatus::CompletedWithFailures)
        {
            format!(
                "{reason} left by an earlier attempt; {} of the {} planned cells are done",
                self.completed,
                planned.len()
            )
        } else {
            reason
        };
        self.status = status;
    }
}

/// Which process drives a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DriverProcess {
    /// The host name as the driver's machine reports it (compare short names,
    /// case-insensitively).
    pub host: String,
    pub pid: u32,
}

impl BatchStatus {
    /// Its word, as `batch_outcome.json` writes it.
    pub const fn word(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Completed => "completed",
            Self::CompletedWithFailures => "completed_with_failures",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
            Self::NothingToDo => "nothing_to_do",
        }
    }

    /// The driver's exit code for this outcome.
    pub const fn exit_code(self) -> u8 {
        match self {
            Self::Completed | Self::NothingToDo | Self::Running => 0,
            Self::CompletedWithFailures | Self::Failed => 1,
            Self::Stopped => 143,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn cells(ids: &[&str]) -> Vec<Cell> {
        ids.iter().map(|id| Cell { id: (*id).to_owned(), factors: BTreeMap::new() }).collect()
    }

    fn outcome() -> BatchOutcome {
        BatchOutcome {
            schema_version: 1,
            label: "b".into(),
            status: BatchStatus::Running,
            reason: String::new(),
            planned: 4,
            attempted: 0,
            completed: 0,
            failed: 0,
            started_at: "2026-12-07T00:00:00Z".into(),
            ended_at: None,
            first_started_at: None,
            driver: None,
            paused: None,
        }
    }

    fn after(statuses: &[(&str, CellStatus)]) -> BTreeMap<String, CellRecord> {
        statuses.iter().map(|(id, s)| ((*id).to_owned(), CellRecord::new(&cells(&[id])[0], *s))).collect()
    }

    /// A runner's word is taken only as far as the cell records bear it out.
    #[test]
    fn an_outcome_is_settled_by_the_cell_records_not_the_runners_word() {
        let planned = cells(&["a", "b", "c", "d"]);
        let ended = |s: BatchStatus| (s, "all cells ran".to_owned());
        // Every cell done: completed.
        let mut o = outcome();
        let all = after(&[
            ("a", CellStatus::Done),
            ("b", CellStatus::Done),
            ("c", CellStatus::Done),
            ("d", CellStatus::Done),
        ]);
        o.settle(ended(BatchStatus::Completed), None, (&planned, &planned), 4, &all);
        assert_eq!(
            (o.status, o.completed, o.failed, o.attempted, o.reason.as_str()),
            (BatchStatus::Completed, 4, 0, 4, "all cells ran")
        );
        // One failed: completed with failures.
        let mut o = outcome();
        let one_failed = after(&[
            ("a", CellStatus::Done),
            ("b", CellStatus::Failed),
            ("c", CellStatus::Done),
            ("d", CellStatus::Done),
        ]);
        o.settle(ended(BatchStatus::Completed), None, (&planned, &planned), 4, &one_failed);
        assert_eq!((o.status, o.failed), (BatchStatus::CompletedWithFailures, 1));
        // The runner said completed, but two cells are still pending or never written: failed, resumable.
        let mut o = outcome();
        let short = after(&[("a", CellStatus::Done), ("b", CellStatus::Running)]);
        o.settle(ended(BatchStatus::Completed), None, (&planned, &planned), 2, &short);
        assert_eq!(o.status, BatchStatus::Failed);
        assert_eq!(
            o.reason,
            "all cells ran, but 3 of 4 cells are not finished (still pending or running: b, c, d); resumable"
        );
        // A resume that ran the last two says so beside the whole batch's count.
        let mut o = outcome();
        o.settle(ended(BatchStatus::Completed), None, (&planned, &planned[2..]), 2, &all);
        assert_eq!(o.reason, "all cells ran left by an earlier attempt; 4 of the 4 planned cells are done");
        // A stop the gateway asked for at a cap is the budget's pause.
        let mut o = outcome();
        o.settle(
            (BatchStatus::Stopped, "stopped".into()),
            Some("the batch's cap of 5.00 USD".into()),
            (&planned, &planned),
            2,
            &short,
        );
        assert_eq!(o.status, BatchStatus::Stopped);
        assert_eq!(o.paused.as_deref(), Some("paused by the budget: the batch's cap of 5.00 USD"));
        assert_eq!(o.reason, "paused by the budget: the batch's cap of 5.00 USD; resumable");
    }
}
