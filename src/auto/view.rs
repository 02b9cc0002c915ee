//! What the Auto page, `GET /api/auto` and `runboard auto status` show: the
//! state, the settings' problems, the dry run, each lane and why it is idle,
//! today's launches against the caps — made from the state and the campaign.

use serde::{Deserialize, Serialize};

use super::settings::Settings;
use super::tick::{lane_of, Guard, Planned};
use super::{AutoState, Lane, LogEvent, Mode};
use crate::campaign::{CampaignConfig, ModelKind};
use crate::Timestamp;

/// What one tick did, or (`explain`) would do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TickReport {
    pub mode: Mode,
    /// "would launch …, because …" or "holds, because …".
    pub verdict: String,
    /// Every guard evaluated, in order, with its value.
    pub guards: Vec<Guard>,
    pub launches: Vec<PlannedView>,
    /// The events logged (a dry run logs none).
    pub events: Vec<LogEvent>,
    /// The hold this tick leaves (the dry run: the one the next tick would
    /// record, its `since` kept while its reason stays the same).
    #[serde(default)]
    pub hold: Option<crate::auto::Hold>,
}

impl TickReport {
    /// The Auto page's headline and `runboard auto status`'s first line,
    /// from the same evaluation the tick preview shows — so the two never
    /// disagree, and a save (which answers a fresh evaluation) moves both.
    pub fn headline(&self) -> String {
        if self.mode == super::Mode::Off {
            return "Off: nothing is launched.".into();
        }
        match (&self.hold, self.verdict.strip_prefix("holds, because ")) {
            (Some(h), _) => format!("Holds since {}: {}.", h.since.to_display(), h.words),
            (None, Some(why)) => format!("Holds: {why}."),
            (None, None) if self.verdict.starts_with("would") => {
                format!("Not holding: the next tick {}.", self.verdict)
            }
            (None, None) => format!("Not holding: {}.", self.verdict),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlannedView {
    pub lane: String,
    pub model: String,
    pub endpoint: Option<String>,
    pub label: String,
    pub cells: usize,
    pub why: String,
}

impl From<&Planned> for PlannedView {
    fn from(p: &Planned) -> Self {
        Self {
            lane: p.lane.clone(),
            model: p.model.clone(),
            endpoint: p.endpoint.clone(),
            label: p.draft.spec.label.clone(),
            cells: p.draft.spec.cells.len(),
            why: p.why.clone(),
        }
    }
}

/// One lane (an endpoint, or `api:<model>` for a paid route) and where it stands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LaneView {
    pub lane: String,
    pub endpoint: Option<String>,
    /// The enabled models it can run.
    pub models: Vec<String>,
    pub status: LaneStatus,
    /// Its current batch's unit, when busy.
    pub unit: Option<String>,
    /// Until when it is quarantined or flagged.
    pub until: Option<Timestamp>,
    /// Since when it has been idle: its last batch's end (none: none ended on it, or busy).
    #[serde(default)]
    pub idle_since: Option<Timestamp>,
    /// Why it is not running a batch, in words (none when busy).
    pub idle_reason: Option<String>,
}

/// Where a lane stands (its `unit` or `until` beside it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LaneStatus {
    /// Running one of the autopilot's batches (`unit`).
    Busy,
    /// Its endpoint is quarantined (`until`).
    Quarantined,
    /// Every model it runs is credit-flagged (`until`).
    CreditFlagged,
    /// Every model it runs reached its daily cap (until the next UTC midnight).
    Capped,
    /// The next tick may launch on it.
    Free,
}

impl LaneStatus {
    pub fn word(self) -> &'static str {
        match self {
            Self::Busy => "busy",
            Self::Quarantined => "quarantined",
            Self::CreditFlagged => "credit_flagged",
            Self::Capped => "capped",
            Self::Free => "free",
        }
    }
}

/// Today's launches of a model against its caps.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapView {
    pub model: String,
    /// Batches the autopilot launched today (UTC).
    pub auto_today: u32,
    /// The autopilot's own cap (paid models).
    pub auto_cap: Option<u32>,
    /// Batches every launcher launched today, and the catalogue's cap.
    pub all_today: u32,
    pub catalogue_cap: Option<u32>,
}

/// `GET /api/auto`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AutoView {
    pub generated_at: Timestamp,
    pub state: AutoState,
    /// Why the saved settings cannot be used now (empty: they can).
    pub settings_problems: Vec<String>,
    /// The dry run: what a tick now would do and why.
    pub explain: TickReport,
    pub lanes: Vec<LaneView>,
    pub caps: Vec<CapView>,
    /// The tick interval of this server's loop, in seconds (none: not running).
    pub tick_s: Option<f64>,
}

/// `GET /api/auto/log`: the newest events first.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogPage {
    pub total: usize,
    pub offset: usize,
    pub events: Vec<LogEvent>,
    /// Lines of the log that do not parse (skipped, counted).
    pub unreadable: usize,
}

/// The lanes the settings enable and where each stands.
pub fn lanes(state: &AutoState, settings: Option<&Settings>, cfg: &CampaignConfig, now: Timestamp) -> Vec<LaneView> {
    let Some(settings) = settings else { return Vec::new() };
    let mut out: Vec<LaneView> = Vec::new();
    for m in &settings.models {
        let endpoints: Vec<Option<String>> = match cfg.model(m).map(|e| e.kind) {
            Some(ModelKind::Local) => cfg
                .endpoints
                .iter()
                .filter(|e| e.models.contains(m) && e.request_preset.is_some())
                .map(|e| Some(e.name.clone()))
                .collect(),
            _ => vec![None],
        };
        for e in endpoints {
            let lane = lane_of(m, e.as_deref());
            match out.iter_mut().find(|l| l.lane == lane) {
                Some(l) => l.models.push(m.clone()),
                None => out.push(LaneView {
                    lane,
                    endpoint: e,
                    models: vec![m.clone()],
                    status: LaneStatus::Free,
                    unit: None,
                    until: None,
                    idle_since: None,
                    idle_reason: None,
                }),
            }
        }
    }
    let day = now.day_key();
    for l in &mut out {
        match state.lane(&l.lane, l.endpoint.as_deref(), now) {
            Lane::Running(c) => {
                l.status = LaneStatus::Busy;
                l.unit = Some(c.unit.clone());
                continue;
            }
            Lane::Quarantined { until, reason, .. } => {
                l.status = LaneStatus::Quarantined;
                l.until = Some(until);
                // The scheduling model words it: a cooldown, or an open circuit.
                let model = super::tick::scheduler_of(state, &[(l.lane.clone(), l.models.clone())], now);
                let why = model.idle_reason(&l.lane, now).unwrap_or_default();
                l.idle_reason = Some(format!("{why} ({reason})"));
                continue;
            }
            Lane::Idle { since, .. } => l.idle_since = since,
        }
        let flagged: Vec<_> = l.models.iter().filter_map(|m| state.credit_flags.get(m).map(|f| (m, f))).collect();
        if !flagged.is_empty() && flagged.len() == l.models.len() {
            let (m, f) = flagged[0];
            l.status = LaneStatus::CreditFlagged;
            l.until = Some(f.until);
            l.idle_reason = Some(format!("{m} is credit-flagged until {}", f.until.to_display()));
            continue;
        }
        let capped = l.models.iter().all(|m| {
            let n = state.daily_launches.get(&day).and_then(|d| d.get(m)).copied().unwrap_or(0);
            settings.daily_caps.get(m).is_some_and(|c| n >= *c)
        });
        if capped {
            l.status = LaneStatus::Capped;
            l.until = Some(now.next_utc_midnight());
            l.idle_reason = Some("its models' daily caps are reached until the next UTC midnight".into());
            continue;
        }
        l.idle_reason = Some(match (&state.mode, &state.hold) {
            (Mode::Off, _) => "auto mode is off".into(),
            (_, Some(h)) => h.words.clone(),
            _ => "free: the next tick may launch on it".into(),
        });
    }
    out
}

/// Today's launches against the caps, for the enabled models.
pub fn caps(
    state: &AutoState,
    settings: Option<&Settings>,
    cfg: &CampaignConfig,
    all_today: &std::collections::BTreeMap<String, u32>,
    now: Timestamp,
) -> Vec<CapView> {
    let Some(settings) = settings else { return Vec::new() };
    let day = now.day_key();
    settings
        .models
        .iter()
        .map(|m| CapView {
            model: m.clone(),
            auto_today: state.daily_launches.get(&day).and_then(|d| d.get(m)).copied().unwrap_or(0),
            auto_cap: settings.daily_caps.get(m).copied(),
            all_today: all_today.get(m).copied().unwrap_or(0),
            catalogue_cap: cfg.model(m).and_then(|e| e.daily_cap),
        })
        .collect()
}
