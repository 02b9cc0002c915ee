//! The `runboard` binary's library: the web console (axum + the Leptos app), the
//! command line, and the adapters between the pure core and the outside world.
//!
//! - [`serve`] — `runboard serve`: binding, access, shutdown, idle watchdog.
//! - [`follow`] — one shared version watcher per followed run (and the list).
//! - [`listen`] — accepting connections within bounds (head timeout, cap, shutdown grace).
//! - [`http`] — the router: pages, server functions, JSON API, static files.
//! - [`auth`] — token and origin checks.  [`assets`] — revalidated static files.
//! - [`site`] — Leptos site options from the embedded `Leptos.toml`.
//! - [`console`] — one campaign root and its readers, as the app sees it.
//! - [`campaign`] — the campaign's records (matrix, run sets, tags, run index,
//!   marker, unit records), the one launch path, live state, pause/stop/resume,
//!   and the launchers (`campaign::launcher`).
//! - [`cli`] — the console from a terminal (status, coverage, draft, launch,
//!   pause, stop, resume) over the same typed operations.
//! - [`auto_state`] — the autopilot's state file and event log, as a stop
//!   turns auto mode off.
//! - [`runview`] — reading run directories from disk, read-only, with a cache.
//! - [`demo`] — the generated demo campaign.  [`simulate`] — the simulated agent.
//! - [`fixture`] — the console test campaign every suite uses.
//! - [`drive`] — `runboard drive`: one batch's processes, from load to teardown.
//! - [`fsread`] — read-only file primitives: never a FIFO, never outside the root.
//! - [`atomic`] — atomic file replacement.  [`clock`] — the wall clock.
//! - [`signals`] — SIGINT/SIGTERM, and finding a batch's processes by environment.

pub mod assets;
pub mod atomic;
pub mod audit;
pub mod auth;
pub mod auto_state;
pub mod autopilot;
pub mod campaign;
pub mod cell;
pub mod cli;
pub mod clock;
pub mod command;
pub mod console;
pub mod data_folder;
pub mod demo;
pub mod drive;
pub mod error;
pub mod fixture;
pub mod follow;
pub mod fsread;
pub mod guard;
pub mod http;
pub mod init;
pub mod listen;
pub mod notify;
pub mod periodic;
pub mod publish;
pub mod runview;
pub mod serve;
pub mod signals;
pub mod simulate;
pub mod site;
pub mod tally;
pub mod tokens;
