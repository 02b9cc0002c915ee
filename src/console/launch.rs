//! The one launch path's pure parts: which spec paths may be launched, what a
//! launch, a resume and a stop ask for and answer. The path itself
//! (`Campaign::start`: contain → parse → preflight → number → name → launch → tag)
//! runs in the server; the page, the CLI and the autopilot all call it.

use serde::{Deserialize, Serialize};

use crate::console::preflight::Prediction;

/// `POST /api/control/start`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct LaunchRequest {
    /// The spec, relative to the campaign root, under `specs/`.
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(value_name = "SPEC"))]
    pub path: String,
    /// Launch without the static preflight (the driver's own doctor still runs).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub skip_preflight: bool,
    /// The tag the run set is attached to (default `console`).
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub tag: Option<String>,
}

/// `POST /api/control/resume`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct ResumeRequest {
    /// The stopped run set whose unfinished cells run again.
    #[serde(default)]
    pub run_set: String,
    /// Resume without the static preflight.
    #[serde(default)]
    #[cfg_attr(feature = "cli", arg(long))]
    pub skip_preflight: bool,
}

/// `POST /api/control/stop`: the run sets to stop and abort (default: the
/// one the live state speaks for). Other batches in flight are left running.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct StopRequest {
    /// The run sets to stop and abort (default: the batch the live state
    /// speaks for; other batches in flight run on).
    #[serde(default)]
    pub run_sets: Vec<String>,
}

/// `POST /api/control/pause`: the run set to pause (default: the one the live
/// state speaks for). Other batches in flight are left running.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "cli", derive(clap::Args))]
pub struct PauseRequest {
    /// The run set to pause (default: the batch the live state speaks for).
    #[serde(default)]
    pub run_set: Option<String>,
}

/// `POST /api/control/stop-cell`: one running cell of a batch to end (a
/// stalled one, say); the rest of its batch goes on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StopCellRequest {
    pub run_set: String,
    pub cell: String,
}

/// What ending one cell did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StopCellReport {
    pub run_set: String,
    pub cell: String,
    /// Its processes sent SIGTERM.
    pub processes: usize,
    /// In words: what was done, and what the batch does next.
    pub words: String,
}

/// A launch's answer.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Launched {
    pub unit: String,
    /// The committed spec, relative to the root.
    pub spec: String,
    /// The run set the batch writes (decided before it starts).
    pub run_set: String,
    pub tag: String,
    /// The preflight's prediction (none when it was skipped).
    pub prediction: Option<Prediction>,
}

/// What a pause or a stop did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StopReport {
    /// The run sets this control acted on.
    #[serde(default)]
    pub run_sets: Vec<String>,
    /// Each unit ended, in words: `<unit> (<run set>): <what happened>`.
    pub units: Vec<String>,
    /// The lease release hook's result, when one is configured and ran.
    pub lease: Option<HookResult>,
    /// For a stop: each targeted run set, and what was done to it.
    pub aborted: Vec<String>,
    /// Whether auto mode is off now (a stop always turns it off).
    pub auto_off: bool,
    /// The marker's status afterwards.
    pub marker: Option<crate::live::MarkerStatus>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HookResult {
    pub ok: bool,
    /// Its exit status, or why it did not end normally.
    pub status: String,
    /// The end of its output.
    pub output: String,
}

/// Checks a spec path as the request gives it: relative, under `specs/`, no
/// `..`, no empty or `.` parts. The adapter then checks that it names an
/// existing regular file that resolves inside the root.
pub fn check_spec_path(path: &str) -> Result<(), String> {
    let p = path.trim();
    if p.is_empty() {
        return Err("path: missing (give the spec's path under specs/)".into());
    }
    if p.starts_with('/') || p.contains('\\') {
        return Err(format!(
            "path {:?}: must be relative to the campaign root, under specs/",
            crate::console::spec::shorten(p)
        ));
    }
    let parts: Vec<&str> = p.split('/').collect();
    if parts.iter().any(|c| c.is_empty() || *c == "." || *c == "..") {
        return Err(format!("path {:?}: no '..', '.' or empty parts", crate::console::spec::shorten(p)));
    }
    if parts.first() != Some(&"specs") || parts.len() < 2 {
        return Err(format!("path {:?}: must be under specs/", crate::console::spec::shorten(p)));
    }
    if !p.ends_with(".json") {
        return Err(format!("path {:?}: a spec is a .json file", crate::console::spec::shorten(p)));
    }
    Ok(())
}

/// The unit name of a run set's unit: `rb-<run set>` (valid as a systemd unit
/// name and a Slurm job name: the run set is made of `A-Za-z0-9-_.`).
pub fn unit_name(run_set: &str) -> String {
    format!("rb-{run_set}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_paths_under_specs_pass() {
        assert!(check_spec_path("specs/drafts/b1.json").is_ok());
        assert!(check_spec_path("specs/committed/0001-b1.json").is_ok());
        for (bad, why) in [
            ("", "missing"),
            ("/etc/passwd", "must be relative"),
            ("specs/../campaign.toml", "no '..'"),
            ("specs//x.json", "no '..'"),
            ("runsets/x.json", "under specs/"),
            ("specs", "under specs/"),
            ("specs/b1.txt", "a .json file"),
        ] {
            let e = check_spec_path(bad).unwrap_err();
            assert!(e.contains(why), "{bad}: {e}");
        }
    }
}
