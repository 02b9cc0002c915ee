//! The console's one typed service boundary: what pages (server functions) and
//! the JSON API (REST) may ask, and how either is refused.
//!
//! Every read is one method of [`ssr::Console`], taking typed queries and
//! answering `Result<T, ApiError>`. The REST routes (`server::http`) and the
//! server functions below call the same method, parse queries with the same
//! parser ([`TrialParams::parse`], [`parse_call_number`]) and answer a refusal
//! with the same status and the same JSON body, `{"kind": …, "error": "…"}`.
//!
//! Read-only calls use GET (`GetUrl`) so they are cacheable and never count as
//! state-changing for the origin check.

use leptos::prelude::*;
use runboard::runview::acceptance::ReportEntry;
use runboard::runview::analysis::RunAnalysis;
use runboard::runview::lineage::Lineage;
pub use runboard::runview::listing::ListParams;
use runboard::runview::listing::RunPage;
use runboard::runview::trialgraph::GraphEntry;
pub use runboard::runview::trials::TrialParams;
use runboard::runview::trials::{BadQuery, TrialPage};
use runboard::runview::view::{AcceptedFactor, CallEvent, CallView, MemoryVersion, RunRounds, RunView};
use serde::{Deserialize, Serialize};
use server_fn::error::{FromServerFnError, ServerFnErrorErr};

/// What the header shows of the campaign being served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignInfo {
    pub name: String,
    /// Absolute path of the campaign root on the server.
    pub root: String,
    /// Whether this is the generated demo campaign.
    pub demo: bool,
}

/// Why a request was refused, as every surface answers it: the kind (which
/// fixes the HTTP status) and the reason in words. Internals (a panic, an I/O
/// error's detail) are logged on the server, never put here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[error("{error}")]
pub struct ApiError {
    pub kind: ErrorKind,
    /// The reason, in words (for a refusal with several reasons, the first
    /// and how many more).
    pub error: String,
    /// Every reason (at least one, whatever the kind; a refusal with
    /// several — a launch's preflight, a draft's form — lists them all, so
    /// they can be fixed in one go).
    #[serde(default)]
    pub reasons: Vec<String>,
}

/// The kinds of refusal, each with its HTTP status.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// 404: no run has the name.
    NoSuchRun,
    /// 404: no written round of the run holds the trial.
    NoSuchTrial,
    /// 404: no such endpoint or file.
    NotFound,
    /// 422: a query value does not parse (the field and the value are named).
    BadQuery,
    /// 422: the part asked for exists but cannot be read (the reason is given).
    Unreadable,
    /// 422: a request was understood and refused (a launch's preflight, a
    /// path outside the campaign, a spec that does not parse); `reasons` lists
    /// every reason.
    Refused,
    /// 409: another action holds the campaign (a stop in progress), or what is
    /// asked for is already happening.
    Busy,
    /// 500: the server failed; the detail is in its log.
    Internal,
}

impl ErrorKind {
    pub const fn status(self) -> u16 {
        match self {
            Self::NoSuchRun | Self::NoSuchTrial | Self::NotFound => 404,
            Self::BadQuery | Self::Unreadable | Self::Refused => 422,
            Self::Busy => 409,
            Self::Internal => 500,
        }
    }
}

impl ApiError {
    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    pub fn new(kind: ErrorKind, error: impl Into<String>) -> Self {
        let error = error.into();
        Self { kind, reasons: vec![error.clone()], error }
    }

    /// An answer of `kind` with every reason (at least one): `error` is the
    /// first and how many more.
    pub fn with_reasons(kind: ErrorKind, reasons: Vec<String>) -> Self {
        let error = match reasons.as_slice() {
            [] => "refused".to_owned(),
            [one] => one.clone(),
            [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
        };
        let reasons = if reasons.is_empty() { vec![error.clone()] } else { reasons };
        Self { kind, error, reasons }
    }

    /// A refusal with every reason (at least one).
    pub fn refused(reasons: Vec<String>) -> Self {
        Self::with_reasons(ErrorKind::Refused, reasons)
    }

    pub fn busy(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::Busy, what)
    }

    pub fn no_such_run(name: &str) -> Self {
        Self::new(ErrorKind::NoSuchRun, format!("no run named {name}"))
    }

    pub fn no_such_trial(run: &str, trial: &str) -> Self {
        Self::new(ErrorKind::NoSuchTrial, format!("no written round of {run} holds a trial named {trial}"))
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self::new(ErrorKind::NotFound, what)
    }

    pub fn bad_query(bad: &BadQuery) -> Self {
        Self::new(ErrorKind::BadQuery, bad.to_string())
    }

    pub fn unreadable(reason: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unreadable, reason)
    }

    /// A failure of the server's own; `doing` says what it was doing. Log the
    /// detail where it happened (see `ssr::internal`).
    pub fn internal(doing: &str) -> Self {
        Self::new(ErrorKind::Internal, format!("internal error while {doing}"))
    }
}

impl From<BadQuery> for ApiError {
    fn from(b: BadQuery) -> Self {
        Self::bad_query(&b)
    }
}

impl FromServerFnError for ApiError {
    type Encoder = server_fn::codec::JsonEncoding;

    fn from_server_fn_error(e: ServerFnErrorErr) -> Self {
        match e {
            // The arguments did not decode: the request was malformed.
            ServerFnErrorErr::Args(why) | ServerFnErrorErr::MissingArg(why) => {
                Self::new(ErrorKind::BadQuery, format!("bad arguments: {why}"))
            }
            other => Self::new(ErrorKind::Internal, other.to_string()),
        }
    }
}

/// Reads a call number as a URL gives it: `12`, `0012` or `0012.json`.
pub fn parse_call_number(text: &str) -> Result<u32, ApiError> {
    text.strip_suffix(".json").unwrap_or(text).parse().map_err(|_| {
        ApiError::bad_query(&BadQuery { field: "call".into(), value: text.into(), problem: "not a call number".into() })
    })
}

#[cfg(feature = "ssr")]
pub mod ssr {
    //! The seam between the app and the server's adapters.
    use super::{ApiError, CampaignInfo};
    use super::{CoverageParams, DraftForm};
    use runboard::coverage::{CellPage, CellParams, CoverageView};
    use runboard::draft::{DraftPreview, DraftRequest, SavedDraft};
    use runboard::launch::{LaunchRequest, Launched, PauseRequest, ResumeRequest, StopReport, StopRequest};
    use runboard::live::{LiveParams, LiveView};
    use runboard::preflight::Preflight;
    use runboard::runsets::RunSetSummary;
    use runboard::runview::acceptance::ReportEntry;
    use runboard::runview::analysis::RunAnalysis;
    use runboard::runview::lineage::Lineage;
    use runboard::runview::listing::{ListQuery, RunPage};
    use runboard::runview::trialgraph::GraphEntry;
    use runboard::runview::trials::{TrialPage, TrialQuery};
    use runboard::runview::view::{AcceptedFactor, CallEvent, CallView, MemoryVersion, RunRounds, RunView};
    use std::sync::Arc;

    /// Every read the console answers, typed. Implemented by the `server`
    /// crate; methods may block (they read files) and are called off the async
    /// runtime. A run is named by its folder name or its path under the root.
    pub trait Console: Send + Sync + 'static {
        fn campaign(&self) -> CampaignInfo;
        /// The run list, filtered, sorted and paged as `query` asks.
        fn list_runs(&self, query: &ListQuery) -> Result<RunPage, ApiError>;
        fn run_view(&self, name: &str) -> Result<RunView, ApiError>;
        fn run_version(&self, name: &str) -> Result<String, ApiError>;
        fn run_analysis(&self, name: &str) -> Result<RunAnalysis, ApiError>;
        /// Each written round counted, with its threshold and plan.
        fn run_rounds(&self, name: &str) -> Result<RunRounds, ApiError>;
        /// The accepted factors, in round order.
        fn run_accepted(&self, name: &str) -> Result<Vec<AcceptedFactor>, ApiError>;
        /// Call `n` read from its file; `Unreadable` when the file cannot be read.
        fn run_call(&self, name: &str, call: u32) -> Result<CallView, ApiError>;
        /// A page of the run's trials.
        fn run_trials(&self, name: &str, query: &TrialQuery) -> Result<TrialPage, ApiError>;
        fn run_lineage(&self, name: &str, trial: &str) -> Result<Lineage, ApiError>;
        fn run_trial_graphs(&self, name: &str) -> Result<Vec<GraphEntry>, ApiError>;
        /// Every call the events name, in call order.
        fn run_calls(&self, name: &str) -> Result<Vec<CallEvent>, ApiError>;
        /// Every memory version, each with its diff from the one before.
        fn run_memory(&self, name: &str) -> Result<Vec<MemoryVersion>, ApiError>;
        fn run_reports(&self, name: &str) -> Result<Vec<ReportEntry>, ApiError>;

        // ---- the console: coverage, drafting, launching, live, control ----
        /// The live state of the batch, its counts, and a page of its cells.
        fn live(&self, params: &LiveParams) -> Result<LiveView, ApiError>;
        /// Changes whenever the live view may have (`stat` only).
        fn live_version(&self) -> String;
        fn coverage(&self, params: &CoverageParams) -> Result<CoverageView, ApiError>;
        fn cells(&self, params: &CellParams) -> Result<CellPage, ApiError>;
        fn run_sets(&self) -> Result<Vec<RunSetSummary>, ApiError>;
        /// What the drafting form offers: factors and levels, tasks, models, endpoints.
        fn draft_form(&self) -> Result<DraftForm, ApiError>;
        fn draft_preview(&self, req: &DraftRequest) -> Result<DraftPreview, ApiError>;
        fn save_draft(&self, req: &DraftRequest) -> Result<SavedDraft, ApiError>;
        /// The static preflight of a spec (every refusal, and the prediction).
        fn preflight(&self, path: &str) -> Result<Preflight, ApiError>;
        /// The one launch path.
        fn start(&self, req: &LaunchRequest) -> Result<Launched, ApiError>;
        fn pause(&self, req: &PauseRequest) -> Result<StopReport, ApiError>;
        fn stop(&self, req: &StopRequest) -> Result<StopReport, ApiError>;
        fn resume(&self, req: &ResumeRequest) -> Result<Launched, ApiError>;
        /// The results by a factor: pass rates with 95 % intervals,
        /// differences to the baseline, per task and model, failure axes.
        fn evidence(&self, query: &super::EvidenceQuery) -> Result<runboard::results::Evidence, ApiError>;
        /// The run sets with cells in scope, newest first.
        fn reports(&self, query: &super::ScopeQuery) -> Result<Vec<RunSetSummary>, ApiError>;
        /// One run set's report.
        fn report(
            &self,
            run_set: &str,
            query: &super::ScopeQuery,
        ) -> Result<runboard::results::report::Report, ApiError>;
        /// The cohort presets (or why their file cannot be read).
        fn cohorts(&self) -> Result<runboard::results::cohorts::CohortsView, ApiError>;
        fn cohort_save(
            &self,
            req: &runboard::results::cohorts::Preset,
        ) -> Result<runboard::results::cohorts::CohortsView, ApiError>;
        fn cohort_rename(
            &self,
            req: &runboard::results::cohorts::RenameRequest,
        ) -> Result<runboard::results::cohorts::CohortsView, ApiError>;
        fn cohort_delete(
            &self,
            req: &runboard::results::cohorts::DeleteRequest,
        ) -> Result<runboard::results::cohorts::CohortsView, ApiError>;
        /// Presets side by side on the evidence and timing figures.
        fn cohort_compare(
            &self,
            query: &super::CompareQuery,
        ) -> Result<runboard::results::cohorts::Comparison, ApiError>;
        /// The research state and its summary.
        fn research(&self) -> Result<runboard::results::research::ResearchView, ApiError>;
        /// Replaces the research state (checked: every reason).
        fn research_save(
            &self,
            state: &runboard::results::research::ResearchState,
        ) -> Result<runboard::results::research::ResearchView, ApiError>;
        /// Merges into the research settings (`null` removes a key).
        fn research_settings(
            &self,
            patch: &serde_json::Map<String, serde_json::Value>,
        ) -> Result<runboard::results::research::ResearchView, ApiError>;
        /// Records a decision now.
        fn research_decide(
            &self,
            req: &runboard::results::research::DecisionRequest,
        ) -> Result<runboard::results::research::ResearchView, ApiError>;
        /// What was last published, when, and what changed since.
        fn publish_status(&self) -> Result<runboard::results::publish::PublishStatus, ApiError>;
        /// Starts a push (one at a time: 409 while one runs).
        fn publish_push(&self) -> Result<runboard::results::publish::Running, ApiError>;
        /// The landing page: progress over time, latest batches, attention.
        fn overview(&self) -> Result<runboard::results::overview::OverviewView, ApiError>;
        /// Where the cells' time went and which timings count.
        fn timing(&self, query: &super::TimingQuery) -> Result<runboard::results::timing::TimingView, ApiError>;
        /// The provider catalogue: each model and endpoint, whether it can
        /// be used now and why not, and what it has been used for.
        fn catalogue(&self, query: &super::CatalogueQuery) -> Result<runboard::catalogue::CatalogueView, ApiError>;
        /// Changes whenever the Auto page may have (`stat` only).
        fn auto_version(&self) -> String;
        /// The autopilot: its state, the dry run, lanes and caps.
        fn auto(&self) -> Result<runboard::auto::view::AutoView, ApiError>;
        /// The dry run alone: every guard and the decision, nothing done.
        fn auto_explain(&self) -> Result<runboard::auto::view::TickReport, ApiError>;
        /// The event log, newest first.
        fn auto_log(&self, query: &super::AutoLogQuery) -> Result<runboard::auto::view::LogPage, ApiError>;
        /// `on`, `off` or `finishing`.
        fn auto_mode(&self, mode: runboard::auto::Mode) -> Result<runboard::auto::view::AutoView, ApiError>;
        /// Saves settings (422 with every reason).
        fn auto_settings(&self, settings: serde_json::Value) -> Result<runboard::auto::view::AutoView, ApiError>;
    }

    pub type ConsoleHandle = Arc<dyn Console>;

    /// An internal failure: logged in full here, answered without its detail.
    pub fn internal(doing: &str, detail: impl std::fmt::Display) -> ApiError {
        tracing::error!("{doing}: {detail}");
        ApiError::internal(doing)
    }

    /// Runs a blocking console call on the blocking pool, for a server function:
    /// a refusal also sets the response's status, so a page's call and the REST
    /// endpoint answer alike.
    pub async fn answer<T: Send + 'static>(
        doing: &'static str,
        f: impl FnOnce(&dyn Console) -> Result<T, ApiError> + Send + 'static,
    ) -> Result<T, ApiError> {
        let result = match leptos::prelude::use_context::<ConsoleHandle>() {
            None => Err(internal(doing, "the console is not provided")),
            Some(console) => tokio::task::spawn_blocking(move || f(console.as_ref()))
                .await
                .unwrap_or_else(|e| Err(internal(doing, format!("the console task failed: {e}")))),
        };
        if let Err(e) = &result {
            if let Some(opts) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
                if let Ok(status) = http::StatusCode::from_u16(e.status()) {
                    opts.set_status(status);
                }
            }
        }
        result
    }
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "campaign")]
pub async fn get_campaign() -> Result<CampaignInfo, ApiError> {
    ssr::answer("reading the campaign", |c| Ok(c.campaign())).await
}

/// A page of the run list, the query as the page's URL carries it.
#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "runs")]
pub async fn list_runs(#[server(default)] params: ListParams) -> Result<RunPage, ApiError> {
    ssr::answer("listing runs", move |c| c.list_runs(&params.parse()?)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run")]
pub async fn get_run(name: String) -> Result<RunView, ApiError> {
    ssr::answer("reading a run", move |c| c.run_view(&name)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_call")]
pub async fn get_call(name: String, call: String) -> Result<CallView, ApiError> {
    ssr::answer("reading a call", move |c| c.run_call(&name, parse_call_number(&call)?)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_rounds")]
pub async fn get_rounds(name: String) -> Result<RunRounds, ApiError> {
    ssr::answer("reading a run's rounds", move |c| c.run_rounds(&name)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_accepted")]
pub async fn get_accepted(name: String) -> Result<Vec<AcceptedFactor>, ApiError> {
    ssr::answer("reading a run's accepted factors", move |c| c.run_accepted(&name)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_analysis")]
pub async fn get_analysis(name: String) -> Result<RunAnalysis, ApiError> {
    ssr::answer("analysing a run", move |c| c.run_analysis(&name)).await
}

/// A page of a run's trials, the query as the page's URL carries it.
#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_trials")]
pub async fn get_trials(name: String, #[server(default)] params: TrialParams) -> Result<TrialPage, ApiError> {
    ssr::answer("reading a run's trials", move |c| c.run_trials(&name, &params.parse()?)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_lineage")]
pub async fn get_lineage(name: String, trial: String) -> Result<Lineage, ApiError> {
    ssr::answer("reading a trial's lineage", move |c| c.run_lineage(&name, &trial)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_trial_graphs")]
pub async fn get_trial_graphs(name: String) -> Result<Vec<GraphEntry>, ApiError> {
    ssr::answer("reading trial graphs", move |c| c.run_trial_graphs(&name)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_reports")]
pub async fn get_reports(name: String) -> Result<Vec<ReportEntry>, ApiError> {
    ssr::answer("reading acceptance reports", move |c| c.run_reports(&name)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_calls")]
pub async fn get_calls(name: String) -> Result<Vec<CallEvent>, ApiError> {
    ssr::answer("reading a run's calls", move |c| c.run_calls(&name)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_memory")]
pub async fn get_memory(name: String) -> Result<Vec<MemoryVersion>, ApiError> {
    ssr::answer("reading a run's memory", move |c| c.run_memory(&name)).await
}

// ---- the console ----------------------------------------------------------

use runboard::coverage::{CellPage, CellParams, CoverageView};
use runboard::draft::{DraftPreview, DraftRequest, SavedDraft};
use runboard::launch::{LaunchRequest, Launched, PauseRequest, ResumeRequest, StopReport, StopRequest};
use runboard::live::{LiveParams, LiveView};
use runboard::preflight::Preflight;
use runboard::runsets::RunSetSummary;

/// `?rows=&cols=`: the two factors of the coverage grid.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CoverageParams {
    #[serde(default)]
    pub rows: Option<String>,
    #[serde(default)]
    pub cols: Option<String>,
}

/// What the drafting form offers.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DraftForm {
    /// Each factor's levels, in matrix order.
    pub factors: Vec<(String, Vec<String>)>,
    pub tasks: Vec<runboard::campaign::TaskEntry>,
    pub models: Vec<runboard::campaign::ModelEntry>,
    pub endpoints: Vec<runboard::campaign::EndpointEntry>,
    /// Why the form cannot be used yet (no matrix, a broken `campaign.toml`).
    pub problems: Vec<String>,
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "live")]
pub async fn get_live(#[server(default)] params: LiveParams) -> Result<LiveView, ApiError> {
    ssr::answer("reading the live state", move |c| c.live(&params)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "coverage")]
pub async fn get_coverage(#[server(default)] params: CoverageParams) -> Result<CoverageView, ApiError> {
    ssr::answer("reading coverage", move |c| c.coverage(&params)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "cells")]
pub async fn get_cells(#[server(default)] params: CellParams) -> Result<CellPage, ApiError> {
    ssr::answer("reading cells", move |c| c.cells(&params)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "runsets")]
pub async fn get_run_sets() -> Result<Vec<RunSetSummary>, ApiError> {
    ssr::answer("listing run sets", |c| c.run_sets()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "draft_form")]
pub async fn get_draft_form() -> Result<DraftForm, ApiError> {
    ssr::answer("reading the drafting form", |c| c.draft_form()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "draft_preview")]
pub async fn preview_draft(req: DraftRequest) -> Result<DraftPreview, ApiError> {
    ssr::answer("drafting", move |c| c.draft_preview(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "draft_save")]
pub async fn save_draft(req: DraftRequest) -> Result<SavedDraft, ApiError> {
    ssr::answer("saving a draft", move |c| c.save_draft(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "preflight")]
pub async fn check_preflight(path: String) -> Result<Preflight, ApiError> {
    ssr::answer("checking a spec", move |c| c.preflight(&path)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "control_start")]
pub async fn control_start(req: LaunchRequest) -> Result<Launched, ApiError> {
    ssr::answer("launching", move |c| c.start(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "control_pause")]
pub async fn control_pause(req: PauseRequest) -> Result<StopReport, ApiError> {
    ssr::answer("pausing", move |c| c.pause(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "control_stop")]
pub async fn control_stop(req: StopRequest) -> Result<StopReport, ApiError> {
    ssr::answer("stopping", move |c| c.stop(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "control_resume")]
pub async fn control_resume(req: ResumeRequest) -> Result<Launched, ApiError> {
    ssr::answer("resuming", move |c| c.resume(&req)).await
}

// ---- the autopilot ----------------------------------------------------------

/// `?offset=&limit=`: a page of the autopilot's event log, newest first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AutoLogQuery {
    #[serde(default)]
    pub offset: Option<usize>,
    /// 1–1,000 (default 100).
    #[serde(default)]
    pub limit: Option<usize>,
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "auto")]
pub async fn get_auto() -> Result<runboard::auto::view::AutoView, ApiError> {
    ssr::answer("reading the autopilot", |c| c.auto()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "auto_explain")]
pub async fn get_auto_explain() -> Result<runboard::auto::view::TickReport, ApiError> {
    ssr::answer("explaining the autopilot", |c| c.auto_explain()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "auto_log")]
pub async fn get_auto_log(#[server(default)] query: AutoLogQuery) -> Result<runboard::auto::view::LogPage, ApiError> {
    ssr::answer("reading the autopilot's log", move |c| c.auto_log(&query)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "auto_mode")]
pub async fn set_auto_mode(mode: runboard::auto::Mode) -> Result<runboard::auto::view::AutoView, ApiError> {
    ssr::answer("switching auto mode", move |c| c.auto_mode(mode)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "auto_settings")]
pub async fn save_auto_settings(settings: serde_json::Value) -> Result<runboard::auto::view::AutoView, ApiError> {
    ssr::answer("saving the autopilot's settings", move |c| c.auto_settings(settings)).await
}

// ---- results ------------------------------------------------------------------

/// `?by=&scope=`: the factor the evidence is grouped by (default
/// `condition`) and the cells it counts (see `runboard::results::scope`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvidenceQuery {
    #[serde(default)]
    pub by: Option<String>,
    #[serde(default)]
    pub scope: Option<String>,
}

/// `?scope=&run_set=`: the cells timed, and the run set the timeline shows
/// (default: the newest in scope).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimingQuery {
    #[serde(default)]
    pub scope: Option<String>,
    #[serde(default)]
    pub run_set: Option<String>,
}

/// `?fresh=true`: probe the endpoints again now (else probes made in the
/// last 30 s are shown).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CatalogueQuery {
    #[serde(default)]
    pub fresh: Option<String>,
}

impl CatalogueQuery {
    /// `true`/`1`, `false`/`0` or absent; anything else is named.
    pub fn fresh(&self) -> Result<bool, runboard::runview::trials::BadQuery> {
        match self.fresh.as_deref().map(str::trim) {
            None | Some("" | "false" | "0") => Ok(false),
            Some("true" | "1") => Ok(true),
            Some(other) => Err(runboard::runview::trials::BadQuery {
                field: "fresh".into(),
                value: other.into(),
                problem: "must be true or false".into(),
            }),
        }
    }
}

/// `?scope=`: the cells a view looks at (see `runboard::results::scope`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopeQuery {
    #[serde(default)]
    pub scope: Option<String>,
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "reports")]
pub async fn get_reports_list(#[server(default)] query: ScopeQuery) -> Result<Vec<RunSetSummary>, ApiError> {
    ssr::answer("listing the reports", move |c| c.reports(&query)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "report")]
pub async fn get_report(
    run_set: String,
    #[server(default)] query: ScopeQuery,
) -> Result<runboard::results::report::Report, ApiError> {
    ssr::answer("reading the report", move |c| c.report(&run_set, &query)).await
}

/// `?names=a,b&by=`: the cohort presets compared, the first as the
/// baseline, and the factor their evidence is grouped by (default `condition`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompareQuery {
    #[serde(default)]
    pub names: Option<String>,
    #[serde(default)]
    pub by: Option<String>,
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "cohorts")]
pub async fn get_cohorts() -> Result<runboard::results::cohorts::CohortsView, ApiError> {
    ssr::answer("reading the cohort presets", |c| c.cohorts()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "cohort_save")]
pub async fn cohort_save(
    req: runboard::results::cohorts::Preset,
) -> Result<runboard::results::cohorts::CohortsView, ApiError> {
    ssr::answer("saving a cohort preset", move |c| c.cohort_save(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "cohort_rename")]
pub async fn cohort_rename(
    req: runboard::results::cohorts::RenameRequest,
) -> Result<runboard::results::cohorts::CohortsView, ApiError> {
    ssr::answer("renaming a cohort preset", move |c| c.cohort_rename(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "cohort_delete")]
pub async fn cohort_delete(
    req: runboard::results::cohorts::DeleteRequest,
) -> Result<runboard::results::cohorts::CohortsView, ApiError> {
    ssr::answer("deleting a cohort preset", move |c| c.cohort_delete(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "cohort_compare")]
pub async fn get_cohort_compare(
    #[server(default)] query: CompareQuery,
) -> Result<runboard::results::cohorts::Comparison, ApiError> {
    ssr::answer("comparing cohorts", move |c| c.cohort_compare(&query)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "research")]
pub async fn get_research() -> Result<runboard::results::research::ResearchView, ApiError> {
    ssr::answer("reading the research state", |c| c.research()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "research_save")]
pub async fn research_save(
    state: runboard::results::research::ResearchState,
) -> Result<runboard::results::research::ResearchView, ApiError> {
    ssr::answer("saving the research state", move |c| c.research_save(&state)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "research_decide")]
pub async fn research_decide(
    req: runboard::results::research::DecisionRequest,
) -> Result<runboard::results::research::ResearchView, ApiError> {
    ssr::answer("recording a decision", move |c| c.research_decide(&req)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "publish_status")]
pub async fn get_publish_status() -> Result<runboard::results::publish::PublishStatus, ApiError> {
    ssr::answer("reading the publication status", |c| c.publish_status()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = "publish_push")]
pub async fn publish_push() -> Result<runboard::results::publish::Running, ApiError> {
    ssr::answer("starting a push", |c| c.publish_push()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "overview")]
pub async fn get_overview() -> Result<runboard::results::overview::OverviewView, ApiError> {
    ssr::answer("reading the overview", |c| c.overview()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "catalogue")]
pub async fn get_catalogue(
    #[server(default)] query: CatalogueQuery,
) -> Result<runboard::catalogue::CatalogueView, ApiError> {
    ssr::answer("reading the catalogue", move |c| c.catalogue(&query)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "timing")]
pub async fn get_timing(
    #[server(default)] query: TimingQuery,
) -> Result<runboard::results::timing::TimingView, ApiError> {
    ssr::answer("reading the timings", move |c| c.timing(&query)).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "evidence")]
pub async fn get_evidence(#[server(default)] query: EvidenceQuery) -> Result<runboard::results::Evidence, ApiError> {
    ssr::answer("reading the evidence", move |c| c.evidence(&query)).await
}
