//! Live spend and stalls (`runboard::live::spend`): each running cell's calls
//! counted from what it writes — only the bytes appended to its progress
//! file since the last read, or the call files added since — the caps
//! checked against the batch's, today's and the campaign's spend, and the
//! guard that pauses a batch at a cap and names the cells gone silent.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use runboard::basics::timefmt::Timestamp;
use runboard::campaign::{CampaignConfig, StallAction};
use runboard::drive::records::{CellRecord, CellStatus};
use runboard::gateway::calls::{self, CallsNow, EndpointCalls, Quiet};
use runboard::live::spend::{self, BatchSpend, CapUse, CellSpend, SpendNow, Stall};
use runboard::live::telemetry::CallTime;

use crate::live::tally::CellReader;

use super::records::RunSetRead;
use super::Campaign;

/// One run set's spend as summed from its cells' records (an ended run set
/// is summed again only when its records change).
#[derive(Clone, Default)]
struct Summed {
    tokens: u64,
    cost: Option<f64>,
    day_tokens: u64,
    day_cost: Option<f64>,
}

#[derive(Default)]
pub(super) struct SpendMemo {
    cells: Mutex<HashMap<(String, String), CellReader>>,
    /// The gaps between calls seen per task (for its stall threshold).
    task_gaps: Mutex<HashMap<String, Vec<f64>>>,
    /// Ended run sets as summed: by the records read and the day.
    summed: Mutex<HashMap<String, (usize, String, Summed)>>,
    /// Each live run set's gateway's calls as last read (a change moves the version).
    calls_seen: Mutex<HashMap<String, CallsNow>>,
    /// What each live run set's gateway was last told the others spent.
    others_told: Mutex<HashMap<String, runboard::gateway::purse::Others>>,
    /// Stalls already said ((run set, cell) → the write it followed), so each is said once.
    said: Mutex<HashMap<(String, String), Option<Timestamp>>>,
    /// The stalls of the guard's last pass.
    stalls_seen: Mutex<Vec<(String, String)>>,
    /// Moves on whenever a cell wrote or a stall began or ended: part of
    /// the live version, so pages see spend and stalls as the guard does.
    generation: std::sync::atomic::AtomicU64,
}

impl SpendMemo {
    pub(super) fn generation(&self) -> u64 {
        self.generation.load(std::sync::atomic::Ordering::Relaxed)
    }

    fn moved(&self) {
        self.generation.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// A batch's spend and stalls, as the live view shows them.
pub struct LiveSpend {
    /// Per planned cell, in plan order.
    pub cells: Vec<CellSpend>,
    pub batch: BatchSpend,
    pub stalls: Vec<Stall>,
    /// Running cells that are quiet for a reason their gateway knows (a
    /// call in flight or held): never stalled by silence.
    pub quiet: Vec<(String, Quiet)>,
    /// Running cells' live samples reports (`{out}/samples.json`).
    pub so_far: Vec<(String, runboard::drive::result::SamplesSoFar)>,
    /// Whether its gateway's calls file is fresh (none: not running).
    pub gateway_up: Option<bool>,
    /// The batch's endpoints' rate limits, as its gateway says them now.
    pub limits: std::collections::BTreeMap<String, EndpointCalls>,
    /// Per planned cell: its newest write (when, what).
    pub last_writes: Vec<Option<(Timestamp, &'static str)>>,
    /// What could not be counted — a progress line that is not a call, a call
    /// file that does not read — each with its file (relative to the root).
    pub problems: Vec<String>,
}

fn model_of(spec: Option<&runboard::console::spec::BatchSpec>, rec: Option<&CellRecord>) -> Option<String> {
    spend::cell_model(spec.and_then(|s| s.model.as_deref()), rec.map(|r| &r.factors))
}

impl Campaign {
    /// Reads what the running cells of `rs` wrote since the last poll, and
    /// makes their spend, the batch's and its stalls.
    pub fn live_spend(
        &self,
        cfg: &CampaignConfig,
        rs: &RunSetRead,
        spec: Option<&runboard::console::spec::BatchSpec>,
        running: bool,
        eta_s: Option<f64>,
        now: Timestamp,
    ) -> LiveSpend {
        let today = now.day_key();
        let by_id: HashMap<&str, &CellRecord> = rs.cells.iter().map(|r| (r.cell.as_str(), r)).collect();
        let planned: Vec<(String, Option<&CellRecord>, Option<String>)> = match spec {
            Some(s) => s
                .cells
                .iter()
                .map(|c| {
                    let task = c.factors.get("task").map(runboard::console::matrix::value_text);
                    (c.id.clone(), by_id.get(c.id.as_str()).copied(), task)
                })
                .collect(),
            None => rs
                .cells
                .iter()
                .map(|r| (r.cell.clone(), Some(r), r.factors.get("task").map(runboard::console::matrix::value_text)))
                .collect(),
        };
        let gateway = self.calls_now(rs, running, now);
        let mut quiet = Vec::new();
        let mut so_far = Vec::new();
        let mut readers = self.spend_seen.cells.lock().unwrap_or_else(|p| p.into_inner());
        let mut task_gaps = self.spend_seen.task_gaps.lock().unwrap_or_else(|p| p.into_inner());
        let out_dir = rs.dir.join("out");
        let mut cells = Vec::with_capacity(planned.len());
        let mut last_writes = Vec::with_capacity(planned.len());
        let mut stalls = Vec::new();
        let mut problems = Vec::new();
        let mut first_call: Option<Timestamp> = None;
        // One threshold per task per poll: its quantile sorts up to
        // TASK_GAPS_KEPT gaps, which per running cell would grow the poll
        // with the calls written.
        let mut thresholds: HashMap<Option<&str>, (f64, String)> = HashMap::new();
        for (id, rec, task) in &planned {
            let status = rec.map(|r| r.status);
            let is_running = status == Some(CellStatus::Running);
            let key = (rs.name.clone(), id.clone());
            // A cell is read while it runs, and once more after it ended
            // (its last calls); never before it started.
            if is_running || (status.is_some() && status != Some(CellStatus::Pending)) {
                let reader = readers.entry(key.clone()).or_default();
                // A resumed cell is read again.
                if !reader.done || is_running {
                    let gaps = task_gaps.entry(task.clone().unwrap_or_default()).or_default();
                    if reader.poll(self.records.within(), &out_dir.join(id), gaps, now) {
                        self.spend_seen.moved();
                    }
                    reader.done = !is_running;
                }
            }
            let reader = readers.get(&key);
            // A call its gateway answered (a 429 too) says the cell is alive.
            let answered = gateway
                .as_ref()
                .and_then(|g| g.cells.get(id))
                .and_then(|c| c.last_answered)
                .map(|t| (t, "a call answered"));
            if let Some(f) = reader.and_then(|r| r.tally.first_at) {
                first_call = Some(first_call.map_or(f, |x| x.min(f)));
            }
            let prices = spend::prices_of(cfg, model_of(spec, *rec).as_deref());
            cells.push(spend::cell_spend(*rec, reader.map(|r| (&r.tally, r.source)), prices, &today));
            let last = reader.and_then(|r| r.last_write).into_iter().chain(answered).max_by_key(|(t, _)| *t);
            last_writes.push(last);
            if let Some(r) = reader {
                let dir = format!("{}/{}/out/{id}", runboard::runsets::RUNSETS_DIR, rs.name);
                problems.extend(r.tally.problems.iter().map(|p| format!("{dir}/{p}")));
            }
            if is_running {
                let report = out_dir.join(id).join(runboard::drive::result::SAMPLES_FILE);
                if let Some(r) = self
                    .records
                    .within()
                    .read(&report)
                    .ok()
                    .and_then(|b| runboard::drive::result::SamplesSoFar::parse(&b))
                {
                    so_far.push((id.clone(), r));
                }
            }
            // A call in flight or held at the gateway says why the cell is quiet.
            let why = gateway
                .as_ref()
                .filter(|_| is_running)
                .and_then(|g| g.cells.get(id).and_then(|c| calls::quiet(c, g.endpoints.get(&c.endpoint), now)));
            if let Some(q) = why {
                quiet.push((id.clone(), q));
            } else if is_running && running {
                let started = rec.and_then(|r| r.started_at.as_deref()).and_then(Timestamp::parse_rfc3339);
                let threshold = thresholds
                    .entry(task.as_deref())
                    .or_insert_with(|| {
                        let gaps =
                            task_gaps.get(task.as_deref().unwrap_or_default()).map(Vec::as_slice).unwrap_or_default();
                        spend::stall_after(&cfg.stall, task.as_deref(), gaps)
                    })
                    .clone();
                stalls.extend(spend::stalled(id, started, last, threshold, now));
            }
        }
        drop((readers, task_gaps));
        let mut batch = spend::batch_spend(&cells, first_call, running, eta_s, now);
        batch.caps = self.caps_now(cfg, &batch, now);
        let gateway_up = running.then_some(gateway.is_some());
        let limits = gateway.map(|g| g.endpoints).unwrap_or_default();
        LiveSpend { cells, batch, stalls, quiet, so_far, gateway_up, limits, last_writes, problems }
    }

    /// The gateway's word on `rs`'s calls under way, when it is fresh (while
    /// the batch runs); a change from the last word seen moves the live
    /// version, so a page shows it.
    fn calls_now(&self, rs: &RunSetRead, running: bool, now: Timestamp) -> Option<CallsNow> {
        let gateway: Option<CallsNow> = running
            .then(|| self.records.within().read(&rs.dir.join(calls::CALLS_FILE)).ok())
            .flatten()
            .and_then(|b| serde_json::from_slice::<CallsNow>(&b).ok())
            .and_then(|c| c.fresh(now));
        let mut seen = self.spend_seen.calls_seen.lock().unwrap_or_else(|p| p.into_inner());
        let changed = match (&gateway, seen.get(&rs.name)) {
            (Some(g), Some(w)) => g.cells != w.cells || g.endpoints != w.endpoints,
            (None, None) => false,
            _ => true,
        };
        if changed {
            match &gateway {
                Some(g) => seen.insert(rs.name.clone(), g.clone()),
                None => seen.remove(&rs.name),
            };
            self.spend_seen.moved();
        }
        gateway
    }

    /// Every cap of `[budget]` against the spend now: `batch` is the
    /// batch's own (as just made); today's and the campaign's sum every run
    /// set's, its own included.
    fn caps_now(&self, cfg: &CampaignConfig, batch: &BatchSpend, now: Timestamp) -> Vec<CapUse> {
        if !cfg.budget.caps_spend() {
            return Vec::new();
        }
        let today = now.day_key();
        let mut spent = SpendNow { batch_tokens: batch.total_tokens, batch_cost: batch.cost, ..Default::default() };
        let add = |x: Option<f64>, y: Option<f64>| match (x, y) {
            (None, None) => None,
            (a, b) => Some(a.unwrap_or(0.0) + b.unwrap_or(0.0)),
        };
        for rs in self.records.run_sets() {
            let s = self.summed(cfg, &rs, &today);
            spent.campaign_tokens += s.tokens;
            spent.campaign_cost = add(spent.campaign_cost, s.cost);
            spent.day_tokens += s.day_tokens;
            spent.day_cost = add(spent.day_cost, s.day_cost);
        }
        spend::check_caps(&cfg.budget, &spent, |x| cfg.money(x))
    }

    /// The run set's spend from its cells (what was counted of those read
    /// here, else their reports), summed again only when its records or
    /// the day changed, or while any of its cells runs.
    fn summed(&self, cfg: &CampaignConfig, rs: &Arc<RunSetRead>, today: &str) -> Summed {
        let key = Arc::as_ptr(rs) as usize;
        let running = rs.cells.iter().any(|c| c.status == CellStatus::Running);
        if !running {
            let held = self.spend_seen.summed.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((k, d, s)) = held.get(&rs.name) {
                if *k == key && d == today {
                    return s.clone();
                }
            }
        }
        let spec = rs.spec.as_ref().and_then(|s| s.as_ref().ok());
        let readers = self.spend_seen.cells.lock().unwrap_or_else(|p| p.into_inner());
        let mut s = Summed::default();
        for rec in &rs.cells {
            let reader = readers.get(&(rs.name.clone(), rec.cell.clone()));
            let prices = spend::prices_of(cfg, model_of(spec, Some(rec)).as_deref());
            let c = spend::cell_spend(Some(rec), reader.map(|r| (&r.tally, r.source)), prices, today);
            s.tokens += c.tokens.total();
            s.day_tokens += c.today_tokens;
            if let Some(x) = c.cost {
                s.cost = Some(s.cost.unwrap_or(0.0) + x);
                s.day_cost = Some(s.day_cost.unwrap_or(0.0) + c.today_cost.unwrap_or(0.0));
            }
        }
        drop(readers);
        if !running {
            let mut held = self.spend_seen.summed.lock().unwrap_or_else(|p| p.into_inner());
            held.insert(rs.name.clone(), (key, today.to_owned(), s.clone()));
        }
        s
    }

    /// Tells a live run set's gateway what every other run set spent, today
    /// and in all, so its day's and campaign's caps hold at each call
    /// (`runboard::gateway::purse`): written to the run set's
    /// `.gateway-budget.json` when it changed, while such a cap is set.
    fn tell_gateway(&self, cfg: &CampaignConfig, rs: &Arc<RunSetRead>, now: Timestamp) {
        use runboard::gateway::purse::{Others, Spent};
        if !cfg.budget.caps_other_run_sets() {
            return;
        }
        let today = now.day_key();
        let mut o = Others { day: today.clone(), ..Default::default() };
        for other in self.records.run_sets().into_iter().filter(|x| x.name != rs.name) {
            let s = self.summed(cfg, &other, &today);
            o.day_spent.add(Spent { cost: s.day_cost, tokens: s.day_tokens });
            o.campaign_spent.add(Spent { cost: s.cost, tokens: s.tokens });
        }
        let mut told = self.spend_seen.others_told.lock().unwrap_or_else(|p| p.into_inner());
        if told.get(&rs.name) == Some(&o) {
            return;
        }
        let path = rs.dir.join(crate::drive::gateway::OTHERS_FILE);
        match serde_json::to_vec(&o).map(|bytes| crate::files::atomic::write_atomic(&path, &bytes)) {
            Ok(Ok(())) => {
                told.insert(rs.name.clone(), o);
            }
            Ok(Err(e)) => tracing::warn!("telling the gateway of {} what others spent: {e}", rs.name),
            Err(e) => tracing::warn!("encoding what others spent: {e}"),
        }
    }

    /// The day's and the campaign's caps as used now, and what they leave
    /// for a next batch: the preflight refuses one predicted to spend more.
    pub(super) fn budget_refusals(
        &self,
        cfg: &CampaignConfig,
        predicted_cost: Option<f64>,
        tokens: u64,
    ) -> Vec<String> {
        if !cfg.budget.caps_spend() {
            return Vec::new();
        }
        let caps = self.caps_now(cfg, &BatchSpend::default(), crate::system::clock::now());
        let mut out: Vec<String> = caps
            .iter()
            .filter(|c| c.reached && c.scope != spend::CapScope::Batch)
            .map(|c| format!("budget: {} (reached)", c.words))
            .collect();
        if out.is_empty() {
            out = spend::refusals_for_left(spend::left_for_next(&caps), predicted_cost, tokens, |x| cfg.money(x));
        }
        out
    }

    /// A day or campaign cap reached now, in words (the autopilot holds on it).
    pub fn budget_reached(&self, cfg: &CampaignConfig) -> Option<String> {
        let caps = self.caps_now(cfg, &BatchSpend::default(), crate::system::clock::now());
        caps.into_iter().find(|c| c.reached && c.scope != spend::CapScope::Batch).map(|c| c.words)
    }

    /// One pass of the spend guard over the batches in flight: a batch whose
    /// spend reached a cap is paused (resumable) with the cap, the spend and
    /// the cells that spent most in its reason; each new stall is said (and,
    /// with `[stall] action = "stop"`, its cell's processes ended). Returns
    /// what it did, in words.
    pub fn guard_spend(&self) -> Vec<GuardEvent> {
        let Ok(cfg) = self.config() else { return Vec::new() };
        let now = crate::system::clock::now();
        let mut out = Vec::new();
        let mut stalls_now = Vec::new();
        let live_sets: Vec<Arc<RunSetRead>> =
            self.records.run_sets().into_iter().filter(|rs| self.records.is_live(rs)).collect();
        for rs in live_sets {
            let spec = rs.spec.as_ref().and_then(|s| s.as_ref().ok());
            let made = self.live_spend(&cfg, &rs, spec, true, None, now);
            self.tell_gateway(&cfg, &rs, now);
            if let Some(cap) = made.batch.caps.iter().find(|c| c.reached) {
                let mut top: Vec<(usize, f64)> = made
                    .cells
                    .iter()
                    .enumerate()
                    .map(|(i, c)| {
                        (
                            i,
                            if cap.measure == spend::CapMeasure::Money {
                                c.cost.unwrap_or(0.0)
                            } else {
                                c.tokens.total() as f64
                            },
                        )
                    })
                    .filter(|(_, x)| *x > 0.0)
                    .collect();
                top.sort_by(|a, b| b.1.total_cmp(&a.1));
                let ids: Vec<String> =
                    spec.map(|s| top.iter().take(3).map(|(i, _)| s.cells[*i].id.clone()).collect()).unwrap_or_default();
                let model = spec.and_then(|s| s.model.clone());
                let by = match (model, ids.is_empty()) {
                    (Some(m), false) => format!(" — by {m}, most in {}", ids.join(", ")),
                    (Some(m), true) => format!(" — by {m}"),
                    (None, false) => format!(" — most in {}", ids.join(", ")),
                    (None, true) => String::new(),
                };
                let reason = format!("paused by the budget: {}{by}", cap.words);
                let paused = self.pause_with_reason(
                    &runboard::console::launch::PauseRequest { run_set: Some(rs.name.clone()) },
                    &reason,
                );
                out.push(GuardEvent::BudgetPaused {
                    run_set: rs.name.clone(),
                    cap: cap.key.clone(),
                    words: match paused {
                        Ok(_) => reason,
                        Err(e) => format!("{reason}; the pause failed: {e}"),
                    },
                });
                continue;
            }
            let mut said = self.spend_seen.said.lock().unwrap_or_else(|p| p.into_inner());
            for st in made.stalls {
                let key = (rs.name.clone(), st.cell.clone());
                stalls_now.push(key.clone());
                let i = spec.and_then(|s| s.cells.iter().position(|c| c.id == st.cell));
                let since = i.and_then(|i| made.last_writes[i]).map(|(t, _)| t);
                if said.get(&key) == Some(&since) {
                    continue;
                }
                said.insert(key, since);
                let mut words = st.words.clone();
                if cfg.stall.action == StallAction::Stop {
                    let ended = super::control::end_cell(&rs.name, &st.cell);
                    words.push_str(&format!(
                        "; its {} process(es) were sent SIGTERM ([stall] action = \"stop\")",
                        ended
                    ));
                }
                out.push(GuardEvent::Stalled { run_set: rs.name.clone(), cell: st.cell, words });
            }
        }
        let mut seen = self.spend_seen.stalls_seen.lock().unwrap_or_else(|p| p.into_inner());
        if *seen != stalls_now {
            *seen = stalls_now;
            self.spend_seen.moved();
        }
        out
    }
}

impl Campaign {
    /// The calls each live batch's cells ended since `since` (each batch read
    /// on first, as a poll of the guard reads it), by the endpoint each cell
    /// runs on — its pool's `endpoints[i mod n]`, else the spec's `endpoint`
    /// — with the run sets using each endpoint: endpoint telemetry's input.
    pub fn recent_calls_by_endpoint(
        &self,
        cfg: &CampaignConfig,
        since: Timestamp,
        now: Timestamp,
    ) -> BTreeMap<String, (Vec<String>, Vec<CallTime>)> {
        let mut out: BTreeMap<String, (Vec<String>, Vec<CallTime>)> = BTreeMap::new();
        let live_sets: Vec<Arc<RunSetRead>> =
            self.records.run_sets().into_iter().filter(|rs| self.records.is_live(rs)).collect();
        for rs in live_sets {
            let Some(spec) = rs.spec.as_ref().and_then(|s| s.as_ref().ok()) else { continue };
            self.live_spend(cfg, &rs, Some(spec), true, None, now);
            let endpoints = spec.endpoints_used();
            if endpoints.is_empty() {
                continue;
            }
            for e in &endpoints {
                out.entry(e.clone()).or_default().0.push(rs.name.clone());
            }
            let readers = self.spend_seen.cells.lock().unwrap_or_else(|p| p.into_inner());
            for (i, cell) in spec.cells.iter().enumerate() {
                let Some(r) = readers.get(&(rs.name.clone(), cell.id.clone())) else { continue };
                let calls = &mut out.entry(endpoints[i % endpoints.len()].clone()).or_default().1;
                calls.extend(r.tally.recent.iter().filter(|c| c.at > since));
            }
        }
        out
    }
}

impl Campaign {
    /// What the live batches' gateways last said of each endpoint (as the
    /// spend guard read them; a word older than its freshness is left out),
    /// summed over the batches that use it.
    pub fn gateway_calls_by_endpoint(&self, now: Timestamp) -> BTreeMap<String, EndpointCalls> {
        let seen = self.spend_seen.calls_seen.lock().unwrap_or_else(|p| p.into_inner());
        let mut out: BTreeMap<String, EndpointCalls> = BTreeMap::new();
        for calls in seen.values().filter_map(|c| c.clone().fresh(now)) {
            for (name, e) in calls.endpoints {
                let sum = out.entry(name).or_insert_with(|| EndpointCalls {
                    limit: e.limit,
                    max: e.max,
                    ..Default::default()
                });
                sum.limit = match (sum.limit, e.limit) {
                    (Some(a), Some(b)) => Some(a.min(b)),
                    (a, b) => a.or(b),
                };
                sum.in_flight += e.in_flight;
                sum.waiting += e.waiting;
                sum.overloads_last_min += e.overloads_last_min;
                sum.held_until = sum.held_until.max(e.held_until);
            }
        }
        out
    }
}

/// What one pass of the spend guard did.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum GuardEvent {
    BudgetPaused { run_set: String, cap: String, words: String },
    Stalled { run_set: String, cell: String, words: String },
}
