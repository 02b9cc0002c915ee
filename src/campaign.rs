//! The campaign: one experiment project, a folder (the *root*) holding
//! `campaign.toml`, the cell matrix and the run sets (see `docs/formats.md`).
//!
//! Only what the console shows today is parsed; unknown keys are kept out of the
//! way (not rejected) so a newer file still opens in an older console.

use serde::{Deserialize, Serialize};

/// The name of the campaign configuration file at the root.
pub const CONFIG_FILE: &str = "campaign.toml";

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// `campaign.toml`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CampaignConfig {
    pub schema_version: u32,
    /// Shown in the page title and header.
    pub name: String,
    #[serde(default)]
    pub description: String,
    /// The participants (models, players) cells may name; checked by the doctor.
    #[serde(default)]
    pub roster: Option<Vec<String>>,
    /// The process cluster a batch needs (manager, rooms, players).
    #[serde(default)]
    pub cluster: Option<crate::drive::config::ClusterConfig>,
    /// How cells run when there is no cluster.
    #[serde(default)]
    pub runner: Option<crate::drive::config::RunnerConfig>,
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CampaignError {
    #[error("campaign.toml: {0}")]
    Syntax(String),
    #[error("campaign.toml: schema_version {found} is newer than this runboard reads ({supported})")]
    TooNew { found: u32, supported: u32 },
    #[error("campaign.toml: name must not be empty")]
    EmptyName,
}

impl CampaignConfig {
    pub fn parse(text: &str) -> Result<Self, CampaignError> {
        let cfg: Self = toml::from_str(text).map_err(|e| {
            // Say where: toml's spans are byte offsets; turn them into a line.
            let line = e.span().map(|s| text[..s.start.min(text.len())].matches('\n').count() + 1);
            let msg = e.message().trim().to_owned();
            CampaignError::Syntax(match line {
                Some(l) => format!("line {l}: {msg}"),
                None => msg,
            })
        })?;
        if cfg.schema_version > SCHEMA_VERSION {
            return Err(CampaignError::TooNew { found: cfg.schema_version, supported: SCHEMA_VERSION });
        }
        if cfg.name.trim().is_empty() {
            return Err(CampaignError::EmptyName);
        }
        Ok(cfg)
    }

    /// The configuration of a folder that has no `campaign.toml`: named after it.
    pub fn unnamed(folder_name: &str) -> Self {
        Self {
            schema_version: SCHEMA_VERSION,
            name: folder_name.to_owned(),
            description: String::new(),
            roster: None,
            cluster: None,
            runner: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_minimal_config_and_ignores_unknown_keys() {
        let cfg = CampaignConfig::parse("schema_version = 1\nname = \"demo\"\n[later]\nx = 1\n").unwrap();
        assert_eq!(cfg.name, "demo");
        assert_eq!(cfg.description, "");
    }

    #[test]
    fn refusals_say_why() {
        let cases = [
            ("name = \"x\"", "missing field `schema_version`"),
            ("schema_version = 9\nname = \"x\"", "newer than this runboard reads"),
            ("schema_version = 1\nname = \" \"", "name must not be empty"),
            ("schema_version = 1\nname = ", "campaign.toml:"),
        ];
        for (text, want) in cases {
            let err = CampaignConfig::parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?} -> {err}");
        }
    }
}
