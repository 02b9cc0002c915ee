//! The run index: `list_runs`, `find_run`, `run_version` and each run's
//! view over a campaign root — the most concurrent part of the server (every
//! page's poll, every version stream, the run list's thread of `serve`).
//!
//! # Theory of operation
//!
//! **What it keeps.** Three caches, each valid only while the files it was
//! made from are unchanged:
//!
//! - the *parse cache* (`cache`): what was parsed of each run's snapshot,
//!   state and events tail, keyed by run directory, valid while the files'
//!   stamps (size, modification time, device, inode) match; kept between
//!   server starts in the *list cache file* (`list_cache`, written by one
//!   background save at a time, `list_cache_saving`), so a restarted server
//!   opens only the files that changed;
//! - the *listing* (`listing`): the list's rows and each run's version as
//!   last made, and the list itself (`made`) shared while nothing changed —
//!   kept current by the file-system watch of the root (`watch`: the runs it
//!   saw change are read again, anything else walks the root);
//! - the *readers* (`readers`): each viewed run's reading state (where its
//!   growing files were read up to, and its last view), at most
//!   [`READERS_HELD`] runs, least recently used dropped; each run's state
//!   under a lock of its own, so reading one run never waits for another.
//!
//! **Who walks.** A whole walk of the root (seconds at 100,000 runs) is made
//! by one caller at a time, holding `walking`; a look that finds a walk
//! under way answers what was made before it instead of waiting
//! (`turn`, `walk_under_way`). While a server starts (`keep_current`, on the
//! run list's thread) lists are answered from the list cache file
//! (`start`: `ReadingCache` → `Answer`, waited on through `start_ready`)
//! until the first walk has checked every run and the watch is set; from
//! then on that thread makes the safety net's walk (every
//! `watch::RESCAN_EVERY`, when someone looked since) ahead of the next look.
//!
//! **Locks, and their order.** A thread holding one of these takes only
//! those after it, never one before:
//!
//! 1. `walking` — the turn to walk the root or update the listing;
//! 2. `listing` — the rows, versions and the list as made;
//! 3. `cache` — the parse cache (taken under `listing` when a watched change
//!    is read again);
//!
//! and, apart from that chain, `readers` (released before the run's own
//! `RunReader` lock is taken: `reader` hands out the run's `Arc`), and the
//! leaves, under which nothing else is taken: `start` (with its condition
//! variable), `looked`, `found`, `list_cache_saving`. The atomics are
//! figures (`parses`, `walks`, `views_*`) or flags read without a lock
//! (`walk_under_way`, `kept`, `list_cache_loaded`, `watch_tried`). A
//! poisoned lock is taken as it is (`lock`), so one request that panicked
//! does not stop every later one.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use runboard::runview::files::{self, VERSIONED};
use runboard::runview::{FileStamp, RunVersion, SkippedFolder};

use crate::files::fsread::{stamp_of, ProcessProbe, Within};

mod cache;
mod lister;
mod readers;

use cache::Parsed;
use lister::{Listing, StartList};
use readers::Readers;
pub use readers::READERS_HELD;

/// How deep below the root the scan looks for run directories.
const MAX_DEPTH: usize = 12;

/// The runs under one campaign root, with parsed files cached by file identity,
/// size and modification time.
pub struct RunIndex {
    root: PathBuf,
    /// Every file read resolves inside the root.
    within: Within,
    probe: ProcessProbe,
    cache: Mutex<HashMap<PathBuf, Parsed>>,
    parses: AtomicU64,
    /// The reading state of the runs whose views were read, bounded (LRU).
    readers: Mutex<Readers>,
    readers_limit: usize,
    views_read: AtomicU64,
    views_cached: AtomicU64,
    /// Run directories already found by name: a run page polls its run's version
    /// every second, and walking the whole root for each poll would cost a tree
    /// walk per open page per second.
    found: Mutex<HashMap<String, PathBuf>>,
    /// The root's file-system watch, when the index keeps itself current by it
    /// (`watched`); set up in the background (10,000 runs take a second or
    /// more), every list walks until it is there, or if it cannot be.
    watch: Arc<std::sync::OnceLock<Arc<super::watch::TreeWatch>>>,
    /// What the last list and version found, kept current from the watch.
    listing: Mutex<Listing>,
    /// Full walks made (a figure for tests and benches).
    walks: AtomicU64,
    /// Where what was parsed is kept between server starts (`with_list_cache`).
    list_cache: Option<PathBuf>,
    list_cache_loaded: std::sync::atomic::AtomicBool,
    /// The list cache's save in progress: saves happen one after another.
    list_cache_saving: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// What lists and versions answer while a server's start is under way
    /// (see [`RunIndex::keep_current`]).
    start: Mutex<StartList>,
    start_ready: std::sync::Condvar,
    /// Held by the one walk of the root at a time (a list's, a version's, the
    /// upkeep loop's): a look that finds it held answers what was made last
    /// instead of waiting a walk's time (seconds at 100,000 runs).
    walking: Mutex<()>,
    /// A whole walk is under way now (not a quick update of what it found).
    walk_under_way: std::sync::atomic::AtomicBool,
    /// The watch's set-up has been tried (it is in `watch` if it worked).
    watch_tried: Arc<std::sync::atomic::AtomicBool>,
    /// `keep_current` makes the safety net's walks (a look then never walks
    /// only because the last walk is old).
    kept: std::sync::atomic::AtomicBool,
    /// When a list or version was last asked for.
    looked: Mutex<Option<Instant>>,
}

impl RunIndex {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self::with_probe(root, ProcessProbe::this_host())
    }

    pub fn with_probe(root: impl Into<PathBuf>, probe: ProcessProbe) -> Self {
        let root = root.into();
        Self {
            within: Within::new(&root),
            root,
            probe,
            cache: Mutex::new(HashMap::new()),
            parses: AtomicU64::new(0),
            readers: Mutex::new(Readers::default()),
            readers_limit: READERS_HELD,
            views_read: AtomicU64::new(0),
            views_cached: AtomicU64::new(0),
            found: Mutex::new(HashMap::new()),
            watch: Arc::default(),
            listing: Mutex::new(Listing::default()),
            walks: AtomicU64::new(0),
            list_cache: None,
            list_cache_loaded: std::sync::atomic::AtomicBool::new(false),
            list_cache_saving: Mutex::new(None),
            start: Mutex::new(StartList::AsAlways),
            start_ready: std::sync::Condvar::new(),
            walking: Mutex::new(()),
            walk_under_way: Default::default(),
            watch_tried: Default::default(),
            kept: Default::default(),
            looked: Mutex::new(None),
        }
    }

    /// Keeps what was parsed for the list in `file` between starts (see
    /// `ListCacheFile`). A file that is missing, damaged or from another
    /// version is ignored; one that cannot be written costs only the speed-up.
    pub fn with_list_cache(mut self, file: impl Into<PathBuf>) -> Self {
        self.list_cache = Some(file.into());
        self
    }

    /// Keeps the list current from a file-system watch of the root: a list or
    /// version call then re-reads only the runs that changed (see `watch`).
    /// Without a watch (it could not be set up) every call walks, as before.
    pub fn watched(self) -> Self {
        let (slot, root, tried) = (self.watch.clone(), self.root.clone(), self.watch_tried.clone());
        std::thread::spawn(move || {
            if let Some(w) = super::watch::TreeWatch::start(&root) {
                let _ = slot.set(Arc::new(w));
            }
            tried.store(true, Ordering::SeqCst);
        });
        self
    }

    /// Whether the watch is set up (tests wait for it).
    pub fn is_watching(&self) -> bool {
        self.watch.get().is_some_and(|w| w.settled())
    }

    /// How many full walks of the root lists and versions have made.
    pub fn walks(&self) -> u64 {
        self.walks.load(Ordering::Relaxed)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The confinement every read of this campaign goes through.
    pub fn within(&self) -> &Within {
        &self.within
    }

    /// How many files have been parsed since this index was made (the warm-list
    /// benchmark and tests check that an unchanged tree parses none).
    pub fn files_parsed(&self) -> u64 {
        self.parses.load(Ordering::Relaxed)
    }

    /// The run directory the list names `name` (its folder name, or its path
    /// relative to the root); `None` when it names none so (`find_run`).
    ///
    /// A name found before is looked up again only while its directory still
    /// holds a snapshot; otherwise the root is walked.
    pub fn find(&self, name: &str) -> Option<PathBuf> {
        let mut found = self.found.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(dir) = found.get(name) {
            if dir.join(files::SNAPSHOT).symlink_metadata().is_ok() {
                return Some(dir.clone());
            }
            found.remove(name);
        }
        drop(found);
        let (dirs, _) = find_run_dirs(&self.root);
        let by_path = dirs.iter().find(|d| self.relative(d) == name);
        let dir = by_path.or_else(|| dirs.iter().find(|d| d.file_name().is_some_and(|n| n == name))).cloned()?;
        self.found.lock().unwrap_or_else(|p| p.into_inner()).insert(name.to_owned(), dir.clone());
        Some(dir)
    }

    /// The version of one run (`run_version`): `stat` only.
    pub fn run_version(&self, dir: &Path) -> String {
        version_of(dir)
    }

    fn relative(&self, dir: &Path) -> String {
        let rel = dir.strip_prefix(&self.root).unwrap_or(dir);
        rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
    }
}

/// A lock, whoever panicked holding it (what it guards is whole at every
/// step: a panic leaves a list or cache a look makes again).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The version of the run in `dir`, from `stat` alone.
pub(super) fn version_of(dir: &Path) -> String {
    RunVersion::of_files(&stamps_of(dir)).0
}

/// The stamps of a run's versioned files, in `files::VERSIONED` order.
fn stamps_of(dir: &Path) -> [Option<FileStamp>; VERSIONED.len()] {
    VERSIONED.map(|name| stamp_of(&dir.join(name)))
}

/// How many files are read at once on a walk or a cold list. The work is
/// mostly waiting on the disk (a cold list of 10,000 runs stats 40,000 paths
/// and reads 30,000 files), and a disk answers many requests in flight faster
/// than one after another; when everything is in the page cache the extra
/// threads cost a few microseconds each.
const IO_IN_FLIGHT: usize = 16;

/// `f` over `items`, `IO_IN_FLIGHT` at a time (inline for a few), in order.
fn par_io_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    if items.len() < 32 {
        return items.iter().map(f).collect();
    }
    let next = std::sync::atomic::AtomicUsize::new(0);
    let threads = IO_IN_FLIGHT.min(items.len() / 8).max(1);
    let mut done: Vec<(usize, R)> = std::thread::scope(|scope| {
        let workers: Vec<_> = (0..threads)
            .map(|_| {
                scope.spawn(|| {
                    let mut out = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { break out };
                        out.push((i, f(item)));
                    }
                })
            })
            .collect();
        // A worker that panicked loses its items; the caller sees fewer rows
        // rather than a crashed server (the readers themselves never panic).
        workers.into_iter().flat_map(|w| w.join().unwrap_or_default()).collect()
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

/// What one folder of a walk is: its identity, whether it holds a run, and
/// (if not) the folders to look in next and those that could not be.
struct Looked {
    id: (u64, u64),
    run: bool,
    children: Vec<PathBuf>,
    skipped: Vec<SkippedFolder>,
}

/// Walks `root` for run directories (any directory holding `snapshot.json`; their
/// own subfolders are not searched). Symlinked folders are followed only while
/// they stay inside the root, each real folder is entered once (so a symlink loop
/// ends), and folders that cannot be read are reported, not fatal. One level of
/// folders is looked at in parallel (see `IO_IN_FLIGHT`); the runs come in
/// path order.
pub fn find_run_dirs(root: &Path) -> (Vec<PathBuf>, Vec<SkippedFolder>) {
    let (runs, skipped, _) = find_runs_and_folders(root);
    (runs, skipped)
}

/// [`find_run_dirs`], and the folders entered on the way that are not runs
/// (the root among them): what the watch of the tree must watch besides the
/// run folders themselves.
pub fn find_runs_and_folders(root: &Path) -> (Vec<PathBuf>, Vec<SkippedFolder>, Vec<PathBuf>) {
    let mut folders = Vec::new();
    let mut runs = Vec::new();
    let mut skipped = Vec::new();
    let mut seen: HashSet<(u64, u64)> = HashSet::new();
    let real_root = fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    let rel = |p: &Path| p.strip_prefix(root).unwrap_or(p).to_string_lossy().into_owned();
    let mut level = vec![root.to_path_buf()];
    for depth in 0..=MAX_DEPTH {
        if level.is_empty() {
            break;
        }
        let looked = par_io_map(&level, |dir| look(dir, depth < MAX_DEPTH, &real_root, &rel));
        let mut next = Vec::new();
        for (dir, found) in level.into_iter().zip(looked) {
            match found {
                Err(reason) => skipped.push(SkippedFolder { path: rel(&dir), reason }),
                // Already entered through another path: a loop or a second link.
                Ok(l) if !seen.insert(l.id) => {}
                Ok(l) if l.run => runs.push(dir),
                Ok(l) => {
                    skipped.extend(l.skipped);
                    next.extend(l.children);
                    folders.push(dir);
                }
            }
        }
        level = next;
    }
    runs.sort();
    (runs, skipped, folders)
}

fn look(dir: &Path, deeper: bool, real_root: &Path, rel: &dyn Fn(&Path) -> String) -> Result<Looked, String> {
    let md = fs::metadata(dir).map_err(|e| e.to_string())?;
    let mut looked = Looked { id: (md.dev(), md.ino()), run: false, children: Vec::new(), skipped: Vec::new() };
    if dir.join(files::SNAPSHOT).symlink_metadata().is_ok() {
        looked.run = true;
        return Ok(looked);
    }
    if !deeper {
        return Ok(looked);
    }
    for entry in fs::read_dir(dir).map_err(|e| e.to_string())?.flatten() {
        let name = entry.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue; // .git, editor and tool folders
        }
        let Ok(ft) = entry.file_type() else { continue };
        let path = entry.path();
        if ft.is_dir() {
            looked.children.push(path);
        } else if ft.is_symlink() {
            match fs::canonicalize(&path) {
                Ok(target) if target.is_dir() && target.starts_with(real_root) => looked.children.push(path),
                Ok(target) if target.is_dir() => looked
                    .skipped
                    .push(SkippedFolder { path: rel(&path), reason: "symlink leads outside the campaign root".into() }),
                Ok(_) => {}
                Err(e) => {
                    looked.skipped.push(SkippedFolder { path: rel(&path), reason: format!("broken symlink: {e}") })
                }
            }
        }
    }
    Ok(looked)
}
