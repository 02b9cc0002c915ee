//! The console the web app talks to: one campaign root and its readers.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use runboard::api::operations::types::*;
use runboard::api::{parse_call_number, ApiError, Console};
use runboard::campaign::{CampaignConfig, CONFIG_FILE};
use runboard::runview::lineage::lineage;
use runboard::runview::trials::trial_page;

use crate::runview::RunIndex;

pub struct LocalConsole {
    info: CampaignInfo,
    runs: RunIndex,
    campaign: crate::campaign::Campaign,
    /// The autopilot loop's interval, when this server runs one.
    auto_tick: Option<std::time::Duration>,
}

impl LocalConsole {
    /// Opens the campaign at `root` (which must exist). A missing `campaign.toml`
    /// names the campaign after its folder; a broken one is an error.
    pub fn open(root: &Path, demo: bool) -> anyhow::Result<Self> {
        let mut c = Self::open_unwatched(root, demo)?;
        c.runs = RunIndex::new(c.root()).watched();
        Ok(c)
    }

    fn open_unwatched(root: &Path, demo: bool) -> anyhow::Result<Self> {
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
        Ok(Self { info, campaign: crate::campaign::Campaign::open(&root), runs: RunIndex::new(root), auto_tick: None })
    }

    /// Says that this server runs the autopilot's loop every `every`.
    pub fn with_auto_tick(mut self, every: std::time::Duration) -> Self {
        self.auto_tick = Some(every);
        self
    }

    /// Keeps the run list's parsed files in `file` between starts.
    pub fn with_list_cache(mut self, file: PathBuf) -> Self {
        self.runs = self.runs.with_list_cache(file);
        self
    }

    /// That `root` is a campaign folder: a console command (status, draft,
    /// propose, check…) on any other folder is refused by name rather than
    /// answered as if from an empty campaign. (`serve` and `runs` read any
    /// folder of run directories.)
    pub fn require_campaign(root: &Path) -> anyhow::Result<()> {
        anyhow::ensure!(root.is_dir(), "campaign root {} does not exist or is not a folder", root.display());
        anyhow::ensure!(
            root.join(CONFIG_FILE).is_file(),
            "no {CONFIG_FILE} in {}: it is not a campaign folder (`runboard init DIR --example exec` makes one)",
            root.display()
        );
        Ok(())
    }

    /// Opens the campaign for one command (no file-system watch).
    pub fn open_once(root: &Path) -> anyhow::Result<Self> {
        Self::open_unwatched(root, false)
    }

    pub fn root(&self) -> PathBuf {
        self.runs.root().to_path_buf()
    }

    pub fn runs(&self) -> &RunIndex {
        &self.runs
    }

    pub fn campaign(&self) -> &crate::campaign::Campaign {
        &self.campaign
    }
}

impl LocalConsole {
    /// The run `name` and its (cached) view, or why not.
    fn view_of(&self, name: &str) -> Result<(PathBuf, Arc<RunView>), ApiError> {
        named(name)?;
        self.runs.view(name).ok_or_else(|| ApiError::no_such_run(name))
    }

    fn dir_of(&self, name: &str) -> Result<PathBuf, ApiError> {
        named(name)?;
        self.runs.find(name).ok_or_else(|| ApiError::no_such_run(name))
    }
}

/// A run must be named (a server function asked without its `name` gets
/// the reason, not "no run named ''").
fn named(name: &str) -> Result<(), ApiError> {
    if name.is_empty() {
        return Err(runboard::runview::trials::BadQuery {
            field: "name".into(),
            value: String::new(),
            problem: "give a run's folder name or its path under the root".into(),
        }
        .into());
    }
    Ok(())
}

/// Each operation of the table (`runboard::api::operations`) over this
/// campaign: most are one call into [`crate::campaign::Campaign`] or the run
/// index; a refusal is an [`ApiError`] in words.
impl Console for LocalConsole {
    fn campaign(&self, _: Nothing) -> Result<CampaignInfo, ApiError> {
        Ok(self.info.clone())
    }

    fn runs(&self, params: ListParams) -> Result<RunPage, ApiError> {
        let query = params.parse()?;
        Ok(runboard::runview::listing::page(&self.runs.list_shared(), &query, crate::system::clock::now()))
    }

    fn runs_version(&self, _: Nothing) -> Result<Version, ApiError> {
        Ok(Version { version: self.runs.list_version() })
    }

    fn run(&self, RunName { name }: RunName) -> Result<RunView, ApiError> {
        // What is serialized of it: the trials, calls, memory and per-round
        // counts travel apart, and are not even copied.
        self.view_of(&name).map(|(_, v)| v.header())
    }

    fn run_version(&self, RunName { name }: RunName) -> Result<Version, ApiError> {
        self.dir_of(&name).map(|dir| Version { version: self.runs.run_version(&dir) })
    }

    fn run_rounds(&self, RunName { name }: RunName) -> Result<RunRounds, ApiError> {
        self.view_of(&name).map(|(_, v)| v.rounds_summary())
    }

    fn run_accepted(&self, RunName { name }: RunName) -> Result<Vec<AcceptedFactor>, ApiError> {
        self.view_of(&name).map(|(_, v)| v.accepted.clone())
    }

    fn run_analysis(&self, RunName { name }: RunName) -> Result<RunAnalysis, ApiError> {
        self.view_of(&name).map(|(_, v)| runboard::runview::analysis::analyse(&v))
    }

    fn run_call(&self, RunCall { name, call }: RunCall) -> Result<CallView, ApiError> {
        let call = parse_call_number(&call)?;
        let (dir, view) = self.view_of(&name)?;
        crate::runview::read_call(self.runs.within(), &dir, call, &view).map_err(ApiError::unreadable)
    }

    fn run_trials(&self, RunTrials { name, params }: RunTrials) -> Result<TrialPage, ApiError> {
        let query = params.parse()?;
        self.view_of(&name).map(|(_, v)| trial_page(&v, &query.filter, query.offset, query.limit))
    }

    fn run_lineage(&self, RunTrial { name, trial }: RunTrial) -> Result<Lineage, ApiError> {
        let (_, v) = self.view_of(&name)?;
        lineage(&v.rounds, &trial, v.admission_limits).ok_or_else(|| ApiError::no_such_trial(&name, &trial))
    }

    fn run_calls(&self, RunName { name }: RunName) -> Result<Vec<CallEvent>, ApiError> {
        self.view_of(&name).map(|(_, v)| v.calls.clone())
    }

    fn run_memory(&self, RunName { name }: RunName) -> Result<Vec<MemoryVersion>, ApiError> {
        self.view_of(&name).map(|(_, v)| (*v.memory).clone())
    }

    fn run_trial_graphs(&self, RunName { name }: RunName) -> Result<Vec<GraphEntry>, ApiError> {
        self.dir_of(&name).map(|dir| crate::runview::read_trial_graphs(self.runs.within(), &dir))
    }

    fn run_reports(&self, RunName { name }: RunName) -> Result<Vec<ReportEntry>, ApiError> {
        self.dir_of(&name).map(|dir| crate::runview::read_reports(self.runs.within(), &dir))
    }

    fn live(&self, params: LiveParams) -> Result<LiveView, ApiError> {
        // Each version is taken before what it stands for is read (see
        // `Campaign::live`): the runs' before the run list.
        let runs_version = self.runs.list_version();
        let mut view = self.campaign.live_shared().page(&params.parse()?);
        if let Some(rs) = view.run_set.clone() {
            // Cells that own a run directory show its rounds.
            runboard::live::attach_runs(&mut view.cells, &rs, &self.runs.list_shared().runs);
            // Their trial counts, from each run's cached view (a page of
            // cells at most; a view is read again only when its run wrote).
            for run in view.cells.iter_mut().filter_map(|c| c.run.as_mut()) {
                if let Some((_, v)) = self.runs.view(&run.path) {
                    run.trials = Some(v.round_counts.iter().map(|c| c.attempts).sum());
                }
            }
        }
        view.version = live_version_of(&view.version, &runs_version);
        Ok(view)
    }

    fn live_version(&self, _: Nothing) -> Result<Version, ApiError> {
        let campaign = self.campaign.live_version();
        Ok(Version { version: live_version_of(&campaign, &self.runs.list_version()) })
    }

    fn coverage(&self, params: CoverageParams) -> Result<CoverageView, ApiError> {
        self.campaign.coverage_view(params.rows.as_deref(), params.cols.as_deref())
    }

    fn cells(&self, params: CellParams) -> Result<CellPage, ApiError> {
        self.campaign.cells(&params)
    }

    fn run_sets(&self, _: Nothing) -> Result<Vec<RunSetSummary>, ApiError> {
        Ok(self.campaign.run_sets())
    }

    fn draft_form(&self, _: Nothing) -> Result<DraftForm, ApiError> {
        let matrix = self.campaign.records().matrix();
        let mut form = DraftForm {
            factors: matrix
                .factors
                .iter()
                .map(|f| {
                    let levels = matrix.levels().remove(f).unwrap_or_default();
                    (f.clone(), levels.iter().map(runboard::console::matrix::value_text).collect())
                })
                .collect(),
            problems: matrix.problems.clone(),
            ..Default::default()
        };
        match self.campaign.config() {
            Ok(cfg) => {
                form.tasks = cfg.tasks;
                form.models = cfg.models;
                form.endpoints = cfg.endpoints;
            }
            Err(e) => form.problems.push(e.error),
        }
        Ok(form)
    }

    fn draft_preview(&self, req: DraftRequest) -> Result<DraftPreview, ApiError> {
        self.campaign.draft_preview(&req)
    }

    fn draft_save(&self, req: DraftRequest) -> Result<SavedDraft, ApiError> {
        self.campaign.draft_save(&req)
    }

    fn preflight(&self, SpecPath { path }: SpecPath) -> Result<Preflight, ApiError> {
        self.campaign.preflight(&path)
    }

    fn start(&self, req: LaunchRequest) -> Result<Launched, ApiError> {
        self.campaign.start(&req)
    }

    fn pause(&self, req: PauseRequest) -> Result<StopReport, ApiError> {
        self.campaign.pause(&req)
    }

    fn stop(&self, req: StopRequest) -> Result<StopReport, ApiError> {
        self.campaign.stop(&req)
    }

    fn stop_cell(&self, req: StopCellRequest) -> Result<StopCellReport, ApiError> {
        self.campaign.stop_cell(&req)
    }

    fn resume(&self, req: ResumeRequest) -> Result<Launched, ApiError> {
        self.campaign.resume(&req)
    }

    fn evidence(&self, q: EvidenceQuery) -> Result<Evidence, ApiError> {
        self.campaign.evidence(q.by.as_deref(), q.scope.as_deref())
    }

    fn evidence_export(&self, q: ExportQuery) -> Result<Exported, ApiError> {
        let csv = q.csv()?;
        Ok(Exported { csv, export: self.campaign.evidence_export(q.scope.as_deref())? })
    }

    fn reports(&self, q: ScopeQuery) -> Result<Vec<RunSetSummary>, ApiError> {
        self.campaign.reports(q.scope.as_deref())
    }

    fn samples(&self, q: SamplesQuery) -> Result<CellSamples, ApiError> {
        self.campaign.samples(&q)
    }

    fn audit(&self, q: AuditQuery) -> Result<AuditPage, ApiError> {
        crate::access::audit::page(self.campaign.records().within(), &q)
    }

    fn report(&self, q: ReportQuery) -> Result<Report, ApiError> {
        self.campaign.report(&q.run_set, q.scope.as_deref(), &self.runs.list_shared().runs)
    }

    fn cohorts(&self, _: Nothing) -> Result<CohortsView, ApiError> {
        Ok(self.campaign.cohorts())
    }

    fn cohort_save(&self, req: Preset) -> Result<CohortsView, ApiError> {
        self.campaign.cohort_edit(move |p, factors| p.save(req, factors))
    }

    fn cohort_rename(&self, req: RenameRequest) -> Result<CohortsView, ApiError> {
        self.campaign.cohort_edit(|p, _| p.rename(&req.from, &req.to))
    }

    fn cohort_delete(&self, req: DeleteRequest) -> Result<CohortsView, ApiError> {
        self.campaign.cohort_edit(|p, _| p.delete(&req.name))
    }

    fn cohort_compare(&self, q: CompareQuery) -> Result<Comparison, ApiError> {
        self.campaign.cohort_compare(q.names.as_deref(), q.by.as_deref())
    }

    fn research(&self, _: Nothing) -> Result<ResearchView, ApiError> {
        Ok(self.campaign.research())
    }

    fn research_save(&self, state: ResearchState) -> Result<ResearchView, ApiError> {
        self.campaign.research_replace(state)
    }

    fn research_settings(&self, patch: SettingsPatch) -> Result<ResearchView, ApiError> {
        self.campaign.research_edit(|s| {
            runboard::results::research::merge_settings(&mut s.settings, &patch);
            Ok(())
        })
    }

    fn research_decide(&self, req: DecisionRequest) -> Result<ResearchView, ApiError> {
        let decision = runboard::results::research::Decision {
            at: crate::system::clock::now(),
            text: req.text,
            question: req.question,
        };
        self.campaign.research_edit(move |s| {
            s.decisions.push(decision);
            Ok(())
        })
    }

    fn publish_status(&self, _: Nothing) -> Result<PublishStatus, ApiError> {
        crate::publish::status(&self.campaign)
    }

    fn publish_push(&self, _: Nothing) -> Result<Running, ApiError> {
        // The push goes on in its own thread; its record is what it leaves.
        crate::publish::push(&self.campaign).map(|s| s.running)
    }

    fn overview(&self, _: Nothing) -> Result<OverviewView, ApiError> {
        self.campaign.overview()
    }

    fn tags(&self, _: Nothing) -> Result<TagsView, ApiError> {
        self.campaign.tags()
    }

    fn tag_edit(&self, edit: TagEdit) -> Result<TagsView, ApiError> {
        self.campaign.tag_edit(&edit)
    }

    fn logs(&self, q: LogsQuery) -> Result<LogsView, ApiError> {
        self.campaign.logs(&q.run_set)
    }

    fn log(&self, q: LogQuery) -> Result<LogChunk, ApiError> {
        self.campaign.log(&q)
    }

    fn propose(&self, q: ProposeParams) -> Result<Proposals, ApiError> {
        self.campaign.propose(&q)
    }

    fn timing(&self, q: TimingQuery) -> Result<TimingView, ApiError> {
        self.campaign.timing(q.scope.as_deref(), q.run_set.as_deref())
    }

    fn catalogue(&self, q: CatalogueQuery) -> Result<CatalogueView, ApiError> {
        self.campaign.catalogue(q.fresh()?)
    }

    fn telemetry(&self, _: Nothing) -> Result<TelemetryView, ApiError> {
        self.campaign.telemetry()
    }

    fn upkeep(&self, _: Nothing) -> Result<UpkeepView, ApiError> {
        self.campaign.upkeep()
    }

    fn upkeep_act(&self, req: UpkeepRequest) -> Result<UpkeepDone, ApiError> {
        self.campaign.upkeep_act(&req)
    }

    fn auto_version(&self, _: Nothing) -> Result<Version, ApiError> {
        let mut h = runboard::basics::hash::Fnv1a::new();
        for f in [crate::auto::auto_state::STATE_FILE, crate::auto::auto_state::LOG_FILE, CONFIG_FILE] {
            h.write(format!("{:?}", crate::files::fsread::stamp_of(&self.root().join(f))).as_bytes());
        }
        h.write(self.campaign.live_version().as_bytes());
        Ok(Version { version: format!("{:016x}", h.finish()) })
    }

    fn auto(&self, _: Nothing) -> Result<AutoView, ApiError> {
        crate::auto::autopilot::view(&self.campaign, self.auto_tick.map(|d| d.as_secs_f64()))
    }

    fn auto_explain(&self, _: Nothing) -> Result<TickReport, ApiError> {
        crate::auto::autopilot::explain(&self.campaign)
    }

    fn auto_tick(&self, _: Nothing) -> Result<TickReport, ApiError> {
        crate::auto::autopilot::run_tick(&self.campaign)
    }

    fn auto_log(&self, q: AutoLogQuery) -> Result<LogPage, ApiError> {
        crate::auto::autopilot::log_page(&self.campaign, q.offset.unwrap_or(0), q.limit.unwrap_or(100))
    }

    fn auto_mode(&self, req: AutoModeRequest) -> Result<AutoView, ApiError> {
        crate::auto::autopilot::set_mode(&self.campaign, req.mode()?)?;
        self.auto(Nothing {})
    }

    fn auto_settings(&self, settings: Settings) -> Result<AutoView, ApiError> {
        crate::auto::autopilot::save_settings(&self.campaign, settings)?;
        self.auto(Nothing {})
    }
}

/// The live view's version: the campaign's (units, marker, run set records;
/// a 5 s tick while a batch runs, so running cells' durations move) and the
/// run list's, because a cell owning a run directory shows that run's rounds
/// and trials, which change with every write to it.
fn live_version_of(campaign: &str, runs: &str) -> String {
    format!("{campaign}-{runs}")
}
