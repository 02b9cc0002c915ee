//! The campaign's records about batches, beside the run sets the driver
//! writes: committed spec numbering, run set names, run tags, the run index
//! (one line per launch) and the unit records a launcher keeps. Decisions only;
//! the server reads and writes the files (see `docs/formats.md`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::campaign::LauncherKind;
use crate::drive::records::{BatchOutcome, BatchStatus};
use crate::Timestamp;

/// Where drafts are saved, relative to the root.
pub const DRAFTS_DIR: &str = "specs/drafts";
/// Where committed (numbered, never edited) specs are, relative to the root.
pub const COMMITTED_DIR: &str = "specs/committed";
/// Run sets, relative to the root.
pub const RUNSETS_DIR: &str = "runsets";
pub const RUN_TAGS_FILE: &str = "runsets/run_tags.json";
pub const RUN_INDEX_FILE: &str = "runsets/run_index.csv";
pub const ACTIVE_MARKER_FILE: &str = "runsets/active_batch.json";
/// The console's own folder: unit records and logs, the campaign lock.
pub const CONSOLE_DIR: &str = ".runboard";
pub const UNITS_DIR: &str = ".runboard/units";
pub const LOCK_FILE: &str = ".runboard/lock";

/// The number of a committed spec file name (`0012-b1.json` → 12).
pub fn committed_number(file_name: &str) -> Option<u32> {
    let (digits, rest) = file_name.split_once('-')?;
    (digits.len() >= 4 && digits.bytes().all(|b| b.is_ascii_digit()) && rest.ends_with(".json"))
        .then(|| digits.parse().ok())
        .flatten()
}

/// The file name the next committed spec of `label` takes, given the names
/// already in the committed folder: one more than the highest number.
pub fn next_committed_name(existing: &[String], label: &str) -> String {
    let next = existing.iter().filter_map(|n| committed_number(n)).max().map_or(1, |n| n + 1);
    format!("{next:04}-{label}.json")
}

/// The run set a launch of `label` at `now` makes: `<label>-<yyyymmddThhmmss>`
/// (UTC), with `-2`, `-3`, … when that name is taken.
pub fn run_set_name(label: &str, now: Timestamp, taken: &dyn Fn(&str) -> bool) -> String {
    let stamp = now.to_rfc3339().replace([':', '-'], "");
    let base = format!("{label}-{}", &stamp[..15.min(stamp.len())]);
    if !taken(&base) {
        return base;
    }
    (2..).map(|n| format!("{base}-{n}")).find(|n| !taken(n)).unwrap_or(base)
}

/// Why `name` cannot be a run set's name, if it cannot: a run set is a folder
/// right under `runsets/` named `<label>-<stamp>[-n]` — 1–200 letters, digits,
/// `-`, `_` or `.`, not starting with `.` (so never `..`, a path, or empty).
pub fn run_set_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("empty; name a run set".into());
    }
    if name.len() > 200 {
        return Some(format!("a {}-byte name; a run set's name is at most 200", name.len()));
    }
    if name.starts_with('.') || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
        return Some("not a run set name (letters, digits, '-', '_' or '.'; not a path, not starting with '.')".into());
    }
    None
}

/// `runsets/run_tags.json`: named groups of run sets.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunTags {
    pub schema_version: u32,
    #[serde(default)]
    pub tags: BTreeMap<String, Tag>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Tag {
    #[serde(default)]
    pub note: String,
    #[serde(default)]
    pub run_sets: Vec<String>,
}

impl RunTags {
    /// Adds `run_set` to `tag` (made if missing); a second add changes nothing.
    pub fn attach(&mut self, tag: &str, run_set: &str) {
        self.schema_version = 1;
        let t = self.tags.entry(tag.to_owned()).or_default();
        if !t.run_sets.iter().any(|r| r == run_set) {
            t.run_sets.push(run_set.to_owned());
        }
    }

    /// The tags holding `run_set`.
    pub fn of(&self, run_set: &str) -> Vec<String> {
        self.tags.iter().filter(|(_, t)| t.run_sets.iter().any(|r| r == run_set)).map(|(n, _)| n.clone()).collect()
    }
}

/// The longest note a tag may carry, in characters.
pub const TAG_NOTE_MAX: usize = 1000;

/// `POST /api/tags`: one tag's edit — run sets added and removed, its note
/// set, or the tag deleted (its run sets stay; only the grouping goes).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct TagEdit {
    /// The tag: 1–40 letters, digits, '-', '_' or '.'.
    pub tag: String,
    /// A run set to tag (repeatable).
    #[cfg_attr(feature = "cli", arg(long, value_name = "RUN_SET"))]
    pub add: Vec<String>,
    /// A run set to untag (repeatable).
    #[cfg_attr(feature = "cli", arg(long, value_name = "RUN_SET"))]
    pub remove: Vec<String>,
    /// The note's new text (empty clears it); left out, unchanged.
    #[cfg_attr(feature = "cli", arg(long))]
    pub note: Option<String>,
    /// Delete the tag (its run sets stay).
    #[cfg_attr(feature = "cli", arg(long))]
    pub delete: bool,
}

/// `GET /api/tags` (and every edit's answer): each tag, by name.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TagsView {
    pub tags: Vec<TagView>,
    /// What the edit changed, in words (empty for a read).
    #[serde(default)]
    pub changed: Vec<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TagView {
    pub name: String,
    pub note: String,
    pub run_sets: Vec<String>,
}

impl RunTags {
    /// Applies `edit`, with every reason it cannot be (then nothing
    /// changes): the same name rule as at launch, run sets that exist
    /// (`known`) to add, run sets the tag holds to remove, a note of at most
    /// [`TAG_NOTE_MAX`] characters, something to do. What it changed, in words.
    pub fn apply(&mut self, edit: &TagEdit, known: &dyn Fn(&str) -> bool) -> Result<Vec<String>, Vec<String>> {
        let mut why = Vec::new();
        let name = edit.tag.trim();
        if !valid_tag(name) {
            why.push(format!(
                "tag {:?}: must be 1-40 letters, digits, '-', '_' or '.'",
                crate::console::spec::shorten(name)
            ));
        }
        let held = self.tags.get(name);
        for rs in &edit.add {
            if !known(rs) {
                why.push(format!(
                    "add {:?}: no such run set (a launched one, or a folder under runsets/)",
                    crate::console::spec::shorten(rs)
                ));
            }
        }
        for rs in &edit.remove {
            if !held.is_some_and(|t| t.run_sets.contains(rs)) {
                why.push(format!("remove {:?}: tag {name:?} does not hold it", crate::console::spec::shorten(rs)));
            }
        }
        if let Some(note) = &edit.note {
            let n = note.chars().count();
            if n > TAG_NOTE_MAX {
                why.push(format!("note: {n} characters; at most {TAG_NOTE_MAX}"));
            }
            if note.chars().any(|c| c.is_control() && c != '\n') {
                why.push("note: control characters other than a line break are not kept".into());
            }
        }
        if edit.delete && (!edit.add.is_empty() || edit.note.is_some()) {
            why.push("delete: a tag is deleted alone (not with add or note)".into());
        }
        if edit.delete && held.is_none() && why.is_empty() {
            why.push(format!("delete: there is no tag {name:?}"));
        }
        if edit.add.is_empty() && edit.remove.is_empty() && edit.note.is_none() && !edit.delete {
            why.push("nothing to change: give add, remove, note or delete".into());
        }
        if !why.is_empty() {
            return Err(why);
        }
        self.schema_version = 1;
        let mut changed = Vec::new();
        if edit.delete {
            let gone = self.tags.remove(name).map_or(0, |t| t.run_sets.len());
            changed.push(format!("deleted tag {name} (it grouped {gone} run set(s); they stay)"));
            return Ok(changed);
        }
        if !self.tags.contains_key(name) {
            changed.push(format!("made tag {name}"));
        }
        let t = self.tags.entry(name.to_owned()).or_default();
        for rs in &edit.add {
            if !t.run_sets.contains(rs) {
                t.run_sets.push(rs.clone());
                changed.push(format!("tagged {rs} {name}"));
            }
        }
        for rs in &edit.remove {
            t.run_sets.retain(|r| r != rs);
            changed.push(format!("untagged {rs} from {name}"));
        }
        if let Some(note) = &edit.note {
            if *note != t.note {
                t.note = note.clone();
                changed.push(format!("set the note of {name}"));
            }
        }
        Ok(changed)
    }

    /// The tags as the API answers them, by name.
    pub fn view(&self, changed: Vec<String>) -> TagsView {
        let tags = self
            .tags
            .iter()
            .map(|(name, t)| TagView { name: name.clone(), note: t.note.clone(), run_sets: t.run_sets.clone() })
            .collect();
        TagsView { tags, changed }
    }
}

/// Whether a tag name can be used: 1–40 of `A-Za-z0-9-_.`.
pub fn valid_tag(s: &str) -> bool {
    (1..=40).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// One line of `runsets/run_index.csv`: one launch.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunIndexEntry {
    pub run_set: String,
    /// The committed spec, relative to the root.
    pub spec: String,
    pub label: String,
    pub launched_at: Timestamp,
    pub kind: RunKind,
    pub launcher: LauncherKind,
    pub unit: String,
    pub tag: String,
    pub cells: usize,
    pub model: String,
    pub endpoint: String,
}

/// What a line of the run index records: a new run set, or a resumed one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunKind {
    Launch,
    Resume,
}

impl RunKind {
    /// `launch` or `resume`, as the index writes it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Launch => "launch",
            Self::Resume => "resume",
        }
    }

    fn from_word(word: &str) -> Option<Self> {
        [Self::Launch, Self::Resume].into_iter().find(|k| k.word() == word)
    }
}

pub const RUN_INDEX_HEADER: [&str; 11] =
    ["run_set", "spec", "label", "launched_at", "kind", "launcher", "unit", "tag", "cells", "model", "endpoint"];

impl RunIndexEntry {
    pub fn csv_fields(&self) -> [String; 11] {
        [
            self.run_set.clone(),
            self.spec.clone(),
            self.label.clone(),
            self.launched_at.to_rfc3339(),
            self.kind.word().to_owned(),
            self.launcher.word().to_owned(),
            self.unit.clone(),
            self.tag.clone(),
            self.cells.to_string(),
            self.model.clone(),
            self.endpoint.clone(),
        ]
    }
}

impl RunIndexEntry {
    /// The entry as CSV text to append (the header first for a new file).
    pub fn csv_text(&self, with_header: bool) -> String {
        let mut w = csv::Writer::from_writer(Vec::new());
        // Writing to memory cannot fail.
        if with_header {
            let _ = w.write_record(RUN_INDEX_HEADER);
        }
        let _ = w.write_record(self.csv_fields());
        String::from_utf8(w.into_inner().unwrap_or_default()).unwrap_or_default()
    }
}

/// Reads the run index; lines that cannot be read are skipped and named.
pub fn parse_run_index(bytes: &[u8]) -> (Vec<RunIndexEntry>, Vec<String>) {
    let mut out = Vec::new();
    let mut problems = Vec::new();
    let mut r = csv::ReaderBuilder::new().flexible(true).from_reader(bytes);
    for (i, rec) in r.records().enumerate() {
        let line = i + 2;
        let Ok(rec) = rec else {
            problems.push(format!("{RUN_INDEX_FILE}: line {line}: cannot be read"));
            continue;
        };
        let f = |k: usize| rec.get(k).unwrap_or("").to_owned();
        let at = Timestamp::parse_rfc3339(&f(3));
        let kind = RunKind::from_word(&f(4));
        let launcher = LauncherKind::from_word(&f(5));
        match (at, kind, launcher, rec.len() == RUN_INDEX_HEADER.len()) {
            (Some(launched_at), Some(kind), Some(launcher), true) => out.push(RunIndexEntry {
                run_set: f(0),
                spec: f(1),
                label: f(2),
                launched_at,
                kind,
                launcher,
                unit: f(6),
                tag: f(7),
                cells: f(8).parse().unwrap_or(0),
                model: f(9),
                endpoint: f(10),
            }),
            (_, _, _, false) => problems.push(format!(
                "{RUN_INDEX_FILE}: line {line}: {} fields, not {}",
                rec.len(),
                RUN_INDEX_HEADER.len()
            )),
            (None, _, _, true) => {
                problems.push(format!("{RUN_INDEX_FILE}: line {line}: launched_at {:?} is not a timestamp", f(3)))
            }
            (_, None, _, true) => {
                problems.push(format!("{RUN_INDEX_FILE}: line {line}: kind {:?} is neither launch nor resume", f(4)))
            }
            (_, _, None, true) => problems
                .push(format!("{RUN_INDEX_FILE}: line {line}: launcher {:?} is not local, systemd or slurm", f(5))),
        }
    }
    (out, problems)
}

/// Launches per model since the start of `now`'s UTC day (for daily caps).
pub fn launches_today(index: &[RunIndexEntry], now: Timestamp) -> BTreeMap<String, u32> {
    let day = now.utc_day_start();
    let mut out = BTreeMap::new();
    for e in index.iter().filter(|e| e.launched_at >= day && e.kind == RunKind::Launch && !e.model.is_empty()) {
        *out.entry(e.model.clone()).or_insert(0) += 1;
    }
    out
}

/// A launcher's record of one unit (`.runboard/units/<unit>.json`): what
/// was launched, how its backend finds it again ([`UnitHandle`]), and its end
/// once runboard has seen it. The file keeps its flat format
/// (`docs/formats.md`); this is its closed form.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(try_from = "UnitFile", into = "UnitFile")]
pub struct UnitRecord {
    pub unit: String,
    pub run_set: String,
    /// The committed spec, relative to the root.
    pub spec: String,
    pub command: Vec<String>,
    pub started_at: Timestamp,
    /// How its backend finds it again.
    pub handle: UnitHandle,
    /// How it ended, once recorded (then no backend is asked).
    pub end: Option<UnitEnd>,
    /// Its log, relative to the root.
    pub log: Option<String>,
}

/// How a unit's backend finds it again. Each backend's fields are known
/// only once its launcher has said them (a record is written before).
#[derive(Debug, Clone, PartialEq)]
pub enum UnitHandle {
    /// The local supervising process: its PID and its start time in clock
    /// ticks since boot (a PID alone can be reused), and the driver it started.
    Local { pid: Option<u32>, pid_start: Option<u64>, driver_pid: Option<u32> },
    /// A transient unit of the systemd user manager (named by the unit);
    /// its main PID once it ran.
    Systemd { main_pid: Option<u32> },
    /// A Slurm job, once `sbatch` gave its id.
    Slurm { job_id: Option<String> },
}

impl UnitHandle {
    /// A handle of `backend` that knows nothing yet.
    pub fn unknown(backend: LauncherKind) -> Self {
        match backend {
            LauncherKind::Local => Self::Local { pid: None, pid_start: None, driver_pid: None },
            LauncherKind::Systemd => Self::Systemd { main_pid: None },
            LauncherKind::Slurm => Self::Slurm { job_id: None },
        }
    }

    pub fn backend(&self) -> LauncherKind {
        match self {
            Self::Local { .. } => LauncherKind::Local,
            Self::Systemd { .. } => LauncherKind::Systemd,
            Self::Slurm { .. } => LauncherKind::Slurm,
        }
    }
}

/// How a unit ended, as recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct UnitEnd {
    pub at: Timestamp,
    pub exit_status: Option<i32>,
    /// `success`, `exit-code`, `signal`, … (`docs/formats.md`).
    pub result: String,
}

/// The unit record's file, flat as written since its first version.
#[derive(Serialize, Deserialize)]
struct UnitFile {
    schema_version: u32,
    unit: String,
    /// `local`, `systemd` or `slurm`.
    backend: String,
    run_set: String,
    spec: String,
    command: Vec<String>,
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    started_at: Timestamp,
    #[serde(default)]
    pid: Option<u32>,
    #[serde(default)]
    pid_start: Option<u64>,
    #[serde(default)]
    driver_pid: Option<u32>,
    #[serde(default)]
    job_id: Option<String>,
    #[serde(default, with = "crate::basics::timefmt::rfc3339::option")]
    ended_at: Option<Timestamp>,
    #[serde(default)]
    exit_status: Option<i32>,
    #[serde(default)]
    result: Option<String>,
    #[serde(default)]
    log: Option<String>,
}

impl TryFrom<UnitFile> for UnitRecord {
    type Error = String;

    fn try_from(f: UnitFile) -> Result<Self, String> {
        let handle = match LauncherKind::from_word(&f.backend) {
            Some(LauncherKind::Local) => {
                UnitHandle::Local { pid: f.pid, pid_start: f.pid_start, driver_pid: f.driver_pid }
            }
            Some(LauncherKind::Systemd) => UnitHandle::Systemd { main_pid: f.pid.or(f.driver_pid) },
            Some(LauncherKind::Slurm) => UnitHandle::Slurm { job_id: f.job_id },
            None => return Err(format!("backend {:?} is not local, systemd or slurm", f.backend)),
        };
        let end = f.ended_at.map(|at| UnitEnd { at, exit_status: f.exit_status, result: f.result.unwrap_or_default() });
        Ok(Self {
            unit: f.unit,
            run_set: f.run_set,
            spec: f.spec,
            command: f.command,
            started_at: f.started_at,
            handle,
            end,
            log: f.log,
        })
    }
}

impl From<UnitRecord> for UnitFile {
    fn from(r: UnitRecord) -> Self {
        let backend = r.handle.backend().word().to_owned();
        let (pid, pid_start, driver_pid, job_id) = match r.handle {
            UnitHandle::Local { pid, pid_start, driver_pid } => (pid, pid_start, driver_pid, None),
            // The main PID is the driver's: `runboard drive` is the unit's command.
            UnitHandle::Systemd { main_pid } => (main_pid, None, main_pid, None),
            UnitHandle::Slurm { job_id } => (None, None, None, job_id),
        };
        Self {
            schema_version: 1,
            unit: r.unit,
            backend,
            run_set: r.run_set,
            spec: r.spec,
            command: r.command,
            started_at: r.started_at,
            pid,
            pid_start,
            driver_pid,
            job_id,
            ended_at: r.end.as_ref().map(|e| e.at),
            exit_status: r.end.as_ref().and_then(|e| e.exit_status),
            result: r.end.map(|e| e.result),
            log: r.log,
        }
    }
}

impl UnitRecord {
    /// A unit's record before its launcher says more (no PID, job or end).
    pub fn new(
        unit: &str,
        backend: LauncherKind,
        run_set: &str,
        spec: &str,
        command: Vec<String>,
        started_at: Timestamp,
    ) -> Self {
        Self {
            unit: unit.to_owned(),
            run_set: run_set.to_owned(),
            spec: spec.to_owned(),
            command,
            started_at,
            handle: UnitHandle::unknown(backend),
            end: None,
            log: None,
        }
    }

    pub fn backend(&self) -> LauncherKind {
        self.handle.backend()
    }

    /// How it ended, when its end is recorded (then no backend is asked).
    pub fn recorded_end(&self) -> Option<crate::live::Observation> {
        self.end.as_ref().map(|e| crate::live::Observation::Finished {
            exit_status: e.exit_status,
            result: e.result.clone(),
            at: Some(e.at),
        })
    }
}

/// One run set as the Run sets page and `GET /api/runsets` show it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSetSummary {
    pub name: String,
    pub label: Option<String>,
    /// The outcome's status; none when it wrote no outcome (yet).
    pub status: Option<BatchStatus>,
    pub reason: Option<String>,
    /// Its batch is running now (outcome `running` and its driver alive).
    pub live: bool,
    pub planned: Option<usize>,
    pub cells: usize,
    pub done: usize,
    pub failed: usize,
    pub started_at: Option<String>,
    pub ended_at: Option<String>,
    pub tags: Vec<String>,
    /// The committed spec it was launched from (from the run index).
    pub spec: Option<String>,
    /// Records that could not be read, and why.
    pub problems: Vec<String>,
}

impl RunSetSummary {
    pub fn from_outcome(name: &str, outcome: Option<&BatchOutcome>) -> Self {
        Self {
            name: name.to_owned(),
            label: outcome.map(|o| o.label.clone()),
            status: outcome.map(|o| o.status),
            reason: outcome.map(|o| o.reason.clone()).filter(|r| !r.is_empty()),
            live: false,
            planned: outcome.map(|o| o.planned),
            cells: 0,
            done: 0,
            failed: 0,
            // The batch's first start, not a resume's.
            started_at: outcome.map(|o| o.first_started_at.clone().unwrap_or_else(|| o.started_at.clone())),
            ended_at: outcome.and_then(|o| o.ended_at.clone()),
            tags: Vec::new(),
            spec: None,
            problems: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_specs_number_on_from_the_highest() {
        let names = ["0001-a.json", "0009-b.json", "notes.txt", "12-x.json", "0003-c.json"].map(String::from);
        assert_eq!(next_committed_name(&names, "d"), "0010-d.json");
        assert_eq!(next_committed_name(&[], "d"), "0001-d.json");
        assert_eq!(committed_number("12345-big.json"), Some(12345));
        assert_eq!(committed_number("0001-a.txt"), None);
    }

    #[test]
    fn run_set_names_are_plain_folder_names() {
        for ok in ["b1-20261201T094107", "b1-20261201T094107-2", "a.b_c"] {
            assert_eq!(run_set_name_problem(ok), None, "{ok}");
        }
        for bad in ["", "../../outside", "..", ".hidden", "a/b", "a b", "a\\b"] {
            assert!(run_set_name_problem(bad).is_some(), "{bad:?}");
        }
        assert!(run_set_name_problem(&"x".repeat(201)).unwrap().contains("201-byte"));
    }

    #[test]
    fn a_taken_run_set_name_gets_a_suffix() {
        let now = Timestamp::parse_rfc3339("2026-12-01T09:41:07.123Z").unwrap();
        assert_eq!(run_set_name("b1", now, &|_| false), "b1-20261201T094107");
        assert_eq!(run_set_name("b1", now, &|n| n == "b1-20261201T094107"), "b1-20261201T094107-2");
    }

    #[test]
    fn a_tag_edit_is_checked_whole_and_says_what_it_changed() {
        let known = |rs: &str| ["rs1", "rs2"].contains(&rs);
        let mut t = RunTags::default();
        t.attach("console", "rs1");
        let before = t.clone();
        let bad = TagEdit {
            tag: "bad name!".into(),
            add: vec!["nope".into()],
            remove: vec!["rs2".into()],
            note: Some("x".repeat(TAG_NOTE_MAX + 1)),
            delete: false,
        };
        let why = t.apply(&bad, &known).unwrap_err();
        assert_eq!(why.len(), 4, "{why:?}");
        assert!(why[0].starts_with("tag \"bad name!\": must be 1-40"), "{why:?}");
        assert!(why[1].starts_with("add \"nope\": no such run set"));
        assert_eq!(why[2], "remove \"rs2\": tag \"bad name!\" does not hold it");
        assert_eq!(why[3], format!("note: {} characters; at most 1000", TAG_NOTE_MAX + 1));
        assert_eq!(t, before, "a refused edit changes nothing");
        assert_eq!(
            t.apply(&TagEdit { tag: "x".into(), ..Default::default() }, &known).unwrap_err(),
            ["nothing to change: give add, remove, note or delete"]
        );
        let edit = TagEdit {
            tag: "paper".into(),
            add: vec!["rs1".into(), "rs2".into()],
            note: Some("for §4".into()),
            ..Default::default()
        };
        assert_eq!(
            t.apply(&edit, &known).unwrap(),
            ["made tag paper", "tagged rs1 paper", "tagged rs2 paper", "set the note of paper"]
        );
        assert_eq!(t.apply(&edit, &known).unwrap(), Vec::<String>::new(), "the same edit again changes nothing");
        assert_eq!(t.of("rs2"), ["paper"]);
        let remove = TagEdit { tag: "paper".into(), remove: vec!["rs1".into()], ..Default::default() };
        assert_eq!(t.apply(&remove, &known).unwrap(), ["untagged rs1 from paper"]);
        assert_eq!(
            t.view(vec![]).tags[1],
            TagView { name: "paper".into(), note: "for §4".into(), run_sets: vec!["rs2".into()] }
        );
        let delete = TagEdit { tag: "paper".into(), delete: true, ..Default::default() };
        assert_eq!(t.apply(&delete, &known).unwrap(), ["deleted tag paper (it grouped 1 run set(s); they stay)"]);
        assert_eq!(t.apply(&delete, &known).unwrap_err(), ["delete: there is no tag \"paper\""]);
    }

    #[test]
    fn tags_attach_once_and_the_index_counts_todays_launches() {
        let mut t = RunTags::default();
        t.attach("console", "rs1");
        t.attach("console", "rs1");
        t.attach("auto", "rs1");
        assert_eq!(t.tags["console"].run_sets, ["rs1"]);
        assert_eq!(t.of("rs1"), ["auto", "console"]);
        let now = Timestamp::parse_rfc3339("2026-12-01T09:00:00Z").unwrap();
        let e = |at: &str, kind: RunKind, model: &str| RunIndexEntry {
            run_set: "r".into(),
            spec: "s".into(),
            label: "l".into(),
            launched_at: Timestamp::parse_rfc3339(at).unwrap(),
            kind,
            launcher: LauncherKind::Local,
            unit: "u".into(),
            tag: "console".into(),
            cells: 1,
            model: model.into(),
            endpoint: String::new(),
        };
        let mut text = RUN_INDEX_HEADER.join(",") + "\n";
        for entry in [
            e("2026-11-30T23:59:59Z", RunKind::Launch, "gpt"),
            e("2026-12-01T00:00:00Z", RunKind::Launch, "gpt"),
            e("2026-12-01T08:00:00Z", RunKind::Resume, "gpt"),
            e("2026-12-01T08:30:00Z", RunKind::Launch, "qwen"),
        ] {
            text += &entry.csv_fields().join(",");
            text += "\n";
        }
        text += "broken,line\n";
        text += "r,s,l,2026-12-01T08:40:00Z,relaunch,local,u,console,1,gpt,\n";
        let (index, problems) = parse_run_index(text.as_bytes());
        assert_eq!(index.len(), 4);
        assert_eq!(
            problems,
            [
                "runsets/run_index.csv: line 6: 2 fields, not 11",
                "runsets/run_index.csv: line 7: kind \"relaunch\" is neither launch nor resume"
            ]
        );
        assert_eq!(launches_today(&index, now), BTreeMap::from([("gpt".into(), 1), ("qwen".into(), 1)]));
    }
}
