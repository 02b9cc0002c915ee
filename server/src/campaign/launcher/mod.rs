//! Launcher backends: what starts a unit (one supervised `runboard drive`),
//! observes it, and stops it — behind one trait, chosen per campaign
//! (`campaign.toml` `[launcher] kind`; see `docs/backends.md`):
//!
//! - `local` (default, [`local`]): a supervising `runboard __unit` process
//!   of its own that outlives the server;
//! - `systemd` ([`systemd`]): a transient service of the systemd user
//!   manager, over D-Bus;
//! - `slurm` ([`slurm`]): a Slurm batch job.
//!
//! Every backend keeps a unit record (`.runboard/units/<unit>.json`) naming
//! what it started (a PID, a unit name, a job id), so a restarted server
//! finds its units again. An observation that cannot be made is
//! [`Observation::Unknown`] with the reason — never a guess that the unit
//! finished or failed.

pub mod local;
pub mod slurm;
pub mod systemd;

use std::path::{Path, PathBuf};
use std::time::Duration;

use runboard::campaign::LauncherKind;
use runboard::live::{unit_failure, Observation, UnitFailure};
use runboard::runsets::{UnitEnd, UnitRecord};

use super::records::Records;

pub use self::local::{supervise, LocalLauncher};
pub use self::slurm::SlurmLauncher;
pub use self::systemd::{SystemdBus, SystemdLauncher};

/// What a launch asks for.
#[derive(Debug, Clone)]
pub struct UnitRequest {
    pub unit: String,
    pub run_set: String,
    /// The committed spec, relative to the root.
    pub spec: String,
    /// The driver's command line (`runboard drive …`).
    pub command: Vec<String>,
    pub root: PathBuf,
    /// Where the record goes (`.runboard/units/<unit>.json`).
    pub record: PathBuf,
    /// The unit's log, relative to the root (systemd: its journal instead).
    pub log: String,
    pub grace: Duration,
}

/// Why a launcher could not start or forget a unit. The launch path says
/// it as its refusal's reason (`Display`); the kinds keep the cause.
#[derive(Debug, thiserror::Error)]
pub enum LauncherError {
    /// A file the launch writes (the unit record, Slurm's batch script)
    /// could not be written.
    #[error("{}: {source}", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The launch asked to run nothing.
    #[error("no command to run")]
    NoCommand,
    /// A program of the launcher's own could not be started (the local
    /// supervisor).
    #[error("could not start {what}: {source}")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
    /// The backend said no, or could not be asked (its words: D-Bus,
    /// `sbatch`).
    #[error("{0}")]
    Backend(String),
    /// Accepted, but not seen started within the launch's bound.
    #[error("{0}")]
    NotSeen(String),
}

/// What a stop did, for the stop report.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Stopped {
    pub unit: String,
    /// Whether the unit was still running when asked to stop.
    pub was_running: bool,
    /// Whether it had ended when the stop returned.
    pub ended: bool,
    pub detail: String,
}

pub trait Launcher: Send + Sync {
    /// `local`, `systemd` or `slurm`.
    fn backend(&self) -> LauncherKind;
    /// Starts the unit; the record it keeps of it, or why it could not.
    /// Accepted is not surviving: a unit that dies later is seen by
    /// [`Launcher::observe`].
    fn start(&self, req: &UnitRequest) -> Result<UnitRecord, LauncherError>;
    /// What the unit is now (bounded in time; `Unknown` when it cannot be asked).
    fn observe(&self, rec: &UnitRecord) -> Observation;
    /// Ends the unit: SIGTERM, up to `grace`, then SIGKILL; waits for it.
    fn stop(&self, rec: &UnitRecord, grace: Duration) -> Stopped;
    /// The last `n` lines the unit wrote: its log file, read inside the
    /// root (systemd: its journal).
    fn log_tail(&self, rec: &UnitRecord, records: &Records, n: usize) -> Vec<String> {
        rec.log.as_deref().map(|l| records.tail_lines(l, n)).unwrap_or_default()
    }
    /// After an ended unit's end was written into its record: let the
    /// backend forget it (systemd unloads the unit it kept loaded so that
    /// its result could be read). Its failure is only logged.
    fn forget(&self, rec: &UnitRecord) -> Result<(), LauncherError> {
        let _ = rec;
        Ok(())
    }
}

/// A borrowed launcher is a launcher (the campaign hands out its local one).
impl<L: Launcher + ?Sized> Launcher for &L {
    fn backend(&self) -> LauncherKind {
        (**self).backend()
    }
    fn start(&self, req: &UnitRequest) -> Result<UnitRecord, LauncherError> {
        (**self).start(req)
    }
    fn observe(&self, rec: &UnitRecord) -> Observation {
        (**self).observe(rec)
    }
    fn stop(&self, rec: &UnitRecord, grace: Duration) -> Stopped {
        (**self).stop(rec, grace)
    }
    fn log_tail(&self, rec: &UnitRecord, records: &Records, n: usize) -> Vec<String> {
        (**self).log_tail(rec, records, n)
    }
    fn forget(&self, rec: &UnitRecord) -> Result<(), LauncherError> {
        (**self).forget(rec)
    }
}

/// The first record of a unit, before its backend says more.
pub fn first_record(req: &UnitRequest, backend: LauncherKind) -> UnitRecord {
    let mut rec =
        UnitRecord::new(&req.unit, backend, &req.run_set, &req.spec, req.command.clone(), crate::system::clock::now());
    rec.log = Some(req.log.clone());
    rec
}

/// Writes a unit record atomically (making its folder).
pub fn write_record(path: &Path, rec: &UnitRecord) -> Result<(), LauncherError> {
    let written = |at: &Path, source| LauncherError::Write { path: at.to_path_buf(), source };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| written(dir, e))?;
    }
    let bytes = serde_json::to_vec_pretty(rec).map_err(|e| written(path, std::io::Error::other(e)))?;
    crate::files::atomic::write_atomic(path, &bytes).map_err(|e| written(path, e))
}

/// Why an ended unit failed: its launcher's exit status and result, and the
/// last lines it wrote.
pub fn failure_of(rec: &UnitRecord, obs: &Observation, tail: &[String]) -> UnitFailure {
    let (status, result) = match obs {
        Observation::Finished { exit_status, result, .. } => (*exit_status, result.clone()),
        _ => rec.end.as_ref().map_or((None, String::new()), |e| (e.exit_status, e.result.clone())),
    };
    unit_failure(&rec.unit, status, &result, tail)
}

/// The record of an ended unit, from its final observation.
pub fn ended(rec: &UnitRecord, obs: &Observation) -> Option<UnitRecord> {
    let Observation::Finished { exit_status, result, at } = obs else { return None };
    let mut r = rec.clone();
    r.end = Some(UnitEnd {
        at: at.unwrap_or_else(crate::system::clock::now),
        exit_status: *exit_status,
        result: result.clone(),
    });
    Some(r)
}

/// The environment a unit that does not inherit the server's is given:
/// `PATH`, `HOME`, `LANG`, `USER`, every `RUNBOARD_*`, and the names the
/// campaign lists (`[launcher] environment`) that are set.
pub fn unit_environment(names: &[String]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = std::env::vars()
        .filter(|(k, _)| {
            matches!(k.as_str(), "PATH" | "HOME" | "LANG" | "USER")
                || k.starts_with("RUNBOARD_")
                || names.iter().any(|n| n == k)
        })
        .collect();
    out.sort();
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record that cannot be written says which file and why, and keeps
    /// the cause (the launch path's refusal quotes the words).
    #[test]
    fn a_record_that_cannot_be_written_names_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("units");
        std::fs::write(&blocker, "a file where the folder should be").unwrap();
        let rec =
            UnitRecord::new("u1", LauncherKind::Local, "rs-1", "specs/0001.json", vec![], crate::system::clock::now());
        let e = write_record(&blocker.join("u1.json"), &rec).unwrap_err();
        assert!(matches!(&e, LauncherError::Write { path, .. } if path == &blocker), "{e:?}");
        assert!(e.to_string().starts_with(&format!("{}: ", blocker.display())), "{e}");
        assert!(std::error::Error::source(&e).is_some(), "the io::Error is kept");
        assert_eq!(LauncherError::NoCommand.to_string(), "no command to run");
    }
}
