//! `GET /api/catalogue`: the provider catalogue with what the campaign knows
//! of each model and endpoint now (the decision is `runboard::console::catalogue`).
//! The endpoints are probed at `/models` all at once, each bounded by
//! [`super::pool::PROBE_TIMEOUT`], and the probes are kept for
//! [`PROBES_KEPT`]: a page polled by many does not probe for each.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use runboard::basics::timefmt::Timestamp;
use runboard::console::catalogue::{self, CatalogueInputs, CatalogueView, RunSetUse};
use runboard::console::pool::Probe;
use runboard::drive::records::CellStatus;

use super::Campaign;
use runboard::api::ApiError;

/// How long the endpoints' probes are shown before they are made again.
pub const PROBES_KEPT: Duration = Duration::from_secs(30);

/// The probes as last made: when, for which endpoints (name and URL), what they gave.
pub type ProbesMade = std::sync::Mutex<Option<(Instant, Timestamp, Vec<(String, String)>, BTreeMap<String, Probe>)>>;

impl Campaign {
    /// The catalogue view; `fresh` probes the endpoints again now.
    pub fn catalogue(&self, fresh: bool) -> Result<CatalogueView, ApiError> {
        let cfg = self.config()?;
        let now = crate::system::clock::now();
        let (index, _) = self.records.run_index();
        let launches_today = runboard::runsets::launches_today(&index, now);
        // The autopilot's state as it is on disk (its repairs are the Auto
        // page's to name).
        let auto_path = self.records.root().join(crate::auto::auto_state::STATE_FILE);
        let auto = crate::files::fsread::read_regular(&auto_path).ok().map(|b| runboard::auto::load(Some(&b)).state);
        let in_flight: Vec<String> = self.in_flight(&cfg).into_iter().map(|(rec, _)| rec.run_set).collect();
        // Each run set's launch (its first entry: a resume keeps the launch's time).
        let mut launches = std::collections::HashMap::new();
        for e in &index {
            launches.entry(e.run_set.as_str()).or_insert(e);
        }
        let usage: Vec<RunSetUse> = self
            .records
            .run_sets()
            .iter()
            .map(|rs| {
                let spec = rs.spec.as_ref().and_then(|s| s.as_ref().ok());
                let launch = launches.get(rs.name.as_str()).copied();
                let ended = rs.cells.iter().filter(|c| matches!(c.status, CellStatus::Done | CellStatus::Failed));
                let model = spec
                    .and_then(|s| s.model.clone())
                    .or_else(|| launch.map(|e| e.model.clone()).filter(|m| !m.is_empty()));
                let prices = runboard::live::spend::prices_of(&cfg, model.as_deref());
                RunSetUse {
                    run_set: rs.name.clone(),
                    cost: prices.map(|p| {
                        ended
                            .clone()
                            .filter_map(|c| runboard::live::spend::cell_spend(Some(c), None, Some(p), "").cost)
                            .sum()
                    }),
                    model,
                    endpoints: match spec {
                        Some(s) => s.endpoints_used(),
                        None => launch.map(|e| e.endpoint.clone()).filter(|e| !e.is_empty()).into_iter().collect(),
                    },
                    cells: ended.clone().count(),
                    tokens: ended.filter_map(|c| c.tokens_total()).sum(),
                    started_at: launch.map(|e| e.launched_at),
                    in_flight: in_flight.contains(&rs.name) || self.records.is_live(rs),
                }
            })
            .collect();
        let targets: Vec<(String, String)> = cfg.endpoints.iter().map(|e| (e.name.clone(), e.url.clone())).collect();
        let (probed_at, probes) = {
            let mut made = self.probes_made.lock().unwrap_or_else(|p| p.into_inner());
            match made.as_ref() {
                Some((at, stamp, t, p)) if !fresh && *t == targets && at.elapsed() < PROBES_KEPT => {
                    (Some(*stamp), p.clone())
                }
                _ => {
                    let names: Vec<String> = targets.iter().map(|(n, _)| n.clone()).collect();
                    let p = super::pool::probe(&cfg, &names);
                    *made = Some((Instant::now(), now, targets, p.clone()));
                    (Some(now), p)
                }
            }
        };
        let (no_flags, no_failures) = (BTreeMap::new(), BTreeMap::new());
        Ok(catalogue::catalogue(&CatalogueInputs {
            cfg: &cfg,
            launches_today: &launches_today,
            credit_flags: auto.as_ref().map_or(&no_flags, |a| &a.credit_flags),
            endpoint_failures: auto.as_ref().map_or(&no_failures, |a| &a.endpoint_failures),
            usage: &usage,
            probes: &probes,
            probed_at: probed_at.filter(|_| !cfg.endpoints.is_empty()),
            busy: &self.busy_endpoints(&cfg),
            now,
        }))
    }
}
