//! The parse cache and the list-cache file: what was parsed of each run
//! (snapshot, state, events tail), valid while its files' stamps match, kept
//! between server starts in one file of the data folder; and a run's row
//! made from it. (The theory of operation is the parent module's.)

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use runboard::basics::json::{describe_error, from_slice_lenient};
use runboard::runview::files::{self, VERSIONED};
use runboard::runview::jsonl::tail_lines;
use runboard::runview::records::{Snapshot, StateFile};
use runboard::runview::summary::EventsTail;
use runboard::runview::{summarise, FileStamp, ListInputs, ProcessCheck, RunRow, RunVersion};

use crate::files::fsread::{read_tail, stamp_time};

use super::lister::list_of;
use super::*;

/// The first chunk read from the end of an events file; doubled until the latest
/// open is found or the file's start is reached.
pub(super) const EVENTS_TAIL_CHUNK: u64 = 16 << 10;

/// What was parsed of one run, valid while its files' stamps are unchanged.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub(super) struct Parsed {
    pub(super) stamps: [Option<FileStamp>; VERSIONED.len()],
    pub(super) snapshot: Result<Snapshot, String>,
    pub(super) state: Option<Result<StateFile, String>>,
    pub(super) events: Option<Result<EventsTail, String>>,
}

/// The list cache file: what was parsed of each run, by its path under the
/// root, with the stamps it was parsed at. A server started again stats every
/// run (as always) but opens only the files that changed since; on a cold disk
/// that is most of a first list's time. Stale or foreign entries cost nothing:
/// an entry is used only while its stamps (size, time, device, inode) match.
#[derive(serde::Serialize, serde::Deserialize)]
pub(super) struct ListCacheFile {
    pub(super) schema_version: u32,
    /// The version that wrote it; another version's file is not read (the
    /// parsed shapes may differ; `LIST_CACHE_SCHEMA` changes with them).
    pub(super) runboard: String,
    pub(super) root: String,
    pub(super) runs: Vec<(String, Parsed)>,
}

pub(super) const LIST_CACHE_SCHEMA: u32 = 1;

/// The largest list cache read back (~0.8 KiB a run: a million runs).
pub(super) const LIST_CACHE_MAX: u64 = 1 << 30;

impl RunIndex {
    /// The parsed runs a list cache file holds for this root (empty when none).
    pub(super) fn load_list_cache(&self) -> HashMap<PathBuf, Parsed> {
        let Some(file) = &self.list_cache else { return HashMap::new() };
        let bytes = match crate::files::fsread::read_regular_up_to(file, LIST_CACHE_MAX) {
            Ok(b) => b,
            Err(e) => {
                if file.exists() {
                    tracing::warn!("list cache {}: not read: {e}", file.display());
                }
                return HashMap::new();
            }
        };
        match serde_json::from_slice::<ListCacheFile>(&bytes) {
            Ok(c)
                if c.schema_version == LIST_CACHE_SCHEMA
                    && c.runboard == env!("CARGO_PKG_VERSION")
                    && c.root == self.root.to_string_lossy() =>
            {
                c.runs.into_iter().map(|(rel, p)| (self.root.join(rel), p)).collect()
            }
            Ok(_) => HashMap::new(),
            Err(e) => {
                tracing::warn!("list cache {}: not read: {e}", file.display());
                HashMap::new()
            }
        }
    }

    /// Writes the list cache in the background (atomically: a reader sees the
    /// old file or the new one).
    pub(super) fn save_list_cache(&self, parsed: &HashMap<PathBuf, Parsed>) {
        let Some(file) = self.list_cache.clone() else { return };
        let runs: Vec<(String, Parsed)> = parsed.iter().map(|(d, p)| (self.relative(d), p.clone())).collect();
        let root = self.root.to_string_lossy().into_owned();
        let mut saving = self.list_cache_saving.lock().unwrap_or_else(|p| p.into_inner());
        let previous = saving.take();
        *saving = Some(std::thread::spawn(move || {
            if let Some(p) = previous {
                let _ = p.join();
            }
            let doc = ListCacheFile {
                schema_version: LIST_CACHE_SCHEMA,
                runboard: env!("CARGO_PKG_VERSION").into(),
                root,
                runs,
            };
            let written = serde_json::to_vec(&doc).map_err(std::io::Error::other).and_then(|bytes| {
                // The data folder is its user's alone: the cache lists every
                // run's path and what its snapshot says.
                if let Some(dir) = file.parent() {
                    crate::files::atomic::create_private_dir(dir)?;
                }
                crate::files::atomic::write_atomic(&file, &bytes)
            });
            if let Err(e) = written {
                tracing::warn!("list cache {}: not written: {e}", file.display());
            }
        }));
    }

    /// Waits until the list cache's saves in progress are written.
    pub fn flush_list_cache(&self) {
        let saving = self.list_cache_saving.lock().unwrap_or_else(|p| p.into_inner()).take();
        if let Some(s) = saving {
            let _ = s.join();
        }
    }

    /// `keep_current`'s first step: reads the list cache and answers lists
    /// from it (`from_cache` set) until the walk that checks it ends; whether
    /// it held anything.
    pub fn answer_from_cache(&self) -> bool {
        let Some(file) = &self.list_cache else { return false };
        let began = Instant::now();
        self.set_start(StartList::ReadingCache);
        let mut cache = lock(&self.cache);
        if cache.is_empty() && !self.list_cache_loaded.swap(true, Ordering::Relaxed) {
            *cache = self.load_list_cache();
        }
        if cache.is_empty() {
            drop(cache);
            self.set_start(StartList::AsAlways);
            return false;
        }
        let entries: Vec<(&PathBuf, &Parsed)> = cache.iter().collect();
        let rows = par_io_map(&entries, |(d, p)| self.row(d, p));
        drop(entries);
        drop(cache);
        let saved = std::fs::metadata(file).ok().map(|md| stamp_time(&crate::files::fsread::stamp_of_metadata(&md)));
        let list = list_of(rows, Vec::new(), Some(saved.unwrap_or_else(crate::system::clock::now)));
        tracing::info!(
            "run list: {} runs answered from the list cache, read in {:.2} s",
            list.runs.len(),
            began.elapsed().as_secs_f64()
        );
        self.set_start(StartList::Answer(Arc::new(list)));
        true
    }

    pub(super) fn parse(&self, dir: &Path, stamps: [Option<FileStamp>; VERSIONED.len()]) -> Parsed {
        let snapshot = self.parse_json::<Snapshot>(&dir.join(files::SNAPSHOT), files::SNAPSHOT);
        let state = stamps[1].map(|_| self.parse_json::<StateFile>(&dir.join(files::STATE), files::STATE));
        let events = stamps[3].map(|_| self.events_tail(&dir.join(files::EVENTS)));
        Parsed { stamps, snapshot, state, events }
    }

    pub(super) fn parse_json<T: serde::de::DeserializeOwned>(&self, path: &Path, label: &str) -> Result<T, String> {
        self.parses.fetch_add(1, Ordering::Relaxed);
        let bytes = self.within.read(path).map_err(|e| format!("{label}: {e}"))?;
        from_slice_lenient(&bytes).map_err(|e| format!("{label}: {}", describe_error(&e)))
    }

    /// Reads the events file from its end back to its latest open.
    pub(super) fn events_tail(&self, path: &Path) -> Result<EventsTail, String> {
        self.parses.fetch_add(1, Ordering::Relaxed);
        let (mut file, len) = self.within.open(path).map_err(|e| format!("{}: {e}", files::EVENTS))?;
        let mut chunk = EVENTS_TAIL_CHUNK;
        loop {
            let (bytes, start) = read_tail(&mut file, len, chunk).map_err(|e| format!("{}: {e}", files::EVENTS))?;
            let tail = EventsTail::from_lines(tail_lines(&bytes, start));
            if tail.last_open.is_some() || start == 0 {
                return Ok(tail);
            }
            chunk = chunk.saturating_mul(4);
        }
    }

    pub(super) fn row(&self, dir: &Path, parsed: &Parsed) -> RunRow {
        let stamps = &parsed.stamps;
        let (events, events_err) = match &parsed.events {
            None => (None, None),
            Some(Ok(t)) => (Some(t.clone()), None),
            // An unreadable events file degrades to "no events" plus its reason.
            Some(Err(e)) => (Some(EventsTail::default()), Some(e.clone())),
        };
        let process = match events.as_ref().and_then(|e| e.last_open.as_ref()).map(|o| (o.host.as_deref(), o.pid)) {
            Some((Some(host), Some(pid))) => self.probe.check(host, pid),
            _ => ProcessCheck::NotRecorded,
        };
        let inputs = ListInputs {
            name: dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(),
            path: self.relative(dir),
            snapshot: parsed.snapshot.clone(),
            state: parsed.state.clone(),
            state_written: stamps[1].as_ref().map(stamp_time),
            events,
            // The calls folder's time changes when a call file is added (a call
            // file is written whole when its call ends).
            last_call_written: stamps[4].as_ref().map(stamp_time),
            process,
            last_written: stamps.iter().flatten().map(stamp_time).max(),
            version: RunVersion::of_files(stamps).0,
        };
        let mut row = summarise(inputs);
        if let Some(reason) = events_err {
            row.status_text = format!("{} (events unreadable: {reason})", row.status_text);
        }
        row
    }
}
