//! Upkeep as data: what a campaign has left lying about, found from facts the
//! server gathers (file stamps, a process alive or gone, a unit's
//! observation), each finding with the one safe action that clears it, and
//! the check an action passes before it is done.
//!
//! The findings, each a closed [`FindingKind`]:
//!
//! - a **stale draft** (`specs/drafts/*.json` not changed for
//!   [`STALE_DRAFT_DAYS`] days) → delete it;
//! - a **temporary file** a killed writer left (`.<name>.tmp-<pid>-<n>`, its
//!   writer's process gone from this host and the file unchanged for
//!   [`TEMP_QUIET_S`] s) → sweep it;
//! - a **unit whose process is gone** (its record has no end, its launcher
//!   says it finished) → record its end;
//! - an **interrupted run set** (its outcome still says `running`, its driver
//!   process gone from this host, no unit of it in flight) → mark it
//!   interrupted: its outcome becomes `stopped` (resumable) with the evidence;
//! - an **orphaned log** (a unit log under `.runboard/units/` whose record is
//!   gone) → delete it;
//! - a run set's **process logs**, once it has ended → archive them
//!   (each `logs/*.log*` compressed to `.gz`).
//!
//! A finding carries a `token` made from what it was found from: an action
//! is done only when the finding, found again under the campaign lock at the
//! moment of the action, is still there with the same token — so an action
//! never applies to something that changed after the operator saw it, and a
//! run that came alive since is never touched.

use serde::{Deserialize, Serialize};

use crate::basics::timefmt::Timestamp;

/// A draft not changed for this many days is stale.
pub const STALE_DRAFT_DAYS: i64 = 14;
/// A temporary file unchanged for this long (and its writer gone) is left over.
pub const TEMP_QUIET_S: i64 = 600;
/// The upkeep log, beside the console's records.
pub const LOG_FILE: &str = ".runboard/upkeep.jsonl";

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    StaleDraft,
    TempFile,
    GoneUnit,
    InterruptedRunSet,
    OrphanedLog,
    RunSetLogs,
}

impl FindingKind {
    /// Its name, as the API writes it.
    pub fn word(self) -> &'static str {
        match self {
            Self::StaleDraft => "stale_draft",
            Self::TempFile => "temp_file",
            Self::GoneUnit => "gone_unit",
            Self::InterruptedRunSet => "interrupted_run_set",
            Self::OrphanedLog => "orphaned_log",
            Self::RunSetLogs => "run_set_logs",
        }
    }
}

crate::display_as_word!(Action);

/// The safe action of each kind of finding.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Action {
    DeleteDraft,
    SweepTemp,
    RecordUnitEnd,
    MarkInterrupted,
    DeleteLog,
    ArchiveLogs,
}

impl Action {
    pub const ALL: [Self; 6] = [
        Self::DeleteDraft,
        Self::SweepTemp,
        Self::RecordUnitEnd,
        Self::MarkInterrupted,
        Self::DeleteLog,
        Self::ArchiveLogs,
    ];

    /// Its name, as the API and the command line take it.
    pub fn word(self) -> &'static str {
        match self {
            Self::DeleteDraft => "delete_draft",
            Self::SweepTemp => "sweep_temp",
            Self::RecordUnitEnd => "record_unit_end",
            Self::MarkInterrupted => "mark_interrupted",
            Self::DeleteLog => "delete_log",
            Self::ArchiveLogs => "archive_logs",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|a| a.word() == word)
    }

    /// What it does to `target`, as a confirmation asks it.
    pub fn question(self, target: &str) -> String {
        match self {
            Self::DeleteDraft => format!("Delete the draft {target}? It was never launched; it cannot be brought back."),
            Self::SweepTemp => format!("Delete the temporary file {target}, left by a writer that is gone?"),
            Self::RecordUnitEnd => format!("Record the end of unit {target}, whose process is gone?"),
            Self::MarkInterrupted => format!(
                "Mark run set {target} interrupted? Its outcome becomes 'stopped' (resumable); its cells and runs are kept."
            ),
            Self::DeleteLog => format!("Delete the log {target}, whose unit record is gone?"),
            Self::ArchiveLogs => format!(
                "Compress the process logs of run set {target}? Each becomes a .gz file beside it; the Live page and the log API no longer read them."
            ),
        }
    }
}

/// A file as found: its path relative to the root, size, last change, stamp.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FileFact {
    pub path: String,
    pub bytes: u64,
    pub modified: Timestamp,
    /// What changes when the file does (identity, size, change time).
    pub stamp: String,
}

/// A unit record without an end, and what its launcher says now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitFact {
    pub unit: String,
    pub run_set: String,
    pub backend: crate::campaign::LauncherKind,
    /// Its launcher says it finished (how, in words); none: still in flight or unknown.
    pub finished: Option<String>,
}

/// A run set's driver process, as seen from this host.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Driver {
    Alive,
    /// Recorded on this host, and gone.
    Gone,
    /// On another host: never judged gone.
    OtherHost,
    /// Its outcome names none.
    #[default]
    NotRecorded,
}

/// A run set's state on the disk-use list.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DiskState {
    Running,
    Ended,
    /// Its outcome says running; its driver is gone.
    Interrupted,
    /// No outcome read.
    #[default]
    Unknown,
}

impl DiskState {
    /// Its name, as the API writes it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Ended => "ended",
            Self::Interrupted => "interrupted",
            Self::Unknown => "unknown",
        }
    }
}

/// A run set as found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSetFact {
    pub name: String,
    /// Its outcome says `running`.
    pub outcome_running: bool,
    /// Its outcome has ended (any status but `running`).
    pub ended: bool,
    pub driver: Driver,
    /// The driver named (`pid on host`).
    pub driver_words: String,
    /// A unit of it is in flight (active, pending, or its state unknown).
    pub unit_in_flight: bool,
    pub bytes: u64,
    pub files: u64,
    /// The walk stopped at its bound: `bytes` and `files` are at least these.
    pub partial: bool,
    /// Its process logs not yet archived (`logs/*.log`, `*.log.1`).
    pub log_bytes: u64,
    pub log_files: u64,
    /// What changes when its outcome or its logs do.
    pub stamp: String,
}

/// Everything the findings are made from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Facts {
    pub now: Timestamp,
    pub drafts: Vec<FileFact>,
    /// Each temporary file and whether its writer (the pid in its name) is alive on this host.
    pub temps: Vec<(FileFact, bool)>,
    pub units: Vec<UnitFact>,
    pub run_sets: Vec<RunSetFact>,
    /// Unit logs whose record is gone.
    pub orphaned_logs: Vec<FileFact>,
}

/// One thing to clear, and how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    pub kind: FindingKind,
    /// What the action names: a path relative to the root, a unit, a run set.
    pub target: String,
    pub action: Action,
    /// Give it back with the action: it is done only if nothing changed.
    pub token: String,
    /// The bytes the action frees or compresses (none: nothing on disk).
    pub bytes: Option<u64>,
    pub words: String,
    /// What the confirmation asks.
    pub question: String,
}

impl Finding {
    /// The finding's id for `runboard upkeep --do`: from its token (what it
    /// was found from), so it names this finding alone, and stops naming
    /// anything once that changed.
    pub fn id(&self) -> String {
        format!("u-{:08x}", crate::basics::hash::fnv1a(self.token.as_bytes()) as u32)
    }
}

/// One run set's disk use.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct DiskUse {
    pub run_set: String,
    pub bytes: u64,
    pub files: u64,
    pub partial: bool,
    pub log_bytes: u64,
    pub state: DiskState,
}

/// The answer of `GET /api/upkeep`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct UpkeepView {
    pub findings: Vec<Finding>,
    /// Every run set, largest first.
    pub disk: Vec<DiskUse>,
    pub total_bytes: u64,
    /// When it was made (ms since the epoch).
    pub generated_at: Timestamp,
    pub note: String,
}

/// `POST /api/upkeep`: one action on one finding, with its token.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct UpkeepRequest {
    /// One of the actions' words, as text: an unknown one is refused by
    /// [`check`] naming them all, in the same words on every surface (a
    /// body that fails to decode is worded by each surface's own decoder).
    pub action: String,
    pub target: String,
    pub token: String,
}

/// What an action did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UpkeepDone {
    pub action: Action,
    pub target: String,
    pub words: String,
    /// Bytes freed (deleted, or saved by compressing).
    pub freed_bytes: u64,
}

pub const NOTE: &str = "Each action is done only if what was listed is unchanged and no live batch is touched; \
     each is logged in .runboard/upkeep.jsonl.";

/// The pid a temporary file's name gives its writer (`.<name>.tmp-<pid>-<n>`,
/// as the server's atomic writer names it).
pub fn temp_writer(file_name: &str) -> Option<u32> {
    let rest = file_name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(".tmp-")?;
    let (pid, n) = tail.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

fn ago(then: Timestamp, now: Timestamp) -> String {
    crate::basics::timefmt::ago(then, now)
}

fn size(bytes: u64) -> String {
    format!("{} bytes", crate::basics::numfmt::thousands(bytes))
}

fn finding(kind: FindingKind, target: &str, action: Action, token: &str, bytes: Option<u64>, words: String) -> Finding {
    Finding {
        kind,
        target: target.to_owned(),
        action,
        token: format!("{:016x}", crate::basics::hash::fnv1a(format!("{kind:?}|{target}|{token}").as_bytes())),
        bytes,
        words,
        question: action.question(target),
    }
}

/// The findings and the disk use, from the facts.
pub fn upkeep(f: &Facts) -> UpkeepView {
    let now = f.now;
    let mut out = Vec::new();
    for d in &f.drafts {
        let age_days = (now.0 - d.modified.0) / 86_400_000;
        if age_days >= STALE_DRAFT_DAYS {
            out.push(finding(
                FindingKind::StaleDraft,
                &d.path,
                Action::DeleteDraft,
                &d.stamp,
                Some(d.bytes),
                format!("draft {} unchanged since {} (over {STALE_DRAFT_DAYS} days)", d.path, ago(d.modified, now)),
            ));
        }
    }
    for (t, alive) in &f.temps {
        let quiet = (now.0 - t.modified.0) / 1000 >= TEMP_QUIET_S;
        if !alive && quiet {
            let writer = t.path.rsplit('/').next().and_then(temp_writer);
            out.push(finding(
                FindingKind::TempFile,
                &t.path,
                Action::SweepTemp,
                &t.stamp,
                Some(t.bytes),
                format!(
                    "temporary file {} ({}) left by a writer that is gone (pid {}), unchanged since {}",
                    t.path,
                    size(t.bytes),
                    writer.map_or("?".into(), |p| p.to_string()),
                    ago(t.modified, now)
                ),
            ));
        }
    }
    for u in &f.units {
        if let Some(how) = &u.finished {
            out.push(finding(
                FindingKind::GoneUnit,
                &u.unit,
                Action::RecordUnitEnd,
                how,
                None,
                format!(
                    "unit {} ({}, run set {}) has ended ({how}) but its record has no end",
                    u.unit, u.backend, u.run_set
                ),
            ));
        }
    }
    for r in &f.run_sets {
        if r.outcome_running && r.driver == Driver::Gone && !r.unit_in_flight {
            out.push(finding(
                FindingKind::InterruptedRunSet,
                &r.name,
                Action::MarkInterrupted,
                &r.stamp,
                None,
                format!(
                    "run set {} says it is running, but its driver ({}) is gone and no unit of it is in flight",
                    r.name, r.driver_words
                ),
            ));
        }
    }
    for l in &f.orphaned_logs {
        out.push(finding(
            FindingKind::OrphanedLog,
            &l.path,
            Action::DeleteLog,
            &l.stamp,
            Some(l.bytes),
            format!("log {} ({}) belongs to no unit record", l.path, size(l.bytes)),
        ));
    }
    for r in &f.run_sets {
        if r.ended && r.log_files > 0 && !r.unit_in_flight {
            out.push(finding(
                FindingKind::RunSetLogs,
                &r.name,
                Action::ArchiveLogs,
                &r.stamp,
                Some(r.log_bytes),
                format!(
                    "run set {} has ended; its {} process log(s) hold {}",
                    r.name,
                    crate::basics::numfmt::thousands(r.log_files),
                    size(r.log_bytes)
                ),
            ));
        }
    }
    let mut disk: Vec<DiskUse> = f
        .run_sets
        .iter()
        .map(|r| DiskUse {
            run_set: r.name.clone(),
            bytes: r.bytes,
            files: r.files,
            partial: r.partial,
            log_bytes: r.log_bytes,
            state: match (r.outcome_running, r.ended) {
                (true, _) if r.driver == Driver::Gone => DiskState::Interrupted,
                (true, _) => DiskState::Running,
                (false, true) => DiskState::Ended,
                (false, false) => DiskState::Unknown,
            },
        })
        .collect();
    disk.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.run_set.cmp(&b.run_set)));
    UpkeepView {
        total_bytes: disk.iter().map(|d| d.bytes).sum(),
        findings: out,
        disk,
        generated_at: now,
        note: NOTE.to_owned(),
    }
}

/// The finding an action may be done on, found again now: refused with
/// every reason when the action is unknown, nothing is found for it, or it
/// changed since it was listed.
pub fn check<'a>(req: &UpkeepRequest, now: &'a UpkeepView) -> Result<&'a Finding, Vec<String>> {
    let Some(action) = Action::parse(&req.action) else {
        let known: Vec<&str> = Action::ALL.iter().map(|a| a.word()).collect();
        return Err(vec![format!("action: {:?} is not one of {}", req.action, known.join(", "))]);
    };
    let Some(f) = now.findings.iter().find(|f| f.action == action && f.target == req.target) else {
        return Err(vec![format!(
            "{} {}: nothing to do — it is not (or no longer) listed: it may be live, recent, gone, or already done; read the list again",
            action.word(),
            req.target
        )]);
    };
    if f.token != req.token {
        return Err(vec![format!(
            "{} {}: it changed since it was listed (token {} given, {} now); read the list again and confirm",
            action.word(),
            req.target,
            req.token,
            f.token
        )]);
    }
    Ok(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: i64 = 86_400_000;

    fn file(path: &str, modified: i64) -> FileFact {
        FileFact { path: path.into(), bytes: 100, modified: Timestamp(modified), stamp: format!("s-{modified}") }
    }

    fn facts() -> Facts {
        let now = 100 * DAY;
        Facts {
            now: Timestamp(now),
            drafts: vec![file("specs/drafts/old.json", now - 15 * DAY), file("specs/drafts/new.json", now - DAY)],
            temps: vec![
                (file("runsets/.run_tags.json.tmp-4242-0", now - 3_600_000), false),
                // Its writer alive, or too recent: not left over.
                (file("auto/.state.json.tmp-77-1", now - 3_600_000), true),
                (file("auto/.state.json.tmp-78-1", now - 1000), false),
            ],
            units: vec![
                UnitFact {
                    unit: "rb-1".into(),
                    run_set: "r1".into(),
                    backend: crate::campaign::LauncherKind::Local,
                    finished: Some("exit 1".into()),
                },
                UnitFact {
                    unit: "rb-2".into(),
                    run_set: "r2".into(),
                    backend: crate::campaign::LauncherKind::Slurm,
                    finished: None,
                },
            ],
            run_sets: vec![
                RunSetFact {
                    name: "r1".into(),
                    outcome_running: true,
                    driver: Driver::Gone,
                    driver_words: "pid 9 on h".into(),
                    bytes: 5000,
                    stamp: "o1".into(),
                    ..Default::default()
                },
                // Its driver gone but a unit in flight (a slow start): not interrupted.
                RunSetFact {
                    name: "r2".into(),
                    outcome_running: true,
                    driver: Driver::Gone,
                    unit_in_flight: true,
                    bytes: 9000,
                    ..Default::default()
                },
                // On another host: unknown, never interrupted.
                RunSetFact {
                    name: "r3".into(),
                    outcome_running: true,
                    driver: Driver::OtherHost,
                    ..Default::default()
                },
                RunSetFact {
                    name: "r4".into(),
                    ended: true,
                    driver: Driver::Gone,
                    log_bytes: 700,
                    log_files: 2,
                    bytes: 800,
                    stamp: "o4".into(),
                    ..Default::default()
                },
            ],
            orphaned_logs: vec![file(".runboard/units/rb-0.log", now - DAY)],
        }
    }

    #[test]
    fn each_finding_is_found_only_when_its_action_is_safe() {
        let v = upkeep(&facts());
        let found: Vec<(FindingKind, &str, Action)> =
            v.findings.iter().map(|f| (f.kind, f.target.as_str(), f.action)).collect();
        assert_eq!(
            found,
            vec![
                (FindingKind::StaleDraft, "specs/drafts/old.json", Action::DeleteDraft),
                (FindingKind::TempFile, "runsets/.run_tags.json.tmp-4242-0", Action::SweepTemp),
                (FindingKind::GoneUnit, "rb-1", Action::RecordUnitEnd),
                (FindingKind::InterruptedRunSet, "r1", Action::MarkInterrupted),
                (FindingKind::OrphanedLog, ".runboard/units/rb-0.log", Action::DeleteLog),
                (FindingKind::RunSetLogs, "r4", Action::ArchiveLogs),
            ]
        );
        assert!(v.findings[1].words.contains("pid 4242"), "{}", v.findings[1].words);
        assert!(v.findings[3].words.contains("its driver (pid 9 on h) is gone"), "{}", v.findings[3].words);
        let states: Vec<(&str, u64, DiskState)> =
            v.disk.iter().map(|d| (d.run_set.as_str(), d.bytes, d.state)).collect();
        assert_eq!(
            states,
            vec![
                ("r2", 9000, DiskState::Interrupted),
                ("r1", 5000, DiskState::Interrupted),
                ("r4", 800, DiskState::Ended),
                ("r3", 0, DiskState::Running)
            ]
        );
        assert_eq!(v.total_bytes, 14_800);
    }

    #[test]
    fn an_action_needs_the_finding_now_and_its_token_unchanged() {
        let v = upkeep(&facts());
        let draft = &v.findings[0];
        let ask = |action: &str, target: &str, token: &str| UpkeepRequest {
            action: action.into(),
            target: target.into(),
            token: token.into(),
        };
        assert_eq!(check(&ask("delete_draft", &draft.target, &draft.token), &v).unwrap(), draft);
        assert!(check(&ask("shred", "x", "t"), &v).unwrap_err()[0].contains("not one of delete_draft, sweep_temp"));
        // Not listed: a recent draft, a live run set.
        assert!(check(&ask("delete_draft", "specs/drafts/new.json", "t"), &v).unwrap_err()[0]
            .contains("not (or no longer) listed"));
        assert!(check(&ask("mark_interrupted", "r2", "t"), &v).is_err());
        // Changed since it was listed: its token differs.
        let mut changed = facts();
        changed.drafts[0].stamp = "s-other".into();
        let again = upkeep(&changed);
        assert!(check(&ask("delete_draft", &draft.target, &draft.token), &again).unwrap_err()[0]
            .contains("changed since it was listed"));
    }

    #[test]
    fn kinds_and_actions_are_named_as_the_api_writes_them() {
        for f in upkeep(&facts()).findings {
            assert_eq!(serde_json::to_value(f.kind).unwrap(), f.kind.word());
            assert_eq!(serde_json::to_value(f.action).unwrap(), f.action.word());
            assert_eq!(Action::parse(f.action.word()), Some(f.action));
        }
        let words: Vec<serde_json::Value> =
            [DiskState::Running, DiskState::Ended, DiskState::Interrupted, DiskState::Unknown]
                .map(|s| serde_json::to_value(s).unwrap())
                .into();
        assert_eq!(words, ["running", "ended", "interrupted", "unknown"]);
        for s in [DiskState::Running, DiskState::Ended, DiskState::Interrupted, DiskState::Unknown] {
            assert_eq!(serde_json::to_value(s).unwrap(), s.word());
        }
    }

    #[test]
    fn a_temporary_files_writer_is_read_from_its_name() {
        assert_eq!(temp_writer(".state.json.tmp-4242-0"), Some(4242));
        assert_eq!(temp_writer(".a.tmp-b.json.tmp-17-3"), Some(17));
        assert_eq!(temp_writer("state.json"), None);
        assert_eq!(temp_writer(".x.tmp-abc-1"), None);
        assert_eq!(temp_writer(".x.tmp-12"), None);
    }
}
