//! What a run directory means.
//!
//! A *run directory* is what one agent campaign writes: a folder holding
//! `snapshot.json` (written on the campaign's first start, before its first
//! round), `state.json`, `ledger.jsonl`, `events.jsonl`, numbered call files and
//! more (`docs/formats.md`). This module owns the meaning of those files; the
//! server's `runview` adapter owns reading them from disk, read-only, while a
//! writer may be appending.
//!
//! - [`files`] — the fixed file names.
//! - [`records`] — the records, parsed leniently (missing fields are `None`, never
//!   made up).
//! - [`jsonl`] — line-oriented files that a writer may be appending to.
//! - [`events`] — the events file's lines, typed once as they are read.
//! - [`ledger`] — the ledger and events parsed incrementally (appended bytes only).
//! - [`summary`] — what the run list shows of a run, and its status rules.
//! - [`listing`] — the run list filtered, sorted and paged (its one query parser).
//! - [`view`] — `RunView`, one run read whole, each part degrading on its own.
//! - [`admission`] — each round's t threshold, the correlation limit, the limits.
//! - [`plans`], [`lineage`], [`trialgraph`], [`intraday`] — how trials relate.
//! - [`acceptance`] — acceptance and hold-out reports.
//! - [`refusal`] — what a refusal says (collision, own repeat, coverage…), one classifier.
//! - [`analysis`], [`diagnosis`] — what the trials say read together.
//! - [`trials`] — the rounds tab's filters and pages.
//! - [`memory`], [`diff`] — memory versions, kept between reads, compared line by line.
//! - [`version`] — a cheap token that changes whenever a run writes.

pub mod acceptance;
pub mod admission;
pub mod analysis;
pub mod diagnosis;
pub mod diff;
pub mod events;
pub mod files;
pub mod intraday;
pub mod jsonl;
pub mod ledger;
pub mod lineage;
pub mod listing;
pub mod memory;
pub mod plans;
pub mod records;
pub mod refusal;
pub mod rows;
pub mod summary;
pub mod trialgraph;
pub mod trials;
pub mod version;
pub mod view;

pub use summary::{summarise, ListInputs, ProcessCheck, RunList, RunRow, RunStatus, SkippedFolder};
pub use version::{FileStamp, RunVersion};
