//! The readers: each viewed run's reading state (cursors into its growing
//! files, its last view), at most `READERS_HELD` runs, least recently used
//! dropped; each under a lock of its own. (The theory of operation is the
//! parent module's.)

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use runboard::runview::view::RunView;
use runboard::runview::ProcessCheck;

use super::*;

/// How many runs' reading state (cursors, parsed rounds, the latest view) is
/// kept at once by default; the least recently used is dropped beyond it.
pub const READERS_HELD: usize = 64;

/// One run's reading state: where its growing files were read up to, and the
/// view made at the version it was made at. Locked on its own, so reading one
/// run never waits for another.
#[derive(Default)]
pub(super) struct RunReader {
    pub(super) cursors: crate::runview::read::RunCursors,
    /// The view, the run's version when it was made, and what was known then of
    /// the process that opened the run (its death changes the view, not a file).
    pub(super) view: Option<(String, Arc<RunView>)>,
    /// Bytes of the growing files read so far (a figure for the debug endpoint).
    pub(super) bytes_read: u64,
}

/// The runs whose reading state is held, least recently used first.
#[derive(Default)]
pub(super) struct Readers {
    pub(super) held: Vec<(PathBuf, Arc<Mutex<RunReader>>)>,
    pub(super) evictions: u64,
}

/// What the reader cache holds (the debug endpoint's answer).
#[derive(Debug, Clone, serde::Serialize)]
pub struct ReaderStats {
    /// Runs whose reading state is held, most recently used last.
    pub held: Vec<HeldRun>,
    pub limit: usize,
    /// Runs dropped from the cache since the server started.
    pub evictions: u64,
    /// Views made from files (a cache miss each) and answered from the cache.
    pub views_read: u64,
    pub views_cached: u64,
}

#[derive(Debug, Clone, serde::Serialize)]
pub struct HeldRun {
    pub path: String,
    pub bytes_read: u64,
    pub version: Option<String>,
}

impl RunIndex {
    /// Holds at most `limit` runs' reading state (at least 1).
    pub fn with_readers_limit(mut self, limit: usize) -> Self {
        self.readers_limit = limit.max(1);
        self
    }

    /// The reading state of the run in `dir`, made most recently used; the
    /// least recently used beyond the limit is dropped (and logged).
    pub(super) fn reader(&self, dir: &Path) -> Arc<Mutex<RunReader>> {
        let mut r = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        let entry = match r.held.iter().position(|(d, _)| d == dir) {
            Some(i) => r.held.remove(i).1,
            None => Arc::default(),
        };
        r.held.push((dir.to_path_buf(), entry.clone()));
        while r.held.len() > self.readers_limit {
            let (gone, _) = r.held.remove(0);
            r.evictions += 1;
            tracing::info!("reader cache: dropped {} (limit {} runs)", self.relative(&gone), self.readers_limit);
        }
        entry
    }

    /// The whole view of the run `name` (`RunView::read`): the cached one while
    /// the run's version and its process's liveness are unchanged, else read
    /// again from where its growing files were read up to. Only this run's
    /// reader is locked meanwhile.
    pub fn view(&self, name: &str) -> Option<(PathBuf, Arc<RunView>)> {
        let dir = self.find(name)?;
        let version = version_of(&dir);
        let reader = self.reader(&dir);
        let mut reader = reader.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((v, view)) = &reader.view {
            if *v == version && self.process_unchanged(&view.row.process) {
                self.views_cached.fetch_add(1, Ordering::Relaxed);
                return Some((dir, view.clone()));
            }
        }
        let folder = dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let rel = self.relative(&dir);
        let before = reader.cursors.offsets();
        let view =
            Arc::new(crate::runview::read_run(&self.within, &dir, &folder, &rel, &self.probe, &mut reader.cursors));
        reader.bytes_read += reader.cursors.offsets().saturating_sub(before);
        self.views_read.fetch_add(1, Ordering::Relaxed);
        // Keyed by the version taken before the files were read: a write during
        // the read shows as a newer version next time, never as a stale hit.
        reader.view = Some((version, view.clone()));
        Some((dir, view))
    }

    /// Whether what the view says of the run's process still holds.
    pub(super) fn process_unchanged(&self, shown: &ProcessCheck) -> bool {
        match shown {
            ProcessCheck::Alive { host, pid } | ProcessCheck::Gone { host, pid } => {
                self.probe.check(host, *pid) == *shown
            }
            ProcessCheck::NotRecorded | ProcessCheck::OtherHost { .. } => true,
        }
    }

    /// What the reader cache holds now.
    pub fn reader_stats(&self) -> ReaderStats {
        let r = self.readers.lock().unwrap_or_else(|p| p.into_inner());
        let held = r
            .held
            .iter()
            .map(|(dir, entry)| {
                // Never wait on a run being read: its figures are then unknown.
                let (bytes_read, version) = match entry.try_lock() {
                    Ok(e) => (e.bytes_read, e.view.as_ref().map(|(v, _)| v.clone())),
                    Err(_) => (0, None),
                };
                HeldRun { path: self.relative(dir), bytes_read, version }
            })
            .collect();
        ReaderStats {
            held,
            limit: self.readers_limit,
            evictions: r.evictions,
            views_read: self.views_read.load(Ordering::Relaxed),
            views_cached: self.views_cached.load(Ordering::Relaxed),
        }
    }
}
