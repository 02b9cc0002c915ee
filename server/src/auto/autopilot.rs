//! The autopilot's thin server side: the tick run under the campaign lock
//! (observe → `runboard::auto::tick::tick` → launch each planned batch
//! through `start_while_locked`, the Launch button's path → record → save),
//! the loop that runs it every 30 s off the async runtime, the dry run
//! (`explain`), the mode and settings controls, and the notification hook.
//!
//! The state file and the log: `auto_state` (the log line is written before
//! the history copy; the state is replaced atomically, whole).

use std::path::Path;
use std::time::Duration;

use runboard::api::ApiError;
use runboard::auto::tick::{record_launch, tick, LaunchResult, Observed};
use runboard::auto::view::{AutoView, LogPage, PlannedView, TickReport};
use runboard::auto::{AutoEvent, AutoState, LogEvent, Mode};
use runboard::console::launch::LaunchRequest;
use serde_json::Value;

use crate::auto::auto_state;
use crate::campaign::Campaign;

/// The default tick interval.
pub const TICK: Duration = Duration::from_secs(30);

/// A refusal's reasons (or its one error).
fn reasons_of(e: &ApiError) -> Vec<String> {
    if e.reasons.is_empty() {
        vec![e.error.clone()]
    } else {
        e.reasons.clone()
    }
}

/// Appends the event to the log, then keeps it in the state's history.
fn remember(root: &Path, state: &mut AutoState, event: LogEvent) {
    if let Err(e) = auto_state::log_event_at(root, &event) {
        tracing::error!("auto/log.jsonl: {e}");
    }
    state.remember(event);
}

/// What a tick decides now, read only: the state it started from, what it
/// saw, and the tick's decision (nothing launched, saved or logged).
struct Plan {
    state: AutoState,
    cfg: runboard::campaign::CampaignConfig,
    now: runboard::Timestamp,
    out: runboard::auto::tick::TickOut,
}

impl Plan {
    fn report(&self) -> TickReport {
        TickReport {
            mode: self.out.state.mode,
            verdict: self.out.verdict.clone(),
            guards: self.out.guards.clone(),
            launches: self.out.launches.iter().map(PlannedView::from).collect(),
            events: Vec::new(),
            hold: self.out.state.hold.clone(),
        }
    }
}

/// Reads what the tick needs and decides (`runboard::auto::tick::tick`).
/// Takes no lock: a dry run never waits on a tick, and a tick plans under
/// the lock it already holds.
fn plan(campaign: &Campaign) -> Result<Plan, ApiError> {
    let state = auto_state::load(campaign.root()).state;
    let cfg = campaign.config()?;
    let made = campaign.coverage();
    let (matrix, coverage, _) = &*made;
    let now = crate::system::clock::now();
    let outcomes = campaign.every_outcome()?;
    let observed = Observed {
        now,
        cfg: &cfg,
        matrix,
        coverage,
        units: campaign.auto_units(&state, &cfg),
        live: campaign.auto_live(),
        closeout_failures: campaign.closeout_failures(),
        launches_today: campaign.launches_today(),
        budget_reached: campaign.budget_reached(&cfg),
        endpoint_busy: campaign.busy_endpoints(&cfg),
        outcomes: &outcomes,
    };
    let out = tick(&state, &observed);
    Ok(Plan { state, cfg, now, out })
}

/// The dry run: every guard and what a tick now would do; nothing done.
pub fn explain(campaign: &Campaign) -> Result<TickReport, ApiError> {
    plan(campaign).map(|p| p.report())
}

/// One tick: planned and applied under the campaign lock — the launches it
/// decides made through the Launch button's path, the state saved, the
/// events logged and said.
pub fn run_tick(campaign: &Campaign) -> Result<TickReport, ApiError> {
    let lock = campaign.lock()?;
    let planned = plan(campaign)?;
    apply(campaign, planned, lock)
}

/// Does what a plan decided, holding `lock` (released before the events
/// are said: a slow hook never holds the campaign).
fn apply(campaign: &Campaign, plan: Plan, lock: crate::campaign::CampaignLock) -> Result<TickReport, ApiError> {
    let root = campaign.root().to_path_buf();
    let mut report = plan.report();
    let Plan { state, cfg, now, out } = plan;
    let mut next = out.state;
    let mut events = out.events;
    for planned in &out.launches {
        let result = match campaign.write_draft_locked(&planned.draft.spec, &lock) {
            Err(e) => LaunchResult::Refused(reasons_of(&e)),
            Ok(path) => {
                let req = LaunchRequest { path, tag: Some("auto".into()), skip_preflight: false };
                match campaign.start_while_locked(&req, &lock) {
                    Ok(l) => LaunchResult::Launched {
                        unit: l.unit,
                        run_set: l.run_set,
                        spec: l.spec,
                        backend: cfg.launcher.kind.word().to_owned(),
                    },
                    Err(e) => LaunchResult::Refused(reasons_of(&e)),
                }
            }
        };
        events.extend(record_launch(&mut next, planned, &result, crate::system::clock::now()));
    }
    // A hold that has lasted longer than the settings say is announced once.
    let notify_after = next.settings_read().hold_notify_minutes;
    if let Some(h) = next.hold.as_ref() {
        let long = (now.0 - h.since.0) as f64 >= notify_after * 60_000.0;
        let told =
            next.history.iter().any(|e| matches!(&e.event, AutoEvent::HoldLong { since, .. } if *since == h.since));
        if long && !told {
            let event = AutoEvent::HoldLong { reason: h.reason, words: h.words.clone(), since: h.since };
            events.push(LogEvent { at: now, event });
        }
    }
    for e in &events {
        remember(&root, &mut next, e.clone());
    }
    if next != state {
        auto_state::save(&root, &next).map_err(|e| crate::web::error::internal("saving auto/state.json", e))?;
    }
    drop(lock);
    notify(&root, &cfg, &events);
    report.mode = next.mode;
    report.events = events;
    Ok(report)
}

/// Says the autopilot's notable events (`AutoEvent::notified`) to
/// `[hooks] notify` and the webhook: `{at, event, detail, words}` each.
fn notify(root: &Path, cfg: &runboard::campaign::CampaignConfig, events: &[LogEvent]) {
    for e in events.iter().filter(|e| e.event.notified()) {
        let mut body = serde_json::to_value(e).unwrap_or_default();
        body["words"] = e.event.words().into();
        crate::live::notify::deliver(root, cfg, &body);
    }
}

/// The loop's one pass (its thread is `serve`'s, through `periodic`): while
/// the mode is not `off`, one tick; a tick that fails or panics is logged as
/// `tick_exception`, and the loop goes on.
pub fn loop_pass(campaign: &Campaign) {
    let root = campaign.root().to_path_buf();
    // Off: nothing to do, and the lock is not taken.
    if auto_state::load(&root).state.mode == Mode::Off {
        return;
    }
    let failure = match crate::system::periodic::guarded("an autopilot tick", || run_tick(campaign)) {
        Ok(Ok(_)) => None,
        Ok(Err(e)) => Some(e.to_string()),
        Err(panic) => Some(panic),
    };
    if let Some(why) = failure {
        tracing::error!("autopilot tick: {why}");
        let _ = auto_state::log_now(&root, AutoEvent::TickException { error: why });
    }
}

/// `POST /api/auto/on | off | finishing`.
pub fn set_mode(campaign: &Campaign, mode: Mode) -> Result<AutoState, ApiError> {
    let root = campaign.root();
    let _lock = campaign.lock()?;
    let mut state = auto_state::load_to_save(root);
    let was = state.mode;
    let now = crate::system::clock::now();
    match mode {
        Mode::Off => {
            let (_, event) = state.turn_off("turned off by the operator", now);
            remember(root, &mut state, event);
        }
        Mode::On | Mode::Finishing => {
            if mode == Mode::On && was == Mode::Off {
                state.session = runboard::auto::Session { started_at: Some(now), ..Default::default() };
            }
            state.mode = mode;
            let event = match mode {
                Mode::On => AutoEvent::AutoOn { was },
                _ => AutoEvent::AutoFinishing { was },
            };
            let event = LogEvent { at: now, event };
            remember(root, &mut state, event);
        }
    }
    auto_state::save(root, &state).map_err(|e| crate::web::error::internal("saving auto/state.json", e))?;
    Ok(state)
}

/// `POST /api/auto/settings`: validated against the campaign (422 with every
/// reason), then saved whole.
pub fn save_settings(campaign: &Campaign, settings: Value) -> Result<AutoState, ApiError> {
    let cfg = campaign.config()?;
    let made = campaign.coverage();
    runboard::auto::settings::validate(&settings, &cfg, &made.0).map_err(ApiError::refused)?;
    let root = campaign.root();
    let _lock = campaign.lock()?;
    let mut state = auto_state::load_to_save(root);
    state.settings = settings;
    let event = LogEvent { at: crate::system::clock::now(), event: AutoEvent::SettingsSaved(state.settings.clone()) };
    remember(root, &mut state, event);
    auto_state::save(root, &state).map_err(|e| crate::web::error::internal("saving auto/state.json", e))?;
    Ok(state)
}

/// `GET /api/auto`: the state, the settings' problems, the dry run, lanes
/// and caps. `tick_s`: the interval of this server's loop, if it runs one.
pub fn view(campaign: &Campaign, tick_s: Option<f64>) -> Result<AutoView, ApiError> {
    let explain = explain(campaign)?;
    let state = auto_state::load(campaign.root()).state;
    let cfg = campaign.config()?;
    let made = campaign.coverage();
    let now = crate::system::clock::now();
    let settings = runboard::auto::settings::validate(&state.settings, &cfg, &made.0);
    let problems = settings.as_ref().err().cloned().unwrap_or_default();
    let settings = settings.ok();
    Ok(AutoView {
        generated_at: now,
        lanes: runboard::auto::view::lanes(&state, settings.as_ref(), &cfg, now),
        caps: runboard::auto::view::caps(&state, settings.as_ref(), &cfg, &campaign.launches_today(), now),
        settings_problems: problems,
        explain,
        state,
        tick_s,
    })
}

/// `GET /api/auto/log?offset=&limit=`: newest first; a line that does not
/// parse is counted, not shown.
pub fn log_page(campaign: &Campaign, offset: usize, limit: usize) -> Result<LogPage, ApiError> {
    if !(1..=1000).contains(&limit) {
        return Err(ApiError::with_reasons(
            runboard::api::ErrorKind::BadQuery,
            vec![format!("limit={limit}: must be between 1 and 1000")],
        ));
    }
    let path = campaign.root().join(auto_state::LOG_FILE);
    let bytes = match campaign.records().within().read_opt(&path) {
        None => Vec::new(),
        Some(Ok(b)) => b,
        Some(Err(e)) => return Err(ApiError::unreadable(format!("{}: {e}", auto_state::LOG_FILE))),
    };
    let mut events = Vec::new();
    let mut unreadable = 0;
    for line in bytes.split(|b| *b == b'\n').filter(|l| !l.iter().all(u8::is_ascii_whitespace)) {
        match serde_json::from_slice::<LogEvent>(line) {
            Ok(e) => events.push(e),
            Err(_) => unreadable += 1,
        }
    }
    let total = events.len();
    let page: Vec<LogEvent> = events.into_iter().rev().skip(offset).take(limit).collect();
    Ok(LogPage { total, offset, events: page, unreadable })
}
