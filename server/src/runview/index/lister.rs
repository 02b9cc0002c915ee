//! The lister: the list and its version — walked whole by one caller at a
//! time, kept current from the watch, answered from the list cache while a
//! server starts (`keep_current`). (The theory of operation is the parent
//! module's.)

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, MutexGuard};
use std::time::{Duration, Instant};

use runboard::runview::files;
use runboard::runview::summary::sort_latest_first;
use runboard::runview::{ProcessCheck, RunList, RunRow, RunVersion, SkippedFolder};

use super::*;

/// What the list answers while a server starts (`keep_current`).
#[derive(Default)]
pub(super) enum StartList {
    /// Nothing special: lists are made as always.
    #[default]
    AsAlways,
    /// The list cache is being read: a list waits for it (it is quicker than a walk).
    ReadingCache,
    /// This list, until the root has been walked whole and its watch set:
    /// first the list cache's rows (`from_cache` set), then the first walk's.
    Answer(Arc<RunList>),
}

/// The list as last made, by run directory, and when it was last walked whole.
#[derive(Default)]
pub(super) struct Listing {
    pub(super) rows: HashMap<PathBuf, RunRow>,
    pub(super) skipped: Vec<SkippedFolder>,
    pub(super) rows_walked: Option<Instant>,
    /// Each run's version by its path relative to the root (sorted, as the
    /// list's version is computed over them).
    pub(super) versions: std::collections::BTreeMap<String, (PathBuf, String)>,
    pub(super) versions_walked: Option<Instant>,
    /// The list as last made from `rows` (shared while nothing changes).
    pub(super) made: Option<Arc<RunList>>,
    /// The list's version as last made from `versions`.
    pub(super) version_made: Option<String>,
}

/// The list of `rows` (any order): sorted latest first, its version over the
/// rows in path order. A list from the cache gets a version of its own, so
/// the first list checked against the files is a new version even when no
/// row changed (and a page following the version drops its "from cache").
pub(super) fn list_of(
    mut rows: Vec<RunRow>,
    skipped: Vec<SkippedFolder>,
    from_cache: Option<runboard::Timestamp>,
) -> RunList {
    rows.sort_by(|a, b| a.path.cmp(&b.path));
    let mut version = RunVersion::of_list(rows.iter().map(|r| (r.path.as_str(), r.version.as_str()))).0;
    if from_cache.is_some() {
        version.push_str("-from-cache");
    }
    sort_latest_first(&mut rows);
    RunList { runs: rows, skipped, version, generated_at: crate::system::clock::now(), from_cache }
}

/// Whether the watch's `changes` (since a list last walked at `walked`) call
/// for walking the root again: something besides known runs changed, a changed
/// run is no longer a run (its snapshot went), or the last walk is too old
/// (unless `kept`: `keep_current` then walks ahead of the looks).
pub(super) fn must_walk(changes: &crate::runview::watch::Changes, walked: Option<Instant>, kept: bool) -> bool {
    let fresh = walked.is_some_and(|t| kept || t.elapsed() < crate::runview::watch::RESCAN_EVERY);
    let gone = changes.runs.iter().any(|d| d.join(files::SNAPSHOT).symlink_metadata().is_err());
    changes.structural || !fresh || gone
}

impl RunIndex {
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
        let changes = watch.take(crate::runview::watch::Reader::Rows);
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
    pub(super) fn walk_and_keep(&self, watch: &Arc<crate::runview::watch::TreeWatch>) -> Arc<RunList> {
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
    pub(super) fn list_updated(
        &self,
        mut listing: MutexGuard<'_, Listing>,
        changes: crate::runview::watch::Changes,
    ) -> Arc<RunList> {
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
    pub(super) fn turn<T>(&self, made: impl Fn(&Listing) -> Option<T>) -> Result<MutexGuard<'_, ()>, T> {
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
    pub(super) fn whole_walk<R>(&self, walk: impl FnOnce() -> R) -> R {
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
    pub(super) fn start_answer(&self) -> Option<Arc<RunList>> {
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

    pub(super) fn set_start(&self, to: StartList) {
        *lock(&self.start) = to;
        self.start_ready.notify_all();
    }

    /// For a server, from its start until `stop`: the first lists answered at
    /// once from the list cache (`from_cache` set) while one walk checks every
    /// run against its files, then from that walk while the watch of each
    /// folder is set (100,000 runs take seconds); from then on the safety
    /// net's walk (every [`crate::runview::watch::RESCAN_EVERY`]) is made here, ahead
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
            drop(watch.take(crate::runview::watch::Reader::Rows));
            drop(watch.take(crate::runview::watch::Reader::Versions));
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
            if walked
                .is_none_or(|w| w.elapsed() >= crate::runview::watch::RESCAN_EVERY && looked.is_some_and(|l| l > w))
            {
                walk();
            }
        };
        let every = || Duration::from_millis(250);
        crate::system::periodic::every(
            stop,
            "the run list's safety-net walk",
            crate::system::periodic::First::Now,
            every,
            look,
        );
        self.kept.store(false, Ordering::SeqCst);
    }

    /// The list made by walking the whole root; also returns each row's folder.
    pub(super) fn list_walked(&self) -> (RunList, Vec<PathBuf>, Vec<PathBuf>) {
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
        (
            RunList { runs: rows, skipped, version, generated_at: crate::system::clock::now(), from_cache: None },
            dirs,
            folders,
        )
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
        let changes = watch.take(crate::runview::watch::Reader::Versions);
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
    pub(super) fn version_walked(
        &self,
    ) -> (String, std::collections::BTreeMap<String, (PathBuf, String)>, Vec<PathBuf>) {
        self.walks.fetch_add(1, Ordering::Relaxed);
        let (dirs, _, folders) = find_runs_and_folders(&self.root);
        let versions: std::collections::BTreeMap<String, (PathBuf, String)> =
            par_io_map(&dirs, |d| (self.relative(d), (d.clone(), version_of(d)))).into_iter().collect();
        let version = RunVersion::of_list(versions.iter().map(|(p, (_, v))| (p.as_str(), v.as_str()))).0;
        (version, versions, folders)
    }
}
