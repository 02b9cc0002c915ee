//! The campaign: one experiment project, a folder (the *root*) holding
//! `campaign.toml`, the cell matrix and the run sets (see `docs/formats.md`).
//!
//! Only what the console shows today is parsed; unknown keys are kept out of the
//! way (not rejected) so a newer file still opens in an older console.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// The name of the campaign configuration file at the root.
pub const CONFIG_FILE: &str = "campaign.toml";

/// The schema version this build writes and reads.
pub const SCHEMA_VERSION: u32 = 1;

/// How much longer than the driver's grace the launcher waits by default
/// before it SIGKILLs a driver it asked to stop (seconds).
pub const LAUNCHER_GRACE_MARGIN_S: f64 = 10.0;

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
    /// The task library: each task's phases in chain order.
    #[serde(default)]
    pub tasks: Vec<TaskEntry>,
    /// The model catalogue.
    #[serde(default)]
    pub models: Vec<ModelEntry>,
    /// The endpoint catalogue.
    #[serde(default)]
    pub endpoints: Vec<EndpointEntry>,
    /// Caps on spend: a batch's prediction is refused over them, a running
    /// batch is paused at them.
    #[serde(default)]
    pub budget: Budget,
    /// When a silent running cell is stalled, and what is done.
    #[serde(default)]
    pub stall: StallConfig,
    /// How batches are started (local supervisor by default).
    #[serde(default)]
    pub launcher: LauncherConfig,
    /// Commands the console runs at control points.
    #[serde(default)]
    pub hooks: Hooks,
    /// How results are counted.
    #[serde(default)]
    pub results: ResultsConfig,
    /// How the evidence is published.
    #[serde(default)]
    pub publish: PublishConfig,
    /// The currency every price (`price_per_1k_tokens`) and cost is in, as
    /// its code (`USD`, `EUR`, …); default `USD`.
    #[serde(default = "default_currency")]
    pub currency: String,
}

fn default_currency() -> String {
    "USD".into()
}

/// `[publish]`: the command a push runs, and its time limit.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishConfig {
    /// Program and arguments, run in the campaign root with the export's
    /// files named in its environment (see docs/formats.md, "Publish").
    #[serde(default)]
    pub command: Option<Vec<String>>,
    /// Seconds a push may take before it is killed (default 600).
    #[serde(default)]
    pub timeout_s: Option<f64>,
}

impl PublishConfig {
    pub const DEFAULT_TIMEOUT_S: f64 = 600.0;

    pub fn timeout_s(&self) -> f64 {
        self.timeout_s.unwrap_or(Self::DEFAULT_TIMEOUT_S)
    }
}

/// `[results]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ResultsConfig {
    /// A `done` cell passes only with a score at least this (default: every
    /// `done` cell passes).
    #[serde(default)]
    pub pass_score: Option<f64>,
    /// Factors the public export leaves out (who a participant is, a private
    /// prompt's name…); cell ids, which derive from every factor, are never exported.
    #[serde(default)]
    pub private_factors: Vec<String>,
    /// What a pass rate counts: each ended cell once (default), or the
    /// samples of each `done` cell that reported them.
    #[serde(default)]
    pub count: CountUnit,
}

/// `[results] count`: the unit of every pass rate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CountUnit {
    /// One trial per ended cell: passed or not.
    #[default]
    Cells,
    /// A `done` cell that reported `samples` counts them (`passed` of
    /// `total`); any other ended cell counts once, as with `cells`. For
    /// harnesses whose cell runs a dataset (an Inspect eval): the rate is then
    /// the harness's own accuracy.
    Samples,
}

/// A task and its chain: its phases in order. A draft never includes a phase
/// whose earlier phase (same other factors) the matrix plans but is not yet
/// covered.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TaskEntry {
    pub name: String,
    #[serde(default)]
    pub phases: Vec<String>,
    #[serde(default)]
    pub description: String,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ModelKind {
    /// Served by the campaign's own endpoints.
    #[default]
    Local,
    /// A paid API route.
    Paid,
}

impl ModelKind {
    /// Its name in `campaign.toml` and in answers.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Paid => "paid",
        }
    }
}

/// A model the campaign may run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ModelEntry {
    pub name: String,
    pub kind: ModelKind,
    /// Batches that may be launched with this model per UTC day; none: no cap.
    #[serde(default)]
    pub daily_cap: Option<u32>,
    /// Price per 1,000 tokens (in `currency`): every kind of token, unless
    /// priced apart below.
    #[serde(default)]
    pub price_per_1k_tokens: f64,
    /// Prices per 1,000 input, output and cached-input tokens; each left out
    /// is `price_per_1k_tokens` (`runboard::spend::Prices`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_input_per_1k: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_output_per_1k: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub price_cached_per_1k: Option<f64>,
}

impl ModelEntry {
    /// An entry with one price for every kind of token.
    pub fn new(name: &str, kind: ModelKind, daily_cap: Option<u32>, price_per_1k_tokens: f64) -> Self {
        Self { name: name.to_owned(), kind, daily_cap, price_per_1k_tokens, ..Default::default() }
    }
}

/// A physical model server (a lane).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointEntry {
    pub name: String,
    /// Its OpenAI-compatible base URL (`http://host:port/v1`).
    pub url: String,
    /// What serves it (`vllm`, `sglang`, `llama.cpp`, …).
    pub backend: String,
    /// The catalogue models it serves.
    pub models: Vec<String>,
    /// The request preset batches on it use.
    #[serde(default)]
    pub request_preset: Option<String>,
    /// Where its Prometheus metrics are read (`runboard::telemetry`); left
    /// out: `<url without /v1>/metrics` for a `vllm` backend, none
    /// otherwise; `""`: never read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metrics_url: Option<String>,
    /// The autopilot launches nothing new on it while its engine reports at
    /// least this many requests waiting (none: never held for it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_waiting: Option<u32>,
    /// Whether a batch's cells reach it through the batch's gateway, which
    /// counts every call (default: yes, for an `http://` URL); `false` turns
    /// it off — its calls are then not seen.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gateway: Option<bool>,
    /// The most calls of a batch in flight to it at once, through the
    /// batch's gateway (`runboard::gateway::limiter`; none: no limit until
    /// the endpoint answers an overload).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_concurrency: Option<u32>,
}

impl EndpointEntry {
    /// Whether a batch's gateway serves it: on unless turned off, for an
    /// `http://` or `https://` URL.
    pub fn gatewayed(&self) -> bool {
        self.gateway != Some(false) && (self.url.starts_with("http://") || self.url.starts_with("https://"))
    }
}

/// `[budget]`: caps on spend (none: not capped). `max_*` limit one batch —
/// its prediction at preflight and its spend while it runs; `daily_max_*`
/// everything spent in a UTC day; `campaign_max_*` everything the
/// campaign's run sets spent. Spend past a cap pauses the batch
/// (`runboard::spend`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Budget {
    #[serde(default)]
    pub max_tokens: Option<u64>,
    #[serde(default)]
    pub max_cost: Option<f64>,
    #[serde(default)]
    pub max_hours: Option<f64>,
    #[serde(default)]
    pub daily_max_tokens: Option<u64>,
    #[serde(default)]
    pub daily_max_cost: Option<f64>,
    #[serde(default)]
    pub campaign_max_tokens: Option<u64>,
    #[serde(default)]
    pub campaign_max_cost: Option<f64>,
    /// How often the console checks live spend against the caps (seconds,
    /// 0.5–60, default 2): how far a batch can run past a cap.
    #[serde(default)]
    pub poll_s: Option<f64>,
}

/// The default of `[budget] poll_s`.
pub const DEFAULT_BUDGET_POLL_S: f64 = 2.0;
/// The default of `[stall] floor_s`.
pub const DEFAULT_STALL_FLOOR_S: f64 = 120.0;

impl Budget {
    pub fn poll_s(&self) -> f64 {
        self.poll_s.unwrap_or(DEFAULT_BUDGET_POLL_S)
    }

    /// Whether a day's or the campaign's cap is set: caps that count other
    /// run sets' spend too.
    pub fn caps_other_run_sets(&self) -> bool {
        self.daily_max_tokens.is_some()
            || self.daily_max_cost.is_some()
            || self.campaign_max_tokens.is_some()
            || self.campaign_max_cost.is_some()
    }

    /// Whether any cap on live spend is set.
    pub fn caps_spend(&self) -> bool {
        self.max_tokens.is_some() || self.max_cost.is_some() || self.caps_other_run_sets()
    }
}

/// What the console does when a running cell stalls.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StallAction {
    /// Show it and notify (`[hooks] notify`); the cell runs on.
    #[default]
    Notify,
    /// Also end the cell's processes (SIGTERM to each process carrying its
    /// `RUNBOARD_CELL`), so it ends `failed` and a resume runs it again.
    Stop,
}

/// `[stall]`: when a running cell that writes nothing is `stalled`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StallConfig {
    /// A fixed threshold (seconds) for every task; none: from history.
    #[serde(default)]
    pub after_s: Option<f64>,
    /// The least threshold taken from history (seconds, default 120).
    #[serde(default)]
    pub floor_s: Option<f64>,
    /// Task name → its own threshold (seconds).
    #[serde(default)]
    pub tasks: BTreeMap<String, f64>,
    #[serde(default)]
    pub action: StallAction,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LauncherKind {
    /// A supervising `runboard` process of its own, outliving the server.
    #[default]
    Local,
    /// A transient unit of the systemd user manager.
    Systemd,
    /// A Slurm job.
    Slurm,
}

crate::display_as_word!(LauncherKind);

impl LauncherKind {
    /// `local`, `systemd` or `slurm`, as `campaign.toml` and the records say it.
    pub fn word(self) -> &'static str {
        match self {
            Self::Local => "local",
            Self::Systemd => "systemd",
            Self::Slurm => "slurm",
        }
    }

    pub fn from_word(word: &str) -> Option<Self> {
        [Self::Local, Self::Systemd, Self::Slurm].into_iter().find(|k| k.word() == word)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LauncherConfig {
    #[serde(default)]
    pub kind: LauncherKind,
    /// SIGTERM → SIGKILL grace when a unit is paused or stopped (seconds).
    /// It must exceed the driver's own grace (`[runner]`/`[cluster]`
    /// `grace_s`, default 35), so the driver ends its cells and records them
    /// before its supervisor kills it; by default it is the driver's + 10.
    #[serde(default)]
    pub grace_s: Option<f64>,
    /// The bound on each state read of a unit (a D-Bus property read,
    /// `squeue`, `sacct`): seconds, default 10. A read that takes longer
    /// makes the unit's state `unknown`, never `failed`.
    #[serde(default)]
    pub query_timeout_s: Option<f64>,
    /// Names of the server's environment variables a systemd unit is given
    /// (besides `PATH`, `HOME`, `LANG`, `USER` and `RUNBOARD_*`): a transient
    /// unit does not inherit the server's environment. Slurm jobs get the
    /// whole environment (`sbatch`'s default).
    #[serde(default)]
    pub environment: Vec<String>,
    #[serde(default)]
    pub systemd: SystemdConfig,
    #[serde(default)]
    pub slurm: SlurmConfig,
}

/// `[launcher.systemd]`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SystemdConfig {
    /// The journal folder `journalctl -D` reads a failed unit's last lines
    /// from; default: the journals `journalctl` finds itself.
    #[serde(default)]
    pub journal_dir: Option<String>,
}

/// `[launcher.slurm]`: what each batch job asks for (`sbatch` options).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SlurmConfig {
    /// `--partition`; default: the cluster's default partition.
    #[serde(default)]
    pub partition: Option<String>,
    /// `--time`: `minutes`, `HH:MM:SS`, `D-HH:MM:SS`…; default: the partition's.
    #[serde(default)]
    pub time_limit: Option<String>,
    /// `--cpus-per-task`.
    #[serde(default)]
    pub cpus: Option<u32>,
    /// `--mem`: megabytes, or a number with K, M, G or T.
    #[serde(default)]
    pub memory: Option<String>,
    /// `--account`.
    #[serde(default)]
    pub account: Option<String>,
}

impl LauncherConfig {
    /// The bound on one state read.
    pub fn query_timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(self.query_timeout_s.unwrap_or(10.0))
    }

    /// What makes the launcher settings unusable.
    pub fn problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        if self.grace_s.is_some_and(|g| !(g.is_finite() && (0.0..=3600.0).contains(&g))) {
            out.push("launcher.grace_s must be between 0 and 3600 seconds".into());
        }
        if self.query_timeout_s.is_some_and(|g| !(g.is_finite() && (0.1..=120.0).contains(&g))) {
            out.push("launcher.query_timeout_s must be between 0.1 and 120 seconds".into());
        }
        for name in &self.environment {
            let ok = !name.is_empty()
                && !name.starts_with(|c: char| c.is_ascii_digit())
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ok {
                out.push(format!("launcher.environment: {name:?} is not an environment variable name"));
            }
        }
        let s = &self.slurm;
        let word = |v: &str| {
            !v.is_empty() && v.len() <= 64 && v.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        };
        if s.partition.as_deref().is_some_and(|p| !word(p)) {
            out.push("launcher.slurm.partition must be a partition name (letters, digits, '-', '_', '.')".into());
        }
        if s.account.as_deref().is_some_and(|p| !word(p)) {
            out.push("launcher.slurm.account must be an account name (letters, digits, '-', '_', '.')".into());
        }
        if s.time_limit.as_deref().is_some_and(|t| !slurm_time_ok(t)) {
            out.push("launcher.slurm.time_limit must be minutes, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS".into());
        }
        if s.cpus == Some(0) {
            out.push("launcher.slurm.cpus must be at least 1".into());
        }
        if s.memory.as_deref().is_some_and(|m| !slurm_memory_ok(m)) {
            out.push("launcher.slurm.memory must be megabytes or a number with K, M, G or T (\"4G\")".into());
        }
        out
    }
}

/// Slurm's time formats: `M`, `M:S`, `H:M:S`, `D-H`, `D-H:M`, `D-H:M:S`.
fn slurm_time_ok(t: &str) -> bool {
    let num = |p: &str| !p.is_empty() && p.len() <= 6 && p.chars().all(|c| c.is_ascii_digit());
    let (days, rest) = match t.split_once('-') {
        Some((d, r)) => (Some(d), r),
        None => (None, t),
    };
    let parts: Vec<&str> = rest.split(':').collect();
    days.is_none_or(num) && parts.iter().all(|p| num(p)) && (1..=3).contains(&parts.len())
}

fn slurm_memory_ok(m: &str) -> bool {
    let digits = m.trim_end_matches(['K', 'M', 'G', 'T', 'k', 'm', 'g', 't']);
    (m.len() - digits.len()) <= 1
        && !digits.is_empty()
        && digits.len() <= 9
        && digits.chars().all(|c| c.is_ascii_digit())
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Hooks {
    /// Run after a pause or stop ended the unit, to release a held resource
    /// (a lease); its failure is reported in the stop report, the rest goes on.
    #[serde(default)]
    pub release_lease: Option<Vec<String>>,
    /// Told every batch event (launched, ended, launch failed, stalled,
    /// paused by the budget) and the autopilot's notable ones: one JSON
    /// object on its standard input, 20 s at most; its failure is logged,
    /// never fatal (docs/formats.md, "Notifications").
    #[serde(default)]
    pub notify: Option<Vec<String>>,
    /// Also POSTed every notification object (`http://` to loopback or a
    /// host in `webhook_hosts`), 10 s at most; its failure is logged.
    #[serde(default)]
    pub webhook: Option<String>,
    /// Hosts other than loopback a webhook may name.
    #[serde(default)]
    pub webhook_hosts: Vec<String>,
}

impl Hooks {
    /// Whether anything hears batch events.
    pub fn notifies(&self) -> bool {
        self.notify.is_some() || self.webhook.is_some()
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
pub enum CampaignError {
    #[error("campaign.toml: {0}")]
    Syntax(String),
    #[error("campaign.toml: schema_version {found} is newer than this runboard reads ({supported})")]
    TooNew { found: u32, supported: u32 },
    #[error("campaign.toml: name must not be empty")]
    EmptyName,
    #[error("campaign.toml: {0}")]
    Catalogue(String),
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
        if let Some(problem) = cfg.catalogue_problems().into_iter().next() {
            return Err(CampaignError::Catalogue(problem));
        }
        Ok(cfg)
    }

    /// What makes the catalogue unusable: names given twice, an endpoint
    /// serving a model the catalogue lacks, a cap or price out of range.
    pub fn catalogue_problems(&self) -> Vec<String> {
        let mut out = Vec::new();
        self.name_problems(&mut out);
        for m in &self.models {
            model_problems(m, &mut out);
        }
        for e in &self.endpoints {
            self.endpoint_problems(e, &mut out);
        }
        self.budget_problems(&mut out);
        out.extend(self.launcher.problems());
        if let Some(g) = self.launcher.grace_s.filter(|g| g.is_finite() && *g <= self.driver_grace_s()) {
            out.push(format!(
                "launcher.grace_s ({g} s) must exceed the driver's grace ({} s, {}), or a pause kills the driver \
                 before it records its stopped cells; leave it out to get the driver's grace + {LAUNCHER_GRACE_MARGIN_S} s",
                self.driver_grace_s(),
                if self.cluster.is_some() { "[cluster] grace_s" } else { "[runner] grace_s" }
            ));
        }
        if self.hooks.release_lease.as_ref().is_some_and(Vec::is_empty) {
            out.push("hooks.release_lease must name a program".into());
        }
        if self.results.pass_score.is_some_and(|p| !p.is_finite()) {
            out.push("results.pass_score must be a number".into());
        }
        if self.hooks.notify.as_ref().is_some_and(Vec::is_empty) {
            out.push("hooks.notify must name a program".into());
        }
        if let Some(why) = self.hooks.webhook.as_deref().and_then(|u| webhook_refusal(u, &self.hooks.webhook_hosts)) {
            out.push(format!("hooks.webhook {why}"));
        }
        if self.publish.command.as_ref().is_some_and(|c| c.first().is_none_or(|p| p.trim().is_empty())) {
            out.push("publish.command must name a program".into());
        }
        if self.publish.timeout_s.is_some_and(|t| !(t.is_finite() && (1.0..=86_400.0).contains(&t))) {
            out.push("publish.timeout_s must be between 1 and 86400 seconds".into());
        }
        out
    }

    /// Names given twice or empty: tasks, models, endpoints, a task's phases.
    fn name_problems(&self, out: &mut Vec<String>) {
        let mut twice = |kind: &str, names: Vec<&str>| {
            let mut seen = std::collections::BTreeSet::new();
            for n in names {
                if n.trim().is_empty() {
                    out.push(format!("a {kind} has an empty name"));
                } else if !seen.insert(n) {
                    out.push(format!("{kind} {n:?} is named twice"));
                }
            }
        };
        twice("task", self.tasks.iter().map(|t| t.name.as_str()).collect());
        twice("model", self.models.iter().map(|m| m.name.as_str()).collect());
        twice("endpoint", self.endpoints.iter().map(|e| e.name.as_str()).collect());
        for t in &self.tasks {
            let mut seen = std::collections::BTreeSet::new();
            if let Some(p) = t.phases.iter().find(|p| !seen.insert(p.as_str())) {
                out.push(format!("task {:?}: phase {p:?} is named twice", t.name));
            }
        }
    }

    /// An endpoint's URLs, limits, and models the catalogue lacks.
    fn endpoint_problems(&self, e: &EndpointEntry, out: &mut Vec<String>) {
        if !(e.url.starts_with("http://") || e.url.starts_with("https://")) {
            out.push(format!("endpoint {:?}: url {:?} is not an http(s) URL", e.name, e.url));
        }
        if let Some(m) = e.metrics_url.as_deref().filter(|m| !m.is_empty()) {
            if !(m.starts_with("http://") || m.starts_with("https://")) {
                out.push(format!(
                    "endpoint {:?}: metrics_url {m:?} is not an http(s) URL (\"\" turns reading off)",
                    e.name
                ));
            }
        }
        if e.max_concurrency == Some(0) {
            out.push(format!("endpoint {:?}: max_concurrency must be at least 1 (leave it out for no limit)", e.name));
        }
        if e.max_waiting == Some(0) {
            out.push(format!("endpoint {:?}: max_waiting must be at least 1 (leave it out for no limit)", e.name));
        }
        for m in &e.models {
            if self.model(m).is_none() {
                out.push(format!("endpoint {:?} serves {m:?}, which is not in [[models]]", e.name));
            }
        }
    }

    /// `[budget]` and `[stall]`: caps and times out of range.
    fn budget_problems(&self, out: &mut Vec<String>) {
        let b = &self.budget;
        for (what, v) in [
            ("max_cost", b.max_cost),
            ("max_hours", b.max_hours),
            ("daily_max_cost", b.daily_max_cost),
            ("campaign_max_cost", b.campaign_max_cost),
        ] {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                out.push(format!("budget.{what} must be a number > 0"));
            }
        }
        for (what, v) in [
            ("max_tokens", b.max_tokens),
            ("daily_max_tokens", b.daily_max_tokens),
            ("campaign_max_tokens", b.campaign_max_tokens),
        ] {
            if v == Some(0) {
                out.push(format!("budget.{what} must be a whole number > 0"));
            }
        }
        if b.poll_s.is_some_and(|p| !(0.5..=60.0).contains(&p)) {
            out.push("budget.poll_s must be between 0.5 and 60 seconds".into());
        }
        let st = &self.stall;
        let stall_times = [("after_s", st.after_s), ("floor_s", st.floor_s)]
            .into_iter()
            .map(|(k, v)| (format!("stall.{k}"), v))
            .chain(st.tasks.iter().map(|(t, v)| (format!("stall.tasks.{t}"), Some(*v))));
        for (what, v) in stall_times {
            if v.is_some_and(|v| !(v.is_finite() && v > 0.0)) {
                out.push(format!("{what} must be a number of seconds > 0"));
            }
        }
    }

    pub fn model(&self, name: &str) -> Option<&ModelEntry> {
        self.models.iter().find(|m| m.name == name)
    }

    pub fn endpoint(&self, name: &str) -> Option<&EndpointEntry> {
        self.endpoints.iter().find(|e| e.name == name)
    }

    pub fn task(&self, name: &str) -> Option<&TaskEntry> {
        self.tasks.iter().find(|t| t.name == name)
    }

    /// The launcher's pause/stop grace in seconds: as set, else the driver's
    /// grace plus [`LAUNCHER_GRACE_MARGIN_S`] — always longer than the
    /// driver's, so the driver's own teardown (SIGTERM to each cell, its
    /// grace, SIGKILL, records written) finishes before the launcher would
    /// SIGKILL the driver.
    pub fn grace_s(&self) -> f64 {
        self.launcher.grace_s.unwrap_or(self.driver_grace_s() + LAUNCHER_GRACE_MARGIN_S)
    }

    /// The driver's SIGTERM → SIGKILL grace for its cells or cluster.
    pub fn driver_grace_s(&self) -> f64 {
        match (&self.cluster, &self.runner) {
            (Some(c), _) => c.grace_s,
            (None, Some(r)) => r.grace_s,
            (None, None) => crate::drive::config::DEFAULT_GRACE_S,
        }
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
            tasks: Vec::new(),
            models: Vec::new(),
            endpoints: Vec::new(),
            budget: Budget::default(),
            stall: StallConfig::default(),
            launcher: LauncherConfig::default(),
            hooks: Hooks::default(),
            results: ResultsConfig::default(),
            publish: PublishConfig::default(),
            currency: default_currency(),
        }
    }

    /// `amount` in the campaign's currency, for people: `1,234.50 USD`.
    pub fn money(&self, amount: f64) -> String {
        crate::basics::numfmt::money(amount, &self.currency)
    }
}

/// A webhook URL as runboard says it in a log, a record or a page: its
/// scheme, host and port, the rest elided (`http://hooks.lab:8080/…`) — a
/// webhook's path often is its secret (a chat's incoming-hook token).
pub fn webhook_shown(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").unwrap_or(("", url));
    let cut = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let authority = &rest[..cut];
    // Credentials are refused, but never said either.
    let authority = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let elided = if cut < rest.len() && &rest[cut..] != "/" { "/…" } else { "" };
    if scheme.is_empty() {
        format!("{authority}{elided}")
    } else {
        format!("{scheme}://{authority}{elided}")
    }
}

/// Why a webhook URL may not be used, if it may not: `http://` only (the
/// body goes out unencrypted, so only to loopback or a host the campaign
/// names in `[hooks] webhook_hosts`), a host, no credentials in the URL.
pub fn webhook_refusal(url: &str, allowed_hosts: &[String]) -> Option<String> {
    let shown = webhook_shown(url);
    let Some(rest) = url.strip_prefix("http://") else {
        return Some(format!("{shown:?}: must start with http:// (https is not supported; use a relay on loopback)"));
    };
    let authority = rest.split(['/', '?', '#']).next().unwrap_or("");
    if authority.contains('@') {
        return Some(format!("{shown:?}: credentials in the URL are not allowed"));
    }
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next().unwrap_or("")
    } else {
        authority.rsplit_once(':').map_or(authority, |(h, _)| h)
    };
    if host.is_empty() {
        return Some(format!("{shown:?}: names no host"));
    }
    let loopback =
        host.eq_ignore_ascii_case("localhost") || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback());
    if loopback || allowed_hosts.iter().any(|h| h.eq_ignore_ascii_case(host)) {
        None
    } else {
        Some(format!("{shown:?}: host {host} is neither loopback nor listed in [hooks] webhook_hosts"))
    }
}

/// A model's daily cap and prices out of range.
fn model_problems(m: &ModelEntry, out: &mut Vec<String>) {
    if m.daily_cap == Some(0) {
        out.push(format!("model {:?}: daily_cap must be at least 1 (leave it out for no cap)", m.name));
    }
    let prices = [
        ("price_per_1k_tokens", Some(m.price_per_1k_tokens)),
        ("price_input_per_1k", m.price_input_per_1k),
        ("price_output_per_1k", m.price_output_per_1k),
        ("price_cached_per_1k", m.price_cached_per_1k),
    ];
    for (what, v) in prices {
        if v.is_some_and(|v| !(v.is_finite() && v >= 0.0)) {
            out.push(format!("model {:?}: {what} must be a number ≥ 0", m.name));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_webhook_is_shown_without_its_path_or_credentials() {
        assert_eq!(webhook_shown("http://hooks.lab:8080/services/T0/B1/s3cret"), "http://hooks.lab:8080/…");
        assert_eq!(webhook_shown("http://127.0.0.1:9000/"), "http://127.0.0.1:9000");
        assert_eq!(webhook_shown("http://127.0.0.1:9000?key=s3cret"), "http://127.0.0.1:9000/…");
        assert_eq!(webhook_shown("http://u:p@127.0.0.1/x"), "http://127.0.0.1/…");
        assert!(!webhook_refusal("https://hooks.lab/s3cret", &[]).unwrap().contains("s3cret"));
    }

    #[test]
    fn a_webhook_goes_to_loopback_or_a_named_host_over_http() {
        let named = vec!["hooks.lab".to_owned()];
        assert_eq!(webhook_refusal("http://127.0.0.1:9000/hook", &[]), None);
        assert_eq!(webhook_refusal("http://[::1]:9000/", &[]), None);
        assert_eq!(webhook_refusal("http://localhost/x", &[]), None);
        assert_eq!(webhook_refusal("http://hooks.lab:80/x", &named), None);
        assert!(webhook_refusal("http://example.org/x", &named).unwrap().contains("neither loopback"));
        assert!(webhook_refusal("https://127.0.0.1/x", &[]).unwrap().contains("http://"));
        assert!(webhook_refusal("http://u:p@127.0.0.1/x", &[]).unwrap().contains("credentials"));
        assert!(webhook_refusal("http:///x", &[]).unwrap().contains("no host"));
    }

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
            (
                "schema_version = 1\nname = \"x\"\n[[endpoints]]\nname = \"gpu\"\nurl = \"http://127.0.0.1:1/v1\"\nbackend = \"vllm\"\nmodels = [\"ghost\"]",
                "endpoint \"gpu\" serves \"ghost\", which is not in [[models]]",
            ),
            (
                "schema_version = 1\nname = \"x\"\n[[endpoints]]\nname = \"gpu\"\nurl = \"http://h/v1\"\nbackend = \"vllm\"\nmodels = []\nmetrics_url = \"ftp://h/m\"",
                "endpoint \"gpu\": metrics_url \"ftp://h/m\" is not an http(s) URL",
            ),
            (
                "schema_version = 1\nname = \"x\"\n[[endpoints]]\nname = \"gpu\"\nurl = \"http://h/v1\"\nbackend = \"vllm\"\nmodels = []\nmax_waiting = 0",
                "endpoint \"gpu\": max_waiting must be at least 1",
            ),
            (
                "schema_version = 1\nname = \"x\"\n[[endpoints]]\nname = \"gpu\"\nurl = \"http://h/v1\"\nbackend = \"vllm\"\nmodels = []\nmax_concurrency = 0",
                "endpoint \"gpu\": max_concurrency must be at least 1",
            ),
            (
                "schema_version = 1\nname = \"x\"\n[[models]]\nname = \"m\"\nkind = \"paid\"\ndaily_cap = 0",
                "daily_cap must be at least 1",
            ),
            ("schema_version = 1\nname = \"x\"\n[launcher]\nkind = \"cron\"", "unknown variant `cron`"),
            ("schema_version = 1\nname = \"x\"\n[runner]\nkind = \"docker\"\ncommand = [\"true\"]", "unknown variant `docker`"),
            ("schema_version = 1\nname = \"x\"\n[launcher]\nquery_timeout_s = 0", "query_timeout_s must be between"),
            ("schema_version = 1\nname = \"x\"\n[launcher]\nenvironment = [\"A B\"]", "is not an environment variable name"),
            ("schema_version = 1\nname = \"x\"\n[launcher.slurm]\ntime_limit = \"1:2:3:4\"", "time_limit must be"),
            ("schema_version = 1\nname = \"x\"\n[launcher.slurm]\nmemory = \"4GB\"", "memory must be"),
            ("schema_version = 1\nname = \"x\"\n[launcher.slurm]\npartition = \"a;b\"", "partition must be"),
        ];
        let ok = "schema_version = 1\nname = \"x\"\n[launcher]\nkind = \"slurm\"\nquery_timeout_s = 2\n[launcher.slurm]\npartition = \"debug\"\ntime_limit = \"1-02:00:00\"\ncpus = 2\nmemory = \"4G\"";
        let cfg = CampaignConfig::parse(ok).unwrap();
        assert_eq!(cfg.launcher.kind, LauncherKind::Slurm);
        assert_eq!(cfg.launcher.query_timeout(), std::time::Duration::from_secs(2));
        assert_eq!(cfg.launcher.slurm.memory.as_deref(), Some("4G"));
        for t in ["90", "10:00", "02:00:00", "1-02", "1-02:00", "1-02:00:00"] {
            assert!(slurm_time_ok(t), "{t}");
        }
        for (text, want) in cases {
            let err = CampaignConfig::parse(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text:?} -> {err}");
        }
    }
}
