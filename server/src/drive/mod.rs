//! `runboard drive SPEC_OR_DIR`: runs one batch. This is what every
//! launcher backend runs as its unit, so it stands alone:
//!
//! 1. **Load** every `*.json` under the spec path (or the one file). Nothing to
//!    load stops here, before the doctor or any process.
//! 2. **Gate**: the doctor's findings are printed; a blocking one stops the run
//!    even with `--force`, a warning unless `--force`.
//! 3. **Resume**: the run set's cell records select the unfinished cells; none
//!    left exits 0 without starting anything.
//! 4. **Directories**: one output and one log folder per run set, pinned in every
//!    child's environment (`RUNBOARD_RUNSET`, `RUNBOARD_OUTPUT_DIR`, `RUNBOARD_LOG_DIR`).
//! 5. **Spawn**, **submit**, **monitor** (`cluster`), or run cells (`exec`).
//! 6. **Terminate**: SIGTERM to each process group, the grace period, SIGKILL.
//!
//! Every rule is in `runboard::drive`; this module does the I/O.

mod cluster;
mod exec;
pub mod gateway;
mod http;
mod monitor;
pub mod reaper;
mod runset;
mod supervisor;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use runboard::campaign::{CampaignConfig, CONFIG_FILE};
use runboard::console::spec::{self, BatchSpec, Cell};
use runboard::drive::doctor::{self, Facts, Severity};
use runboard::drive::plan::remaining;
use runboard::drive::records::{BatchOutcome, BatchStatus, CellRecord, CellStatus, DriverProcess};
use serde_json::json;
use tokio_util::sync::CancellationToken;

pub use runset::RunSet;
pub use supervisor::Supervisor;

#[derive(Debug, Clone, Default)]
pub struct DriveOptions {
    pub spec: PathBuf,
    pub resume_into: Option<PathBuf>,
    pub interactive: bool,
    pub force: bool,
    /// The campaign root; by default the nearest folder above the spec holding
    /// `campaign.toml`.
    pub root: Option<PathBuf>,
    /// Overrides the configured grace period (seconds).
    pub grace_s: Option<f64>,
    /// The new run set's folder name under `runsets/` (the console decides it,
    /// so it knows the run set before the driver makes it); by default
    /// `<label>-<UTC yyyymmddThhmmss>`.
    pub run_set: Option<String>,
}

/// A failure of the driver itself once it has started (a folder or record it
/// cannot write, a process it cannot start): what it was doing, and on what.
#[derive(Debug, thiserror::Error)]
pub enum DriveError {
    #[error("{doing} {}: {source}", path.display())]
    Io {
        doing: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("starting {name} ({program}): {source}")]
    Spawn {
        name: String,
        program: String,
        #[source]
        source: std::io::Error,
    },
    /// A command template that cannot be filled (the doctor checks first).
    #[error("{0}")]
    Template(String),
    #[error("encoding {what}: {source}")]
    Encode {
        what: &'static str,
        #[source]
        source: serde_json::Error,
    },
    #[error("campaign.toml declares neither [cluster] nor [runner]")]
    NoRunner,
}

impl DriveError {
    pub(crate) fn io<'a>(doing: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> Self + 'a {
        move |source| Self::Io { doing, path: path.to_path_buf(), source }
    }
}

/// Why `drive` refused to start: reported with exit code 2, nothing started.
#[derive(Debug, thiserror::Error)]
pub enum Refusal {
    #[error("{0}")]
    Input(String),
    #[error("the doctor found {0} blocking problem(s); nothing was started")]
    Blocked(usize),
    #[error("the doctor found {0} warning(s); nothing was started (--force runs anyway)")]
    Warned(usize),
}

/// Loads every `*.json` below `path` (or the file itself), in path order. A
/// `*.json` that is not a regular file (a FIFO, which would block forever) is
/// refused by name, never opened; a folder reached twice (a symlink loop) is
/// walked once.
pub fn load_spec(path: &Path) -> Result<BatchSpec, Refusal> {
    use std::os::unix::fs::MetadataExt;
    let md = match std::fs::metadata(path) {
        Ok(md) => md,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Refusal::Input(format!("spec {} does not exist", path.display())))
        }
        Err(e) => return Err(Refusal::Input(format!("spec {}: {e}", path.display()))),
    };
    let files = if md.is_dir() {
        let mut found = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut stack = vec![path.to_path_buf()];
        while let Some(dir) = stack.pop() {
            let Ok(dmd) = std::fs::metadata(&dir) else { continue };
            if !seen.insert((dmd.dev(), dmd.ino())) {
                continue;
            }
            let entries = std::fs::read_dir(&dir).map_err(|e| Refusal::Input(format!("{}: {e}", dir.display())))?;
            for e in entries.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "json") {
                    found.push(p);
                }
            }
        }
        found.sort();
        found
    } else if md.is_file() {
        vec![path.to_path_buf()]
    } else {
        return Err(Refusal::Input(format!(
            "spec {}: {}; give a spec file or a folder of them",
            path.display(),
            crate::files::fsread::read_regular(path).err().unwrap_or(crate::files::fsread::ReadError::NotRegular(None))
        )));
    };
    if files.is_empty() {
        return Err(Refusal::Input(format!("no *.json spec files under {}: nothing to run", path.display())));
    }
    let mut docs = Vec::new();
    for f in &files {
        let bytes =
            crate::files::fsread::read_regular(f).map_err(|e| Refusal::Input(format!("{}: {e}", f.display())))?;
        let name = f.display().to_string();
        docs.push((name.clone(), spec::parse(&name, &bytes).map_err(|e| Refusal::Input(e.to_string()))?));
    }
    spec::merge(docs).map_err(|e| Refusal::Input(e.to_string()))
}

/// `{runboard}`: this program, so a runner command can call `runboard cell …`
/// whether or not runboard is on the cells' PATH.
fn runboard_program() -> String {
    std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "runboard".into())
}

/// The batch's gateway as it starts: the endpoints it serves, the caps and
/// what the batch had spent (an earlier attempt's calls, counted as the
/// console counts them), each cell's prices.
fn gateway_setup(
    cfg: &CampaignConfig,
    spec: &BatchSpec,
    runset: &RunSet,
    endpoints: BTreeMap<String, gateway::Route>,
    stop: &CancellationToken,
) -> gateway::Setup {
    use runboard::gateway::purse::{Purse, Spent};
    let now = crate::system::clock::now();
    let today = now.day_key();
    let records = runset.read_cells();
    let mut prices = BTreeMap::new();
    let (mut before, mut before_today) = (Spent::default(), Spent::default());
    for cell in &spec.cells {
        let model = runboard::live::spend::cell_model(spec.model.as_deref(), Some(&cell.factors));
        let priced = runboard::live::spend::prices_of(cfg, model.as_deref());
        if let Some(p) = priced {
            prices.insert(cell.id.clone(), p);
        }
        // Every cell's folder, a resumed cell's too (its record says pending
        // again by now; its earlier calls were spent all the same).
        let rec = records.get(&cell.id);
        let reader = crate::live::tally::read_cell(&runset.out_dir().join(&cell.id), now);
        let s = runboard::live::spend::cell_spend(rec, Some((&reader.tally, reader.source)), priced, &today);
        before.add(Spent { cost: s.cost, tokens: s.tokens.total() });
        before_today.add(Spent { cost: s.today_cost, tokens: s.today_tokens });
    }
    gateway::Setup {
        endpoints,
        run_set: runset.dir.clone(),
        purse: Purse::new(&cfg.budget, &cfg.currency, before, BTreeMap::from([(today, before_today)])),
        prices,
        stop: stop.clone(),
    }
}

/// The catalogue's endpoint URLs, by endpoint name.
fn endpoint_urls(cfg: &CampaignConfig) -> BTreeMap<String, String> {
    cfg.endpoints.iter().map(|e| (e.name.clone(), e.url.clone())).collect()
}

fn batch_vars(cfg: &CampaignConfig, env: &BTreeMap<String, String>) -> runboard::drive::plan::BatchVars {
    let fixed = [("runset", "RUNBOARD_RUNSET"), ("logs", "RUNBOARD_LOG_DIR"), ("out", "RUNBOARD_OUTPUT_DIR")]
        .into_iter()
        .map(|(k, var)| (k.to_owned(), env.get(var).cloned().unwrap_or_default()))
        .chain([("runboard".to_owned(), runboard_program())])
        .collect();
    runboard::drive::plan::BatchVars { fixed, endpoint_urls: endpoint_urls(cfg) }
}

fn find_root(spec: &Path) -> Option<PathBuf> {
    let start = std::path::absolute(spec).ok()?;
    start.ancestors().find(|d| d.join(CONFIG_FILE).is_file()).map(Path::to_path_buf)
}

fn program_found(program: &str, root: &Path) -> bool {
    if program.contains('/') {
        let p = Path::new(program);
        return if p.is_absolute() { p.is_file() } else { root.join(p).is_file() || p.is_file() };
    }
    std::env::var_os("PATH").is_some_and(|paths| std::env::split_paths(&paths).any(|d| d.join(program).is_file()))
}

fn port_taken(port: u16) -> bool {
    std::net::TcpListener::bind(("127.0.0.1", port)).is_err()
}

/// What a runner needs of the batch: where to write, what every child gets, how
/// long a terminated process may take, how to show progress, and when to stop.
pub(crate) struct BatchCtx<'a> {
    pub runset: &'a RunSet,
    pub grace: Duration,
    pub interactive: bool,
    pub stop: &'a CancellationToken,
    /// The spec's route as template variables (`{model}`, …).
    pub route: BTreeMap<String, String>,
    /// A resource pool's endpoint of each cell (its `{endpoint}`).
    pub pool: BTreeMap<String, String>,
    /// The batch's folders, `{runboard}` and the endpoints' URLs.
    pub batch_vars: runboard::drive::plan::BatchVars,
    /// The batch's gateway, when any endpoint it uses has one: each cell's
    /// `{endpoint_url}` is then its own path on it.
    pub gateway: Option<&'a gateway::Gateway>,
}

/// What a runner reports when it returns.
#[derive(Debug)]
pub(crate) struct RunnerEnd {
    pub status: BatchStatus,
    pub reason: String,
    /// Cells actually started (exec) or taken by the manager (cluster) this time.
    pub attempted: usize,
}

/// The result of a batch that started.
#[derive(Debug)]
pub struct DriveEnd {
    pub outcome: BatchOutcome,
    pub runset: PathBuf,
}

pub async fn drive(opts: DriveOptions, stop: CancellationToken) -> Result<Result<DriveEnd, Refusal>, DriveError> {
    let (spec, root, cfg) = match load(&opts) {
        Ok(loaded) => loaded,
        Err(r) => return Ok(Err(r)),
    };
    let runset_dir = match run_set_dir(&opts, &root, &spec) {
        Ok(dir) => dir,
        Err(r) => return Ok(Err(r)),
    };
    let runset = RunSet::new(&runset_dir);
    let records = runset.read_cells();
    let left: Vec<Cell> = remaining(&spec.cells, &records).into_iter().cloned().collect();
    if let Err(r) = gate(&opts, &cfg, &root, &spec, &runset) {
        return Ok(Err(r));
    }

    // Resume: nothing left.
    let mut outcome = new_outcome(&opts, &spec, &runset);
    if left.is_empty() {
        outcome.status = BatchStatus::NothingToDo;
        outcome.reason = format!("all {} planned cells are done; nothing was started", spec.cells.len());
        outcome.attempted = 0;
        outcome.completed = spec.cells.len();
        outcome.ended_at = Some(crate::system::clock::now().to_rfc3339());
        runset.write_outcome(&outcome)?;
        runset.log(&outcome.reason);
        return Ok(Ok(DriveEnd { outcome, runset: runset_dir }));
    }

    // Directories.
    runset.create()?;
    // Nothing this batch starts may outlive it: escaped descendants become ours,
    // children get a parent-death signal, and a sentinel sweeps if we are killed.
    if let Err(e) = reaper::become_subreaper() {
        runset.log(&format!("warning: {e}; a descendant that escapes its group may outlive the batch"));
    }
    let mark = reaper::new_mark();
    let env = begin(&opts, &spec, &runset, &left, &records, &outcome, &mark)?;

    let grace_s = match (&cfg.cluster, &cfg.runner) {
        (Some(c), _) => c.grace_s,
        (None, Some(r)) => r.grace_s,
        (None, None) => return Err(DriveError::NoRunner),
    };
    let grace = Duration::from_secs_f64(opts.grace_s.unwrap_or(grace_s).max(0.0));
    let mut sup = supervisor::Supervisor::new(&runset.logs_dir(), env.clone());
    match reaper::Sentinel::start(&runset.dir, &mark, grace) {
        Ok(s) => sup = sup.with_sentinel(s),
        Err(e) => runset.log(&format!("warning: no sentinel ({e}); a killed driver may leave processes behind")),
    }
    let gateway = start_gateway(&cfg, &spec, &runset, &stop).await;
    let ctx = BatchCtx {
        runset: &runset,
        grace,
        interactive: opts.interactive,
        stop: &stop,
        route: runboard::drive::plan::route_vars(&spec),
        pool: runboard::drive::plan::pool_assignment(&spec),
        batch_vars: batch_vars(&cfg, &env),
        gateway: gateway.as_ref(),
    };
    let ended = match (&cfg.cluster, &cfg.runner) {
        (Some(cluster), _) => cluster::run(cluster, &spec, &left, &ctx, &mut sup).await,
        (None, Some(runner)) => exec::run(runner, &left, &ctx, &mut sup).await,
        (None, None) => unreachable!("checked above"),
    };
    let capped = gateway.as_ref().and_then(|g| g.capped());
    if let Some(g) = gateway {
        g.stop().await;
    }
    // Every runner tears down before it returns, on every path: the sentinel can go.
    sup.release_sentinel();
    let RunnerEnd { status, reason, attempted } = ended?;

    // The outcome, from the cell records as they stand now.
    outcome.settle((status, reason), capped, (&spec.cells, &left), attempted, &runset.read_cells());
    outcome.ended_at = Some(crate::system::clock::now().to_rfc3339());
    runset.write_outcome(&outcome)?;
    runset.log(&format!("batch {} ended {}: {}", spec.label, outcome.status.word(), outcome.reason));
    runset.event("batch_end", serde_json::to_value(&outcome).unwrap_or_default());
    Ok(Ok(DriveEnd { outcome, runset: runset_dir }))
}

/// Load: the spec, the campaign's root (given, or the nearest folder above
/// the spec holding `campaign.toml`) and its configuration.
fn load(opts: &DriveOptions) -> Result<(BatchSpec, PathBuf, CampaignConfig), Refusal> {
    let spec = load_spec(&opts.spec)?;
    let root = opts
        .root
        .clone()
        .or_else(|| find_root(&opts.spec))
        .ok_or_else(|| Refusal::Input(format!("no {CONFIG_FILE} above {}; pass --root", opts.spec.display())))?;
    // Read only if it is a regular file: a FIFO here would hang the driver.
    let cfg_text = crate::files::fsread::read_regular(&root.join(CONFIG_FILE))
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .map_err(|e| Refusal::Input(format!("{}: {e}", root.join(CONFIG_FILE).display())))?;
    let cfg = CampaignConfig::parse(&cfg_text).map_err(|e| Refusal::Input(format!("{}: {e}", root.display())))?;
    Ok((spec, root, cfg))
}

/// The run set's folder: the one a resume names (it must exist), the one
/// the console chose (it must not), or `<label>-<UTC time>`.
fn run_set_dir(opts: &DriveOptions, root: &Path, spec: &BatchSpec) -> Result<PathBuf, Refusal> {
    if let Some(dir) = &opts.resume_into {
        if !dir.is_dir() {
            return Err(Refusal::Input(format!("--resume-into {}: no such run set", dir.display())));
        }
        return Ok(dir.clone());
    }
    let runsets = root.join("runsets");
    let Some(name) = &opts.run_set else {
        return Ok(runsets.join(runboard::runsets::run_set_name(&spec.label, crate::system::clock::now(), &|n| {
            runsets.join(n).symlink_metadata().is_ok()
        })));
    };
    if !runboard::console::spec::valid_label(name) {
        return Err(Refusal::Input(format!(
            "--run-set {:?}: must be 1-80 letters, digits, '-', '_' or '.'",
            runboard::console::spec::shorten(name)
        )));
    }
    let dir = runsets.join(name);
    if dir.symlink_metadata().is_ok() {
        return Err(Refusal::Input(format!(
            "--run-set {name}: runsets/{name} already exists (continue it with --resume-into)"
        )));
    }
    Ok(dir)
}

/// Gate: the doctor's findings printed; a blocking one refuses even with
/// `--force`, a warning unless `--force`.
fn gate(
    opts: &DriveOptions,
    cfg: &CampaignConfig,
    root: &Path,
    spec: &BatchSpec,
    runset: &RunSet,
) -> Result<(), Refusal> {
    let resume_label = opts.resume_into.as_ref().and_then(|_| runset.read_spec_label()).filter(|l| *l != spec.label);
    let findings = doctor_findings(cfg, root, spec, resume_label);
    for f in &findings {
        let tag = if f.severity == Severity::Blocking { "BLOCKING" } else { "warning" };
        eprintln!("doctor: {tag}: {}", f.message);
    }
    let blocking = findings.iter().filter(|f| f.severity == Severity::Blocking).count();
    if blocking > 0 {
        return Err(Refusal::Blocked(blocking));
    }
    let warnings = findings.len() - blocking;
    if warnings > 0 && !opts.force {
        return Err(Refusal::Warned(warnings));
    }
    Ok(())
}

/// This attempt's outcome as it starts: running, driven by this process; a
/// resume keeps when the batch first started.
fn new_outcome(opts: &DriveOptions, spec: &BatchSpec, runset: &RunSet) -> BatchOutcome {
    let first_started_at = opts
        .resume_into
        .as_ref()
        .and_then(|_| runset.read_outcome())
        .map(|o| o.first_started_at.unwrap_or(o.started_at));
    BatchOutcome {
        schema_version: 1,
        label: spec.label.clone(),
        status: BatchStatus::Running,
        reason: String::new(),
        planned: spec.cells.len(),
        attempted: 0,
        completed: 0,
        failed: 0,
        started_at: crate::system::clock::now().to_rfc3339(),
        ended_at: None,
        first_started_at,
        driver: Some(DriverProcess {
            host: nix::unistd::gethostname().ok().and_then(|h| h.into_string().ok()).unwrap_or_default(),
            pid: std::process::id(),
        }),
        paused: None,
    }
}

/// The run set begun: its spec (once), the outcome, the start in its log and
/// events, each cell left marked pending; the environment every child gets
/// (the run set's folders pinned, the batch's mark).
fn begin(
    opts: &DriveOptions,
    spec: &BatchSpec,
    runset: &RunSet,
    left: &[Cell],
    records: &BTreeMap<String, CellRecord>,
    outcome: &BatchOutcome,
    mark: &str,
) -> Result<BTreeMap<String, String>, DriveError> {
    if !runset.dir.join("spec.json").exists() {
        let path = runset.dir.join("spec.json");
        let bytes =
            serde_json::to_vec_pretty(spec).map_err(|source| DriveError::Encode { what: "the spec", source })?;
        crate::files::atomic::write_atomic(&path, &bytes).map_err(DriveError::io("writing", &path))?;
    }
    runset.write_outcome(outcome)?;
    runset.log(&format!(
        "started batch {}: {} cells planned, {} to run{}",
        spec.label,
        spec.cells.len(),
        left.len(),
        if opts.resume_into.is_some() { " (resumed)" } else { "" }
    ));
    runset.event("batch_start", json!({"label": spec.label, "planned": spec.cells.len(), "remaining": left.len()}));
    for cell in left {
        let mut rec = records.get(&cell.id).cloned().unwrap_or_else(|| CellRecord::new(cell, CellStatus::Pending));
        rec.status = CellStatus::Pending;
        runset.write_cell(&rec)?;
    }
    Ok([
        ("RUNBOARD_RUNSET", runset.dir.display().to_string()),
        ("RUNBOARD_OUTPUT_DIR", runset.out_dir().display().to_string()),
        ("RUNBOARD_LOG_DIR", runset.logs_dir().display().to_string()),
        ("RUNBOARD_LABEL", spec.label.clone()),
        (reaper::MARK_VAR, mark.to_owned()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect())
}

/// The gateway, up before the first cell, down after the last: for the exec
/// runner's cells, on the endpoints the spec uses that have one. None when
/// none is wanted or it cannot start (said in the log: the cells then call
/// their endpoints directly, unseen).
async fn start_gateway(
    cfg: &CampaignConfig,
    spec: &BatchSpec,
    runset: &RunSet,
    stop: &CancellationToken,
) -> Option<gateway::Gateway> {
    let gatewayed: BTreeMap<String, gateway::Route> = spec
        .endpoints_used()
        .iter()
        .filter_map(|name| cfg.endpoint(name))
        .filter(|e| e.gatewayed())
        .map(|e| (e.name.clone(), gateway::Route { url: e.url.clone(), max_concurrency: e.max_concurrency }))
        .collect();
    if cfg.runner.is_none() || cfg.cluster.is_some() || gatewayed.is_empty() {
        return None;
    }
    match gateway::Gateway::start(gateway_setup(cfg, spec, runset, gatewayed, stop)).await {
        Ok(g) => Some(g),
        Err(e) => {
            runset.log(&format!("warning: no gateway ({e}); the cells call their endpoints directly, unseen"));
            None
        }
    }
}

/// The doctor's findings for `spec` in the campaign at `root`: the facts
/// observed here (programs on PATH, the manager's port, artefacts on disk),
/// judged by the core. The console's preflight asks the same question.
pub fn doctor_findings(
    cfg: &CampaignConfig,
    root: &Path,
    spec: &BatchSpec,
    resume_label: Option<String>,
) -> Vec<doctor::Finding> {
    let mut facts = Facts::default();
    for program in doctor::programs(cfg.cluster.as_ref(), cfg.runner.as_ref()) {
        let found = program == "{runboard}" || program_found(&program, root);
        facts.programs.insert(program, found);
    }
    if let Some(c) = &cfg.cluster {
        if let Some((_, port)) = doctor::http_host_port(&c.manager.health_url) {
            if port_taken(port) {
                facts.ports_taken.insert(port);
            }
        }
    }
    for a in &spec.artefacts {
        facts.artefacts.insert(a.clone(), root.join(a).exists());
    }
    facts.resume_label = resume_label;
    facts.endpoint_urls = endpoint_urls(cfg);
    doctor::diagnose(spec, cfg.cluster.as_ref(), cfg.runner.as_ref(), cfg.roster.as_deref(), &facts)
}
