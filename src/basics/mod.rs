//! What every part shares and no part owns: timestamps and numbers as
//! records and pages write them, strict JSON from tolerant writers, and a
//! hash stable across processes.
//!
//! - [`timefmt`] — timestamps as they appear in records and on pages.
//! - [`numfmt`] — numbers, money and durations for people.
//! - [`json`] — strict-JSON reading of values written by tolerant writers
//!   (`NaN`, `Infinity` become `null`), and lists of names.
//! - [`hash`] — FNV-1a and SplitMix64, stable across processes, for ids and versions.

pub mod hash;
pub mod json;
pub mod numfmt;
pub mod timefmt;
