//! # runboard core
//!
//! The product vocabulary as types, and the decisions made over them as pure
//! functions. Nothing in this crate reads a clock, a file, a socket or a process:
//! callers pass bytes and `now` in, and get values back. That keeps every rule
//! testable with a table of inputs, and lets the WASM front end share these types.
//!
//! Modules are nouns from the product's vocabulary:
//!
//! - [`campaign`] — the campaign folder's configuration (`campaign.toml`).
//! - [`runview`] — what a run directory (the folder one agent campaign writes)
//!   means: its records, its events typed once, how a partly written file is
//!   read, the summary the run list shows, and the trials' queries and pages.
//! - [`spec`] — the batch spec: parsing (errors name file and field), merging a
//!   spec folder, stable cell ids.
//! - [`drive`] — the batch driver's decisions: the cluster and runner
//!   configuration, the doctor's findings, which cells remain, the records a
//!   run set keeps.
//! - [`hash`] — FNV-1a, stable across processes, for ids and versions.
//! - [`json`] — strict-JSON reading of values written by tolerant writers
//!   (`NaN`, `Infinity` become `null`), and lists of names.
//! - [`timefmt`] — timestamps as they appear in records and on pages.

pub mod campaign;
pub mod drive;
pub mod hash;
pub mod json;
pub mod runview;
pub mod spec;
pub mod timefmt;

pub use timefmt::Timestamp;
