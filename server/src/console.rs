//! The console the web app talks to: one campaign root and its readers.

use std::path::{Path, PathBuf};

use app::api::ssr::Console;
use app::api::CampaignInfo;
use runboard::campaign::{CampaignConfig, CONFIG_FILE};
use runboard::runview::acceptance::ReportEntry;
use runboard::runview::lineage::{lineage, Lineage};
use runboard::runview::trialgraph::GraphEntry;
use runboard::runview::trials::{trial_page, TrialFilter, TrialPage};
use runboard::runview::view::{CallEvent, CallView, MemoryVersion, RunView};
use runboard::runview::RunList;

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
        Ok(Self { info, runs: RunIndex::new(root) })
    }

    pub fn root(&self) -> PathBuf {
        self.runs.root().to_path_buf()
    }

    pub fn runs(&self) -> &RunIndex {
        &self.runs
    }
}

impl Console for LocalConsole {
    fn campaign(&self) -> CampaignInfo {
        self.info.clone()
    }

    fn list_runs(&self) -> RunList {
        self.runs.list()
    }

    fn run_view(&self, name: &str) -> Option<RunView> {
        self.runs.view(name).map(|(_, v)| v)
    }

    fn run_analysis(&self, name: &str) -> Option<runboard::runview::analysis::RunAnalysis> {
        self.runs.view(name).map(|(_, v)| runboard::runview::analysis::analyse(&v))
    }

    fn run_version(&self, name: &str) -> Option<String> {
        self.runs.find(name).map(|dir| self.runs.run_version(&dir))
    }

    fn run_call(&self, name: &str, call: u32) -> Result<Option<CallView>, String> {
        let Some((dir, view)) = self.runs.view(name) else { return Ok(None) };
        crate::runview::read_call(self.runs.within(), &dir, call, &view).map(Some)
    }

    fn run_trials(&self, name: &str, filter: &TrialFilter, offset: usize, limit: usize) -> Option<TrialPage> {
        self.runs.view(name).map(|(_, v)| trial_page(&v, filter, offset, limit))
    }

    fn run_lineage(&self, name: &str, trial: &str) -> Option<Option<Lineage>> {
        self.runs.view(name).map(|(_, v)| lineage(&v.rounds, trial, v.admission_limits))
    }

    fn run_calls(&self, name: &str) -> Option<Vec<CallEvent>> {
        self.runs.view(name).map(|(_, v)| v.calls)
    }

    fn run_memory(&self, name: &str) -> Option<Vec<MemoryVersion>> {
        self.runs.view(name).map(|(_, v)| v.memory)
    }

    fn run_trial_graphs(&self, name: &str) -> Option<Vec<GraphEntry>> {
        self.runs.find(name).map(|dir| crate::runview::read_trial_graphs(self.runs.within(), &dir))
    }

    fn run_reports(&self, name: &str) -> Option<Vec<ReportEntry>> {
        self.runs.find(name).map(|dir| crate::runview::read_reports(self.runs.within(), &dir))
    }
}
