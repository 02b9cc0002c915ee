//! A word for every batch event: which batches were launched, ended or
//! failed to launch since the notification hook last heard of them.
//!
//! Events are found by comparing each unit's phase now (from what its
//! launcher and its run set's outcome say) with what was already said of it
//! (kept in `.runboard/notified.json`), so a batch launched by the console,
//! the CLI or the autopilot is said alike, once, by whichever runboard process
//! looks first — including a batch that ended while no server ran. A unit
//! that cannot be observed says nothing: an event is never inferred from a
//! failed observation.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::drive::records::BatchStatus;
use crate::live::Observation;

/// Where what was said is kept, relative to the campaign root.
pub const SAID_FILE: &str = ".runboard/notified.json";

/// How a batch ended, as the `batch_ended` notification says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ending {
    Completed,
    CompletedWithFailures,
    Failed,
    /// Paused (by the operator or the budget): resumable.
    Stopped,
    /// Stopped and aborted by the operator.
    Aborted,
    /// A resume found every cell done.
    NothingToDo,
    /// Its unit ended while its outcome still said `running` (the driver was
    /// killed), or without an outcome after a clean exit.
    Interrupted,
}

impl Ending {
    pub fn word(self) -> &'static str {
        match self {
            Self::Completed => "completed",
            Self::CompletedWithFailures => "completed with failures",
            Self::Failed => "failed",
            Self::Stopped => "stopped (resumable)",
            Self::Aborted => "stopped and aborted",
            Self::NothingToDo => "had nothing to do",
            Self::Interrupted => "was interrupted",
        }
    }
}

/// Where a unit stands, for notification.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    InFlight,
    Ended(Ending),
    /// Its unit ended before its batch began (no outcome, not a clean exit).
    LaunchFailed,
    /// Its launcher could not be asked: nothing is said.
    Unknown,
}

/// A unit's phase from its launcher's observation, its run set's outcome
/// and whether the operator aborted it.
pub fn phase(observation: &Observation, outcome: Option<BatchStatus>, aborted: bool) -> Phase {
    match observation {
        Observation::Unknown { .. } => Phase::Unknown,
        Observation::Pending { .. } | Observation::Active { .. } => Phase::InFlight,
        Observation::Finished { .. } if aborted => Phase::Ended(Ending::Aborted),
        Observation::Finished { .. } => match outcome {
            Some(BatchStatus::Completed) => Phase::Ended(Ending::Completed),
            Some(BatchStatus::CompletedWithFailures) => Phase::Ended(Ending::CompletedWithFailures),
            Some(BatchStatus::Failed) => Phase::Ended(Ending::Failed),
            Some(BatchStatus::Stopped) => Phase::Ended(Ending::Stopped),
            Some(BatchStatus::NothingToDo) => Phase::Ended(Ending::NothingToDo),
            Some(BatchStatus::Running) => Phase::Ended(Ending::Interrupted),
            None if observation.succeeded() => Phase::Ended(Ending::Interrupted),
            None => Phase::LaunchFailed,
        },
    }
}

/// What was last said of a unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Said {
    Launched,
    Ended,
    LaunchFailed,
}

/// An event to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    Launched,
    Ended(Ending),
    LaunchFailed,
}

impl Step {
    pub fn kind(self) -> &'static str {
        match self {
            Self::Launched => "batch_launched",
            Self::Ended(_) => "batch_ended",
            Self::LaunchFailed => "launch_failed",
        }
    }
}

/// The events since `said`, for the units now known (in launch order), and
/// what is said after them. With `first` (nothing was ever said on this
/// campaign), a unit that has already ended is recorded without a word — a
/// campaign's history is not replayed when a hook is first configured —
/// while one in flight is said launched. Units no longer known are
/// forgotten; a unit that cannot be observed keeps what was said of it.
pub fn steps(
    said: &BTreeMap<String, Said>,
    units: &[(String, Phase)],
    first: bool,
) -> (Vec<(String, Step)>, BTreeMap<String, Said>) {
    let mut out = Vec::new();
    let mut next = BTreeMap::new();
    for (unit, phase) in units {
        let before = said.get(unit).copied();
        let mut say = |s: Step| out.push((unit.clone(), s));
        let now = match (before, *phase) {
            (b, Phase::Unknown) => b,
            (None, Phase::InFlight) => {
                say(Step::Launched);
                Some(Said::Launched)
            }
            (None, Phase::Ended(_) | Phase::LaunchFailed) if first => Some(Said::Ended),
            (None, Phase::Ended(e)) => {
                say(Step::Launched);
                say(Step::Ended(e));
                Some(Said::Ended)
            }
            (None, Phase::LaunchFailed) | (Some(Said::Launched), Phase::LaunchFailed) => {
                say(Step::LaunchFailed);
                Some(Said::LaunchFailed)
            }
            (Some(Said::Launched), Phase::Ended(e)) => {
                say(Step::Ended(e));
                Some(Said::Ended)
            }
            (Some(b), _) => Some(b),
        };
        if let Some(s) = now {
            next.insert(unit.clone(), s);
        }
    }
    (out, next)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finished(code: i32) -> Observation {
        Observation::Finished { exit_status: Some(code), result: "exit-code".into(), at: None }
    }

    #[test]
    fn a_units_phase_comes_from_its_observation_outcome_and_abort() {
        let active = Observation::Active { since: None };
        assert_eq!(phase(&active, None, false), Phase::InFlight);
        assert_eq!(phase(&Observation::Unknown { reason: "no bus".into() }, None, true), Phase::Unknown);
        assert_eq!(phase(&finished(0), Some(BatchStatus::Completed), false), Phase::Ended(Ending::Completed));
        assert_eq!(phase(&finished(0), Some(BatchStatus::Stopped), true), Phase::Ended(Ending::Aborted));
        assert_eq!(phase(&finished(143), Some(BatchStatus::Stopped), false), Phase::Ended(Ending::Stopped));
        assert_eq!(phase(&finished(1), Some(BatchStatus::Running), false), Phase::Ended(Ending::Interrupted));
        assert_eq!(phase(&finished(127), None, false), Phase::LaunchFailed);
    }

    #[test]
    fn each_event_is_said_once_and_history_is_not_replayed() {
        let u = |n: &str, p| (n.to_owned(), p);
        // First look: the ended unit is recorded silently, the running one said.
        let (said, now) =
            steps(&BTreeMap::new(), &[u("a", Phase::Ended(Ending::Completed)), u("b", Phase::InFlight)], true);
        assert_eq!(said, vec![("b".to_owned(), Step::Launched)]);
        // Nothing new: nothing said.
        let (again, now) = steps(&now, &[u("a", Phase::Ended(Ending::Completed)), u("b", Phase::InFlight)], false);
        assert!(again.is_empty());
        // b ends; c launched and ended between two looks; d failed to launch;
        // e cannot be observed: nothing said of it, nothing recorded.
        let units = [
            u("a", Phase::Ended(Ending::Completed)),
            u("b", Phase::Ended(Ending::Stopped)),
            u("c", Phase::Ended(Ending::Failed)),
            u("d", Phase::LaunchFailed),
            u("e", Phase::Unknown),
        ];
        let (said, now) = steps(&now, &units, false);
        assert_eq!(
            said,
            vec![
                ("b".to_owned(), Step::Ended(Ending::Stopped)),
                ("c".to_owned(), Step::Launched),
                ("c".to_owned(), Step::Ended(Ending::Failed)),
                ("d".to_owned(), Step::LaunchFailed),
            ]
        );
        assert!(!now.contains_key("e"));
        // A unit whose record is gone is forgotten; one unobservable keeps its word.
        let (said, now) = steps(&now, &[u("b", Phase::Unknown)], false);
        assert!(said.is_empty());
        assert_eq!(now.len(), 1);
        assert_eq!(now["b"], Said::Ended);
    }
}
