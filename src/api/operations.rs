//! The operation table: every operation the console answers, declared once.
//!
//! A row says, in order: the operation's one name (an identifier, then the
//! same as a string — a Rust attribute needs the literal), its HTTP method and
//! REST path, its input and output types, what the server is "doing" while it
//! answers (the words of an internal error), the command it is on the
//! command line when it is one by itself (`=> cli "status"`: `runboard
//! status`; `=> auto "log"`: `runboard auto log`), and options (`status =
//! 202`, or a `file = …` that turns an answer into a download).
//!
//! [`operations!`](crate::operations) hands the rows to a macro of the caller's,
//! which makes its surface from them:
//!
//! | made here and elsewhere                    | from each row                                  |
//! |--------------------------------------------|------------------------------------------------|
//! | [`Console`] (here)                         | one method `name(&self, Input) -> Result<Output, ApiError>` |
//! | [`op`] and [`Operation`] (here)            | a type per operation carrying its constants    |
//! | [`OPERATIONS`] (here)                      | name, method, path, doing, for docs and tests  |
//! | the server functions (`app::api`)          | `/sfn/{name}`, GET (URL) or POST (JSON), same input and output |
//! | the REST routes (`server::web::http`)           | `{method} {path}`, one generic handler         |
//! | the both-surfaces test (`server/tests/suite/http.rs`) | every row asked on both surfaces          |
//! | the commands (`server::cli`)               | `runboard <cli>`: arguments from the input (its `clap::Args`, feature `cli`), the answer in words ([`ForTerminal`](super::terminal::ForTerminal)) or `--json` |
//!
//! The input of a GET is its path's `{parameters}` and its query string; of a
//! POST, its path's parameters and its JSON body (one object, unknown fields
//! refused, every reason at once). Path parameters are named like the input's
//! fields.
//!
//! Not operations (written by hand in `server::web::http`, each said there): the
//! version streams and the log stream (server-sent events) and the server's
//! own debug figures.

use super::*;

/// The HTTP method of an operation: GET reads (cacheable; never counted as
/// state-changing by the origin check), POST changes something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Get,
    Post,
}

impl Method {
    pub const fn word(self) -> &'static str {
        match self {
            Self::Get => "GET",
            Self::Post => "POST",
        }
    }
}

/// One row of the table, for documentation and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OperationInfo {
    pub name: &'static str,
    pub method: Method,
    pub path: &'static str,
    pub doing: &'static str,
    /// The command that is this operation alone (`status`, `auto log`).
    pub cli: Option<&'static str>,
}

/// A download instead of a JSON body (the evidence export as CSV).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileAnswer {
    pub content_type: &'static str,
    pub file_name: &'static str,
    pub body: String,
}

/// One operation as a type: what each surface needs to serve it.
pub trait Operation: 'static {
    type Input: Serialize + serde::de::DeserializeOwned + Default + Send + 'static;
    type Output: Serialize + serde::de::DeserializeOwned + Send + 'static;
    const NAME: &'static str;
    const METHOD: Method;
    const PATH: &'static str;
    const DOING: &'static str;
    /// The HTTP status of a success (202 when the answer only says it started).
    const STATUS: u16 = 200;
    fn call(console: &dyn Console, input: Self::Input) -> Result<Self::Output, ApiError>;
    /// The answer as a download, when it is one.
    fn file(_output: &Self::Output) -> Option<FileAnswer> {
        None
    }
}

/// The types the rows name, for a caller's macro to `use … ::*`.
pub mod types {
    pub use super::super::{
        AutoLogQuery, AutoModeRequest, CampaignInfo, CatalogueQuery, CellSamples, CompareQuery, CoverageParams,
        DraftForm, EvidenceQuery, ExportQuery, Exported, Nothing, ReportQuery, RunCall, RunName, RunTrial, RunTrials,
        SamplesQuery, ScopeQuery, SpecPath, TimingQuery, Version,
    };
    pub use crate::access::audit::{AuditPage, AuditQuery};
    pub use crate::auto::view::{AutoView, LogPage, TickReport};
    pub use crate::console::catalogue::CatalogueView;
    pub use crate::console::coverage::{CellPage, CellParams, CoverageView};
    pub use crate::console::draft::{DraftPreview, DraftRequest, SavedDraft};
    pub use crate::console::launch::{
        LaunchRequest, Launched, PauseRequest, ResumeRequest, StopCellReport, StopCellRequest, StopReport, StopRequest,
    };
    pub use crate::console::preflight::Preflight;
    pub use crate::live::logs::{LogChunk, LogQuery, LogsQuery, LogsView};
    pub use crate::live::telemetry::TelemetryView;
    pub use crate::live::upkeep::{UpkeepDone, UpkeepRequest, UpkeepView};
    pub use crate::live::{LiveParams, LiveView};
    pub use crate::results::cohorts::{CohortsView, Comparison, DeleteRequest, Preset, RenameRequest};
    pub use crate::results::overview::OverviewView;
    pub use crate::results::propose::{Proposals, ProposeParams};
    pub use crate::results::publish::{PublishStatus, Running};
    pub use crate::results::report::Report;
    pub use crate::results::research::{DecisionRequest, ResearchState, ResearchView};
    pub use crate::results::timing::TimingView;
    pub use crate::results::Evidence;
    pub use crate::runsets::{RunSetSummary, TagEdit, TagsView};
    pub use crate::runview::acceptance::ReportEntry;
    pub use crate::runview::analysis::RunAnalysis;
    pub use crate::runview::lineage::Lineage;
    pub use crate::runview::listing::{ListParams, RunPage};
    pub use crate::runview::trialgraph::GraphEntry;
    pub use crate::runview::trials::TrialPage;
    pub use crate::runview::view::{AcceptedFactor, CallEvent, CallView, MemoryVersion, RunRounds, RunView};
    /// Autopilot settings as sent (checked by the server: every reason).
    pub type Settings = serde_json::Value;
    /// Keys to merge into the research settings (`null` removes one).
    pub type SettingsPatch = serde_json::Map<String, serde_json::Value>;
}

/// Calls `$then! { rows }` with every row of the operation table (see the
/// module's documentation for a row's parts). The names in the rows resolve
/// at the caller: `use runboard::api::operations::types::*;` first.
#[macro_export]
macro_rules! operations {
    ($then:ident) => {
        $then! {
            // ---- the campaign and its runs ----
            /// What the header shows of the campaign being served.
            campaign "campaign": GET "/api/campaign", Nothing => CampaignInfo, "reading the campaign";
            /// The run list, filtered, sorted and paged as the query asks.
            runs "runs": GET "/api/runs", ListParams => RunPage, "listing runs";
            /// Changes whenever the run list may have.
            runs_version "runs_version": GET "/api/runs/version", Nothing => Version, "reading the run list version";
            /// One run: its summary, parts and problems.
            run "run": GET "/api/runs/{name}", RunName => RunView, "reading a run";
            /// Changes whenever the run's view may have.
            run_version "run_version": GET "/api/runs/{name}/version", RunName => Version, "reading a run's version";
            run_analysis "run_analysis": GET "/api/runs/{name}/analysis", RunName => RunAnalysis, "analysing a run";
            /// Every call the events name, in call order.
            run_calls "run_calls": GET "/api/runs/{name}/calls", RunName => Vec<CallEvent>, "reading a run's calls";
            /// Call `n` read from its file; `unreadable` when it cannot be read.
            run_call "run_call": GET "/api/runs/{name}/calls/{call}", RunCall => CallView, "reading a call";
            /// Every memory version, each with its diff from the one before.
            run_memory "run_memory": GET "/api/runs/{name}/memory", RunName => Vec<MemoryVersion>, "reading a run's memory";
            /// Each written round counted, with its threshold and plan.
            run_rounds "run_rounds": GET "/api/runs/{name}/rounds", RunName => RunRounds, "reading a run's rounds";
            /// The accepted factors, in round order.
            run_accepted "run_accepted": GET "/api/runs/{name}/accepted", RunName => Vec<AcceptedFactor>, "reading a run's accepted factors";
            /// A page of the run's trials.
            run_trials "run_trials": GET "/api/runs/{name}/trials", RunTrials => TrialPage, "reading a run's trials";
            run_lineage "run_lineage": GET "/api/runs/{name}/lineage/{trial}", RunTrial => Lineage, "reading a trial's lineage";
            run_trial_graphs "run_trial_graphs": GET "/api/runs/{name}/trial-graphs", RunName => Vec<GraphEntry>, "reading trial graphs";
            run_reports "run_reports": GET "/api/runs/{name}/reports", RunName => Vec<ReportEntry>, "reading acceptance reports";

            // ---- the console: live, coverage, drafting, launching, control ----
            /// The live state of the batch — idle, starting, running, stopped
            /// (resumable), aborted, launch failed and why — its counts and
            /// spend, and a page of its cells.
            live "live": GET "/api/live", LiveParams => LiveView, "reading the live state" => cli "status";
            /// Changes whenever the live view may have (`stat` only).
            live_version "live_version": GET "/api/live/version", Nothing => Version, "reading the live version";
            /// Which planned cells are covered, running, failed or gaps, per factor.
            coverage "coverage": GET "/api/coverage", CoverageParams => CoverageView, "reading coverage" => cli "coverage";
            cells "cells": GET "/api/cells", CellParams => CellPage, "reading cells";
            run_sets "run_sets": GET "/api/runsets", Nothing => Vec<RunSetSummary>, "listing run sets";
            /// What the drafting form offers: factors and levels, tasks, models, endpoints.
            draft_form "draft_form": GET "/api/draft-form", Nothing => DraftForm, "reading the drafting form";
            draft_preview "draft_preview": POST "/api/drafts/preview", DraftRequest => DraftPreview, "drafting";
            draft_save "draft_save": POST "/api/drafts", DraftRequest => SavedDraft, "saving a draft";
            /// The static preflight of a spec (every refusal, and the prediction).
            preflight "preflight": POST "/api/preflight", SpecPath => Preflight, "checking a spec";
            /// Launch a spec (a draft is committed under the next number)
            /// through the one launch path: checked, preflighted, started by
            /// the campaign's launcher.
            start "start": POST "/api/control/start", LaunchRequest => Launched, "launching" => cli "launch";
            /// Stop the batch and keep it resumable.
            pause "pause": POST "/api/control/pause", PauseRequest => StopReport, "pausing" => cli "pause";
            /// Stop the batch and abort it (and turn auto mode off): it will not be resumed.
            stop "stop": POST "/api/control/stop", StopRequest => StopReport, "stopping" => cli "stop";
            /// Ends one running cell (SIGTERM to its processes); its batch goes on.
            stop_cell "stop_cell": POST "/api/control/stop-cell", StopCellRequest => StopCellReport, "ending a cell";
            /// Resume a stopped run set: its unfinished cells run again.
            resume "resume": POST "/api/control/resume", ResumeRequest => Launched, "resuming" => cli "resume";
            /// A run set's logs: each process's (`logs/<name>.log`) and each
            /// driving unit's, with sizes.
            logs "logs": GET "/api/logs/{run_set}", LogsQuery => LogsView, "listing a run set's logs";
            /// The next chunk of one log after `after` (a chunk's `next`; none:
            /// its last 16 KiB), at most 64 KiB, across a rotation.
            log "log": GET "/api/logs/{run_set}/{name}", LogQuery => LogChunk, "reading a log";

            // ---- results ----
            /// The results by a factor: pass rates with 95 % intervals,
            /// differences to the baseline, per task and model, the cells that did
            /// not pass by factor and reason.
            evidence "evidence": GET "/api/evidence", EvidenceQuery => Evidence, "reading the evidence" => cli "evidence";
            /// Every counted cell with its provenance, as JSON or CSV.
            evidence_export "evidence_export": GET "/api/evidence/export", ExportQuery => Exported, "exporting the evidence",
                file = $crate::api::Exported::as_file;
            /// The proposal guide: the next batches ranked by what they would
            /// resolve, each with its predicted cost and its draft request.
            propose "propose": GET "/api/propose", ProposeParams => Proposals, "ranking the next batches";
            /// Where the cells' time went and which timings count.
            timing "timing": GET "/api/timing", TimingQuery => TimingView, "reading the timings" => cli "timing";
            /// The provider catalogue: each model and endpoint, whether it can
            /// be used now and why not, and what it has been used for.
            catalogue "catalogue": GET "/api/catalogue", CatalogueQuery => CatalogueView, "reading the catalogue" => cli "catalogue";
            /// Each endpoint now: its calls of the last minute (rates, latency,
            /// in flight) and its engine's metrics (vLLM's `/metrics`), busy or not.
            telemetry "telemetry": GET "/api/telemetry", Nothing => TelemetryView, "reading endpoint telemetry" => cli "telemetry";
            /// What the campaign left lying about (stale drafts, temporary files of
            /// killed writers, units and run sets whose process is gone, orphaned
            /// logs), each with its safe action, and the disk each run set uses.
            upkeep "upkeep": GET "/api/upkeep", Nothing => UpkeepView, "reading upkeep";
            /// One upkeep action on one listed finding, with its token: done under
            /// the campaign lock only if the finding is unchanged; logged.
            upkeep_act "upkeep_act": POST "/api/upkeep", UpkeepRequest => UpkeepDone, "doing upkeep";
            /// The landing page: progress over time, latest batches, attention.
            overview "overview": GET "/api/overview", Nothing => OverviewView, "reading the overview";
            /// The cohort presets (or why their file cannot be read).
            cohorts "cohorts": GET "/api/cohorts", Nothing => CohortsView, "reading the cohort presets";
            cohort_save "cohort_save": POST "/api/cohorts", Preset => CohortsView, "saving a cohort preset";
            cohort_rename "cohort_rename": POST "/api/cohorts/rename", RenameRequest => CohortsView, "renaming a cohort preset";
            cohort_delete "cohort_delete": POST "/api/cohorts/delete", DeleteRequest => CohortsView, "deleting a cohort preset";
            /// Presets side by side on the evidence and timing figures.
            cohort_compare "cohort_compare": GET "/api/cohorts/compare", CompareQuery => Comparison, "comparing cohorts";
            /// The research state and its summary.
            research "research": GET "/api/research", Nothing => ResearchView, "reading the research state";
            /// Replaces the research state (checked: every reason; a stale copy is 409).
            research_save "research_save": POST "/api/research", ResearchState => ResearchView, "saving the research state";
            /// Merges into the research settings (`null` removes a key).
            research_settings "research_settings": POST "/api/research/settings", SettingsPatch => ResearchView, "merging the research settings";
            /// Records a decision now.
            research_decide "research_decide": POST "/api/research/decisions", DecisionRequest => ResearchView, "recording a decision";
            /// What was last published, when, and what changed since.
            publish_status "publish_status": GET "/api/publish/status", Nothing => PublishStatus, "reading the publication status";
            /// Starts a push (one at a time: 409 while one runs); 202, its end is in the status.
            publish_push "publish_push": POST "/api/publish", Nothing => Running, "starting a push", status = 202;
            /// Every run-set tag, with its note and run sets.
            tags "tags": GET "/api/tags", Nothing => TagsView, "reading the tags" => cli "tags";
            /// One tag's edit: run sets added or removed, its note, or the tag deleted.
            tag_edit "tag_edit": POST "/api/tags", TagEdit => TagsView, "editing a tag" => cli "tag";
            /// The run sets with cells in scope, newest first.
            reports "reports": GET "/api/reports", ScopeQuery => Vec<RunSetSummary>, "listing the reports";
            /// One run set's report.
            report "report": GET "/api/reports/{run_set}", ReportQuery => Report, "reading the report";
            /// The samples behind one cell, from its harness's log (Inspect
            /// AI's JSON or `.eval`), read without holding the log; matched
            /// with another cell's by id and epoch (`against`), the flips.
            samples "samples": GET "/api/samples/{run_set}/{cell}", SamplesQuery => CellSamples, "reading a cell's samples" => cli "samples";

            /// The record of every control (each state-changing request, from a
            /// page, the command line or REST, refused ones too), newest first.
            audit "audit": GET "/api/audit", AuditQuery => AuditPage, "reading the audit log" => cli "audit";

            // ---- the autopilot ----
            /// The autopilot: its state, the dry run, lanes and caps.
            auto "auto": GET "/api/auto", Nothing => AutoView, "reading the autopilot" => auto "status";
            /// Changes whenever the Auto page may have (`stat` only).
            auto_version "auto_version": GET "/api/auto/version", Nothing => Version, "reading the autopilot's version";
            /// The dry run alone: every guard and the decision, nothing done.
            auto_explain "auto_explain": GET "/api/auto/explain", Nothing => TickReport, "explaining the autopilot" => auto "explain";
            /// The event log, newest first.
            auto_log "auto_log": GET "/api/auto/log", AutoLogQuery => LogPage, "reading the autopilot's log" => auto "log";
            /// Runs one tick now, as the server's timer does (for a machine
            /// that runs no server: from cron or a timer).
            auto_tick "auto_tick": POST "/api/auto/tick", Nothing => TickReport, "running a tick" => auto "tick";
            /// Saves settings (422 with every reason).
            auto_settings "auto_settings": POST "/api/auto/settings", Settings => AutoView, "saving the autopilot's settings";
            /// `on`, `off` or `finishing`.
            auto_mode "auto_mode": POST "/api/auto/{mode}", AutoModeRequest => AutoView, "switching auto mode";
        }
    };
}

/// `true` when two strings are equal, at compile time.
const fn same(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() {
        return false;
    }
    let mut i = 0;
    while i < a.len() {
        if a[i] != b[i] {
            return false;
        }
        i += 1;
    }
    true
}

macro_rules! method {
    (GET) => {
        Method::Get
    };
    (POST) => {
        Method::Post
    };
}

macro_rules! command {
    () => {
        None
    };
    (cli $name:tt) => {
        Some($name)
    };
    (auto $name:tt) => {
        Some(concat!("auto ", $name))
    };
}

macro_rules! option {
    (status = $status:expr) => {
        const STATUS: u16 = $status;
    };
    (file = $file:expr) => {
        fn file(output: &Self::Output) -> Option<FileAnswer> {
            ($file)(output)
        }
    };
}

macro_rules! declare {
    ($( $(#[$doc:meta])* $name:ident $ep:literal : $method:ident $path:literal, $input:ty => $output:ty, $doing:literal $(=> $group:ident $cli:tt)? $(, $opt:ident = $val:expr)* ; )*) => {
        /// Every operation the console answers, typed. Implemented by the
        /// server over a campaign folder; methods may block (they read
        /// files), so call them off an async runtime.
        pub trait Console: Send + Sync + 'static {
            $( $(#[$doc])* fn $name(&self, input: $input) -> Result<$output, ApiError>; )*
        }

        /// One type per operation (named as the operation), each an [`Operation`].
        #[allow(non_camel_case_types)]
        pub mod op {
            use super::types::*;
            use super::{Console, FileAnswer, Method, Operation};
            use crate::api::ApiError;
            $(
                $(#[$doc])*
                #[derive(Debug, Clone, Copy)]
                pub struct $name;
                impl Operation for $name {
                    type Input = $input;
                    type Output = $output;
                    const NAME: &'static str = $ep;
                    const METHOD: Method = method!($method);
                    const PATH: &'static str = $path;
                    const DOING: &'static str = $doing;
                    fn call(console: &dyn Console, input: $input) -> Result<$output, ApiError> {
                        console.$name(input)
                    }
                    $( option!($opt = $val); )*
                }
                const _: () = assert!(super::same($ep, stringify!($name)), "an operation's two names differ");
            )*
        }

        /// Every row of the table, in order.
        pub const OPERATIONS: &[OperationInfo] = &[
            $( OperationInfo { name: $ep, method: method!($method), path: $path, doing: $doing, cli: command!($($group $cli)?) }, )*
        ];
    };
}

use types::*;
crate::operations!(declare);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_paths_are_unique_and_paths_are_under_api() {
        let mut names: Vec<_> = OPERATIONS.iter().map(|o| o.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), OPERATIONS.len(), "a name is used twice");
        let mut routes: Vec<_> = OPERATIONS.iter().map(|o| (o.method.word(), o.path)).collect();
        routes.sort_unstable();
        routes.dedup();
        assert_eq!(routes.len(), OPERATIONS.len());
        for o in OPERATIONS {
            assert!(o.path.starts_with("/api/"), "{}", o.path);
            assert!(!o.doing.is_empty() && o.doing.chars().all(|c| !c.is_uppercase()), "{}", o.doing);
        }
        assert_eq!(<op::publish_push as Operation>::STATUS, 202);
        assert_eq!(<op::run as Operation>::STATUS, 200);
    }
}
