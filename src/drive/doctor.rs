//! The gate: what would stop a batch, found before anything starts.
//!
//! The adapter observes the facts (which programs exist, which ports are taken,
//! which artefacts are on disk); [`diagnose`] decides. A *blocking* finding stops
//! the run even with `--force`; a *warning* stops it unless `--force` is given.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::config::{ClusterConfig, RunnerConfig};
use super::plan::{fill, pool_assignment, route_vars, runner_vars, BatchVars, FIXED_VARS};
use crate::console::spec::BatchSpec;

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Severity {
    Blocking,
    Warning,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Finding {
    pub severity: Severity,
    pub message: String,
}

/// What the adapter observed.
#[derive(Debug, Clone, Default)]
pub struct Facts {
    /// Each program named by a command, and whether it was found.
    pub programs: BTreeMap<String, bool>,
    /// Loopback ports that something already listens on.
    pub ports_taken: BTreeSet<u16>,
    /// Each artefact (relative to the root), and whether it exists.
    pub artefacts: BTreeMap<String, bool>,
    /// The label of the spec a resumed run set was made from, if it differs.
    pub resume_label: Option<String>,
    /// The catalogue's endpoint URLs (`{endpoint_url}` in a runner command).
    pub endpoint_urls: BTreeMap<String, String>,
}

/// A URL's host and port, for `http://host:port/...` only.
pub fn http_host_port(url: &str) -> Option<(String, u16)> {
    let rest = url.strip_prefix("http://")?;
    let authority = rest.split('/').next()?;
    let (host, port) = match authority.rsplit_once(':') {
        Some((h, p)) if !h.ends_with(']') || h.starts_with('[') => (h, p.parse().ok()?),
        _ => (authority, 80),
    };
    Some((host.trim_start_matches('[').trim_end_matches(']').to_owned(), port))
}

pub fn is_loopback_host(host: &str) -> bool {
    host == "localhost" || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The programs the cluster or runner would start: the first word of each
/// command, and the interpreter a harness adapter of runboard's starts in
/// turn (`{runboard} cell inspect … --python P`: P), so a missing virtual
/// environment is found before the batch rather than by each cell failing.
pub fn programs(cluster: Option<&ClusterConfig>, runner: Option<&RunnerConfig>) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut add = |command: &[String]| {
        out.extend(command.first().cloned());
        if command.first().is_some_and(|p| p == "{runboard}") && command.get(1).is_some_and(|w| w == "cell") {
            let python = command.iter().skip_while(|a| *a != "--python").nth(1);
            // A templated value is known only per cell: not checked here.
            out.extend(python.filter(|p| !p.contains('{')).cloned());
        }
    };
    if let Some(c) = cluster {
        add(&c.manager.command);
        c.rooms.iter().chain(&c.players).for_each(|s| add(&s.command));
    }
    if let Some(r) = runner {
        add(&r.command);
    }
    out
}

/// The names the driver fills for every command, each with a placeholder
/// value: what a template may name before the batch has its folders.
fn blank_fixed_vars() -> BTreeMap<String, String> {
    FIXED_VARS.iter().map(|k| ((*k).to_owned(), String::new())).collect()
}

/// Decides the findings. `roster`: the participants the campaign knows (models
/// and players); when given, every model a cell names must be on it.
pub fn diagnose(
    spec: &BatchSpec,
    cluster: Option<&ClusterConfig>,
    runner: Option<&RunnerConfig>,
    roster: Option<&[String]>,
    facts: &Facts,
) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut block = |m: String| out.push(Finding { severity: Severity::Blocking, message: m });
    match (cluster, runner) {
        (None, None) => {
            block("campaign.toml declares neither [cluster] nor [runner]: nothing can run the cells".into())
        }
        (Some(c), _) => {
            for (what, url) in [("health_url", &c.manager.health_url), ("submit_url", &c.manager.submit_url)] {
                match http_host_port(url) {
                    None => block(format!("cluster.manager.{what} {url:?} is not an http://host:port URL")),
                    Some((host, _)) if !is_loopback_host(&host) => {
                        block(format!("cluster.manager.{what} {url:?} is not a loopback address; the driver only talks to local managers"))
                    }
                    Some((_, port)) if what == "health_url" && facts.ports_taken.contains(&port) => block(format!(
                        "port {port} of cluster.manager.health_url is already taken: is another manager still running?"
                    )),
                    Some(_) => {}
                }
            }
            let groups = std::iter::once(("cluster.manager", &c.manager.command))
                .chain(c.rooms.iter().map(|r| ("cluster.rooms", &r.command)))
                .chain(c.players.iter().map(|p| ("cluster.players", &p.command)));
            for (what, cmd) in groups {
                if cmd.is_empty() {
                    block(format!("{what}.command is empty"));
                }
                // What a cluster command may name: the batch's folders, and the
                // process's index for rooms and players. Anything else would start
                // the process with a literal `{placeholder}`.
                let mut vars = blank_fixed_vars();
                if what != "cluster.manager" {
                    vars.insert("index".into(), String::new());
                }
                if let Err(e) = fill(cmd, &vars) {
                    block(format!("{what}.command: {e}"));
                }
            }
        }
        (None, Some(r)) => {
            if r.parallel == 0 {
                block("runner.parallel must be at least 1".into());
            }
            if r.command.is_empty() {
                block("runner.command is empty".into());
            }
            let batch = BatchVars { fixed: blank_fixed_vars(), endpoint_urls: facts.endpoint_urls.clone() };
            let route = route_vars(spec);
            let pool = pool_assignment(spec);
            for cell in &spec.cells {
                let vars = runner_vars(&route, &pool, cell, &batch);
                if let Err(e) = fill(&r.command, &vars) {
                    block(format!("runner.command for cell {}: {e}", cell.id));
                    break;
                }
            }
        }
    }
    for (program, found) in &facts.programs {
        if !found {
            block(format!("command not found: {program}"));
        }
    }
    for (artefact, present) in &facts.artefacts {
        if !present {
            block(format!("required artefact missing: {artefact}"));
        }
    }
    if let Some(roster) = roster {
        let mut named: BTreeSet<String> = spec.model.iter().cloned().collect();
        for cell in &spec.cells {
            for key in ["model", "player"] {
                if let Some(v) = cell.factors.get(key) {
                    named.insert(v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()));
                }
            }
        }
        for name in named.iter().filter(|n| !roster.contains(n)) {
            block(format!("missing roster entry: {name} is not in campaign.toml's roster"));
        }
    }
    let grace = cluster.map(|c| c.grace_s).or(runner.map(|r| r.grace_s));
    if let Some(g) = grace.filter(|g| *g < 1.0) {
        out.push(Finding {
            severity: Severity::Warning,
            message: format!("grace period {g} s leaves children under a second to stop"),
        });
    }
    if let Some(old) = &facts.resume_label {
        out.push(Finding {
            severity: Severity::Warning,
            message: format!("the run set being resumed was made from spec {old:?}, not {:?}", spec.label),
        });
    }
    out.sort_by_key(|f| f.severity);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::spec::parse;

    fn spec() -> BatchSpec {
        parse("s.json", br#"{"schema_version":1,"label":"b","model":"qwen","cells":[{"factors":{"task":"t1"}}]}"#)
            .unwrap()
    }

    fn cluster(health: &str) -> ClusterConfig {
        toml::from_str(&format!(
            "[manager]\ncommand = [\"mgr\"]\nhealth_url = \"{health}\"\nsubmit_url = \"http://127.0.0.1:9/cells\"\n"
        ))
        .unwrap()
    }

    fn messages(f: &[Finding]) -> Vec<String> {
        f.iter().map(|f| f.message.clone()).collect()
    }

    /// Issue 40 (item 16): the interpreter `runboard cell inspect` starts is
    /// a program the batch needs, checked before it starts.
    #[test]
    fn a_harness_adapters_interpreter_is_a_program_to_find() {
        let runner = |command: &[&str]| RunnerConfig {
            kind: Default::default(),
            command: command.iter().map(|s| (*s).to_owned()).collect(),
            parallel: 1,
            env: BTreeMap::new(),
            grace_s: 5.0,
        };
        let inspect =
            runner(&["{runboard}", "cell", "inspect", "suite.py@{task}", "--python", ".venv/bin/python", "--", "-x"]);
        assert_eq!(programs(None, Some(&inspect)).into_iter().collect::<Vec<_>>(), [".venv/bin/python", "{runboard}"]);
        let templated = runner(&["{runboard}", "cell", "inspect", "--python", "{py}"]);
        assert_eq!(programs(None, Some(&templated)).len(), 1, "a templated interpreter is known per cell only");
    }

    #[test]
    fn urls_are_parsed_for_host_and_port() {
        assert_eq!(http_host_port("http://127.0.0.1:9100/health"), Some(("127.0.0.1".into(), 9100)));
        assert_eq!(http_host_port("http://localhost/x"), Some(("localhost".into(), 80)));
        assert_eq!(http_host_port("http://[::1]:7/"), Some(("::1".into(), 7)));
        assert_eq!(http_host_port("https://a:1/"), None);
        assert!(is_loopback_host("::1") && is_loopback_host("127.0.0.9") && !is_loopback_host("10.0.0.1"));
    }

    #[test]
    fn blocking_findings_say_what_and_where() {
        let mut facts = Facts::default();
        facts.programs.insert("mgr".into(), false);
        facts.artefacts.insert("manuals/m.json".into(), false);
        facts.ports_taken.insert(9100);
        let roster = vec!["llama".to_owned()];
        let got =
            messages(&diagnose(&spec(), Some(&cluster("http://127.0.0.1:9100/health")), None, Some(&roster), &facts));
        assert_eq!(
            got,
            [
                "port 9100 of cluster.manager.health_url is already taken: is another manager still running?",
                "command not found: mgr",
                "required artefact missing: manuals/m.json",
                "missing roster entry: qwen is not in campaign.toml's roster",
            ]
        );
        let remote = diagnose(&spec(), Some(&cluster("http://10.1.2.3:9100/health")), None, None, &Facts::default());
        assert_eq!(messages(&remote), ["cluster.manager.health_url \"http://10.1.2.3:9100/health\" is not a loopback address; the driver only talks to local managers"]);
        assert!(remote.iter().all(|f| f.severity == Severity::Blocking));
    }

    #[test]
    fn cluster_templates_may_name_only_what_the_driver_fills() {
        let c: ClusterConfig = toml::from_str(concat!(
            "[manager]\ncommand = [\"mgr\", \"--out\", \"{out}\", \"--port\", \"{port}\"]\n",
            "health_url = \"http://127.0.0.1:9/h\"\nsubmit_url = \"http://127.0.0.1:9/c\"\n",
            "[rooms]\nname = \"room\"\ncommand = [\"room\", \"{index}\", \"{runset}\"]\ncount = 2\n",
            "[[players]]\nname = \"player\"\ncommand = [\"player\", \"{model}\"]\n",
        ))
        .unwrap();
        let got = messages(&diagnose(&spec(), Some(&c), None, None, &Facts::default()));
        assert_eq!(
            got,
            [
                "cluster.manager.command: {port} in \"{port}\" has no value",
                "cluster.players.command: {model} in \"{model}\" has no value",
            ]
        );
    }

    #[test]
    fn runner_templates_are_checked_per_cell() {
        let runner: RunnerConfig = toml::from_str("command = [\"run\", \"{task}\", \"{colour}\"]").unwrap();
        let got = messages(&diagnose(&spec(), None, Some(&runner), None, &Facts::default()));
        assert_eq!(got.len(), 1);
        assert!(got[0].ends_with("{colour} in \"{colour}\" has no value"), "{got:?}");
        let ok: RunnerConfig = toml::from_str("command = [\"run\", \"{task}\", \"{out}\"]\nparallel = 2").unwrap();
        assert!(diagnose(&spec(), None, Some(&ok), None, &Facts::default()).is_empty());
        assert_eq!(
            messages(&diagnose(&spec(), None, None, None, &Facts::default())),
            ["campaign.toml declares neither [cluster] nor [runner]: nothing can run the cells"]
        );
    }

    #[test]
    fn warnings_come_after_blocking_findings() {
        let runner: RunnerConfig = toml::from_str("command = [\"run\"]\ngrace_s = 0.2").unwrap();
        let facts = Facts { resume_label: Some("old".into()), ..Facts::default() };
        let f = diagnose(&spec(), None, Some(&runner), None, &facts);
        assert_eq!(f.len(), 2);
        assert!(f.iter().all(|f| f.severity == Severity::Warning));
    }
}
