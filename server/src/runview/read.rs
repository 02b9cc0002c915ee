//! Reading one run directory into a [`RunView`], read-only.

use std::fs;
use std::path::Path;

use runboard::runview::acceptance::{self, ReportEntry};
use runboard::runview::files::{self, VERSIONED};
use runboard::runview::ledger::{EventsLog, Incremental, LedgerState};
use runboard::runview::trialgraph::{self, GraphEntry};
use runboard::runview::view::{read_view, CallView, RunView, ViewInputs};
use runboard::runview::RunVersion;
use serde_json::Value;

use super::fsread::{read_regular, stamp_of, stamp_time, ProcessProbe};

fn read_opt(path: &Path) -> Option<Result<Vec<u8>, String>> {
    fs::metadata(path).ok()?;
    Some(read_regular(path))
}

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
}

/// Brings `cursor` up to the end of `path`, reading only what was appended.
fn advance<'c, S: Incremental>(cursor: &'c mut Option<Cursor<S>>, path: &Path) -> Option<Result<&'c S, String>> {
    use std::io::{Read, Seek, SeekFrom};
    use std::os::unix::fs::MetadataExt;
    let Ok(md) = fs::metadata(path) else {
        *cursor = None;
        return None;
    };
    if !md.is_file() {
        *cursor = None;
        return Some(Err("not a regular file".into()));
    }
    let ident = (md.dev(), md.ino());
    let fresh = match cursor {
        Some(c) => c.ident != ident || md.len() < c.offset,
        None => true,
    };
    if fresh {
        *cursor = Some(Cursor { ident, offset: 0, state: S::default() });
    }
    let c = cursor.as_mut()?;
    if md.len() > c.offset {
        let read = (|| {
            let mut f = fs::File::open(path)?;
            f.seek(SeekFrom::Start(c.offset))?;
            let mut buf = Vec::with_capacity((md.len() - c.offset) as usize);
            f.take(md.len() - c.offset).read_to_end(&mut buf)?;
            Ok::<_, std::io::Error>(buf)
        })();
        match read {
            Ok(buf) => c.offset += c.state.feed(&buf) as u64,
            Err(e) => return Some(Err(e.to_string())),
        }
    }
    Some(Ok(&c.state))
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

/// `(NN, text)` of each `memory/round_NN.md`.
fn memory_versions(dir: &Path) -> Vec<(u32, Result<String, String>)> {
    let round = |name: &str| name.strip_prefix("round_")?.strip_suffix(".md")?.parse().ok();
    read_folder(dir, files::MEMORY_DIR, round)
        .into_iter()
        .map(|(_, n, bytes)| (n, bytes.map(|b| String::from_utf8_lossy(&b).into_owned())))
        .collect()
}

/// Brings the cursors of the run in `dir` up to date, reading only what its
/// ledger and events gained since the last call; returns the bytes read.
pub fn refresh(dir: &Path, cursors: &mut RunCursors) -> u64 {
    let before = cursors.ledger.as_ref().map_or(0, |c| c.offset) + cursors.events.as_ref().map_or(0, |c| c.offset);
    let _ = advance(&mut cursors.ledger, &dir.join(files::LEDGER));
    let _ = advance(&mut cursors.events, &dir.join(files::EVENTS));
    let after = cursors.ledger.as_ref().map_or(0, |c| c.offset) + cursors.events.as_ref().map_or(0, |c| c.offset);
    after.saturating_sub(before)
}

/// Reads the run in `dir` (seed: `RunView.read`); `cursors` carries the reading
/// position in its growing files from the previous read of the same run.
pub fn read_run(dir: &Path, name: &str, rel: &str, probe: &ProcessProbe, cursors: &mut RunCursors) -> RunView {
    let stamps = VERSIONED.map(|f| stamp_of(&dir.join(f)));
    let snapshot = read_regular(&dir.join(files::SNAPSHOT));
    let state = read_opt(&dir.join(files::STATE));
    let ledger = advance(&mut cursors.ledger, &dir.join(files::LEDGER));
    let events = advance(&mut cursors.events, &dir.join(files::EVENTS));
    let call_files_after_state = events.is_none().then(|| calls_after(dir, stamps[1].as_ref()));
    let inputs = ViewInputs {
        name: name.to_owned(),
        path: rel.to_owned(),
        snapshot: snapshot.as_deref().map_err(Clone::clone),
        state: state.as_ref().map(|r| r.as_deref().map_err(Clone::clone)),
        ledger,
        events,
        call_files_after_state,
        call_files: call_numbers(dir),
        memory: memory_versions(dir),
        state_written: stamps[1].as_ref().map(stamp_time),
        last_call_written: stamps[4].as_ref().map(stamp_time),
        last_written: stamps.iter().flatten().map(stamp_time).max(),
        version: RunVersion::of_files(&stamps).0,
    };
    read_view(inputs, &|host, pid| probe.check(host, pid))
}

/// Reads call `n` by the number of its file; what it concerned comes from the view's events.
pub fn read_call(dir: &Path, n: u32, view: &RunView) -> Result<CallView, String> {
    let path = dir.join(files::CALLS_DIR).join(format!("{n:04}.json"));
    let bytes = read_regular(&path).map_err(|e| format!("calls/{n:04}.json: {e}"))?;
    let record: Value = runboard::json::from_slice_lenient(&bytes)
        .map_err(|e| format!("calls/{n:04}.json: {}", runboard::json::describe_error(&e)))?;
    Ok(CallView { call: n, record, concerned: view.calls.iter().find(|c| c.call == n).cloned() })
}

/// The regular files in `dir/sub` whose names `keep` accepts, sorted by name, each
/// read whole (or the reason it could not be).
fn read_folder<T>(
    dir: &Path,
    sub: &str,
    keep: impl Fn(&str) -> Option<T>,
) -> Vec<(String, T, Result<Vec<u8>, String>)> {
    let Ok(entries) = fs::read_dir(dir.join(sub)) else { return Vec::new() };
    let mut out: Vec<(String, T, Result<Vec<u8>, String>)> = entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let key = keep(&name)?;
            let bytes = read_regular(&e.path());
            Some((name, key, bytes))
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}

/// The run's acceptance and hold-out reports (`acceptance/*.json`), each read or
/// with the reason it cannot be.
pub fn read_reports(dir: &Path) -> Vec<ReportEntry> {
    read_folder(dir, files::ACCEPTANCE_DIR, |name| name.ends_with(".json").then_some(()))
        .into_iter()
        .map(|(name, (), bytes)| match bytes {
            Ok(b) => acceptance::parse(&name, &b),
            Err(reason) => ReportEntry::Unreadable { file: name, reason },
        })
        .collect()
}

/// The run's trial graphs (`trial_graph/round_NN.json`), in round order.
pub fn read_trial_graphs(dir: &Path) -> Vec<GraphEntry> {
    let mut graphs: Vec<GraphEntry> = read_folder(dir, files::TRIAL_GRAPH_DIR, trialgraph::round_of_file)
        .into_iter()
        .map(|(file, round, bytes)| GraphEntry::read(&file, round, bytes.as_deref().map_err(Clone::clone)))
        .collect();
    // By number: `round_100` sorts before `round_99` by name.
    graphs.sort_by_key(GraphEntry::round);
    graphs
}
