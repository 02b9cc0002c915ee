//! The console from a terminal: `runboard status | coverage | draft | launch |
//! pause | stop | resume`. Each is the same typed operation the pages and REST
//! call (the `Console` trait over the campaign), so an operator on SSH sees
//! and does exactly what the browser would. A refusal prints every reason and
//! exits 2; any other failure exits 1.

use std::path::PathBuf;
use std::process::ExitCode;

use runboard::api::operations::op;
use runboard::api::{
    ApiError, AutoLogQuery, AutoModeRequest, CatalogueQuery, CellSamples, CoverageParams, ErrorKind, EvidenceQuery,
    Nothing, Operation, SamplesQuery, TimingQuery,
};
use runboard::draft::DraftRequest;
use runboard::launch::{LaunchRequest, Launched, PauseRequest, ResumeRequest, StopReport, StopRequest};
use runboard::live::LiveParams;
use runboard::numfmt::thousands;

use crate::console::LocalConsole;

#[derive(clap::Args, Debug, Clone)]
pub struct RootArg {
    /// The campaign root.
    #[arg(long, default_value = ".")]
    pub root: PathBuf,
    /// Print JSON (what the REST endpoint answers).
    #[arg(long)]
    pub json: bool,
}

#[derive(clap::Subcommand, Debug)]
pub enum ConsoleCommand {
    /// The live state of the batch: idle, starting, running, stopped (resumable),
    /// aborted, launch failed (and why); per-cell progress.
    Status {
        #[command(flatten)]
        at: RootArg,
    },
    /// Which planned cells are covered, running, failed or gaps, per factor.
    Coverage {
        #[command(flatten)]
        at: RootArg,
        /// The grid's row factor (default: the matrix's first).
        #[arg(long)]
        rows: Option<String>,
        /// The grid's column factor (default: the matrix's second).
        #[arg(long)]
        cols: Option<String>,
    },
    /// Draft the next batch from the gaps (shown; --save writes it under specs/drafts/).
    Draft {
        #[command(flatten)]
        at: RootArg,
        #[arg(long)]
        label: String,
        /// At most this many cells (1–10,000; default 20, as on REST and the page).
        #[arg(long)]
        max_cells: Option<f64>,
        /// FACTOR=V1,V2 — only cells with one of these values (repeatable).
        #[arg(long = "filter", value_name = "FACTOR=VALUES")]
        filters: Vec<String>,
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        endpoint: Option<String>,
        #[arg(long)]
        prompt_variant: Option<String>,
        #[arg(long)]
        retry_feedback: Option<bool>,
        /// Leave failed cells out (by default they are drafted again).
        #[arg(long)]
        skip_failed: bool,
        #[arg(long)]
        save: bool,
    },
    /// Launch a spec (a draft is committed under the next number) through the
    /// one launch path: checked, preflighted, started by the campaign's launcher.
    Launch {
        /// The spec, relative to the root, under specs/.
        spec: String,
        #[command(flatten)]
        at: RootArg,
        #[arg(long)]
        skip_preflight: bool,
        #[arg(long)]
        tag: Option<String>,
    },
    /// Stop the running batch and keep it resumable.
    Pause {
        /// The run set to pause (default: the batch the live state speaks for).
        run_set: Option<String>,
        #[command(flatten)]
        at: RootArg,
    },
    /// Stop the batch and abort it (and turn auto mode off): it will not be resumed.
    Stop {
        /// The run sets to stop and abort (default: the batch the live state
        /// speaks for; other batches in flight run on).
        run_sets: Vec<String>,
        #[command(flatten)]
        at: RootArg,
    },
    /// What the results say: pass rates with 95 % intervals by a factor,
    /// differences to the first level, per task and model, where failures fall.
    Evidence {
        #[command(flatten)]
        at: RootArg,
        /// The factor to group by (default: condition).
        #[arg(long)]
        by: Option<String>,
        /// The cells counted, e.g. `task=t1,t2 tag=nightly from=2026-11-01`.
        #[arg(long)]
        scope: Option<String>,
    },
    /// What to run next: the batches whose cells would most narrow an open
    /// difference to the baseline, each with its predicted cost and time and
    /// the command that drafts it (`--save N` saves proposal N's draft).
    Propose {
        #[command(flatten)]
        at: RootArg,
        /// The factor compared within each task (default: condition).
        #[arg(long)]
        by: Option<String>,
        /// Cells per proposed batch (1–10,000; default 20).
        #[arg(long)]
        max_cells: Option<String>,
        /// How many proposals (1–50; default 5).
        #[arg(long)]
        top: Option<String>,
        /// The drafts' model (default: the newest batch's route).
        #[arg(long)]
        model: Option<String>,
        #[arg(long)]
        endpoint: Option<String>,
        /// The difference, in percentage points, the cells-needed figure is for (default 20).
        #[arg(long)]
        delta: Option<String>,
        /// Save proposal N's draft under specs/drafts/ (it is not launched).
        #[arg(long, value_name = "N")]
        save: Option<usize>,
    },
    /// Every run-set tag, with its note and run sets.
    Tags {
        #[command(flatten)]
        at: RootArg,
    },
    /// Edit a run-set tag (under the campaign lock, checked as at launch):
    /// add or remove run sets, set its note, or delete it (its run sets stay).
    Tag {
        /// The tag: 1–40 letters, digits, '-', '_' or '.'.
        tag: String,
        #[command(flatten)]
        at: RootArg,
        /// A run set to tag (repeatable).
        #[arg(long, value_name = "RUN_SET")]
        add: Vec<String>,
        /// A run set to untag (repeatable).
        #[arg(long, value_name = "RUN_SET")]
        remove: Vec<String>,
        /// The tag's note (an empty one clears it).
        #[arg(long)]
        note: Option<String>,
        /// Delete the tag.
        #[arg(long)]
        delete: bool,
    },
    /// Publish the evidence: run `[publish] command` (one push at a time,
    /// bounded by `[publish] timeout_s`) and print how it ended and its
    /// output; with `--status`, only say what was last published and what
    /// changed since.
    Publish {
        #[command(flatten)]
        at: RootArg,
        #[arg(long)]
        status: bool,
    },
    /// Where the cells' time went: which timings count and why the others
    /// do not, durations and throughput per endpoint.
    Timing {
        #[command(flatten)]
        at: RootArg,
        /// The cells timed, e.g. `model=m1 from=2026-11-01`.
        #[arg(long)]
        scope: Option<String>,
        /// List this run set's cells with their phases.
        #[arg(long)]
        run_set: Option<String>,
    },
    /// The provider catalogue: each model and endpoint, whether it can be
    /// used now and why not (endpoints probed at `/models`, quarantines,
    /// credit flags, daily caps), and what it has been used for.
    Catalogue {
        #[command(flatten)]
        at: RootArg,
        /// Probe the endpoints again now (else probes of the last 30 s are shown).
        #[arg(long)]
        fresh: bool,
    },
    /// Each endpoint now: its calls of the last minute (how many, tokens/s,
    /// latency, requests in flight) and its engine's metrics (vLLM's
    /// `/metrics`: running, waiting, KV cache, generated tokens/s), busy or not.
    Telemetry {
        #[command(flatten)]
        at: RootArg,
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
        #[command(flatten)]
        at: RootArg,
        /// Keep printing what is written (every 0.5 s) until Ctrl-C.
        #[arg(long, short)]
        follow: bool,
    },
    /// The samples behind one cell, from its harness's log (Inspect AI's
    /// JSON or `.eval`): each sample's id, epoch, verdict, score and
    /// excerpts of its input, target and output; with --against, matched with
    /// another cell's by id and epoch, and with --flipped only those whose
    /// verdicts differ.
    Samples {
        run_set: String,
        cell: String,
        #[command(flatten)]
        at: RootArg,
        /// The other cell, `<run set>/<cell>` (its twin at the baseline, say).
        #[arg(long)]
        against: Option<String>,
        /// With --against: only the samples that flipped.
        #[arg(long)]
        flipped: bool,
        /// The first sample listed.
        #[arg(long, default_value_t = 0)]
        offset: usize,
        /// How many (1–1,000).
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// What the campaign left lying about — stale drafts, temporary files of
    /// killed writers, units and run sets whose process is gone, orphaned
    /// logs, ended run sets' logs — each numbered with its safe action, and
    /// the disk each run set uses. `--do N` does finding N's action (asked
    /// first on a terminal; `--yes` answers for a script).
    Upkeep {
        #[command(flatten)]
        at: RootArg,
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
    /// Resume a stopped run set: its unfinished cells run again.
    Resume {
        run_set: String,
        #[command(flatten)]
        at: RootArg,
        #[arg(long)]
        skip_preflight: bool,
    },
}

#[derive(clap::Subcommand, Debug, Clone)]
pub enum AutoCommand {
    /// Mode, hold and why, lanes, today's launches against the caps, the last events.
    Status {
        #[command(flatten)]
        at: RootArg,
    },
    /// Turn auto mode on: every tick decides and launches the next batch.
    On {
        #[command(flatten)]
        at: RootArg,
    },
    /// Turn auto mode off (a running batch is left alone).
    Off {
        #[command(flatten)]
        at: RootArg,
    },
    /// Let the current batch end, launch nothing more, then off.
    Finishing {
        #[command(flatten)]
        at: RootArg,
    },
    /// A dry run: every guard with its value and what a tick now would do.
    Explain {
        #[command(flatten)]
        at: RootArg,
    },
    /// Save settings from a JSON file (`-` for standard input); refused with every reason.
    Settings {
        file: PathBuf,
        #[command(flatten)]
        at: RootArg,
    },
    /// The event log, newest first.
    Log {
        #[command(flatten)]
        at: RootArg,
        #[arg(long, default_value_t = 20)]
        limit: usize,
    },
    /// Run one tick now (for a machine that runs no server: from cron or a timer).
    Tick {
        #[command(flatten)]
        at: RootArg,
    },
}

fn auto_text(v: &runboard::auto::view::AutoView) -> String {
    let st = &v.state;
    let mut out = format!("auto mode: {}\n", st.mode.word());
    // The same headline as the Auto page: from the evaluation made now.
    out += &format!("{}\n", v.explain.headline());
    if let Some(h) = v.explain.hold.as_ref().filter(|h| st.hold.as_ref().is_none_or(|s| s.reason != h.reason)) {
        out += &format!(
            "(the last tick recorded {}; the next records {})\n",
            st.hold.as_ref().map_or("no hold", |s| s.reason.word()),
            h.reason.word()
        );
    }
    out += &format!("decision now: {}\n", v.explain.verdict);
    for p in &v.settings_problems {
        out += &format!("settings problem: {p}\n");
    }
    for l in &v.lanes {
        let since = l.idle_since.map(|t| format!(" (idle since {})", t.to_display())).unwrap_or_default();
        out += &format!(
            "lane {:16} {:14} {}{since}\n",
            l.lane,
            l.status.word(),
            l.unit.clone().or(l.idle_reason.clone()).unwrap_or_default()
        );
    }
    for c in &v.caps {
        out += &format!(
            "today {}: {} by auto{}, {} in all{}\n",
            c.model,
            c.auto_today,
            c.auto_cap.map(|x| format!(" of {x}")).unwrap_or_default(),
            c.all_today,
            c.catalogue_cap.map(|x| format!(" of {x}")).unwrap_or_default()
        );
    }
    for (m, f) in &st.credit_flags {
        out += &format!("credit flag: {m} until {} ({})\n", f.until.to_display(), f.reason);
    }
    for (e, f) in &st.endpoint_failures {
        out += &format!("quarantined: {e} until {} ({})\n", f.retry_at.to_display(), f.reason);
    }
    for b in &st.closeout_backfill {
        out += &format!("closeout to backfill: {} ({}: {})\n", b.run_set, b.stage, b.message);
    }
    out
}

fn rate_text(p: &runboard::results::stats::Proportion) -> String {
    match (p.rate, p.ci95) {
        (Some(r), Some(ci)) => {
            format!("{}/{} = {:.0} % [{:.0}–{:.0} %]", p.successes, p.n, r * 100.0, ci.lo * 100.0, ci.hi * 100.0)
        }
        _ => "no ended cell".into(),
    }
}

fn catalogue_text(c: &runboard::catalogue::CatalogueView) -> String {
    let mut out = format!("{}\n", c.note);
    if c.models.is_empty() && c.endpoints.is_empty() {
        out += "The catalogue (campaign.toml [[models]], [[endpoints]]) is empty.\n";
    }
    let used = |u: &runboard::catalogue::Use| {
        format!(
            "{} run set(s), {} cells, {} tokens{}",
            thousands(u.run_sets as u64),
            thousands(u.cells as u64),
            thousands(u.tokens),
            u.cost.map(|x| format!(", cost {}", runboard::numfmt::money(x, &c.currency))).unwrap_or_default()
        )
    };
    for m in &c.models {
        out += &format!("model {} ({}): {} {}\n", m.name, m.kind.as_str(), m.words, used(&m.used));
    }
    for e in &c.endpoints {
        out += &format!(
            "endpoint {} ({}, {}, serves {}): {} {}\n",
            e.name,
            e.url,
            e.backend,
            e.models.join(", "),
            e.words,
            used(&e.used)
        );
    }
    if !c.uncatalogued.is_empty() {
        out +=
            &format!("run sets naming a model or endpoint no longer in the catalogue: {}\n", c.uncatalogued.join(", "));
    }
    out
}

/// A finding's id for `--do`: from its token (what it was found from), so
/// it names this finding alone, and stops naming anything once it changed.
fn finding_id(f: &runboard::upkeep::Finding) -> String {
    format!("u-{:08x}", runboard::hash::fnv1a(f.token.as_bytes()) as u32)
}

fn upkeep_text(v: &runboard::upkeep::UpkeepView) -> String {
    let mut out = String::new();
    if v.findings.is_empty() {
        out += "Nothing to clear up.\n";
    }
    for (i, f) in v.findings.iter().enumerate() {
        out += &format!("{:>3}. {} {} → {}\n", i + 1, finding_id(f), f.words, f.action.word());
    }
    if !v.findings.is_empty() {
        out += "do one: runboard upkeep --do ID (or N, asked first on a terminal; --yes to skip asking, with an ID)\n";
    }
    out += &format!(
        "disk: {} in {}\n",
        runboard::numfmt::bytes(v.total_bytes),
        runboard::numfmt::count(v.disk.len() as u64, "run set")
    );
    for d in &v.disk {
        out += &format!(
            "  {:40} {:>10}{} in {} files ({} of logs), {}\n",
            d.run_set,
            runboard::numfmt::bytes(d.bytes),
            if d.partial { "+" } else { "" },
            thousands(d.files),
            runboard::numfmt::bytes(d.log_bytes),
            d.state.word()
        );
    }
    out += &format!("{}\n", v.note);
    out
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

fn logs_text(v: &runboard::logs::LogsView) -> String {
    if v.logs.is_empty() {
        return format!("{} has no log yet.\n", v.run_set);
    }
    let mut out = String::new();
    for l in &v.logs {
        let size = match (l.bytes, l.rotated_bytes) {
            (Some(b), Some(r)) => format!("{} bytes (+ {} rotated)", thousands(b), thousands(r)),
            (Some(b), None) => format!("{} bytes", thousands(b)),
            (None, _) => "in the journal".to_owned(),
        };
        let when = l.modified.as_deref().map(|m| format!(", written {}", runboard::timefmt::display_rfc3339(m)));
        out += &format!("{:40} {} {size}{}\n", l.name, l.kind, when.unwrap_or_default());
    }
    out += &format!("read one: runboard logs {} NAME [--follow]\n", v.run_set);
    out
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
        let q = runboard::logs::LogQuery { run_set: run_set.clone(), name: name.clone(), after: after.clone() };
        let chunk = op::log::call(console, q)?;
        if chunk.missing && after.is_none() {
            let listed = op::logs::call(console, runboard::logs::LogsQuery { run_set: run_set.clone() })?;
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

fn timing_text(t: &runboard::results::timing::TimingView) -> String {
    use runboard::timefmt::span_words;
    let s = &t.summary;
    let mut out = format!(
        "Timings{}: {} cells count, {} do not.\n",
        if t.scope.is_empty() { String::new() } else { format!(" ({})", t.scope) },
        t.validity.counted,
        t.validity.not_counted
    );
    if let (Some(m), Some(p)) = (s.median_s, s.p90_s) {
        out += &format!("  duration: median {}, 90th percentile {}\n", span_words(m), span_words(p));
    }
    if let Some(r) = s.tokens_per_s {
        out += &format!(
            "  throughput: {} tokens/s over {} tokens\n",
            runboard::numfmt::decimal(r, 1),
            thousands(s.tokens)
        );
    }
    for (e, es) in &t.by_endpoint {
        out += &format!(
            "  {e}: {} counted{}\n",
            es.counted,
            es.median_s.map(|m| format!(", median {}", span_words(m))).unwrap_or_default()
        );
    }
    for (reason, n) in &t.validity.reasons {
        out += &format!("  not counted, {reason}: {n}\n");
    }
    if let Some(rs) = &t.run_set {
        out += &format!("{rs}:\n");
        for c in &t.cells {
            let phases: Vec<String> =
                c.segments.iter().map(|s| format!("{} {}", s.phase.word(), span_words(s.to - s.from))).collect();
            out += &format!(
                "  {} {:?}: {}{}\n",
                c.cell,
                c.status,
                phases.join(", "),
                if c.counts { String::new() } else { format!(" — does not count: {}", c.why_not.join("; ")) }
            );
        }
    }
    out
}

fn evidence_text(e: &runboard::results::Evidence) -> String {
    let mut out = format!("{}; passed {} (95 % Wilson intervals)\n", e.counted_words(), rate_text(&e.overall));
    out += &format!("by {}:\n", e.by);
    for g in &e.groups {
        out += &format!("  {:20} {}\n", g.level, rate_text(&g.passes));
    }
    if e.family.comparisons > 0 {
        out += &format!("verdicts: {}\n", e.family.words());
    }
    for c in &e.comparisons {
        out += &format!("  {}\n", c.words());
    }
    for p in &e.paired {
        out += &format!("  paired: {}\n", p.words());
        for t in p.by_task.iter().filter(|t| t.table.b + t.table.c > 0) {
            out += &format!(
                "    {:18} {} pairs: {} only {}, {} only {}\n",
                t.task,
                t.table.n(),
                t.table.b,
                p.level,
                t.table.c,
                p.baseline
            );
        }
    }
    for (title, groups) in [("by task", &e.by_task), ("by model", &e.by_model)] {
        out += &format!("{title}:\n");
        for g in groups {
            out += &format!("  {:20} {}\n", g.level, rate_text(&g.passes));
        }
    }
    if !e.not_passed_by_reason.is_empty() {
        out += "did not pass, by reason (failed: the cell's process failed):\n";
        for r in &e.not_passed_by_reason {
            let failed = match r.failed {
                0 => String::new(),
                f if f == r.cells => " (failed)".to_owned(),
                f => format!(" ({f} failed)"),
            };
            out += &format!("  {:6}  {}{failed}\n", r.cells, r.reason);
        }
    }
    out
}

fn samples_text(s: &CellSamples) -> String {
    let mut out = format!(
        "{}/{}: {} from {} ({}); {} of {} scored passed\n",
        s.run_set,
        s.cell,
        runboard::numfmt::count(s.total as u64, "sample"),
        s.log,
        s.format,
        s.passed,
        s.scored
    );
    if let Some(a) = &s.against {
        out += &format!("against {a}: {} flipped\n", s.flipped);
    }
    for (i, r) in s.samples.iter().enumerate() {
        let there = match (&s.against, s.against_passed.get(i)) {
            (Some(_), Some(p)) => format!(" (there: {})", runboard::harness::samples::verdict_words(*p)),
            _ => String::new(),
        };
        let score =
            r.score.as_deref().map(|v| format!(" {}={v}", r.scorer.as_deref().unwrap_or("score"))).unwrap_or_default();
        out += &format!(
            "  {} epoch {}: {}{there}{score}\n",
            r.id,
            r.epoch,
            runboard::harness::samples::verdict_words(r.passed)
        );
        out += &format!("    input:  {}\n    target: {}\n    output: {}\n", r.input, r.target, r.output);
        if let Some(e) = &r.error {
            out += &format!("    error:  {e}\n");
        }
    }
    let shown_to = s.offset + s.samples.len();
    if shown_to < s.total {
        out += &format!("… {} more (--offset {shown_to})\n", s.total - shown_to);
    }
    for p in &s.problems {
        out += &format!("problem: {p}\n");
    }
    out
}

fn proposals_text(p: &runboard::results::propose::Proposals) -> String {
    let mut out = format!("{}\nroute: {}\n", p.how, p.route);
    for note in &p.notes {
        out += &format!("{note}\n");
    }
    for (i, x) in p.proposals.iter().enumerate() {
        out += &format!("\n{}. {}\n", i + 1, x.words);
        if let Some(n) = x.cells_needed {
            let settle = x
                .cells_to_settle
                .map(|m| format!("about {m} cells per {} for its verdict to settle it in 80 % of cases; ", p.by))
                .unwrap_or_default();
            out += &format!(
                "   to tell a {:.0} pp difference from {}: {settle}one fixed look at 95 % confidence and 80 % power needs {n}; counted now {} and {}\n",
                p.delta_pp, x.baseline, x.n_compared, x.n_baseline
            );
        }
        match &x.prediction {
            Some(pr) => {
                out += &format!("   predicted: {}", pr.words());
                out += &pr.range_words().map(|r| format!("; range {r}")).unwrap_or_default();
                out += "\n";
            }
            None => out += &format!("   cannot be drafted as it is: {}\n", x.refused.join("; ")),
        }
        let route = if x.prediction.is_none() { " and a route (--model, --endpoint)" } else { "" };
        out += &format!("   draft it: this command again with --save {}{route}\n", i + 1);
    }
    out
}

fn tags_text(v: &runboard::runsets::TagsView) -> String {
    if v.tags.is_empty() {
        return "no tags yet (a launch tags its run set: console by default, --tag NAME, auto for the autopilot)\n"
            .into();
    }
    v.tags
        .iter()
        .map(|t| {
            let note = if t.note.is_empty() { String::new() } else { format!(" — {}", t.note.replace('\n', " ")) };
            format!(
                "{}{note}: {}\n",
                t.name,
                if t.run_sets.is_empty() { "(no run set)".into() } else { t.run_sets.join(", ") }
            )
        })
        .collect()
}

fn report_text(r: &runboard::auto::view::TickReport) -> String {
    let mut out = format!("{}\n", r.verdict);
    for g in &r.guards {
        out += &format!("  [{}] {}: {}\n", if g.ok { "ok" } else { "holds" }, g.name, g.value);
    }
    for l in &r.launches {
        out += &format!("  launch {} ({} cells of {} on {}): {}\n", l.label, l.cells, l.model, l.lane, l.why);
    }
    for e in &r.events {
        out += &format!("  event {}: {}\n", e.event.kind(), e.event.words());
    }
    out
}

fn run_auto(cmd: AutoCommand) -> ExitCode {
    use runboard::auto::Mode;
    let at = match &cmd {
        AutoCommand::Status { at }
        | AutoCommand::On { at }
        | AutoCommand::Off { at }
        | AutoCommand::Finishing { at }
        | AutoCommand::Explain { at }
        | AutoCommand::Settings { at, .. }
        | AutoCommand::Log { at, .. }
        | AutoCommand::Tick { at } => at.clone(),
    };
    let console = match open(&at) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let json = at.json;
    let mode = |m: Mode| ask::<op::auto_mode>(&console, AutoModeRequest::new(m), json, auto_text);
    let answered = match cmd {
        AutoCommand::Status { .. } => ask::<op::auto>(&console, Nothing {}, json, auto_text),
        AutoCommand::On { .. } => mode(Mode::On),
        AutoCommand::Off { .. } => mode(Mode::Off),
        AutoCommand::Finishing { .. } => mode(Mode::Finishing),
        AutoCommand::Explain { .. } => ask::<op::auto_explain>(&console, Nothing {}, json, report_text),
        AutoCommand::Tick { .. } => {
            let report = crate::autopilot::run_tick(console.campaign(), false).map(|r| {
                if json {
                    pretty(&r)
                } else {
                    report_text(&r)
                }
            });
            crate::notify::say_now(console.campaign());
            report
        }
        AutoCommand::Settings { file, .. } => {
            let text = if file.as_os_str() == "-" {
                let mut s = String::new();
                std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map(|_| s)
            } else {
                std::fs::read_to_string(&file)
            };
            match text {
                Err(e) => Err(ApiError::refused(vec![format!("{}: {e}", file.display())])),
                Ok(t) => match serde_json::from_str::<serde_json::Value>(&t) {
                    Err(e) => Err(ApiError::refused(vec![format!("{}: not JSON: {e}", file.display())])),
                    Ok(v) => ask::<op::auto_settings>(&console, v, json, auto_text),
                },
            }
        }
        AutoCommand::Log { limit, .. } => {
            ask::<op::auto_log>(&console, AutoLogQuery { offset: None, limit: Some(limit) }, json, |p| {
                let mut out = String::new();
                for e in &p.events {
                    out += &format!("{} {}: {}\n", e.at.to_display(), e.event.kind(), e.event.words());
                }
                out
            })
        }
    };
    finish(answered, json)
}

/// The campaign at `--root`, or the exit code after saying why not.
fn open(at: &RootArg) -> Result<LocalConsole, ExitCode> {
    LocalConsole::require_campaign(&at.root).and_then(|_| LocalConsole::open_once(&at.root)).map_err(|e| {
        eprintln!("runboard: {e:#}");
        ExitCode::from(2)
    })
}

/// The live spend's lines of `runboard status`: cost, rate, projection, caps.
fn spend_text(s: &runboard::spend::BatchSpend, currency: &str) -> String {
    let money = |x: f64| runboard::numfmt::money(x, currency);
    let mut out = format!(
        "spend: {} tokens{}{}",
        runboard::numfmt::thousands(s.total_tokens),
        s.tokens.split_words().map(|w| format!(" ({w})")).unwrap_or_default(),
        // Cells that report their own totals are counted no calls: none said.
        if s.calls > 0 { format!(" over {}", runboard::numfmt::count(s.calls, "call")) } else { String::new() }
    );
    if let Some(c) = s.cost {
        out += &format!(", {}", money(c));
    }
    if let Some(r) = s.tokens_per_min {
        out += &format!("; {} tokens/min", runboard::numfmt::thousands(r.round() as u64));
        if let Some(h) = s.cost_per_hour {
            out += &format!(", {}/h", money(h));
        }
    }
    if let Some(t) = s.projected_tokens {
        out += &format!("; about {} tokens", runboard::numfmt::thousands(t));
        if let Some(c) = s.projected_cost {
            out += &format!(", {}", money(c));
        }
        out += " at its end";
    }
    out.push('\n');
    if let Some(w) = runboard::spend::unmetered_words(s.unmetered_calls) {
        out += &format!("{w}\n");
    }
    for c in &s.caps {
        out += &format!("budget: {}{}\n", c.words, if c.reached { " — reached" } else { "" });
    }
    out
}

/// Runs one console command (blocking: call it off the async runtime).
pub fn run(cmd: ConsoleCommand) -> ExitCode {
    if let ConsoleCommand::Auto { cmd } = cmd {
        return run_auto(cmd);
    }
    let at = match &cmd {
        ConsoleCommand::Status { at }
        | ConsoleCommand::Coverage { at, .. }
        | ConsoleCommand::Draft { at, .. }
        | ConsoleCommand::Launch { at, .. }
        | ConsoleCommand::Pause { at, .. }
        | ConsoleCommand::Stop { at, .. }
        | ConsoleCommand::Resume { at, .. }
        | ConsoleCommand::Evidence { at, .. }
        | ConsoleCommand::Propose { at, .. }
        | ConsoleCommand::Tags { at }
        | ConsoleCommand::Tag { at, .. }
        | ConsoleCommand::Timing { at, .. }
        | ConsoleCommand::Catalogue { at, .. }
        | ConsoleCommand::Telemetry { at }
        | ConsoleCommand::Upkeep { at, .. }
        | ConsoleCommand::Logs { at, .. }
        | ConsoleCommand::Samples { at, .. }
        | ConsoleCommand::Publish { at, .. } => at.clone(),
        ConsoleCommand::Auto { .. } => unreachable!("answered above"),
    };
    let console = match open(&at) {
        Ok(c) => c,
        Err(code) => return code,
    };
    let json = at.json;
    let changes_batches = matches!(
        cmd,
        ConsoleCommand::Launch { .. }
            | ConsoleCommand::Pause { .. }
            | ConsoleCommand::Stop { .. }
            | ConsoleCommand::Resume { .. }
    );
    let answered = match cmd {
        ConsoleCommand::Auto { .. } => unreachable!("answered above"),
        ConsoleCommand::Evidence { by, scope, .. } => {
            ask::<op::evidence>(&console, EvidenceQuery { by, scope }, json, evidence_text)
        }
        ConsoleCommand::Propose { by, max_cells, top, model, endpoint, delta, save, .. } => {
            let q = runboard::results::propose::ProposeParams { by, max_cells, top, model, endpoint, delta };
            match save {
                None => ask::<op::propose>(&console, q, json, proposals_text),
                Some(n) => op::propose::call(&console, q).and_then(|p| {
                    match n.checked_sub(1).and_then(|i| p.proposals.get(i)) {
                        None => Err(ApiError::refused(vec![format!(
                            "--save {n}: there are {} proposal(s) (numbered from 1)",
                            p.proposals.len()
                        )])),
                        Some(chosen) => ask::<op::draft_save>(&console, chosen.request.clone(), json, |s| {
                            format!("saved {} ({} cells)\nlaunch it: {}\n", s.path, s.cells, s.launch_hint)
                        }),
                    }
                }),
            }
        }
        ConsoleCommand::Tags { .. } => ask::<op::tags>(&console, Nothing {}, json, tags_text),
        ConsoleCommand::Tag { tag, add, remove, note, delete, .. } => {
            ask::<op::tag_edit>(&console, runboard::runsets::TagEdit { tag, add, remove, note, delete }, json, |v| {
                let mut out: String = v.changed.iter().map(|c| format!("{c}\n")).collect();
                if v.changed.is_empty() {
                    out += "nothing changed (the tag already says so)\n";
                }
                out + &tags_text(v)
            })
        }
        ConsoleCommand::Publish { status: true, .. } => {
            ask::<op::publish_status>(&console, Nothing {}, json, |s| format!("{}\n", s.words))
        }
        // Not `publish_push`: that answers once the push has started; the
        // command waits for its end and exits non-zero when it failed.
        ConsoleCommand::Publish { status: false, .. } => match crate::publish::push(console.campaign()) {
            Err(e) => Err(e),
            Ok(started) => {
                let Ok(record) = started.done.join() else {
                    eprintln!("the push's thread failed; see the log");
                    return ExitCode::from(1);
                };
                let text = if json { pretty(&record) } else { format!("{}\n{}", record.words(), record.output) };
                if !record.succeeded() {
                    eprint!("{text}");
                    return ExitCode::from(1);
                }
                Ok(text)
            }
        },
        ConsoleCommand::Timing { scope, run_set, .. } => {
            ask::<op::timing>(&console, TimingQuery { scope, run_set }, json, timing_text)
        }
        ConsoleCommand::Catalogue { fresh, .. } => {
            ask::<op::catalogue>(&console, CatalogueQuery { fresh: Some(fresh.to_string()) }, json, catalogue_text)
        }
        ConsoleCommand::Telemetry { .. } => ask::<op::telemetry>(&console, Nothing {}, json, |t| {
            let mut out = format!("{}\n", t.note);
            if t.endpoints.is_empty() {
                out += "No endpoint in the catalogue (campaign.toml [[endpoints]]).\n";
            }
            for e in &t.endpoints {
                let serving =
                    if e.run_sets.is_empty() { String::new() } else { format!(" serving {}", e.run_sets.join(", ")) };
                out += &format!("{} ({}){serving}: {}\n", e.endpoint, e.backend, e.words);
            }
            out
        }),
        ConsoleCommand::Upkeep { act: None, .. } => ask::<op::upkeep>(&console, Nothing {}, json, upkeep_text),
        ConsoleCommand::Upkeep { act: Some(n), yes, .. } => op::upkeep::call(&console, Nothing {}).and_then(|v| {
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
                Err(_) => v.findings.iter().find(|f| finding_id(f) == n).ok_or_else(|| {
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
            let req = runboard::upkeep::UpkeepRequest {
                action: f.action.word().to_owned(),
                target: f.target.clone(),
                token: f.token.clone(),
            };
            ask::<op::upkeep_act>(&console, req, json, |d| {
                let freed = if d.freed_bytes > 0 {
                    format!(" ({} freed)", runboard::numfmt::bytes(d.freed_bytes))
                } else {
                    String::new()
                };
                format!("{}{freed}\n", d.words)
            })
        }),
        ConsoleCommand::Logs { run_set, name, follow, .. } => {
            live_run_set(&console, run_set).and_then(|run_set| match name {
                None => ask::<op::logs>(&console, runboard::logs::LogsQuery { run_set }, json, logs_text),
                Some(name) => follow_log(&console, run_set, name, follow, json),
            })
        }
        ConsoleCommand::Samples { run_set, cell, against, flipped, offset, limit, .. } => {
            let q = SamplesQuery {
                run_set,
                cell,
                offset: Some(offset),
                limit: Some(limit),
                against,
                flipped: flipped.then(|| "1".to_owned()),
            };
            ask::<op::samples>(&console, q, json, samples_text)
        }
        ConsoleCommand::Status { .. } => ask::<op::live>(&console, LiveParams::default(), json, |v| {
            let mut out = format!("{}\n", v.words);
            if v.totals.planned > 0 {
                let t = &v.totals;
                out += &format!(
                    "cells: {} planned, {} done, {} failed, {} running, {} pending, {} stopped; {} tokens{}\n",
                    thousands(t.planned as u64),
                    thousands(t.done as u64),
                    thousands(t.failed as u64),
                    thousands(t.running as u64),
                    thousands(t.pending as u64),
                    thousands(t.stopped as u64),
                    thousands(t.tokens),
                    v.eta_s
                        .map(|s| format!("; about {} left", runboard::timefmt::duration_words(s)))
                        .unwrap_or_default()
                );
                if let Some(s) = &v.spend {
                    out += &spend_text(s, &v.currency);
                }
                for c in v.cells.iter().filter(|c| c.status != "done") {
                    let stalled = if c.stall.is_some() { " (stalled)" } else { "" };
                    let quiet = c
                        .so_far
                        .map(|r| format!(" — {}", r.words()))
                        .into_iter()
                        .chain(c.quiet.as_ref().map(|q| format!(" — {}", q.words())))
                        .collect::<String>();
                    out += &format!("  {} {:8}{stalled} attempts {}{quiet}\n", c.cell, c.status, c.attempts);
                }
            }
            if let Some(w) = &v.calls_unseen {
                out += &format!("{w}\n");
            }
            for (name, e) in v.rate_limits.iter().filter(|(_, e)| e.worth_saying()) {
                let limit = e.limit.map_or_else(|| "no limit".to_owned(), |l| format!("{l} at once"));
                out += &format!(
                    "rate limit {name}: {limit}, {} in flight, {} waiting, {} × 429/503 in the last minute\n",
                    e.in_flight, e.waiting, e.overloads_last_min
                );
            }
            for st in &v.stalls {
                out += &format!("stalled: {}\n", st.words);
            }
            if let runboard::live::LiveState::LaunchFailed { failure, .. } = &v.state {
                for l in &failure.summary {
                    out += &format!("  | {l}\n");
                }
            }
            for o in &v.others {
                out += &format!("also in flight: {}\n", o.words);
            }
            for p in &v.problems {
                out += &format!("problem: {p}\n");
            }
            out
        }),
        ConsoleCommand::Coverage { rows, cols, .. } => {
            ask::<op::coverage>(&console, CoverageParams { rows, cols }, json, |v| {
                let mut out = format!("{} ({} run sets)\n", v.words, v.run_sets);
                for factor in &v.factors {
                    let Some(levels) = v.by_factor.get(factor) else { continue };
                    out += &format!("{factor}:\n");
                    for l in levels {
                        out += &format!("  {:20} {}\n", l.level, l.counts.words());
                    }
                }
                for p in &v.problems {
                    out += &format!("problem: {p}\n");
                }
                out
            })
        }
        ConsoleCommand::Draft {
            label,
            max_cells,
            filters,
            model,
            endpoint,
            prompt_variant,
            retry_feedback,
            skip_failed,
            save,
            ..
        } => {
            let mut req = DraftRequest {
                label,
                max_cells,
                model,
                endpoint,
                prompt_variant,
                retry_feedback,
                skip_failed,
                ..Default::default()
            };
            let mut bad = Vec::new();
            for f in filters {
                match f.split_once('=') {
                    Some((k, v)) if !k.trim().is_empty() => req
                        .filters
                        .entry(k.trim().to_owned())
                        .or_default()
                        .extend(v.split(',').map(|x| x.trim().to_owned())),
                    _ => bad.push(format!("--filter {f:?}: give FACTOR=VALUE[,VALUE…]")),
                }
            }
            if !bad.is_empty() {
                Err(ApiError::refused(bad))
            } else if save {
                ask::<op::draft_save>(&console, req, json, |s| {
                    format!("saved {} ({} cells)\nlaunch it: {}\n", s.path, s.cells, s.launch_hint)
                })
            } else {
                ask::<op::draft_preview>(&console, req, json, |p| {
                    let mut out = format!(
                        "{} cells drafted of {} eligible; predicted {}\n",
                        p.draft.spec.cells.len(),
                        p.draft.eligible,
                        p.prediction.words()
                    );
                    for c in &p.draft.spec.cells {
                        let f: Vec<String> =
                            c.factors.iter().map(|(k, v)| format!("{k}={}", runboard::matrix::value_text(v))).collect();
                        out += &format!("  {} {}\n", c.id, f.join(" "));
                    }
                    for h in &p.draft.held_back {
                        out += &format!("held back: {} cell(s): {} (e.g. {})\n", h.cells, h.reason, h.example);
                    }
                    out += "(not saved: add --save)\n";
                    out
                })
            }
        }
        ConsoleCommand::Launch { spec, skip_preflight, tag, .. } => {
            ask::<op::start>(&console, LaunchRequest { path: spec, skip_preflight, tag }, json, launched)
        }
        ConsoleCommand::Pause { run_set, .. } => ask::<op::pause>(&console, PauseRequest { run_set }, json, stopped),
        ConsoleCommand::Stop { run_sets, .. } => ask::<op::stop>(&console, StopRequest { run_sets }, json, stopped),
        ConsoleCommand::Resume { run_set, skip_preflight, .. } => {
            ask::<op::resume>(&console, ResumeRequest { run_set, skip_preflight }, json, launched)
        }
    };
    if changes_batches {
        // No server may be running to say it: the batch events now.
        crate::notify::say_now(console.campaign());
    }
    finish(answered, json)
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

/// Asks operation `O` of the campaign — the same method, and so the same
/// answer or refusal, as its REST route and server function — and words the
/// answer: pretty JSON with `--json`, else `text`.
fn ask<O: Operation>(
    console: &LocalConsole,
    input: O::Input,
    json: bool,
    text: impl FnOnce(&O::Output) -> String,
) -> Result<String, ApiError> {
    O::call(console, input).map(|out| if json { pretty(&out) } else { text(&out) })
}

fn pretty<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default() + "\n"
}

fn launched(l: &Launched) -> String {
    let p = l.prediction.as_ref().map(|p| format!("\npredicted: {}", p.words())).unwrap_or_default();
    format!(
        "launched {} as unit {} (spec {}, tag {}){p}\nfollow it: runboard status\n",
        l.run_set, l.unit, l.spec, l.tag
    )
}

fn stopped(r: &StopReport) -> String {
    let mut out = String::new();
    for u in &r.units {
        out += &format!("unit {u}\n");
    }
    if let Some(h) = &r.lease {
        out += &format!("lease release: {} ({})\n", if h.ok { "done" } else { "FAILED" }, h.status);
        if !h.ok && !h.output.is_empty() {
            out += &format!("  {}\n", h.output.trim());
        }
    }
    for a in &r.aborted {
        out += &format!("{a}\n");
    }
    if r.auto_off {
        out += "auto mode turned off\n";
    }
    if let Some(m) = r.marker {
        out += &format!(
            "marker: {}\n",
            serde_json::to_value(m).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default()
        );
    }
    out
}
