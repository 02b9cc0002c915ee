//! Harnesses as cells: what runboard's adapters for third-party evaluation
//! harnesses decide, as functions of the harness's own files. The server's
//! `runboard cell …` commands run the harness and write the cell's report;
//! the rules live here.
//!
//! - [`inspect`] — Inspect AI: how a cell starts (a fresh eval, or Inspect's
//!   own retry of the unfinished one) and what its eval log reports.
//! - [`samples`] — the samples behind a cell's number, read from Inspect's
//!   logs (JSON streamed, `.eval` one sample file at a time), and the samples
//!   that flipped between two cells.

pub mod inspect;
pub mod samples;
