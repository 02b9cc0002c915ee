//! # runboard core
//!
//! The product vocabulary as types, and the decisions made over them as pure
//! functions. Nothing in this crate reads a clock, a file, a socket or a process:
//! callers pass bytes and `now` in, and get values back. That keeps every rule
//! testable with a table of inputs, and lets the WASM front end share these types.
//!
//! The modules are the product's rooms, each named from its vocabulary
//! (ARCHITECTURE.md maps every file):
//!
//! - [`console`] — the path from the plan to a launched batch: the matrix,
//!   coverage, drafts, the batch spec, preflight with the model catalogue,
//!   the endpoint pool, the one launch path's pure parts.
//! - [`live`] — the live state of a batch (idle, starting, running, stopped
//!   but resumable, aborted, launch failed, unknown) derived from evidence,
//!   and what is watched while it runs: spend and stalls, endpoint telemetry,
//!   logs as they are written, notices, upkeep of what was left lying about.
//! - [`auto`] — the autopilot: its settings, the tick's decision, its state
//!   file and event log.
//! - [`drive`] — the batch driver's decisions: the cluster and runner
//!   configuration, the doctor's findings, which cells remain, the records a
//!   run set keeps, a cell's own report (`result.json`, the cell contract).
//! - [`gateway`] — the batch gateway's pure parts: calls counted, the purse
//!   a batch spends from, lanes.
//! - [`harness`] — third-party harnesses as cells (Inspect AI): how a cell
//!   starts from the harness's logs and what they report.
//! - [`results`] — verdicts a researcher can defend: Evidence, timing,
//!   reports, cohorts, research, the proposal guide, publish.
//! - [`runview`] — what a run directory (the folder one agent campaign writes)
//!   means: its records, its events typed once, how a partly written file is
//!   read, the summary the run list shows, and the trials' queries and pages.
//! - [`runsets`] — the records about batches beside the run sets: committed
//!   spec numbering, run set names, run tags, the run index, unit records.
//! - [`campaign`] — the campaign folder's configuration (`campaign.toml`): the
//!   task library with its chains, the model and endpoint catalogue, budget
//!   caps, the launcher and hooks.
//! - [`access`] — who may talk to the console (tokens, viewers apart from
//!   operators) and the audit log of every control.
//! - [`api`] — the console's service boundary: the operation table (each
//!   operation declared once; the `Console` trait, REST routes, server
//!   functions and CLI calls are made from it), its inputs and `ApiError`.
//! - [`charts`] — the charts' geometry, drawn the same on server and page.
//! - [`basics`] — what every room shares: timestamps and numbers as written,
//!   strict JSON from tolerant writers, a hash stable across processes.

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
pub mod auto;
pub mod basics;
pub mod campaign;
pub mod charts;
pub mod console;
pub mod drive;
pub mod gateway;
pub mod harness;
pub mod live;
pub mod results;
pub mod runsets;
pub mod runview;

pub use basics::timefmt::Timestamp;
