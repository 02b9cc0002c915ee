//! What the autopilot's tick observes of the campaign, and the launch path
//! it uses while it already holds the campaign lock.

use std::collections::BTreeMap;

use runboard::auto::tick::{LiveNow, OutcomeNow, UnitNow};
use runboard::auto::{AutoState, Backfill};
use runboard::campaign::CampaignConfig;
use runboard::console::launch::{LaunchRequest, Launched};
use runboard::console::spec::BatchSpec;
use runboard::runsets;
use serde_json::Value;

use runboard::runsets::DRAFTS_DIR;

use super::{ApiError, Campaign, CampaignLock};

/// The closeout record a run set's publication writes.
pub const CLOSEOUT_FILE: &str = "closeout_progress.json";
/// The publication stage whose failure is backfilled.
pub const PUBLISH_STAGE: &str = "publish_experiment_results";

impl Campaign {
    /// Each unit the state names as current: what its launcher says, its
    /// batch's outcome, and why it died if it did.
    pub fn auto_units(&self, state: &AutoState, cfg: &CampaignConfig) -> BTreeMap<String, UnitNow> {
        let names: Vec<&str> = state.current.iter().chain(state.currents.values()).map(|c| c.unit.as_str()).collect();
        let units = self.records.units();
        let mut out = BTreeMap::new();
        for name in names {
            let Some(rec) = units.iter().find(|u| u.unit == name) else {
                out.insert(
                    name.to_owned(),
                    UnitNow {
                        observation: runboard::live::Observation::Unknown {
                            reason: format!("no unit record .runboard/units/{name}.json can be read"),
                        },
                        outcome: None,
                        failure: None,
                    },
                );
                continue;
            };
            let observation = self.observe(rec, cfg);
            let outcome = self.records.run_set(&rec.run_set).and_then(|rs| {
                rs.outcome_ok().map(|o| OutcomeNow {
                    status: o.status,
                    reason: o.reason.clone(),
                    attempted: o.attempted,
                    passes: o.completed,
                })
            });
            let failure = match &observation {
                runboard::live::Observation::Finished { .. } if !observation.succeeded() && outcome.is_none() => {
                    let seen = runboard::live::UnitSeen {
                        unit: rec.unit.clone(),
                        backend: rec.backend(),
                        run_set: rec.run_set.clone(),
                        spec: rec.spec.clone(),
                        started_at: rec.started_at,
                        observation: observation.clone(),
                        outcome: None,
                        paused: None,
                    };
                    let f = self.failure(rec, &seen, cfg);
                    Some(format!("{} {}", f.title, f.reason.unwrap_or_default()).trim().to_owned())
                }
                _ => None,
            };
            out.insert(name.to_owned(), UnitNow { observation, outcome, failure });
        }
        out
    }

    /// The live state, as the tick needs it.
    pub fn auto_live(&self) -> LiveNow {
        let view = self.live_shared();
        LiveNow {
            state: view.state.kind(),
            unit: view.unit.as_ref().map(|u| u.unit.clone()),
            run_set: view.run_set.clone(),
            words: view.words.clone(),
        }
    }

    /// Run sets whose `closeout_progress.json` records a failed publication
    /// stage (a damaged file is not a failure: it is skipped).
    pub fn closeout_failures(&self) -> Vec<Backfill> {
        let mut out = Vec::new();
        for rs in self.records.run_sets() {
            let Ok(bytes) = self.records.within().read(&rs.dir.join(CLOSEOUT_FILE)) else { continue };
            let Ok(v) = runboard::basics::json::from_slice_lenient::<Value>(&bytes) else { continue };
            let stage = v.get("stages").and_then(|s| s.get(PUBLISH_STAGE));
            if stage.and_then(|s| s.get("status")).and_then(Value::as_str) == Some("failed") {
                let text = |k: &str| stage.and_then(|s| s.get(k)).and_then(Value::as_str).unwrap_or("").to_owned();
                out.push(Backfill { run_set: rs.name.clone(), stage: PUBLISH_STAGE.into(), message: text("message") });
            }
        }
        out
    }

    /// Today's launches per model, every launcher's.
    pub fn launches_today(&self) -> BTreeMap<String, u32> {
        let (index, _) = self.records.run_index();
        runsets::launches_today(&index, crate::system::clock::now())
    }

    /// Writes a spec as a draft (`specs/drafts/<label>-<stamp>.json`) while
    /// the lock is held; its path under the root.
    pub fn write_draft_locked(&self, spec: &BatchSpec, _lock: &CampaignLock) -> Result<String, ApiError> {
        let dir = self.root.join(DRAFTS_DIR);
        std::fs::create_dir_all(&dir).map_err(|e| crate::web::error::internal("making specs/drafts", e))?;
        let stamp = crate::system::clock::now().to_rfc3339().replace([':', '-'], "");
        let base = format!("{}-{}", spec.label, &stamp[..15.min(stamp.len())]);
        let name = (1..)
            .map(|n| if n == 1 { format!("{base}.json") } else { format!("{base}-{n}.json") })
            .find(|n| !dir.join(n).exists())
            .unwrap_or_else(|| format!("{base}.json"));
        let bytes = serde_json::to_vec_pretty(spec).map_err(|e| crate::web::error::internal("encoding a draft", e))?;
        crate::files::atomic::write_atomic(&dir.join(&name), &bytes)
            .map_err(|e| crate::web::error::internal("writing a draft", e))?;
        Ok(format!("{DRAFTS_DIR}/{name}"))
    }

    /// `start` while the lock is already held (the autopilot's tick).
    pub fn start_while_locked(&self, req: &LaunchRequest, lock: &CampaignLock) -> Result<Launched, ApiError> {
        self.start_held(req, lock)
    }
}
