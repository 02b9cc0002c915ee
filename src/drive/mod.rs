//! The batch driver's decisions: what a campaign's cluster is, what the
//! doctor finds before anything starts, which cells remain on resume, how a
//! command template is filled, the statuses of processes and cells, and the
//! records a run set keeps. The server's `drive` adapter spawns and watches the
//! processes; every rule it follows lives here.
//!
//! - [`config`] — `[cluster]` and `[runner]` in `campaign.toml`.
//! - [`doctor`] — the gate: findings from the spec, the config and observed facts.
//! - [`plan`] — remaining cells (resume) and command templates.
//! - [`records`] — process and cell statuses, cell records, the batch outcome.
//! - [`result`] — a cell's own report, `{out}/result.json` (the cell contract).

pub mod config;
pub mod doctor;
pub mod plan;
pub mod records;
pub mod result;
