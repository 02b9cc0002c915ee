//! One campaign's console: its records, the one launch path (`start`),
//! the live state, and pause / stop+abort / resume — all typed operations the
//! pages, REST and the command line share.
//!
//! Anything that writes takes the campaign's lock (`.runboard/lock`, an
//! advisory file lock), shared by every server and CLI on the campaign: two
//! launches never race, a stop and a launch never interleave.

pub mod auto;
pub mod catalogue;
pub mod launcher;
pub mod pool;
pub mod records;
pub mod results;

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use runboard::api::ApiError;
use runboard::campaign::{CampaignConfig, LauncherKind, CONFIG_FILE};
use runboard::coverage::{self, CellPage, CellParams, CoverageView};
use runboard::draft::{self, DraftPreview, DraftRequest, SavedDraft};
use runboard::drive::records::CellStatus;
use runboard::launch::{
    check_spec_path, unit_name, HookResult, LaunchRequest, Launched, PauseRequest, ResumeRequest, StopReport,
    StopRequest,
};
use runboard::live::{self, ActiveMarker, LiveObservations, LiveView, MarkerStatus, UnitSeen};
use runboard::preflight::{self, History, Prediction, Preflight, Sample};
use runboard::runsets::{
    self, RunIndexEntry, RunKind, RunSetSummary, UnitRecord, COMMITTED_DIR, LOCK_FILE, RUNSETS_DIR, UNITS_DIR,
};
use runboard::spec::BatchSpec;
use runboard::Timestamp;

use self::launcher::{Launcher, LocalLauncher, SlurmLauncher, SystemdBus, SystemdLauncher, UnitRequest};
use self::records::Records;

/// How long a writer waits for the campaign lock before answering 409.
const LOCK_WAIT: Duration = Duration::from_secs(90);
/// The sentence a stop appends to each aborted run set's `execution_log.md`.
pub const ABORT_LINE: &str = "aborted by the operator (stop and abort); not to be resumed";
/// How long the lease release hook may run.
const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

pub struct Campaign {
    root: PathBuf,
    records: Records,
    local: LocalLauncher,
    /// The D-Bus connection of the systemd launcher, made when first needed.
    systemd_bus: std::sync::OnceLock<Result<SystemdBus, String>>,
    /// What each unit's launcher last said of it, and when: a D-Bus read or
    /// an `squeue` is not made again for every poll of every page.
    observed: std::sync::Mutex<std::collections::HashMap<String, (Instant, runboard::live::Observation)>>,
    /// One observation at a time: pollers arriving while one is made wait
    /// for it and share it, instead of each asking a slow backend.
    observing: std::sync::Mutex<()>,
    /// Each ended unit's failure as last made (its journal is read once).
    failures: std::sync::Mutex<Option<(String, runboard::live::UnitFailure)>>,
    /// The whole live view as last made, and its version: polls while nothing
    /// changed are answered from it (a page of its cells each), made again at
    /// most every `LIVE_REMAKE` so running cells' durations move on.
    live_made: std::sync::Mutex<Option<(String, Instant, std::sync::Arc<LiveView>)>>,
    /// The coverage as last computed, and what it was computed from.
    coverage_made: std::sync::Mutex<Option<(CoverageKey, CoverageMade)>>,
    /// The evidence and the export as last made, and from what.
    results_made: results::ResultsMemo,
    /// The catalogue endpoints' probes as last made.
    probes_made: catalogue::ProbesMade,
}

/// The matrix's and each run set's shared value (compared by pointer), and liveness.
type CoverageKey = (std::sync::Arc<runboard::matrix::Matrix>, Vec<(std::sync::Arc<records::RunSetRead>, bool)>);
type CoverageMade = std::sync::Arc<(std::sync::Arc<runboard::matrix::Matrix>, coverage::Coverage, usize)>;

/// How long the shared live view serves polls when nothing changed.
const LIVE_REMAKE: Duration = Duration::from_secs(1);

/// How often a running batch's live version moves on its own (its cells'
/// durations grow), in milliseconds.
const LIVE_TICK_MS: i64 = 5_000;

/// The campaign lock, held while it lives.
pub struct CampaignLock(#[allow(dead_code)] fs::File);

impl Campaign {
    pub fn open(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            records: Records::new(root),
            local: LocalLauncher::new(),
            systemd_bus: std::sync::OnceLock::new(),
            observed: Default::default(),
            observing: std::sync::Mutex::new(()),
            failures: std::sync::Mutex::new(None),
            live_made: std::sync::Mutex::new(None),
            coverage_made: std::sync::Mutex::new(None),
            results_made: Default::default(),
            probes_made: Default::default(),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn records(&self) -> &Records {
        &self.records
    }

    /// `campaign.toml` as it is now (read at each operation: an edit applies
    /// to the next launch without a restart).
    pub fn config(&self) -> Result<CampaignConfig, ApiError> {
        match self.records.within().read_opt(&self.root.join(CONFIG_FILE)) {
            None => Ok(CampaignConfig::unnamed(
                &self.root.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            )),
            Some(Err(e)) => Err(ApiError::unreadable(format!("{CONFIG_FILE}: {e}"))),
            Some(Ok(b)) => {
                CampaignConfig::parse(&String::from_utf8_lossy(&b)).map_err(|e| ApiError::unreadable(e.to_string()))
            }
        }
    }

    /// The launcher new batches start with (`[launcher] kind`).
    fn launcher(&self, cfg: &CampaignConfig) -> Result<Box<dyn Launcher + '_>, ApiError> {
        self.launcher_of(cfg.launcher.kind, cfg).map_err(|e| ApiError::refused(vec![e]))
    }

    /// The launcher of a unit's backend, with the campaign's settings now
    /// (a unit keeps being observed by its own backend after the campaign
    /// changed `kind`).
    fn launcher_of(&self, backend: LauncherKind, cfg: &CampaignConfig) -> Result<Box<dyn Launcher + '_>, String> {
        let l = &cfg.launcher;
        match backend {
            LauncherKind::Local => Ok(Box::new(&self.local)),
            LauncherKind::Systemd => {
                let bus = self.systemd_bus.get_or_init(SystemdBus::new).as_ref().map_err(Clone::clone)?;
                Ok(Box::new(SystemdLauncher {
                    bus,
                    query_timeout: l.query_timeout(),
                    journal_dir: l.systemd.journal_dir.clone(),
                    environment: launcher::unit_environment(&l.environment),
                }))
            }
            LauncherKind::Slurm => {
                Ok(Box::new(SlurmLauncher { query_timeout: l.query_timeout(), settings: l.slurm.clone() }))
            }
        }
    }

    /// What a unit's launcher says of it. A remote backend is asked at most
    /// once a second (Slurm: every two seconds) whatever the number of pollers.
    fn observe(&self, rec: &UnitRecord, cfg: &CampaignConfig) -> runboard::live::Observation {
        use runboard::live::Observation;
        let fresh_for = match rec.backend() {
            LauncherKind::Local => return self.local.observe(rec),
            LauncherKind::Slurm => Duration::from_secs(2),
            LauncherKind::Systemd => Duration::from_secs(1),
        };
        if let Some(end) = rec.recorded_end() {
            return end;
        }
        let cached = |m: &std::sync::Mutex<std::collections::HashMap<String, (Instant, Observation)>>| {
            m.lock()
                .unwrap_or_else(|p| p.into_inner())
                .get(&rec.unit)
                .filter(|(at, _)| at.elapsed() < fresh_for)
                .map(|(_, o)| o.clone())
        };
        if let Some(o) = cached(&self.observed) {
            return o;
        }
        let _one = self.observing.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(o) = cached(&self.observed) {
            return o;
        }
        let obs = match self.launcher_of(rec.backend(), cfg) {
            Ok(l) => l.observe(rec),
            Err(reason) => Observation::Unknown { reason },
        };
        self.observed.lock().unwrap_or_else(|p| p.into_inner()).insert(rec.unit.clone(), (Instant::now(), obs.clone()));
        obs
    }

    /// Writes the end of every ended unit of a remote backend into its
    /// record and lets the backend forget it (systemd unloads the unit it
    /// kept to be read). Under the campaign lock, before a launch or control.
    fn harvest(&self, cfg: &CampaignConfig) {
        for rec in self.records.units().iter().filter(|r| r.end.is_none() && r.backend() != LauncherKind::Local) {
            self.observed.lock().unwrap_or_else(|p| p.into_inner()).remove(&rec.unit);
            let obs = self.observe(rec, cfg);
            let Some(done) = launcher::ended(rec, &obs) else { continue };
            if let Err(e) = launcher::write_record(&self.records.unit_path(&rec.unit), &done) {
                tracing::error!("recording the end of {}: {e}", rec.unit);
                continue;
            }
            if let Ok(l) = self.launcher_of(rec.backend(), cfg) {
                if let Err(e) = l.forget(&done) {
                    tracing::warn!("{}: {e}", rec.unit);
                }
            }
        }
    }

    /// Takes the campaign lock, waiting at most `LOCK_WAIT`.
    pub fn lock(&self) -> Result<CampaignLock, ApiError> {
        let path = self.root.join(LOCK_FILE);
        let open = fs::create_dir_all(self.root.join(runsets::CONSOLE_DIR))
            .and_then(|_| fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path));
        let file = open.map_err(|e| app::api::ssr::internal("opening the campaign lock", e))?;
        let deadline = Instant::now() + LOCK_WAIT;
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(CampaignLock(file)),
                Err(fs::TryLockError::WouldBlock) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(fs::TryLockError::WouldBlock) => {
                    return Err(ApiError::busy(format!(
                        "another launch or control holds the campaign (waited {} s); try again",
                        LOCK_WAIT.as_secs()
                    )))
                }
                Err(fs::TryLockError::Error(e)) => return Err(app::api::ssr::internal("taking the campaign lock", e)),
            }
        }
    }

    // ---- coverage ---------------------------------------------------------

    /// The matrix, every planned cell's coverage and how many run sets were
    /// read. Computed again only when the matrix, a run set's records or a
    /// run set's liveness changed (the records are re-read by stamps; an
    /// unchanged one is the same shared value, compared by pointer).
    pub fn coverage(&self) -> std::sync::Arc<(std::sync::Arc<runboard::matrix::Matrix>, coverage::Coverage, usize)> {
        let matrix = self.records.matrix();
        let sets = self.records.run_sets();
        // The key holds the values it compares by pointer, so an address is
        // never reused by a newer value while it is compared.
        let key: CoverageKey = (matrix.clone(), sets.iter().map(|rs| (rs.clone(), self.records.is_live(rs))).collect());
        let same = |a: &CoverageKey, b: &CoverageKey| {
            std::sync::Arc::ptr_eq(&a.0, &b.0)
                && a.1.len() == b.1.len()
                && a.1.iter().zip(&b.1).all(|(x, y)| std::sync::Arc::ptr_eq(&x.0, &y.0) && x.1 == y.1)
        };
        let mut made = self.coverage_made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, c)) = made.as_ref() {
            if same(k, &key) {
                return c.clone();
            }
        }
        let input: Vec<coverage::RunSetCells> = sets
            .iter()
            .zip(&key.1)
            .map(|(rs, (_, live))| coverage::RunSetCells {
                name: rs.name.clone(),
                live: *live,
                cells: rs.cells.clone(),
            })
            .collect();
        let cov = coverage::compute(&matrix, &input);
        let c = std::sync::Arc::new((matrix, cov, input.len()));
        *made = Some((key, c.clone()));
        c
    }

    pub fn coverage_view(&self, rows: Option<&str>, cols: Option<&str>) -> Result<CoverageView, ApiError> {
        let made = self.coverage();
        let (matrix, cov, run_sets) = (&made.0, &made.1, made.2);
        let mut problems = matrix.problems.clone();
        for rs in self.records.run_sets() {
            problems.extend(rs.problems.iter().map(|p| format!("{RUNSETS_DIR}/{}/{p}", rs.name)));
        }
        coverage::view(matrix, cov, rows, cols, run_sets, problems).map_err(|e| {
            ApiError::bad_query(&runboard::runview::trials::BadQuery {
                field: "rows/cols".into(),
                value: String::new(),
                problem: e,
            })
        })
    }

    pub fn cells(&self, params: &CellParams) -> Result<CellPage, ApiError> {
        let made = self.coverage();
        let cov = &made.1;
        params.page(cov).map_err(ApiError::from)
    }

    pub fn run_sets(&self) -> Vec<RunSetSummary> {
        self.summaries(&self.records.run_sets())
    }

    /// These run sets as the Run sets page shows them (tags and committed
    /// specs read once for all).
    pub fn summaries(&self, sets: &[std::sync::Arc<records::RunSetRead>]) -> Vec<RunSetSummary> {
        let tags = self.records.tags().unwrap_or_default();
        let (index, _) = self.records.run_index();
        sets.iter()
            .map(|rs| {
                let mut s = RunSetSummary::from_outcome(&rs.name, rs.outcome_ok());
                s.live = self.records.is_live(rs);
                s.cells = rs.cells.len();
                s.done = rs.cells.iter().filter(|c| c.status == CellStatus::Done).count();
                s.failed = rs.cells.iter().filter(|c| c.status == CellStatus::Failed).count();
                s.tags = tags.of(&rs.name);
                s.spec = index.iter().rev().find(|e| e.run_set == rs.name).map(|e| e.spec.clone());
                if s.label.is_none() {
                    s.label = rs.spec.as_ref().and_then(|r| r.as_ref().ok()).map(|sp| sp.label.clone());
                }
                s.problems = rs.problems.clone();
                s
            })
            .collect()
    }

    // ---- drafting ---------------------------------------------------------

    pub fn draft_preview(&self, req: &DraftRequest) -> Result<DraftPreview, ApiError> {
        let cfg = self.config()?;
        let made = self.coverage();
        let (matrix, cov) = (&made.0, &made.1);
        let draft = draft::from_gaps(matrix, cov, &cfg, req).map_err(ApiError::refused)?;
        let prediction = preflight::predict(&draft.spec, &cfg, &self.history());
        Ok(DraftPreview { draft, prediction })
    }

    pub fn draft_save(&self, req: &DraftRequest) -> Result<SavedDraft, ApiError> {
        let preview = self.draft_preview(req)?;
        let lock = self.lock()?;
        let path = self.write_draft_locked(&preview.draft.spec, &lock)?;
        Ok(SavedDraft {
            launch_hint: format!("runboard launch {path} --root {}", self.root.display()),
            cells: preview.draft.spec.cells.len(),
            path,
        })
    }

    /// Earlier finished attempts, by cell and by task, from every run set.
    fn history(&self) -> History {
        let mut h = History::default();
        for rs in self.records.run_sets() {
            for c in rs.cells.iter().filter(|c| matches!(c.status, CellStatus::Done | CellStatus::Failed)) {
                let at = |t: &Option<String>| t.as_deref().and_then(Timestamp::parse_rfc3339);
                let seconds = at(&c.started_at).zip(at(&c.ended_at)).map(|(s, e)| (e.0 - s.0).max(0) as f64 / 1000.0);
                let sample = Sample { tokens: c.tokens, seconds };
                h.by_cell.entry(c.cell.clone()).or_default().push(sample);
                if let Some(task) = c.factors.get("task").map(runboard::matrix::value_text) {
                    h.by_task.entry(task).or_default().push(sample);
                }
            }
        }
        h
    }

    // ---- the one launch path ----------------------------------------------

    /// The spec at `rel` (checked: under `specs/`, an existing regular file
    /// inside the root) and its parse.
    fn load_spec(&self, rel: &str) -> Result<(PathBuf, Vec<u8>, BatchSpec), ApiError> {
        check_spec_path(rel).map_err(|e| ApiError::refused(vec![e]))?;
        let rel = rel.trim();
        let path = self.root.join(rel);
        let not_there = || ApiError::refused(vec![format!("path {rel:?}: no such spec file under specs/")]);
        let md = fs::symlink_metadata(&path).map_err(|_| not_there())?;
        if md.is_dir() {
            return Err(ApiError::refused(vec![format!("path {rel:?}: a folder, not a spec file")]));
        }
        let specs = self.records.within().root().join("specs");
        let real = fs::canonicalize(&path).map_err(|_| not_there())?;
        if !real.starts_with(&specs) {
            return Err(ApiError::refused(vec![format!("path {rel:?}: leads outside specs/ (a symlink); not read")]));
        }
        let bytes = self.records.within().read(&path).map_err(|e| ApiError::refused(vec![format!("{rel}: {e}")]))?;
        // Read exactly as the driver reads it (parse, then the same checks
        // `runboard drive` makes of a spec: a cell planned twice, no cells), so
        // nothing the driver would refuse is committed or launched.
        let spec = runboard::spec::parse(rel, &bytes)
            .and_then(|s| runboard::spec::merge(vec![(rel.to_owned(), s)]))
            .map_err(|e| ApiError::refused(vec![e.to_string()]))?;
        Ok((path, bytes, spec))
    }

    /// The static preflight of the spec at `rel`: every refusal and the
    /// prediction (shown beside the Launch button before it is pressed).
    pub fn preflight(&self, rel: &str) -> Result<Preflight, ApiError> {
        let (_, _, spec) = self.load_spec(rel)?;
        let cfg = self.config()?;
        Ok(self.preflight_of(&spec, &cfg, None))
    }

    fn preflight_of(&self, spec: &BatchSpec, cfg: &CampaignConfig, resume_label: Option<String>) -> Preflight {
        let findings = crate::drive::doctor_findings(cfg, &self.root, spec, resume_label);
        let (index, _) = self.records.run_index();
        let today = runsets::launches_today(&index, crate::clock::now());
        let mut pf = preflight::check(spec, cfg, &findings, &today, &self.history());
        pf.refusals.extend(self.pool_refusals(spec, cfg));
        pf.warnings = preflight::warnings(spec, cfg, &pf.prediction, &self.circumstances(spec, cfg));
        pf
    }

    /// What the preflight's warnings are made from: the spec's cells already
    /// covered, the batches in flight and their endpoints, and what the
    /// catalogue (the same view as `GET /api/catalogue`) says of its model
    /// and endpoint now.
    fn circumstances(&self, spec: &BatchSpec, cfg: &CampaignConfig) -> preflight::Circumstances {
        let made = self.coverage();
        let covered_ids: std::collections::HashSet<&str> =
            made.1.cells.iter().filter(|c| c.state == coverage::CellState::Covered).map(|c| c.cell.as_str()).collect();
        let covered = spec.cells.iter().filter(|c| covered_ids.contains(c.id.as_str())).map(|c| c.id.clone()).collect();
        // Each batch in flight's endpoints, from the spec its run set holds
        // (read once with the run set), else its committed spec.
        let in_flight = self
            .in_flight(cfg)
            .into_iter()
            .map(|(rec, _)| {
                let held = self
                    .records
                    .run_set(&rec.run_set)
                    .and_then(|rs| rs.spec.as_ref().and_then(|s| s.as_ref().ok()).map(BatchSpec::endpoints_used));
                let endpoints = held.or_else(|| self.load_spec(&rec.spec).ok().map(|(_, _, s)| s.endpoints_used()));
                (rec.run_set, endpoints.unwrap_or_default())
            })
            .collect();
        let mut unavailable = Vec::new();
        if let Ok(view) = self.catalogue(false) {
            let mine = spec.endpoints_used();
            for e in view.endpoints.iter().filter(|e| mine.contains(&e.name) && !e.available) {
                unavailable.push(format!("endpoint {}: {}", e.name, e.words));
            }
            // A model served by an endpoint the spec names is as available as
            // that endpoint (said above); a paid model has its own reasons.
            if let Some(m) = spec.model.as_deref().and_then(|m| view.models.iter().find(|x| x.name == m)) {
                if !m.available && mine.is_empty() {
                    unavailable.push(format!("model {}: {}", m.name, m.words));
                }
            }
        }
        preflight::Circumstances { covered, in_flight, unavailable }
    }

    /// A resource pool's refusals (none for a spec without a pool): its
    /// endpoints probed now.
    fn pool_refusals(&self, spec: &BatchSpec, cfg: &CampaignConfig) -> Vec<String> {
        if spec.endpoints.is_empty() {
            return Vec::new();
        }
        let probes = pool::probe(cfg, &spec.endpoints);
        runboard::pool::check(spec, cfg, &probes)
    }

    /// The static preflight as a gate: every refusal, or the prediction
    /// (none when skipped).
    fn gate(&self, spec: &BatchSpec, cfg: &CampaignConfig, skip: bool) -> Result<Option<Prediction>, ApiError> {
        if skip {
            // Skipping the preflight never skips a pool's check: cells of
            // endpoints serving different models are not one batch.
            let refusals = self.pool_refusals(spec, cfg);
            return if refusals.is_empty() { Ok(None) } else { Err(ApiError::refused(refusals)) };
        }
        let pf = self.preflight_of(spec, cfg, None);
        if pf.refusals.is_empty() {
            Ok(Some(pf.prediction))
        } else {
            Err(ApiError::refused(pf.refusals))
        }
    }

    /// `start`: the one launch path (see `docs/formats.md`, "Launching").
    pub fn start(&self, req: &LaunchRequest) -> Result<Launched, ApiError> {
        let lock = self.lock()?;
        self.start_held(req, &lock)
    }

    /// The launch path itself, the campaign lock held.
    fn start_held(&self, req: &LaunchRequest, _lock: &CampaignLock) -> Result<Launched, ApiError> {
        let tag = req.tag.clone().unwrap_or_else(|| "console".into());
        if !runsets::valid_tag(&tag) {
            return Err(ApiError::refused(vec![format!(
                "tag {:?}: must be 1-40 letters, digits, '-', '_' or '.'",
                runboard::spec::shorten(&tag)
            )]));
        }
        let (_, bytes, spec) = self.load_spec(&req.path)?;
        let cfg = self.config()?;
        let launcher = self.launcher(&cfg)?;
        let prediction = self.gate(&spec, &cfg, req.skip_preflight)?;
        self.harvest(&cfg);
        let committed = self.commit(req.path.trim(), &bytes, &spec.label)?;
        let run_set = runsets::run_set_name(&spec.label, crate::clock::now(), &|n| self.run_set_taken(n));
        self.launch_unit(launcher.as_ref(), &cfg, &spec, &committed, &run_set, None, &tag, prediction)
    }

    /// Resume: the run set's committed spec, driven again into it.
    pub fn resume(&self, req: &ResumeRequest) -> Result<Launched, ApiError> {
        let name = req.run_set.trim();
        let _lock = self.lock()?;
        let rs = self.records.run_set(name).ok_or_else(|| {
            ApiError::refused(vec![format!("run_set {:?}: no such run set", runboard::spec::shorten(name))])
        })?;
        if self.records.is_live(&rs) {
            return Err(ApiError::busy(format!("{name} is running; pause it before resuming")));
        }
        if self.aborted(&rs.name, &rs.dir) {
            return Err(ApiError::refused(vec![format!(
                "{name} was stopped and aborted by the operator; it is not resumed (launch its spec again for a new run set)"
            )]));
        }
        let (index, _) = self.records.run_index();
        let spec_rel = index.iter().rev().find(|e| e.run_set == name).map(|e| e.spec.clone()).ok_or_else(|| {
            ApiError::refused(vec![format!("{name}: no committed spec is recorded for it in the run index")])
        })?;
        let (_, _, spec) = self.load_spec(&spec_rel).map_err(|e| {
            ApiError::refused(e.reasons.iter().map(|r| format!("{name}'s committed spec: {r}")).collect())
        })?;
        let cfg = self.config()?;
        let launcher = self.launcher(&cfg)?;
        let prediction = self.gate(&spec, &cfg, req.skip_preflight)?;
        self.harvest(&cfg);
        let tag = index.iter().rev().find(|e| e.run_set == name).map_or("console".into(), |e| e.tag.clone());
        self.launch_unit(launcher.as_ref(), &cfg, &spec, &spec_rel, name, Some(&rs.dir), &tag, prediction)
    }

    /// Whether the run set was aborted: the marker says so for it, or its
    /// execution log holds the abort line a stop appends.
    fn aborted(&self, name: &str, dir: &Path) -> bool {
        let marked = self
            .records
            .marker()
            .and_then(Result::ok)
            .is_some_and(|m| m.run_set == name && m.status == MarkerStatus::AbortedByOperator);
        marked
            || self
                .records
                .within()
                .read(&dir.join("execution_log.md"))
                .is_ok_and(|b| String::from_utf8_lossy(&b).contains(ABORT_LINE))
    }

    fn run_set_taken(&self, name: &str) -> bool {
        self.root.join(RUNSETS_DIR).join(name).symlink_metadata().is_ok()
            || self.root.join(UNITS_DIR).join(format!("{}.json", unit_name(name))).exists()
    }

    /// A draft becomes the next numbered committed spec (a byte copy); a spec
    /// already committed is launched as it is.
    fn commit(&self, rel: &str, bytes: &[u8], label: &str) -> Result<String, ApiError> {
        let file = rel.rsplit('/').next().unwrap_or(rel);
        if rel.starts_with(&format!("{COMMITTED_DIR}/")) && runsets::committed_number(file).is_some() {
            return Ok(rel.to_owned());
        }
        let dir = self.root.join(COMMITTED_DIR);
        fs::create_dir_all(&dir).map_err(|e| app::api::ssr::internal("making specs/committed", e))?;
        let existing: Vec<String> = fs::read_dir(&dir)
            .map(|r| r.flatten().filter_map(|e| e.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        let name = runsets::next_committed_name(&existing, label);
        // `create_new`: a committed spec is never written over.
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(&name))
            .map_err(|e| app::api::ssr::internal("committing a spec", e))?;
        f.write_all(bytes).and_then(|_| f.sync_all()).map_err(|e| app::api::ssr::internal("committing a spec", e))?;
        Ok(format!("{COMMITTED_DIR}/{name}"))
    }

    #[allow(clippy::too_many_arguments)]
    fn launch_unit(
        &self,
        launcher: &dyn Launcher,
        cfg: &CampaignConfig,
        spec: &BatchSpec,
        committed: &str,
        run_set: &str,
        resume_into: Option<&Path>,
        tag: &str,
        prediction: Option<Prediction>,
    ) -> Result<Launched, ApiError> {
        // A resumed run set gets a unit of its own each time.
        let unit = match resume_into {
            None => unit_name(run_set),
            Some(_) => {
                let base = unit_name(run_set);
                (2..).map(|n| format!("{base}.r{n}")).find(|u| !self.records.unit_path(u).exists()).unwrap_or(base)
            }
        };
        let mut command = vec![
            launcher_exe(&self.local).to_string_lossy().into_owned(),
            "drive".into(),
            self.root.join(committed).to_string_lossy().into_owned(),
            "--root".into(),
            self.root.to_string_lossy().into_owned(),
        ];
        match resume_into {
            Some(dir) => command.extend(["--resume-into".into(), dir.to_string_lossy().into_owned()]),
            None => command.extend(["--run-set".into(), run_set.to_owned()]),
        }
        let req = UnitRequest {
            unit: unit.clone(),
            run_set: run_set.to_owned(),
            spec: committed.to_owned(),
            command,
            root: self.root.clone(),
            record: self.records.unit_path(&unit),
            log: format!("{UNITS_DIR}/{unit}.log"),
            grace: Duration::from_secs_f64(cfg.grace_s()),
        };
        let rec = launcher.start(&req).map_err(|e| {
            // A refused launch leaves no unit behind (the answer says why).
            let _ = fs::remove_file(&req.record);
            let _ = fs::remove_file(req.record.with_extension("sbatch"));
            ApiError::refused(vec![e])
        })?;
        // The launch is accepted: the tag, the index line and the marker say
        // so even if the unit dies before it makes its run set.
        let mut problems = Vec::new();
        let mut tags = self.records.tags().unwrap_or_default();
        tags.attach(tag, run_set);
        if let Err(e) = self.records.write_tags(&tags) {
            problems.push(format!("run_tags.json: {e}"));
        }
        let entry = RunIndexEntry {
            run_set: run_set.to_owned(),
            spec: committed.to_owned(),
            label: spec.label.clone(),
            launched_at: rec.started_at,
            kind: if resume_into.is_some() { RunKind::Resume } else { RunKind::Launch },
            launcher: launcher.backend(),
            unit: unit.clone(),
            tag: tag.to_owned(),
            cells: spec.cells.len(),
            model: spec.model.clone().unwrap_or_default(),
            endpoint: spec.endpoint.clone().unwrap_or_default(),
        };
        if let Err(e) = self.records.append_run_index(&entry) {
            problems.push(format!("run_index.csv: {e}"));
        }
        let marker = ActiveMarker {
            schema_version: 1,
            run_set: run_set.to_owned(),
            spec: committed.to_owned(),
            unit: Some(unit.clone()),
            status: MarkerStatus::Launched,
            planned: spec.cells.len(),
            updated_at: crate::clock::now(),
            reason: Some(format!("{}ed through the console", if resume_into.is_some() { "resum" } else { "launch" })),
        };
        if let Err(e) = self.records.write_marker(&marker) {
            problems.push(format!("active_batch.json: {e}"));
        }
        for p in problems {
            tracing::error!("after launching {unit}: {p}");
        }
        Ok(Launched { unit, spec: committed.to_owned(), run_set: run_set.to_owned(), tag: tag.to_owned(), prediction })
    }

    // ---- live ---------------------------------------------------------------

    /// The latest unit and what its launcher says of it. The latest is the
    /// run index's last launch when its unit record cannot be read (then
    /// its state is unknown, with the reason).
    fn current_unit(&self, cfg: &CampaignConfig) -> Option<(UnitRecord, UnitSeen)> {
        let units = self.records.units();
        let (index, _) = self.records.run_index();
        let last_launch = index.last().filter(|e| {
            !units.iter().any(|u| u.unit == e.unit) && units.last().is_none_or(|u| u.started_at <= e.launched_at)
        });
        let (rec, observation) = match last_launch {
            Some(e) => {
                let path = self.records.unit_path(&e.unit);
                let why = match self.records.within().read(&path) {
                    Err(err) => format!("its unit record {UNITS_DIR}/{}.json cannot be read: {err}", e.unit),
                    Ok(b) => match serde_json::from_slice::<UnitRecord>(&b) {
                        Err(err) => format!("its unit record {UNITS_DIR}/{}.json is damaged: {err}", e.unit),
                        Ok(_) => "its unit record changed while it was read".into(),
                    },
                };
                let rec = UnitRecord::new(&e.unit, e.launcher, &e.run_set, &e.spec, Vec::new(), e.launched_at);
                (rec, runboard::live::Observation::Unknown { reason: why })
            }
            None => {
                let rec = units.last().cloned()?;
                let obs = self.observe(&rec, cfg);
                (rec, obs)
            }
        };
        let outcome = self.records.run_set(&rec.run_set).and_then(|rs| rs.outcome_ok().map(|o| o.status));
        let seen = unit_seen(&rec, observation, outcome);
        Some((rec, seen))
    }

    /// Why the unit died (from its log or journal), made once per ending.
    fn failure(&self, rec: &UnitRecord, seen: &UnitSeen, cfg: &CampaignConfig) -> runboard::live::UnitFailure {
        let key = format!("{}\u{0}{:?}", rec.unit, seen.observation);
        let mut held = self.failures.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, f)) = held.as_ref() {
            if *k == key {
                return f.clone();
            }
        }
        let tail = match self.launcher_of(rec.backend(), cfg) {
            Ok(l) => l.log_tail(rec, &self.records, 12),
            Err(_) => rec.log.as_deref().map(|l| self.records.tail_lines(l, 12)).unwrap_or_default(),
        };
        let f = launcher::failure_of(rec, &seen.observation, &tail);
        *held = Some((key, f.clone()));
        f
    }

    /// `GET /api/live`: the whole view, shared while nothing changed.
    pub fn live_shared(&self) -> std::sync::Arc<LiveView> {
        let version = self.live_version();
        let mut made = self.live_made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((v, at, view)) = made.as_ref() {
            if *v == version && at.elapsed() < LIVE_REMAKE {
                return view.clone();
            }
        }
        let view = std::sync::Arc::new(self.live());
        *made = Some((view.version.clone(), Instant::now(), view.clone()));
        view
    }

    /// The live view made from the records now.
    pub fn live(&self) -> LiveView {
        let now = crate::clock::now();
        let cfg = self.config().ok();
        let mut problems = Vec::new();
        let current = cfg.as_ref().and_then(|c| self.current_unit(c));
        let marker = match self.records.marker() {
            Some(Ok(m)) => Some(m),
            Some(Err(e)) => {
                problems.push(e);
                None
            }
            None => None,
        };
        let run_sets = self.records.run_sets();
        // A driver process alive naming its run set: the current unit's first.
        let live_sets: Vec<&str> =
            run_sets.iter().filter(|rs| self.records.is_live(rs)).map(|rs| rs.name.as_str()).collect();
        let process_run_set = current
            .as_ref()
            .map(|(_, u)| u.run_set.as_str())
            .filter(|rs| live_sets.contains(rs))
            .or(live_sets.first().copied())
            .map(str::to_owned);
        let failure = current.as_ref().and_then(|(rec, u)| match (&u.observation, cfg.as_ref()) {
            (runboard::live::Observation::Finished { .. }, Some(cfg))
                if !u.observation.succeeded() && u.outcome.is_none() =>
            {
                Some(self.failure(rec, u, cfg))
            }
            _ => None,
        });
        let obs = LiveObservations { unit: current.as_ref().map(|(_, u)| u.clone()), process_run_set, marker, failure };
        let state = live::derive(&obs);
        let run_set = match &state {
            live::LiveState::Idle { last_run_set, .. } => last_run_set.clone(),
            live::LiveState::Starting { run_set, .. }
            | live::LiveState::Running { run_set, .. }
            | live::LiveState::StoppedResumable { run_set, .. }
            | live::LiveState::Aborted { run_set, .. }
            | live::LiveState::LaunchFailed { run_set, .. }
            | live::LiveState::Interrupted { run_set, .. } => Some(run_set.clone()),
            live::LiveState::Unknown { .. } => obs.unit.as_ref().map(|u| u.run_set.clone()),
        };
        let rs = run_set.as_deref().and_then(|n| run_sets.iter().find(|r| r.name == n));
        let spec = rs
            .and_then(|r| r.spec.as_ref().and_then(|s| s.as_ref().ok()).cloned())
            .or_else(|| obs.unit.as_ref().and_then(|u| self.load_spec(&u.spec).ok().map(|(_, _, s)| s)));
        let price = spec
            .as_ref()
            .and_then(|s| s.model.as_deref())
            .and_then(|m| cfg.as_ref()?.model(m).map(|m| m.price_per_1k_tokens))
            .filter(|p| *p > 0.0);
        let parallel = cfg.as_ref().and_then(|c| c.runner.as_ref()).map_or(1, |r| r.parallel.max(1) as usize);
        let records = rs.map(|r| r.cells.as_slice()).unwrap_or_default();
        let planned = spec.as_ref().map(|s| s.cells.as_slice()).unwrap_or_default();
        let (cells, totals, eta_s) = live::cell_rows(planned, records, price, parallel, now);
        if let Some(r) = rs {
            problems.extend(r.problems.iter().map(|p| format!("{RUNSETS_DIR}/{}/{p}", r.name)));
        }
        // Time left only means something while the batch runs.
        let eta_s =
            eta_s.filter(|_| matches!(state, live::LiveState::Running { .. } | live::LiveState::Starting { .. }));
        let progress =
            if totals.planned == 0 { 0.0 } else { (totals.done + totals.failed) as f64 / totals.planned as f64 };
        let in_flight = cfg.as_ref().map(|c| self.in_flight(c)).unwrap_or_default();
        let version = self.live_version_of(obs.unit.as_ref(), &in_flight);
        let seen: Vec<UnitSeen> = in_flight.into_iter().map(|(rec, o)| unit_seen(&rec, o, None)).collect();
        let others = live::other_batches(&seen, run_set.as_deref());
        let in_flight_sets: Vec<&str> = seen.iter().map(|u| u.run_set.as_str()).collect();
        let mut resumable_run_sets: Vec<String> = run_sets
            .iter()
            .filter(|r| r.outcome_ok().is_some_and(|o| o.status == runboard::drive::records::BatchStatus::Stopped))
            .filter(|r| !in_flight_sets.contains(&r.name.as_str()) && !self.records.is_live(r))
            .filter(|r| !self.aborted(&r.name, &r.dir))
            .map(|r| r.name.clone())
            .collect();
        if let live::LiveState::StoppedResumable { run_set, .. } = &state {
            if !resumable_run_sets.contains(run_set) {
                resumable_run_sets.insert(0, run_set.clone());
            }
        }
        LiveView {
            resumable_run_sets,
            currency: cfg.as_ref().map_or_else(|| "USD".to_owned(), |c| c.currency.clone()),
            generated_at: now,
            words: state.words(),
            resumable: state.resumable(),
            others,
            state,
            unit: obs.unit,
            run_set,
            outcome: rs.and_then(|r| r.outcome_ok().cloned()),
            cells_matching: cells.len(),
            cells_offset: 0,
            cells,
            totals,
            progress,
            eta_s,
            problems,
            version,
        }
    }

    /// What the live view depends on, from `stat`, the latest unit's
    /// observation and whether its driver is alive: changes whenever the live
    /// view may have (a page follows it and re-reads the view on a change).
    pub fn live_version(&self) -> String {
        let cfg = self.config().ok();
        let current = cfg.as_ref().and_then(|c| self.current_unit(c)).map(|(_, u)| u);
        let in_flight = cfg.as_ref().map(|c| self.in_flight(c)).unwrap_or_default();
        self.live_version_of(current.as_ref(), &in_flight)
    }

    /// `in_flight`: [`Self::in_flight`], made once by the caller.
    fn live_version_of(
        &self,
        current: Option<&UnitSeen>,
        in_flight: &[(UnitRecord, runboard::live::Observation)],
    ) -> String {
        let mut h = runboard::hash::Fnv1a::new();
        let stamp = |p: &Path| format!("{:?}", crate::fsread::stamp_of(p));
        for f in [runsets::ACTIVE_MARKER_FILE, UNITS_DIR, RUNSETS_DIR, CONFIG_FILE] {
            h.write(stamp(&self.root.join(f)).as_bytes());
        }
        if let Some(u) = current {
            h.write(format!("{:?}{:?}", u.observation, u.outcome).as_bytes());
            let dir = self.root.join(RUNSETS_DIR).join(&u.run_set);
            for f in ["cells", "batch_outcome.json", "spec.json"] {
                h.write(stamp(&dir.join(f)).as_bytes());
            }
            let live = self.records.run_set(&u.run_set).is_some_and(|rs| self.records.is_live(&rs));
            h.write(&[u8::from(live)]);
            // While its driver runs, the running cells' durations grow: a
            // tick every 5 s moves the version so the page shows them moving.
            if live {
                h.write(&(crate::clock::now().millis() / LIVE_TICK_MS).to_le_bytes());
            }
        }
        // The other batches in flight.
        for (rec, o) in in_flight {
            h.write(format!("{}{o:?}", rec.unit).as_bytes());
        }
        format!("{:016x}", h.finish())
    }

    // ---- control --------------------------------------------------------------

    /// The units that may still be running: active or pending, or whose
    /// state cannot be read now (a stop is still tried on those).
    fn running_units(&self, cfg: &CampaignConfig) -> Vec<UnitRecord> {
        self.in_flight(cfg).into_iter().map(|(rec, _)| rec).collect()
    }

    /// The units that may still be running, with what their launchers say.
    fn in_flight(&self, cfg: &CampaignConfig) -> Vec<(UnitRecord, runboard::live::Observation)> {
        use runboard::live::Observation;
        self.records
            .units()
            .iter()
            .filter(|r| r.end.is_none() || r.backend() == LauncherKind::Local)
            .filter_map(|r| {
                let obs = self.observe(r, cfg);
                matches!(obs, Observation::Active { .. } | Observation::Pending { .. } | Observation::Unknown { .. })
                    .then(|| (r.clone(), obs))
            })
            .collect()
    }

    /// Ends the units in flight of `targets` (each run set's), and releases
    /// the lease when one was ended. Units of other run sets are left alone:
    /// a control acts on the batches it names, never on another lane's.
    /// Returns the last unit ended.
    fn end_units(&self, cfg: &CampaignConfig, targets: &[String], report: &mut StopReport) -> Option<UnitRecord> {
        let running: Vec<UnitRecord> =
            self.running_units(cfg).into_iter().filter(|r| targets.contains(&r.run_set)).collect();
        let grace = Duration::from_secs_f64(cfg.grace_s());
        for rec in &running {
            let s = match self.launcher_of(rec.backend(), cfg) {
                Ok(l) => l.stop(rec, grace),
                Err(e) => launcher::Stopped { unit: rec.unit.clone(), was_running: true, ended: false, detail: e },
            };
            self.observed.lock().unwrap_or_else(|p| p.into_inner()).remove(&rec.unit);
            // What really happened, from the end its supervisor recorded.
            let recorded =
                self.records.units().iter().find(|r| r.unit == rec.unit).and_then(|r| r.end.clone()).map(|e| e.result);
            let detail = match recorded.as_deref() {
                Some("killed-after-grace") => format!(
                    "killed after the launcher's grace ({} s): its driver did not end in time, so its records may still say running",
                    grace.as_secs_f64()
                ),
                _ => s.detail,
            };
            report.units.push(format!("{} ({}): {}", s.unit, rec.run_set, detail));
        }
        self.harvest(cfg);
        if !running.is_empty() {
            report.lease = cfg.hooks.release_lease.as_ref().map(|cmd| run_hook(cmd, &self.root));
        }
        running.into_iter().last()
    }

    /// Ends every unit still running, recording nothing else (the demo's
    /// batch, when the server that launched it stops).
    pub fn end_running_units(&self) {
        let Ok(cfg) = self.config() else { return };
        let grace = Duration::from_secs_f64(cfg.grace_s());
        for rec in self.running_units(&cfg) {
            if let Ok(l) = self.launcher_of(rec.backend(), &cfg) {
                l.stop(&rec, grace);
            }
        }
    }

    /// The run set a control acts on when none is named: the one the live
    /// state speaks for (the batch on the Live page).
    fn shown_run_set(&self) -> Option<String> {
        self.live_shared().run_set.clone()
    }

    /// Checks the run set names a control was given: every bad one is named
    /// (422), and nothing is done.
    fn check_targets(names: &[String]) -> Result<Vec<String>, ApiError> {
        let mut bad = Vec::new();
        let mut out = Vec::new();
        for n in names {
            let t = n.trim();
            if let Some(why) = runboard::runsets::run_set_name_problem(t) {
                bad.push(format!("run set {:?}: {why}", runboard::spec::shorten(t)));
            } else if !out.iter().any(|o: &String| o == t) {
                out.push(t.to_owned());
            }
        }
        if bad.is_empty() {
            Ok(out)
        } else {
            Err(ApiError::refused(bad))
        }
    }

    /// `POST /api/control/pause`: ends a batch, keeps it resumable — the one
    /// named (`run_set`), else the one the live state speaks for. Other
    /// batches in flight run on.
    pub fn pause(&self, req: &PauseRequest) -> Result<StopReport, ApiError> {
        let named = Self::check_targets(req.run_set.as_slice())?;
        let _lock = self.lock()?;
        let cfg = self.config()?;
        let target = match named.into_iter().next() {
            Some(t) => t,
            None => self.shown_run_set().ok_or_else(|| ApiError::busy("no batch is running: nothing to pause"))?,
        };
        if !self.running_units(&cfg).iter().any(|r| r.run_set == target) {
            return Err(ApiError::busy(format!("{target} is not running: nothing to pause")));
        }
        let mut report = StopReport::default();
        if let Some(rec) = self.end_units(&cfg, std::slice::from_ref(&target), &mut report) {
            let planned =
                self.records.run_set(&rec.run_set).and_then(|r| r.outcome_ok().map(|o| o.planned)).unwrap_or(0);
            let m = ActiveMarker {
                schema_version: 1,
                run_set: rec.run_set.clone(),
                spec: rec.spec.clone(),
                unit: Some(rec.unit.clone()),
                status: MarkerStatus::StoppedBeforeCompletion,
                planned,
                updated_at: crate::clock::now(),
                reason: Some("paused by the operator".into()),
            };
            self.records.write_marker(&m).map_err(|e| app::api::ssr::internal("writing the active-batch marker", e))?;
            report.marker = Some(m.status);
            report.run_sets.push(rec.run_set);
        }
        Ok(report)
    }

    /// `POST /api/control/stop`: ends the targeted batches (`run_sets`, else
    /// the one the live state speaks for), aborts each (an abort line in its
    /// `execution_log.md`), marks `aborted_by_operator` and turns auto mode
    /// off — nothing relaunches them, Resume is gone. Other batches in flight
    /// run on. Names that are not run set names are refused (422) and one
    /// that names no run set is skipped and said; when none is left, nothing
    /// is done (404) — the marker is touched only for a run set really stopped.
    pub fn stop(&self, req: &StopRequest) -> Result<StopReport, ApiError> {
        let named = Self::check_targets(&req.run_sets)?;
        let _lock = self.lock()?;
        let cfg = self.config()?;
        let mut report = StopReport::default();
        let targets = if named.is_empty() {
            let shown = self
                .shown_run_set()
                .ok_or_else(|| ApiError::busy("no batch to stop: nothing was launched and no run set was named"))?;
            vec![shown]
        } else {
            named
        };
        let (found, missing): (Vec<String>, Vec<String>) =
            targets.into_iter().partition(|t| self.records.run_set(t).is_some() || self.unit_of(t).is_some());
        if found.is_empty() {
            return Err(ApiError::with_reasons(
                runboard::api::ErrorKind::NotFound,
                missing.iter().map(|t| format!("run set {t:?}: no such run set; nothing was stopped")).collect(),
            ));
        }
        report.aborted.extend(missing.iter().map(|t| format!("{t}: no such run set; skipped")));
        let last = self.end_units(&cfg, &found, &mut report);
        let now = crate::clock::now();
        for t in &found {
            match self.records.run_set(t) {
                // Launched, but its driver never made the folder: nothing to
                // append to; the marker says it is aborted.
                None => report.aborted.push(format!("{t}: aborted (it wrote no run set folder)")),
                Some(rs) => {
                    let line = format!("- {} {ABORT_LINE}\n", now.to_rfc3339());
                    let written = fs::OpenOptions::new()
                        .create(true)
                        .append(true)
                        .open(rs.dir.join("execution_log.md"))
                        .and_then(|mut f| f.write_all(line.as_bytes()));
                    report.aborted.push(match written {
                        Ok(()) => format!("{t}: aborted"),
                        Err(e) => format!("{t}: aborted, but execution_log.md could not be appended: {e}"),
                    });
                }
            }
        }
        report.run_sets.clone_from(&found);
        // The marker names a run set this stop really aborted: the one it
        // named already if that was stopped, else the last stopped.
        let marker = self.records.marker().and_then(Result::ok);
        let about = marker
            .as_ref()
            .map(|m| m.run_set.clone())
            .filter(|m| found.contains(m))
            .unwrap_or_else(|| found[found.len() - 1].clone());
        let unit = last.filter(|r| r.run_set == about).or_else(|| self.unit_of(&about));
        let same = marker.as_ref().filter(|m| m.run_set == about);
        let m = ActiveMarker {
            schema_version: 1,
            spec: same.map(|m| m.spec.clone()).or(unit.as_ref().map(|r| r.spec.clone())).unwrap_or_default(),
            unit: unit.as_ref().map(|r| r.unit.clone()),
            planned: same.map_or_else(
                || self.records.run_set(&about).and_then(|r| r.outcome_ok().map(|o| o.planned)).unwrap_or(0),
                |m| m.planned,
            ),
            run_set: about,
            status: MarkerStatus::AbortedByOperator,
            updated_at: now,
            reason: Some("stopped and aborted by the operator".into()),
        };
        self.records.write_marker(&m).map_err(|e| app::api::ssr::internal("writing the active-batch marker", e))?;
        report.marker = Some(m.status);
        // Whatever it was, auto mode is off now: nothing relaunches the batch.
        crate::auto_state::turn_off(&self.root, "stop and abort by the operator")
            .map_err(|e| app::api::ssr::internal("turning auto mode off", e))?;
        report.auto_off = true;
        Ok(report)
    }

    /// The latest unit launched for `run_set`, if any.
    fn unit_of(&self, run_set: &str) -> Option<UnitRecord> {
        self.records.units().iter().rev().find(|r| r.run_set == run_set).cloned()
    }
}

fn launcher_exe(l: &LocalLauncher) -> &Path {
    &l.exe
}

/// Runs a hook command in the campaign root, bounded in time, its output kept.
fn run_hook(cmd: &[String], root: &Path) -> HookResult {
    let Some((program, args)) = cmd.split_first() else {
        return HookResult { ok: false, status: "no program".into(), output: String::new() };
    };
    let last = |out: &[u8]| -> String {
        let text = String::from_utf8_lossy(out);
        text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect()
    };
    match crate::command::run_bounded(program, args, Some(root), HOOK_TIMEOUT) {
        Ok(o) => HookResult {
            ok: o.status.success(),
            status: o.status.to_string(),
            output: last(&[o.stdout, o.stderr].concat()),
        },
        Err(crate::command::Failed::TimedOut { output, .. }) => HookResult {
            ok: false,
            status: format!("killed after {} s", HOOK_TIMEOUT.as_secs()),
            output: last(&output),
        },
        Err(e) => HookResult { ok: false, status: e.to_string(), output: String::new() },
    }
}

/// A unit record as the live view shows it, with what its launcher says.
fn unit_seen(
    rec: &UnitRecord,
    observation: runboard::live::Observation,
    outcome: Option<runboard::drive::records::BatchStatus>,
) -> UnitSeen {
    UnitSeen {
        unit: rec.unit.clone(),
        backend: rec.backend().word().to_owned(),
        run_set: rec.run_set.clone(),
        spec: rec.spec.clone(),
        started_at: rec.started_at,
        observation,
        outcome,
    }
}
