//! The console's path from the plan to a launched batch: the matrix of
//! planned cells, where each stands (coverage), the next batch drafted from
//! the gaps, the batch spec, what would stop it (preflight, with the model
//! catalogue), how cells share endpoints (pool), and the one launch path's
//! pure parts.
//!
//! - [`matrix`] — the planned cells (`matrix.csv`) and how a row becomes a cell.
//! - [`coverage`] — where each planned cell stands across every run set, counted
//!   per factor and on a two-factor grid.
//! - [`draft`] — the next batch filled from gaps under the chain rules.
//! - [`spec`] — the batch spec: parsing (errors name file and field), merging a
//!   spec folder, stable cell ids.
//! - [`preflight`] — what would stop a batch, found before it is launched: the
//!   doctor's findings, the catalogue, daily caps and the predicted budget.
//! - [`catalogue`] — the models and endpoints, each with what it costs and
//!   whether it answers.
//! - [`pool`] — which endpoint each cell of a pooled batch runs on.
//! - [`launch`] — the one launch path's pure parts: which spec paths may be
//!   launched; what a launch, resume and stop ask and answer.

pub mod catalogue;
pub mod coverage;
pub mod draft;
pub mod launch;
pub mod matrix;
pub mod pool;
pub mod preflight;
pub mod spec;
