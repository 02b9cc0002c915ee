//! Upkeep's reads and actions (`runboard::live::upkeep`): the facts gathered from
//! the campaign folder (file stamps, each unit's observation, each run set's
//! driver alive or gone, disk use walked within a bound), the findings made
//! from them, and one action done under the campaign lock on a finding found
//! again with the same token — then logged in `.runboard/upkeep.jsonl`.

use std::fs;
use std::io::Write;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use runboard::api::ApiError;
use runboard::campaign::CampaignConfig;
use runboard::drive::records::{BatchStatus, CellStatus};
use runboard::live::upkeep::{
    self, Action, Driver, Facts, FileFact, Finding, RunSetFact, UnitFact, UpkeepDone, UpkeepRequest, UpkeepView,
};
use runboard::live::MarkerStatus;
use runboard::live::Observation;
use runboard::runsets::{CONSOLE_DIR, DRAFTS_DIR};
use runboard::runview::ProcessCheck;

use super::Campaign;

/// The most entries walked per run set for its disk use (then it is `partial`).
const WALK_MAX_ENTRIES: u64 = 200_000;

/// A regular file's fact (never a link, a folder, a FIFO), its path relative to `root`.
fn file_fact(root: &Path, path: &Path) -> Option<FileFact> {
    let md = fs::symlink_metadata(path).ok().filter(|m| m.file_type().is_file())?;
    let s = crate::files::fsread::stamp_of_metadata(&md);
    Some(FileFact {
        path: path.strip_prefix(root).unwrap_or(path).to_string_lossy().into_owned(),
        bytes: s.len,
        modified: crate::files::fsread::stamp_time(&s),
        stamp: format!("{}.{}.{}.{}", s.dev, s.ino, s.len, s.mtime_ns),
    })
}

/// The regular files directly in `dir`, by name.
fn files_in(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = fs::read_dir(dir).map(|d| d.flatten().map(|e| e.path()).collect()).unwrap_or_default();
    out.retain(|p| fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_file()));
    out.sort();
    out
}

/// Bytes and files under `dir`, links not followed, at most `WALK_MAX_ENTRIES` entries.
fn disk_use(dir: &Path) -> (u64, u64, bool) {
    let (mut bytes, mut files, mut seen) = (0u64, 0u64, 0u64);
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = fs::read_dir(&d) else { continue };
        for e in entries.flatten() {
            seen += 1;
            if seen > WALK_MAX_ENTRIES {
                return (bytes, files, true);
            }
            let Ok(md) = e.path().symlink_metadata() else { continue };
            if md.is_dir() {
                stack.push(e.path());
            } else {
                bytes += md.blocks() * 512;
                files += 1;
            }
        }
    }
    (bytes, files, false)
}

/// A run set's process logs not yet archived: `logs/*.log` and `logs/*.log.1`.
fn process_logs(rs_dir: &Path) -> Vec<PathBuf> {
    files_in(&rs_dir.join("logs"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "log" || e == "1"))
        .collect()
}

impl Campaign {
    /// What the campaign has left lying about, and the disk each run set uses.
    pub fn upkeep(&self) -> Result<UpkeepView, ApiError> {
        let cfg = self.config()?;
        Ok(upkeep::upkeep(&self.upkeep_facts(&cfg)))
    }

    fn upkeep_facts(&self, cfg: &CampaignConfig) -> Facts {
        let root = self.root.clone();
        let mut f = Facts { now: crate::system::clock::now(), ..Default::default() };
        f.drafts = files_in(&root.join(DRAFTS_DIR))
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .filter_map(|p| file_fact(&root, p))
            .collect();
        // Where the console's and the driver's atomic writers write (never a
        // cell's own folder: that is the cell's).
        let mut dirs: Vec<PathBuf> =
            ["", CONSOLE_DIR, ".runboard/units", "runsets", DRAFTS_DIR, "specs/committed", "auto", "research"]
                .iter()
                .map(|d| root.join(d))
                .collect();
        let run_sets = self.records.run_sets();
        for rs in &run_sets {
            dirs.extend([rs.dir.clone(), rs.dir.join("cells"), rs.dir.join("logs")]);
        }
        for dir in dirs {
            for p in files_in(&dir) {
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
                let Some(pid) = upkeep::temp_writer(&name) else { continue };
                f.temps.extend(file_fact(&root, &p).map(|fact| (fact, crate::files::atomic::writer_alive(pid))));
            }
        }
        let in_flight: Vec<String> = self.in_flight(cfg).into_iter().map(|(r, _)| r.run_set).collect();
        for rec in self.records.units().iter().filter(|r| r.end.is_none()) {
            let finished = match self.observe(rec, cfg) {
                Observation::Finished { exit_status, result, .. } => Some(match exit_status {
                    Some(s) => format!("{result}, exit status {s}"),
                    None => result,
                }),
                _ => None,
            };
            f.units.push(UnitFact {
                unit: rec.unit.clone(),
                run_set: rec.run_set.clone(),
                backend: rec.backend(),
                finished,
            });
        }
        for rs in &run_sets {
            let outcome = rs.outcome_ok();
            let (driver, driver_words) = match outcome.and_then(|o| o.driver.as_ref()) {
                None => (Driver::NotRecorded, String::new()),
                Some(d) => (
                    match self.records.probe().check(&d.host, d.pid) {
                        ProcessCheck::Alive { .. } => Driver::Alive,
                        ProcessCheck::Gone { .. } => Driver::Gone,
                        ProcessCheck::OtherHost { .. } => Driver::OtherHost,
                        ProcessCheck::NotRecorded => Driver::NotRecorded,
                    },
                    format!("pid {} on {}", d.pid, d.host),
                ),
            };
            let logs = process_logs(&rs.dir);
            let mut stamp = format!("{:?}", crate::files::fsread::stamp_of(&rs.dir.join("batch_outcome.json")));
            let mut log_bytes = 0;
            for l in &logs {
                let fact = file_fact(&root, l);
                log_bytes += fact.as_ref().map_or(0, |x| x.bytes);
                stamp.push_str(&fact.map(|x| x.stamp).unwrap_or_default());
            }
            let (bytes, files, partial) = disk_use(&rs.dir);
            f.run_sets.push(RunSetFact {
                name: rs.name.clone(),
                outcome_running: outcome.is_some_and(|o| o.status == BatchStatus::Running),
                ended: outcome.is_some_and(|o| o.status != BatchStatus::Running),
                driver,
                driver_words,
                unit_in_flight: in_flight.contains(&rs.name),
                bytes,
                files,
                partial,
                log_bytes,
                log_files: logs.len() as u64,
                stamp,
            });
        }
        let units_dir = root.join(".runboard/units");
        f.orphaned_logs = files_in(&units_dir)
            .iter()
            .filter(|p| p.extension().is_some_and(|e| e == "log"))
            .filter(|p| !p.with_extension("json").exists())
            .filter_map(|p| file_fact(&root, p))
            .collect();
        f
    }

    /// Does one action on one finding, under the campaign lock, if the
    /// finding is still there unchanged (its token); logs it.
    pub fn upkeep_act(&self, req: &UpkeepRequest) -> Result<UpkeepDone, ApiError> {
        let _lock = self.lock()?;
        let cfg = self.config()?;
        let now = upkeep::upkeep(&self.upkeep_facts(&cfg));
        let finding = upkeep::check(req, &now).map_err(ApiError::refused)?.clone();
        let done = self.act(&cfg, &finding).map_err(|e| ApiError::refused(vec![format!("{}: {e}", finding.target)]))?;
        self.log_upkeep(&done);
        Ok(done)
    }

    fn act(&self, cfg: &CampaignConfig, f: &Finding) -> Result<UpkeepDone, String> {
        let root = &self.root;
        // A path from the finding resolves inside the root (it was found there).
        let inside = |rel: &str| -> Result<PathBuf, String> {
            let p = root.join(rel);
            self.records.within().check(&p).map(|_| p).map_err(String::from)
        };
        let (words, freed) = match f.action {
            Action::DeleteDraft | Action::SweepTemp | Action::DeleteLog => {
                let p = inside(&f.target)?;
                fs::remove_file(&p).map_err(|e| e.to_string())?;
                let what = match f.action {
                    Action::DeleteDraft => "deleted the draft",
                    Action::SweepTemp => "swept the temporary file",
                    _ => "deleted the log",
                };
                (format!("{what} {}", f.target), f.bytes.unwrap_or(0))
            }
            Action::RecordUnitEnd => {
                let rec =
                    self.records.units().iter().find(|r| r.unit == f.target).cloned().ok_or("no such unit record")?;
                let obs = self.observe(&rec, cfg);
                let ended = super::launcher::ended(&rec, &obs).ok_or("it is no longer seen as ended")?;
                super::launcher::write_record(&self.records.unit_path(&rec.unit), &ended).map_err(|e| e.to_string())?;
                (
                    format!(
                        "recorded the end of unit {} ({})",
                        f.target,
                        ended.end.map(|e| e.result).unwrap_or_default()
                    ),
                    0,
                )
            }
            Action::MarkInterrupted => {
                let rs = self.records.run_set(&f.target).ok_or("no such run set")?;
                let mut outcome = rs.outcome_ok().cloned().ok_or("its outcome cannot be read")?;
                let driver =
                    outcome.driver.as_ref().map(|d| format!("pid {} on {}", d.pid, d.host)).unwrap_or_default();
                let at = crate::system::clock::now();
                let why = format!(
                    "interrupted: its driver ({driver}) was gone and no unit of it in flight; marked by upkeep at {}",
                    at.to_display()
                );
                // Its cells still saying `running` were stopped with it: a
                // resume runs them again, and coverage no longer counts them running.
                let mut cells = 0;
                for c in rs.cells.iter().filter(|c| c.status == CellStatus::Running) {
                    let mut c = c.clone();
                    c.status = CellStatus::Stopped;
                    c.ended_at = Some(at.to_rfc3339());
                    c.reason = Some(why.clone());
                    crate::files::atomic::write_json(&rs.dir.join("cells").join(format!("{}.json", c.cell)), &c)
                        .map_err(|e| e.to_string())?;
                    cells += 1;
                }
                outcome.status = BatchStatus::Stopped;
                outcome.reason =
                    if outcome.reason.is_empty() { why.clone() } else { format!("{why} (was: {})", outcome.reason) };
                outcome.ended_at = Some(at.to_rfc3339());
                crate::files::atomic::write_json(&rs.dir.join("batch_outcome.json"), &outcome)
                    .map_err(|e| e.to_string())?;
                // The Live page says it as a pause: stopped, resumable, and why.
                if let Some(Ok(mut m)) =
                    self.records.marker().filter(|m| m.as_ref().is_ok_and(|m| m.run_set == f.target))
                {
                    m.status = MarkerStatus::StoppedBeforeCompletion;
                    m.updated_at = at;
                    m.reason = Some(why);
                    self.records.write_marker(&m).map_err(|e| e.to_string())?;
                }
                (
                    format!(
                        "marked run set {} interrupted: stopped, resumable ({cells} running cell(s) marked stopped)",
                        f.target
                    ),
                    0,
                )
            }
            Action::ArchiveLogs => {
                let rs = self.records.run_set(&f.target).ok_or("no such run set")?;
                let mut saved = 0u64;
                let logs = process_logs(&rs.dir);
                for l in &logs {
                    saved += gzip_beside(l)?;
                }
                (format!("compressed {} log(s) of run set {} to .gz", logs.len(), f.target), saved)
            }
        };
        Ok(UpkeepDone { action: f.action, target: f.target.clone(), words, freed_bytes: freed })
    }

    fn log_upkeep(&self, done: &UpkeepDone) {
        let line = serde_json::json!({
            "at": crate::system::clock::now().to_rfc3339(),
            "action": done.action,
            "target": done.target,
            "words": done.words,
            "freed_bytes": done.freed_bytes,
        });
        let path = self.root.join(upkeep::LOG_FILE);
        let written = fs::create_dir_all(self.root.join(CONSOLE_DIR))
            .and_then(|_| fs::OpenOptions::new().create(true).append(true).open(&path))
            .and_then(|mut f| f.write_all(format!("{line}\n").as_bytes()));
        if let Err(e) = written {
            tracing::error!("{}: {e}", upkeep::LOG_FILE);
        }
        tracing::info!(action = %done.action, target = %done.target, "upkeep: {}", done.words);
    }
}

/// Compresses `path` to `path.gz` (written whole, then renamed) and removes
/// it; the bytes saved.
fn gzip_beside(path: &Path) -> Result<u64, String> {
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let gz = path.with_file_name(format!("{name}.gz"));
    let err = |e: std::io::Error| format!("{name}: {e}");
    let mut input = fs::File::open(path).map_err(err)?;
    let before = input.metadata().map_err(err)?.len();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    std::io::copy(&mut input, &mut enc).map_err(err)?;
    let bytes = enc.finish().map_err(err)?;
    crate::files::atomic::write_atomic(&gz, &bytes).map_err(err)?;
    fs::remove_file(path).map_err(err)?;
    Ok(before.saturating_sub(bytes.len() as u64))
}
