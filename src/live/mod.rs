//! The live state of a campaign's batch, derived from evidence — never kept
//! as a state of its own. The evidence: the latest launched unit and what its
//! launcher says of it, a driver process that names its run set, the
//! active-batch marker, and the unit's failure when it died.
//!
//! The rules, in order (the first that holds decides):
//!
//! 1. the launcher cannot say what the latest unit is → **unknown**, with the
//!    reason (never guessed as finished or failed; a driver process seen
//!    alive on this host is named with it);
//! 2. a driver process is alive and names its run set → **running**
//!    (it beats the marker: parallel lanes rewrite the shared marker);
//! 3. the unit is pending or active (no run set process yet) → **starting**;
//! 4. the unit ended unsuccessfully before its batch wrote an outcome →
//!    **launch_failed**, with the unit's exit status, result and the last
//!    lines of its log;
//! 5. the marker says `stopped_before_completion` → **stopped_resumable**;
//!    `aborted_by_operator` → **aborted**;
//! 6. the unit has ended but its batch's outcome still says `running` (no
//!    driver is alive to write it) → **interrupted**, naming that evidence:
//!    the driver died without recording an end; Resume runs what is left;
//! 7. otherwise **idle** (with the last batch's outcome, if any).
//!
//! A state never claims what it has no evidence for: "running" needs a live
//! driver; "interrupted" needs the unit's end *and* an outcome left at
//! `running`; a unit the launcher cannot see is "unknown", never "gone".
//!
//! Beside it, what is watched while a batch runs:
//!
//! - [`spend`] — what a batch spends as it runs (its cells' progress files,
//!   its gateway's count), the caps that stop it, the silent cell named stalled.
//! - [`telemetry`] — what an endpoint is doing now: its calls' rates and
//!   latency over the last minute, its engine's Prometheus metrics, busy or not.
//! - [`logs`] — a batch's logs as a reader sees them while they are written:
//!   the next chunk from a position (file identity and offset), across a
//!   rotation, never the whole file.
//! - [`notice`] — a word for every batch event: each unit's phase, what was
//!   already said of it, and which events to say next; where a webhook may go.
//! - [`upkeep`] — what a campaign left lying about (stale drafts, temporary
//!   files of killed writers, units and run sets whose process is gone,
//!   orphaned logs, disk use) and the one safe action for each.

pub mod logs;
pub mod notice;
pub mod spend;
pub mod telemetry;
pub mod upkeep;

use serde::{Deserialize, Serialize};

use crate::drive::records::BatchStatus;
use crate::Timestamp;

/// What a launcher says of one unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Observation {
    /// Accepted, not yet running (a queued Slurm job: the queue's reason).
    Pending {
        reason: Option<String>,
    },
    Active {
        since: Option<Timestamp>,
    },
    /// Ended: its exit status (none when a signal or the manager ended it
    /// without one) and the launcher's result word (`success`, `exit-code`,
    /// `signal`, `timeout`, …).
    Finished {
        exit_status: Option<i32>,
        result: String,
        at: Option<Timestamp>,
    },
    /// The launcher could not be asked, or did not know the unit.
    Unknown {
        reason: String,
    },
}

impl Observation {
    pub fn succeeded(&self) -> bool {
        matches!(self, Self::Finished { exit_status: Some(0), .. })
    }
}

/// Why a unit died, as its launcher and its log say (`unit failure observation`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitFailure {
    pub unit: String,
    pub exit_status: Option<i32>,
    pub result: String,
    /// One line: "The batch was refused before it started".
    pub title: String,
    /// The most telling line of its log (a refusal, an error), if any.
    pub reason: Option<String>,
    /// The last lines of its log.
    pub summary: Vec<String>,
    /// Whether the driver refused the batch (exit status 2: bad input or the doctor).
    pub refusal: bool,
}

/// The active-batch marker's status (`runsets/active_batch.json`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MarkerStatus {
    /// Launched (or resumed) through the console.
    Launched,
    /// Paused: the driver was stopped; resumable.
    StoppedBeforeCompletion,
    /// Stopped and aborted by the operator: terminal.
    AbortedByOperator,
}

/// `runsets/active_batch.json`: the batch the console last launched or
/// controlled, and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActiveMarker {
    pub schema_version: u32,
    pub run_set: String,
    /// The committed spec, relative to the root.
    pub spec: String,
    pub unit: Option<String>,
    pub status: MarkerStatus,
    pub planned: usize,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub updated_at: Timestamp,
    /// Why, in words (`paused by the operator`).
    #[serde(default)]
    pub reason: Option<String>,
}

/// The unit last launched, as the console recorded it and its launcher sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitSeen {
    pub unit: String,
    pub backend: crate::campaign::LauncherKind,
    pub run_set: String,
    pub spec: String,
    pub started_at: Timestamp,
    pub observation: Observation,
    /// Whether its run set holds a `batch_outcome.json`, and its status.
    pub outcome: Option<BatchStatus>,
    /// Why its driver paused the batch itself (its outcome's `paused`).
    #[serde(default)]
    pub paused: Option<String>,
}

/// Another batch in flight beside the one the live state speaks for: a
/// queued job behind a running one, or a parallel lane's batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OtherBatch {
    pub unit: String,
    pub backend: crate::campaign::LauncherKind,
    pub run_set: String,
    pub started_at: Timestamp,
    pub state: OtherState,
    pub words: String,
}

/// Where another batch in flight is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OtherState {
    /// Queued, or its processes are starting.
    Starting,
    Running,
    /// Its launcher could not be asked (it may well be running).
    Unknown,
}

impl OtherState {
    pub const fn word(self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Running => "running",
            Self::Unknown => "unknown",
        }
    }
}

crate::display_as_word!(LiveCellStatus, OtherState);

/// The units in flight other than the one of the run set the live state
/// speaks for (`shown`), in launch order. A unit that has ended is no longer in flight; one whose
/// launcher cannot be asked stays, as unknown (it may well be running).
pub fn other_batches(units: &[UnitSeen], shown: Option<&str>) -> Vec<OtherBatch> {
    units
        .iter()
        .filter(|u| Some(u.run_set.as_str()) != shown)
        .filter_map(|u| {
            let (state, words) = match &u.observation {
                Observation::Finished { .. } => return None,
                Observation::Pending { reason: Some(r) } => {
                    (OtherState::Starting, format!("{} ({}) is waiting to start: {r}.", u.run_set, u.unit))
                }
                Observation::Pending { reason: None } => {
                    (OtherState::Starting, format!("{} ({}) is waiting to start.", u.run_set, u.unit))
                }
                Observation::Active { .. } => (OtherState::Running, format!("{} ({}) is running.", u.run_set, u.unit)),
                Observation::Unknown { reason } => {
                    (OtherState::Unknown, format!("{} ({}) could not be observed: {reason}.", u.run_set, u.unit))
                }
            };
            Some(OtherBatch {
                unit: u.unit.clone(),
                backend: u.backend,
                run_set: u.run_set.clone(),
                started_at: u.started_at,
                state,
                words,
            })
        })
        .collect()
}

/// Everything the live state is derived from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LiveObservations {
    pub unit: Option<UnitSeen>,
    /// The run set a live driver process is writing (its outcome says
    /// `running` and its driver process is alive).
    pub process_run_set: Option<String>,
    pub marker: Option<ActiveMarker>,
    pub failure: Option<UnitFailure>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum LiveState {
    Idle {
        last_run_set: Option<String>,
        last_outcome: Option<BatchStatus>,
    },
    Starting {
        unit: String,
        run_set: String,
        reason: Option<String>,
    },
    Running {
        run_set: String,
        unit: Option<String>,
    },
    StoppedResumable {
        run_set: String,
        spec: String,
        reason: Option<String>,
    },
    Aborted {
        run_set: String,
        at: Timestamp,
    },
    LaunchFailed {
        run_set: String,
        failure: UnitFailure,
    },
    /// The unit ended while its batch's outcome still says `running`: the
    /// driver died without recording an end (killed, out of memory, the
    /// machine restarted). `evidence` says what was seen. Resumable.
    Interrupted {
        run_set: String,
        unit: String,
        evidence: String,
    },
    Unknown {
        unit: String,
        reason: String,
        /// A run set whose driver process is alive on this host meanwhile.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        alive_run_set: Option<String>,
    },
}

/// Which [`LiveState`] it is, without its evidence: what a decision (the
/// autopilot's tick) compares, closed, never a string.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LiveKind {
    #[default]
    Idle,
    Starting,
    Running,
    StoppedResumable,
    Aborted,
    LaunchFailed,
    Interrupted,
    Unknown,
}

impl LiveKind {
    /// Its word (the `state` field of `GET /api/live`).
    pub const fn word(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Starting => "starting",
            Self::Running => "running",
            Self::StoppedResumable => "stopped_resumable",
            Self::Aborted => "aborted",
            Self::LaunchFailed => "launch_failed",
            Self::Interrupted => "interrupted",
            Self::Unknown => "unknown",
        }
    }
}

impl LiveState {
    pub fn kind(&self) -> LiveKind {
        match self {
            Self::Idle { .. } => LiveKind::Idle,
            Self::Starting { .. } => LiveKind::Starting,
            Self::Running { .. } => LiveKind::Running,
            Self::StoppedResumable { .. } => LiveKind::StoppedResumable,
            Self::Aborted { .. } => LiveKind::Aborted,
            Self::LaunchFailed { .. } => LiveKind::LaunchFailed,
            Self::Interrupted { .. } => LiveKind::Interrupted,
            Self::Unknown { .. } => LiveKind::Unknown,
        }
    }

    pub fn label(&self) -> &'static str {
        self.kind().word()
    }

    /// The run set it is about: the batch's, or the last one when idle;
    /// none when it does not know (unknown).
    pub fn run_set(&self) -> Option<&str> {
        match self {
            Self::Idle { last_run_set, .. } => last_run_set.as_deref(),
            Self::Starting { run_set, .. }
            | Self::Running { run_set, .. }
            | Self::StoppedResumable { run_set, .. }
            | Self::Aborted { run_set, .. }
            | Self::LaunchFailed { run_set, .. }
            | Self::Interrupted { run_set, .. } => Some(run_set),
            Self::Unknown { .. } => None,
        }
    }

    /// The state in words, for the page and the CLI.
    pub fn words(&self) -> String {
        match self {
            Self::Idle { last_run_set: None, .. } => "Idle: no batch has been launched.".into(),
            Self::Idle { last_run_set: Some(rs), last_outcome } => match last_outcome {
                Some(o) => format!("Idle. The last batch, {rs}, ended {}.", outcome_words(*o)),
                None => format!("Idle. The last batch, {rs}, wrote no outcome."),
            },
            Self::Starting { unit, reason: Some(r), .. } => format!("Starting: {unit} is waiting ({r})."),
            Self::Starting { unit, .. } => format!("Starting: {unit} was launched; its batch has not begun yet."),
            Self::Running { run_set, .. } => format!("Running: {run_set}."),
            Self::StoppedResumable { run_set, reason, .. } => format!(
                "Stopped before completion: {run_set} can be resumed{}.",
                reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
            ),
            Self::Aborted { run_set, .. } => format!("Aborted by the operator: {run_set}."),
            Self::Interrupted { run_set, evidence, .. } => format!(
                "Interrupted: {run_set} ended without recording its end ({evidence}). Resume runs its unfinished cells."
            ),
            Self::LaunchFailed { failure, .. } => match &failure.reason {
                Some(r) => format!("{} {r}", failure.title),
                None => failure.title.clone(),
            },
            Self::Unknown { unit, reason, alive_run_set } => format!(
                "Unknown: {unit} could not be observed ({reason}).{}",
                alive_run_set
                    .as_deref()
                    .map(|rs| format!(" A driver of {rs} is alive on this host."))
                    .unwrap_or_default()
            ),
        }
    }

    /// Whether Resume applies.
    pub fn resumable(&self) -> bool {
        matches!(self, Self::StoppedResumable { .. } | Self::Interrupted { .. })
    }
}

/// A batch's outcome in words, as its record says it — unless the operator
/// aborted it since: then its driver's "resumable" no longer holds, and the
/// words say so rather than offer what the state refuses.
pub fn outcome_text(o: &crate::drive::records::BatchOutcome, aborted: bool) -> String {
    if aborted {
        let reason = o.reason.trim_end_matches("; resumable");
        return format!("{}: {reason}; then aborted by the operator: it will not be resumed", outcome_words(o.status));
    }
    format!("{}: {}", outcome_words(o.status), o.reason)
}

pub fn outcome_words(o: BatchStatus) -> &'static str {
    match o {
        // Only the outcome's own word: whether a driver is still alive is the
        // live state's to say, from its evidence.
        BatchStatus::Running => "still marked running",
        BatchStatus::Completed => "completed",
        BatchStatus::CompletedWithFailures => "completed with failures",
        BatchStatus::Failed => "failed",
        BatchStatus::Stopped => "stopped",
        BatchStatus::NothingToDo => "with nothing to do",
    }
}

/// A run directory a cell owns (under its output folder), as the list shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OwnedRun {
    /// Its path under the root (a link to the run's page).
    pub path: String,
    pub rounds_written: Option<u32>,
    pub rounds_planned: Option<u32>,
    /// Trials in its written rounds (when its view was read).
    pub trials: Option<usize>,
    pub status_text: String,
}

/// One cell of the live batch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveCell {
    pub cell: String,
    pub factors: std::collections::BTreeMap<String, serde_json::Value>,
    /// `planned` (no record yet), or the record's status.
    pub status: LiveCellStatus,
    pub attempts: u32,
    pub tokens: Option<u64>,
    pub cost: Option<f64>,
    /// Seconds from its latest start to its end (or to now while it runs).
    pub duration_s: Option<f64>,
    pub score: Option<f64>,
    /// Samples passed of those run, when the cell reported them.
    #[serde(default)]
    pub samples: Option<crate::drive::result::Samples>,
    /// Why it failed, in words (the reason it reported, else how it exited).
    #[serde(default)]
    pub failure: Option<String>,
    pub run: Option<OwnedRun>,
    /// What it spent, by kind and where it was counted from (`runboard::spend`).
    #[serde(default)]
    pub spend: Option<crate::live::spend::CellSpend>,
    /// Its newest write (a call, a progress, ledger or events line), while known.
    #[serde(default)]
    pub last_write: Option<Timestamp>,
    /// Running, but silent past its threshold.
    #[serde(default)]
    pub stall: Option<crate::live::spend::Stall>,
    /// Running and quiet for a reason its gateway knows: a call in flight
    /// (for how long) or calls held by its endpoint's rate limit.
    #[serde(default)]
    pub quiet: Option<crate::gateway::calls::Quiet>,
    /// Running: its samples so far, as it reports them (`{out}/samples.json`).
    #[serde(default)]
    pub so_far: Option<crate::drive::result::SamplesSoFar>,
}

/// The live batch's counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveTotals {
    pub planned: usize,
    pub done: usize,
    pub failed: usize,
    pub running: usize,
    pub pending: usize,
    pub stopped: usize,
    pub tokens: u64,
    pub cost: Option<f64>,
}

/// `GET /api/live`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LiveView {
    pub generated_at: Timestamp,
    pub state: LiveState,
    /// The state in words.
    pub words: String,
    pub unit: Option<UnitSeen>,
    pub run_set: Option<String>,
    pub outcome: Option<crate::drive::records::BatchOutcome>,
    /// A page of the cells (see [`LiveParams`]), in plan order.
    pub cells: Vec<LiveCell>,
    /// How many cells the status filter keeps, and where the page starts.
    pub cells_matching: usize,
    pub cells_offset: usize,
    pub totals: LiveTotals,
    /// Cells ended (done or failed) of those planned, 0–1.
    pub progress: f64,
    /// Seconds left, from the median duration of the cells ended so far.
    pub eta_s: Option<f64>,
    pub resumable: bool,
    /// Every run set that can be resumed now: it stopped before completion
    /// (its outcome says `stopped`), no driver writes it and it was not
    /// aborted — the state's own and any other (a lane paused earlier).
    #[serde(default)]
    pub resumable_run_sets: Vec<String>,
    /// The currency of `cost` (the campaign's).
    #[serde(default)]
    pub currency: String,
    /// Other batches in flight (queued behind this one, or on other lanes).
    #[serde(default)]
    pub others: Vec<OtherBatch>,
    /// What the batch has spent as its cells write: tokens by kind, cost,
    /// the rates, the projection to its end and each cap of `[budget]`.
    #[serde(default)]
    pub spend: Option<crate::live::spend::BatchSpend>,
    /// Its running cells that have written nothing for too long (never one
    /// with a call in flight or held at its gateway: see `cells[].quiet`).
    #[serde(default)]
    pub stalls: Vec<crate::live::spend::Stall>,
    /// Which of its calls its gateway does not see, in words (none: every
    /// call made at `{endpoint_url}` is seen).
    #[serde(default)]
    pub calls_unseen: Option<String>,
    /// Its endpoints' rate limits at its gateway, by endpoint.
    #[serde(default)]
    pub rate_limits: std::collections::BTreeMap<String, crate::gateway::calls::EndpointCalls>,
    /// Records that could not be read, with why.
    pub problems: Vec<String>,
    /// Changes whenever anything above may have changed (pages follow it).
    pub version: String,
}

/// `?cells_status=&cells_offset=&cells_limit=` for `GET /api/live`, as raw
/// text: which of the batch's cells the view carries (a 10,000-cell batch is
/// not sent whole to every poll).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct LiveParams {
    /// Only the cells with this status: planned, pending, running, done,
    /// failed or stopped.
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub cells_status: Option<String>,
    /// Cells skipped, in the batch's order (default 0).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub cells_offset: Option<String>,
    /// How many cells: 1–10,000 (default 200).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub cells_limit: Option<String>,
}

/// Where one cell of the live batch is: `planned` until the driver writes
/// its record, then the record's status (the same words on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LiveCellStatus {
    Planned,
    Pending,
    Running,
    Done,
    Failed,
    Stopped,
}

impl LiveCellStatus {
    /// Every state, in the order a cell goes through them.
    pub const ALL: [LiveCellStatus; 6] =
        [Self::Planned, Self::Pending, Self::Running, Self::Done, Self::Failed, Self::Stopped];

    pub const fn word(self) -> &'static str {
        match self {
            Self::Planned => "planned",
            Self::Pending => "pending",
            Self::Running => "running",
            Self::Done => "done",
            Self::Failed => "failed",
            Self::Stopped => "stopped",
        }
    }

    pub fn from_word(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|s| s.word() == word)
    }

    /// Whether the cell has been started, so it may have written a log.
    pub const fn started(self) -> bool {
        !matches!(self, Self::Planned | Self::Pending)
    }
}

impl From<Option<crate::drive::records::CellStatus>> for LiveCellStatus {
    fn from(status: Option<crate::drive::records::CellStatus>) -> Self {
        use crate::drive::records::CellStatus;
        match status {
            None => Self::Planned,
            Some(CellStatus::Pending) => Self::Pending,
            Some(CellStatus::Running) => Self::Running,
            Some(CellStatus::Done) => Self::Done,
            Some(CellStatus::Failed) => Self::Failed,
            Some(CellStatus::Stopped) => Self::Stopped,
        }
    }
}

/// Cells a live view carries by default, and at most.
pub const DEFAULT_LIVE_CELLS: usize = 200;
pub const MAX_LIVE_CELLS: usize = 10_000;

/// A parsed [`LiveParams`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LiveQuery {
    pub status: Option<LiveCellStatus>,
    pub offset: usize,
    pub limit: usize,
}

impl LiveParams {
    pub fn parse(&self) -> Result<LiveQuery, crate::runview::trials::BadQuery> {
        use crate::runview::trials::value::{bad, given, whole};
        let status = match given(&self.cells_status) {
            None => None,
            Some(s) => match LiveCellStatus::from_word(s) {
                Some(state) => Some(state),
                None => {
                    let words: Vec<&str> = LiveCellStatus::ALL.iter().map(|s| s.word()).collect();
                    return Err(bad("cells_status", s, &format!("not one of {}", words.join(", "))));
                }
            },
        };
        let limit = whole::<usize>("cells_limit", &self.cells_limit)?.unwrap_or(DEFAULT_LIVE_CELLS);
        if !(1..=MAX_LIVE_CELLS).contains(&limit) {
            return Err(bad("cells_limit", &limit.to_string(), &format!("must be between 1 and {MAX_LIVE_CELLS}")));
        }
        Ok(LiveQuery { status, offset: whole("cells_offset", &self.cells_offset)?.unwrap_or(0), limit })
    }
}

impl LiveView {
    /// The view with only the page of cells `q` asks for (the whole view is
    /// made once per change and shared; each poll copies a page).
    pub fn page(&self, q: &LiveQuery) -> LiveView {
        let kept: Vec<&LiveCell> = self.cells.iter().filter(|c| q.status.is_none_or(|s| c.status == s)).collect();
        LiveView {
            cells_matching: kept.len(),
            cells_offset: q.offset,
            cells: kept.into_iter().skip(q.offset).take(q.limit).cloned().collect(),
            generated_at: self.generated_at,
            state: self.state.clone(),
            words: self.words.clone(),
            unit: self.unit.clone(),
            run_set: self.run_set.clone(),
            outcome: self.outcome.clone(),
            others: self.others.clone(),
            totals: self.totals,
            progress: self.progress,
            eta_s: self.eta_s,
            resumable: self.resumable,
            resumable_run_sets: self.resumable_run_sets.clone(),
            currency: self.currency.clone(),
            spend: self.spend.clone(),
            stalls: self.stalls.clone(),
            rate_limits: self.rate_limits.clone(),
            calls_unseen: self.calls_unseen.clone(),
            problems: self.problems.clone(),
            version: self.version.clone(),
        }
    }
}

/// The rows, counts and ETA of a batch: its planned cells joined with their
/// records; `prices` of its model; `parallel` cells at once; `typical_s`: a
/// cell's time from history (Timing's counted durations), until one of this
/// batch's cells has ended.
///
/// The time left is the work left spread over the lanes: each running cell's
/// typical time less what it has run (never below 0), and a typical time for
/// each cell not started — so it moves down as cells run, not only when one
/// ends. None when nothing is typical yet, or every cell left has run past it.
pub fn cell_rows(
    planned: &[crate::console::spec::Cell],
    records: &[crate::drive::records::CellRecord],
    prices: Option<crate::live::spend::Prices>,
    parallel: usize,
    typical_s: Option<f64>,
    now: Timestamp,
) -> (Vec<LiveCell>, LiveTotals, Option<f64>) {
    use crate::drive::records::CellStatus;
    let by_id: std::collections::HashMap<&str, &crate::drive::records::CellRecord> =
        records.iter().map(|r| (r.cell.as_str(), r)).collect();
    let mut totals = LiveTotals { planned: planned.len(), ..Default::default() };
    let mut ended_secs = Vec::new();
    let mut running_secs = Vec::new();
    // Tokens without their split here: priced at the dearest (the spend,
    // attached after, prices each kind).
    let cost_of = |t: Option<u64>| {
        prices.zip(t).map(|(p, t)| p.cost(&crate::live::spend::Tokens { unsplit: t, ..Default::default() }))
    };
    let rows: Vec<LiveCell> = planned
        .iter()
        .map(|c| {
            let rec = by_id.get(c.id.as_str());
            let started = rec.and_then(|r| r.started_at.as_deref()).and_then(Timestamp::parse_rfc3339);
            let ended = rec.and_then(|r| r.ended_at.as_deref()).and_then(Timestamp::parse_rfc3339);
            let status = rec.map(|r| r.status);
            let duration_s = match (started, ended, status) {
                (Some(s), Some(e), _) => Some((e.0 - s.0).max(0) as f64 / 1000.0),
                (Some(s), None, Some(CellStatus::Running)) => Some((now.0 - s.0).max(0) as f64 / 1000.0),
                _ => None,
            };
            match status {
                None | Some(CellStatus::Pending) => totals.pending += 1,
                Some(CellStatus::Running) => totals.running += 1,
                Some(CellStatus::Done) => totals.done += 1,
                Some(CellStatus::Failed) => totals.failed += 1,
                Some(CellStatus::Stopped) => totals.stopped += 1,
            }
            match status {
                Some(CellStatus::Done | CellStatus::Failed) => ended_secs.extend(duration_s),
                Some(CellStatus::Running) => running_secs.push(duration_s.unwrap_or(0.0)),
                _ => {}
            }
            let tokens = rec.and_then(|r| r.tokens_total());
            totals.tokens += tokens.unwrap_or(0);
            LiveCell {
                cell: c.id.clone(),
                factors: c.factors.clone(),
                status: status.into(),
                attempts: rec.map_or(0, |r| r.attempts),
                tokens,
                cost: cost_of(tokens),
                duration_s,
                score: rec.and_then(|r| r.score),
                samples: rec.and_then(|r| r.samples),
                failure: rec.and_then(|r| r.failure_words()),
                run: None,
                spend: None,
                last_write: None,
                stall: None,
                quiet: None,
                so_far: None,
            }
        })
        .collect();
    totals.cost = cost_of(Some(totals.tokens));
    let left = totals.planned.saturating_sub(totals.done + totals.failed);
    ended_secs.sort_by(f64::total_cmp);
    let typical = if ended_secs.is_empty() { typical_s } else { Some(ended_secs[ended_secs.len() / 2]) };
    let not_started = left.saturating_sub(running_secs.len());
    let eta = typical.filter(|t| left > 0 && *t > 0.0).and_then(|t| {
        let work = running_secs.iter().map(|ran| (t - ran).max(0.0)).sum::<f64>() + not_started as f64 * t;
        (work > 0.0).then(|| work / parallel.max(1) as f64)
    });
    (rows, totals, eta)
}

/// Which of a batch's calls its gateway does not see, in words (none: it
/// sees every call made at `{endpoint_url}`). `gateway_up`: whether its
/// gateway's calls file is fresh (none: not running, nothing to say).
pub fn calls_unseen(
    cfg: &crate::campaign::CampaignConfig,
    spec: &crate::console::spec::BatchSpec,
    gateway_up: Option<bool>,
) -> Option<String> {
    const ONLY: &str = "only what its cells write is counted";
    if cfg.cluster.is_some() {
        return Some(format!("calls not seen: a [cluster] batch's processes call their endpoints directly; {ONLY}"));
    }
    let used = spec.endpoints_used();
    if used.is_empty() {
        return Some(format!("calls not seen: this batch names no endpoint, so it has no gateway; {ONLY}"));
    }
    let off: Vec<String> = used.iter().filter(|n| cfg.endpoint(n).is_none_or(|e| !e.gatewayed())).cloned().collect();
    if !off.is_empty() {
        return Some(format!(
            "calls not seen on {}: no gateway (gateway = false, or not in the catalogue); {ONLY}",
            off.join(", ")
        ));
    }
    (gateway_up == Some(false))
        .then(|| format!("calls not seen: the batch's gateway is not running (its execution_log.md says why); {ONLY}"))
}

/// What is said of running cells beside their spend, by cell id.
pub struct CellWords<'a> {
    pub stalls: &'a [crate::live::spend::Stall],
    /// Why a cell is quiet, from its gateway.
    pub quiet: &'a [(String, crate::gateway::calls::Quiet)],
    /// Its live samples report.
    pub so_far: &'a [(String, crate::drive::result::SamplesSoFar)],
}

/// Puts what the cells spent (in plan order, as `cells`), their newest
/// writes and the stalls into the rows and the totals.
pub fn attach_spend(
    cells: &mut [LiveCell],
    totals: &mut LiveTotals,
    spent: Vec<crate::live::spend::CellSpend>,
    last_writes: &[Option<Timestamp>],
    said: CellWords<'_>,
    batch: &crate::live::spend::BatchSpend,
) {
    let CellWords { stalls, quiet, so_far } = said;
    for ((c, s), w) in cells.iter_mut().zip(spent).zip(last_writes) {
        if s.source != crate::live::spend::SpendSource::None {
            c.tokens = Some(s.tokens.total());
            c.cost = s.cost.or(c.cost);
            c.spend = Some(s);
        }
        c.last_write = *w;
        c.stall = stalls.iter().find(|x| x.cell == c.cell).cloned();
        c.quiet = quiet.iter().find(|(cell, _)| *cell == c.cell).map(|(_, q)| q.clone());
        c.so_far = so_far.iter().find(|(cell, _)| *cell == c.cell).map(|(_, r)| *r);
    }
    totals.tokens = batch.total_tokens;
    totals.cost = batch.cost.or(totals.cost);
}

/// Cells that own a run directory (one under `runsets/<run set>/out/<cell>/`)
/// get its rounds and status, from the run list's rows.
pub fn attach_runs(cells: &mut [LiveCell], run_set: &str, rows: &[crate::runview::RunRow]) {
    let prefix = format!("runsets/{run_set}/out/");
    for row in rows.iter().filter(|r| r.path.starts_with(&prefix)) {
        let cell = row.path[prefix.len()..].split('/').next().unwrap_or("");
        if let Some(c) = cells.iter_mut().find(|c| c.cell == cell) {
            c.run = Some(OwnedRun {
                path: row.path.clone(),
                rounds_written: row.rounds_written,
                rounds_planned: row.rounds_planned,
                trials: None,
                status_text: row.status_text.clone(),
            });
        }
    }
}

/// The live state from `obs` (see the module's rules).
pub fn derive(obs: &LiveObservations) -> LiveState {
    if let Some(u) = &obs.unit {
        if let Observation::Unknown { reason } = &u.observation {
            return LiveState::Unknown {
                unit: u.unit.clone(),
                reason: reason.clone(),
                alive_run_set: obs.process_run_set.clone(),
            };
        }
    }
    if let Some(rs) = &obs.process_run_set {
        let unit = obs.unit.as_ref().filter(|u| u.run_set == *rs).map(|u| u.unit.clone());
        return LiveState::Running { run_set: rs.clone(), unit };
    }
    if let Some(u) = &obs.unit {
        match &u.observation {
            Observation::Pending { reason } => {
                return LiveState::Starting { unit: u.unit.clone(), run_set: u.run_set.clone(), reason: reason.clone() }
            }
            Observation::Active { .. } => {
                return LiveState::Starting { unit: u.unit.clone(), run_set: u.run_set.clone(), reason: None }
            }
            Observation::Unknown { .. } | Observation::Finished { .. } => {}
        }
    }
    if let Some(m) = &obs.marker {
        // The marker speaks for the run set it names; a later launch of
        // another run set supersedes it.
        let current = obs.unit.as_ref().is_none_or(|u| u.run_set == m.run_set);
        match m.status {
            MarkerStatus::StoppedBeforeCompletion if current => {
                return LiveState::StoppedResumable {
                    run_set: m.run_set.clone(),
                    spec: m.spec.clone(),
                    reason: m.reason.clone(),
                }
            }
            MarkerStatus::AbortedByOperator if current => {
                return LiveState::Aborted { run_set: m.run_set.clone(), at: m.updated_at }
            }
            _ => {}
        }
    }
    if let Some(u) = &obs.unit {
        if !u.observation.succeeded() && u.outcome.is_none() {
            let failure = obs.failure.clone().unwrap_or_else(|| UnitFailure {
                unit: u.unit.clone(),
                exit_status: match u.observation {
                    Observation::Finished { exit_status, .. } => exit_status,
                    _ => None,
                },
                result: match &u.observation {
                    Observation::Finished { result, .. } => result.clone(),
                    _ => String::new(),
                },
                title: "The batch's unit ended before its batch began.".into(),
                reason: None,
                summary: Vec::new(),
                refusal: false,
            });
            return LiveState::LaunchFailed { run_set: u.run_set.clone(), failure };
        }
        if let (Some(BatchStatus::Running), Observation::Finished { exit_status, result, at }) =
            (u.outcome, &u.observation)
        {
            let how = match (exit_status, result.as_str()) {
                (Some(c), r) if !r.is_empty() => format!("exit status {c}, {r}"),
                (Some(c), _) => format!("exit status {c}"),
                (None, r) if !r.is_empty() => r.to_owned(),
                (None, _) => "no exit status".to_owned(),
            };
            let when = at.map(|t| format!(" at {}", t.to_display())).unwrap_or_default();
            return LiveState::Interrupted {
                run_set: u.run_set.clone(),
                unit: u.unit.clone(),
                evidence: format!(
                    "its unit {} ended{when} ({how}) and no driver of it is alive, but its batch_outcome.json still says running",
                    u.unit
                ),
            };
        }
        // Its driver paused it (a cap its gateway held): as if the console had.
        if let (Some(BatchStatus::Stopped), Some(why)) = (u.outcome, &u.paused) {
            return LiveState::StoppedResumable {
                run_set: u.run_set.clone(),
                spec: u.spec.clone(),
                reason: Some(why.clone()),
            };
        }
        return LiveState::Idle { last_run_set: Some(u.run_set.clone()), last_outcome: u.outcome };
    }
    LiveState::Idle { last_run_set: None, last_outcome: None }
}

/// The unit failure observation from its exit and its log's last lines:
/// the title says what kind of end it was, the reason is the log's most
/// telling line (the driver's refusal or doctor finding, an error).
pub fn unit_failure(unit: &str, exit_status: Option<i32>, result: &str, log_tail: &[String]) -> UnitFailure {
    let refusal = exit_status == Some(2);
    let title = match (exit_status, result) {
        (Some(2), _) => "The batch was refused before it started.".to_owned(),
        (Some(code), _) => format!("The batch's unit exited with status {code} before its batch began."),
        (None, r) if !r.is_empty() => format!("The batch's unit ended ({r}) before its batch began."),
        (None, _) => "The batch's unit ended before its batch began.".to_owned(),
    };
    let telling = |l: &&String| {
        let l = l.to_lowercase();
        ["blocking", "refus", "error", "cannot", "not found", "failed", "no such"].iter().any(|w| l.contains(w))
    };
    // A doctor's blocking finding names the cause; else the latest telling line.
    let reason = log_tail
        .iter()
        .find(|l| l.contains("BLOCKING"))
        .or_else(|| log_tail.iter().rev().find(telling))
        .or(log_tail.last())
        .map(|l| l.trim().to_owned());
    UnitFailure {
        unit: unit.into(),
        exit_status,
        result: result.into(),
        title,
        reason,
        summary: log_tail.to_vec(),
        refusal,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(obs: Observation, outcome: Option<BatchStatus>) -> UnitSeen {
        UnitSeen {
            unit: "u1".into(),
            backend: crate::campaign::LauncherKind::Local,
            run_set: "b-1".into(),
            spec: "specs/committed/0001-b.json".into(),
            started_at: Timestamp(0),
            observation: obs,
            outcome,
            paused: None,
        }
    }

    #[test]
    fn calls_the_gateway_does_not_see_are_said() {
        let cfg = crate::campaign::CampaignConfig::parse(
            "schema_version = 1\nname = \"x\"\n[runner]\ncommand = [\"true\"]\n[[endpoints]]\nname = \"a\"\nurl = \"https://api.example/v1\"\nbackend = \"openai\"\nmodels = []\n[[endpoints]]\nname = \"b\"\nurl = \"http://h/v1\"\nbackend = \"vllm\"\nmodels = []\ngateway = false\n",
        )
        .unwrap();
        let spec = |endpoint: Option<&str>| crate::console::spec::BatchSpec {
            endpoint: endpoint.map(str::to_owned),
            ..crate::console::spec::parse(
                "b.json",
                br#"{"schema_version": 1, "label": "b", "cells": [{"factors": {"seed": 1}}]}"#,
            )
            .unwrap()
        };
        assert_eq!(calls_unseen(&cfg, &spec(Some("a")), Some(true)), None);
        let down = calls_unseen(&cfg, &spec(Some("a")), Some(false)).unwrap();
        assert!(down.starts_with("calls not seen: the batch's gateway is not running"), "{down}");
        let off = calls_unseen(&cfg, &spec(Some("b")), Some(true)).unwrap();
        assert!(off.starts_with("calls not seen on b: no gateway (gateway = false"), "{off}");
        let none = calls_unseen(&cfg, &spec(None), None).unwrap();
        assert!(none.starts_with("calls not seen: this batch names no endpoint"), "{none}");
    }

    /// A batch its driver paused at a cap (its gateway's) is stopped and
    /// resumable, as if the console had paused it; one stopped otherwise
    /// (a signal from outside) is the last batch of an idle console.
    #[test]
    fn a_batch_its_driver_paused_at_a_cap_is_stopped_resumable() {
        let ended = Observation::Finished { exit_status: Some(0), result: "success".into(), at: None };
        let paused = UnitSeen {
            paused: Some("paused by the budget: the cap of 40.00 USD per batch: 40.00 USD spent".into()),
            ..unit(ended.clone(), Some(BatchStatus::Stopped))
        };
        let state = derive(&LiveObservations { unit: Some(paused), ..Default::default() });
        assert_eq!(
            state,
            LiveState::StoppedResumable {
                run_set: "b-1".into(),
                spec: "specs/committed/0001-b.json".into(),
                reason: Some("paused by the budget: the cap of 40.00 USD per batch: 40.00 USD spent".into()),
            }
        );
        let signalled =
            derive(&LiveObservations { unit: Some(unit(ended, Some(BatchStatus::Stopped))), ..Default::default() });
        assert_eq!(
            signalled,
            LiveState::Idle { last_run_set: Some("b-1".into()), last_outcome: Some(BatchStatus::Stopped) }
        );
    }

    /// Issue 40 (item 12): an aborted batch's outcome never says "resumable".
    #[test]
    fn an_aborted_batchs_outcome_is_not_called_resumable() {
        let o = crate::drive::records::BatchOutcome {
            schema_version: 1,
            label: "b".into(),
            status: BatchStatus::Stopped,
            reason: "stopped by a signal after 1 of 4 cells; resumable".into(),
            planned: 4,
            attempted: 2,
            completed: 1,
            failed: 0,
            started_at: "2026-12-01T10:00:00Z".into(),
            ended_at: None,
            first_started_at: None,
            driver: None,
            paused: None,
        };
        assert_eq!(outcome_text(&o, false), "stopped: stopped by a signal after 1 of 4 cells; resumable");
        let aborted = outcome_text(&o, true);
        assert!(
            !aborted.contains("resumable") && aborted.ends_with("aborted by the operator: it will not be resumed"),
            "{aborted}"
        );
    }

    #[test]
    fn other_batches_list_what_is_in_flight_beside_the_shown_run_set() {
        let named = |unit_name: &str, run_set: &str, obs: Observation| UnitSeen {
            unit: unit_name.into(),
            run_set: run_set.into(),
            ..unit(obs, None)
        };
        let units = [
            named("u1", "b-1", Observation::Active { since: None }),
            named("u2", "b-2", Observation::Pending { reason: Some("Slurm: PENDING (Resources)".into()) }),
            named("u3", "b-3", Observation::Finished { exit_status: Some(0), result: "success".into(), at: None }),
            named("u4", "b-4", Observation::Unknown { reason: "squeue timed out after 2 s".into() }),
            named("u5", "b-5", Observation::Pending { reason: None }),
        ];
        let others = other_batches(&units, Some("b-1"));
        let got: Vec<(&str, &str, &str)> =
            others.iter().map(|o| (o.unit.as_str(), o.state.word(), o.words.as_str())).collect();
        assert_eq!(
            got,
            [
                ("u2", "starting", "b-2 (u2) is waiting to start: Slurm: PENDING (Resources)."),
                ("u4", "unknown", "b-4 (u4) could not be observed: squeue timed out after 2 s."),
                ("u5", "starting", "b-5 (u5) is waiting to start."),
            ],
            "the shown run set and the ended unit are left out; unknown stays"
        );
        assert_eq!(other_batches(&units, None).len(), 4, "nothing shown: every unit in flight is listed");
    }

    fn marker(status: MarkerStatus, run_set: &str) -> ActiveMarker {
        ActiveMarker {
            schema_version: 1,
            run_set: run_set.into(),
            spec: "specs/committed/0001-b.json".into(),
            unit: Some("u1".into()),
            status,
            planned: 3,
            updated_at: Timestamp(5),
            reason: None,
        }
    }

    fn finished(code: i32) -> Observation {
        Observation::Finished { exit_status: Some(code), result: "exit-code".into(), at: None }
    }

    /// Every combination of evidence the rules name, and what it must give.
    #[test]
    fn the_state_follows_the_evidence_in_rule_order() {
        use MarkerStatus::*;
        let active = Observation::Active { since: None };
        let pending = Observation::Pending { reason: Some("Resources".into()) };
        let unknown = Observation::Unknown { reason: "bus down".into() };
        let cases: Vec<(LiveObservations, &str)> = vec![
            (LiveObservations::default(), "idle"),
            // A process naming its run set beats everything, the marker included.
            (
                LiveObservations {
                    process_run_set: Some("b-1".into()),
                    marker: Some(marker(StoppedBeforeCompletion, "b-1")),
                    unit: Some(unit(active.clone(), None)),
                    ..Default::default()
                },
                "running",
            ),
            (LiveObservations { process_run_set: Some("other".into()), ..Default::default() }, "running"),
            (LiveObservations { unit: Some(unit(active.clone(), None)), ..Default::default() }, "starting"),
            (LiveObservations { unit: Some(unit(pending, None)), ..Default::default() }, "starting"),
            (
                LiveObservations {
                    unit: Some(unit(unknown.clone(), None)),
                    marker: Some(marker(AbortedByOperator, "b-1")),
                    ..Default::default()
                },
                "unknown",
            ),
            // A unit that cannot be asked is unknown even while a driver
            // process runs: the process is named, the unit's fate is not guessed.
            (
                LiveObservations {
                    unit: Some(unit(unknown, None)),
                    process_run_set: Some("b-1".into()),
                    ..Default::default()
                },
                "unknown",
            ),
            (LiveObservations { unit: Some(unit(finished(2), None)), ..Default::default() }, "launch_failed"),
            (
                LiveObservations { unit: Some(unit(finished(1), Some(BatchStatus::Failed))), ..Default::default() },
                "idle",
            ),
            (
                LiveObservations { unit: Some(unit(finished(0), Some(BatchStatus::Completed))), ..Default::default() },
                "idle",
            ),
            (
                LiveObservations {
                    unit: Some(unit(finished(143), Some(BatchStatus::Stopped))),
                    marker: Some(marker(StoppedBeforeCompletion, "b-1")),
                    ..Default::default()
                },
                "stopped_resumable",
            ),
            (
                LiveObservations {
                    unit: Some(unit(finished(143), Some(BatchStatus::Stopped))),
                    marker: Some(marker(AbortedByOperator, "b-1")),
                    ..Default::default()
                },
                "aborted",
            ),
            // A marker about an older run set does not speak for a newer launch.
            (
                LiveObservations {
                    unit: Some(unit(finished(0), Some(BatchStatus::Completed))),
                    marker: Some(marker(StoppedBeforeCompletion, "older")),
                    ..Default::default()
                },
                "idle",
            ),
            (
                LiveObservations { marker: Some(marker(StoppedBeforeCompletion, "b-0")), ..Default::default() },
                "stopped_resumable",
            ),
            (LiveObservations { marker: Some(marker(Launched, "b-0")), ..Default::default() }, "idle"),
            // The unit ended and the outcome was left at running: interrupted
            // (never while a driver of it is alive: that is running, above).
            (
                LiveObservations {
                    unit: Some(unit(finished(137), Some(BatchStatus::Running))),
                    marker: Some(marker(Launched, "b-1")),
                    ..Default::default()
                },
                "interrupted",
            ),
            (
                LiveObservations {
                    unit: Some(unit(active.clone(), Some(BatchStatus::Running))),
                    process_run_set: Some("b-1".into()),
                    ..Default::default()
                },
                "running",
            ),
        ];
        for (i, (obs, want)) in cases.iter().enumerate() {
            assert_eq!(derive(obs).label(), *want, "case {i}: {obs:?}");
        }
        let interrupted = derive(&cases.iter().find(|(_, w)| *w == "interrupted").unwrap().0);
        assert!(interrupted.resumable());
        assert_eq!(
            interrupted.words(),
            "Interrupted: b-1 ended without recording its end (its unit u1 ended (exit status 137, exit-code) and no \
             driver of it is alive, but its batch_outcome.json still says running). Resume runs its unfinished cells."
        );
        // A healthy running batch's outcome is never worded as a dead driver.
        assert_eq!(outcome_words(BatchStatus::Running), "still marked running");
        let unknown_alive = cases.iter().find(|(o, w)| *w == "unknown" && o.process_run_set.is_some()).unwrap();
        assert_eq!(
            derive(&unknown_alive.0).words(),
            "Unknown: u1 could not be observed (bus down). A driver of b-1 is alive on this host.",
        );
    }

    #[test]
    fn cells_join_their_records_and_the_eta_comes_from_ended_cells() {
        use crate::console::spec::{cell_id, Cell};
        use crate::drive::records::{CellRecord, CellStatus};
        let cell = |seed: i64| {
            let f: std::collections::BTreeMap<String, serde_json::Value> = [("seed".to_owned(), seed.into())].into();
            Cell { id: cell_id(&f), factors: f }
        };
        let cells: Vec<Cell> = (0..5).map(cell).collect();
        let at = |s: i64| Some(Timestamp(s * 1000).to_rfc3339());
        let rec = |c: &Cell, st, start: i64, end: Option<i64>, tokens| CellRecord {
            attempts: 1,
            started_at: at(start),
            ended_at: end.and_then(at),
            tokens,
            ..CellRecord::new(c, st)
        };
        let records = vec![
            rec(&cells[0], CellStatus::Done, 0, Some(60), Some(1000)),
            rec(&cells[1], CellStatus::Failed, 0, Some(120), None),
            rec(&cells[2], CellStatus::Running, 100, None, None),
        ];
        let (rows, totals, eta) = cell_rows(
            &cells,
            &records,
            Some(crate::live::spend::Prices { input: 2.0, output: 2.0, cached: 2.0 }),
            2,
            Some(999.0),
            Timestamp(130_000),
        );
        assert_eq!(rows[2].duration_s, Some(30.0), "a running cell's duration runs to now");
        assert_eq!(rows[3].status, LiveCellStatus::Planned);
        assert_eq!(rows[0].cost, Some(2.0));
        assert_eq!((totals.done, totals.failed, totals.running, totals.pending), (1, 1, 1, 2));
        // Median of 60 s and 120 s (the upper one of two; history's 999 s no
        // longer counts once a cell ended): the running cell has 90 s to go,
        // two not started 120 s each, 2 at once.
        assert_eq!(eta, Some((90.0 + 2.0 * 120.0) / 2.0));
        // Issue 40 (item 6): time left moves down while cells run, not only
        // when one ends ...
        let later = cell_rows(&cells, &records, None, 2, None, Timestamp(160_000)).2;
        assert_eq!(later, Some((60.0 + 2.0 * 120.0) / 2.0));
        // ... and before any cell ended it comes from history's typical time.
        let first = vec![rec(&cells[0], CellStatus::Running, 100, None, None)];
        assert_eq!(
            cell_rows(&cells, &first, None, 2, Some(50.0), Timestamp(110_000)).2,
            Some((40.0 + 4.0 * 50.0) / 2.0)
        );
        assert_eq!(
            cell_rows(&cells, &first, None, 2, None, Timestamp(110_000)).2,
            None,
            "nothing typical yet: not known"
        );
    }

    #[test]
    fn a_live_view_carries_a_page_of_its_cells() {
        let q = |status: Option<&str>, offset: Option<&str>, limit: Option<&str>| {
            LiveParams {
                cells_status: status.map(Into::into),
                cells_offset: offset.map(Into::into),
                cells_limit: limit.map(Into::into),
            }
            .parse()
        };
        assert_eq!(q(None, None, None).unwrap(), LiveQuery { status: None, offset: 0, limit: DEFAULT_LIVE_CELLS });
        assert_eq!(
            q(Some("lost"), None, None).unwrap_err().to_string(),
            "cells_status=\"lost\": not one of planned, pending, running, done, failed, stopped"
        );
        assert!(q(None, None, Some("0")).is_err() && q(None, Some("x"), None).is_err());
        let cell = |id: &str, status: &str| LiveCell {
            cell: id.into(),
            factors: Default::default(),
            status: LiveCellStatus::from_word(status).expect("a state"),
            attempts: 0,
            tokens: None,
            cost: None,
            duration_s: None,
            score: None,
            samples: None,
            failure: None,
            run: None,
            spend: None,
            last_write: None,
            stall: None,
            quiet: None,
            so_far: None,
        };
        let view = LiveView {
            generated_at: Timestamp(0),
            state: LiveState::Idle { last_run_set: None, last_outcome: None },
            words: String::new(),
            unit: None,
            run_set: None,
            outcome: None,
            cells: vec![cell("a", "done"), cell("b", "failed"), cell("c", "done"), cell("d", "done")],
            cells_matching: 4,
            cells_offset: 0,
            totals: LiveTotals::default(),
            progress: 0.0,
            eta_s: None,
            resumable: false,
            resumable_run_sets: Vec::new(),
            currency: "USD".into(),
            others: Vec::new(),
            spend: None,
            stalls: Vec::new(),
            rate_limits: Default::default(),
            calls_unseen: None,
            problems: Vec::new(),
            version: String::new(),
        };
        let page = view.page(&q(Some("done"), Some("1"), Some("1")).unwrap());
        assert_eq!((page.cells_matching, page.cells_offset), (3, 1));
        assert_eq!(page.cells.iter().map(|c| c.cell.as_str()).collect::<Vec<_>>(), ["c"]);
    }

    #[test]
    fn a_refused_launch_says_why_from_its_log() {
        let tail: Vec<String> = [
            "doctor: BLOCKING: program \"harness9\" is not found on PATH",
            "runboard drive: the doctor found 1 blocking problem(s); nothing was started",
        ]
        .map(String::from)
        .to_vec();
        let f = unit_failure("u1", Some(2), "exit-code", &tail);
        assert!(f.refusal);
        assert_eq!(f.title, "The batch was refused before it started.");
        assert_eq!(f.reason.as_deref(), Some(tail[0].as_str()));
        let state =
            derive(&LiveObservations { unit: Some(unit(finished(2), None)), failure: Some(f), ..Default::default() });
        assert_eq!(
            state.words(),
            "The batch was refused before it started. doctor: BLOCKING: program \"harness9\" is not found on PATH"
        );
    }
}
