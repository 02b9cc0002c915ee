//! The autopilot's tick: one pure function from the state, what the server
//! observed and `now` to the new state, at most one launch per lane, and the
//! events to log — plus every guard it evaluated, so the same function is the
//! dry run (`explain`). It never does I/O: the server loop executes the
//! launches through `Campaign::start` (the Launch button's path) and records each
//! result with [`record_launch`].
//!
//! The order (the seed's): expire endpoint quarantines and credit flags →
//! mode off returns → a current unit still active holds `batch_running`
//! (unknown holds `state_unknown`) → a finished unit closes its iteration,
//! may credit-flag a paid model until the next UTC midnight, and clears
//! current → an unrelated running batch holds `batch_running` → a paused
//! resumable batch holds `batch_paused` → finishing becomes off → the wait
//! interval holds `waiting` → invalid settings hold `settings_invalid` → the
//! decision, or the hold it gives → the launch.

use std::collections::{BTreeMap, HashMap};
use std::ops::ControlFlow;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::schedule::{Assignment, Circuit, Policy, Scheduler, Worker};
use super::settings::{self, CountBasis, Objective, Settings};
use super::{
    AutoEvent, AutoState, Backfill, BatchEnd, CreditFlag, Current, Decision, EndpointFailure, Hold, HoldReason,
    Iteration, LaneOutcome, LogEvent, Mode,
};
use crate::campaign::{CampaignConfig, ModelKind};
use crate::console::coverage::{CellCoverage, CellState, Coverage};
use crate::console::draft::{Draft, DraftRequest};
use crate::console::matrix::{value_text, Matrix};
use crate::drive::records::BatchStatus;
use crate::live::{LiveKind, Observation};
use crate::Timestamp;

/// The lane of a serial autopilot (one batch at a time).
pub const SERIAL_LANE: &str = "serial";

/// What a unit the autopilot launched is doing now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct UnitNow {
    pub observation: Observation,
    /// Its batch outcome, once the driver wrote one.
    pub outcome: Option<OutcomeNow>,
    /// Why the unit died, in words (its failure observation), when it did.
    pub failure: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OutcomeNow {
    pub status: BatchStatus,
    pub reason: String,
    pub attempted: usize,
    /// Cells done (passed).
    pub passes: usize,
}

/// The campaign's live state, for batches that are not the autopilot's.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct LiveNow {
    pub state: LiveKind,
    pub unit: Option<String>,
    pub run_set: Option<String>,
    pub words: String,
}

/// Everything a tick looks at.
pub struct Observed<'a> {
    pub now: Timestamp,
    pub cfg: &'a CampaignConfig,
    pub matrix: &'a Matrix,
    pub coverage: &'a Coverage,
    /// Each unit the state names as current.
    pub units: BTreeMap<String, UnitNow>,
    pub live: LiveNow,
    /// Run sets whose closeout records a failed publication stage.
    pub closeout_failures: Vec<Backfill>,
    /// Today's (UTC) launches per model, every launcher's (the run index).
    pub launches_today: BTreeMap<String, u32>,
    /// A day or campaign cap of `[budget]` reached now, in words.
    pub budget_reached: Option<String>,
    /// Endpoints whose engine reports at least their `max_waiting` requests
    /// waiting, each with why (`runboard::telemetry::busy`): nothing new
    /// starts on them while they are.
    pub endpoint_busy: BTreeMap<String, String>,
    /// Every cell's counted outcome, as Evidence counts them: the expected
    /// impact objective calls a comparison settled by Evidence's verdict.
    pub outcomes: &'a [crate::results::Outcome],
}

/// One launch the tick decided, on one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Planned {
    pub lane: String,
    pub model: String,
    pub endpoint: Option<String>,
    pub prompt_variant: String,
    pub retry_feedback: bool,
    pub request: DraftRequest,
    pub draft: Draft,
    /// Why this slot, in words.
    pub why: String,
}

/// One guard as evaluated: its name, whether it lets a launch through, its value.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Guard {
    pub name: String,
    pub ok: bool,
    pub value: String,
}

#[derive(Debug, Clone, PartialEq)]
pub struct TickOut {
    pub state: AutoState,
    pub launches: Vec<Planned>,
    pub events: Vec<LogEvent>,
    pub guards: Vec<Guard>,
    /// "would launch …, because …" or "holds, because …".
    pub verdict: String,
}

struct Run<'a> {
    obs: &'a Observed<'a>,
    state: AutoState,
    events: Vec<LogEvent>,
    guards: Vec<Guard>,
}

/// A step goes on with what it found (`Continue`) or ends the tick with its
/// verdict (`Break`: a hold, off, or finishing done).
type Step<T = ()> = ControlFlow<String, T>;

impl Run<'_> {
    fn event(&mut self, event: AutoEvent) {
        self.events.push(LogEvent { at: self.obs.now, event });
    }

    fn guard(&mut self, name: &str, ok: bool, value: impl Into<String>) {
        self.guards.push(Guard { name: name.into(), ok, value: value.into() });
    }

    /// Holds with `reason` (kept `since` while the same reason holds on).
    fn hold(&mut self, reason: HoldReason, words: String) {
        let since = match &self.state.hold {
            Some(h) if h.reason == reason => h.since,
            _ => {
                self.event(AutoEvent::Hold { reason, words: words.clone() });
                self.obs.now
            }
        };
        self.state.hold = Some(Hold { reason, words, since });
    }

    /// Holds, and ends the tick with `verdict`.
    fn held<T>(&mut self, reason: HoldReason, words: String, verdict: String) -> Step<T> {
        self.hold(reason, words);
        ControlFlow::Break(verdict)
    }

    fn finish(self, launches: Vec<Planned>, verdict: String) -> TickOut {
        let mut state = self.state;
        state.last_decision = Some(Decision { at: self.obs.now, verdict: verdict.clone() });
        TickOut { state, launches, events: self.events, guards: self.guards, verdict }
    }
}

/// Words that say a paid route could not spend credit.
fn credit_like(text: &str) -> bool {
    let t = text.to_lowercase();
    ["credit", "quota", "billing", "insufficient_quota", "payment required", "402", "rate limit exceeded for your plan"]
        .iter()
        .any(|w| t.contains(w))
}

/// The tick: its steps in the seed's order (see the module's doc); the
/// first that ends it gives the verdict.
pub fn tick(state: &AutoState, obs: &Observed) -> TickOut {
    let mut run = Run { obs, state: state.clone(), events: Vec::new(), guards: Vec::new() };
    let steps = |run: &mut Run| -> Step<Vec<Planned>> {
        expire_quarantines_and_credit_flags(run);
        closeout(run);
        off(run)?;
        let own = follow_own_batches(run)?;
        hold_for_other_batches(run)?;
        end_when_finishing(run, &own)?;
        hold_for_budget(run)?;
        let settings = valid_settings(run)?;
        wait_between_batches(run, &settings)?;
        show_slot_guards(run, &settings);
        decide_launches(run, &settings, &own)
    };
    match steps(&mut run) {
        ControlFlow::Continue(launches) => {
            let verdict = format!("would launch {}", said(&launches).join("; and "));
            run.finish(launches, verdict)
        }
        ControlFlow::Break(verdict) => run.finish(Vec::new(), verdict),
    }
}

/// Quarantines whose time has passed are released (the next batch on the
/// endpoint is the probe); credit flags past their midnight are dropped.
fn expire_quarantines_and_credit_flags(run: &mut Run) {
    let now = run.obs.now;
    let expired: Vec<String> = run
        .state
        .endpoint_failures
        .iter()
        .filter(|(_, f)| f.retry_at <= now && !f.released)
        .map(|(e, _)| e.clone())
        .collect();
    for endpoint in expired {
        if let Some(f) = run.state.endpoint_failures.get_mut(&endpoint) {
            f.released = true;
        }
        run.event(AutoEvent::EndpointReleased { endpoint });
    }
    let expired: Vec<String> =
        run.state.credit_flags.iter().filter(|(_, f)| f.until <= now).map(|(m, _)| m.clone()).collect();
    for model in expired {
        run.state.credit_flags.remove(&model);
        run.event(AutoEvent::CreditExpired { model });
    }
}

/// Off: nothing launches. What it would do if on is every other guard,
/// evaluated on a copy (nothing of it kept), so the dry run explains an off
/// autopilot too.
fn off(run: &mut Run) -> Step {
    if run.state.mode != Mode::Off {
        run.guard("mode", true, run.state.mode.word());
        return ControlFlow::Continue(());
    }
    run.guard("mode", false, "off");
    run.state.hold = None;
    let on = AutoState { mode: Mode::On, ..run.state.clone() };
    let shadow = tick(&on, run.obs);
    run.guards.extend(shadow.guards.into_iter().filter(|g| g.name != "mode"));
    ControlFlow::Break(format!("off: nothing is launched (if on, it {})", shadow.verdict))
}

/// The autopilot's own batches as the tick found them: the lanes still
/// running one, and those whose batch cannot be read (with why).
struct Own {
    busy: Vec<String>,
    unknown: Vec<(String, String)>,
}

impl Own {
    fn unknown_words(&self) -> String {
        self.unknown.iter().map(|(l, r)| format!("{l}: {r}")).collect::<Vec<_>>().join("; ")
    }
}

/// Each batch the autopilot launched: still active (its lane busy), unknown,
/// or finished (closed: [`close_lane`]). Serial: one running holds
/// `batch_running`, one unknown holds `state_unknown`. (A serial batch and
/// lanes' batches may both be there when the settings changed between
/// ticks: each is followed to its end.)
fn follow_own_batches(run: &mut Run) -> Step<Own> {
    let lanes: Vec<(String, Current)> = run
        .state
        .current
        .iter()
        .map(|c| (SERIAL_LANE.to_owned(), c.clone()))
        .chain(run.state.currents.iter().map(|(l, c)| (l.clone(), c.clone())))
        .collect();
    let mut own = Own { busy: Vec::new(), unknown: Vec::new() };
    for (lane, cur) in lanes {
        // The lane it occupies (a serial batch's too, should lanes be turned on).
        let real = if lane == SERIAL_LANE { cur.route_lane() } else { lane.clone() };
        match run.obs.units.get(&cur.unit).map(|u| &u.observation) {
            Some(Observation::Active { .. } | Observation::Pending { .. }) => own.busy.push(real),
            Some(Observation::Unknown { reason }) => own.unknown.push((real, reason.clone())),
            None => own.unknown.push((real, format!("{} was not observed", cur.unit))),
            Some(Observation::Finished { .. }) => close_lane(run, &lane, &cur),
        }
    }
    let parallel = run.state.settings_parallel();
    if !own.unknown.is_empty() {
        let words = own.unknown_words();
        run.guard("current batch", false, format!("state unknown ({words})"));
        if !parallel {
            return run.held(
                HoldReason::StateUnknown,
                format!("its batch's state cannot be read, so nothing new launches: {words}"),
                format!("holds, because its batch's state is unknown ({words})"),
            );
        }
        // Parallel: nothing new on those lanes; the others go on.
        own.busy.extend(own.unknown.iter().map(|(l, _)| l.clone()));
    }
    if !own.busy.is_empty() && !parallel {
        let unit = run
            .state
            .current
            .iter()
            .chain(run.state.currents.values())
            .map(|c| c.unit.clone())
            .collect::<Vec<_>>()
            .join(", ");
        run.guard("current batch", false, format!("{unit} is running"));
        return run.held(
            HoldReason::BatchRunning,
            format!("its batch {unit} is running"),
            format!("holds, because its batch {unit} is running"),
        );
    }
    if own.busy.is_empty() {
        run.guard("current batch", true, "none running");
    }
    ControlFlow::Continue(own)
}

/// A batch the autopilot did not launch that is running (or cannot be
/// read) holds `batch_running`; a paused resumable one holds `batch_paused`.
fn hold_for_other_batches(run: &mut Run) -> Step {
    let live = &run.obs.live;
    let ours = live.unit.as_ref().is_some_and(|u| {
        run.state.current.as_ref().is_some_and(|c| &c.unit == u) || run.state.currents.values().any(|c| &c.unit == u)
    });
    let words = live.words.clone();
    if matches!(live.state, LiveKind::Running | LiveKind::Starting | LiveKind::Unknown) && !ours {
        run.guard("other batch", false, words.clone());
        return run.held(
            HoldReason::BatchRunning,
            format!("a batch it did not launch is running or cannot be read: {words}"),
            format!("holds, because another batch is running ({words})"),
        );
    }
    if live.state == LiveKind::StoppedResumable {
        run.guard("paused batch", false, words.clone());
        return run.held(
            HoldReason::BatchPaused,
            format!("a paused batch waits to be resumed or stopped: {words}"),
            "holds, because a paused batch must be resumed or stopped first".into(),
        );
    }
    run.guard("other batch", true, "none running or paused");
    ControlFlow::Continue(())
}

/// A day or campaign cap reached holds `budget_reached` until the cap
/// allows again (the next UTC day, or the operator raises it).
fn hold_for_budget(run: &mut Run) -> Step {
    match run.obs.budget_reached.clone() {
        Some(words) => {
            run.guard("budget", false, words.clone());
            run.held(
                HoldReason::BudgetReached,
                format!("the budget is spent: {words}"),
                format!("holds, because the budget is spent ({words})"),
            )
        }
        None => {
            run.guard("budget", true, "no day or campaign cap reached");
            ControlFlow::Continue(())
        }
    }
}

/// Finishing: once its batches have ended, auto mode turns off; until then
/// it holds `finishing`.
fn end_when_finishing(run: &mut Run, own: &Own) -> Step {
    if run.state.mode != Mode::Finishing {
        return ControlFlow::Continue(());
    }
    if !own.busy.is_empty() {
        return run.held(
            HoldReason::Finishing,
            "finishing: waiting for its batches to end; nothing new launches".into(),
            "holds, because it is finishing".into(),
        );
    }
    run.state.mode = Mode::Off;
    run.state.hold = None;
    run.state.session.ended_reason = Some("finished: auto mode was set to finish".into());
    run.event(AutoEvent::AutoFinished {});
    ControlFlow::Break("finishing: its last batch ended, auto mode is off".into())
}

/// The saved settings, validated against the campaign; invalid ones hold
/// `settings_invalid` with every reason.
fn valid_settings(run: &mut Run) -> Step<Settings> {
    match settings::validate(&run.state.settings, run.obs.cfg, run.obs.matrix) {
        Ok(s) => {
            run.guard("settings", true, "valid");
            ControlFlow::Continue(s)
        }
        Err(why) => {
            let why = why.join("; ");
            run.guard("settings", false, why.clone());
            run.held(
                HoldReason::SettingsInvalid,
                format!("the settings cannot be used: {why}"),
                format!("holds, because the settings are invalid: {why}"),
            )
        }
    }
}

/// The wait between batches (serial only): `waiting` until it is over.
fn wait_between_batches(run: &mut Run, settings: &Settings) -> Step {
    let now = run.obs.now;
    let waits_until =
        run.state.last_batch_finished_at.map(|t| Timestamp(t.0 + (settings.wait_minutes * 60_000.0) as i64));
    match waits_until {
        Some(until) if until > now && !settings.parallel_lanes => {
            let left = crate::basics::timefmt::duration_words((until.0 - now.0) as f64 / 1000.0);
            run.guard("wait", false, format!("{} min between batches; {left} left", settings.wait_minutes));
            run.held(
                HoldReason::Waiting,
                format!("waiting {} min between batches ({left} left)", settings.wait_minutes),
                format!("holds, because it waits between batches ({left} left)"),
            )
        }
        _ => {
            run.guard("wait", true, format!("{} min between batches: over", settings.wait_minutes));
            ControlFlow::Continue(())
        }
    }
}

/// The guards the slots face, shown whatever is decided: today's launches
/// against the caps, credit flags, quarantined endpoints.
fn show_slot_guards(run: &mut Run, settings: &Settings) {
    let now = run.obs.now;
    let today = now.day_key();
    let caps: Vec<String> = settings
        .models
        .iter()
        .map(|m| {
            let auto = run.state.daily_launches.get(&today).and_then(|d| d.get(m)).copied().unwrap_or(0);
            match settings.daily_caps.get(m) {
                Some(c) => format!("{m} {auto}/{c}"),
                None => format!("{m} {auto} (no cap)"),
            }
        })
        .collect();
    run.guard("daily launches", true, caps.join(", "));
    let flags: Vec<String> =
        run.state.credit_flags.iter().map(|(m, f)| format!("{m} until {}", f.until.to_display())).collect();
    run.guard("credit flags", flags.is_empty(), if flags.is_empty() { "none".into() } else { flags.join(", ") });
    let quarantined: Vec<String> = run
        .state
        .endpoint_failures
        .iter()
        .filter(|(_, f)| f.retry_at > now)
        .map(|(e, f)| format!("{e} until {} ({} failure(s) in a row)", f.retry_at.to_display(), f.failures))
        .collect();
    run.guard(
        "quarantined endpoints",
        quarantined.is_empty(),
        if quarantined.is_empty() { "none".into() } else { quarantined.join(", ") },
    );
    let busy: Vec<&str> = run.obs.endpoint_busy.values().map(String::as_str).collect();
    run.guard("busy endpoints", busy.is_empty(), if busy.is_empty() { "none".into() } else { busy.join("; ") });
}

/// The decision: one launch (serial) or one per free lane; or the hold that
/// says why nothing can go (`no_eligible_slot`, or `state_unknown` when only
/// unreadable lanes are left).
fn decide_launches(run: &mut Run, settings: &Settings, own: &Own) -> Step<Vec<Planned>> {
    let (launches, refused) = match decide(&run.state, run.obs, settings, &own.busy) {
        Ok(p) => (p, Vec::new()),
        Err(why) => (Vec::new(), why),
    };
    if launches.is_empty() {
        if !own.unknown.is_empty() && refused.iter().all(|r| r.contains("every lane is busy")) {
            let words = own.unknown_words();
            return run.held(
                HoldReason::StateUnknown,
                format!("lanes whose state cannot be read launch nothing: {words}"),
                format!("holds, because lanes' state is unknown ({words})"),
            );
        }
        if !own.busy.is_empty() {
            // Parallel lanes, some busy, none free to start.
            run.state.hold = None;
            let busy = own.busy.join(", ");
            run.guard("decision", true, format!("lanes busy: {busy}"));
            return ControlFlow::Break(format!("nothing new: lanes {busy} are running"));
        }
        let words = refused.join("; ");
        run.guard("decision", false, words.clone());
        return run.held(
            HoldReason::NoEligibleSlot,
            format!("nothing can be launched: {words}"),
            format!("holds, because nothing can be launched: {words}"),
        );
    }
    run.guard("decision", true, said(&launches).join("; "));
    run.state.hold = None;
    ControlFlow::Continue(launches)
}

/// Each planned launch in words.
fn said(launches: &[Planned]) -> Vec<String> {
    launches
        .iter()
        .map(|p| format!("{} cells of {} on lane {} ({})", p.draft.spec.cells.len(), p.model, p.lane, p.why))
        .collect()
}

impl AutoState {
    fn settings_parallel(&self) -> bool {
        self.settings_read().parallel_lanes
    }
}

/// A finished batch: its iteration closed, a credit flag if a paid route
/// could not spend, the lane's outcome (and its endpoint quarantined if it
/// failed or made no run set), and the current cleared.
fn close_lane(run: &mut Run, lane: &str, cur: &Current) {
    let now = run.obs.now;
    let unit = run.obs.units.get(&cur.unit);
    let outcome = unit.and_then(|u| u.outcome.clone());
    let failure = unit.and_then(|u| u.failure.clone());
    let (status, attempted, passes) = match &outcome {
        Some(o) => (BatchEnd::Outcome(o.status), Some(o.attempted), Some(o.passes)),
        None => (BatchEnd::UnitFailed, None, None),
    };
    if let Some(it) = run.state.session.iterations.iter_mut().rev().find(|i| i.unit == cur.unit) {
        it.ended_at = Some(now);
        it.status = Some(status);
        it.cells_attempted = attempted;
        it.passes = passes;
    }
    run.event(AutoEvent::BatchFinished {
        unit: cur.unit.clone(),
        run_set: cur.run_set.clone(),
        lane: lane.to_owned(),
        status,
        cells_attempted: attempted,
        passes,
        failure: failure.clone(),
    });
    // A paid route that could not spend credit is held back until midnight.
    let paid = cur.model.as_deref().and_then(|m| run.obs.cfg.model(m)).is_some_and(|m| m.kind == ModelKind::Paid);
    let text =
        format!("{} {}", outcome.as_ref().map(|o| o.reason.as_str()).unwrap_or(""), failure.as_deref().unwrap_or(""));
    let bad = outcome.as_ref().is_none_or(|o| o.status != BatchStatus::Completed);
    if let (true, true, true, Some(model)) = (paid, bad, credit_like(&text), cur.model.as_ref()) {
        let until = now.next_utc_midnight();
        let reason = text.trim().to_owned();
        run.state.credit_flags.insert(model.clone(), CreditFlag { reason: reason.clone(), until });
        run.event(AutoEvent::CreditFlagged { model: model.clone(), until, reason });
    }
    run.state.last_batch_finished_at = Some(now);
    // A batch that failed or made no run set quarantines only its endpoint
    // (cooldown; failures in a row, or a failed probe, open its circuit for
    // longer); one that succeeded forgets its failures. In both modes: the
    // serial autopilot must not relaunch on a broken endpoint every tick.
    let failed = outcome.as_ref().is_none_or(|o| o.status == BatchStatus::Failed);
    if let Some(endpoint) = cur.endpoint.as_ref() {
        if failed {
            let reason = if outcome.is_none() { "its batch made no run set" } else { "its batch failed" };
            let f = quarantine(&run.state, endpoint, reason, now);
            run.event(AutoEvent::EndpointQuarantined {
                endpoint: endpoint.clone(),
                lane: lane.to_owned(),
                retry_at: f.retry_at,
                failures: f.failures,
                reason: reason.into(),
            });
            run.state.endpoint_failures.insert(endpoint.clone(), f);
        } else if run.state.endpoint_failures.remove(endpoint).is_some() {
            run.event(AutoEvent::EndpointRecovered { endpoint: endpoint.clone() });
        }
    }
    if lane == SERIAL_LANE {
        run.state.current = None;
    } else {
        run.state.currents.remove(lane);
        run.state
            .lane_outcomes
            .insert(lane.to_owned(), LaneOutcome { unit: cur.unit.clone(), run_set: cur.run_set.clone(), status });
        run.state.lane_finished_at.insert(lane.to_owned(), now);
        run.event(AutoEvent::LaneFinished { lane: lane.to_owned(), status });
    }
}

/// The scheduling model's workers, from the state: each endpoint's failures
/// in a row, cooldown and circuit.
pub fn scheduler_of(state: &AutoState, lanes: &[(String, Vec<String>)], now: Timestamp) -> Scheduler {
    let minutes = state.settings_read().endpoint_retry_minutes.clamp(1.0, 1440.0);
    let cooldown_ms = (minutes * 60_000.0) as i64;
    let policy = Policy { cooldown_ms, breaker_after: 3, open_ms: cooldown_ms * 8 };
    let workers = lanes
        .iter()
        .map(|(name, models)| {
            let mut w = Worker::new(name, models.clone());
            if let Some(f) = state.endpoint_failures.get(name) {
                w.failures = f.failures;
                w.cooldown_until = Some(f.retry_at);
                // A quarantine that has ended leaves the circuit half open:
                // the next batch on it is the probe, and a failed probe opens
                // the circuit for eight cooldowns (whatever the count).
                w.circuit = match (f.failures >= policy.breaker_after, f.retry_at > now) {
                    (true, true) => Circuit::Open { until: f.retry_at },
                    (_, false) if f.failures > 0 => Circuit::HalfOpen,
                    _ => Circuit::Closed,
                };
            }
            w
        })
        .collect();
    let assignments = state
        .current
        .iter()
        .chain(state.currents.values())
        .map(|c| Assignment { job: c.unit.clone(), worker: c.route_lane(), at: c.launched_at })
        .collect();
    Scheduler { policy, workers, assignments, ..Default::default() }
}

/// An endpoint's quarantine after a failure, as the scheduling model's
/// `report_failure` sets it (a cooldown; the third failure in a row, or a
/// failed probe, opens its circuit for eight cooldowns).
fn quarantine(state: &AutoState, endpoint: &str, reason: &str, now: Timestamp) -> EndpointFailure {
    let s = scheduler_of(state, &[(endpoint.to_owned(), Vec::new())], now).report_failure(endpoint, now);
    let w = &s.workers[0];
    EndpointFailure {
        failures: w.failures,
        retry_at: w.cooldown_until.unwrap_or(now),
        reason: reason.into(),
        released: false,
    }
}

/// Closeout backfill: each run set with a failed publication stage listed
/// once (replaced, never duplicated); one that no longer fails is removed.
fn closeout(run: &mut Run) {
    let seen = run.obs.closeout_failures.clone();
    for b in &seen {
        match run.state.closeout_backfill.iter_mut().find(|x| x.run_set == b.run_set) {
            Some(x) => *x = b.clone(),
            None => {
                run.state.closeout_backfill.push(b.clone());
                run.event(AutoEvent::CloseoutDeferred {
                    run_set: b.run_set.clone(),
                    stage: b.stage.clone(),
                    message: b.message.clone(),
                });
            }
        }
    }
    let before = run.state.closeout_backfill.len();
    run.state.closeout_backfill.retain(|x| seen.iter().any(|b| b.run_set == x.run_set));
    if run.state.closeout_backfill.len() != before {
        run.event(AutoEvent::CloseoutResolved {});
    }
}

/// One candidate: a route and the filters of its cells.
#[derive(Debug, Clone)]
struct Slot {
    lane: String,
    model: String,
    endpoint: Option<String>,
    prompt_variant: String,
    retry_feedback: bool,
    filters: BTreeMap<String, Vec<String>>,
}

impl Slot {
    fn name(&self) -> String {
        let mut parts = vec![self.model.clone()];
        parts.extend(self.endpoint.clone());
        parts.extend(self.filters.iter().map(|(k, v)| format!("{k}={}", v.join("|"))));
        parts.push(format!("prompt {}", self.prompt_variant));
        parts.push(format!("retry feedback {}", self.retry_feedback));
        parts.join(", ")
    }
}

/// The lane a route runs on: its endpoint, or `api:<model>` for a paid route.
pub fn lane_of(model: &str, endpoint: Option<&str>) -> String {
    endpoint.map_or_else(|| format!("api:{model}"), str::to_owned)
}

fn slots(settings: &Settings, cfg: &CampaignConfig, matrix: &Matrix) -> Vec<Slot> {
    let has = |f: &str| matrix.factors.iter().any(|x| x == f);
    let builds: Vec<Option<&String>> =
        if has("build") { settings.builds.iter().map(Some).collect() } else { vec![None] };
    let mut out = Vec::new();
    for model in &settings.models {
        let endpoints: Vec<Option<String>> = match cfg.model(model).map(|m| m.kind) {
            Some(ModelKind::Local) => cfg
                .endpoints
                .iter()
                .filter(|e| e.models.contains(model) && e.request_preset.is_some())
                .map(|e| Some(e.name.clone()))
                .collect(),
            _ => vec![None],
        };
        for endpoint in &endpoints {
            for task in &settings.tasks {
                for build in &builds {
                    for pv in &settings.prompt_variants {
                        for rf in &settings.retry_feedback {
                            let mut filters = BTreeMap::from([("task".to_owned(), vec![task.clone()])]);
                            if let Some(b) = build {
                                filters.insert("build".into(), vec![(*b).clone()]);
                            }
                            // Route factors the matrix plans are filters too.
                            for (f, v) in [
                                ("model", model.clone()),
                                ("prompt_variant", pv.clone()),
                                ("retry_feedback", rf.to_string()),
                            ] {
                                if has(f) {
                                    filters.insert(f.into(), vec![v]);
                                }
                            }
                            if let (true, Some(e)) = (has("endpoint"), endpoint) {
                                filters.insert("endpoint".into(), vec![e.clone()]);
                            }
                            out.push(Slot {
                                lane: lane_of(model, endpoint.as_deref()),
                                model: model.clone(),
                                endpoint: endpoint.clone(),
                                prompt_variant: pv.clone(),
                                retry_feedback: *rf,
                                filters,
                            });
                        }
                    }
                }
            }
        }
    }
    out
}

/// The launches to make: the best eligible slot (serial), or the best per
/// free lane (parallel). Every slot's reason when none can go.
fn decide(
    state: &AutoState,
    obs: &Observed,
    settings: &Settings,
    busy: &[String],
) -> Result<Vec<Planned>, Vec<String>> {
    let mut why_not: BTreeMap<String, usize> = BTreeMap::new();
    // The planned cells by task, once: a slot looks only at its task's.
    let mut by_task: HashMap<String, Vec<&CellCoverage>> = HashMap::new();
    for c in &obs.coverage.cells {
        by_task.entry(c.factors.get("task").map(value_text).unwrap_or_default()).or_default().push(c);
    }
    // Eligible slots scored (cheap); drafted lazily, best first.
    let mut candidates: Vec<Candidate> = Vec::new();
    for slot in slots(settings, obs.cfg, obs.matrix).into_iter().filter(|s| !busy.contains(&s.lane)) {
        match candidate(state, obs, settings, &by_task, slot) {
            Ok(c) => candidates.push(c),
            Err(why) => *why_not.entry(why).or_insert(0) += 1,
        }
    }
    let iteration = state.session.iterations.len() + 1;
    let out = draft_best(candidates, obs, settings, iteration, &mut why_not);
    if out.is_empty() {
        let mut reasons: Vec<String> =
            why_not.into_iter().map(|(r, n)| if n > 1 { format!("{r} ({n} slots)") } else { r }).collect();
        if reasons.is_empty() {
            reasons.push("no slot: every lane is busy".into());
        }
        return Err(reasons);
    }
    Ok(out)
}

/// An eligible slot, scored by the objective, with the draft request it makes.
struct Candidate {
    score: f64,
    slot: Slot,
    request: DraftRequest,
    why: String,
}

/// Why a slot is held back today, if it is: its model credit-flagged or at a
/// daily cap (the settings' or the catalogue's), its endpoint quarantined or
/// busy (its engine's queue at its `max_waiting`).
fn held_back(state: &AutoState, obs: &Observed, settings: &Settings, slot: &Slot) -> Option<String> {
    let now = obs.now;
    if let Some(f) = state.credit_flags.get(&slot.model) {
        return Some(format!("model {} is credit-flagged until {}", slot.model, f.until.to_display()));
    }
    let auto_today = state.daily_launches.get(&now.day_key()).and_then(|d| d.get(&slot.model)).copied().unwrap_or(0);
    if let Some(cap) = settings.daily_caps.get(&slot.model).filter(|c| auto_today >= **c) {
        return Some(format!("model {}: the autopilot's daily cap of {cap} is reached", slot.model));
    }
    let all_today = obs.launches_today.get(&slot.model).copied().unwrap_or(0);
    if let Some(cap) = obs.cfg.model(&slot.model).and_then(|m| m.daily_cap).filter(|c| all_today >= *c) {
        return Some(format!("model {}: its catalogue daily cap of {cap} is reached", slot.model));
    }
    let endpoint = slot.endpoint.as_deref()?;
    if let Some(f) = state.endpoint_failures.get(endpoint).filter(|f| f.retry_at > now) {
        return Some(format!("endpoint {endpoint} is quarantined until {} ({})", f.retry_at.to_display(), f.reason));
    }
    obs.endpoint_busy.get(endpoint).cloned()
}

/// A slot as a candidate: not held back, with a gap to fill, scored.
fn candidate(
    state: &AutoState,
    obs: &Observed,
    settings: &Settings,
    by_task: &HashMap<String, Vec<&CellCoverage>>,
    slot: Slot,
) -> Result<Candidate, String> {
    if let Some(why) = held_back(state, obs, settings, &slot) {
        return Err(why);
    }
    let keeps = |factors: &BTreeMap<String, Value>| {
        slot.filters.iter().all(|(f, vs)| factors.get(f).is_some_and(|v| vs.contains(&value_text(v))))
    };
    let task = slot.filters.get("task").and_then(|t| t.first()).cloned().unwrap_or_default();
    let cells: Vec<&CellCoverage> =
        by_task.get(&task).map(|cs| cs.iter().copied().filter(|c| keeps(&c.factors)).collect()).unwrap_or_default();
    if !cells.iter().any(|c| open(settings, c)) {
        return Err(format!("{}: no gap to fill", slot.name()));
    }
    let mut request = DraftRequest {
        label: String::new(),
        filters: slot.filters.clone(),
        max_cells: Some(settings.max_cells as f64),
        model: Some(slot.model.clone()),
        endpoint: slot.endpoint.clone(),
        prompt_variant: Some(slot.prompt_variant.clone()),
        retry_feedback: Some(slot.retry_feedback),
        skip_failed: settings.count_basis == CountBasis::Attempted,
    };
    let (score, why, condition) = objective(settings, &slot, &cells, obs.outcomes);
    if let (Some(cond), true) = (condition, obs.matrix.factors.iter().any(|f| f == "condition")) {
        request.filters.insert("condition".into(), vec![cond]);
    }
    Ok(Candidate { score, slot, request, why })
}

/// Whether a cell counts for the objective (the settings' count basis).
fn counted(settings: &Settings, s: CellState) -> bool {
    match settings.count_basis {
        CountBasis::Covered => s == CellState::Covered,
        CountBasis::Attempted => matches!(s, CellState::Covered | CellState::Failed),
    }
}

/// Whether a cell is still to be drafted (a gap; failed too when only passes count).
fn open(settings: &Settings, c: &CellCoverage) -> bool {
    c.state == CellState::Gap || (c.state == CellState::Failed && settings.count_basis == CountBasis::Covered)
}

/// The slot's score under the objective (higher first), why in words, and
/// the condition to draw the batch from (expected impact).
fn objective(
    settings: &Settings,
    slot: &Slot,
    cells: &[&CellCoverage],
    outcomes: &[crate::results::Outcome],
) -> (f64, String, Option<String>) {
    let done = cells.iter().filter(|c| counted(settings, c.state)).count();
    match settings.objective {
        Objective::FillGaps => (0.0, format!("the first slot with gaps: {}", slot.name()), None),
        Objective::LeastCovered => {
            let frac = if cells.is_empty() { 1.0 } else { done as f64 / cells.len() as f64 };
            let why = format!("the least covered slot ({done} of {} cells counted): {}", cells.len(), slot.name());
            (1.0 - frac, why, None)
        }
        Objective::ExpectedImpact => expected_impact(settings, slot, cells, outcomes),
    }
}

/// The expected-impact objective: of the slot's conditions with cells still
/// to draft, the one whose next cells (up to a batch) would most narrow the
/// 95 % interval of its difference to the baseline — the slot's first
/// condition, in matrix order — at the rates observed so far
/// (`results::impact`). A cell counts as a pass when covered, a trial when
/// covered or failed. A comparison is settled when Evidence's verdict over
/// the slot's counted outcomes calls it clear (`results::evidence`: the same
/// always-valid test, in the order the cells ended) — ranked after every
/// open one, as the proposal guide ranks them.
fn expected_impact(
    settings: &Settings,
    slot: &Slot,
    cells: &[&CellCoverage],
    outcomes: &[crate::results::Outcome],
) -> (f64, String, Option<String>) {
    use crate::results::impact::{best_comparison, Counts};
    // Per condition, in first-seen (matrix) order: passes, trials, open cells.
    let mut by: Vec<(String, (u64, u64, usize))> = Vec::new();
    for c in cells {
        let k = c.factors.get("condition").map(value_text).unwrap_or_default();
        let i = match by.iter().position(|(name, _)| *name == k) {
            Some(i) => i,
            None => {
                by.push((k, (0, 0, 0)));
                by.len() - 1
            }
        };
        let e = &mut by[i].1;
        e.0 += u64::from(c.state == CellState::Covered);
        e.1 += u64::from(matches!(c.state, CellState::Covered | CellState::Failed));
        e.2 += usize::from(open(settings, c));
    }
    let Some(base) = by.first().map(|(name, _)| name.clone()) else { return (0.0, slot.name(), None) };
    let counts: Vec<Counts> = by.iter().map(|(_, (s, n, _))| Counts { successes: *s, n: *n }).collect();
    // The verdicts over the slot's cells, levels in the slot's order.
    let ids: std::collections::BTreeSet<&str> = cells.iter().map(|c| c.cell.as_str()).collect();
    let mine: Vec<crate::results::Outcome> =
        outcomes.iter().filter(|o| ids.contains(o.cell.as_str())).cloned().collect();
    let order = BTreeMap::from([("condition".to_owned(), by.iter().map(|(name, _)| name.clone()).collect())]);
    let evidence = crate::results::evidence(&mine, "condition", &order);
    let clear: Vec<bool> =
        by.iter().map(|(name, _)| evidence.comparisons.iter().any(|c| c.level == *name && c.clear)).collect();
    let mut best: Option<(f64, String, String)> = None;
    for (at, (cond, (_, _, open_cells))) in by.iter().enumerate() {
        if *open_cells == 0 {
            continue;
        }
        let k = (*open_cells).min(settings.max_cells) as u64;
        let Some((j, nw)) = best_comparison(&counts, &clear, at, k) else { continue };
        let compared = &by[j].0;
        let why = format!(
            "{k} more cell(s) of condition {cond:?}: the difference {compared:?} − {base:?}, {} ({})",
            nw.words(),
            slot.name()
        );
        if best.as_ref().is_none_or(|(r, _, _)| nw.rank() > *r) {
            best = Some((nw.rank(), why, cond.clone()));
        }
    }
    match best {
        Some((rank, why, cond)) => (rank, why, Some(cond)),
        None => (0.0, slot.name(), None),
    }
}

/// Drafts the candidates best first (ties keep the settings' order) until
/// one per lane (serial: one) succeeds; a draft that fails names its slot.
fn draft_best(
    mut candidates: Vec<Candidate>,
    obs: &Observed,
    settings: &Settings,
    iteration: usize,
    why_not: &mut BTreeMap<String, usize>,
) -> Vec<Planned> {
    candidates.sort_by(|a, b| b.score.partial_cmp(&a.score).unwrap_or(std::cmp::Ordering::Equal));
    let mut out: Vec<Planned> = Vec::new();
    for Candidate { slot, mut request, why, .. } in candidates {
        let lane = if settings.parallel_lanes { slot.lane.clone() } else { SERIAL_LANE.into() };
        if out.iter().any(|p| p.lane == lane) {
            continue;
        }
        request.label = format!("{}-{}", settings.label_prefix, iteration + out.len());
        match crate::console::draft::from_gaps(obs.matrix, obs.coverage, obs.cfg, &request) {
            Ok(draft) => out.push(Planned {
                lane,
                model: slot.model.clone(),
                endpoint: slot.endpoint.clone(),
                prompt_variant: slot.prompt_variant.clone(),
                retry_feedback: slot.retry_feedback,
                draft,
                request,
                why,
            }),
            Err(e) => {
                *why_not.entry(format!("{}: {}", slot.name(), e.first().cloned().unwrap_or_default())).or_insert(0) += 1
            }
        }
        if !settings.parallel_lanes && !out.is_empty() {
            break;
        }
    }
    out
}

/// What `Campaign::start` answered for a planned launch.
#[derive(Debug, Clone, PartialEq)]
pub enum LaunchResult {
    Launched { unit: String, run_set: String, spec: String, backend: String },
    Refused(Vec<String>),
}

/// Records a planned launch's result: the current batch, the daily and
/// session counts and `batch_launched`; or `launch_failed`, a hold, and the
/// last-finished time (so a failing launch waits before it is tried again).
pub fn record_launch(state: &mut AutoState, planned: &Planned, result: &LaunchResult, now: Timestamp) -> Vec<LogEvent> {
    match result {
        LaunchResult::Launched { unit, run_set, spec, backend } => {
            let current = Current {
                unit: unit.clone(),
                label: planned.draft.spec.label.clone(),
                spec: spec.clone(),
                run_set: run_set.clone(),
                launched_at: now,
                backend: Some(backend.clone()),
                model: Some(planned.model.clone()),
                endpoint: planned.endpoint.clone(),
                request_preset: planned.draft.spec.request_preset.clone(),
                prompt_variant: Some(planned.prompt_variant.clone()),
                retry_feedback: Some(planned.retry_feedback),
                cells: planned.draft.spec.cells.len(),
            };
            if planned.lane == SERIAL_LANE {
                state.current = Some(current);
            } else {
                state.currents.insert(planned.lane.clone(), current);
            }
            *state.daily_launches.entry(now.day_key()).or_default().entry(planned.model.clone()).or_insert(0) += 1;
            // Only the last week of daily counts is kept.
            let keep_from = Timestamp(now.0 - 7 * 86_400_000).day_key();
            state.daily_launches.retain(|d, _| *d >= keep_from);
            if state.session.started_at.is_none() {
                state.session.started_at = Some(now);
            }
            state.session.iterations.push(Iteration {
                unit: unit.clone(),
                run_set: run_set.clone(),
                spec: spec.clone(),
                model: Some(planned.model.clone()),
                endpoint: planned.endpoint.clone(),
                cells: planned.draft.spec.cells.len(),
                launched_at: Some(now),
                ..Default::default()
            });
            state.hold = None;
            vec![LogEvent {
                at: now,
                event: AutoEvent::BatchLaunched {
                    unit: unit.clone(),
                    run_set: run_set.clone(),
                    spec: spec.clone(),
                    lane: planned.lane.clone(),
                    model: planned.model.clone(),
                    endpoint: planned.endpoint.clone(),
                    cells: planned.draft.spec.cells.len(),
                    why: planned.why.clone(),
                },
            }]
        }
        LaunchResult::Refused(reasons) => {
            state.last_batch_finished_at = Some(now);
            let words = format!("the launch was refused: {}", reasons.join("; "));
            if state.hold.as_ref().is_none_or(|h| h.reason != HoldReason::LaunchFailed) {
                state.hold = Some(Hold { reason: HoldReason::LaunchFailed, words, since: now });
            }
            let mut events = vec![LogEvent {
                at: now,
                event: AutoEvent::LaunchFailed {
                    lane: planned.lane.clone(),
                    model: planned.model.clone(),
                    endpoint: planned.endpoint.clone(),
                    reasons: reasons.clone(),
                },
            }];
            // A refused launch quarantines its endpoint as a failed batch
            // does, and says so in the same event.
            if let Some(e) = planned.endpoint.as_ref() {
                let reason = "its launch was refused";
                let f = quarantine(state, e, reason, now);
                events.push(LogEvent {
                    at: now,
                    event: AutoEvent::EndpointQuarantined {
                        endpoint: e.clone(),
                        lane: planned.lane.clone(),
                        retry_at: f.retry_at,
                        failures: f.failures,
                        reason: reason.into(),
                    },
                });
                state.endpoint_failures.insert(e.clone(), f);
            }
            events
        }
    }
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use crate::console::coverage::RunSetCells;
    use serde_json::json;

    pub fn now() -> Timestamp {
        Timestamp::parse_rfc3339("2026-12-01T10:00:00Z").unwrap()
    }

    pub struct World {
        pub cfg: CampaignConfig,
        pub matrix: Matrix,
        pub coverage: Coverage,
    }

    pub fn world() -> World {
        let (mut cfg, matrix) = super::super::settings::tests::campaign();
        cfg.endpoints.push(crate::campaign::EndpointEntry {
            name: "gpu-b".into(),
            url: "http://127.0.0.1:9/v1".into(),
            backend: "vllm".into(),
            models: vec!["qwen".into()],
            request_preset: Some("p".into()),
            ..Default::default()
        });
        let coverage = crate::console::coverage::compute(&matrix, &[] as &[RunSetCells]);
        World { cfg, matrix, coverage }
    }

    pub fn observed(w: &World) -> Observed<'_> {
        Observed {
            now: now(),
            cfg: &w.cfg,
            matrix: &w.matrix,
            coverage: &w.coverage,
            units: BTreeMap::new(),
            live: LiveNow { state: LiveKind::Idle, ..Default::default() },
            closeout_failures: Vec::new(),
            launches_today: BTreeMap::new(),
            budget_reached: None,
            endpoint_busy: BTreeMap::new(),
            outcomes: &[],
        }
    }

    pub fn on(settings: Value) -> AutoState {
        AutoState { mode: Mode::On, settings, ..Default::default() }
    }

    pub fn current(unit: &str, model: &str, endpoint: Option<&str>) -> Current {
        Current {
            unit: unit.into(),
            label: "auto-1".into(),
            spec: "specs/committed/0001-auto-1.json".into(),
            run_set: format!("{unit}-rs"),
            launched_at: Timestamp(now().0 - 600_000),
            backend: Some("local".into()),
            model: Some(model.into()),
            endpoint: endpoint.map(Into::into),
            request_preset: None,
            prompt_variant: None,
            retry_feedback: None,
            cells: 2,
        }
    }

    pub fn unit(obs: Observation, outcome: Option<(BatchStatus, &str)>) -> UnitNow {
        UnitNow {
            observation: obs,
            outcome: outcome.map(|(status, reason)| OutcomeNow {
                status,
                reason: reason.into(),
                attempted: 2,
                passes: usize::from(status == BatchStatus::Completed) * 2,
            }),
            failure: None,
        }
    }

    pub fn finished(code: i32) -> Observation {
        Observation::Finished { exit_status: Some(code), result: "exit-code".into(), at: None }
    }

    pub fn qwen() -> Value {
        json!({"models": ["qwen"], "tasks": ["t1"], "wait_minutes": 5})
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::*;
    use super::*;
    use serde_json::json;

    fn slot() -> Slot {
        Slot {
            lane: "gpu-a".into(),
            model: "qwen".into(),
            endpoint: Some("gpu-a".into()),
            prompt_variant: "p".into(),
            retry_feedback: false,
            filters: BTreeMap::new(),
        }
    }

    /// A slot's cells: per condition, (passed, failed, gaps).
    fn slot_cells(groups: &[(&str, usize, usize, usize)]) -> Vec<CellCoverage> {
        let mut out = Vec::new();
        for &(cond, passed, failed, gaps) in groups {
            let states = std::iter::repeat_n(CellState::Covered, passed)
                .chain(std::iter::repeat_n(CellState::Failed, failed))
                .chain(std::iter::repeat_n(CellState::Gap, gaps));
            for (i, state) in states.enumerate() {
                out.push(CellCoverage {
                    cell: format!("c-{cond}-{i}"),
                    factors: [("condition".to_owned(), json!(cond))].into_iter().collect(),
                    state,
                    attempts: u32::from(state != CellState::Gap),
                    run_sets: Vec::new(),
                    status: None,
                    score: None,
                    tokens: None,
                });
            }
        }
        out
    }

    fn score(settings: &Settings, groups: &[(&str, usize, usize, usize)]) -> (f64, String, Option<String>) {
        let cells = slot_cells(groups);
        objective(settings, &slot(), &cells.iter().collect::<Vec<_>>(), &[])
    }

    /// The outcomes Evidence would count for a slot's ended cells: the i-th
    /// of each condition on seed i, ending at minute i (twins across
    /// conditions); covered passes, failed does not.
    fn outcomes_of(cells: &[CellCoverage]) -> Vec<crate::results::Outcome> {
        let mut seen: BTreeMap<String, usize> = BTreeMap::new();
        cells
            .iter()
            .filter(|c| c.state != CellState::Gap)
            .map(|c| {
                let passed = c.state == CellState::Covered;
                let at = seen.entry(value_text(&c.factors["condition"])).or_default();
                let i = *at;
                *at += 1;
                let mut factors = c.factors.clone();
                factors.insert("seed".into(), json!(i));
                crate::results::Outcome {
                    cell: c.cell.clone(),
                    factors,
                    model: None,
                    run_set: "rs".into(),
                    passed,
                    failed: !passed,
                    reason: None,
                    score: None,
                    tokens: None,
                    ended_at: Some(format!("2026-12-01T{:02}:{:02}:00Z", i / 60, i % 60)),
                    successes: u64::from(passed),
                    trials: 1,
                }
            })
            .collect()
    }

    /// The autopilot calls a comparison settled by Evidence's verdict over
    /// the slot's outcomes, and ranks it after an open one: memory 0 of 40
    /// against 40 of 40 is clear; 3 of 6 against 5 of 10 is not.
    #[test]
    fn expected_impact_calls_a_comparison_settled_by_evidences_verdict() {
        let impact = Settings { objective: Objective::ExpectedImpact, max_cells: 6, ..Settings::default() };
        let with_verdicts = |groups: &[(&str, usize, usize, usize)]| {
            let cells = slot_cells(groups);
            let outcomes = outcomes_of(&cells);
            objective(&impact, &slot(), &cells.iter().collect::<Vec<_>>(), &outcomes)
        };
        let apart = with_verdicts(&[("base", 40, 0, 0), ("memory", 0, 40, 6)]);
        let open = with_verdicts(&[("base", 5, 5, 0), ("memory", 3, 3, 6)]);
        assert!(apart.1.contains("(settled: its verdict is clear)"), "{}", apart.1);
        assert!(!open.1.contains("settled"), "{}", open.1);
        assert!(open.0 > apart.0, "open first: {open:?} {apart:?}");
        // Without the outcomes (a tick before anything ended) nothing is settled.
        assert!(!score(&impact, &[("base", 40, 0, 0), ("memory", 0, 40, 6)]).1.contains("settled"));
    }

    /// `expected_impact` ranks by what the next cells would do to a
    /// comparison at the rates observed (here with no outcomes, so no
    /// verdict settles one): memory 0 of 6 against 10 of 10, whose
    /// always-valid margin the cells would narrow most, before memory 3 of 6 against
    /// 5 of 10; among the rest the less measured. `least_covered` ranks by
    /// the share of cells counted.
    #[test]
    fn the_objectives_rank_slots_by_what_each_measures() {
        let impact = Settings { objective: Objective::ExpectedImpact, max_cells: 6, ..Settings::default() };
        let open = score(&impact, &[("base", 5, 5, 0), ("memory", 3, 3, 6)]);
        let apart = score(&impact, &[("base", 10, 0, 0), ("memory", 0, 6, 6)]);
        assert!(apart.0 > open.0, "{open:?} {apart:?}");
        assert_eq!(open.2.as_deref(), Some("memory"));
        assert!(!apart.1.contains("settled") && apart.1.contains("now −100 pp [−100, −52] at one look"), "{}", apart.1);
        assert!(
            open.1.starts_with(
                "6 more cell(s) of condition \"memory\": the difference \"memory\" − \"base\", now 0 pp ["
            ),
            "{}",
            open.1
        );
        let less_measured = score(&impact, &[("base", 5, 5, 0), ("memory", 1, 1, 6)]);
        assert!(less_measured.0 > open.0, "fewer trials: more to gain ({less_measured:?} {open:?})");
        // The baseline's own open cells narrow the comparisons it feeds.
        let base_open = score(&impact, &[("base", 1, 1, 6), ("memory", 5, 5, 0)]);
        assert_eq!(base_open.2.as_deref(), Some("base"));
        // Nothing left to draft (failed cells are drafted again when only
        // passes count, so none failed here): no condition to draw from.
        assert_eq!(score(&impact, &[("base", 5, 0, 0), ("memory", 3, 0, 0)]).2, None);

        let least = Settings { objective: Objective::LeastCovered, ..Settings::default() };
        let (a, b) = (score(&least, &[("base", 1, 0, 3)]), score(&least, &[("base", 3, 0, 1)]));
        assert!(a.0 > b.0 && a.1.contains("(1 of 4 cells counted)"), "{a:?} {b:?}");
    }

    /// Every branch of the tick, in the seed's order, with `now` passed in.
    #[test]
    fn the_tick_takes_each_branch_in_order() {
        let w = world();
        let hold = |t: &TickOut| t.state.hold.as_ref().map(|h| h.reason.word());

        // Off: nothing.
        let t = tick(&AutoState { settings: qwen(), ..Default::default() }, &observed(&w));
        assert!(t.launches.is_empty() && t.verdict.starts_with("off"));

        // On, nothing running: one launch, the first slot with gaps.
        let t = tick(&on(qwen()), &observed(&w));
        assert_eq!(t.launches.len(), 1, "{}", t.verdict);
        let p = &t.launches[0];
        assert_eq!((p.lane.as_str(), p.model.as_str(), p.endpoint.as_deref()), (SERIAL_LANE, "qwen", Some("gpu-a")));
        assert_eq!(p.draft.spec.cells.len(), 2, "t1's two cells");
        assert_eq!(p.draft.spec.label, "auto-1");
        assert!(t.verdict.starts_with("would launch 2 cells of qwen"), "{}", t.verdict);
        assert_eq!(hold(&t), None);

        // Its batch still runs: batch_running. Cannot be read: state_unknown.
        let mut st = on(qwen());
        st.current = Some(current("rb-a", "qwen", Some("gpu-a")));
        let mut o = observed(&w);
        o.units.insert("rb-a".into(), unit(Observation::Active { since: None }, None));
        let t = tick(&st, &o);
        assert_eq!((t.launches.len(), hold(&t)), (0, Some("batch_running")));
        o.units.insert("rb-a".into(), unit(Observation::Unknown { reason: "bus down".into() }, None));
        let t = tick(&st, &o);
        assert_eq!((t.launches.len(), hold(&t)), (0, Some("state_unknown")));
        assert!(t.state.current.is_some(), "unknown is neither finished nor failed");

        // It finished: the iteration closes, current clears, the wait begins.
        st.session.iterations.push(Iteration { unit: "rb-a".into(), ..Default::default() });
        o.units.insert("rb-a".into(), unit(finished(0), Some((BatchStatus::Completed, "ran 2 cells"))));
        let t = tick(&st, &o);
        assert!(t.state.current.is_none());
        assert_eq!(t.state.session.iterations[0].passes, Some(2));
        assert_eq!(t.state.last_batch_finished_at, Some(now()));
        assert!(t.events.iter().any(|e| e.event.kind() == "batch_finished"));
        assert_eq!(hold(&t), Some("waiting"));
        assert!(t.launches.is_empty());

        // After the wait it launches again.
        let mut later = t.state.clone();
        later.last_batch_finished_at = Some(Timestamp(now().0 - 6 * 60_000));
        assert_eq!(tick(&later, &observed(&w)).launches.len(), 1);

        // Someone else's batch runs, or one is paused: hold.
        let mut o = observed(&w);
        o.live = LiveNow {
            state: LiveKind::Running,
            unit: Some("rb-manual".into()),
            words: "Running: m.".into(),
            ..Default::default()
        };
        assert_eq!(hold(&tick(&on(qwen()), &o)), Some("batch_running"));
        o.live.state = LiveKind::StoppedResumable;
        assert_eq!(hold(&tick(&on(qwen()), &o)), Some("batch_paused"));

        // Finishing with nothing running: off.
        let t = tick(&AutoState { mode: Mode::Finishing, settings: qwen(), ..Default::default() }, &observed(&w));
        assert_eq!(t.state.mode, Mode::Off);
        assert!(t.events.iter().any(|e| e.event.kind() == "auto_finished"));

        // Invalid settings: every reason in the hold.
        let t = tick(&on(json!({"models": [], "tasks": ["t9"]})), &observed(&w));
        let h = t.state.hold.clone().unwrap();
        assert_eq!(h.reason, HoldReason::SettingsInvalid);
        assert!(h.words.contains("enable at least one model") && h.words.contains("task \"t9\""), "{}", h.words);
    }

    /// The Auto page's headline and its tick preview come from one evaluation:
    /// a state saved with no hold yet but invalid settings says it holds.
    #[test]
    fn the_headline_says_what_the_preview_says() {
        use crate::auto::view::{PlannedView, TickReport};
        let w = world();
        let report = |t: &TickOut| TickReport {
            mode: t.state.mode,
            verdict: t.verdict.clone(),
            guards: t.guards.clone(),
            launches: t.launches.iter().map(PlannedView::from).collect(),
            events: Vec::new(),
            hold: t.state.hold.clone(),
        };
        let st = on(json!({"models": [], "tasks": ["t1"]}));
        assert!(st.hold.is_none(), "no tick has recorded a hold yet");
        let r = report(&tick(&st, &observed(&w)));
        assert!(r.verdict.starts_with("holds, because"), "{}", r.verdict);
        let h = r.headline();
        assert!(h.starts_with("Holds since ") && h.contains("enable at least one model"), "{h}");
        // Valid settings: the same evaluation says it would launch.
        let r = report(&tick(&on(qwen()), &observed(&w)));
        assert!(r.headline().starts_with("Not holding: the next tick would launch"), "{}", r.headline());
        let off = report(&tick(&AutoState::default(), &observed(&w)));
        assert_eq!(off.headline(), "Off: nothing is launched.");
    }

    #[test]
    fn a_spent_day_or_campaign_budget_holds_until_it_allows() {
        let w = world();
        let st = on(json!({"models": ["qwen"], "tasks": ["t1"], "wait_minutes": 0}));
        let mut o = observed(&w);
        o.budget_reached = Some("the cap of 5.00 USD per UTC day: 5.10 USD spent".into());
        let t = tick(&st, &o);
        assert!(t.launches.is_empty());
        let hold = t.state.hold.as_ref().unwrap();
        assert_eq!(hold.reason, HoldReason::BudgetReached);
        assert_eq!(hold.words, "the budget is spent: the cap of 5.00 USD per UTC day: 5.10 USD spent");
        assert!(t.guards.iter().any(|g| g.name == "budget" && !g.ok));
        // The next day (or a raised cap): nothing is reached, it launches.
        let t = tick(&t.state, &observed(&w));
        assert_eq!(t.launches.len(), 1, "{}", t.verdict);
    }

    #[test]
    fn caps_credit_flags_and_quarantines_hold_with_their_reason() {
        let w = world();
        let paid = json!({"models": ["gpt"], "tasks": ["t1"], "daily_caps": {"gpt": 1}, "wait_minutes": 0});
        // A paid batch that failed for credit: flagged until the next UTC midnight.
        let mut st = on(paid.clone());
        st.current = Some(current("rb-p", "gpt", None));
        let mut o = observed(&w);
        o.units.insert(
            "rb-p".into(),
            unit(finished(1), Some((BatchStatus::Failed, "402 Payment Required: insufficient_quota"))),
        );
        let t = tick(&st, &o);
        let flag = &t.state.credit_flags["gpt"];
        assert_eq!(flag.until, Timestamp::parse_rfc3339("2026-12-02T00:00:00Z").unwrap());
        assert!(t.events.iter().any(|e| e.event.kind() == "credit_flagged"));
        assert_eq!(t.state.hold.as_ref().unwrap().reason, HoldReason::NoEligibleSlot);
        assert!(t.state.hold.as_ref().unwrap().words.contains("credit-flagged until 2026-12-02 00:00:00 UTC"));
        // Past midnight the flag expires.
        let mut o = observed(&w);
        o.now = Timestamp::parse_rfc3339("2026-12-02T00:00:01Z").unwrap();
        let t2 = tick(&t.state, &o);
        assert!(t2.state.credit_flags.is_empty() && t2.events.iter().any(|e| e.event.kind() == "credit_expired"));

        // The autopilot's own daily cap.
        let mut st = on(paid);
        st.daily_launches.insert("2026-12-01".into(), BTreeMap::from([("gpt".into(), 1)]));
        let t = tick(&st, &observed(&w));
        assert!(t.launches.is_empty());
        assert!(t.state.hold.unwrap().words.contains("the autopilot's daily cap of 1 is reached"));

        // A quarantined endpoint: its slots are out; the other endpoint serves.
        let mut st = on(qwen());
        st.endpoint_failures.insert(
            "gpu-a".into(),
            EndpointFailure { failures: 1, retry_at: Timestamp(now().0 + 60_000), reason: "x".into(), released: false },
        );
        let t = tick(&st, &observed(&w));
        assert_eq!(t.launches[0].endpoint.as_deref(), Some("gpu-b"));
        st.endpoint_failures.get_mut("gpu-a").unwrap().retry_at = now();
        let t = tick(&st, &observed(&w));
        assert!(t.state.endpoint_failures["gpu-a"].released, "released at its retry time (its failures kept)");
        assert!(t.events.iter().any(|e| e.event.kind() == "endpoint_released"));
        assert_eq!(t.launches[0].endpoint.as_deref(), Some("gpu-a"));

        // A busy endpoint (its engine's queue at max_waiting): its slots are
        // out, the other endpoint serves; both busy, the tick holds and says why.
        let st = on(qwen());
        let busy = |e: &str| {
            (e.to_owned(), format!("endpoint {e} is busy: 9 requests waiting at its engine (max_waiting = 8)"))
        };
        let mut o = observed(&w);
        o.endpoint_busy = BTreeMap::from([busy("gpu-a")]);
        let t = tick(&st, &o);
        assert_eq!(t.launches[0].endpoint.as_deref(), Some("gpu-b"));
        assert!(t.guards.iter().any(|g| g.name == "busy endpoints" && !g.ok && g.value.contains("gpu-a is busy")));
        o.endpoint_busy = BTreeMap::from([busy("gpu-a"), busy("gpu-b")]);
        let t = tick(&st, &o);
        assert!(t.launches.is_empty());
        let hold = t.state.hold.unwrap();
        assert_eq!(hold.reason, HoldReason::NoEligibleSlot);
        assert!(hold.words.contains("endpoint gpu-b is busy: 9 requests waiting"), "{}", hold.words);
    }

    #[test]
    fn a_launch_is_recorded_and_a_refused_one_holds_and_waits() {
        let w = world();
        let st = on(qwen());
        let t = tick(&st, &observed(&w));
        let p = &t.launches[0];
        let mut ok = t.state.clone();
        let e = record_launch(
            &mut ok,
            p,
            &LaunchResult::Launched {
                unit: "rb-auto-1-x".into(),
                run_set: "auto-1-x".into(),
                spec: "specs/committed/0001-auto-1.json".into(),
                backend: "local".into(),
            },
            now(),
        );
        assert_eq!(e.iter().map(|e| e.event.kind()).collect::<Vec<_>>(), ["batch_launched"]);
        assert_eq!(ok.current.as_ref().unwrap().unit, "rb-auto-1-x");
        assert_eq!(ok.daily_launches["2026-12-01"]["qwen"], 1);
        assert_eq!(ok.session.iterations.len(), 1);
        let mut bad = t.state.clone();
        let e = record_launch(&mut bad, p, &LaunchResult::Refused(vec!["budget: too much".into()]), now());
        // Issue 40 (item 21): the quarantine a refused launch makes is said as an event.
        let kinds: Vec<&str> = e.iter().map(|e| e.event.kind()).collect();
        assert_eq!(kinds, ["launch_failed", "endpoint_quarantined"]);
        assert!(e[1].event.words().contains("its launch was refused"), "{}", e[1].event.words());
        assert!(bad.endpoint_failures.contains_key(p.endpoint.as_deref().unwrap()));
        assert_eq!(bad.hold.as_ref().unwrap().reason, HoldReason::LaunchFailed);
        assert_eq!(bad.last_batch_finished_at, Some(now()), "a refused launch waits before the next try");
        assert!(bad.current.is_none());
        assert_eq!(tick(&bad, &observed(&w)).state.hold.unwrap().reason, HoldReason::Waiting);
    }

    #[test]
    fn parallel_lanes_launch_one_per_endpoint_and_quarantine_only_the_failing_one() {
        let w = world();
        let s = json!({"models": ["qwen"], "tasks": ["t1", "t2"], "parallel_lanes": true, "wait_minutes": 0});
        let t = tick(&on(s.clone()), &observed(&w));
        let lanes: Vec<&str> = t.launches.iter().map(|p| p.lane.as_str()).collect();
        assert_eq!(lanes, ["gpu-a", "gpu-b"], "{}", t.verdict);
        // gpu-a's batch made no run set; gpu-b's still runs: only gpu-a is
        // quarantined, and nothing new starts on the busy lane.
        let mut st = on(s);
        st.currents.insert("gpu-a".into(), current("rb-a", "qwen", Some("gpu-a")));
        st.currents.insert("gpu-b".into(), current("rb-b", "qwen", Some("gpu-b")));
        let mut o = observed(&w);
        o.units.insert("rb-a".into(), unit(finished(2), None));
        o.units.insert("rb-b".into(), unit(Observation::Active { since: None }, None));
        o.live = LiveNow { state: LiveKind::Running, unit: Some("rb-b".into()), ..Default::default() };
        let t = tick(&st, &o);
        assert!(t.state.endpoint_failures.contains_key("gpu-a"));
        assert!(!t.state.endpoint_failures.contains_key("gpu-b"));
        assert!(t.events.iter().any(|e| e.event.kind() == "lane_finished"));
        assert!(t.launches.is_empty(), "gpu-a quarantined, gpu-b busy: {}", t.verdict);
        assert_eq!(t.state.currents.keys().collect::<Vec<_>>(), ["gpu-b"]);
    }

    #[test]
    fn a_lane_failing_three_times_in_a_row_opens_its_circuit_and_a_success_forgets() {
        let w = world();
        let s = json!({"models": ["qwen"], "tasks": ["t1"], "parallel_lanes": true, "wait_minutes": 0, "endpoint_retry_minutes": 10});
        let mut st = on(s);
        let mut at = now();
        for round in 1..=3 {
            st.currents.insert("gpu-a".into(), current("rb-a", "qwen", Some("gpu-a")));
            let mut o = observed(&w);
            o.now = at;
            o.units.insert("rb-a".into(), unit(finished(2), None));
            st = tick(&st, &o).state;
            let f = &st.endpoint_failures["gpu-a"];
            let minutes = (f.retry_at.0 - at.0) / 60_000;
            // Round 2 is the first batch after the quarantine ended (the
            // probe): its failure opens the circuit for eight cooldowns.
            assert_eq!((f.failures, minutes), (round, if round < 2 { 10 } else { 80 }), "round {round}");
            at = Timestamp(f.retry_at.0 + 1);
        }
        // The lanes view says so, from the scheduling model.
        let settings = super::super::settings::validate(&st.settings, &w.cfg, &w.matrix).unwrap();
        let before = Timestamp(now().0 + 60 * 60_000);
        let lanes = super::super::view::lanes(&st, Some(&settings), &w.cfg, before);
        let a = lanes.iter().find(|l| l.lane == "gpu-a").unwrap();
        assert_eq!(a.status, super::super::view::LaneStatus::Quarantined);
        assert!(a.idle_reason.as_deref().unwrap().contains("circuit is open after 3 failures in a row"), "{a:?}");
        // A success on it (the probe) forgets the failures.
        st.currents.insert("gpu-a".into(), current("rb-a", "qwen", Some("gpu-a")));
        let mut o = observed(&w);
        o.now = at;
        o.units.insert("rb-a".into(), unit(finished(0), Some((BatchStatus::Completed, "ok"))));
        let t = tick(&st, &o);
        assert!(t.state.endpoint_failures.is_empty());
        assert!(t.events.iter().any(|e| e.event.kind() == "endpoint_recovered"));
    }

    #[test]
    fn serial_mode_quarantines_a_failed_endpoint_and_a_success_clears_it() {
        let w = world();
        let s = json!({"models": ["qwen"], "tasks": ["t1"], "wait_minutes": 0, "endpoint_retry_minutes": 10});
        let mut st = on(s);
        st.current = Some(current("rb-a", "qwen", Some("gpu-a")));
        let mut o = observed(&w);
        o.units.insert("rb-a".into(), unit(finished(1), Some((BatchStatus::Failed, "every cell failed"))));
        let t = tick(&st, &o);
        let f = &t.state.endpoint_failures["gpu-a"];
        assert_eq!((f.failures, (f.retry_at.0 - now().0) / 60_000), (1, 10), "{f:?}");
        assert!(t.events.iter().any(|e| e.event.kind() == "endpoint_quarantined"), "{:?}", t.events);
        // The same tick launches nothing on it: the other endpoint serves.
        assert!(t.launches.iter().all(|p| p.endpoint.as_deref() != Some("gpu-a")), "{:?}", t.launches);
        // Launches on gpu-a wait until the quarantine ends; then a success clears it.
        let mut st = t.state;
        st.current = Some(current("rb-b", "qwen", Some("gpu-a")));
        let mut o = observed(&w);
        o.now = Timestamp(now().0 + 11 * 60_000);
        o.units.insert("rb-b".into(), unit(finished(0), Some((BatchStatus::Completed, "ok"))));
        let t = tick(&st, &o);
        assert!(t.state.endpoint_failures.is_empty(), "{:?}", t.state.endpoint_failures);
        assert!(t.events.iter().any(|e| e.event.kind() == "endpoint_recovered"));
    }

    #[test]
    fn a_failed_probe_quarantines_for_eight_cooldowns_in_both_modes() {
        let w = world();
        for parallel in [false, true] {
            let s = json!({"models": ["qwen"], "tasks": ["t1"], "wait_minutes": 0,
                           "endpoint_retry_minutes": 10, "parallel_lanes": parallel});
            let mut st = on(s);
            // One failure, its quarantine ended: the next batch is the probe.
            st.endpoint_failures.insert(
                "gpu-a".into(),
                EndpointFailure {
                    failures: 1,
                    retry_at: Timestamp(now().0 - 60_000),
                    reason: "its batch failed".into(),
                    released: true,
                },
            );
            let cur = current("rb-p", "qwen", Some("gpu-a"));
            if parallel {
                st.currents.insert("gpu-a".into(), cur);
            } else {
                st.current = Some(cur);
            }
            let mut o = observed(&w);
            o.units.insert("rb-p".into(), unit(finished(1), Some((BatchStatus::Failed, "every cell failed"))));
            let f = tick(&st, &o).state.endpoint_failures["gpu-a"].clone();
            assert_eq!((f.failures, (f.retry_at.0 - now().0) / 60_000), (2, 80), "parallel={parallel}: {f:?}");
        }
    }

    #[test]
    fn a_failed_publication_is_listed_once_per_run_set() {
        let w = world();
        let mut o = observed(&w);
        let b = Backfill {
            run_set: "rs1".into(),
            stage: "publish_experiment_results".into(),
            message: "push failed".into(),
        };
        o.closeout_failures = vec![b.clone()];
        let t1 = tick(&AutoState::default(), &o);
        let t2 = tick(&t1.state, &o);
        assert_eq!(t2.state.closeout_backfill, [b]);
        let deferred = |t: &TickOut| t.events.iter().filter(|e| e.event.kind() == "closeout_deferred").count();
        assert_eq!((deferred(&t1), deferred(&t2)), (1, 0));
    }
}

#[cfg(test)]
mod properties {
    use super::tests_support::*;
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    /// One step of a random world: time passes, the autopilot's batch does
    /// something, someone else's batch may run or be paused, the operator
    /// may switch the mode.
    #[derive(Debug, Clone)]
    struct Step {
        minutes: i64,
        /// 0 active, 1 finished ok, 2 finished failing for credit, 3 unknown, 4 died with no run set
        unit: u8,
        /// 0 idle, 1 another batch running, 2 a paused batch
        live: u8,
        /// 0 keep, 1 on, 2 finishing
        mode: u8,
        parallel: bool,
    }

    fn step() -> impl Strategy<Value = Step> {
        (
            0i64..200,
            0u8..5,
            prop_oneof![6 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
            prop_oneof![8 => Just(0u8), 1 => Just(1u8), 1 => Just(2u8)],
            any::<bool>(),
        )
            .prop_map(|(minutes, unit, live, mode, parallel)| Step { minutes, unit, live, mode, parallel })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

        /// Whatever happens: a daily cap is never exceeded; nothing launches
        /// while held, while its batch runs, while another batch runs or is
        /// paused, on a quarantined endpoint or with a credit-flagged model;
        /// finishing ends off once nothing runs; every hold says why.
        #[test]
        fn the_guards_hold_in_every_world(steps in proptest::collection::vec(step(), 1..40)) {
            let w = world();
            let mut now = Timestamp::parse_rfc3339("2026-12-01T20:00:00Z").unwrap();
            let mut state = AutoState {
                mode: Mode::On,
                settings: json!({"models": ["qwen", "gpt"], "tasks": ["t1", "t2"], "daily_caps": {"gpt": 2}, "wait_minutes": 3}),
                ..Default::default()
            };
            let mut launched_today: BTreeMap<(String, String), u32> = BTreeMap::new();
            for s in steps {
                now = Timestamp(now.0 + s.minutes * 60_000);
                state.settings["parallel_lanes"] = json!(s.parallel);
                match s.mode {
                    1 if state.mode == Mode::Off => state.mode = Mode::On,
                    2 if state.mode == Mode::On => state.mode = Mode::Finishing,
                    _ => {}
                }
                let mut o = observed(&w);
                o.now = now;
                let ours: Vec<Current> = state.current.iter().chain(state.currents.values()).cloned().collect();
                for c in &ours {
                    let u = match s.unit {
                        0 => unit(Observation::Active { since: None }, None),
                        1 => unit(finished(0), Some((BatchStatus::Completed, "ran"))),
                        2 => unit(finished(1), Some((BatchStatus::Failed, "insufficient_quota: credit exhausted"))),
                        3 => unit(Observation::Unknown { reason: "bus down".into() }, None),
                        _ => unit(finished(2), None),
                    };
                    o.units.insert(c.unit.clone(), u);
                }
                o.live = match s.live {
                    1 => LiveNow { state: LiveKind::Running, unit: Some("rb-operator".into()), words: "Running: op.".into(), ..Default::default() },
                    2 => LiveNow { state: LiveKind::StoppedResumable, unit: Some("rb-operator".into()), words: "Stopped.".into(), ..Default::default() },
                    _ => LiveNow { state: LiveKind::Idle, ..Default::default() },
                };
                let before = state.clone();
                let out = tick(&state, &o);
                if !out.launches.is_empty() {
                    prop_assert!(out.state.hold.is_none(), "launched while held: {:?}", out.state.hold);
                    prop_assert_eq!(s.live, 0, "launched while another batch ran or was paused");
                    prop_assert_eq!(out.state.mode, Mode::On);
                    prop_assert!(!(s.unit == 3 && !s.parallel && !ours.is_empty()), "launched while its batch's state was unknown");
                    let occupied: Vec<String> = ours
                        .iter()
                        .filter(|c| !matches!(o.units[&c.unit].observation, Observation::Finished { .. }))
                        .map(Current::route_lane)
                        .collect();
                    for p in &out.launches {
                        prop_assert!(!out.state.credit_flags.contains_key(&p.model), "a credit-flagged model launched");
                        prop_assert!(!occupied.contains(&lane_of(&p.model, p.endpoint.as_deref())), "launched on a busy lane: {} {:?} occupied {:?} verdict {}", p.model, p.endpoint, occupied, out.verdict);
                        if let Some(e) = &p.endpoint {
                            prop_assert!(out.state.endpoint_failures.get(e).is_none_or(|f| f.retry_at <= now), "a quarantined endpoint launched");
                        }
                    }
                    if !s.parallel {
                        prop_assert!(out.launches.len() == 1 && out.state.current.is_none());
                    }
                } else if out.state.mode != Mode::Off {
                    if let Some(h) = &out.state.hold {
                        prop_assert!(!h.words.is_empty(), "a hold without words");
                    }
                }
                if before.mode == Mode::Finishing && ours.iter().all(|c| matches!(o.units[&c.unit].observation, Observation::Finished { .. })) && s.live == 0 {
                    prop_assert_eq!(out.state.mode, Mode::Off, "finishing did not end off");
                }
                state = out.state;
                for p in &out.launches {
                    let unit = format!("rb-{}-{}", p.draft.spec.label, now.0);
                    record_launch(&mut state, p, &LaunchResult::Launched { unit: unit.clone(), run_set: unit.clone(), spec: "s".into(), backend: "local".into() }, now);
                    let day = now.to_rfc3339()[..10].to_owned();
                    *launched_today.entry((day, p.model.clone())).or_insert(0) += 1;
                }
                for ((_, model), n) in &launched_today {
                    if model == "gpt" {
                        prop_assert!(*n <= 2, "gpt launched {} times in a day (cap 2)", n);
                    }
                }
            }
        }
    }
}
