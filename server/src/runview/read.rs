//! Reading one run directory into a [`RunView`], read-only.

use std::fs;
use std::path::Path;

use runboard::runview::acceptance::{self, ReportEntry};
use runboard::runview::files::{self, VERSIONED};
use runboard::runview::ledger::{EventsLog, Incremental, LedgerState};
use runboard::runview::memory::MemoryLog;
use runboard::runview::trialgraph::{self, GraphEntry};
use runboard::runview::view::{read_view, CallView, RunView, ViewInputs};
use runboard::runview::RunVersion;
use serde_json::Value;

use crate::files::fsread::{stamp_of, stamp_time, ProcessProbe, Within};

/// Where a reader stands in one append-only file: its identity, the bytes of
/// complete lines consumed, and what those parsed into. A file replaced (new
/// identity) or shrunk is read again from the start.
pub struct Cursor<S> {
    ident: (u64, u64),
    offset: u64,
    state: S,
}

/// The reading position in a run's growing files, kept between reads.
#[derive(Default)]
pub struct RunCursors {
    ledger: Option<Cursor<LedgerState>>,
    events: Option<Cursor<EventsLog>>,
    /// The memory versions read so far, each read and compared once.
    memory: MemoryLog,
}

impl RunCursors {
    /// How far the growing files have been read, in bytes (both together).
    pub fn offsets(&self) -> u64 {
        self.ledger.as_ref().map_or(0, |c| c.offset) + self.events.as_ref().map_or(0, |c| c.offset)
    }
}

/// Brings `cursor` up to the end of `path`, reading only what was appended.
fn advance<'c, S: Incremental>(
    cursor: &'c mut Option<Cursor<S>>,
    within: &Within,
    path: &Path,
) -> Option<Result<&'c S, String>> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    if fs::symlink_metadata(path).is_err() {
        *cursor = None;
        return None;
    }
    let (mut file, len) = match within.open(path) {
        Ok(f) => f,
        Err(e) => {
            *cursor = None;
            return Some(Err(e.into()));
        }
    };
    let ident = match file.metadata() {
        Ok(md) => (md.dev(), md.ino()),
        Err(e) => return Some(Err(e.to_string())),
    };
    let fresh = match cursor {
        Some(c) => c.ident != ident || len < c.offset,
        None => true,
    };
    if fresh {
        *cursor = Some(Cursor { ident, offset: 0, state: S::default() });
    }
    let c = cursor.as_mut()?;
    if len > c.offset {
        let read = (|| {
            file.seek(SeekFrom::Start(c.offset))?;
            let mut buf = Vec::with_capacity((len - c.offset) as usize);
            file.take(len - c.offset).read_to_end(&mut buf)?;
            Ok::<_, std::io::Error>(buf)
        })();
        match read {
            Ok(buf) => c.offset += c.state.feed(&buf) as u64,
            Err(e) => return Some(Err(e.to_string())),
        }
    }
    Some(Ok(&c.state))
}

/// `Ok` when `dir/sub` is absent or resolves inside the root.
fn confined_folder(within: &Within, dir: &Path, sub: &str) -> Result<(), String> {
    let folder = dir.join(sub);
    if fs::symlink_metadata(&folder).is_err() {
        return Ok(());
    }
    within.check(&folder).map(drop).map_err(String::from)
}

/// The numbers of the call files in `calls/` (`NNNN.json`).
fn call_numbers(dir: &Path) -> Vec<u32> {
    let Ok(entries) = fs::read_dir(dir.join(files::CALLS_DIR)) else { return Vec::new() };
    let mut n: Vec<u32> =
        entries.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok()).collect();
    n.sort_unstable();
    n
}

/// How many call files were modified after the state file (all of them when
/// there is none): for a run without events, the calls of its round in progress.
/// A call file is written whole when its call ends, so its time is the call's end.
fn calls_after(dir: &Path, state: Option<&runboard::runview::FileStamp>) -> u32 {
    let Ok(entries) = fs::read_dir(dir.join(files::CALLS_DIR)) else { return 0 };
    let after_ns = state.map_or(i128::MIN, |s| s.mtime_ns);
    entries
        .flatten()
        .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".json")))
        .filter(|e| stamp_of(&e.path()).is_some_and(|s| s.mtime_ns > after_ns))
        .count() as u32
}

/// A file's contents, or why it could not be read.
type Read<T> = Result<T, String>;

/// A file of a folder: its name, the key its name gave, and its bytes.
type FolderFile<T> = (String, T, Read<Vec<u8>>);

/// Brings the run's memory log up to its `memory/` folder: lists the
/// `round_NN.md` files with their stamps and reads only those that are new or
/// changed. `Err` (the reason) when the folder leads outside the root.
fn refresh_memory(within: &Within, dir: &Path, log: &mut MemoryLog) -> Read<()> {
    let folder = dir.join(files::MEMORY_DIR);
    confined_folder(within, dir, files::MEMORY_DIR)?;
    let listing: Vec<(u32, String)> = {
        let round = |name: &str| name.strip_prefix("round_")?.strip_suffix(".md")?.parse::<u32>().ok();
        fs::read_dir(&folder)
            .map(|entries| {
                entries
                    .flatten()
                    .filter_map(|e| {
                        let n = round(e.file_name().to_str()?)?;
                        // The stamp as a token: identity, size, time. No stamp
                        // (a dangling link), no token: read it every time.
                        let token = stamp_of(&e.path())
                            .map(|s| format!("{}:{}:{}:{}", s.dev, s.ino, s.len, s.mtime_ns))
                            .unwrap_or_default();
                        Some((n, token))
                    })
                    .collect()
            })
            .unwrap_or_default()
    };
    log.refresh(&listing, |n| {
        let path = folder.join(format!("round_{n:02}.md"));
        // The name as listed may have more digits than two (`round_100.md`).
        let path = if path.exists() { path } else { folder.join(format!("round_{n}.md")) };
        within.read(&path).map(|b| String::from_utf8_lossy(&b).into_owned()).map_err(String::from)
    });
    Ok(())
}

/// Brings the cursors of the run in `dir` up to date, reading only what its
/// ledger and events gained since the last call; returns the bytes read.
pub fn refresh(within: &Within, dir: &Path, cursors: &mut RunCursors) -> u64 {
    let before = cursors.ledger.as_ref().map_or(0, |c| c.offset) + cursors.events.as_ref().map_or(0, |c| c.offset);
    let _ = advance(&mut cursors.ledger, within, &dir.join(files::LEDGER));
    let _ = advance(&mut cursors.events, within, &dir.join(files::EVENTS));
    let after = cursors.ledger.as_ref().map_or(0, |c| c.offset) + cursors.events.as_ref().map_or(0, |c| c.offset);
    after.saturating_sub(before)
}

/// Reads the run in `dir` (`RunView::read`); `cursors` carries the reading
/// position in its growing files from the previous read of the same run. Every
/// file read must resolve inside `within`'s root; one that does not is that
/// part's problem.
pub fn read_run(
    within: &Within,
    dir: &Path,
    name: &str,
    rel: &str,
    probe: &ProcessProbe,
    cursors: &mut RunCursors,
) -> RunView {
    let stamps = VERSIONED.map(|f| stamp_of(&dir.join(f)));
    let snapshot = within.read(&dir.join(files::SNAPSHOT));
    let state = within.read_opt(&dir.join(files::STATE));
    let ledger = advance(&mut cursors.ledger, within, &dir.join(files::LEDGER));
    let events = advance(&mut cursors.events, within, &dir.join(files::EVENTS));
    let has_events = events.is_some();
    let call_files_after_state = (!has_events).then(|| calls_after(dir, stamps[1].as_ref()));
    let mut folder_problems = Vec::new();
    if let Err(reason) = refresh_memory(within, dir, &mut cursors.memory) {
        folder_problems.push((format!("{}/", files::MEMORY_DIR), reason));
        cursors.memory = MemoryLog::default();
    }
    // The call files are only counted and named here; each is read (confined)
    // when asked for. A calls folder leading out is not counted.
    if let Err(reason) = confined_folder(within, dir, files::CALLS_DIR) {
        folder_problems.push((format!("{}/", files::CALLS_DIR), reason));
    }
    let inputs = ViewInputs {
        name: name.to_owned(),
        path: rel.to_owned(),
        snapshot: snapshot.as_deref().map_err(ToString::to_string),
        state: state.as_ref().map(|r| r.as_deref().map_err(ToString::to_string)),
        ledger,
        events,
        call_files_after_state,
        // Only a run without events counts its calls from the files (listing a
        // folder of thousands of calls on every read would cost O(calls)).
        call_files: if !has_events && confined_folder(within, dir, files::CALLS_DIR).is_ok() {
            call_numbers(dir)
        } else {
            Vec::new()
        },
        memory: &cursors.memory,
        folder_problems,
        state_written: stamps[1].as_ref().map(stamp_time),
        last_call_written: stamps[4].as_ref().map(stamp_time),
        last_written: stamps.iter().flatten().map(stamp_time).max(),
        version: RunVersion::of_files(&stamps).0,
    };
    read_view(inputs, &|host, pid| probe.check(host, pid))
}

/// Reads call `n` by the number of its file; what it concerned comes from the view's events.
pub fn read_call(within: &Within, dir: &Path, n: u32, view: &RunView) -> Result<CallView, String> {
    let path = dir.join(files::CALLS_DIR).join(format!("{n:04}.json"));
    let bytes = within.read(&path).map_err(|e| format!("calls/{n:04}.json: {e}"))?;
    let record: Value = runboard::basics::json::from_slice_lenient(&bytes)
        .map_err(|e| format!("calls/{n:04}.json: {}", runboard::basics::json::describe_error(&e)))?;
    Ok(CallView { call: n, record, concerned: view.calls.iter().find(|c| c.call == n).cloned() })
}

/// The regular files in `dir/sub` whose names `keep` accepts, sorted by name, each
/// read whole (or the reason it could not be). A folder that leads outside the
/// root is not listed (`Err` with the reason): its names are not the campaign's
/// to show, and each of its files would be refused anyway.
fn read_folder<T>(
    within: &Within,
    dir: &Path,
    sub: &str,
    keep: impl Fn(&str) -> Option<T>,
) -> Read<Vec<FolderFile<T>>> {
    confined_folder(within, dir, sub)?;
    let Ok(entries) = fs::read_dir(dir.join(sub)) else { return Ok(Vec::new()) };
    let mut out: Vec<FolderFile<T>> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let key = keep(&name)?;
            let bytes = within.read(&e.path()).map_err(String::from);
            Some((name, key, bytes))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(out)
}

/// The run's acceptance and hold-out reports (`acceptance/*.json`), each read or
/// with the reason it cannot be.
pub fn read_reports(within: &Within, dir: &Path) -> Vec<ReportEntry> {
    let found = match read_folder(within, dir, files::ACCEPTANCE_DIR, |name| name.ends_with(".json").then_some(())) {
        Ok(found) => found,
        Err(reason) => return vec![ReportEntry::Unreadable { file: format!("{}/", files::ACCEPTANCE_DIR), reason }],
    };
    found
        .into_iter()
        .map(|(name, (), bytes)| match bytes {
            Ok(b) => acceptance::parse(&name, &b),
            Err(reason) => ReportEntry::Unreadable { file: name, reason },
        })
        .collect()
}

/// The run's trial graphs (`trial_graph/round_NN.json`), in round order.
pub fn read_trial_graphs(within: &Within, dir: &Path) -> Vec<GraphEntry> {
    let found = match read_folder(within, dir, files::TRIAL_GRAPH_DIR, trialgraph::round_of_file) {
        Ok(found) => found,
        Err(reason) => {
            return vec![GraphEntry::Unreadable { file: format!("{}/", files::TRIAL_GRAPH_DIR), round: 0, reason }]
        }
    };
    let mut graphs: Vec<GraphEntry> = found
        .into_iter()
        .map(|(file, round, bytes)| GraphEntry::read(&file, round, bytes.as_deref().map_err(Clone::clone)))
        .collect();
    // By number: `round_100` sorts before `round_99` by name.
    graphs.sort_by_key(GraphEntry::round);
    graphs
}
