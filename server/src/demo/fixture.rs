//! The console test campaign, written by one function for every suite that
//! needs one: the server's integration tests and benches (`tests/common`) and
//! the end-to-end suite (through the hidden `runboard __console-fixture`).
//! Not the demo: the demo is a product, with history to show.
//!
//! The campaign: a task `t1` with phases warmup → main; a matrix of 2
//! conditions (`base`, `treat`) × 2 phases × 2 seeds; a local model `local-m`
//! served by endpoint `gpu-a` (request preset `default`); cells that run the
//! given command; more `[[models]]` tables as given; short graces (runner 5 s,
//! launcher 8 s) unless the defaults are asked for.

use std::path::Path;

/// What differs between the suites' campaigns.
#[derive(Debug, Clone)]
pub struct ConsoleFixture {
    pub name: String,
    /// The runner's command, one argument each (`{out}` and the factors are
    /// filled in per cell).
    pub command: Vec<String>,
    pub parallel: u32,
    /// More `[[models]]` tables, as TOML.
    pub models: String,
    /// The graces a new user gets (none written) instead of short ones.
    pub default_graces: bool,
}

/// Writes the campaign (`campaign.toml`, `matrix.csv`) into `root`, made if needed.
pub fn write_console_campaign(root: &Path, f: &ConsoleFixture) -> std::io::Result<()> {
    std::fs::create_dir_all(root)?;
    // A JSON string is a TOML basic string.
    let quoted: Vec<String> = f.command.iter().map(|a| serde_json::Value::from(a.as_str()).to_string()).collect();
    let command = format!("[{}]", quoted.join(", "));
    let runner_grace = if f.default_graces { "" } else { "grace_s = 5\n" };
    let launcher_grace = if f.default_graces { "" } else { "[launcher]\ngrace_s = 8\n" };
    let toml = format!(
        r#"schema_version = 1
name = {name}
[runner]
command = {command}
parallel = {parallel}
{runner_grace}[[tasks]]
name = "t1"
phases = ["warmup", "main"]
[[models]]
name = "local-m"
kind = "local"
{models}[[endpoints]]
name = "gpu-a"
url = "http://127.0.0.1:9/v1"
backend = "vllm"
models = ["local-m"]
request_preset = "default"
{launcher_grace}"#,
        name = serde_json::to_string(&f.name).map_err(std::io::Error::other)?,
        parallel = f.parallel,
        models = f.models,
    );
    std::fs::write(root.join("campaign.toml"), toml)?;
    let mut matrix = String::from("condition,task,phase,seed,repetition\n");
    for c in ["base", "treat"] {
        for p in ["warmup", "main"] {
            for s in [1, 2] {
                matrix += &format!("{c},t1,{p},{s},0\n");
            }
        }
    }
    std::fs::write(root.join("matrix.csv"), matrix)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixture_is_a_campaign_the_core_reads() {
        let tmp = tempfile::tempdir().unwrap();
        let f = ConsoleFixture {
            name: "a \"quoted\" name".into(),
            command: vec!["sh".into(), "-c".into(), "printf '{{\"tokens\": 1}}' > {out}/result.json".into()],
            parallel: 2,
            models: "[[models]]\nname = \"paid-m\"\nkind = \"paid\"\nprice_per_1k_tokens = 2.0\n".into(),
            default_graces: false,
        };
        write_console_campaign(tmp.path(), &f).unwrap();
        let text = std::fs::read_to_string(tmp.path().join("campaign.toml")).unwrap();
        let cfg = runboard::campaign::CampaignConfig::parse(&text).unwrap();
        assert_eq!(cfg.name, f.name);
        assert_eq!(cfg.models.len(), 2);
        assert_eq!(cfg.endpoints[0].request_preset.as_deref(), Some("default"));
        let runner = cfg.runner.as_ref().expect("a runner");
        assert_eq!((runner.command.clone(), runner.parallel), (f.command.clone(), 2));
        let matrix = std::fs::read_to_string(tmp.path().join("matrix.csv")).unwrap();
        assert_eq!(matrix.lines().count(), 9, "a header and 8 cells");
    }
}
