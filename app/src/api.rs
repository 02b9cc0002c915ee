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
use runboard::runview::view::{CallEvent, CallView, MemoryVersion, RunView};
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
    /// The reason, in words.
    pub error: String,
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
    /// 500: the server failed; the detail is in its log.
    Internal,
}

impl ErrorKind {
    pub const fn status(self) -> u16 {
        match self {
            Self::NoSuchRun | Self::NoSuchTrial | Self::NotFound => 404,
            Self::BadQuery | Self::Unreadable => 422,
            Self::Internal => 500,
        }
    }
}

impl ApiError {
    pub fn status(&self) -> u16 {
        self.kind.status()
    }

    pub fn no_such_run(name: &str) -> Self {
        Self { kind: ErrorKind::NoSuchRun, error: format!("no run named {name}") }
    }

    pub fn no_such_trial(run: &str, trial: &str) -> Self {
        Self { kind: ErrorKind::NoSuchTrial, error: format!("no written round of {run} holds a trial named {trial}") }
    }

    pub fn not_found(what: impl Into<String>) -> Self {
        Self { kind: ErrorKind::NotFound, error: what.into() }
    }

    pub fn bad_query(bad: &BadQuery) -> Self {
        Self { kind: ErrorKind::BadQuery, error: bad.to_string() }
    }

    pub fn unreadable(reason: impl Into<String>) -> Self {
        Self { kind: ErrorKind::Unreadable, error: reason.into() }
    }

    /// A failure of the server's own; `doing` says what it was doing. Log the
    /// detail where it happened (see `ssr::internal`).
    pub fn internal(doing: &str) -> Self {
        Self { kind: ErrorKind::Internal, error: format!("internal error while {doing}") }
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
                Self { kind: ErrorKind::BadQuery, error: format!("bad arguments: {why}") }
            }
            other => Self { kind: ErrorKind::Internal, error: other.to_string() },
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
    use runboard::runview::acceptance::ReportEntry;
    use runboard::runview::analysis::RunAnalysis;
    use runboard::runview::lineage::Lineage;
    use runboard::runview::listing::{ListQuery, RunPage};
    use runboard::runview::trialgraph::GraphEntry;
    use runboard::runview::trials::{TrialPage, TrialQuery};
    use runboard::runview::view::{CallEvent, CallView, MemoryVersion, RunView};
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
