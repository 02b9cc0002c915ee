//! The console from a terminal: the operation table's third surface.
//!
//! A row of the table that names a command (`=> cli "status"`, `=> auto
//! "log"`) is that command: its arguments are the operation's input type
//! (`clap::Args`, derived in the core under its `cli` feature), its answer is
//! said by the output type's [`ForTerminal`] (or printed as JSON with
//! `--json`, what the REST endpoint answers). The enums and their dispatch
//! below are made from the rows (`commands!`); a new read needs no edit
//! here.
//!
//! Written here by hand: the commands that are more than one operation —
//! `draft` (preview or save), `propose --save N` (rank, then save one),
//! `logs` (list, or read and follow), `upkeep --do` (list, confirm, act),
//! `publish` (push, then wait for its end), `auto on|off|finishing` and
//! `auto settings FILE`. Every other operation is listed in [`WEB_ONLY`]
//! with why; a test fails when one is in neither.
//!
//! A refusal prints every reason and exits 2; any other failure exits 1.

pub mod init;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use runboard::api::operations::op;
use runboard::api::terminal::ForTerminal;
use runboard::api::{ApiError, AutoModeRequest, ErrorKind, Method, Nothing, Operation};
use runboard::console::draft::DraftRequest;
use runboard::live::LiveParams;
use runboard::results::propose::ProposeParams;

use crate::console::LocalConsole;

/// Where a command acts and how it answers: the global `--root` and `--json`.
#[derive(Debug, Clone)]
pub struct Place {
    pub root: PathBuf,
    pub json: bool,
}

/// Makes the commands that are one operation each from the table's rows:
/// `OpCommand` (top level) and `AutoOpCommand` (under `runboard auto`), each
/// variant the operation's input, and their dispatch. Rows naming no command
/// are passed over.
macro_rules! commands {
    ($( $(#[$doc:meta])* $name:ident $ep:literal : $method:ident $path:literal, $input:ty => $output:ty, $doing:literal $(=> $group:ident $cli:tt)? $(, $opt:ident = $val:expr)* ; )*) => {
        commands!(@sort [] [] $( { $(#[$doc])* $name $input $(=> $group $cli)? } )*);
    };
    (@sort [$($top:tt)*] [$($auto:tt)*] { $(#[$doc:meta])* $name:ident $input:ty => cli $cli:tt } $($rest:tt)*) => {
        commands!(@sort [$($top)* { $(#[$doc])* $name $input, $cli }] [$($auto)*] $($rest)*);
    };
    (@sort [$($top:tt)*] [$($auto:tt)*] { $(#[$doc:meta])* $name:ident $input:ty => auto $cli:tt } $($rest:tt)*) => {
        commands!(@sort [$($top)*] [$($auto)* { $(#[$doc])* $name $input, $cli }] $($rest)*);
    };
    (@sort [$($top:tt)*] [$($auto:tt)*] { $(#[$doc:meta])* $name:ident $input:ty } $($rest:tt)*) => {
        commands!(@sort [$($top)*] [$($auto)*] $($rest)*);
    };
    (@sort [$($top:tt)*] [$($auto:tt)*]) => {
        commands!(@enum OpCommand $($top)*);
        commands!(@enum AutoOpCommand $($auto)*);
    };
    (@enum $enum:ident $( { $(#[$doc:meta])* $name:ident $input:ty, $cli:tt } )*) => {
        #[derive(clap::Subcommand, Debug)]
        #[allow(non_camel_case_types)]
        pub enum $enum {
            $( $(#[$doc])* #[command(name = $cli)] $name($input), )*
        }

        impl $enum {
            /// The operations these commands are.
            pub const OPERATIONS: &[&str] = &[$( <op::$name as Operation>::NAME ),*];

            /// Asks the operation and words its answer.
            fn answer(self, console: &LocalConsole, json: bool) -> Result<String, ApiError> {
                match self {
                    $( Self::$name(input) => ask::<op::$name>(console, input, json), )*
                }
            }

            /// Whether the operation changes state (a POST): then the batch
            /// events are said at once, as no server may be running.
            fn changes(&self) -> bool {
                match self {
                    $( Self::$name(_) => <op::$name as Operation>::METHOD == Method::Post, )*
                }
            }
        }
    };
}

use runboard::api::operations::types::*;
runboard::operations!(commands);

/// The operations that are no command, and why: each is a page's part, or
/// answered by a command in another shape.
pub const WEB_ONLY: &[(&str, &str)] = &[
    ("campaign", "the header's campaign name"),
    ("runs", "`runboard runs list` reads any folder of runs, a campaign or not"),
    ("runs_version", "a page's change token"),
    ("run", "a run's page"),
    ("run_version", "a page's change token"),
    ("run_analysis", "a run's page"),
    ("run_calls", "a run's page"),
    ("run_call", "a run's page"),
    ("run_memory", "a run's page"),
    ("run_rounds", "a run's page"),
    ("run_accepted", "a run's page"),
    ("run_trials", "a run's page"),
    ("run_lineage", "a run's page"),
    ("run_trial_graphs", "a run's page"),
    ("run_reports", "a run's page"),
    ("live_version", "a page's change token"),
    ("cells", "the Coverage page's cell list (runboard coverage counts them)"),
    ("run_sets", "the pages' run-set pickers"),
    ("draft_form", "the drafting form's choices"),
    ("preflight", "`runboard check` preflights every spec; `launch` preflights its own"),
    ("stop_cell", "the Live page's per-cell Stop"),
    ("evidence_export", "a download (JSON or CSV) from the Evidence page"),
    ("overview", "the landing page"),
    ("cohorts", "the Cohorts page"),
    ("cohort_save", "the Cohorts page"),
    ("cohort_rename", "the Cohorts page"),
    ("cohort_delete", "the Cohorts page"),
    ("cohort_compare", "the Cohorts page"),
    ("research", "the Research page"),
    ("research_save", "the Research page"),
    ("research_settings", "the Research page"),
    ("research_decide", "the Research page"),
    ("reports", "the Reports page"),
    ("report", "a printable report page"),
    ("auto_version", "a page's change token"),
];

/// The operations the hand-written commands ask (see the module's documentation).
pub const COMPOSED: &[(&str, &str)] = &[
    ("draft_preview", "draft"),
    ("draft_save", "draft --save, propose --save N"),
    ("propose", "propose"),
    ("logs", "logs"),
    ("log", "logs RUN_SET NAME"),
    ("upkeep", "upkeep"),
    ("upkeep_act", "upkeep --do"),
    ("publish_status", "publish --status, publish"),
    ("publish_push", "publish"),
    ("auto_mode", "auto on|off|finishing"),
    ("auto_settings", "auto settings FILE"),
];

#[derive(clap::Subcommand, Debug)]
pub enum ConsoleCommand {
    #[command(flatten)]
    Op(OpCommand),
    /// Draft the next batch from the gaps (shown; --save writes it under specs/drafts/).
    Draft {
        #[command(flatten)]
        request: DraftRequest,
        /// FACTOR=V1,V2 — only cells with one of these values (repeatable).
        #[arg(long = "filter", value_name = "FACTOR=VALUES")]
        filters: Vec<String>,
        /// Save the draft under specs/drafts/ (it is not launched).
        #[arg(long)]
        save: bool,
    },
    /// What to run next: the batches whose cells would most narrow an open
    /// difference to the baseline, each with its predicted cost and time and
    /// the command that drafts it (`--save N` saves proposal N's draft).
    Propose {
        #[command(flatten)]
        params: ProposeParams,
        /// Save proposal N's draft under specs/drafts/ (it is not launched).
        #[arg(long, value_name = "N")]
        save: Option<usize>,
    },
    /// Publish the evidence: run `[publish] command` (one push at a time,
    /// bounded by `[publish] timeout_s`) and print how it ended and its
    /// output; with `--status`, only say what was last published and what
    /// changed since.
    Publish {
        #[arg(long)]
        status: bool,
    },
    /// A run set's logs: without NAME, every log it has (its cells', its
    /// cluster processes', its unit's) with sizes; with NAME, that log's
    /// last 16 KiB, and with --follow what it writes next until interrupted.
    /// Without RUN_SET (or with `-`), the batch `status` shows.
    Logs {
        /// The run set (default: the batch the live view shows, as `status` names it).
        run_set: Option<String>,
        /// A log's name as listed (`cell-<id>`, `manager`, `unit:<unit>`).
        name: Option<String>,
        /// Keep printing what is written (every 0.5 s) until Ctrl-C.
        #[arg(long, short)]
        follow: bool,
    },
    /// What the campaign left lying about — stale drafts, temporary files of
    /// killed writers, units and run sets whose process is gone, orphaned
    /// logs, ended run sets' logs — each numbered with its safe action, and
    /// the disk each run set uses. `--do N` does finding N's action (asked
    /// first on a terminal; `--yes` answers for a script).
    Upkeep {
        /// Do the action of one finding: its id as listed (`u-…`), which
        /// names that finding whatever else comes and goes; or its number,
        /// asked first on a terminal (refused with --yes: numbers shift).
        #[arg(long = "do", value_name = "ID|N")]
        act: Option<String>,
        /// Do it without asking.
        #[arg(long)]
        yes: bool,
    },
    /// The autopilot: status, on, off, finishing, explain (a dry run), settings, log, tick.
    Auto {
        #[command(subcommand)]
        cmd: AutoCommand,
    },
}

#[derive(clap::Subcommand, Debug)]
pub enum AutoCommand {
    #[command(flatten)]
    Op(AutoOpCommand),
    /// Turn auto mode on: every tick decides and launches the next batch.
    On,
    /// Turn auto mode off (a running batch is left alone).
    Off,
    /// Let the current batch end, launch nothing more, then off.
    Finishing,
    /// Save settings from a JSON file (`-` for standard input); refused with every reason.
    Settings { file: PathBuf },
}

/// Runs one console command (blocking: call it off the async runtime).
pub fn run(cmd: ConsoleCommand, at: &Place) -> ExitCode {
    let console = match open(&at.root) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let json = at.json;
    let changes = match &cmd {
        ConsoleCommand::Op(c) => c.changes(),
        ConsoleCommand::Auto { cmd: AutoCommand::Op(c) } => c.changes(),
        ConsoleCommand::Draft { save, .. } => *save,
        ConsoleCommand::Propose { save, .. } => save.is_some(),
        ConsoleCommand::Upkeep { act, .. } => act.is_some(),
        // A push says its events itself, whatever its end.
        ConsoleCommand::Publish { .. } => false,
        ConsoleCommand::Logs { .. } => false,
        ConsoleCommand::Auto { .. } => true,
    };
    let answered = match cmd {
        ConsoleCommand::Op(c) => c.answer(&console, json),
        ConsoleCommand::Auto { cmd } => auto(&console, cmd, json),
        ConsoleCommand::Draft { request, filters, save } => draft(&console, request, filters, save, json),
        ConsoleCommand::Propose { params, save } => propose(&console, params, save, json),
        ConsoleCommand::Publish { status: true } => ask::<op::publish_status>(&console, Nothing {}, json),
        ConsoleCommand::Publish { status: false } => {
            let pushed = publish(&console, json);
            crate::live::notify::say_now(console.campaign());
            return match pushed {
                Ok((text, true)) => finish(Ok(text), json),
                // The push ran and failed: its words and output on stderr, exit 1.
                Ok((text, false)) => {
                    eprint!("{text}");
                    ExitCode::FAILURE
                }
                Err(e) => finish(Err(e), json),
            };
        }
        ConsoleCommand::Upkeep { act: None, .. } => ask::<op::upkeep>(&console, Nothing {}, json),
        ConsoleCommand::Upkeep { act: Some(n), yes } => upkeep_do(&console, &n, yes, json),
        ConsoleCommand::Logs { run_set, name, follow } => {
            live_run_set(&console, run_set).and_then(|run_set| match name {
                None => ask::<op::logs>(&console, runboard::live::logs::LogsQuery { run_set }, json),
                Some(name) => follow_log(&console, run_set, name, follow, json),
            })
        }
    };
    if changes {
        // No server may be running to say it: the batch events now.
        crate::live::notify::say_now(console.campaign());
    }
    finish(answered, json)
}

fn auto(console: &LocalConsole, cmd: AutoCommand, json: bool) -> Result<String, ApiError> {
    use runboard::auto::Mode;
    let mode = |m: Mode| ask::<op::auto_mode>(console, AutoModeRequest::new(m), json);
    match cmd {
        AutoCommand::Op(c) => c.answer(console, json),
        AutoCommand::On => mode(Mode::On),
        AutoCommand::Off => mode(Mode::Off),
        AutoCommand::Finishing => mode(Mode::Finishing),
        AutoCommand::Settings { file } => {
            let text = if file.as_os_str() == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map(|_| s)
            } else {
                std::fs::read_to_string(&file)
            };
            let text = text.map_err(|e| ApiError::refused(vec![format!("{}: {e}", file.display())]))?;
            let settings = serde_json::from_str::<serde_json::Value>(&text)
                .map_err(|e| ApiError::refused(vec![format!("{}: not JSON: {e}", file.display())]))?;
            ask::<op::auto_settings>(console, settings, json)
        }
    }
}

fn draft(
    console: &LocalConsole,
    mut req: DraftRequest,
    filters: Vec<String>,
    save: bool,
    json: bool,
) -> Result<String, ApiError> {
    let mut bad = Vec::new();
    for f in filters {
        match f.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                req.filters.entry(k.trim().to_owned()).or_default().extend(v.split(',').map(|x| x.trim().to_owned()))
            }
            _ => bad.push(format!("--filter {f:?}: give FACTOR=VALUE[,VALUE…]")),
        }
    }
    if !bad.is_empty() {
        Err(ApiError::refused(bad))
    } else if save {
        ask::<op::draft_save>(console, req, json)
    } else {
        ask::<op::draft_preview>(console, req, json)
    }
}

fn propose(console: &LocalConsole, params: ProposeParams, save: Option<usize>, json: bool) -> Result<String, ApiError> {
    let Some(n) = save else { return ask::<op::propose>(console, params, json) };
    let p = op::propose::call(console, params)?;
    match n.checked_sub(1).and_then(|i| p.proposals.get(i)) {
        None => Err(ApiError::refused(vec![format!(
            "--save {n}: there are {} proposal(s) (numbered from 1)",
            p.proposals.len()
        )])),
        Some(chosen) => ask::<op::draft_save>(console, chosen.request.clone(), json),
    }
}

/// Starts a push (`publish_push` answers once it has started) and waits for
/// its end in the status: how it ended in words (or JSON), and whether it
/// succeeded.
fn publish(console: &LocalConsole, json: bool) -> Result<(String, bool), ApiError> {
    let started = call::<op::publish_push>(console, Nothing {})?.started_at;
    let asked = std::time::Instant::now();
    loop {
        let status = op::publish_status::call(console, Nothing {})?;
        // The push is killed at its time limit; one that recorded no end
        // well after it (its thread lost) is said, not waited for forever.
        if asked.elapsed().as_secs_f64() > status.timeout_s + 60.0 {
            return Err(ApiError::internal("waiting for the push to record its end"));
        }
        let ended = status.running.is_none() && status.last.as_ref().is_some_and(|l| l.started_at >= started);
        if ended {
            let record = status.last.expect("checked above");
            let text = if json { pretty(&record) } else { format!("{}\n{}", record.words(), record.output) };
            return Ok((text, record.succeeded()));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// `upkeep --do ID|N`: the finding named, confirmed on a terminal unless
/// `--yes` (which a number refuses), then its action.
fn upkeep_do(console: &LocalConsole, n: &str, yes: bool, json: bool) -> Result<String, ApiError> {
    let v = op::upkeep::call(console, Nothing {})?;
    let f = match n.parse::<usize>() {
        // A number names whatever is listed there now: only a person,
        // shown the target in the question, may act on it.
        Ok(_) if yes => {
            return Err(ApiError::refused(vec![format!(
                "--do {n} --yes: a number names whatever finding is there now, and findings come and go; give the finding's id as listed (runboard upkeep: u-…)"
            )]))
        }
        Ok(i) => i.checked_sub(1).and_then(|i| v.findings.get(i)).ok_or_else(|| {
            ApiError::refused(vec![format!(
                "--do {n}: there are {} finding(s) (numbered from 1; see runboard upkeep)",
                v.findings.len()
            )])
        })?,
        Err(_) => v.findings.iter().find(|f| f.id() == n).ok_or_else(|| {
            ApiError::refused(vec![format!(
                "--do {n}: no finding has this id now (it was cleared, or what it was found from changed); list them again: runboard upkeep"
            )])
        })?,
    };
    if !yes && !confirmed(&f.question) {
        return Err(ApiError::refused(vec![format!(
            "{} {}: not confirmed (answer y on a terminal, or give --yes)",
            f.action.word(),
            f.target
        )]));
    }
    let req = runboard::live::upkeep::UpkeepRequest {
        action: f.action.word().to_owned(),
        target: f.target.clone(),
        token: f.token.clone(),
    };
    ask::<op::upkeep_act>(console, req, json)
}

/// The campaign at `root`, or the exit code after saying why not.
fn open(root: &Path) -> Result<LocalConsole, ExitCode> {
    LocalConsole::require_campaign(root).and_then(|_| LocalConsole::open_once(root)).map_err(|e| {
        eprintln!("runboard: {e:#}");
        ExitCode::from(2)
    })
}

/// Asks operation `O` of the campaign — the same method, and so the same
/// answer or refusal, as its REST route and server function — and words the
/// answer: pretty JSON with `--json`, else its [`ForTerminal`] words.
fn ask<O: Operation>(console: &LocalConsole, input: O::Input, json: bool) -> Result<String, ApiError>
where
    O::Output: ForTerminal,
{
    call::<O>(console, input).map(|out| if json { pretty(&out) } else { out.for_terminal() })
}

/// Asks operation `O`; a state-changing one (a POST) is a line of the audit
/// log, by this user, answered or refused — as the HTTP layer records a
/// page's and a REST client's.
fn call<O: Operation>(console: &LocalConsole, input: O::Input) -> Result<O::Output, ApiError> {
    if O::METHOD != Method::Post {
        return O::call(console, input);
    }
    let args = serde_json::to_value(&input).unwrap_or_default();
    let answered = O::call(console, input);
    crate::access::audit::cli_line(&console.root(), O::NAME, args, answered.as_ref().map(|_| O::STATUS));
    answered
}

/// Asks `question` on the terminal; false when stdin is not one.
fn confirmed(question: &str) -> bool {
    use std::io::{BufRead, IsTerminal, Write};
    if !std::io::stdin().is_terminal() {
        return false;
    }
    eprint!("{question} [y/N] ");
    let _ = std::io::stderr().flush();
    let mut answer = String::new();
    let _ = std::io::stdin().lock().read_line(&mut answer);
    matches!(answer.trim(), "y" | "Y" | "yes")
}

/// The run set named, or (none, or `-`) the one the live view shows — as
/// pause, stop and status default to it.
fn live_run_set(console: &LocalConsole, named: Option<String>) -> Result<String, ApiError> {
    if let Some(n) = named.filter(|n| n != "-") {
        return Ok(n);
    }
    let live = op::live::call(console, LiveParams::default())?;
    live.run_set.ok_or_else(|| {
        ApiError::not_found(
            "no batch to read the logs of: nothing has been launched yet; name a run set (runboard logs RUN_SET)",
        )
    })
}

/// Prints a log's tail, then (with `follow`) what it writes next, every
/// 0.5 s, until interrupted; a reset is said on stderr. A log that does not
/// exist is refused with the run set's logs named (with `follow`, waited for).
fn follow_log(
    console: &LocalConsole,
    run_set: String,
    name: String,
    follow: bool,
    json: bool,
) -> Result<String, ApiError> {
    use std::io::Write;
    let mut after = None;
    loop {
        let q = runboard::live::logs::LogQuery { run_set: run_set.clone(), name: name.clone(), after: after.clone() };
        let chunk = op::log::call(console, q)?;
        if chunk.missing && after.is_none() {
            let listed = op::logs::call(console, runboard::live::logs::LogsQuery { run_set: run_set.clone() })?;
            let names: Vec<&str> = listed.logs.iter().map(|l| l.name.as_str()).collect();
            let has = if names.is_empty() {
                "it has no log yet".to_owned()
            } else {
                format!("its logs: {}", names.join(", "))
            };
            if !follow {
                return Err(ApiError::not_found(format!("run set {run_set} has no log {name:?} (yet); {has}")));
            }
            eprintln!("[{name} has not been written yet; waiting for it — {has}]");
        }
        if let Some(r) = &chunk.reset {
            eprintln!("[{r}]");
        }
        let mut out = std::io::stdout().lock();
        let _ = if json {
            writeln!(out, "{}", serde_json::to_string(&chunk).unwrap_or_default())
        } else {
            write!(out, "{}", chunk.text)
        };
        let _ = out.flush();
        after = Some(chunk.next.clone());
        if !chunk.more {
            if !follow {
                return Ok(String::new());
            }
            std::thread::sleep(std::time::Duration::from_millis(500));
        }
    }
}

/// Prints the answer, or the refusal (every reason) with its exit code.
fn finish(answered: Result<String, ApiError>, json: bool) -> ExitCode {
    match answered {
        Ok(text) => {
            print!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            if json {
                eprintln!("{}", serde_json::to_string_pretty(&e).unwrap_or_default());
            } else if e.reasons.len() > 1 {
                eprintln!("refused:");
                for r in &e.reasons {
                    eprintln!("  - {r}");
                }
            } else {
                eprintln!("runboard: {}", e.error);
            }
            match e.kind {
                ErrorKind::Internal => ExitCode::FAILURE,
                _ => ExitCode::from(2),
            }
        }
    }
}

fn pretty<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Subcommand;
    use runboard::api::OPERATIONS;

    /// The command line is a surface of the table: every operation is a
    /// command by itself, asked by a hand-written command, or said to be
    /// web-only — one of the three, never none.
    #[test]
    fn every_operation_is_a_command_composed_or_web_only() {
        for o in OPERATIONS {
            let command = OpCommand::OPERATIONS.contains(&o.name) || AutoOpCommand::OPERATIONS.contains(&o.name);
            let composed = COMPOSED.iter().any(|(n, _)| *n == o.name);
            let web = WEB_ONLY.iter().any(|(n, _)| *n == o.name);
            let places = [command, composed, web].iter().filter(|x| **x).count();
            assert_eq!(places, 1, "operation {}: a command {command}, composed {composed}, web-only {web}", o.name);
            assert_eq!(command, o.cli.is_some(), "{}", o.name);
        }
        for (name, _) in COMPOSED.iter().chain(WEB_ONLY) {
            assert!(OPERATIONS.iter().any(|o| o.name == *name), "{name} is no operation");
        }
        // Each row's command is one clap parses, under the name the row gives.
        let cli = ConsoleCommand::augment_subcommands(clap::Command::new("runboard"));
        for o in OPERATIONS {
            let Some(words) = o.cli else { continue };
            let mut at = &cli;
            for word in words.split(' ') {
                at = at.find_subcommand(word).unwrap_or_else(|| panic!("{}: no command {words:?}", o.name));
            }
        }
    }
}
