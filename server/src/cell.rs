//! `runboard cell inspect`: Inspect AI as a cell. Runs `inspect eval` (or,
//! when the cell's folder holds the log of an unfinished attempt, Inspect's
//! own `inspect eval-retry` of it) with the eval log in the cell's folder,
//! then turns the log into the cell's `result.json`. The rules are
//! `runboard::harness::inspect`; this is the process and file side.
//!
//! A pause reaches Inspect as SIGTERM (the driver signals the cell's process
//! group, systemd and Slurm every process of the batch). Inspect is started
//! through a Python shim (`inspect_shim.py`) that makes SIGTERM an interrupt,
//! so Inspect cancels the eval and saves the samples it finished — without
//! it, SIGTERM ends Python at once and the log keeps none — and registers an
//! Inspect hook that writes the cell's live samples report
//! (`{out}/samples.json`: samples finished of the total, the score so far)
//! at each sample's end and every 10 s.

use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use runboard::drive::result::{CellResult, RESULT_FILE};
use runboard::harness::inspect::{ending, newest, start, LogHeader, Start};

/// The folder in a cell's `{out}` that holds Inspect's eval logs.
pub const LOG_DIR: &str = "inspect";

/// Runs Inspect's own command line with SIGTERM (and SIGINT, which a
/// non-interactive shell may have left ignored) raising KeyboardInterrupt,
/// Inspect's way to cancel an eval and save what finished; and with the hook
/// that reports the samples as they finish.
const SHIM: &str = include_str!("inspect_shim.py");

/// The largest eval log read (its samples are skipped, not kept, so memory
/// stays small; this bounds the time).
const MAX_LOG: u64 = 1 << 30;

/// After a stop, how long Inspect gets to save its log by itself before it
/// is interrupted once more, and how long after that before it is killed
/// (the driver's own grace usually ends it first).
const SAVE_WAIT: Duration = Duration::from_secs(5);
const KILL_WAIT: Duration = Duration::from_secs(60);

#[derive(clap::Args, Debug, Clone)]
pub struct InspectCell {
    /// The Inspect task, as `inspect eval` takes it: `suite.py@arithmetic`.
    pub task: String,
    /// Inspect's model name, e.g. `openai/qwen3-32b`.
    #[arg(long)]
    pub model: String,
    /// The model's OpenAI-compatible base URL (`--model-base-url`, and
    /// `OPENAI_BASE_URL` for a retry), e.g. the cell's `{endpoint_url}`.
    #[arg(long)]
    pub base_url: Option<String>,
    /// The cell's folder (default: `RUNBOARD_CELL_DIR`, which the driver sets).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// The Python that has `inspect-ai` installed.
    #[arg(long, default_value = "python3")]
    pub python: String,
    /// Passed as `--seed`.
    #[arg(long)]
    pub seed: Option<i64>,
    /// More `inspect eval` arguments (after `--`), e.g. `-- --limit 10 -T level=2`.
    #[arg(last = true)]
    pub args: Vec<String>,
}

fn say(text: &str) {
    println!("runboard cell inspect: {text}");
}

/// The eval logs in `dir` with their headers; a log that cannot be read (one
/// being written, a broken file) is named and left out.
fn read_logs(dir: &Path) -> Vec<(String, LogHeader)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut logs = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if !name.ends_with(".json") || name.starts_with('.') {
            continue;
        }
        let read = crate::files::fsread::open_file(&e.path()).map_err(String::from).and_then(|(f, len)| {
            if len > MAX_LOG {
                return Err(format!("{len} bytes is more than the {} MiB read", MAX_LOG >> 20));
            }
            serde_json::from_reader::<_, LogHeader>(BufReader::new(f)).map_err(|e| e.to_string())
        });
        match read {
            Ok(h) => logs.push((name, h)),
            Err(why) => say(&format!("{LOG_DIR}/{name} not read: {why}")),
        }
    }
    logs
}

/// Runs the cell; its exit status is the cell contract's: 0 done, 1 failed,
/// 143 stopped (a resume retries the unfinished samples).
pub async fn run(opts: InspectCell) -> anyhow::Result<ExitCode> {
    let out = match opts.out.clone().or_else(|| std::env::var_os("RUNBOARD_CELL_DIR").map(PathBuf::from)) {
        Some(o) => o,
        None => anyhow::bail!("no cell folder: pass --out DIR (the driver sets RUNBOARD_CELL_DIR)"),
    };
    anyhow::ensure!(out.is_dir(), "the cell folder {} does not exist", out.display());
    let logs_dir = out.join(LOG_DIR);
    std::fs::create_dir_all(&logs_dir)?;
    let logs_arg = logs_dir.display().to_string();
    let mut argv: Vec<String> = vec!["-c".into(), SHIM.into()];
    let logs = read_logs(&logs_dir);
    // A retry's finished samples count in the report from its start.
    let kept = newest(&logs).map(|(_, h)| (h.finished_samples(), h.kept_scores())).unwrap_or_default();
    match start(&logs) {
        Start::Report { log } => {
            say(&format!("{LOG_DIR}/{log} finished already: reporting it, nothing run again"));
            return report(&out, &logs_dir, None);
        }
        Start::Retry { log, kept, total } => {
            let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
            say(&format!(
                "resuming with inspect eval-retry {LOG_DIR}/{log}: {kept}{of} samples finished and are kept; the rest run"
            ));
            argv.extend(["eval-retry".into(), logs_dir.join(&log).display().to_string()]);
            argv.extend(["--log-dir".into(), logs_arg, "--display".into(), "plain".into()]);
        }
        Start::Eval => {
            say(&format!("inspect eval {} --model {}", opts.task, opts.model));
            argv.extend(["eval".into(), opts.task.clone(), "--model".into(), opts.model.clone()]);
            argv.extend(["--log-dir".into(), logs_arg, "--log-format".into(), "json".into()]);
            argv.extend(["--display".into(), "plain".into()]);
            if let Some(url) = &opts.base_url {
                argv.extend(["--model-base-url".into(), url.clone()]);
            }
            if let Some(seed) = opts.seed {
                argv.extend(["--seed".into(), seed.to_string()]);
            }
            argv.extend(opts.args.iter().cloned());
        }
    }
    let mut cmd = tokio::process::Command::new(&opts.python);
    cmd.args(&argv).stdin(std::process::Stdio::null()).env("INSPECT_LOG_FORMAT", "json");
    cmd.env("RUNBOARD_SAMPLES_FILE", out.join(runboard::drive::result::SAMPLES_FILE));
    if matches!(start(&logs), Start::Retry { .. }) {
        let (finished, (scored, sum)) = kept;
        cmd.env("RUNBOARD_INSPECT_KEPT", finished.to_string())
            .env("RUNBOARD_INSPECT_KEPT_SCORED", scored.to_string())
            .env("RUNBOARD_INSPECT_KEPT_SCORE", sum.to_string());
    }
    if let Some(url) = &opts.base_url {
        // A retry takes the model from the log; the provider reads its URL here.
        cmd.env("OPENAI_BASE_URL", url);
        if std::env::var_os("OPENAI_API_KEY").is_none() {
            // Inspect's OpenAI provider refuses to start without a key; a
            // local server does not check it.
            cmd.env("OPENAI_API_KEY", "unused");
        }
    }
    // Made before the child starts: a stop that comes at once is still seen.
    let stop = crate::system::signals::Terminated::register();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        // The cell failed for this reason: said in its report, not only its log.
        Err(e) => {
            let reason = format!(
                "{} could not be started: {e} (make the environment: python3 -m venv .venv && .venv/bin/pip install inspect-ai openai)",
                opts.python
            );
            say(&reason);
            crate::files::atomic::write_json(
                &out.join(RESULT_FILE),
                &CellResult { reason: Some(reason), ..CellResult::default() },
            )?;
            return Ok(ExitCode::FAILURE);
        }
    };
    let status = tokio::select! {
        s = child.wait() => Some(s?),
        _ = stop.wait() => None,
    };
    let Some(status) = status else {
        // Stopped. Inspect got the same signal (same process group) and is
        // saving what finished; if it was not reached, interrupt it once.
        say("stopping: Inspect saves the samples it finished");
        let mut ended = tokio::time::timeout(SAVE_WAIT, child.wait()).await.ok();
        if ended.is_none() {
            if let Some(pid) = child.id() {
                let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), nix::sys::signal::SIGINT);
            }
            ended = tokio::time::timeout(KILL_WAIT, child.wait()).await.ok();
        }
        if ended.is_none() {
            let _ = child.kill().await;
        }
        if let Some((log, h)) = newest(&read_logs(&logs_dir)) {
            let n = h.finished_samples();
            say(&format!("stopped: {LOG_DIR}/{log} keeps {n} finished samples; a resume retries the rest"));
        }
        return Ok(ExitCode::from(143));
    };
    report(&out, &logs_dir, status.code())
}

/// Writes `result.json` from the newest log; exits 0 when the eval succeeded.
fn report(out: &Path, logs_dir: &Path, code: Option<i32>) -> anyhow::Result<ExitCode> {
    let (result, done) = match newest(&read_logs(logs_dir)) {
        Some((log, h)) => {
            let e = ending(h);
            let what = match (&e.result.score, &e.result.samples) {
                (_, Some(s)) => format!("{} of {} samples passed", s.passed, s.total),
                (Some(score), None) => format!("score {score}"),
                (None, None) => e.result.reason.clone().unwrap_or_default(),
            };
            say(&format!("{LOG_DIR}/{log}: {what}"));
            (e.result, e.done)
        }
        None => {
            let exit = code.map_or_else(|| "a signal".to_owned(), |c| format!("exit {c}"));
            let reason = format!("inspect wrote no eval log ({exit}); its output is in the cell's log");
            say(&reason);
            (CellResult { reason: Some(reason), ..CellResult::default() }, false)
        }
    };
    crate::files::atomic::write_json(&out.join(RESULT_FILE), &result)?;
    Ok(if done { ExitCode::SUCCESS } else { ExitCode::FAILURE })
}
