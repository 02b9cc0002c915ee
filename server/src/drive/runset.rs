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

use anyhow::Context;
use runboard::drive::records::{BatchOutcome, CellRecord};
use serde_json::{json, Value};

use crate::atomic::write_atomic;

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

    pub fn create(&self) -> anyhow::Result<()> {
        for d in [self.cells_dir(), self.logs_dir(), self.out_dir()] {
            fs::create_dir_all(&d).with_context(|| format!("creating {}", d.display()))?;
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
                if let Some(r) = fs::read(&p).ok().and_then(|b| serde_json::from_slice::<CellRecord>(&b).ok()) {
                    out.insert(r.cell.clone(), r);
                }
            }
        }
        out
    }

    pub fn write_cell(&self, rec: &CellRecord) -> anyhow::Result<()> {
        let path = self.cells_dir().join(format!("{}.json", rec.cell));
        write_atomic(&path, &serde_json::to_vec_pretty(rec)?).with_context(|| format!("writing {}", path.display()))
    }

    pub fn write_outcome(&self, outcome: &BatchOutcome) -> anyhow::Result<()> {
        let path = self.dir.join("batch_outcome.json");
        write_atomic(&path, &serde_json::to_vec_pretty(outcome)?).with_context(|| format!("writing {}", path.display()))
    }

    pub fn read_spec_label(&self) -> Option<String> {
        let v: Value = serde_json::from_slice(&fs::read(self.dir.join("spec.json")).ok()?).ok()?;
        v["label"].as_str().map(str::to_owned)
    }

    pub fn event(&self, event: &str, detail: Value) {
        let line = json!({"at": crate::clock::now().to_rfc3339(), "event": event, "detail": detail});
        let _ = append(&self.dir.join("events.jsonl"), format!("{line}\n").as_bytes());
    }

    pub fn log(&self, text: &str) {
        let line = format!("- {} {text}\n", crate::clock::now().to_rfc3339());
        let _ = append(&self.dir.join("execution_log.md"), line.as_bytes());
    }
}

fn append(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    OpenOptions::new().create(true).append(true).open(path)?.write_all(bytes)
}
