//! One campaign's console: its records, the one launch path (`start`),
//! the live state, and pause / stop+abort / resume — all typed operations the
//! pages, REST and the command line share.
//!
//! Anything that writes takes the campaign's lock (`.runboard/lock`, an
//! advisory file lock), shared by every server and CLI on the campaign: two
//! launches never race, a stop and a launch never interleave.
//!
//! One file per capability, each an `impl Campaign` with its own memo:
//! `units` (the backends' view of each unit), `coverage`, `launch` (drafts,
//! preflight, `start`, `resume`), `live`, `control` (pause, stop+abort),
//! `results`, `logs` (a run set's logs, read on from a position), `spend` (live spend, the caps and stalls), `telemetry` (each endpoint's calls and engine now), `upkeep` (what was left lying about, and its safe actions), `tags` (run-set tags edited), `catalogue` and `auto` (what the autopilot's tick observes).
//! Each answers [`ApiError`], the core's error, whose kind (refused, busy,
//! not found, unreadable, internal, …) is the domain's; its HTTP status is
//! chosen in one place, `ErrorKind::status`.

pub mod auto;
pub mod catalogue;
mod control;
mod coverage;
mod launch;
pub mod launcher;
mod live;
mod logs;
mod notices;
pub mod pool;
pub mod records;
pub mod results;
mod samples;
pub mod spend;
mod tags;
pub mod telemetry;
mod units;
mod upkeep;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runboard::api::ApiError;
use runboard::campaign::{CampaignConfig, CONFIG_FILE};
use runboard::runsets::{self, LOCK_FILE};

use self::launcher::LocalLauncher;
use self::records::Records;

/// How long a writer waits for the campaign lock before answering 409.
const LOCK_WAIT: Duration = Duration::from_secs(90);
/// The sentence a stop appends to each aborted run set's `execution_log.md`.
pub const ABORT_LINE: &str = "aborted by the operator (stop and abort); not to be resumed";

pub struct Campaign {
    root: PathBuf,
    records: Records,
    local: LocalLauncher,
    /// Each capability's memo, kept beside the code that makes it.
    units_seen: units::UnitsMemo,
    live_made: live::LiveMemo,
    coverage_made: coverage::CoverageMemo,
    /// The evidence and the export as last made, and from what.
    results_made: results::ResultsMemo,
    /// Each Inspect log's sample verdicts, read again only when it changes.
    sample_logs: samples::SampleLogs,
    /// The catalogue endpoints' probes as last made.
    probes_made: catalogue::ProbesMade,
    /// What each cell's files were read of so far, and the stalls said.
    spend_seen: spend::SpendMemo,
    /// Each endpoint's metrics as last read.
    telemetry_seen: telemetry::TelemetryMemo,
}

/// The campaign lock, held while it lives.
pub struct CampaignLock(#[allow(dead_code)] fs::File);
impl Campaign {
    pub fn open(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            records: Records::new(root),
            local: LocalLauncher::new(),
            units_seen: Default::default(),
            live_made: Default::default(),
            coverage_made: Default::default(),
            results_made: Default::default(),
            sample_logs: Default::default(),
            probes_made: Default::default(),
            spend_seen: Default::default(),
            telemetry_seen: Default::default(),
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

    /// Takes the campaign lock, waiting at most `LOCK_WAIT`.
    pub fn lock(&self) -> Result<CampaignLock, ApiError> {
        let path = self.root.join(LOCK_FILE);
        let open = fs::create_dir_all(self.root.join(runsets::CONSOLE_DIR))
            .and_then(|_| fs::OpenOptions::new().create(true).truncate(false).write(true).open(&path));
        let file = open.map_err(|e| crate::web::error::internal("opening the campaign lock", e))?;
        match crate::files::atomic::lock_waiting(&file, LOCK_WAIT) {
            Ok(true) => Ok(CampaignLock(file)),
            Ok(false) => Err(ApiError::busy(format!(
                "another launch or control holds the campaign (waited {} s); try again",
                LOCK_WAIT.as_secs()
            ))),
            Err(e) => Err(crate::web::error::internal("taking the campaign lock", e)),
        }
    }
}
