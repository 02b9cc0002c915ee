//! A run set folder as the driver writes it: every record replaced atomically or
//! appended, so a reader never sees half of one.
//!
//! ```text
//! <run set>/
//!   spec.json             the committed spec this run set runs (never edited)
//!   batch_outcome.json    status, reason, planned/attempted/completed/failed cells
//!   execution_log.md      what happened, for people (appended)
//!   events.jsonl          what happened, for programs (appended)
//!   cells/<cell>.json     one record per cell
//!   logs/<process>.log    each process's stdout and stderr
//!   out/                  the pinned output folder every child is given
//!   out/<cell>/           a cell's own output (exec runner); result.json reports tokens/score
//! ```

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};

use runboard::drive::records::{BatchOutcome, CellRecord};
use serde_json::{json, Value};

use super::DriveError;
use crate::files::atomic::write_atomic;

pub struct RunSet {
    pub dir: PathBuf,
}

impl RunSet {
    pub fn new(dir: &Path) -> Self {
        Self { dir: dir.to_path_buf() }
    }

    pub fn cells_dir(&self) -> PathBuf {
        self.dir.join("cells")
    }
    pub fn logs_dir(&self) -> PathBuf {
        self.dir.join("logs")
    }
    pub fn out_dir(&self) -> PathBuf {
        self.dir.join("out")
    }

    pub fn create(&self) -> Result<(), DriveError> {
        for d in [self.cells_dir(), self.logs_dir(), self.out_dir()] {
            fs::create_dir_all(&d).map_err(DriveError::io("creating", &d))?;
        }
        Ok(())
    }

    /// The completion records: every readable `cells/*.json`. A record that does
    /// not parse is ignored (its cell runs again), never fatal.
    pub fn read_cells(&self) -> BTreeMap<String, CellRecord> {
        let mut out = BTreeMap::new();
        let Ok(entries) = fs::read_dir(self.cells_dir()) else { return out };
        for e in entries.flatten() {
            let p = e.path();
            if p.extension().is_some_and(|x| x == "json") {
                // Read only if regular: a FIFO here must not hang the driver.
                let read = crate::files::fsread::read_regular(&p).ok();
                if let Some(r) = read.and_then(|b| serde_json::from_slice::<CellRecord>(&b).ok()) {
                    out.insert(r.cell.clone(), r);
                }
            }
        }
        out
    }

    pub fn write_cell(&self, rec: &CellRecord) -> Result<(), DriveError> {
        let path = self.cells_dir().join(format!("{}.json", rec.cell));
        let bytes =
            serde_json::to_vec_pretty(rec).map_err(|source| DriveError::Encode { what: "a cell record", source })?;
        write_atomic(&path, &bytes).map_err(DriveError::io("writing", &path))
    }

    pub fn write_outcome(&self, outcome: &BatchOutcome) -> Result<(), DriveError> {
        let path = self.dir.join("batch_outcome.json");
        let bytes =
            serde_json::to_vec_pretty(outcome).map_err(|source| DriveError::Encode { what: "the outcome", source })?;
        write_atomic(&path, &bytes).map_err(DriveError::io("writing", &path))
    }

    /// The outcome written by an earlier attempt, if it reads.
    pub fn read_outcome(&self) -> Option<BatchOutcome> {
        serde_json::from_slice(&crate::files::fsread::read_regular(&self.dir.join("batch_outcome.json")).ok()?).ok()
    }

    pub fn read_spec_label(&self) -> Option<String> {
        let v: Value =
            serde_json::from_slice(&crate::files::fsread::read_regular(&self.dir.join("spec.json")).ok()?).ok()?;
        v["label"].as_str().map(str::to_owned)
    }

    pub fn event(&self, event: &str, detail: Value) {
        let line = json!({"at": crate::system::clock::now().to_rfc3339(), "event": event, "detail": detail});
        let _ = append(&self.dir.join("events.jsonl"), format!("{line}\n").as_bytes());
    }

    pub fn log(&self, text: &str) {
        let line = format!("- {} {text}\n", crate::system::clock::now().to_rfc3339());
        let _ = append(&self.dir.join("execution_log.md"), line.as_bytes());
    }
}

fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    OpenOptions::new().create(true).append(true).open(path)?.write_all(bytes)
}
