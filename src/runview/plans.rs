//! Each round's plan: its slots and, with events, the parents the
//! planner picked for each slot.
//!
//! A round's plan is its latest `plan` event, unless a resume dropped the round
//! since: a campaign resumed mid-round plans that round again, so a plan that a
//! resume follows, with no plan of the same round after the resume, belongs to a
//! round the resume dropped — unless the state counts the round as written, in
//! which case it was written before the resume. A run without events reads a
//! written round's slots from its ledger and has no picked parents.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rows::RoundView;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanSlot {
    pub slot: u32,
    /// The parents the planner picked for the slot; `None` when the run does not
    /// say (no events, or a plan that lists bare slot numbers).
    pub picked: Option<Vec<String>>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanSource {
    /// The round's latest `plan` event.
    Event,
    /// The slots of the round's trials in the ledger (a run without events).
    Ledger,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PlanView {
    pub round: u32,
    pub slots: Vec<PlanSlot>,
    pub source: PlanSource,
}

/// The slots of a `plan` event: `[1, 2]` or `[{"slot": 1, "parents": [..]}, ..]`.
pub fn plan_slots(event: &Value) -> Vec<PlanSlot> {
    let Some(items) = event["slots"].as_array() else { return Vec::new() };
    items
        .iter()
        .filter_map(|item| match item {
            Value::Number(n) => Some(PlanSlot { slot: u32::try_from(n.as_u64()?).ok()?, picked: None }),
            Value::Object(_) => Some(PlanSlot {
                slot: u32::try_from(item["slot"].as_u64()?).ok()?,
                picked: item["parents"].is_array().then(|| crate::basics::json::strings(&item["parents"])),
            }),
            _ => None,
        })
        .collect()
}

/// The plans of a run, by round. `events` is `None` for a run without events.
/// `latest` is each round's latest plan event and whether a resume came after
/// it (`EventsDigest::plans`); `None` for a run without events.
pub fn plans(
    latest: Option<&BTreeMap<u32, (Vec<PlanSlot>, bool)>>,
    rounds_written: u32,
    ledger_rounds: &[Arc<RoundView>],
) -> Vec<PlanView> {
    let Some(latest) = latest else {
        return ledger_rounds
            .iter()
            .filter(|r| (1..=rounds_written).contains(&r.round))
            .map(|r| PlanView {
                round: r.round,
                slots: r.tally().slots.iter().map(|&slot| PlanSlot { slot, picked: None }).collect(),
                source: PlanSource::Ledger,
            })
            .collect();
    };
    latest
        .iter()
        .filter(|(round, (_, resumed_since))| !(*resumed_since && **round > rounds_written))
        .map(|(round, (slots, _))| PlanView { round: *round, slots: slots.clone(), source: PlanSource::Event })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runview::view::TrialView;
    use serde_json::json;

    fn digest(events: &[Value]) -> crate::runview::events::EventsDigest {
        let events: Vec<_> = events.iter().map(crate::runview::events::RunEvent::from_value).collect();
        crate::runview::events::EventsDigest::from_events(&events)
    }

    fn round(n: u32, slots: &[u32]) -> Arc<RoundView> {
        Arc::new(RoundView::new(
            n,
            slots.iter().map(|s| TrialView { round: n, slot: Some(*s), ..TrialView::default() }).collect(),
        ))
    }

    #[test]
    fn a_rounds_plan_is_its_latest_plan_event_with_picked_parents() {
        let events = [
            json!({"event": "open"}),
            json!({"event": "plan", "round": 1, "slots": [1, 2]}),
            json!({"event": "plan", "round": 1, "slots": [{"slot": 1, "parents": ["r00s1"]}, {"slot": 3}]}),
        ];
        let p = plans(Some(&digest(&events).plans), 1, &[]);
        assert_eq!(p.len(), 1);
        assert_eq!(
            p[0].slots,
            [PlanSlot { slot: 1, picked: Some(vec!["r00s1".into()]) }, PlanSlot { slot: 3, picked: None }]
        );
        assert_eq!(p[0].source, PlanSource::Event);
    }

    #[test]
    fn a_round_a_resume_dropped_has_no_plan_but_a_round_written_before_the_resume_keeps_its_own() {
        let events = [
            json!({"event": "open"}),
            json!({"event": "plan", "round": 1, "slots": [1]}),
            json!({"event": "plan", "round": 2, "slots": [1, 2]}),
            json!({"event": "resume"}),
        ];
        // The state counts round 1: written before the resume. Round 2 was under way.
        let p = plans(Some(&digest(&events).plans), 1, &[]);
        assert_eq!(p.iter().map(|p| p.round).collect::<Vec<_>>(), [1]);
        // Planned again after the resume: that plan is the round's.
        let mut again = events.to_vec();
        again.push(json!({"event": "plan", "round": 2, "slots": [3]}));
        let p = plans(Some(&digest(&again).plans), 1, &[]);
        assert_eq!(p[1].slots, [PlanSlot { slot: 3, picked: None }]);
    }

    #[test]
    fn a_run_without_events_reads_written_rounds_slots_from_the_ledger_without_picked_parents() {
        let p = plans(None, 1, &[round(1, &[2, 1, 2]), round(2, &[1])]);
        assert_eq!(p.len(), 1, "round 2 is not written yet");
        assert_eq!(p[0].slots.iter().map(|s| (s.slot, s.picked.clone())).collect::<Vec<_>>(), [(1, None), (2, None)]);
        assert_eq!(p[0].source, PlanSource::Ledger);
    }
}
