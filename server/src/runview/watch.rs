//! Knowing what changed under a campaign root without walking it.
//!
//! A file-system watch (inotify, through `notify`) of the folders a list reads
//! — the root, every folder entered on the way to the runs, and each run
//! folder itself, each watched alone (not a run's `calls/` or other
//! sub-folders: a row reads only its run folder's own files, and a watch per
//! folder is what inotify's limit counts) — sorts
//! every change into one of two kinds: inside a run directory the index knows
//! (that run is re-read alone), or anywhere else — a run appearing or going, a
//! folder renamed, a lost event (the tree is walked again). The list and its
//! version then cost O(runs that changed) instead of a walk and a `stat` of
//! every file; a full walk still happens at least every [`RESCAN_EVERY`] as a
//! safety net, and always when the watch cannot be set up (too few inotify
//! watches, say) — then runboard simply walks, as before.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

/// The longest a list or version answered from the watch goes without a walk.
pub const RESCAN_EVERY: Duration = Duration::from_secs(30);

/// Who reads the changes: the list's version and the list's rows each keep
/// their own account, so one consuming them never hides them from the other.
#[derive(Debug, Clone, Copy)]
pub enum Reader {
    Versions = 0,
    Rows = 1,
}

/// What changed since a reader last looked.
#[derive(Debug, Default)]
pub struct Changes {
    /// Something outside the known runs changed (or events were lost): walk.
    pub structural: bool,
    /// Known runs whose files changed.
    pub runs: HashSet<PathBuf>,
}

struct Shared {
    root: PathBuf,
    runs: RwLock<HashSet<PathBuf>>,
    pending: Mutex<[Changes; 2]>,
}

impl Shared {
    fn note(&self, path: &Path) {
        let runs = self.runs.read().unwrap_or_else(|p| p.into_inner());
        let run =
            path.ancestors().take_while(|a| a.starts_with(&self.root) && *a != self.root).find(|a| runs.contains(*a));
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        for c in pending.iter_mut() {
            match run {
                Some(dir) => {
                    c.runs.insert(dir.to_path_buf());
                }
                None => c.structural = true,
            }
        }
    }

    fn lost(&self) {
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        pending.iter_mut().for_each(|c| c.structural = true);
    }
}

/// Whether an event only says a file was opened or read.
fn is_read_only(kind: &notify::EventKind) -> bool {
    use notify::event::{AccessKind, AccessMode};
    matches!(kind, notify::EventKind::Access(a) if !matches!(a, AccessKind::Close(AccessMode::Write)))
}

/// The watch of one root's folders.
pub struct TreeWatch {
    /// The watcher and the folders it watches now, changed together.
    watching: Mutex<(notify::RecommendedWatcher, HashSet<PathBuf>)>,
    /// Watches being added on their threads now.
    adding: std::sync::atomic::AtomicUsize,
    shared: Arc<Shared>,
}

impl TreeWatch {
    /// Watches `root` (as the index names its paths); `None`, with the reason
    /// logged, when the watch cannot be set up.
    pub fn start(root: &Path) -> Option<Self> {
        let shared = Arc::new(Shared {
            root: root.to_path_buf(),
            runs: RwLock::new(HashSet::new()),
            // Nothing is known yet: the first look walks.
            pending: Mutex::new([
                Changes { structural: true, runs: HashSet::new() },
                Changes { structural: true, runs: HashSet::new() },
            ]),
        });
        let s = shared.clone();
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| match res {
            // Opening and reading change nothing (and the readers' own opens
            // must not count as changes); a close after writing does.
            Ok(ev) if is_read_only(&ev.kind) => {}
            Ok(ev) if ev.need_rescan() || ev.paths.is_empty() => s.lost(),
            Ok(ev) => ev.paths.iter().for_each(|p| s.note(p)),
            Err(_) => s.lost(),
        });
        let mut watcher = match watcher {
            Ok(w) => w,
            Err(e) => {
                tracing::warn!("not watching {} (the run list walks it instead): {e}", root.display());
                return None;
            }
        };
        if let Err(e) = watcher.watch(root, RecursiveMode::NonRecursive) {
            tracing::warn!("not watching {} (the run list walks it instead): {e}", root.display());
            return None;
        }
        tracing::info!("watching {}", root.display());
        let watching = Mutex::new((watcher, HashSet::from([root.to_path_buf()])));
        Some(Self { watching, adding: Default::default(), shared })
    }

    /// The run folders a walk found (changes inside them are theirs) and the
    /// other folders it entered: each is watched from now on, and a folder
    /// no longer found is no longer watched. The watches are added on a
    /// thread of their own (100,000 folders take seconds), so the list that
    /// walked is answered at once; once new ones are added the next look
    /// walks again, so nothing written while they were being added is
    /// missed. A folder that cannot be watched (inotify's limit reached)
    /// keeps every look a walk: nothing is missed, it only costs the walks.
    pub fn set_runs(self: &Arc<Self>, runs: &[PathBuf], folders: &[PathBuf]) {
        *self.shared.runs.write().unwrap_or_else(|p| p.into_inner()) = runs.iter().cloned().collect();
        let want: HashSet<PathBuf> = runs.iter().chain(folders).cloned().collect();
        let this = self.clone();
        self.adding.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        std::thread::spawn(move || {
            this.watch_only(want);
            this.adding.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
        });
    }

    /// No watch is being added now (tests wait for it).
    pub fn settled(&self) -> bool {
        self.adding.load(std::sync::atomic::Ordering::SeqCst) == 0
    }

    fn watch_only(&self, want: HashSet<PathBuf>) {
        let mut watching = self.watching.lock().unwrap_or_else(|p| p.into_inner());
        let (watcher, watched) = &mut *watching;
        for gone in watched.difference(&want).cloned().collect::<Vec<_>>() {
            let _ = watcher.unwatch(&gone);
            watched.remove(&gone);
        }
        let new: Vec<PathBuf> = want.difference(watched).cloned().collect();
        let mut failed = None;
        for dir in &new {
            match watcher.watch(dir, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    watched.insert(dir.clone());
                }
                Err(e) => failed = Some((dir.clone(), e)),
            }
        }
        if let Some((dir, e)) = &failed {
            tracing::warn!("not watching {} (the run list walks instead): {e}", dir.display());
        }
        if !new.is_empty() {
            self.shared.lost();
        }
    }

    /// What changed since `reader` last asked (and forget it for that reader).
    pub fn take(&self, reader: Reader) -> Changes {
        let mut pending = self.shared.pending.lock().unwrap_or_else(|p| p.into_inner());
        std::mem::take(&mut pending[reader as usize])
    }
}
