//! Harnesses as cells: what runboard's adapters for third-party evaluation
//! harnesses decide, as functions of the harness's own files. The server's
//! `runboard cell …` commands run the harness and write the cell's report;
//! the rules live here.
//!
//! - [`inspect`] — Inspect AI: how a cell starts (a fresh eval, or Inspect's
//!   own retry of the unfinished one) and what its eval log reports.

pub mod inspect;
