//! Server functions: what the browser asks the console for.
//!
//! Read-only calls use GET (`GetUrl`) so they are cacheable and never count as
//! state-changing for the origin check.

use leptos::prelude::*;
use runboard::runview::acceptance::ReportEntry;
use runboard::runview::lineage::Lineage;
use runboard::runview::trialgraph::GraphEntry;
use runboard::runview::trials::TrialPage;
use runboard::runview::view::{CallEvent, CallView, MemoryVersion, RunView};
use runboard::runview::RunList;
use serde::{Deserialize, Serialize};

/// What the header shows of the campaign being served.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignInfo {
    pub name: String,
    /// Absolute path of the campaign root on the server.
    pub root: String,
    /// Whether this is the generated demo campaign.
    pub demo: bool,
}

#[cfg(feature = "ssr")]
pub mod ssr {
    //! The seam between the app and the server's adapters.
    use super::CampaignInfo;
    use runboard::runview::acceptance::ReportEntry;
    use runboard::runview::lineage::Lineage;
    use runboard::runview::trialgraph::GraphEntry;
    use runboard::runview::trials::{TrialFilter, TrialPage};
    use runboard::runview::view::{CallEvent, CallView, MemoryVersion, RunView};
    use runboard::runview::RunList;
    use std::sync::Arc;

    /// What the console can do for a page. Implemented by the `server` crate;
    /// methods may block (they read files) and are called off the async runtime.
    pub trait Console: Send + Sync + 'static {
        fn campaign(&self) -> CampaignInfo;
        fn list_runs(&self) -> RunList;
        /// `None` when no run has this name.
        fn run_view(&self, name: &str) -> Option<RunView>;
        fn run_version(&self, name: &str) -> Option<String>;
        fn run_analysis(&self, name: &str) -> Option<runboard::runview::analysis::RunAnalysis>;
        /// `Ok(None)`: no such run; `Err`: the call file cannot be read (why).
        fn run_call(&self, name: &str, call: u32) -> Result<Option<CallView>, String>;
        /// A page of the run's trials; `None` when no run has this name.
        fn run_trials(&self, name: &str, filter: &TrialFilter, offset: usize, limit: usize) -> Option<TrialPage>;
        /// `None`: no such run; `Some(None)`: no written round holds the trial.
        fn run_lineage(&self, name: &str, trial: &str) -> Option<Option<Lineage>>;
        fn run_trial_graphs(&self, name: &str) -> Option<Vec<GraphEntry>>;
        /// Every call the events name, in call order.
        fn run_calls(&self, name: &str) -> Option<Vec<CallEvent>>;
        /// Every memory version, each with its diff from the one before.
        fn run_memory(&self, name: &str) -> Option<Vec<MemoryVersion>>;
        fn run_reports(&self, name: &str) -> Option<Vec<ReportEntry>>;
    }

    pub type ConsoleHandle = Arc<dyn Console>;

    /// Runs a blocking console call on the blocking pool.
    pub async fn with_console<T: Send + 'static>(
        f: impl FnOnce(&dyn Console) -> T + Send + 'static,
    ) -> Result<T, leptos::prelude::ServerFnError> {
        let console = leptos::prelude::use_context::<ConsoleHandle>()
            .ok_or_else(|| leptos::prelude::ServerFnError::new("console not provided"))?;
        tokio::task::spawn_blocking(move || f(console.as_ref()))
            .await
            .map_err(|e| leptos::prelude::ServerFnError::new(format!("console task failed: {e}")))
    }
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "campaign")]
pub async fn get_campaign() -> Result<CampaignInfo, ServerFnError> {
    ssr::with_console(|c| c.campaign()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "runs")]
pub async fn list_runs() -> Result<RunList, ServerFnError> {
    ssr::with_console(|c| c.list_runs()).await
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run")]
pub async fn get_run(name: String) -> Result<RunView, ServerFnError> {
    let missing = format!("no run named {name}");
    ssr::with_console(move |c| c.run_view(&name)).await?.ok_or_else(|| ServerFnError::new(missing))
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_call")]
pub async fn get_call(name: String, call: u32) -> Result<CallView, ServerFnError> {
    let missing = format!("no run named {name}");
    match ssr::with_console(move |c| c.run_call(&name, call)).await? {
        Ok(Some(v)) => Ok(v),
        Ok(None) => Err(ServerFnError::new(missing)),
        Err(why) => Err(ServerFnError::new(why)),
    }
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_analysis")]
pub async fn get_analysis(name: String) -> Result<runboard::runview::analysis::RunAnalysis, ServerFnError> {
    let missing = format!("no run named {name}");
    ssr::with_console(move |c| c.run_analysis(&name)).await?.ok_or_else(|| ServerFnError::new(missing))
}

/// Which trials a page asks for: the rounds tab's filters as its URL carries them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialQuery {
    pub round: Option<u32>,
    pub stage: Option<String>,
    /// `accepted`, `refused` or `unscored`.
    pub outcome: Option<String>,
    pub text: Option<String>,
    pub offset: usize,
    pub limit: usize,
}

/// A page of a run's trials.
#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_trials")]
pub async fn get_trials(name: String, query: TrialQuery) -> Result<TrialPage, ServerFnError> {
    use runboard::runview::trials::{OutcomeFilter, TrialFilter};
    let outcome = query.outcome.as_deref().filter(|o| !o.is_empty()).map(OutcomeFilter::parse).transpose();
    let outcome = outcome.map_err(|e| ServerFnError::new(format!("outcome {e}")))?;
    let filter = TrialFilter {
        round: query.round,
        stage: query.stage.filter(|s| !s.is_empty()),
        outcome,
        text: query.text.filter(|s| !s.is_empty()),
        intraday: None,
    };
    let missing = format!("no run named {name}");
    ssr::with_console(move |c| c.run_trials(&name, &filter, query.offset, query.limit))
        .await?
        .ok_or_else(|| ServerFnError::new(missing))
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_lineage")]
pub async fn get_lineage(name: String, trial: String) -> Result<Lineage, ServerFnError> {
    let missing = format!("no run named {name}");
    let no_trial = format!("no written round of {name} holds a trial named {trial}");
    match ssr::with_console(move |c| c.run_lineage(&name, &trial)).await? {
        None => Err(ServerFnError::new(missing)),
        Some(None) => Err(ServerFnError::new(no_trial)),
        Some(Some(l)) => Ok(l),
    }
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_trial_graphs")]
pub async fn get_trial_graphs(name: String) -> Result<Vec<GraphEntry>, ServerFnError> {
    let missing = format!("no run named {name}");
    ssr::with_console(move |c| c.run_trial_graphs(&name)).await?.ok_or_else(|| ServerFnError::new(missing))
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_reports")]
pub async fn get_reports(name: String) -> Result<Vec<ReportEntry>, ServerFnError> {
    let missing = format!("no run named {name}");
    ssr::with_console(move |c| c.run_reports(&name)).await?.ok_or_else(|| ServerFnError::new(missing))
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_calls")]
pub async fn get_calls(name: String) -> Result<Vec<CallEvent>, ServerFnError> {
    let missing = format!("no run named {name}");
    ssr::with_console(move |c| c.run_calls(&name)).await?.ok_or_else(|| ServerFnError::new(missing))
}

#[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = "run_memory")]
pub async fn get_memory(name: String) -> Result<Vec<MemoryVersion>, ServerFnError> {
    let missing = format!("no run named {name}");
    ssr::with_console(move |c| c.run_memory(&name)).await?.ok_or_else(|| ServerFnError::new(missing))
}
