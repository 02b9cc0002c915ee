//! The process cluster and the cell runner a campaign declares in `campaign.toml`.
//!
//! With a `[cluster]`, a batch starts a manager (polled on its health URL until
//! ready), then its rooms, then its players, and submits the cells to the
//! manager. Without one, the `[runner]` runs each cell's command itself, N at a
//! time. Durations are seconds.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterConfig {
    pub manager: ManagerConfig,
    #[serde(default)]
    pub rooms: Option<ServiceConfig>,
    #[serde(default)]
    pub players: Vec<ServiceConfig>,
    /// How long terminated processes get before SIGKILL.
    #[serde(default = "default_grace")]
    pub grace_s: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ManagerConfig {
    #[serde(default = "manager_name")]
    pub name: String,
    /// argv; `{runset}`, `{out}`, `{logs}` are filled in.
    pub command: Vec<String>,
    /// Polled with GET until it answers 2xx. Must be a loopback address.
    pub health_url: String,
    /// Where the remaining cells are POSTed as JSON.
    pub submit_url: String,
    #[serde(default = "default_poll")]
    pub health_interval_s: f64,
    #[serde(default = "default_health_timeout")]
    pub health_timeout_s: f64,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// A group of identical processes (rooms, or one kind of player).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ServiceConfig {
    pub name: String,
    /// argv; `{index}` (0-based), `{runset}`, `{out}`, `{logs}` are filled in.
    pub command: Vec<String>,
    #[serde(default = "one")]
    pub count: u32,
    /// Pause before starting each process of the group. Rooms default to 2 s,
    /// players to 1 s (the orchestrator's spacing).
    #[serde(default)]
    pub start_delay_s: Option<f64>,
    /// Assigned round-robin as `DISPLAY`; empty: inherited.
    #[serde(default)]
    pub displays: Vec<String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// `[runner]`: how cells run when there is no cluster.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunnerConfig {
    #[serde(default)]
    pub kind: RunnerKind,
    /// argv; `{cell}`, `{out}` (the cell's output folder), `{runset}`, `{logs}`,
    /// and `{<factor>}` for each of the cell's factors are filled in.
    pub command: Vec<String>,
    /// How many cells run at once.
    #[serde(default = "one")]
    pub parallel: u32,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default = "default_grace")]
    pub grace_s: f64,
}

/// How a `[runner]` runs its cells.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunnerKind {
    /// One process per cell, its command filled in per cell (the only kind today).
    #[default]
    Exec,
}

pub const ROOM_DELAY_S: f64 = 2.0;
pub const PLAYER_DELAY_S: f64 = 1.0;

/// The driver's grace when `[runner]`/`[cluster]` set none (the seed's 35 s).
pub const DEFAULT_GRACE_S: f64 = 35.0;

fn default_grace() -> f64 {
    DEFAULT_GRACE_S
}
fn default_poll() -> f64 {
    0.5
}
fn default_health_timeout() -> f64 {
    60.0
}
fn one() -> u32 {
    1
}
fn manager_name() -> String {
    "manager".into()
}
