//! Reading one run directory into a [`RunView`], read-only.

use std::fs;
use std::path::Path;

use runboard::runview::files::{self, VERSIONED};
use runboard::runview::view::{read_view, CallView, RunView, ViewInputs};
use runboard::runview::{ProcessCheck, RunVersion};
use serde_json::Value;

use super::fsread::{read_regular, stamp_of, stamp_time, ProcessProbe};

/// The largest JSONL file a view reads whole (the incremental reader lifts this).
const MAX_JSONL: u64 = 1 << 30;

fn read_opt(path: &Path) -> Option<Result<Vec<u8>, String>> {
    let md = fs::metadata(path).ok()?;
    if md.is_file() && md.len() > MAX_JSONL {
        return Some(Err(format!("{} bytes is more than this reader takes", md.len())));
    }
    Some(if md.is_file() { fs::read(path).map_err(|e| e.to_string()) } else { Err("not a regular file".into()) })
}

/// The numbers of the call files in `calls/` (`NNNN.json`).
fn call_numbers(dir: &Path) -> Vec<u32> {
    let Ok(entries) = fs::read_dir(dir.join(files::CALLS_DIR)) else { return Vec::new() };
    let mut n: Vec<u32> =
        entries.flatten().filter_map(|e| e.file_name().to_str()?.strip_suffix(".json")?.parse().ok()).collect();
    n.sort_unstable();
    n
}

/// `(NN, text)` of each `memory/round_NN.md`.
fn memory_versions(dir: &Path) -> Vec<(u32, Result<String, String>)> {
    let Ok(entries) = fs::read_dir(dir.join(files::MEMORY_DIR)) else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n: u32 = name.strip_prefix("round_")?.strip_suffix(".md")?.parse().ok()?;
            let text = read_regular(&e.path()).map(|b| String::from_utf8_lossy(&b).into_owned());
            Some((n, text))
        })
        .collect()
}

pub fn read_run(dir: &Path, name: &str, rel: &str, probe: &ProcessProbe) -> RunView {
    let stamps = VERSIONED.map(|f| stamp_of(&dir.join(f)));
    let snapshot = read_regular(&dir.join(files::SNAPSHOT));
    let state = read_opt(&dir.join(files::STATE));
    let ledger = read_opt(&dir.join(files::LEDGER));
    let events = read_opt(&dir.join(files::EVENTS));
    let inputs = ViewInputs {
        name: name.to_owned(),
        path: rel.to_owned(),
        snapshot: snapshot.as_deref().map_err(Clone::clone),
        state: state.as_ref().map(|r| r.as_deref().map_err(Clone::clone)),
        ledger: ledger.as_ref().map(|r| r.as_deref().map_err(Clone::clone)),
        events: events.as_ref().map(|r| r.as_deref().map_err(Clone::clone)),
        call_files: call_numbers(dir),
        memory: memory_versions(dir),
        state_written: stamps[1].as_ref().map(stamp_time),
        last_call_written: stamps[4].as_ref().map(stamp_time),
        last_written: stamps.iter().flatten().map(stamp_time).max(),
        version: RunVersion::of_files(&stamps).0,
    };
    let check = |host: &str, pid: u32| {
        if host != probe.host {
            ProcessCheck::OtherHost { host: host.to_owned(), pid }
        } else if probe.alive(pid) {
            ProcessCheck::Alive { host: host.to_owned(), pid }
        } else {
            ProcessCheck::Gone { host: host.to_owned(), pid }
        }
    };
    read_view(inputs, &check)
}

pub fn read_call(dir: &Path, n: u32, view: &RunView) -> Result<CallView, String> {
    let path = dir.join(files::CALLS_DIR).join(format!("{n:04}.json"));
    let bytes = read_regular(&path).map_err(|e| format!("calls/{n:04}.json: {e}"))?;
    let record: Value = runboard::json::from_slice_lenient(&bytes)
        .map_err(|e| format!("calls/{n:04}.json: {}", runboard::json::describe_error(&e)))?;
    Ok(CallView { call: n, record, concerned: view.calls.iter().find(|c| c.call == n).cloned() })
}
