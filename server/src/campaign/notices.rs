//! The batch events not yet said (`runboard::live::notice` over the unit
//! records), as notification objects; `crate::live::notify` delivers them.

use std::collections::BTreeMap;

use runboard::live::notice::{self, Phase, Said, Step};
use runboard::runsets::RunKind;
use serde_json::{json, Value};

use super::Campaign;

impl Campaign {
    /// The batch events not yet said, as notification objects (oldest
    /// first), what was said recorded in `.runboard/notified.json` under the
    /// campaign lock. Nothing when no hook or webhook is configured (and then
    /// nothing is written).
    pub fn batch_notices(&self) -> Vec<Value> {
        let Ok(cfg) = self.config() else { return Vec::new() };
        if !cfg.hooks.notifies() {
            return Vec::new();
        }
        let Ok(lock) = self.lock() else { return Vec::new() };
        let path = self.root().join(notice::SAID_FILE);
        let said: Option<BTreeMap<String, Said>> =
            self.records.within().read_opt(&path).and_then(Result::ok).and_then(|b| serde_json::from_slice(&b).ok());
        let first = said.is_none();
        let said = said.unwrap_or_default();
        let units = self.records.units();
        // A unit already said to have ended is not asked of again.
        let phases: Vec<(String, Phase)> = units
            .iter()
            .map(|rec| {
                let phase = match said.get(&rec.unit) {
                    Some(Said::Ended | Said::LaunchFailed) => Phase::Unknown,
                    _ => {
                        let rs = self.records.run_set(&rec.run_set);
                        let outcome = rs.as_ref().and_then(|r| r.outcome_ok().map(|o| o.status));
                        let aborted = rs.as_ref().is_some_and(|r| self.aborted(&r.name, &r.dir));
                        notice::phase(&self.observe(rec, &cfg), outcome, aborted)
                    }
                };
                (rec.unit.clone(), phase)
            })
            .collect();
        let (steps, next) = notice::steps(&said, &phases, first);
        if next != said || first {
            if let Err(e) = crate::files::atomic::write_json(&path, &next) {
                // Unrecorded, they would be said again: say nothing now.
                tracing::error!("writing {}: {e}; the batch events are said later", notice::SAID_FILE);
                return Vec::new();
            }
        }
        drop(lock);
        let now = crate::system::clock::now();
        let (index, _) = self.records.run_index();
        steps
            .into_iter()
            .filter_map(|(unit, step)| {
                let rec = units.iter().find(|r| r.unit == unit)?;
                let entry = index.iter().rev().find(|e| e.unit == unit);
                let mut body = json!({
                    "event": step.kind(),
                    "at": now.to_rfc3339(),
                    "run_set": rec.run_set,
                    "unit": unit,
                    "backend": rec.backend().word(),
                });
                let rs = &rec.run_set;
                let words = match step {
                    Step::Launched => {
                        let resumed = entry.is_some_and(|e| e.kind == RunKind::Resume);
                        if let Some(e) = entry {
                            body["resumed"] = resumed.into();
                            body["tag"] = e.tag.clone().into();
                            body["label"] = e.label.clone().into();
                            body["model"] = e.model.clone().into();
                            body["endpoint"] = e.endpoint.clone().into();
                            body["cells"] = e.cells.into();
                        }
                        let cells = entry.map(|e| format!(", {} cell(s)", e.cells)).unwrap_or_default();
                        let verb = if resumed { "resumed" } else { "launched" };
                        format!("{rs} {verb} as unit {unit} ({}{cells})", rec.backend().word())
                    }
                    Step::Ended(ending) => {
                        body["outcome"] = serde_json::to_value(ending).unwrap_or_default();
                        let outcome = self.records.run_set(rs).and_then(|r| r.outcome_ok().cloned());
                        let reason = match &outcome {
                            Some(o) => {
                                body["cells"] =
                                    json!({"planned": o.planned, "completed": o.completed, "failed": o.failed});
                                // The driver only saw a signal; the abort is the operator's.
                                let why = if ending == notice::Ending::Aborted {
                                    "by the operator".to_owned()
                                } else {
                                    o.reason.clone()
                                };
                                body["reason"] = why.clone().into();
                                format!(
                                    ": {} of {} cell(s) completed, {} failed — {why}",
                                    o.completed, o.planned, o.failed
                                )
                            }
                            None => String::new(),
                        };
                        format!("{rs} {}{reason}", ending.word())
                    }
                    Step::LaunchFailed => {
                        let seen = super::live::unit_seen(rec, self.observe(rec, &cfg), None);
                        let f = self.failure(rec, &seen, &cfg);
                        let why = match &f.reason {
                            Some(r) => format!("{} {r}", f.title),
                            None => f.title.clone(),
                        };
                        body["why"] = why.clone().into();
                        body["log_tail"] = f.summary.clone().into();
                        format!("{rs} failed to launch: {why}")
                    }
                };
                body["words"] = words.into();
                Some(body)
            })
            .collect()
    }
}
