//! The records of a run directory, as far as the console reads them.
//!
//! Every field a writer might not have written is an `Option` or has a neutral
//! default: an older run reads with `None` for what it lacks, nothing is made up.
//! Unknown fields are ignored so newer writers stay readable.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// `snapshot.json`: what the campaign was started with.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Snapshot {
    #[serde(default)]
    pub schema_version: Option<u32>,
    /// The run's own name for itself; the directory name is what identifies it.
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub settings: RunSettings,
}

/// The settings a run was first started with (`snapshot.json` → `settings`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunSettings {
    #[serde(default)]
    pub model: Option<String>,
    /// Rounds the campaign plans to run.
    #[serde(default)]
    pub rounds: Option<u32>,
    #[serde(default)]
    pub slots_per_round: Option<u32>,
}

/// `state.json`: how many rounds are written, when the run was last opened, and
/// its last stop. A resumed run keeps the stop of its previous open here until it
/// stops again, so `last_stop` alone does not mean "stopped" (see `summary`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StateFile {
    #[serde(default)]
    pub schema_version: Option<u32>,
    #[serde(default)]
    pub rounds_written: u32,
    #[serde(default)]
    pub opened_at: Option<String>,
    #[serde(default)]
    pub updated_at: Option<String>,
    #[serde(default)]
    pub last_stop: Option<Stop>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Stop {
    #[serde(default)]
    pub at: Option<String>,
    #[serde(default)]
    pub reason: Option<String>,
}

impl StateFile {
    pub fn opened_at(&self) -> Option<Timestamp> {
        self.opened_at.as_deref().and_then(Timestamp::parse_rfc3339)
    }
    pub fn updated_at(&self) -> Option<Timestamp> {
        self.updated_at.as_deref().and_then(Timestamp::parse_rfc3339)
    }
}
