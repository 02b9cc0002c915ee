//! # runboard core
//!
//! The product vocabulary as types, and the decisions made over them as pure
//! functions. Nothing in this crate reads a clock, a file, a socket or a process:
//! callers pass bytes and `now` in, and get values back. That keeps every rule
//! testable with a table of inputs, and lets the WASM front end share these types.
//!
//! Modules are nouns from `../shared/design/product.md`:
//!
//! - [`campaign`] — the campaign folder's configuration (`campaign.toml`).
//! - [`runview`] — what a run directory (seed 001) means: its records, how a
//!   partly written file is read, and the summary the run list shows.
//! - [`hash`] — FNV-1a, stable across processes, for ids and versions.
//! - [`json`] — strict-JSON reading of values written by tolerant writers
//!   (`NaN`, `Infinity` become `null`).
//! - [`timefmt`] — timestamps as they appear in records and on pages.

pub mod campaign;
pub mod drive;
pub mod hash;
pub mod json;
pub mod runview;
pub mod spec;
pub mod timefmt;

pub use timefmt::Timestamp;
