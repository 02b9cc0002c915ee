//! The console the web app talks to: one campaign root and its readers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use app::api::ssr::Console;
use app::api::{ApiError, CampaignInfo};
use runboard::campaign::{CampaignConfig, CONFIG_FILE};
use runboard::runview::acceptance::ReportEntry;
use runboard::runview::lineage::{lineage, Lineage};
use runboard::runview::listing::{ListQuery, RunPage};
use runboard::runview::trialgraph::GraphEntry;
use runboard::runview::trials::{trial_page, TrialPage, TrialQuery};
use runboard::runview::view::{CallEvent, CallView, MemoryVersion, RunView};

use crate::runview::RunIndex;

pub struct LocalConsole {
    info: CampaignInfo,
    runs: RunIndex,
}

impl LocalConsole {
    /// Opens the campaign at `root` (which must exist). A missing `campaign.toml`
    /// names the campaign after its folder; a broken one is an error.
    pub fn open(root: &Path, demo: bool) -> anyhow::Result<Self> {
        let root = std::fs::canonicalize(root).map_err(|e| anyhow::anyhow!("campaign root {}: {e}", root.display()))?;
        if !root.is_dir() {
            anyhow::bail!("campaign root {} is not a folder", root.display());
        }
        let cfg = match std::fs::read_to_string(root.join(CONFIG_FILE)) {
            Ok(text) => CampaignConfig::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", root.display()))?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                CampaignConfig::unnamed(&root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default())
            }
            Err(e) => anyhow::bail!("{}: {e}", root.join(CONFIG_FILE).display()),
        };
        let info = CampaignInfo { name: cfg.name, root: root.to_string_lossy().into_owned(), demo };
        Ok(Self { info, runs: RunIndex::new(root).watched() })
    }

    pub fn root(&self) -> PathBuf {
        self.runs.root().to_path_buf()
    }

    pub fn runs(&self) -> &RunIndex {
        &self.runs
    }
}

impl LocalConsole {
    /// The run `name` and its (cached) view, or why not.
    fn view_of(&self, name: &str) -> Result<(PathBuf, Arc<RunView>), ApiError> {
        self.runs.view(name).ok_or_else(|| ApiError::no_such_run(name))
    }

    fn dir_of(&self, name: &str) -> Result<PathBuf, ApiError> {
        self.runs.find(name).ok_or_else(|| ApiError::no_such_run(name))
    }
}

impl Console for LocalConsole {
    fn campaign(&self) -> CampaignInfo {
        self.info.clone()
    }

    fn list_runs(&self, query: &ListQuery) -> Result<RunPage, ApiError> {
        Ok(runboard::runview::listing::page(self.runs.list(), query))
    }

    fn run_view(&self, name: &str) -> Result<RunView, ApiError> {
        // What is serialized of it: the trials, calls and memory travel apart.
        self.view_of(name).map(|(_, v)| RunView {
            rounds: Vec::new(),
            calls: Vec::new(),
            memory: Arc::default(),
            ..(*v).clone()
        })
    }

    fn run_analysis(&self, name: &str) -> Result<runboard::runview::analysis::RunAnalysis, ApiError> {
        self.view_of(name).map(|(_, v)| runboard::runview::analysis::analyse(&v))
    }

    fn run_version(&self, name: &str) -> Result<String, ApiError> {
        self.dir_of(name).map(|dir| self.runs.run_version(&dir))
    }

    fn run_call(&self, name: &str, call: u32) -> Result<CallView, ApiError> {
        let (dir, view) = self.view_of(name)?;
        crate::runview::read_call(self.runs.within(), &dir, call, &view).map_err(ApiError::unreadable)
    }

    fn run_trials(&self, name: &str, query: &TrialQuery) -> Result<TrialPage, ApiError> {
        self.view_of(name).map(|(_, v)| trial_page(&v, &query.filter, query.offset, query.limit))
    }

    fn run_lineage(&self, name: &str, trial: &str) -> Result<Lineage, ApiError> {
        let (_, v) = self.view_of(name)?;
        lineage(&v.rounds, trial, v.admission_limits).ok_or_else(|| ApiError::no_such_trial(name, trial))
    }

    fn run_calls(&self, name: &str) -> Result<Vec<CallEvent>, ApiError> {
        self.view_of(name).map(|(_, v)| v.calls.clone())
    }

    fn run_memory(&self, name: &str) -> Result<Vec<MemoryVersion>, ApiError> {
        self.view_of(name).map(|(_, v)| (*v.memory).clone())
    }

    fn run_trial_graphs(&self, name: &str) -> Result<Vec<GraphEntry>, ApiError> {
        self.dir_of(name).map(|dir| crate::runview::read_trial_graphs(self.runs.within(), &dir))
    }

    fn run_reports(&self, name: &str) -> Result<Vec<ReportEntry>, ApiError> {
        self.dir_of(name).map(|dir| crate::runview::read_reports(self.runs.within(), &dir))
    }
}
