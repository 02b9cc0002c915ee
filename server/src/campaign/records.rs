//! Reading (and, for the console's own records, writing) the campaign's
//! records: the matrix, every run set's cell records and outcome, run tags,
//! the run index, the active-batch marker and unit records.
//!
//! Run sets are read-only here. Each is re-read only when its `cells/` folder
//! or its outcome changed (a cell record is replaced by a rename, which
//! changes the folder), and then only the cell files whose stamps changed: a
//! poll of a 10,000-cell run set that did not change opens no file.

use std::collections::HashMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use runboard::basics::json::{describe_error, from_slice_lenient};
use runboard::console::matrix::{self, Matrix, MATRIX_FILE};
use runboard::console::spec::BatchSpec;
use runboard::drive::records::{BatchOutcome, BatchStatus, CellRecord};
use runboard::live::ActiveMarker;
use runboard::results::timing::TimedEvent;
use runboard::runsets::{
    self, RunIndexEntry, RunTags, UnitRecord, ACTIVE_MARKER_FILE, RUNSETS_DIR, RUN_INDEX_FILE, RUN_TAGS_FILE, UNITS_DIR,
};
use runboard::runview::FileStamp;

use crate::files::atomic::write_atomic;
use crate::files::fsread::{stamp_of, ProcessProbe, Within};

/// One run set as read.
#[derive(Debug, Clone, Default)]
pub struct RunSetRead {
    pub name: String,
    pub dir: PathBuf,
    /// `None`: no `batch_outcome.json` (yet).
    pub outcome: Option<Result<BatchOutcome, String>>,
    /// The spec as driven (`spec.json`).
    pub spec: Option<Result<BatchSpec, String>>,
    pub cells: Vec<CellRecord>,
    pub problems: Vec<String>,
    /// Each cell file's stamp when read, by file name.
    stamps: HashMap<String, (FileStamp, Option<CellRecord>)>,
}

impl RunSetRead {
    pub fn outcome_ok(&self) -> Option<&BatchOutcome> {
        self.outcome.as_ref().and_then(|o| o.as_ref().ok())
    }
}

type RunSetKey = (Option<FileStamp>, Option<FileStamp>, Option<FileStamp>);

#[derive(Default)]
struct Held {
    matrix: Option<(Option<FileStamp>, Arc<Matrix>)>,
    run_sets: HashMap<String, (RunSetKey, Arc<RunSetRead>)>,
    /// The unit records, read again only when the units folder changed (a
    /// record is replaced by a rename; a log appended beside it changes nothing).
    units: Option<(Option<FileStamp>, Arc<Vec<UnitRecord>>)>,
    /// Each run set's timed events, read again when `events.jsonl` grew.
    events: HashMap<String, (Option<FileStamp>, Arc<Vec<TimedEvent>>)>,
}

/// The campaign's records, read within its root, cached by file stamps.
pub struct Records {
    root: PathBuf,
    within: Within,
    probe: ProcessProbe,
    held: Mutex<Held>,
    /// Cell record files read since the start (a figure for the debug
    /// endpoint and the benches: polls while nothing changed add none).
    cell_files_read: std::sync::atomic::AtomicU64,
}

/// Whether a folder's stamp can be trusted to say "nothing changed": its
/// modification time comes from a coarse clock, so two renames a few
/// milliseconds apart may leave the same time. A folder changed within the
/// last second is read again.
fn settled(stamp: &Option<FileStamp>) -> bool {
    let now = crate::system::clock::now_ns();
    stamp.is_none_or(|s| now - s.mtime_ns > 1_000_000_000)
}

impl Records {
    pub fn new(root: &Path) -> Self {
        Self {
            root: root.to_path_buf(),
            within: Within::new(root),
            probe: ProcessProbe::this_host(),
            held: Mutex::default(),
            cell_files_read: std::sync::atomic::AtomicU64::new(0),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn within(&self) -> &Within {
        &self.within
    }

    pub fn probe(&self) -> &ProcessProbe {
        &self.probe
    }

    /// What is held and how much was read (the debug endpoint's figures).
    pub fn stats(&self) -> serde_json::Value {
        let held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        serde_json::json!({
            "run_sets_held": held.run_sets.len(),
            "cell_files_read": self.cell_files_read.load(std::sync::atomic::Ordering::Relaxed),
        })
    }

    /// The matrix (`matrix.csv`); missing or unreadable: no cells and the reason.
    pub fn matrix(&self) -> Arc<Matrix> {
        let path = self.root.join(MATRIX_FILE);
        let stamp = stamp_of(&path);
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, m)) = &held.matrix {
            if *s == stamp {
                return m.clone();
            }
        }
        let m = Arc::new(match self.within.read_opt(&path) {
            None => Matrix {
                problems: vec![format!("{MATRIX_FILE}: not found at the campaign root")],
                ..Default::default()
            },
            Some(Err(e)) => Matrix { problems: vec![format!("{MATRIX_FILE}: {e}")], ..Default::default() },
            Some(Ok(bytes)) => matrix::parse(&bytes),
        });
        held.matrix = Some((stamp, m.clone()));
        m
    }

    /// Every run set folder under `runsets/`, by name.
    pub fn run_set_names(&self) -> Vec<String> {
        let Ok(entries) = fs::read_dir(self.root.join(RUNSETS_DIR)) else { return Vec::new() };
        let mut names: Vec<String> = entries
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .filter_map(|e| e.file_name().into_string().ok())
            .filter(|n| !n.starts_with('.'))
            .collect();
        names.sort();
        names
    }

    /// Every run set, read (or from the cache when unchanged), in name order.
    pub fn run_sets(&self) -> Vec<Arc<RunSetRead>> {
        let names = self.run_set_names();
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        held.run_sets.retain(|n, _| names.binary_search(n).is_ok());
        held.events.retain(|n, _| names.binary_search(n).is_ok());
        names.iter().map(|n| self.read_run_set(&mut held, n)).collect()
    }

    /// The events timing reads from a run set's `events.jsonl` (complete
    /// lines only; none when the file is missing or cannot be read).
    pub fn events(&self, name: &str) -> Arc<Vec<TimedEvent>> {
        let path = self.root.join(RUNSETS_DIR).join(name).join("events.jsonl");
        let stamp = stamp_of(&path);
        if let Some((s, ev)) = self.held.lock().unwrap_or_else(|p| p.into_inner()).events.get(name) {
            if *s == stamp {
                return ev.clone();
            }
        }
        let read = self.within.read_opt(&path).and_then(Result::ok);
        let ev = Arc::new(read.map(|b| runboard::results::timing::parse_events(&b)).unwrap_or_default());
        self.held.lock().unwrap_or_else(|p| p.into_inner()).events.insert(name.to_owned(), (stamp, ev.clone()));
        ev
    }

    /// One run set, or `None` when there is no such folder.
    pub fn run_set(&self, name: &str) -> Option<Arc<RunSetRead>> {
        if name.is_empty() || name.starts_with('.') || name.contains(['/', '\\']) {
            return None;
        }
        let dir = self.root.join(RUNSETS_DIR).join(name);
        if !dir.is_dir() {
            return None;
        }
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        Some(self.read_run_set(&mut held, name))
    }

    fn read_run_set(&self, held: &mut Held, name: &str) -> Arc<RunSetRead> {
        let dir = self.root.join(RUNSETS_DIR).join(name);
        let key: RunSetKey =
            (stamp_of(&dir.join("cells")), stamp_of(&dir.join("batch_outcome.json")), stamp_of(&dir.join("spec.json")));
        let old = match held.run_sets.get(name) {
            Some((k, rs)) if *k == key && settled(&key.0) => return rs.clone(),
            Some((_, rs)) => Some(rs.clone()),
            None => None,
        };
        let rs = Arc::new(self.read_run_set_files(name, &dir, old.as_deref()));
        held.run_sets.insert(name.to_owned(), (key, rs.clone()));
        rs
    }

    fn read_run_set_files(&self, name: &str, dir: &Path, old: Option<&RunSetRead>) -> RunSetRead {
        let mut rs = RunSetRead { name: name.to_owned(), dir: dir.to_path_buf(), ..Default::default() };
        rs.outcome = self.within.read_opt(&dir.join("batch_outcome.json")).map(|r| {
            r.map_err(String::from)
                .and_then(|b| from_slice_lenient::<BatchOutcome>(&b).map_err(|e| describe_error(&e)))
                .map_err(|e| format!("batch_outcome.json: {e}"))
        });
        rs.spec = self.within.read_opt(&dir.join("spec.json")).map(|r| {
            r.map_err(String::from)
                .and_then(|b| runboard::console::spec::parse("spec.json", &b).map_err(|e| e.to_string()))
                .map_err(|e| if e.starts_with("spec.json") { e } else { format!("spec.json: {e}") })
        });
        let unreadable: Vec<String> =
            [rs.outcome.as_ref().and_then(|o| o.as_ref().err()), rs.spec.as_ref().and_then(|o| o.as_ref().err())]
                .into_iter()
                .flatten()
                .cloned()
                .collect();
        rs.problems.extend(unreadable);
        let cells_dir = dir.join("cells");
        let mut files: Vec<(String, PathBuf)> = match fs::read_dir(&cells_dir) {
            Ok(entries) => entries
                .flatten()
                .filter_map(|e| {
                    let n = e.file_name().into_string().ok()?;
                    (n.ends_with(".json") && !n.starts_with('.')).then(|| (n, e.path()))
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        for (file, path) in files {
            let Some(stamp) = stamp_of(&path) else { continue };
            if let Some((s, rec)) = old.and_then(|o| o.stamps.get(&file)) {
                if *s == stamp {
                    if let Some(r) = rec {
                        rs.cells.push(r.clone());
                    } else {
                        rs.problems.push(format!("cells/{file}: cannot be read"));
                    }
                    rs.stamps.insert(file, (stamp, rec.clone()));
                    continue;
                }
            }
            self.cell_files_read.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            let rec = self
                .within
                .read(&path)
                .map_err(String::from)
                .and_then(|b| from_slice_lenient::<CellRecord>(&b).map_err(|e| describe_error(&e)));
            match rec {
                Ok(r) => {
                    rs.cells.push(r.clone());
                    rs.stamps.insert(file, (stamp, Some(r)));
                }
                Err(e) => {
                    rs.problems.push(format!("cells/{file}: {e}"));
                    rs.stamps.insert(file, (stamp, None));
                }
            }
        }
        rs
    }

    /// Whether the run set's batch is running now: its outcome says `running`
    /// and its driver process (on this host) is alive.
    pub fn is_live(&self, rs: &RunSetRead) -> bool {
        rs.outcome_ok().is_some_and(|o| {
            o.status == BatchStatus::Running
                && o.driver.as_ref().is_some_and(|d| {
                    matches!(self.probe.check(&d.host, d.pid), runboard::runview::ProcessCheck::Alive { .. })
                })
        })
    }

    // ---- the console's own records ------------------------------------

    pub fn tags(&self) -> Result<RunTags, String> {
        match self.within.read_opt(&self.root.join(RUN_TAGS_FILE)) {
            None => Ok(RunTags::default()),
            Some(r) => r.map_err(String::from).and_then(|b| from_slice_lenient(&b).map_err(|e| describe_error(&e))),
        }
        .map_err(|e| format!("{RUN_TAGS_FILE}: {e}"))
    }

    pub fn write_tags(&self, tags: &RunTags) -> std::io::Result<()> {
        let path = self.root.join(RUN_TAGS_FILE);
        fs::create_dir_all(self.root.join(RUNSETS_DIR))?;
        write_atomic(&path, &serde_json::to_vec_pretty(tags).map_err(std::io::Error::other)?)
    }

    /// The run index's entries, and lines that could not be read.
    pub fn run_index(&self) -> (Vec<RunIndexEntry>, Vec<String>) {
        match self.within.read_opt(&self.root.join(RUN_INDEX_FILE)) {
            None => (Vec::new(), Vec::new()),
            Some(Err(e)) => (Vec::new(), vec![format!("{RUN_INDEX_FILE}: {e}")]),
            Some(Ok(b)) => runsets::parse_run_index(&b),
        }
    }

    /// Appends one line to the run index (the header first when it is new).
    /// One `write` of a whole line on an `O_APPEND` file, under the campaign
    /// lock: a reader never sees two launches' lines mixed.
    pub fn append_run_index(&self, entry: &RunIndexEntry) -> std::io::Result<()> {
        fs::create_dir_all(self.root.join(RUNSETS_DIR))?;
        let path = self.root.join(RUN_INDEX_FILE);
        let new = !path.exists();
        let bytes = entry.csv_text(new).into_bytes();
        let mut f = fs::OpenOptions::new().create(true).append(true).open(&path)?;
        f.write_all(&bytes)?;
        f.sync_data()
    }

    pub fn marker(&self) -> Option<Result<ActiveMarker, String>> {
        self.within.read_opt(&self.root.join(ACTIVE_MARKER_FILE)).map(|r| {
            r.map_err(String::from)
                .and_then(|b| from_slice_lenient(&b).map_err(|e| describe_error(&e)))
                .map_err(|e| format!("{ACTIVE_MARKER_FILE}: {e}"))
        })
    }

    pub fn write_marker(&self, m: &ActiveMarker) -> std::io::Result<()> {
        fs::create_dir_all(self.root.join(RUNSETS_DIR))?;
        write_atomic(&self.root.join(ACTIVE_MARKER_FILE), &serde_json::to_vec_pretty(m).map_err(std::io::Error::other)?)
    }

    pub fn unit_path(&self, unit: &str) -> PathBuf {
        self.root.join(UNITS_DIR).join(format!("{unit}.json"))
    }

    /// Every unit record, oldest launch first. The live view's version asks
    /// for them at every poll: they are parsed again only when the units
    /// folder changed.
    pub fn units(&self) -> Arc<Vec<UnitRecord>> {
        let dir = self.root.join(UNITS_DIR);
        let stamp = stamp_of(&dir);
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((s, units)) = &held.units {
            if *s == stamp && settled(&stamp) {
                return units.clone();
            }
        }
        let mut out: Vec<UnitRecord> = match fs::read_dir(&dir) {
            Err(_) => Vec::new(),
            Ok(entries) => entries
                .flatten()
                .filter(|e| e.file_name().to_string_lossy().ends_with(".json"))
                .filter_map(|e| self.within.read(&e.path()).ok())
                .filter_map(|b| from_slice_lenient::<UnitRecord>(&b).ok())
                .collect(),
        };
        out.sort_by(|a, b| a.started_at.cmp(&b.started_at).then_with(|| a.unit.cmp(&b.unit)));
        let units = Arc::new(out);
        held.units = Some((stamp, units.clone()));
        units
    }

    /// The last `n` lines of a file inside the root (a unit's log).
    pub fn tail_lines(&self, rel: &str, n: usize) -> Vec<String> {
        let path = self.root.join(rel);
        let Ok((mut f, len)) = self.within.open(&path) else { return Vec::new() };
        let Ok((bytes, start)) = crate::files::fsread::read_tail(&mut f, len, 16 << 10) else { return Vec::new() };
        let text = String::from_utf8_lossy(&bytes);
        let mut lines: Vec<&str> = text.lines().collect();
        if start > 0 && !lines.is_empty() {
            lines.remove(0); // cut in the middle
        }
        let from = lines.len().saturating_sub(n);
        lines[from..].iter().map(|l| l.trim_end().to_owned()).filter(|l| !l.is_empty()).collect()
    }
}
