//! The one launch path: drafts, preflight, `start` (the Launch button, the
//! CLI and the autopilot alike) and `resume`, committing the spec and
//! starting its unit.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runboard::api::ApiError;
use runboard::campaign::CampaignConfig;
use runboard::console::draft::{self, DraftPreview, DraftRequest, SavedDraft};
use runboard::console::launch::{check_spec_path, unit_name, LaunchRequest, Launched, ResumeRequest};
use runboard::console::preflight::{self, History, Prediction, Preflight, Sample};
use runboard::console::spec::BatchSpec;
use runboard::drive::records::CellStatus;
use runboard::live::{ActiveMarker, MarkerStatus};
use runboard::runsets::{self, RunIndexEntry, RunKind, COMMITTED_DIR, RUNSETS_DIR, UNITS_DIR};

use super::launcher::{Launcher, LocalLauncher, UnitRequest};

use super::{pool, Campaign, CampaignLock, ABORT_LINE};

impl Campaign {
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

    /// Earlier finished attempts, by cell and by task, from every run set:
    /// each one's tokens (reported, else counted), and its duration only
    /// where Timing counts it — the same rules, so a prediction never rests
    /// on a timing the Timing view calls implausible or shared.
    pub(super) fn history(&self) -> History {
        let mut h = History::default();
        let timings = self.scope(None).and_then(|s| self.scoped(s)).map(|s| self.timings_of(&s)).unwrap_or_default();
        for t in timings.iter().filter(|t| matches!(t.status, CellStatus::Done | CellStatus::Failed)) {
            let sample = Sample { tokens: t.tokens, seconds: t.duration_s.filter(|_| t.counts) };
            h.add(&t.cell, t.factors.get("task").map(runboard::console::matrix::value_text), sample);
        }
        h
    }

    // ---- the one launch path ----------------------------------------------

    /// The spec at `rel` (checked: under `specs/`, an existing regular file
    /// inside the root) and its parse.
    pub(super) fn load_spec(&self, rel: &str) -> Result<(PathBuf, Vec<u8>, BatchSpec), ApiError> {
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
        let spec = runboard::console::spec::parse(rel, &bytes)
            .and_then(|s| runboard::console::spec::merge(vec![(rel.to_owned(), s)]))
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

    pub(super) fn preflight_of(
        &self,
        spec: &BatchSpec,
        cfg: &CampaignConfig,
        resume_label: Option<String>,
    ) -> Preflight {
        let findings = crate::drive::doctor_findings(cfg, &self.root, spec, resume_label);
        let (index, _) = self.records.run_index();
        let today = runsets::launches_today(&index, crate::system::clock::now());
        let mut pf = preflight::check(spec, cfg, &findings, &today, &self.history());
        pf.refusals.extend(self.pool_refusals(spec, cfg));
        pf.refusals.extend(self.budget_refusals(cfg, pf.prediction.cost, pf.prediction.tokens));
        pf.warnings = preflight::warnings(spec, cfg, &pf.prediction, &self.circumstances(spec, cfg));
        pf
    }

    /// What the preflight's warnings are made from: the spec's cells already
    /// covered, the batches in flight and their endpoints, and what the
    /// catalogue (the same view as `GET /api/catalogue`) says of its model
    /// and endpoint now.
    pub(super) fn circumstances(&self, spec: &BatchSpec, cfg: &CampaignConfig) -> preflight::Circumstances {
        let made = self.coverage();
        let covered_ids: std::collections::HashSet<&str> = made
            .1
            .cells
            .iter()
            .filter(|c| c.state == runboard::console::coverage::CellState::Covered)
            .map(|c| c.cell.as_str())
            .collect();
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
    pub(super) fn pool_refusals(&self, spec: &BatchSpec, cfg: &CampaignConfig) -> Vec<String> {
        if spec.endpoints.is_empty() {
            return Vec::new();
        }
        let probes = pool::probe(cfg, &spec.endpoints);
        runboard::console::pool::check(spec, cfg, &probes)
    }

    /// The static preflight as a gate: every refusal, or the prediction
    /// (none when skipped).
    pub(super) fn gate(
        &self,
        spec: &BatchSpec,
        cfg: &CampaignConfig,
        skip: bool,
    ) -> Result<Option<Prediction>, ApiError> {
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
    pub(super) fn start_held(&self, req: &LaunchRequest, _lock: &CampaignLock) -> Result<Launched, ApiError> {
        let tag = req.tag.clone().unwrap_or_else(|| "console".into());
        if !runsets::valid_tag(&tag) {
            return Err(ApiError::refused(vec![format!(
                "tag {:?}: must be 1-40 letters, digits, '-', '_' or '.'",
                runboard::console::spec::shorten(&tag)
            )]));
        }
        let (_, bytes, spec) = self.load_spec(&req.path)?;
        let cfg = self.config()?;
        let launcher = self.launcher(&cfg)?;
        let prediction = self.gate(&spec, &cfg, req.skip_preflight)?;
        self.harvest(&cfg);
        let committed = self.commit(req.path.trim(), &bytes, &spec.label)?;
        let run_set = runsets::run_set_name(&spec.label, crate::system::clock::now(), &|n| self.run_set_taken(n));
        self.launch_unit(launcher.as_ref(), &cfg, &spec, &committed, &run_set, None, &tag, prediction)
    }

    /// Resume: the run set's committed spec, driven again into it.
    pub fn resume(&self, req: &ResumeRequest) -> Result<Launched, ApiError> {
        let name = req.run_set.trim();
        let _lock = self.lock()?;
        let rs = self.records.run_set(name).ok_or_else(|| {
            ApiError::refused(vec![format!("run_set {:?}: no such run set", runboard::console::spec::shorten(name))])
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
        // A cap it reached holds until the cap is raised (or, for the
        // day's, the day is over): resuming would only be paused again.
        let spent = self.live_spend(&cfg, &rs, Some(&spec), false, None, crate::system::clock::now());
        let reached: Vec<String> = spent
            .batch
            .caps
            .iter()
            .filter(|c| c.reached)
            .map(|c| format!("budget: {} — raise [budget] {} in campaign.toml to resume it", c.words, c.key))
            .collect();
        if !reached.is_empty() {
            return Err(ApiError::refused(reached));
        }
        let launcher = self.launcher(&cfg)?;
        let prediction = self.gate(&spec, &cfg, req.skip_preflight)?;
        self.harvest(&cfg);
        let tag = index.iter().rev().find(|e| e.run_set == name).map_or("console".into(), |e| e.tag.clone());
        self.launch_unit(launcher.as_ref(), &cfg, &spec, &spec_rel, name, Some(&rs.dir), &tag, prediction)
    }

    /// Whether the run set was aborted: the marker says so for it, or its
    /// execution log holds the abort line a stop appends.
    pub(super) fn aborted(&self, name: &str, dir: &Path) -> bool {
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

    pub(super) fn run_set_taken(&self, name: &str) -> bool {
        self.root.join(RUNSETS_DIR).join(name).symlink_metadata().is_ok()
            || self.root.join(UNITS_DIR).join(format!("{}.json", unit_name(name))).exists()
    }

    /// A draft becomes the next numbered committed spec (a byte copy); a spec
    /// already committed is launched as it is.
    pub(super) fn commit(&self, rel: &str, bytes: &[u8], label: &str) -> Result<String, ApiError> {
        let file = rel.rsplit('/').next().unwrap_or(rel);
        if rel.starts_with(&format!("{COMMITTED_DIR}/")) && runsets::committed_number(file).is_some() {
            return Ok(rel.to_owned());
        }
        let dir = self.root.join(COMMITTED_DIR);
        fs::create_dir_all(&dir).map_err(|e| crate::web::error::internal("making specs/committed", e))?;
        let existing: Vec<String> = fs::read_dir(&dir)
            .map(|r| r.flatten().filter_map(|e| e.file_name().into_string().ok()).collect())
            .unwrap_or_default();
        let name = runsets::next_committed_name(&existing, label);
        // `create_new`: a committed spec is never written over.
        let mut f = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(dir.join(&name))
            .map_err(|e| crate::web::error::internal("committing a spec", e))?;
        f.write_all(bytes)
            .and_then(|_| f.sync_all())
            .map_err(|e| crate::web::error::internal("committing a spec", e))?;
        Ok(format!("{COMMITTED_DIR}/{name}"))
    }

    #[allow(clippy::too_many_arguments)]
    pub(super) fn launch_unit(
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
        let kind = if resume_into.is_some() { RunKind::Resume } else { RunKind::Launch };
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
            ApiError::refused(vec![e.to_string()])
        })?;
        // The launch is accepted: the tag, the index line and the marker say
        // so even if the unit dies before it makes its run set.
        let mut problems = Vec::new();
        // A tags file that cannot be read is left as it is (never replaced
        // by one holding only this tag): the launch says so instead.
        match self.records.tags() {
            Ok(mut tags) => {
                tags.attach(tag, run_set);
                if let Err(e) = self.records.write_tags(&tags) {
                    problems.push(format!("run_tags.json: {e}"));
                }
            }
            Err(e) => problems.push(format!("{e}; not rewritten, so {run_set} is not tagged {tag}")),
        }
        let entry = RunIndexEntry {
            run_set: run_set.to_owned(),
            spec: committed.to_owned(),
            label: spec.label.clone(),
            launched_at: rec.started_at,
            kind,
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
            updated_at: crate::system::clock::now(),
            reason: Some(
                match kind {
                    RunKind::Launch => "launched through the console",
                    RunKind::Resume => "resumed through the console",
                }
                .into(),
            ),
        };
        if let Err(e) = self.records.write_marker(&marker) {
            problems.push(format!("active_batch.json: {e}"));
        }
        for p in problems {
            tracing::error!("after launching {unit}: {p}");
        }
        Ok(Launched { unit, spec: committed.to_owned(), run_set: run_set.to_owned(), tag: tag.to_owned(), prediction })
    }
}

pub(super) fn launcher_exe(l: &LocalLauncher) -> &Path {
    &l.exe
}
