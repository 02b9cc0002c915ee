//! `runboard`: the command line. Every subcommand is a thin shell over the library.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use clap::{Parser, Subcommand};
use server::demo::simulate::{simulate_run, SimEnd, SimOptions};
use server::web::serve::{serve, Ended, ServeOptions};

#[derive(Parser)]
#[command(name = "runboard", version, about = "Run, watch and steer experiment campaigns.")]
struct Cli {
    /// The campaign root (default: the current folder; for `serve`, the
    /// bundled demo; for `drive`, the nearest folder above SPEC with
    /// campaign.toml).
    #[arg(long, global = true, display_order = 900)]
    root: Option<PathBuf>,
    /// Print JSON (what the REST endpoint answers).
    #[arg(long, global = true, display_order = 901)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Serve the web console (the bundled demo campaign when no --root is given).
    Serve(ServeOptions),
    /// Run one batch: load the spec, check it, start its processes, watch, tear down.
    Drive {
        /// A committed spec file, or a folder of spec files (every *.json below it).
        spec: PathBuf,
        /// Continue this run set: only its unfinished cells run.
        #[arg(long)]
        resume_into: Option<PathBuf>,
        /// Stream every process's log lines, prefixed by its name.
        #[arg(short, long)]
        interactive: bool,
        /// Run despite the doctor's warnings (never despite a blocking finding).
        #[arg(long)]
        force: bool,
        /// Seconds a terminated process gets before SIGKILL (default: campaign.toml, else 35).
        #[arg(long)]
        grace: Option<f64>,
        /// Name the new run set (its folder under runsets/); it must not exist.
        #[arg(long, conflicts_with = "resume_into")]
        run_set: Option<String>,
    },
    /// Start a campaign: write a commented campaign.toml, matrix.csv, a draft
    /// spec and what its cells run into DIR (made if missing; nothing is
    /// overwritten).
    Init {
        dir: PathBuf,
        /// exec: cells as plain commands; inspect: cells as Inspect AI evals;
        /// cluster: a manager, rooms and a player.
        #[arg(long, value_enum, default_value = "exec")]
        example: server::cli::init::Example,
    },
    /// Every finding in a campaign folder: campaign.toml, matrix.csv, the
    /// records, and the preflight of each spec under specs/ (exit 1 when one
    /// would stop a batch).
    /// With --json: [{severity, place, message}].
    Check,
    /// (Internal) A batch's sentinel: ends what the batch started if `runboard drive` is killed.
    #[command(name = "__sentinel", hide = true)]
    Sentinel {
        #[arg(long)]
        mark: String,
        #[arg(long)]
        grace: f64,
        #[arg(long)]
        runset: PathBuf,
    },
    /// (Internal) The local launcher's supervisor of one unit: runs the driver,
    /// records its PID and how it ended.
    #[command(name = "__unit", hide = true)]
    Unit {
        #[arg(long)]
        record: PathBuf,
        #[arg(long)]
        log: PathBuf,
        #[arg(long)]
        grace: f64,
        #[arg(last = true, required = true)]
        command: Vec<String>,
    },
    /// (Internal, for the crash test) Saves the autopilot's state again and
    /// again, counting in it, until the count reaches `until`.
    #[command(name = "__auto-save-loop", hide = true)]
    AutoSaveLoop {
        #[arg(long)]
        until: u64,
    },
    /// (Internal, for the end-to-end suite) Writes the console test campaign
    /// into DIR (`server::demo::fixture`).
    #[command(name = "__console-fixture", hide = true)]
    ConsoleFixture {
        dir: PathBuf,
        #[arg(long)]
        name: String,
        /// The runner's command as a JSON array of strings.
        #[arg(long)]
        command: String,
        #[arg(long, default_value_t = 1)]
        parallel: u32,
        /// More `[[models]]` tables, as TOML.
        #[arg(long, default_value = "")]
        models: String,
        #[arg(long)]
        default_graces: bool,
    },
    /// Print the address of the console you last started, with its token
    /// (from the data folder, yours alone): what `serve` printed at start.
    Open {
        /// Hand the address to $BROWSER (else xdg-open) as well.
        #[arg(long)]
        browser: bool,
        /// The data folder (default as `serve`'s).
        #[arg(long, env = "RUNBOARD_DATA_DIR")]
        data_dir: Option<PathBuf>,
    },
    /// Tokens for others: a viewer's (reads, never steers) or an operator's.
    Token {
        #[command(subcommand)]
        command: server::access::tokens::TokenCommand,
    },
    #[command(flatten)]
    Console(server::cli::ConsoleCommand),
    /// Run one cell of a batch through a third-party harness (the runner's
    /// command): the harness's log stays in the cell's folder and becomes its
    /// result.json.
    Cell {
        #[command(subcommand)]
        command: CellCommand,
    },
    /// Run directories under a campaign root.
    Runs {
        #[command(subcommand)]
        command: RunsCommand,
    },
    /// Write a simulated agent run into DIR over time (the demo and tests use it).
    SimulateRun {
        dir: PathBuf,
        #[arg(long, default_value_t = 6)]
        rounds: u32,
        #[arg(long, default_value_t = 3)]
        slots: u32,
        /// Pause between steps, in milliseconds; 0 writes the run at once.
        #[arg(long, default_value_t = 1500)]
        step_ms: u64,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value = "qwen3-32b")]
        model: String,
        /// Continue the run in DIR (a `resume`) instead of starting a new one.
        #[arg(long)]
        resume: bool,
        /// Crash while appending the round after this many rounds (half a line, no stop; exit 3).
        #[arg(long)]
        crash_after: Option<u32>,
        /// Stop when the process with this PID is gone.
        #[arg(long)]
        exit_with_parent: Option<u32>,
    },
}

impl Command {
    /// The command's name as typed.
    fn name(&self) -> &'static str {
        match self {
            Self::Serve(_) => "serve",
            Self::Drive { .. } => "drive",
            Self::Init { .. } => "init",
            Self::Check => "check",
            Self::Sentinel { .. } => "__sentinel",
            Self::Unit { .. } => "__unit",
            Self::AutoSaveLoop { .. } => "__auto-save-loop",
            Self::ConsoleFixture { .. } => "__console-fixture",
            Self::Console(_) => "(console)",
            Self::Open { .. } => "open",
            Self::Token { .. } => "token",
            Self::Cell { .. } => "cell",
            Self::Runs { .. } => "runs",
            Self::SimulateRun { .. } => "simulate-run",
        }
    }
}

#[derive(Subcommand)]
enum CellCommand {
    /// One Inspect AI eval as a cell: `inspect eval`, or `inspect eval-retry`
    /// of the eval a stopped attempt left (docs/formats.md, Inspect AI).
    Inspect(server::cell::InspectCell),
}

#[derive(Subcommand)]
enum RunsCommand {
    /// List every run directory under the root, latest written first.
    /// With --json, the same as GET /api/runs.
    List,
}

/// At most this many threads do blocking work (file reads) at once.
const BLOCKING_THREADS: usize = 32;

fn main() -> ExitCode {
    let cli = Cli::parse();
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("RUNBOARD_LOG").unwrap_or_else(|_| "warn".into()))
        .with_writer(std::io::stderr)
        .init();
    // The blocking pool (file reads, process checks) is bounded: under load,
    // requests queue for a thread instead of each growing the process by one
    // (tokio's default allows 512), and idle threads leave after 5 s.
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .max_blocking_threads(BLOCKING_THREADS)
        .thread_keep_alive(Duration::from_secs(5))
        .build();
    let rt = match rt {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("runboard: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let at = Place { root: cli.root, json: cli.json };
    let result = rt.block_on(run(cli.command, at));
    // Dropping a runtime waits for every blocking task without end; a read
    // stuck on a slow disk must not keep a stopped server alive.
    rt.shutdown_timeout(Duration::from_secs(2));
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("runboard: {e:#}");
            ExitCode::from(2)
        }
    }
}

/// The global `--root` and `--json` as given.
struct Place {
    root: Option<PathBuf>,
    json: bool,
}

impl Place {
    /// The root a campaign command acts on: `--root`, else the current folder.
    fn campaign(&self) -> PathBuf {
        self.root.clone().unwrap_or_else(|| PathBuf::from("."))
    }

    /// Refuses `--root` or `--json` where `command` has no use for it.
    fn refuse(&self, command: &str, root: bool, json: bool) -> anyhow::Result<()> {
        anyhow::ensure!(!(root && self.root.is_some()), "runboard {command} takes no --root");
        anyhow::ensure!(!(json && self.json), "runboard {command} prints no JSON (--json)");
        Ok(())
    }
}

async fn run(command: Command, at: Place) -> anyhow::Result<ExitCode> {
    match &command {
        Command::Serve(_) | Command::Drive { .. } => at.refuse(command.name(), false, true)?,
        Command::Init { .. }
        | Command::Sentinel { .. }
        | Command::Unit { .. }
        | Command::ConsoleFixture { .. }
        | Command::Cell { .. }
        | Command::SimulateRun { .. } => at.refuse(command.name(), true, true)?,
        Command::AutoSaveLoop { .. } => at.refuse(command.name(), false, true)?,
        Command::Open { .. } => at.refuse(command.name(), true, true)?,
        Command::Token { .. } => at.refuse(command.name(), true, false)?,
        Command::Check | Command::Runs { .. } | Command::Console(_) => {}
    }
    match command {
        Command::Serve(mut opts) => {
            opts.root = at.root;
            let opts = opts.with_env_token();
            let ended = serve(opts).await?;
            if ended == Ended::Idle {
                println!("runboard: stopped after being idle");
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Drive { spec, resume_into, interactive, force, grace, run_set } => {
            let root = at.root;
            drive_batch(server::drive::DriveOptions {
                spec,
                resume_into,
                interactive,
                force,
                root,
                grace_s: grace,
                run_set,
            })
            .await
        }
        Command::Sentinel { mark, grace, runset } => {
            let grace = Duration::from_secs_f64(grace.clamp(0.0, 3600.0));
            let code =
                tokio::task::spawn_blocking(move || server::drive::reaper::run_sentinel(&mark, grace, &runset)).await?;
            Ok(ExitCode::from(code))
        }
        Command::AutoSaveLoop { until } => {
            let root = at.root.ok_or_else(|| anyhow::anyhow!("--root is needed"))?;
            tokio::task::spawn_blocking(move || server::auto::auto_state::save_loop(&root, until)).await??;
            Ok(ExitCode::SUCCESS)
        }
        Command::ConsoleFixture { dir, name, command, parallel, models, default_graces } => {
            let command: Vec<String> = serde_json::from_str(&command)
                .map_err(|e| anyhow::anyhow!("--command must be a JSON array of strings: {e}"))?;
            let f = server::demo::fixture::ConsoleFixture { name, command, parallel, models, default_graces };
            server::demo::fixture::write_console_campaign(&dir, &f)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Init { dir, example } => match server::cli::init::init(&dir, example) {
            Ok(written) => {
                println!("runboard init: wrote {} files into {}:", written.len(), dir.display());
                for w in &written {
                    println!("  {}", w.strip_prefix(&dir).unwrap_or(w).display());
                }
                print!("next:\n{}", example.next_steps(&dir));
                Ok(ExitCode::SUCCESS)
            }
            Err(e) => {
                eprintln!("runboard init: {e}");
                Ok(ExitCode::from(2))
            }
        },
        Command::Check => check(at.campaign(), at.json).await,
        Command::Open { browser, data_dir } => {
            server::access::tokens::open(data_dir.as_deref(), browser)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Token { command } => {
            server::access::tokens::run(command, at.json)?;
            Ok(ExitCode::SUCCESS)
        }
        Command::Cell { command: CellCommand::Inspect(opts) } => server::cell::run(opts).await,
        Command::Console(cmd) => {
            let at = server::cli::Place { root: at.campaign(), json: at.json };
            Ok(tokio::task::spawn_blocking(move || server::cli::run(cmd, &at)).await?)
        }
        Command::Unit { record, log, grace, command } => {
            let grace = Duration::from_secs_f64(grace.clamp(0.0, 3600.0));
            let code = server::campaign::launcher::supervise(record, log, grace, command).await;
            Ok(ExitCode::from(u8::try_from(code.clamp(0, 255)).unwrap_or(1)))
        }
        Command::Runs { command: RunsCommand::List } => runs_list(at.campaign(), at.json).await,
        Command::SimulateRun { dir, rounds, slots, step_ms, seed, model, resume, crash_after, exit_with_parent } => {
            let opts =
                SimOptions { rounds, slots, step: Duration::from_millis(step_ms), seed, model, resume, crash_after };
            let stop = async move {
                // The demo's writer ends with the server that started it, even
                // when the server is killed without a chance to stop it.
                let parent_gone = async {
                    match exit_with_parent {
                        Some(pid) => {
                            let probe = server::runview::ProcessProbe::this_host();
                            while probe.alive(pid) {
                                tokio::time::sleep(Duration::from_millis(500)).await;
                            }
                        }
                        None => std::future::pending::<()>().await,
                    }
                };
                tokio::select! {
                    _ = server::system::signals::terminated() => {}
                    _ = parent_gone => {}
                }
            };
            match simulate_run(&dir, &opts, stop).await? {
                SimEnd::Crashed => Ok(ExitCode::from(3)),
                SimEnd::Finished | SimEnd::Stopped => Ok(ExitCode::SUCCESS),
            }
        }
    }
}

/// `runboard drive`: one batch, ended on SIGINT/SIGTERM (its processes torn
/// down); the exit code says how the batch ended.
async fn drive_batch(opts: server::drive::DriveOptions) -> anyhow::Result<ExitCode> {
    let stop = tokio_util::sync::CancellationToken::new();
    {
        let stop = stop.clone();
        let signals = server::system::signals::Terminated::register();
        tokio::spawn(async move {
            signals.wait().await;
            eprintln!("runboard drive: stopping (signal); tearing the processes down");
            stop.cancel();
        });
    }
    match server::drive::drive(opts, stop).await? {
        Err(refusal) => {
            eprintln!("runboard drive: {refusal}");
            Ok(ExitCode::from(2))
        }
        Ok(end) => {
            let o = &end.outcome;
            println!(
                "runboard drive: {} {:?}: {} ({} planned, {} attempted, {} completed, {} failed) — run set {}",
                o.label,
                o.status,
                o.reason,
                o.planned,
                o.attempted,
                o.completed,
                o.failed,
                end.runset.display()
            );
            Ok(ExitCode::from(o.status.exit_code()))
        }
    }
}

/// `runboard check`: every finding; exit 1 when one would stop a batch.
async fn check(root: PathBuf, json: bool) -> anyhow::Result<ExitCode> {
    server::console::LocalConsole::require_campaign(&root)?;
    let findings = tokio::task::spawn_blocking(move || server::cli::init::check(&root)).await?;
    let blocking = findings.iter().filter(|f| f.severity == server::cli::init::Severity::Blocking).count();
    if json {
        println!("{}", serde_json::to_string_pretty(&findings)?);
    } else {
        for f in &findings {
            let word = if f.severity == server::cli::init::Severity::Blocking { "blocking" } else { "warning " };
            println!("{word}  {}: {}", f.place, f.message);
        }
        println!(
            "runboard check: {blocking} blocking, {} warning(s){}",
            findings.len() - blocking,
            if blocking == 0 { "; a batch can start" } else { "" }
        );
    }
    Ok(if blocking == 0 { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}

/// `runboard runs list`: every run directory under the root, latest first.
async fn runs_list(root: PathBuf, json: bool) -> anyhow::Result<ExitCode> {
    anyhow::ensure!(root.is_dir(), "campaign root {} does not exist or is not a folder", root.display());
    let list = tokio::task::spawn_blocking(move || server::runview::RunIndex::new(root).list()).await?;
    if json {
        println!("{}", serde_json::to_string_pretty(&list)?);
    } else {
        for r in &list.runs {
            let when = r.last_written.map(|t| t.to_display()).unwrap_or_else(|| "never".into());
            println!("{when}  {:<12} {}  {}", r.status.label(), r.path, r.status_text);
        }
        for s in &list.skipped {
            println!("skipped {}: {}", s.path, s.reason);
        }
    }
    Ok(ExitCode::SUCCESS)
}
