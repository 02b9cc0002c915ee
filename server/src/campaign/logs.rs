//! A run set's logs, read while the driver writes them: which there are, and
//! the next chunk of one from the reader's position (`runboard::live::logs` decides
//! what to read; this reads it, inside the root). A systemd unit's own output
//! is in the user journal: read on from a journal cursor.

use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use runboard::api::ApiError;
use runboard::campaign::LauncherKind;
use runboard::live::logs::{
    self, FileId, Found, LogChunk, LogEntry, LogName, LogQuery, LogsView, Part, Plan, Position,
};
use runboard::runsets::{UnitRecord, RUNSETS_DIR};

use super::Campaign;

/// A journal position's token starts with this (a file position's is digits).
const JOURNAL_TOKEN: &str = "journal:";

impl Campaign {
    /// `GET /api/logs/{run_set}`: every process log in its `logs/` folder
    /// (name order), then the log of each unit that drove it.
    pub fn logs(&self, run_set: &str) -> Result<LogsView, ApiError> {
        // A batch refused before it made its folder still has its unit's log:
        // just what its operator needs to read.
        let units = self.units_of(run_set);
        let dir = match self.run_set_dir(run_set) {
            Err(e) if units.is_empty() => return Err(e),
            found => found.unwrap_or_default(),
        };
        let mut logs: Vec<LogEntry> = Vec::new();
        let mut names: Vec<String> = std::fs::read_dir(dir.join("logs"))
            .map(|d| {
                d.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".log").map(str::to_owned)).collect()
            })
            .unwrap_or_default();
        names.sort();
        for name in names.into_iter().filter(|n| logs::parse_name(n).is_some()) {
            let path = dir.join("logs").join(format!("{name}.log"));
            let rotated = self.records.within().open(&logs::rotated_path(&path)).ok().map(|(_, len)| len);
            let Ok((file, bytes)) = self.records.within().open(&path) else { continue };
            logs.push(LogEntry {
                source: format!("{RUNSETS_DIR}/{run_set}/logs/{name}.log"),
                name,
                kind: runboard::live::logs::LogKind::Process,
                bytes: Some(bytes),
                rotated_bytes: rotated,
                modified: modified(&file),
            });
        }
        for unit in units {
            let (source, bytes, modified) = match (unit.backend(), unit.log.as_deref()) {
                (LauncherKind::Systemd, _) | (_, None) => ("journal".to_owned(), None, None),
                (_, Some(rel)) => match self.records.within().open(&self.root.join(rel)) {
                    Ok((file, len)) => (rel.to_owned(), Some(len), modified(&file)),
                    Err(_) => (rel.to_owned(), None, None),
                },
            };
            logs.push(LogEntry {
                name: format!("unit:{}", unit.unit),
                kind: runboard::live::logs::LogKind::Unit,
                source,
                bytes,
                rotated_bytes: None,
                modified,
            });
        }
        Ok(LogsView { run_set: run_set.to_owned(), logs })
    }

    /// `GET /api/logs/{run_set}/{name}?after=`: the next chunk.
    pub fn log(&self, q: &LogQuery) -> Result<LogChunk, ApiError> {
        let name = logs::parse_name(&q.name).ok_or_else(|| {
            ApiError::refused(vec![format!(
                "name {:?}: a process's log (letters, digits, '-', '_', '.'), or unit:<unit>",
                runboard::console::spec::shorten(&q.name)
            )])
        })?;
        let after = q.after.as_deref().map(str::trim).filter(|a| !a.is_empty());
        let chunk = LogChunk { run_set: q.run_set.clone(), name: q.name.clone(), ..Default::default() };
        match name {
            LogName::Process(p) => {
                let dir = self.run_set_dir(&q.run_set)?;
                let path = dir.join("logs").join(format!("{p}.log"));
                let source = format!("{RUNSETS_DIR}/{}/logs/{p}.log", q.run_set);
                self.file_chunk(&path, source, after, chunk)
            }
            LogName::Unit(u) => {
                let Some(unit) = self.units_of(&q.run_set).into_iter().find(|r| r.unit == u) else {
                    self.run_set_dir(&q.run_set)?;
                    return Err(ApiError::not_found(format!("no unit {u:?} drove run set {:?}", q.run_set)));
                };
                match (unit.backend(), unit.log.clone()) {
                    (LauncherKind::Systemd, _) | (_, None) => self.journal_chunk(&unit, after, chunk),
                    (_, Some(rel)) => self.file_chunk(&self.root.join(&rel), rel, after, chunk),
                }
            }
        }
    }

    /// The run set's folder, or why there is none.
    fn run_set_dir(&self, run_set: &str) -> Result<PathBuf, ApiError> {
        self.records
            .run_set(run_set)
            .map(|_| self.root.join(RUNSETS_DIR).join(run_set))
            .ok_or_else(|| ApiError::not_found(format!("no run set {run_set:?} under runsets/")))
    }

    /// The units that drove `run_set` (a resumed batch has several).
    fn units_of(&self, run_set: &str) -> Vec<UnitRecord> {
        self.records.units().iter().filter(|u| u.run_set == run_set).cloned().collect()
    }

    /// The next chunk of a log file and its rotated part.
    fn file_chunk(
        &self,
        path: &Path,
        source: String,
        after: Option<&str>,
        mut chunk: LogChunk,
    ) -> Result<LogChunk, ApiError> {
        let after = match after {
            None => None,
            Some(t) => Some(Position::parse(t).ok_or_else(|| not_a_position(t))?),
        };
        let within = self.records.within();
        let rotated_path = logs::rotated_path(path);
        let current = within.open(path).ok();
        let rotated = within.open(&rotated_path).ok();
        let id = |f: &(std::fs::File, u64)| f.0.metadata().ok().map(|m| (file_id(&m), f.1));
        let found = Found { current: current.as_ref().and_then(id), rotated: rotated.as_ref().and_then(id) };
        chunk.source = source;
        let Plan::Read { part, file, start, end, earlier, from_line, reset } = logs::plan(&found, after) else {
            chunk.missing = true;
            chunk.next = after.map(|p| p.token()).unwrap_or_default();
            return Ok(chunk);
        };
        let (handle, size) = match part {
            Part::Current => current,
            Part::Rotated => rotated,
        }
        .ok_or_else(|| ApiError::not_found("the log went away while it was read".to_owned()))?;
        let bytes =
            read_range(handle, start, end).map_err(|e| ApiError::unreadable(format!("{}: {e}", chunk.source)))?;
        let (skip, take) = logs::usable(&bytes, from_line);
        chunk.text = String::from_utf8_lossy(&bytes[skip..take]).into_owned();
        let next = logs::after_read(&found, part, file, start, take as u64);
        // More is ready now: the rest of this file, or (the rotated part read
        // to its end) the current one.
        chunk.more = if next.file == file { next.offset < size } else { found.current.is_some_and(|(_, s)| s > 0) };
        chunk.next = next.token();
        chunk.earlier = earlier;
        chunk.reset = reset;
        if part == Part::Rotated && found.current.is_none() {
            chunk.source = format!("{}.1", chunk.source);
        }
        Ok(chunk)
    }

    /// The next chunk of a systemd unit's journal: after the cursor given, or
    /// its last 200 lines.
    fn journal_chunk(&self, unit: &UnitRecord, after: Option<&str>, mut chunk: LogChunk) -> Result<LogChunk, ApiError> {
        chunk.source = "journal".into();
        let cursor = match after {
            None => None,
            Some(t) => Some(
                t.strip_prefix(JOURNAL_TOKEN)
                    .filter(|c| !c.is_empty() && c.len() < 512)
                    .ok_or_else(|| not_a_position(t))?,
            ),
        };
        let cfg = self.config()?;
        let mut args = vec![
            format!("--user-unit={}.service", unit.unit),
            "--no-pager".into(),
            "-o".into(),
            "cat".into(),
            "--show-cursor".into(),
        ];
        match cursor {
            Some(c) => args.push(format!("--after-cursor={c}")),
            None => args.extend(["-n".into(), "200".into()]),
        }
        if let Some(dir) = &cfg.launcher.systemd.journal_dir {
            args.extend(["-D".into(), dir.clone()]);
        }
        let out =
            crate::system::command::run_bounded("journalctl", &args, None, super::launcher::systemd::JOURNAL_LIMIT)
                .map_err(|e| ApiError::unreadable(format!("the journal could not be read: journalctl: {e}")))?;
        if !out.status.success() {
            return Err(ApiError::unreadable(format!(
                "the journal could not be read: {}",
                crate::system::command::why("journalctl", &out)
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let mut lines: Vec<&str> = Vec::new();
        let mut next = cursor.map(str::to_owned);
        for line in text.lines() {
            match line.strip_prefix("-- cursor: ") {
                Some(c) => next = Some(c.trim().to_owned()),
                None if line == "-- No entries --" => {}
                None => lines.push(line),
            }
        }
        chunk.text = lines.iter().map(|l| format!("{l}\n")).collect();
        chunk.earlier = cursor.is_none();
        chunk.missing = next.is_none();
        chunk.next = next.map(|c| format!("{JOURNAL_TOKEN}{c}")).unwrap_or_default();
        Ok(chunk)
    }
}

/// The refusal of an `after` this log did not give.
fn not_a_position(after: &str) -> ApiError {
    ApiError::refused(vec![format!("after {after:?}: not a position this log gave (give back a chunk's next)")])
}

/// When an open file was last written, for people.
fn modified(file: &std::fs::File) -> Option<String> {
    let md = file.metadata().ok()?;
    Some(runboard::basics::timefmt::Timestamp((crate::files::fsread::mtime_ns(&md) / 1_000_000) as i64).to_rfc3339())
}

/// Bytes `[start, end)` of an open file (fewer if it is shorter now).
fn read_range(mut file: std::fs::File, start: u64, end: u64) -> std::io::Result<Vec<u8>> {
    file.seek(SeekFrom::Start(start))?;
    let mut bytes = Vec::with_capacity(end.saturating_sub(start) as usize);
    file.take(end.saturating_sub(start)).read_to_end(&mut bytes)?;
    Ok(bytes)
}

/// A file's identity: device, inode and birth time (0 where the filesystem
/// keeps none), so an inode number reused by a later file is told apart.
fn file_id(m: &std::fs::Metadata) -> FileId {
    let born =
        m.created().ok().and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok()).map_or(0, |d| d.as_nanos() as u64);
    FileId { dev: m.dev(), ino: m.ino(), born }
}
