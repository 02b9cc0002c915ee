//! # runboard core
//!
//! The product vocabulary as types, and the decisions made over them as pure
//! functions. Nothing in this crate reads a clock, a file, a socket or a process:
//! callers pass bytes and `now` in, and get values back. That keeps every rule
//! testable with a table of inputs, and lets the WASM front end share these types.
//!
//! Modules are nouns from the product's vocabulary:
//!
//! - [`access`] — who may talk to the console: the token book (named
//!   tokens kept as hashes), viewers apart from operators.
//! - [`api`] — the console's service boundary: the operation table (each
//!   operation declared once; the `Console` trait, REST routes, server
//!   functions and CLI calls are made from it), its inputs and `ApiError`.
//! - [`auto`] — the autopilot's records: the state file (loaded whatever it
//!   holds, repaired and said) and its event log's lines.
//! - [`campaign`] — the campaign folder's configuration (`campaign.toml`): the
//!   task library with its chains, the model and endpoint catalogue, budget
//!   caps, the launcher and hooks.
//! - [`matrix`] — the planned cells (`matrix.csv`) and how a row becomes a cell.
//! - [`coverage`] — where each planned cell stands across every run set, counted
//!   per factor and on a two-factor grid.
//! - [`draft`] — the next batch filled from gaps under the chain rules.
//! - [`launch`] — the one launch path's pure parts: which spec paths may be
//!   launched; what a launch, resume and stop ask and answer.
//! - [`live`] — the live state of a batch (idle, starting, running, stopped
//!   but resumable, aborted, launch failed, unknown) derived from evidence.
//! - [`logs`] — a batch's logs as a reader sees them while they are written:
//!   the next chunk from a position (file identity and offset), across a
//!   rotation, never the whole file.
//! - [`notice`] — a word for every batch event: each unit's phase, what was
//!   already said of it, and which events to say next; where a webhook may go.
//! - [`preflight`] — what would stop a batch, found before it is launched: the
//!   doctor's findings, the catalogue, daily caps and the predicted budget.
//! - [`runview`] — what a run directory (the folder one agent campaign writes)
//!   means: its records, its events typed once, how a partly written file is
//!   read, the summary the run list shows, and the trials' queries and pages.
//! - [`runsets`] — the records about batches beside the run sets: committed
//!   spec numbering, run set names, run tags, the run index, unit records.
//! - [`telemetry`] — what an endpoint is doing now: its calls' rates and
//!   latency over the last minute, its engine's Prometheus metrics, busy or not.
//! - [`spec`] — the batch spec: parsing (errors name file and field), merging a
//!   spec folder, stable cell ids.
//! - [`drive`] — the batch driver's decisions: the cluster and runner
//!   configuration, the doctor's findings, which cells remain, the records a
//!   run set keeps, a cell's own report (`result.json`, the cell contract).
//! - [`harness`] — third-party harnesses as cells (Inspect AI): how a cell
//!   starts from the harness's logs and what they report.
//! - [`hash`] — FNV-1a, stable across processes, for ids and versions.
//! - [`json`] — strict-JSON reading of values written by tolerant writers
//!   (`NaN`, `Infinity` become `null`), and lists of names.
//! - [`upkeep`] — what a campaign left lying about (stale drafts, temporary
//!   files of killed writers, units and run sets whose process is gone,
//!   orphaned logs, disk use) and the one safe action for each.
//! - [`timefmt`] — timestamps as they appear in records and on pages.

/// `Display` for closed enums that have a `word()`: formatted as that word
/// (padded like a `str`, so `{:8}` lines columns up), the same word serde
/// writes on the wire.
macro_rules! display_as_word {
    ($($t:ty),* $(,)?) => {
        $(impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(self.word())
            }
        })*
    };
}
pub(crate) use display_as_word;

pub mod access;
pub mod api;
pub mod audit;
pub mod auto;
pub mod campaign;
pub mod catalogue;
pub mod charts;
pub mod coverage;
pub mod draft;
pub mod drive;
pub mod gateway;
pub mod harness;
pub mod hash;
pub mod json;
pub mod launch;
pub mod live;
pub mod logs;
pub mod matrix;
pub mod notice;
pub mod numfmt;
pub mod pool;
pub mod preflight;
pub mod results;
pub mod runsets;
pub mod runview;
pub mod spec;
pub mod spend;
pub mod telemetry;
pub mod timefmt;
pub mod upkeep;

pub use timefmt::Timestamp;
