//! Pause, stop and abort: ending the units of the run sets a control names
//! (never another lane's), the lease hook, the abort line.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use runboard::api::ApiError;
use runboard::campaign::CampaignConfig;
use runboard::console::launch::{HookResult, PauseRequest, StopCellReport, StopCellRequest, StopReport, StopRequest};
use runboard::live::{ActiveMarker, MarkerStatus};
use runboard::runsets::UnitRecord;

use super::{launcher, Campaign, ABORT_LINE};

/// How long the lease release hook may run.
const HOOK_TIMEOUT: Duration = Duration::from_secs(30);

impl Campaign {
    /// Ends the units in flight of `targets` (each run set's), and releases
    /// the lease when one was ended. Units of other run sets are left alone:
    /// a control acts on the batches it names, never on another lane's.
    /// Returns the last unit ended.
    pub(super) fn end_units(
        &self,
        cfg: &CampaignConfig,
        targets: &[String],
        report: &mut StopReport,
    ) -> Option<UnitRecord> {
        let running: Vec<UnitRecord> =
            self.running_units(cfg).into_iter().filter(|r| targets.contains(&r.run_set)).collect();
        let grace = Duration::from_secs_f64(cfg.grace_s());
        for rec in &running {
            let s = match self.launcher_of(rec.backend(), cfg) {
                Ok(l) => l.stop(rec, grace),
                Err(e) => launcher::Stopped { unit: rec.unit.clone(), was_running: true, ended: false, detail: e },
            };
            self.units_seen.observed.lock().unwrap_or_else(|p| p.into_inner()).remove(&rec.unit);
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
    pub(super) fn shown_run_set(&self) -> Option<String> {
        self.live_shared().run_set.clone()
    }

    /// Checks the run set names a control was given: every bad one is named
    /// (422), and nothing is done.
    pub(super) fn check_targets(names: &[String]) -> Result<Vec<String>, ApiError> {
        let mut bad = Vec::new();
        let mut out = Vec::new();
        for n in names {
            let t = n.trim();
            if let Some(why) = runboard::runsets::run_set_name_problem(t) {
                bad.push(format!("run set {:?}: {why}", runboard::console::spec::shorten(t)));
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

    /// `POST /api/control/stop-cell`: ends one running cell of a batch —
    /// SIGTERM to each of its processes (the driver marks every child with
    /// its cell and run set) — and leaves the rest of the batch running. The
    /// driver records the cell `failed` (exit 143, no stop asked of the
    /// batch), so a Resume runs it again.
    pub fn stop_cell(&self, req: &StopCellRequest) -> Result<StopCellReport, ApiError> {
        let run_set = Self::check_targets(std::slice::from_ref(&req.run_set))?.remove(0);
        let cell = req.cell.trim();
        let rs = self
            .records
            .run_set(&run_set)
            .ok_or_else(|| ApiError::not_found(format!("no run set {run_set:?} under runsets/")))?;
        let rec = rs.cells.iter().find(|c| c.cell == cell).ok_or_else(|| {
            ApiError::not_found(format!("run set {run_set} has no cell {:?}", runboard::console::spec::shorten(cell)))
        })?;
        if rec.status != runboard::drive::records::CellStatus::Running || !self.records.is_live(&rs) {
            return Err(ApiError::busy(format!("cell {cell} of {run_set} is not running: nothing to end")));
        }
        let pids = end_cell(&run_set, cell);
        if pids == 0 {
            return Err(ApiError::busy(format!(
                "cell {cell} of {run_set} has no process on this machine to end (its batch runs elsewhere, or it just ended)"
            )));
        }
        Ok(StopCellReport {
            run_set: run_set.clone(),
            cell: cell.to_owned(),
            processes: pids,
            words: format!(
                "Sent SIGTERM to {} of cell {cell}; the rest of {run_set} runs on. The cell will be recorded failed (exit 143): Resume runs it again once its batch has ended.",
                runboard::basics::numfmt::count(pids as u64, "process")
            ),
        })
    }

    /// `POST /api/control/pause`: ends a batch, keeps it resumable — the one
    /// named (`run_set`), else the one the live state speaks for. Other
    /// batches in flight run on.
    pub fn pause(&self, req: &PauseRequest) -> Result<StopReport, ApiError> {
        self.pause_with_reason(req, "paused by the operator")
    }

    /// The pause, its reason kept in the active-batch marker (the Live
    /// page's words): the operator's, or the budget's.
    pub(super) fn pause_with_reason(&self, req: &PauseRequest, reason: &str) -> Result<StopReport, ApiError> {
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
        // The marker is written before the batch is ended: from the moment
        // its driver is gone the Live page says "stopped, resumable" with
        // the reason, never a passing "idle, ended stopped".
        let before = self.records.marker().and_then(Result::ok);
        let planned = self.records.run_set(&target).map_or(0, |r| {
            r.outcome_ok()
                .map(|o| o.planned)
                .or_else(|| r.spec.as_ref().and_then(|s| s.as_ref().ok()).map(|s| s.cells.len()))
                .unwrap_or(0)
        });
        let unit = self.unit_of(&target);
        let m = ActiveMarker {
            schema_version: 1,
            run_set: target.clone(),
            spec: unit.as_ref().map(|u| u.spec.clone()).unwrap_or_default(),
            unit: unit.map(|u| u.unit),
            status: MarkerStatus::StoppedBeforeCompletion,
            planned,
            updated_at: crate::system::clock::now(),
            reason: Some(reason.to_owned()),
        };
        self.records.write_marker(&m).map_err(|e| crate::web::error::internal("writing the active-batch marker", e))?;
        let mut report = StopReport::default();
        match self.end_units(&cfg, std::slice::from_ref(&target), &mut report) {
            Some(rec) => {
                report.marker = Some(m.status);
                report.run_sets.push(rec.run_set);
            }
            // It ended on its own meanwhile: the marker goes back to what it was.
            None => {
                let restored = match before {
                    Some(b) => self.records.write_marker(&b),
                    None => std::fs::remove_file(self.root.join(runboard::runsets::ACTIVE_MARKER_FILE)),
                };
                restored.map_err(|e| crate::web::error::internal("restoring the active-batch marker", e))?;
            }
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
        // The marker names a run set this stop really aborts: the one it
        // named already if that is stopped, else the last. It is written
        // before the batches are ended, so that once a driver is gone the
        // Live page says "aborted", never a passing "idle, ended stopped".
        let now = crate::system::clock::now();
        let marker = self.records.marker().and_then(Result::ok);
        let about = marker
            .as_ref()
            .map(|m| m.run_set.clone())
            .filter(|m| found.contains(m))
            .unwrap_or_else(|| found[found.len() - 1].clone());
        let unit = self.unit_of(&about);
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
        self.records.write_marker(&m).map_err(|e| crate::web::error::internal("writing the active-batch marker", e))?;
        report.marker = Some(m.status);
        self.end_units(&cfg, &found, &mut report);
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
        // Whatever it was, auto mode is off now: nothing relaunches the batch.
        crate::auto::auto_state::turn_off(&self.root, "stop and abort by the operator")
            .map_err(|e| crate::web::error::internal("turning auto mode off", e))?;
        report.auto_off = true;
        Ok(report)
    }
}

/// Runs a hook command in the campaign root, bounded in time, its output kept.
pub(super) fn run_hook(cmd: &[String], root: &Path) -> HookResult {
    let Some((program, args)) = cmd.split_first() else {
        return HookResult { ok: false, status: "no program".into(), output: String::new() };
    };
    let last = |out: &[u8]| -> String {
        let text = String::from_utf8_lossy(out);
        text.chars().rev().take(2000).collect::<Vec<_>>().into_iter().rev().collect()
    };
    match crate::system::command::run_bounded(program, args, Some(root), HOOK_TIMEOUT) {
        Ok(o) => HookResult {
            ok: o.status.success(),
            status: o.status.to_string(),
            output: last(&[o.stdout, o.stderr].concat()),
        },
        Err(crate::system::command::Failed::TimedOut { output, .. }) => HookResult {
            ok: false,
            status: format!("killed after {} s", HOOK_TIMEOUT.as_secs()),
            output: last(&output),
        },
        Err(e) => HookResult { ok: false, status: e.to_string(), output: String::new() },
    }
}

/// Sends SIGTERM to every process of `cell` in `run_set` on this machine —
/// those the driver started with `RUNBOARD_CELL` and `RUNBOARD_RUNSET`
/// naming them — and says how many: the operator's stop of one cell, and a
/// stall's with `[stall] action = "stop"`.
pub(super) fn end_cell(run_set: &str, cell: &str) -> usize {
    let pids: Vec<u32> = crate::system::signals::pids_with_env("RUNBOARD_CELL", cell)
        .into_iter()
        .filter(|p| {
            crate::system::signals::env_of(*p, "RUNBOARD_RUNSET").is_some_and(|d| Path::new(&d).ends_with(run_set))
        })
        .collect();
    for p in &pids {
        let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(*p as i32), nix::sys::signal::Signal::SIGTERM);
    }
    pids.len()
}
