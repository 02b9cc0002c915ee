//! The `runboard` binary's library: the web console (axum + the Leptos app), the
//! command line, and the adapters between the pure core and the outside world,
//! grouped by the product's rooms (ARCHITECTURE.md maps every file):
//!
//! - [`web`] — `runboard serve`, connections within bounds, the router, static
//!   files, the site options, the shared version watchers, the HTTP error.
//! - [`access`] — the guard every request passes, the tokens on disk, the audit log.
//! - [`console`] — one campaign root and its readers, as the app sees it.
//! - [`campaign`] — the campaign's records (matrix, run sets, tags, run index,
//!   marker, unit records), the one launch path, live state, pause/stop/resume,
//!   and the launchers (`campaign::launcher`).
//! - [`live`] — what is watched while a batch runs: calls counted, the spend
//!   guard, notifications.
//! - [`auto`] — the autopilot's loop and its state file and event log.
//! - [`drive`] — `runboard drive`: one batch's processes, from load to
//!   teardown, and its gateway.
//! - [`cell`] — `runboard cell inspect`: Inspect AI as a cell.
//! - [`runview`] — reading run directories from disk, read-only, with a cache.
//! - [`publish`] — a push of the evidence export through the campaign's command.
//! - [`cli`] — the console from a terminal, from the operation table, and
//!   `runboard init`.
//! - [`demo`] — the generated demo campaign, the simulated agent, the console
//!   test campaign every suite uses.
//! - [`files`] — read-only reads within the root, atomic and private writes,
//!   the data folder.
//! - [`system`] — the wall clock, signals, outside commands within a bound,
//!   background loops.

pub mod access;
pub mod auto;
pub mod campaign;
pub mod cell;
pub mod cli;
pub mod console;
pub mod demo;
pub mod drive;
pub mod files;
pub mod live;
pub mod publish;
pub mod runview;
pub mod system;
pub mod web;
