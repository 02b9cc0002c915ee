//! Reading run directories from disk, read-only, while campaigns write them.
//!
//! This is the adapter around [`runboard::runview`]: it walks the campaign root,
//! stats and reads the few files the list shows, and keeps what it parsed keyed by
//! each file's identity, size and modification time, so a re-list when nothing
//! changed parses no file. Nothing here ever opens a file for writing.

mod index;
mod read;
mod watch;

pub use crate::files::fsread::{stamp_of, ProcessProbe, Within};
pub use index::{find_run_dirs, RunIndex};
pub use read::{read_call, read_reports, read_run, read_trial_graphs, refresh, RunCursors};

use std::path::{Path, PathBuf};

use runboard::runview::view::RunView;
use runboard::runview::RunList;

/// The runs under `root`, the latest written first (`list_runs`). A
/// one-off read; the console keeps a [`RunIndex`] so that re-listing parses only
/// what changed.
pub fn list_runs(root: &Path) -> RunList {
    RunIndex::new(root).list()
}

/// The run directory the list of `root` names `name` (its folder name or its path
/// relative to the root); `None` when it names none so (`find_run`).
pub fn find_run(root: &Path, name: &str) -> Option<PathBuf> {
    RunIndex::new(root).find(name)
}

/// A text that changes whenever the run in `run_dir` writes, from `stat` alone:
/// a page polls it before reading the run again (`run_version`).
pub fn run_version(run_dir: &Path) -> String {
    index::version_of(run_dir)
}

/// `RunView::read(run_dir)`: one run read whole, read-only. The core's
/// `RunView` does no I/O, so reading it from disk is this adapter's extension.
pub trait ReadRunView {
    fn read(run_dir: &Path) -> RunView;
}

impl ReadRunView for RunView {
    fn read(run_dir: &Path) -> RunView {
        let name = run_dir.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        // Standing alone, a run is its own root: nothing outside it is read.
        let within = Within::new(run_dir);
        read_run(&within, run_dir, &name, &name, &ProcessProbe::this_host(), &mut RunCursors::default())
    }
}
