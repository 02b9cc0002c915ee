//! Intraday detection: a trial, and an accepted factor, is intraday
//! when the graph the gate built for it holds a session aggregation — an operator
//! of the run's snapshotted operator file whose class is a `SessionAggregation`.
//! A run whose snapshot records no intraday dataset has none.
//!
//! The snapshot carries the operator file as the campaign saw it when it first
//! started (`operator_file.operators`: name, class and the class's bases), so a
//! later edit of the operator file does not change what an old run meant.

use std::collections::BTreeSet;

use serde_json::Value;

use super::rows::TrialView;

/// The class whose operators aggregate within a trading session.
pub const SESSION_AGGREGATION: &str = "SessionAggregation";

/// The session-aggregation operators of a run, from its snapshot; empty when the
/// snapshot records no intraday dataset (then no trial of the run is intraday).
pub fn session_operators(snapshot: &Value) -> BTreeSet<String> {
    let intraday_data =
        snapshot["datasets"].as_array().is_some_and(|sets| sets.iter().any(|d| d["intraday"].as_bool() == Some(true)));
    if !intraday_data {
        return BTreeSet::new();
    }
    let Some(ops) = snapshot["operator_file"]["operators"].as_array() else { return BTreeSet::new() };
    ops.iter()
        .filter(|op| {
            // "is a": the class itself, or one it derives from.
            op["class"].as_str() == Some(SESSION_AGGREGATION)
                || op["bases"].as_array().is_some_and(|b| b.iter().any(|c| c.as_str() == Some(SESSION_AGGREGATION)))
        })
        .filter_map(|op| op["name"].as_str().map(str::to_owned))
        .collect()
}

/// Whether the trial's gate graph uses one of the run's session operators.
pub fn is_intraday(trial: &TrialView, session_ops: &BTreeSet<String>) -> bool {
    !session_ops.is_empty() && trial.operators.iter().any(|op| session_ops.contains(op))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn snapshot(intraday: bool) -> Value {
        json!({
            "datasets": [{"name": "daily", "intraday": false}, {"name": "bars_5m", "intraday": intraday}],
            "operator_file": {"path": "operators.py", "operators": [
                {"name": "ts_mean", "class": "TimeSeries"},
                {"name": "session_vwap", "class": "SessionAggregation"},
                {"name": "session_range", "class": "SessionRange", "bases": ["SessionAggregation"]},
            ]}
        })
    }

    #[test]
    fn a_trial_is_intraday_when_its_graph_holds_a_session_aggregation_of_the_snapshotted_operator_file() {
        let ops = session_operators(&snapshot(true));
        assert_eq!(ops.iter().map(String::as_str).collect::<Vec<_>>(), ["session_range", "session_vwap"]);
        let uses = |names: &[&str]| TrialView {
            operators: names.iter().map(|s| (*s).to_owned()).collect(),
            ..TrialView::default()
        };
        assert!(is_intraday(&uses(&["rank", "session_vwap"]), &ops));
        assert!(is_intraday(&uses(&["session_range"]), &ops), "a subclass is a SessionAggregation");
        assert!(!is_intraday(&uses(&["rank", "ts_mean"]), &ops));
    }

    #[test]
    fn a_run_whose_snapshot_records_no_intraday_dataset_has_no_intraday_trial() {
        assert!(session_operators(&snapshot(false)).is_empty());
        assert!(session_operators(&json!({"operator_file": "operators.py"})).is_empty());
        let t = TrialView { operators: vec!["session_vwap".into()], ..TrialView::default() };
        assert!(!is_intraday(&t, &session_operators(&snapshot(false))));
    }
}
