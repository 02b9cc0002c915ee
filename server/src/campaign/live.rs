//! The live view: the current unit and why it failed, the live view
//! memoised by its version, and the version pages poll.

use std::path::Path;
use std::time::{Duration, Instant};

use runboard::campaign::{CampaignConfig, CONFIG_FILE};
use runboard::drive::records::CellStatus;
use runboard::live::{LiveObservations, LiveView, UnitSeen};
use runboard::runsets::{self, UnitRecord, RUNSETS_DIR, UNITS_DIR};

use super::{launcher, Campaign};

/// How long the shared live view serves polls when nothing changed.
const LIVE_REMAKE: Duration = Duration::from_secs(1);

/// How often a running batch's live version moves on its own (its cells'
/// durations grow), in milliseconds.
const LIVE_TICK_MS: i64 = 5_000;

#[derive(Default)]
pub(super) struct LiveMemo {
    /// Each ended unit's failure as last made (its journal is read once).
    failures: std::sync::Mutex<Option<(String, runboard::live::UnitFailure)>>,
    /// The whole live view as last made, and its version: polls while nothing
    /// changed are answered from it (a page of its cells each), made again at
    /// most every `LIVE_REMAKE` so running cells' durations move on.
    view: std::sync::Mutex<Option<(String, Instant, std::sync::Arc<LiveView>)>>,
    /// A batch's typical cell time from history (its run set, when made,
    /// the figure): history is every run set's timings, made again at most
    /// every `TYPICAL_KEPT` while the batch has no ended cell of its own.
    typical: std::sync::Mutex<Option<(String, Instant, Option<f64>)>>,
}

/// How long a batch's typical cell time from history is kept.
const TYPICAL_KEPT: Duration = Duration::from_secs(30);

impl Campaign {
    /// The latest unit and what its launcher says of it. The latest is the
    /// run index's last launch when its unit record cannot be read (then
    /// its state is unknown, with the reason).
    pub(super) fn current_unit(&self, cfg: &CampaignConfig) -> Option<(UnitRecord, UnitSeen)> {
        let units = self.records.units();
        let (index, _) = self.records.run_index();
        let last_launch = index.last().filter(|e| {
            !units.iter().any(|u| u.unit == e.unit) && units.last().is_none_or(|u| u.started_at <= e.launched_at)
        });
        let (rec, observation) = match last_launch {
            Some(e) => {
                let path = self.records.unit_path(&e.unit);
                let why = match self.records.within().read(&path) {
                    Err(err) => format!("its unit record {UNITS_DIR}/{}.json cannot be read: {err}", e.unit),
                    Ok(b) => match serde_json::from_slice::<UnitRecord>(&b) {
                        Err(err) => format!("its unit record {UNITS_DIR}/{}.json is damaged: {err}", e.unit),
                        Ok(_) => "its unit record changed while it was read".into(),
                    },
                };
                let rec = UnitRecord::new(&e.unit, e.launcher, &e.run_set, &e.spec, Vec::new(), e.launched_at);
                (rec, runboard::live::Observation::Unknown { reason: why })
            }
            None => {
                let rec = units.last().cloned()?;
                let obs = self.observe(&rec, cfg);
                (rec, obs)
            }
        };
        let outcome = self.records.run_set(&rec.run_set).and_then(|rs| rs.outcome_ok().cloned());
        let mut seen = unit_seen(&rec, observation, outcome.as_ref().map(|o| o.status));
        seen.paused = outcome.and_then(|o| o.paused);
        Some((rec, seen))
    }

    /// Why the unit died (from its log or journal), made once per ending.
    pub(super) fn failure(
        &self,
        rec: &UnitRecord,
        seen: &UnitSeen,
        cfg: &CampaignConfig,
    ) -> runboard::live::UnitFailure {
        let key = format!("{}\u{0}{:?}", rec.unit, seen.observation);
        let mut held = self.live_made.failures.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((k, f)) = held.as_ref() {
            if *k == key {
                return f.clone();
            }
        }
        let tail = match self.launcher_of(rec.backend(), cfg) {
            Ok(l) => l.log_tail(rec, &self.records, 12),
            Err(_) => rec.log.as_deref().map(|l| self.records.tail_lines(l, 12)).unwrap_or_default(),
        };
        let f = launcher::failure_of(rec, &seen.observation, &tail);
        *held = Some((key, f.clone()));
        f
    }

    /// `GET /api/live`: the whole view, shared while nothing changed.
    pub fn live_shared(&self) -> std::sync::Arc<LiveView> {
        let version = self.live_version();
        let mut made = self.live_made.view.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((v, at, view)) = made.as_ref() {
            if *v == version && at.elapsed() < LIVE_REMAKE {
                return view.clone();
            }
        }
        let view = std::sync::Arc::new(self.live(version));
        *made = Some((view.version.clone(), Instant::now(), view.clone()));
        view
    }

    /// The live view made from the records now, under `version` — the
    /// version taken *before* anything here is read. A change while it is
    /// made then moves the version past it, and a page that holds this view
    /// asks again; a version taken after could name a change the view does
    /// not show, and the page would keep the older state for good (seen: an
    /// idle view kept after the budget's pause wrote its marker).
    fn live(&self, version: String) -> LiveView {
        let now = crate::system::clock::now();
        let cfg = self.config().ok();
        let mut problems = Vec::new();
        let current = cfg.as_ref().and_then(|c| self.current_unit(c));
        let marker = match self.records.marker() {
            Some(Ok(m)) => Some(m),
            Some(Err(e)) => {
                problems.push(e);
                None
            }
            None => None,
        };
        let run_sets = self.records.run_sets();
        // A driver process alive naming its run set: the current unit's first.
        let live_sets: Vec<&str> =
            run_sets.iter().filter(|rs| self.records.is_live(rs)).map(|rs| rs.name.as_str()).collect();
        let process_run_set = current
            .as_ref()
            .map(|(_, u)| u.run_set.as_str())
            .filter(|rs| live_sets.contains(rs))
            .or(live_sets.first().copied())
            .map(str::to_owned);
        let failure = current.as_ref().and_then(|(rec, u)| match (&u.observation, cfg.as_ref()) {
            (runboard::live::Observation::Finished { .. }, Some(cfg))
                if !u.observation.succeeded() && u.outcome.is_none() =>
            {
                Some(self.failure(rec, u, cfg))
            }
            _ => None,
        });
        let obs = LiveObservations { unit: current.as_ref().map(|(_, u)| u.clone()), process_run_set, marker, failure };
        let state = runboard::live::derive(&obs);
        let run_set = match &state {
            runboard::live::LiveState::Unknown { .. } => obs.unit.as_ref().map(|u| u.run_set.clone()),
            known => known.run_set().map(str::to_owned),
        };
        let rs = run_set.as_deref().and_then(|n| run_sets.iter().find(|r| r.name == n));
        let spec = rs
            .and_then(|r| r.spec.as_ref().and_then(|s| s.as_ref().ok()).cloned())
            .or_else(|| obs.unit.as_ref().and_then(|u| self.load_spec(&u.spec).ok().map(|(_, _, s)| s)));
        let price = cfg
            .as_ref()
            .and_then(|c| runboard::live::spend::prices_of(c, spec.as_ref().and_then(|s| s.model.as_deref())));
        let parallel = cfg.as_ref().and_then(|c| c.runner.as_ref()).map_or(1, |r| r.parallel.max(1) as usize);
        let records = rs.map(|r| r.cells.as_slice()).unwrap_or_default();
        let planned = spec.as_ref().map(|s| s.cells.as_slice()).unwrap_or_default();
        // Until one of its cells has ended, a cell's time comes from history
        // (read only then: the batch's own ended cells take over after).
        let in_flight_now =
            matches!(state, runboard::live::LiveState::Running { .. } | runboard::live::LiveState::Starting { .. });
        let none_ended = !records.iter().any(|r| matches!(r.status, CellStatus::Done | CellStatus::Failed));
        let typical_s = match (&spec, &cfg, &run_set) {
            (Some(spec), Some(cfg), Some(rs)) if in_flight_now && none_ended => self.typical_s(spec, cfg, rs, parallel),
            _ => None,
        };
        let (mut cells, mut totals, eta_s) =
            runboard::live::cell_rows(planned, records, price, parallel, typical_s, now);
        if let Some(r) = rs {
            problems.extend(r.problems.iter().map(|p| format!("{RUNSETS_DIR}/{}/{p}", r.name)));
        }
        // Time left only means something while the batch runs.
        let running = matches!(state, runboard::live::LiveState::Running { .. });
        let eta_s = eta_s.filter(|_| running || matches!(state, runboard::live::LiveState::Starting { .. }));
        let spent = rs.zip(cfg.as_ref()).map(|(r, c)| self.live_spend(c, r, spec.as_ref(), running, eta_s, now));
        let unseen = |up: Option<bool>| {
            cfg.as_ref().zip(spec.as_ref()).and_then(|(c, sp)| runboard::live::calls_unseen(c, sp, up))
        };
        let (spend, stalls, rate_limits, calls_unseen) = match spent {
            // The cells are in plan order when the spec was read.
            Some(s) if spec.is_some() => {
                // A progress line or call file that could not be counted is said.
                problems.extend(s.problems.iter().cloned());
                let writes: Vec<Option<runboard::Timestamp>> =
                    s.last_writes.iter().map(|w| w.map(|(t, _)| t)).collect();
                let said = runboard::live::CellWords { stalls: &s.stalls, quiet: &s.quiet, so_far: &s.so_far };
                runboard::live::attach_spend(&mut cells, &mut totals, s.cells, &writes, said, &s.batch);
                let calls_unseen = unseen(s.gateway_up);
                (Some(s.batch), s.stalls, s.limits, calls_unseen)
            }
            _ => (None, Vec::new(), Default::default(), None),
        };
        let progress =
            if totals.planned == 0 { 0.0 } else { (totals.done + totals.failed) as f64 / totals.planned as f64 };
        let in_flight = cfg.as_ref().map(|c| self.in_flight(c)).unwrap_or_default();
        let seen: Vec<UnitSeen> = in_flight.into_iter().map(|(rec, o)| unit_seen(&rec, o, None)).collect();
        let others = runboard::live::other_batches(&seen, run_set.as_deref());
        let resumable_run_sets = self.resumable_run_sets(&run_sets, &seen, &state);
        LiveView {
            resumable_run_sets,
            currency: cfg.as_ref().map_or_else(|| "USD".to_owned(), |c| c.currency.clone()),
            generated_at: now,
            words: state.words(),
            resumable: state.resumable(),
            others,
            state,
            unit: obs.unit,
            run_set,
            outcome: rs.and_then(|r| r.outcome_ok().cloned()),
            cells_matching: cells.len(),
            cells_offset: 0,
            cells,
            totals,
            progress,
            eta_s,
            spend,
            stalls,
            rate_limits,
            calls_unseen,
            problems,
            version,
        }
    }

    /// A cell's typical time for `rs`'s batch, predicted from history (the
    /// preflight's), kept a while: asked at every live view until one of its
    /// cells has ended.
    fn typical_s(
        &self,
        spec: &runboard::console::spec::BatchSpec,
        cfg: &CampaignConfig,
        rs: &str,
        parallel: usize,
    ) -> Option<f64> {
        let mut kept = self.live_made.typical.lock().unwrap_or_else(|p| p.into_inner());
        match kept.as_ref() {
            Some((name, at, t)) if name == rs && at.elapsed() < TYPICAL_KEPT => *t,
            _ => {
                let t = runboard::console::preflight::predict(spec, cfg, &self.history()).typical_cell_s(parallel);
                *kept = Some((rs.to_owned(), Instant::now(), t));
                t
            }
        }
    }

    /// The run sets a Resume button is offered for: stopped, not in flight,
    /// no driver alive, not aborted — and the one the state says is stopped
    /// but resumable, first.
    fn resumable_run_sets(
        &self,
        run_sets: &[std::sync::Arc<crate::campaign::records::RunSetRead>],
        in_flight: &[UnitSeen],
        state: &runboard::live::LiveState,
    ) -> Vec<String> {
        let in_flight_sets: Vec<&str> = in_flight.iter().map(|u| u.run_set.as_str()).collect();
        let mut resumable: Vec<String> = run_sets
            .iter()
            .filter(|r| r.outcome_ok().is_some_and(|o| o.status == runboard::drive::records::BatchStatus::Stopped))
            .filter(|r| !in_flight_sets.contains(&r.name.as_str()) && !self.records.is_live(r))
            .filter(|r| !self.aborted(&r.name, &r.dir))
            .map(|r| r.name.clone())
            .collect();
        if let runboard::live::LiveState::StoppedResumable { run_set, .. } = state {
            if !resumable.contains(run_set) {
                resumable.insert(0, run_set.clone());
            }
        }
        resumable
    }

    /// What the live view depends on, from `stat`, the latest unit's
    /// observation and whether its driver is alive: changes whenever the live
    /// view may have (a page follows it and re-reads the view on a change).
    pub fn live_version(&self) -> String {
        let cfg = self.config().ok();
        let current = cfg.as_ref().and_then(|c| self.current_unit(c)).map(|(_, u)| u);
        let in_flight = cfg.as_ref().map(|c| self.in_flight(c)).unwrap_or_default();
        let mut h = runboard::basics::hash::Fnv1a::new();
        let stamp = |p: &Path| format!("{:?}", crate::files::fsread::stamp_of(p));
        for f in [runsets::ACTIVE_MARKER_FILE, UNITS_DIR, RUNSETS_DIR, CONFIG_FILE] {
            h.write(stamp(&self.root.join(f)).as_bytes());
        }
        if let Some(u) = &current {
            h.write(format!("{:?}{:?}", u.observation, u.outcome).as_bytes());
            let dir = self.root.join(RUNSETS_DIR).join(&u.run_set);
            for f in ["cells", "batch_outcome.json", "spec.json"] {
                h.write(stamp(&dir.join(f)).as_bytes());
            }
            let live = self.records.run_set(&u.run_set).is_some_and(|rs| self.records.is_live(&rs));
            h.write(&[u8::from(live)]);
            // While its driver runs, the running cells' durations grow: a
            // tick every 5 s moves the version so the page shows them moving.
            if live {
                h.write(&(crate::system::clock::now().millis() / LIVE_TICK_MS).to_le_bytes());
            }
        }
        // What the spend guard read of the cells' files, and its stalls.
        h.write(&self.spend_seen.generation().to_le_bytes());
        // The other batches in flight.
        for (rec, o) in &in_flight {
            h.write(format!("{}{o:?}", rec.unit).as_bytes());
        }
        format!("{:016x}", h.finish())
    }
}

/// A unit record as the live view shows it, with what its launcher says.
pub(super) fn unit_seen(
    rec: &UnitRecord,
    observation: runboard::live::Observation,
    outcome: Option<runboard::drive::records::BatchStatus>,
) -> UnitSeen {
    UnitSeen {
        unit: rec.unit.clone(),
        backend: rec.backend(),
        run_set: rec.run_set.clone(),
        spec: rec.spec.clone(),
        started_at: rec.started_at,
        observation,
        outcome,
        paused: None,
    }
}
