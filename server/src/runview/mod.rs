//! Reading run directories from disk, read-only, while campaigns write them.
//!
//! This is the adapter around [`runboard::runview`]: it walks the campaign root,
//! stats and reads the few files the list shows, and keeps what it parsed keyed by
//! each file's identity, size and modification time, so a re-list when nothing
//! changed parses no file. Nothing here ever opens a file for writing.

mod fsread;
mod index;
mod read;

pub use fsread::{stamp_of, ProcessProbe};
pub use index::{find_run_dirs, RunIndex};
pub use read::{read_call, read_reports, read_run, read_trial_graphs, refresh, RunCursors};
