//! A campaign from nothing, and what is wrong with one: `runboard init DIR
//! --example exec|inspect|cluster` writes one of the shipped examples
//! (`examples/<kind>/`, built into the binary) into a new folder;
//! `runboard check --root DIR` lists every finding the console would make
//! of a folder — its configuration, its matrix, its records, and the
//! preflight of every spec in it.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::campaign::Campaign;

/// The shipped examples, each as (path inside the campaign, content).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Example {
    /// Cells as plain commands (`cell.sh`), one process each.
    Exec,
    /// Cells as Inspect AI evals (`runboard cell inspect`), with a stand-in model.
    Inspect,
    /// A process cluster: a manager that takes the cells, rooms, a player.
    Cluster,
}

macro_rules! files {
    ($dir:literal: $($name:literal),+) => {
        &[$(($name, include_str!(concat!("../../../examples/", $dir, "/", $name)))),+]
    };
}

impl Example {
    pub fn files(self) -> &'static [(&'static str, &'static str)] {
        match self {
            Self::Exec => files!("exec": "campaign.toml", "matrix.csv", "cell.sh", "specs/drafts/first.json"),
            Self::Inspect => files!("inspect": "campaign.toml", "matrix.csv", "suite.py", "standin_model.py",
                "specs/drafts/first.json"),
            Self::Cluster => files!("cluster": "campaign.toml", "matrix.csv", "manager.py", "specs/drafts/first.json"),
        }
    }

    /// What to do next, in words.
    pub fn next_steps(self, dir: &Path) -> String {
        let d = dir.display();
        let setup = match self {
            Self::Exec | Self::Cluster => String::new(),
            Self::Inspect => format!(
                "  cd {d} && python3 -m venv .venv && .venv/bin/pip install inspect-ai openai\n  \
                 python3 {d}/standin_model.py --port 8791 &   # or point [[endpoints]] at your model server\n"
            ),
        };
        format!("{setup}  runboard check --root {d}\n  runboard serve --root {d}\n")
    }
}

/// Writes `example` into `dir` (made if missing). Refuses, writing nothing,
/// when `dir` holds any of the example's files already.
pub fn init(dir: &Path, example: Example) -> Result<Vec<PathBuf>, String> {
    let taken: Vec<String> = example
        .files()
        .iter()
        .filter(|(name, _)| dir.join(name).symlink_metadata().is_ok())
        .map(|(n, _)| n.to_string())
        .collect();
    if !taken.is_empty() {
        return Err(format!("{} already holds {}: nothing written", dir.display(), taken.join(", ")));
    }
    let mut written = Vec::new();
    for (name, content) in example.files() {
        let path = dir.join(name);
        let made = path
            .parent()
            .map_or(Ok(()), std::fs::create_dir_all)
            .and_then(|()| std::fs::OpenOptions::new().write(true).create_new(true).open(&path))
            .and_then(|mut f| std::io::Write::write_all(&mut f, content.as_bytes()));
        made.map_err(|e| format!("{}: {e}", path.display()))?;
        written.push(path);
    }
    Ok(written)
}

/// How much a finding matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    /// A batch cannot start (or the campaign does not open) until it is fixed.
    Blocking,
    /// Worth knowing; nothing is refused for it.
    Warning,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Finding {
    pub severity: Severity,
    /// The file it is about, relative to the root.
    pub place: String,
    pub message: String,
}

/// Every finding in the campaign at `root`, blocking ones first.
pub fn check(root: &Path) -> Vec<Finding> {
    let campaign = Campaign::open(root);
    let mut out = Vec::new();
    let mut add = |severity, place: &str, message: String| {
        out.push(Finding { severity, place: place.to_owned(), message });
    };
    let cfg = match campaign.config() {
        Ok(c) => Some(c),
        Err(e) => {
            for r in e.reasons {
                add(Severity::Blocking, runboard::campaign::CONFIG_FILE, r);
            }
            None
        }
    };
    if let Some(cfg) = &cfg {
        if cfg.runner.is_none() && cfg.cluster.is_none() {
            add(
                Severity::Blocking,
                runboard::campaign::CONFIG_FILE,
                "declares neither [runner] nor [cluster]: nothing can run a batch's cells".into(),
            );
        }
    }
    let (matrix, run_sets) = campaign.record_problems();
    for p in &matrix {
        add(Severity::Warning, "matrix.csv", p.strip_prefix("matrix.csv: ").unwrap_or(p).to_owned());
    }
    for p in run_sets.into_iter().chain(campaign.marker_problem()) {
        add(Severity::Warning, "runsets", p);
    }
    if cfg.is_some() {
        for rel in spec_files(root) {
            match campaign.preflight(&rel) {
                Ok(pf) => {
                    pf.refusals.into_iter().for_each(|r| add(Severity::Blocking, &rel, r));
                    pf.warnings.into_iter().for_each(|w| add(Severity::Warning, &rel, w));
                }
                Err(e) => e.reasons.into_iter().for_each(|r| add(Severity::Blocking, &rel, r)),
            }
        }
    }
    out.sort_by_key(|f| f.severity != Severity::Blocking);
    out
}

/// The specs a campaign holds: `specs/drafts/*.json` and
/// `specs/committed/*.json`, relative to the root, in name order.
fn spec_files(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for sub in ["specs/drafts", "specs/committed"] {
        let Ok(entries) = std::fs::read_dir(root.join(sub)) else { continue };
        let mut names: Vec<String> = entries
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
            .collect();
        names.sort();
        out.extend(names.into_iter().map(|n| format!("{sub}/{n}")));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_example_opens_and_its_spec_preflights_without_a_blocking_finding() {
        for example in [Example::Exec, Example::Inspect, Example::Cluster] {
            let tmp = tempfile::tempdir().unwrap();
            let dir = tmp.path().join("new");
            let written = init(&dir, example).unwrap();
            assert_eq!(written.len(), example.files().len());
            if example == Example::Inspect {
                // Issue 40 (item 16): without its Python environment the
                // example cannot start a cell, and the check says so.
                let blocking: Vec<String> =
                    check(&dir).into_iter().filter(|f| f.severity == Severity::Blocking).map(|f| f.message).collect();
                assert!(!blocking.is_empty(), "{blocking:?}");
                assert!(blocking.iter().all(|m| m.contains("command not found: .venv/bin/python")), "{blocking:?}");
                std::fs::create_dir_all(dir.join(".venv/bin")).unwrap();
                std::fs::write(dir.join(".venv/bin/python"), "#!/bin/sh\n").unwrap();
            }
            let findings = check(&dir);
            let blocking: Vec<_> = findings.iter().filter(|f| f.severity == Severity::Blocking).collect();
            assert!(blocking.is_empty(), "{example:?}: {blocking:?}");
            // It drafted the spec it ships, so it was checked.
            assert!(spec_files(&dir).contains(&"specs/drafts/first.json".to_owned()));
            // A second init into the same folder writes nothing.
            let again = init(&dir, example).unwrap_err();
            assert!(again.contains("already holds campaign.toml"), "{again}");
        }
    }

    #[test]
    fn a_broken_folder_is_reported_finding_by_finding() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        init(root, Example::Exec).unwrap();
        std::fs::write(root.join("matrix.csv"), "task,seed\nt1\n").unwrap();
        std::fs::write(root.join("specs/drafts/bad.json"), "{\"schema_version\": 1, \"label\": \"b\", \"cells\": [{\"factors\": {\"task\": \"t1\", \"seed\": 1, \"colour\": \"red\"}}]}").unwrap();
        let toml = std::fs::read_to_string(root.join("campaign.toml")).unwrap();
        std::fs::write(root.join("campaign.toml"), toml.replace("\"{out}\"]", "\"{out}\", \"{colour}\"]")).unwrap();
        let f = check(root);
        let words: Vec<String> = f.iter().map(|f| format!("{:?} {}: {}", f.severity, f.place, f.message)).collect();
        assert!(
            words.iter().any(|w| w.starts_with("Blocking specs/drafts/first.json: ") && w.contains("{colour}")),
            "{words:#?}"
        );
        assert!(words.iter().any(|w| w.starts_with("Warning matrix.csv: ")), "{words:#?}");
        assert_eq!(f[0].severity, Severity::Blocking, "blocking findings first: {words:#?}");
        std::fs::write(root.join("campaign.toml"), "schema_version = 1\nname = \"\"\n").unwrap();
        let f = check(root);
        assert!(f.iter().any(|f| f.severity == Severity::Blocking && f.place == "campaign.toml"), "{f:?}");
    }
}
