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
use std::time::{Duration, Instant};

use runboard::json::{describe_error, from_slice_lenient};
use runboard::runview::files::{self, VERSIONED};
use runboard::runview::jsonl::tail_lines;
use runboard::runview::records::{Snapshot, StateFile};
use runboard::runview::summary::{sort_latest_first, EventsTail};
use runboard::runview::view::RunView;
use runboard::runview::{summarise, FileStamp, ListInputs, ProcessCheck, RunList, RunRow, RunVersion, SkippedFolder};

use crate::fsread::{read_tail, stamp_of, stamp_time, ProcessProbe, Within};

/// How deep below the root the scan looks for run directories.
const MAX_DEPTH: usize = 12;
/// The first chunk read from the end of an events file; doubled until the latest
/// open is found or the file's start is reached.
const EVENTS_TAIL_CHUNK: u64 = 16 << 10;

/// What was parsed of one run, valid while its files' stamps are unchanged.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct Parsed {
    stamps: [Option<FileStamp>; VERSIONED.len()],
    snapshot: Result<Snapshot, String>,
    state: Option<Result<StateFile, String>>,
    events: Option<Result<EventsTail, String>>,
}

/// How many runs' reading state (cursors, parsed rounds, the latest view) is
/// kept at once by default; the least recently used is dropped beyond it.
pub const READERS_HELD: usize = 64;

/// One run's reading state: where its growing files were read up to, and the
/// view made at the version it was made at. Locked on its own, so reading one
/// run never waits for another.
#[derive(Default)]
struct RunReader {
    cursors: super::read::RunCursors,
    /// The view, the run's version when it was made, and what was known then of
    /// the process that opened the run (its death changes the view, not a file).
    view: Option<(String, Arc<RunView>)>,
    /// Bytes of the growing files read so far (a figure for the debug endpoint).
    bytes_read: u64,
}

/// The runs whose reading state is held, least recently used first.
#[derive(Default)]
struct Readers {
    held: Vec<(PathBuf, Arc<Mutex<RunReader>>)>,
    evictions: u64,
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

/// What the list answers while a server starts (`keep_current`).
#[derive(Default)]
enum StartList {
    /// Nothing special: lists are made as always.
    #[default]
    AsAlways,
    /// The list cache is being read: a list waits for it (it is quicker than a walk).
    ReadingCache,
    /// This list, until the root has been walked whole and its watch set:
    /// first the list cache's rows (`from_cache` set), then the first walk's.
    Answer(Arc<RunList>),
}

/// The list cache file: what was parsed of each run, by its path under the
/// root, with the stamps it was parsed at. A server started again stats every
/// run (as always) but opens only the files that changed since; on a cold disk
/// that is most of a first list's time. Stale or foreign entries cost nothing:
/// an entry is used only while its stamps (size, time, device, inode) match.
#[derive(serde::Serialize, serde::Deserialize)]
struct ListCacheFile {
    schema_version: u32,
    /// The version that wrote it; another version's file is not read (the
    /// parsed shapes may differ; `LIST_CACHE_SCHEMA` changes with them).
    runboard: String,
    root: String,
    runs: Vec<(String, Parsed)>,
}

const LIST_CACHE_SCHEMA: u32 = 1;
/// The largest list cache read back (~0.8 KiB a run: a million runs).
const LIST_CACHE_MAX: u64 = 1 << 30;

/// The list as last made, by run directory, and when it was last walked whole.
#[derive(Default)]
struct Listing {
    rows: HashMap<PathBuf, RunRow>,
    skipped: Vec<SkippedFolder>,
    rows_walked: Option<Instant>,
    /// Each run's version by its path relative to the root (sorted, as the
    /// list's version is computed over them).
    versions: std::collections::BTreeMap<String, (PathBuf, String)>,
    versions_walked: Option<Instant>,
    /// The list as last made from `rows` (shared while nothing changes).
    made: Option<Arc<RunList>>,
    /// The list's version as last made from `versions`.
    version_made: Option<String>,
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

    /// The parsed runs a list cache file holds for this root (empty when none).
    fn load_list_cache(&self) -> HashMap<PathBuf, Parsed> {
        let Some(file) = &self.list_cache else { return HashMap::new() };
        let bytes = match crate::fsread::read_regular_up_to(file, LIST_CACHE_MAX) {
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
    fn save_list_cache(&self, parsed: &HashMap<PathBuf, Parsed>) {
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
                    crate::atomic::create_private_dir(dir)?;
                }
                crate::atomic::write_atomic(&file, &bytes)
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

    /// Every run directory under the root, latest written first (`list_runs`).
    /// With a watch, only the runs that changed (and those whose process was
    /// alive) are looked at again; the root is walked when the watch saw
    /// anything else, and at least every `RESCAN_EVERY`.
    /// The run list, latest written first.
    pub fn list(&self) -> RunList {
        (*self.list_shared()).clone()
    }

    /// The run list as the index holds it: when the watch saw no change and no
    /// listed process is alive, the list made last time, shared (a first page
    /// of 100 then costs the page, not 10,000 rows copied and sorted). While
    /// a server starts, the list it answers until then (`keep_current`); while
    /// another look walks the root, the list made before it.
    pub fn list_shared(&self) -> Arc<RunList> {
        *lock(&self.looked) = Some(Instant::now());
        if let Some(list) = self.start_answer() {
            return list;
        }
        let Some(watch) = self.watch.get() else { return Arc::new(self.list_walked().0) };
        let _turn = match self.turn(|l| l.made.clone()) {
            Ok(turn) => turn,
            Err(made) => return made,
        };
        let changes = watch.take(super::watch::Reader::Rows);
        let listing = lock(&self.listing);
        if must_walk(&changes, listing.rows_walked, self.kept.load(Ordering::SeqCst)) {
            drop(listing);
            return self.walk_and_keep(watch);
        }
        self.list_updated(listing, changes)
    }

    /// Walks the root whole (others answer what was made before meanwhile),
    /// keeps the rows and each run's version, and watches what was found.
    /// The caller holds the turn to walk.
    fn walk_and_keep(&self, watch: &Arc<super::watch::TreeWatch>) -> Arc<RunList> {
        let (list, dirs, folders) = self.whole_walk(|| self.list_walked());
        watch.set_runs(&dirs, &folders);
        let mut listing = lock(&self.listing);
        let now = Instant::now();
        listing.versions =
            list.runs.iter().zip(&dirs).map(|(r, d)| (r.path.clone(), (d.clone(), r.version.clone()))).collect();
        listing.version_made = Some(list.version.clone());
        listing.versions_walked = Some(now);
        listing.rows = dirs.into_iter().zip(list.runs.iter().cloned()).collect();
        listing.skipped = list.skipped.clone();
        listing.rows_walked = Some(now);
        let list = Arc::new(list);
        listing.made = Some(list.clone());
        list
    }

    /// The list made last, with the runs the watch saw change (and the live
    /// ones: a process ending changes no file) read again.
    fn list_updated(&self, mut listing: MutexGuard<'_, Listing>, changes: super::watch::Changes) -> Arc<RunList> {
        let live = listing
            .rows
            .iter()
            .filter(|(_, r)| matches!(r.process, ProcessCheck::Alive { .. }))
            .map(|(d, _)| d.clone());
        let again: HashSet<PathBuf> = changes.runs.into_iter().chain(live).collect();
        let mut cache = lock(&self.cache);
        let mut changed = false;
        for dir in again {
            let stamps = stamps_of(&dir);
            let parsed = match cache.get(&dir) {
                Some(p) if p.stamps == stamps => p.clone(),
                _ => self.parse(&dir, stamps),
            };
            let row = self.row(&dir, &parsed);
            if listing.rows.get(&dir) != Some(&row) {
                listing.rows.insert(dir.clone(), row);
                changed = true;
            }
            cache.insert(dir, parsed);
        }
        drop(cache);
        if let (false, Some(made)) = (changed, &listing.made) {
            return made.clone();
        }
        let rows: Vec<RunRow> = listing.rows.values().cloned().collect();
        let list = Arc::new(list_of(rows, listing.skipped.clone(), None));
        listing.made = Some(list.clone());
        list
    }

    /// The turn to walk the root or update what it found: at once, or after
    /// the walk under way — unless that walk has something made before it to
    /// answer (`made`), then `Err` with it (answer that; the watch's changes
    /// stay for the next look).
    fn turn<T>(&self, made: impl Fn(&Listing) -> Option<T>) -> Result<MutexGuard<'_, ()>, T> {
        match self.walking.try_lock() {
            Ok(turn) => Ok(turn),
            Err(std::sync::TryLockError::Poisoned(p)) => Ok(p.into_inner()),
            Err(std::sync::TryLockError::WouldBlock) => {
                if self.walk_under_way.load(Ordering::SeqCst) {
                    if let Some(answer) = made(&lock(&self.listing)) {
                        return Err(answer);
                    }
                }
                Ok(lock(&self.walking))
            }
        }
    }

    /// `walk`, a whole walk of the root, said to be under way meanwhile (see
    /// `turn`), also if it panics.
    fn whole_walk<R>(&self, walk: impl FnOnce() -> R) -> R {
        struct UnderWay<'a>(&'a std::sync::atomic::AtomicBool);
        impl Drop for UnderWay<'_> {
            fn drop(&mut self) {
                self.0.store(false, Ordering::SeqCst);
            }
        }
        self.walk_under_way.store(true, Ordering::SeqCst);
        let _under_way = UnderWay(&self.walk_under_way);
        walk()
    }

    /// What a list answers while a server starts, when not made as always.
    fn start_answer(&self) -> Option<Arc<RunList>> {
        let mut start = lock(&self.start);
        loop {
            match &*start {
                StartList::AsAlways => return None,
                StartList::Answer(list) => return Some(list.clone()),
                StartList::ReadingCache => {
                    start = self.start_ready.wait(start).unwrap_or_else(|p| p.into_inner());
                }
            }
        }
    }

    fn set_start(&self, to: StartList) {
        *lock(&self.start) = to;
        self.start_ready.notify_all();
    }

    /// For a server, from its start until `stop`: the first lists answered at
    /// once from the list cache (`from_cache` set) while one walk checks every
    /// run against its files, then from that walk while the watch of each
    /// folder is set (100,000 runs take seconds); from then on the safety
    /// net's walk (every [`super::watch::RESCAN_EVERY`]) is made here, ahead
    /// of time, so no look waits a walk's time. Without a watch (it could not
    /// be set up) every look walks, as always, and this only primes the cache.
    pub fn keep_current(&self, stop: &std::sync::atomic::AtomicBool) {
        let from_cache = self.answer_from_cache();
        // The watch is set up on its own thread; its first folder is quick.
        let waited = Instant::now();
        while !self.watch_tried.load(Ordering::SeqCst) && waited.elapsed() < Duration::from_secs(10) {
            std::thread::sleep(Duration::from_millis(20));
        }
        let Some(watch) = self.watch.get() else {
            self.set_start(StartList::AsAlways);
            if !from_cache {
                self.list_shared();
            }
            return;
        };
        let walk = || {
            let _turn = lock(&self.walking);
            // What the watch saw until now is in this walk.
            drop(watch.take(super::watch::Reader::Rows));
            drop(watch.take(super::watch::Reader::Versions));
            self.walk_and_keep(watch)
        };
        let began = Instant::now();
        let checked = walk();
        tracing::info!(
            "run list: {} runs walked and read in {:.2} s",
            checked.runs.len(),
            began.elapsed().as_secs_f64()
        );
        self.set_start(StartList::Answer(checked));
        let waited = Instant::now();
        while !watch.settled() && waited.elapsed() < Duration::from_secs(600) && !stop.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(50));
        }
        tracing::info!("run list: every folder watched in {:.2} s", waited.elapsed().as_secs_f64());
        // Changes made while the watches were added are in this walk.
        walk();
        self.set_start(StartList::AsAlways);
        self.kept.store(true, Ordering::SeqCst);
        let look = || {
            let walked = lock(&self.listing).rows_walked;
            let looked = *lock(&self.looked);
            // The safety net's walk, when someone has looked since the last.
            if walked.is_none_or(|w| w.elapsed() >= super::watch::RESCAN_EVERY && looked.is_some_and(|l| l > w)) {
                walk();
            }
        };
        let every = || Duration::from_millis(250);
        crate::periodic::every(stop, "the run list's safety-net walk", crate::periodic::First::Now, every, look);
        self.kept.store(false, Ordering::SeqCst);
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
        let saved = std::fs::metadata(file).ok().map(|md| stamp_time(&crate::fsread::stamp_of_metadata(&md)));
        let list = list_of(rows, Vec::new(), Some(saved.unwrap_or_else(crate::clock::now)));
        tracing::info!(
            "run list: {} runs answered from the list cache, read in {:.2} s",
            list.runs.len(),
            began.elapsed().as_secs_f64()
        );
        self.set_start(StartList::Answer(Arc::new(list)));
        true
    }

    /// The list made by walking the whole root; also returns each row's folder.
    fn list_walked(&self) -> (RunList, Vec<PathBuf>, Vec<PathBuf>) {
        self.walks.fetch_add(1, Ordering::Relaxed);
        let (dirs, skipped, folders) = find_runs_and_folders(&self.root);
        // Each run's files are stat'ed, and read only when they changed, many
        // at once (`par_io_map`). Lists take turns on the cache: a second one
        // waits, then finds it warm.
        let mut cache = self.cache.lock().unwrap_or_else(|p| p.into_inner());
        if cache.is_empty() && !self.list_cache_loaded.swap(true, Ordering::Relaxed) {
            *cache = self.load_list_cache();
        }
        let parses_before = self.parses.load(Ordering::Relaxed);
        let old = &*cache;
        let parsed: Vec<(PathBuf, RunRow, Parsed)> = par_io_map(&dirs, |dir| {
            let stamps = stamps_of(dir);
            let parsed = match old.get(dir) {
                Some(p) if p.stamps == stamps => p.clone(),
                _ => self.parse(dir, stamps),
            };
            (dir.clone(), self.row(dir, &parsed), parsed)
        });
        let mut rows = Vec::with_capacity(parsed.len());
        let mut found = Vec::with_capacity(parsed.len());
        let mut fresh = HashMap::with_capacity(parsed.len());
        for (dir, row, p) in parsed {
            rows.push(row);
            found.push(dir.clone());
            fresh.insert(dir, p);
        }
        // Runs that disappeared drop out of the cache with this swap; the
        // file keeps what a restart would otherwise open again.
        if self.parses.load(Ordering::Relaxed) != parses_before || fresh.len() != cache.len() {
            self.save_list_cache(&fresh);
        }
        *cache = fresh;
        drop(cache);
        // The list's version is over rows in path order, as `list_version` computes it.
        // Rows and their folders, in the same (path) order.
        let mut pairs: Vec<(RunRow, PathBuf)> = rows.into_iter().zip(found).collect();
        pairs.sort_by(|a, b| a.0.path.cmp(&b.0.path));
        let version = RunVersion::of_list(pairs.iter().map(|(r, _)| (r.path.as_str(), r.version.as_str()))).0;
        let (mut rows, dirs): (Vec<RunRow>, Vec<PathBuf>) = pairs.into_iter().unzip();
        // Latest first for the list; the folders keep the rows' path order,
        // matched again by path below.
        let by_path: HashMap<String, PathBuf> = rows.iter().map(|r| r.path.clone()).zip(dirs).collect();
        sort_latest_first(&mut rows);
        let dirs = rows.iter().filter_map(|r| by_path.get(&r.path).cloned()).collect();
        (RunList { runs: rows, skipped, version, generated_at: crate::clock::now(), from_cache: None }, dirs, folders)
    }

    /// The version of the whole list, from `stat` alone: with a watch, only the
    /// runs that changed are stat'ed again (the root is walked when the watch
    /// saw anything else, and at least every `RESCAN_EVERY`). While a server
    /// starts, the version of the list it answers; while another look walks
    /// the root, the version made before it.
    pub fn list_version(&self) -> String {
        *lock(&self.looked) = Some(Instant::now());
        if let Some(list) = self.start_answer() {
            return list.version.clone();
        }
        let Some(watch) = self.watch.get() else { return self.version_walked().0 };
        let _turn = match self.turn(|l| l.version_made.clone()) {
            Ok(turn) => turn,
            Err(made) => return made,
        };
        let changes = watch.take(super::watch::Reader::Versions);
        let mut listing = lock(&self.listing);
        if must_walk(&changes, listing.versions_walked, self.kept.load(Ordering::SeqCst)) {
            drop(listing);
            let (version, versions, folders) = self.whole_walk(|| self.version_walked());
            let dirs: Vec<PathBuf> = versions.values().map(|(d, _)| d.clone()).collect();
            watch.set_runs(&dirs, &folders);
            let mut listing = lock(&self.listing);
            listing.versions = versions;
            listing.versions_walked = Some(Instant::now());
            listing.version_made = Some(version.clone());
            return version;
        }
        for dir in changes.runs {
            listing.versions.insert(self.relative(&dir), (dir.clone(), version_of(&dir)));
        }
        let version = RunVersion::of_list(listing.versions.iter().map(|(p, (_, v))| (p.as_str(), v.as_str()))).0;
        listing.version_made = Some(version.clone());
        version
    }

    /// The list's version made by walking the root, and each run's version.
    #[allow(clippy::type_complexity)]
    fn version_walked(&self) -> (String, std::collections::BTreeMap<String, (PathBuf, String)>, Vec<PathBuf>) {
        self.walks.fetch_add(1, Ordering::Relaxed);
        let (dirs, _, folders) = find_runs_and_folders(&self.root);
        let versions: std::collections::BTreeMap<String, (PathBuf, String)> =
            par_io_map(&dirs, |d| (self.relative(d), (d.clone(), version_of(d)))).into_iter().collect();
        let version = RunVersion::of_list(versions.iter().map(|(p, (_, v))| (p.as_str(), v.as_str()))).0;
        (version, versions, folders)
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

    /// Holds at most `limit` runs' reading state (at least 1).
    pub fn with_readers_limit(mut self, limit: usize) -> Self {
        self.readers_limit = limit.max(1);
        self
    }

    /// The reading state of the run in `dir`, made most recently used; the
    /// least recently used beyond the limit is dropped (and logged).
    fn reader(&self, dir: &Path) -> Arc<Mutex<RunReader>> {
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
        let view = Arc::new(super::read_run(&self.within, &dir, &folder, &rel, &self.probe, &mut reader.cursors));
        reader.bytes_read += reader.cursors.offsets().saturating_sub(before);
        self.views_read.fetch_add(1, Ordering::Relaxed);
        // Keyed by the version taken before the files were read: a write during
        // the read shows as a newer version next time, never as a stale hit.
        reader.view = Some((version, view.clone()));
        Some((dir, view))
    }

    /// Whether what the view says of the run's process still holds.
    fn process_unchanged(&self, shown: &ProcessCheck) -> bool {
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

    /// The version of one run (`run_version`): `stat` only.
    pub fn run_version(&self, dir: &Path) -> String {
        version_of(dir)
    }

    fn relative(&self, dir: &Path) -> String {
        let rel = dir.strip_prefix(&self.root).unwrap_or(dir);
        rel.components().map(|c| c.as_os_str().to_string_lossy()).collect::<Vec<_>>().join("/")
    }

    fn parse(&self, dir: &Path, stamps: [Option<FileStamp>; VERSIONED.len()]) -> Parsed {
        let snapshot = self.parse_json::<Snapshot>(&dir.join(files::SNAPSHOT), files::SNAPSHOT);
        let state = stamps[1].map(|_| self.parse_json::<StateFile>(&dir.join(files::STATE), files::STATE));
        let events = stamps[3].map(|_| self.events_tail(&dir.join(files::EVENTS)));
        Parsed { stamps, snapshot, state, events }
    }

    fn parse_json<T: serde::de::DeserializeOwned>(&self, path: &Path, label: &str) -> Result<T, String> {
        self.parses.fetch_add(1, Ordering::Relaxed);
        let bytes = self.within.read(path).map_err(|e| format!("{label}: {e}"))?;
        from_slice_lenient(&bytes).map_err(|e| format!("{label}: {}", describe_error(&e)))
    }

    /// Reads the events file from its end back to its latest open.
    fn events_tail(&self, path: &Path) -> Result<EventsTail, String> {
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

    fn row(&self, dir: &Path, parsed: &Parsed) -> RunRow {
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

/// A lock, whoever panicked holding it (what it guards is whole at every
/// step: a panic leaves a list or cache a look makes again).
fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// The list of `rows` (any order): sorted latest first, its version over the
/// rows in path order. A list from the cache gets a version of its own, so
/// the first list checked against the files is a new version even when no
/// row changed (and a page following the version drops its "from cache").
fn list_of(mut rows: Vec<RunRow>, skipped: Vec<SkippedFolder>, from_cache: Option<runboard::Timestamp>) -> RunList {
    rows.sort_by(|a, b| a.path.cmp(&b.path));
    let mut version = RunVersion::of_list(rows.iter().map(|r| (r.path.as_str(), r.version.as_str()))).0;
    if from_cache.is_some() {
        version.push_str("-from-cache");
    }
    sort_latest_first(&mut rows);
    RunList { runs: rows, skipped, version, generated_at: crate::clock::now(), from_cache }
}

/// Whether the watch's `changes` (since a list last walked at `walked`) call
/// for walking the root again: something besides known runs changed, a changed
/// run is no longer a run (its snapshot went), or the last walk is too old
/// (unless `kept`: `keep_current` then walks ahead of the looks).
fn must_walk(changes: &super::watch::Changes, walked: Option<Instant>, kept: bool) -> bool {
    let fresh = walked.is_some_and(|t| kept || t.elapsed() < super::watch::RESCAN_EVERY);
    let gone = changes.runs.iter().any(|d| d.join(files::SNAPSHOT).symlink_metadata().is_err());
    changes.structural || !fresh || gone
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
