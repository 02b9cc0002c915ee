//! A batch with a cluster: the manager first (its health URL polled until it
//! answers, while checking it has not exited), then the rooms, then the players,
//! then the cells POSTed to the manager, then watching until the manager is done
//! or any child fails.
//!
//! What ends a cluster batch: the manager exiting 0 (it says it finished; the
//! driver then checks the cell records — a batch is complete only when its
//! cells are), any child exiting non-zero (failed), a failed health wait or
//! submission (failed), or SIGINT/SIGTERM to the driver (stopped, resumable).
//! A room or player exiting 0 ends nothing: the batch goes on without it.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use runboard::console::spec::{BatchSpec, Cell};
use runboard::drive::config::{ClusterConfig, ServiceConfig, PLAYER_DELAY_S, ROOM_DELAY_S};
use runboard::drive::plan::fill;
use runboard::drive::records::{BatchStatus, ProcessStatus};
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::http::request;
use super::monitor::Monitor;
use super::runset::RunSet;
use super::supervisor::Supervisor;
use super::{BatchCtx, DriveError, RunnerEnd};

/// How the startup went, when it did not end in a running cluster.
enum Startup {
    Ready,
    Failed(String),
    Stopped,
}

pub(crate) async fn run(
    cfg: &ClusterConfig,
    spec: &BatchSpec,
    cells: &[Cell],
    ctx: &BatchCtx<'_>,
    sup: &mut Supervisor,
) -> Result<RunnerEnd, DriveError> {
    let BatchCtx { runset, grace, interactive, stop, batch_vars, .. } = ctx;
    let (runset, grace, interactive, stop) = (*runset, *grace, *interactive, *stop);
    let mut monitor = Monitor::new(interactive);
    // `{out}` is the run set's out/ here: the batch's fixed values as they are.
    let base: &BTreeMap<String, String> = &batch_vars.fixed;

    let startup = start(cfg, sup, &mut monitor, runset, base, stop).await;
    let startup = match startup {
        Ok(s) => s,
        Err(e) => Startup::Failed(format!("{e:#}")),
    };
    // Cells count as attempted once the manager has taken them.
    let (status, reason, attempted) = match startup {
        Startup::Stopped => (BatchStatus::Stopped, "stopped by a signal during startup".to_owned(), 0),
        Startup::Failed(why) => (BatchStatus::Failed, why, 0),
        Startup::Ready => match submit(cfg, spec, cells, runset).await {
            Err(why) => (BatchStatus::Failed, why, 0),
            Ok(()) => {
                let (status, reason) = watch(sup, &mut monitor, stop).await;
                (status, reason, cells.len())
            }
        },
    };
    runset.event("terminate", json!({"reason": reason}));
    let took = sup.terminate_all(grace).await;
    for p in &sup.procs {
        runset.event(
            "process_end",
            json!({"name": p.name, "pid": p.pid, "status": p.status.label(), "exit_code": p.exit_code}),
        );
    }
    runset.log(&format!("cluster torn down in {:.1} s", took.as_secs_f64()));
    monitor.finish(sup);
    Ok(RunnerEnd { status, reason, attempted })
}

async fn start(
    cfg: &ClusterConfig,
    sup: &mut Supervisor,
    monitor: &mut Monitor,
    runset: &RunSet,
    base: &BTreeMap<String, String>,
    stop: &CancellationToken,
) -> Result<Startup, DriveError> {
    let m = &cfg.manager;
    let argv = fill(&m.command, base).map_err(DriveError::Template)?;
    let manager = sup.spawn(&m.name, &argv, &m.env)?;
    runset.event("spawn", json!({"name": m.name, "pid": sup.procs[manager].pid}));
    // Health: every interval, up to the timeout, checking the manager is alive
    // between requests so a crash is noticed at once, not at the timeout.
    let deadline = Instant::now() + Duration::from_secs_f64(m.health_timeout_s);
    let every = Duration::from_secs_f64(m.health_interval_s.max(0.05));
    loop {
        sup.poll();
        monitor.show(sup);
        if let ProcessStatus::Failed { code } = sup.procs[manager].status {
            return Ok(Startup::Failed(format!(
                "{} exited with code {code} while waiting for {}",
                m.name, m.health_url
            )));
        }
        if sup.procs[manager].status == ProcessStatus::Done {
            return Ok(Startup::Failed(format!("{} exited (code 0) before it was healthy", m.name)));
        }
        if let Ok((code, _)) = request("GET", &m.health_url, None, every.max(Duration::from_millis(500))).await {
            if (200..300).contains(&code) {
                runset.event("health_ready", json!({"name": m.name, "url": m.health_url}));
                break;
            }
        }
        if Instant::now() >= deadline {
            return Ok(Startup::Failed(format!(
                "{} was not healthy at {} within {} s",
                m.name, m.health_url, m.health_timeout_s
            )));
        }
        tokio::select! {
            _ = tokio::time::sleep(every) => {}
            _ = stop.cancelled() => return Ok(Startup::Stopped),
        }
    }
    let groups = cfg.rooms.iter().map(|r| (r, ROOM_DELAY_S)).chain(cfg.players.iter().map(|p| (p, PLAYER_DELAY_S)));
    for (svc, default_delay) in groups {
        if let Some(s) = start_group(svc, default_delay, sup, monitor, runset, base, stop).await? {
            return Ok(s);
        }
    }
    Ok(Startup::Ready)
}

/// Starts `count` processes of one service, `start_delay_s` apart, with DISPLAY
/// round-robin over its displays when it lists any.
async fn start_group(
    svc: &ServiceConfig,
    default_delay: f64,
    sup: &mut Supervisor,
    monitor: &mut Monitor,
    runset: &RunSet,
    base: &BTreeMap<String, String>,
    stop: &CancellationToken,
) -> Result<Option<Startup>, DriveError> {
    let delay = Duration::from_secs_f64(svc.start_delay_s.unwrap_or(default_delay).max(0.0));
    for i in 0..svc.count {
        tokio::select! {
            _ = tokio::time::sleep(delay) => {}
            _ = stop.cancelled() => return Ok(Some(Startup::Stopped)),
        }
        sup.poll();
        if let Some(p) = sup.procs.iter().find(|p| matches!(p.status, ProcessStatus::Failed { .. })) {
            return Ok(Some(Startup::Failed(format!(
                "{} exited with code {} during startup",
                p.name,
                p.exit_code.unwrap_or(-1)
            ))));
        }
        let mut vars = base.clone();
        vars.insert("index".into(), i.to_string());
        let argv = fill(&svc.command, &vars).map_err(DriveError::Template)?;
        let mut env = svc.env.clone();
        if !svc.displays.is_empty() {
            env.insert("DISPLAY".into(), svc.displays[i as usize % svc.displays.len()].clone());
        }
        let name = if svc.count == 1 { svc.name.clone() } else { format!("{}-{i}", svc.name) };
        let idx = sup.spawn(&name, &argv, &env)?;
        runset.event("spawn", json!({"name": name, "pid": sup.procs[idx].pid}));
        monitor.show(sup);
    }
    Ok(None)
}

/// POSTs the cells to the manager: `{"label", "runset", "cells": [{"id", "factors"}]}`
/// as JSON (docs/formats.md, *The manager's submit body*); any 2xx accepts them.
async fn submit(cfg: &ClusterConfig, spec: &BatchSpec, cells: &[Cell], runset: &RunSet) -> Result<(), String> {
    let body = json!({"label": spec.label, "runset": runset.dir, "cells": cells});
    let url = &cfg.manager.submit_url;
    match request("POST", url, Some(&body), Duration::from_secs(30)).await {
        Ok((code, _)) if (200..300).contains(&code) => {
            runset.event("submitted", json!({"url": url, "cells": cells.len()}));
            Ok(())
        }
        Ok((code, text)) => {
            Err(format!("submitting {} cells to {url} failed: HTTP {code} {}", cells.len(), text.trim()))
        }
        Err(e) => Err(format!("submitting {} cells to {url} failed: {e}", cells.len())),
    }
}

/// Watches until the manager finishes (done), any child fails, or a stop.
async fn watch(sup: &mut Supervisor, monitor: &mut Monitor, stop: &CancellationToken) -> (BatchStatus, String) {
    loop {
        sup.poll();
        monitor.show(sup);
        if let Some(p) = sup.procs.iter().find(|p| matches!(p.status, ProcessStatus::Failed { .. })) {
            return (BatchStatus::Failed, format!("{} exited with code {}", p.name, p.exit_code.unwrap_or(-1)));
        }
        if sup.procs[0].status == ProcessStatus::Done {
            return (BatchStatus::Completed, format!("{} finished the batch", sup.procs[0].name));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
            _ = stop.cancelled() => return (BatchStatus::Stopped, "stopped by a signal; resumable".to_owned()),
        }
    }
}
