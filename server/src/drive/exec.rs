//! Cells without a manager: the `exec` runner starts each cell's command (its
//! template filled with the cell's factors) N at a time. A failing cell is
//! recorded and the others go on; a stop tears every running cell down. Every
//! way out — the end, a stop, an error (a record that cannot be written) —
//! tears down what was started before it returns.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use runboard::console::spec::Cell;
use runboard::drive::config::RunnerConfig;
use runboard::drive::plan::{fill, runner_vars};
use runboard::drive::records::{BatchStatus, CellRecord, CellStatus, ProcessStatus};
use runboard::drive::result::{CellResult, RESULT_FILE};
use serde_json::json;

use super::monitor::Monitor;
use super::supervisor::{Supervisor, Tracked};
use super::{BatchCtx, DriveError, RunSet, RunnerEnd};

/// The cells running now, by their index in the supervisor (and those whose
/// verdict is held, see [`TERM_VERDICT_WINDOW`]).
type Running = HashMap<usize, CellRecord>;

/// How long a cell that died of SIGTERM, with no stop asked of us yet, waits
/// for its verdict. A manager that stops the whole unit — systemd's StopUnit
/// signals every process of the cgroup, Slurm's scancel every process of the
/// job — can reach a cell before our own SIGTERM arrives; a cell killed that
/// way was stopped, not failed. If our stop follows within this window the
/// cell is recorded `stopped` (and stays resumable); otherwise `failed`.
const TERM_VERDICT_WINDOW: Duration = Duration::from_secs(2);
/// SIGTERM's exit code: 128 + 15.
const TERM_EXIT: i32 = 143;

pub(crate) async fn run(
    cfg: &RunnerConfig,
    cells: &[Cell],
    ctx: &BatchCtx<'_>,
    sup: &mut Supervisor,
) -> Result<RunnerEnd, DriveError> {
    let mut monitor = Monitor::new(ctx.interactive);
    let mut running = Running::new();
    let mut attempted = 0usize;
    let result = drive_cells(cfg, cells, ctx, sup, &mut monitor, &mut running, &mut attempted).await;
    // Whatever happened, nothing started is left running.
    sup.terminate_all(ctx.grace).await;
    let stopped = ctx.stop.is_cancelled() || result.is_err();
    for (idx, mut rec) in running.drain() {
        // Killed by our teardown: 128 + the signal, as its exit code.
        rec.exit_code = sup.procs[idx].exit_code;
        // A cell held for its verdict keeps the time it really ended.
        rec.ended_at.get_or_insert_with(|| crate::system::clock::now().to_rfc3339());
        rec.status = if stopped { CellStatus::Stopped } else { CellStatus::Failed };
        read_result(ctx.runset, &mut rec);
        ctx.runset.event("cell_end", json!({"cell": rec.cell, "status": rec.status, "exit_code": rec.exit_code}));
        if let Err(e) = ctx.runset.write_cell(&rec) {
            ctx.runset.log(&format!("cell {}: its record could not be written: {e:#}", rec.cell));
        }
    }
    monitor.finish(sup);
    let (status, reason) = result?;
    Ok(RunnerEnd { status, reason, attempted })
}

async fn drive_cells(
    cfg: &RunnerConfig,
    cells: &[Cell],
    ctx: &BatchCtx<'_>,
    sup: &mut Supervisor,
    monitor: &mut Monitor,
    running: &mut Running,
    attempted: &mut usize,
) -> Result<(BatchStatus, String), DriveError> {
    let BatchCtx { runset, stop, .. } = ctx;
    let existing = runset.read_cells();
    let mut queue = cells.iter();
    let parallel = cfg.parallel.max(1) as usize;
    let mut finished = 0usize;
    // Cells that died of SIGTERM before any stop reached us: when they ended.
    let mut held: HashMap<usize, std::time::Instant> = HashMap::new();
    loop {
        while running.len() < parallel && !stop.is_cancelled() {
            let Some(cell) = queue.next() else { break };
            *attempted += 1;
            if !start_cell(cfg, cell, ctx, sup, &existing, running)? {
                finished += 1;
            }
        }
        let now = std::time::Instant::now();
        let mut ended: Vec<usize> = sup.poll();
        for &idx in &ended {
            let p = &sup.procs[idx];
            if let Some(rec) = running.get_mut(&idx) {
                rec.exit_code = p.exit_code;
                rec.ended_at = Some(crate::system::clock::now().to_rfc3339());
                if p.status != ProcessStatus::Done && p.exit_code == Some(TERM_EXIT) && !stop.is_cancelled() {
                    held.insert(idx, now);
                }
            }
        }
        // A held cell whose window passed with no stop: failed after all.
        // (A stop ends the loop below; the teardown records held cells stopped.)
        ended.retain(|idx| !held.contains_key(idx));
        held.retain(|idx, at| {
            let expired = now.duration_since(*at) >= TERM_VERDICT_WINDOW && !stop.is_cancelled();
            if expired {
                ended.push(*idx);
            }
            !expired
        });
        for idx in ended {
            let Some(rec) = running.remove(&idx) else { continue };
            if end_cell(runset, rec, &sup.procs[idx], stop.is_cancelled())? {
                finished += 1;
            }
        }
        monitor.show(sup);
        if running.is_empty() && queue.len() == 0 {
            break;
        }
        if stop.is_cancelled() {
            return Ok((
                BatchStatus::Stopped,
                format!("stopped by a signal after {finished} of {} cells; resumable", cells.len()),
            ));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.cancelled() => {}
        }
    }
    Ok((BatchStatus::Completed, format!("ran {}", runboard::basics::numfmt::count(cells.len() as u64, "cell"))))
}

/// Starts one cell: its output folder (an earlier attempt's report gone),
/// its command filled from its factors and route (its calls through the
/// gateway, on its own path), its environment, its record marked started.
/// False when it could not start (its record then says failed).
fn start_cell(
    cfg: &RunnerConfig,
    cell: &Cell,
    ctx: &BatchCtx<'_>,
    sup: &mut Supervisor,
    existing: &BTreeMap<String, CellRecord>,
    running: &mut Running,
) -> Result<bool, DriveError> {
    let BatchCtx { runset, route, pool, batch_vars, gateway, .. } = ctx;
    let out = runset.out_dir().join(&cell.id);
    std::fs::create_dir_all(&out).map_err(DriveError::io("creating", &out))?;
    // A report is always the latest attempt's: an earlier one's goes.
    match std::fs::remove_file(out.join(RESULT_FILE)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(DriveError::io("removing", &out.join(RESULT_FILE))(e))
        }
        _ => {}
    }
    let mut vars = runner_vars(route, pool, cell, batch_vars);
    vars.insert("out".into(), out.display().to_string());
    // Through the gateway: the cell's own path on it, so its calls are its own.
    if let (Some(g), Some(endpoint)) = (gateway, vars.get("endpoint").cloned()) {
        if g.serves(&endpoint) {
            vars.insert("endpoint_url".into(), g.cell_url(&cell.id, &endpoint));
        }
    }
    let argv = fill(&cfg.command, &vars).map_err(DriveError::Template)?;
    let mut cell_env = cfg.env.clone();
    cell_env.insert("RUNBOARD_CELL".into(), cell.id.clone());
    cell_env.insert("RUNBOARD_CELL_DIR".into(), out.display().to_string());
    cell_env.insert("RUNBOARD_FACTORS".into(), serde_json::to_string(&cell.factors).unwrap_or_default());
    for (var, name) in
        [("RUNBOARD_MODEL", "model"), ("RUNBOARD_ENDPOINT", "endpoint"), ("RUNBOARD_ENDPOINT_URL", "endpoint_url")]
    {
        if let Some(v) = vars.get(name) {
            cell_env.insert(var.into(), v.clone());
        }
    }
    let name = format!("cell-{}", cell.id);
    let mut rec = existing.get(&cell.id).cloned().unwrap_or_else(|| CellRecord::new(cell, CellStatus::Pending));
    rec.start_attempt(crate::system::clock::now().to_rfc3339());
    rec.log = Some(format!("logs/{name}.log"));
    match sup.spawn(&name, &argv, &cell_env) {
        Ok(idx) => {
            runset.event("cell_start", json!({"cell": cell.id, "pid": sup.procs[idx].pid}));
            // Tracked before its record is written, so a failed write
            // still tears it down.
            running.insert(idx, rec.clone());
            runset.write_cell(&rec)?;
            Ok(true)
        }
        Err(e) => {
            rec.status = CellStatus::Failed;
            rec.ended_at = rec.started_at.clone();
            runset.log(&format!("cell {} could not start: {e:#}", cell.id));
            runset.write_cell(&rec)?;
            Ok(false)
        }
    }
}

/// A cell's process ended: its record says how — done, stopped (it ended
/// badly once a stop was asked for: a manager may signal the whole unit, so
/// it can end before our own SIGTERM reaches it), else failed — with what it
/// reported. True when it finished (not stopped).
fn end_cell(runset: &RunSet, mut rec: CellRecord, p: &Tracked, stopping: bool) -> Result<bool, DriveError> {
    rec.status = match p.status {
        ProcessStatus::Done => CellStatus::Done,
        _ if stopping => CellStatus::Stopped,
        _ => CellStatus::Failed,
    };
    read_result(runset, &mut rec);
    runset.event("cell_end", json!({"cell": rec.cell, "status": rec.status, "exit_code": rec.exit_code}));
    if rec.status == CellStatus::Failed {
        runset.log(&format!("cell {} failed with exit code {}", rec.cell, rec.exit_code.unwrap_or(-1)));
    }
    runset.write_cell(&rec)?;
    Ok(rec.status != CellStatus::Stopped)
}

/// Takes what a cell reported in `result.json`, if it wrote one; a field
/// that does not fit the contract is left out and named in the run set's log.
/// And counts the calls it wrote (its progress file, else its call
/// files): what was counted stays the record of what it spent, whatever its
/// report says of tokens.
fn read_result(runset: &super::runset::RunSet, rec: &mut CellRecord) {
    let dir = runset.out_dir().join(&rec.cell);
    rec.counted = crate::live::tally::count_cell(&dir, crate::system::clock::now());
    let Ok(bytes) = crate::files::fsread::read_regular(&dir.join(RESULT_FILE)) else { return };
    let (result, problems) = CellResult::parse(&bytes);
    for p in problems {
        runset.log(&format!("cell {}: {p}", rec.cell));
    }
    rec.take_result(result);
}
