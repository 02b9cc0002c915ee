//! The rounds tab's trials, filtered and a page at a time: a run can hold
//! millions of trial attempts, and a page shows a screenful.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use super::intraday::is_intraday;
use super::view::{RunView, TrialView};

/// The most trials one page holds.
pub const MAX_PAGE: usize = 500;
/// A page's size when the request names none.
pub const DEFAULT_PAGE: usize = 50;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutcomeFilter {
    Accepted,
    /// Refused after being scored (admission).
    Refused,
    /// Never scored: refused by the gate or the evaluator.
    Unscored,
}

impl OutcomeFilter {
    /// Reads `accepted`, `refused` or `unscored`; the error says what was wrong.
    pub fn parse(s: &str) -> Result<Self, String> {
        match s {
            "accepted" => Ok(Self::Accepted),
            "refused" => Ok(Self::Refused),
            "unscored" => Ok(Self::Unscored),
            _ => Err(format!("{s:?} is not one of accepted, refused, unscored")),
        }
    }
    fn admits(self, t: &TrialView) -> bool {
        match self {
            Self::Accepted => t.is_accepted(),
            Self::Refused => !t.is_accepted() && t.t.is_some(),
            Self::Unscored => !t.is_accepted() && t.t.is_none(),
        }
    }
}

/// Which trials to show. Every field narrows; none given shows all.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialFilter {
    pub round: Option<u32>,
    pub stage: Option<String>,
    pub outcome: Option<OutcomeFilter>,
    /// Case-insensitive text in the trial's name, factor, reason or code.
    pub text: Option<String>,
    pub intraday: Option<bool>,
}

/// A query's value that does not parse: the field, the value as given, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BadQuery {
    pub field: String,
    pub value: String,
    pub problem: String,
}

impl std::fmt::Display for BadQuery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}={:?}: {}", self.field, crate::console::spec::shorten(&self.value), self.problem)
    }
}

/// The trials query as its URL carries it (`?round=&stage=&outcome=&q=&intraday=&offset=&limit=`),
/// every value raw text: the one thing both the REST endpoint and the page's
/// server function receive, read by the one parser, [`TrialParams::parse`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TrialParams {
    #[serde(default)]
    pub round: Option<String>,
    #[serde(default)]
    pub stage: Option<String>,
    #[serde(default)]
    pub outcome: Option<String>,
    #[serde(default)]
    pub q: Option<String>,
    #[serde(default)]
    pub intraday: Option<String>,
    #[serde(default)]
    pub offset: Option<String>,
    #[serde(default)]
    pub limit: Option<String>,
}

/// A parsed trials query: which trials, and which page of them.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TrialQuery {
    pub filter: TrialFilter,
    pub offset: usize,
    /// At most [`MAX_PAGE`]; [`DEFAULT_PAGE`] when not given.
    pub limit: usize,
}

/// The readers of query values both queries' parsers use: an empty value is
/// the same as none; a refusal names the field, the value and what is wrong.
pub(crate) mod value {
    use super::BadQuery;

    pub fn given(v: &Option<String>) -> Option<&str> {
        v.as_deref().filter(|s| !s.is_empty())
    }

    pub fn bad(field: &str, value: &str, problem: &str) -> BadQuery {
        BadQuery { field: field.into(), value: value.into(), problem: problem.into() }
    }

    pub fn whole<T: std::str::FromStr>(field: &str, v: &Option<String>) -> Result<Option<T>, BadQuery> {
        given(v).map(|s| s.parse().map_err(|_| bad(field, s, "not a whole number ≥ 0"))).transpose()
    }
}

impl TrialParams {
    /// Reads the query; an empty value is the same as none. The error names the
    /// field, the value and what is wrong with it.
    pub fn parse(&self) -> Result<TrialQuery, BadQuery> {
        use value::{bad, given, whole};
        let outcome = given(&self.outcome)
            .map(|o| OutcomeFilter::parse(o).map_err(|_| bad("outcome", o, "not one of accepted, refused, unscored")))
            .transpose()?;
        let intraday = match given(&self.intraday) {
            None => None,
            Some("true") => Some(true),
            Some("false") => Some(false),
            Some(v) => return Err(bad("intraday", v, "not true or false")),
        };
        let limit = whole::<usize>("limit", &self.limit)?.unwrap_or(DEFAULT_PAGE);
        if limit == 0 {
            return Err(bad("limit", "0", "must be at least 1"));
        }
        Ok(TrialQuery {
            filter: TrialFilter {
                round: whole("round", &self.round)?,
                stage: given(&self.stage).map(str::to_owned),
                outcome,
                text: given(&self.q).map(str::to_owned),
                intraday,
            },
            offset: whole("offset", &self.offset)?.unwrap_or(0),
            limit: limit.min(MAX_PAGE),
        })
    }
}

/// A trial as the rounds tab shows it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialRow {
    #[serde(flatten)]
    pub trial: TrialView,
    /// The t in its direction (see `TrialView::directed_t`).
    pub directed_t: Option<f64>,
    pub intraday: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialPage {
    /// All attempts in the written rounds.
    pub total: usize,
    /// Those the filter keeps.
    pub matching: usize,
    pub offset: usize,
    pub trials: Vec<TrialRow>,
    /// The stages present, for the filter's choices.
    pub stages: Vec<String>,
}

/// The page of trials at `offset` (at most `limit`, capped at [`MAX_PAGE`]), the
/// latest round first and in ledger order within a round.
pub fn trial_page(view: &RunView, filter: &TrialFilter, offset: usize, limit: usize) -> TrialPage {
    let needle = filter.text.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
    let session_ops = &view.session_operators;
    let keep = |t: &TrialView| {
        filter.stage.as_deref().is_none_or(|s| t.stage.as_deref() == Some(s))
            && filter.outcome.is_none_or(|o| o.admits(t))
            && filter.intraday.is_none_or(|want| is_intraday(t, session_ops) == want)
            && needle.as_deref().is_none_or(|n| {
                [&t.trial, &t.factor, &t.reason, &t.code]
                    .iter()
                    .any(|f| f.as_deref().is_some_and(|s| s.to_lowercase().contains(n)))
            })
    };
    let rounds = view.rounds.iter().rev().filter(|r| filter.round.is_none_or(|n| r.round == n));
    let limit = limit.clamp(1, MAX_PAGE);
    let stages: BTreeSet<String> = view.rounds.iter().flat_map(|r| r.tally().stages.iter().cloned()).collect();
    let total = view.rounds.iter().map(|r| r.trials.len()).sum();
    // Filtered by round at most: the page is cut from the rounds' lengths,
    // without looking at every trial (a long run holds millions).
    if filter.stage.is_none() && filter.outcome.is_none() && filter.intraday.is_none() && needle.is_none() {
        let kept: Vec<&std::sync::Arc<super::view::RoundView>> = rounds.collect();
        let matching = kept.iter().map(|r| r.trials.len()).sum();
        let trials = kept
            .iter()
            .flat_map(|r| r.trials.iter())
            .skip(offset)
            .take(limit)
            .map(|t| TrialRow { directed_t: t.directed_t(), intraday: is_intraday(t, session_ops), trial: t.clone() })
            .collect();
        return TrialPage { total, matching, offset, trials, stages: stages.into_iter().collect() };
    }
    let mut matching = 0;
    let mut trials = Vec::new();
    for t in rounds.flat_map(|r| r.trials.iter()).filter(|t| keep(t)) {
        if matching >= offset && trials.len() < limit {
            trials.push(TrialRow {
                directed_t: t.directed_t(),
                intraday: is_intraday(t, session_ops),
                trial: t.clone(),
            });
        }
        matching += 1;
    }
    TrialPage { total, matching, offset, trials, stages: stages.into_iter().collect() }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runview::ledger::{Incremental, LedgerState};

    #[test]
    fn one_parser_reads_the_query_and_names_what_is_wrong() {
        let p = |pairs: &[(&str, &str)]| {
            let mut t = TrialParams::default();
            for (k, v) in pairs {
                let v = Some((*v).to_owned());
                match *k {
                    "round" => t.round = v,
                    "stage" => t.stage = v,
                    "outcome" => t.outcome = v,
                    "q" => t.q = v,
                    "intraday" => t.intraday = v,
                    "offset" => t.offset = v,
                    _ => t.limit = v,
                }
            }
            t.parse()
        };
        let q = p(&[("round", "3"), ("outcome", "refused"), ("q", ""), ("limit", "9999")]).unwrap();
        assert_eq!(
            (q.filter.round, q.filter.outcome, q.filter.text, q.limit),
            (Some(3), Some(OutcomeFilter::Refused), None, MAX_PAGE)
        );
        assert_eq!(p(&[]).unwrap().limit, DEFAULT_PAGE);
        let cases = [
            (("round", "x"), "round=\"x\": not a whole number ≥ 0"),
            (("round", "-1"), "round=\"-1\": not a whole number ≥ 0"),
            (("offset", "1.5"), "offset=\"1.5\": not a whole number ≥ 0"),
            (("limit", "0"), "limit=\"0\": must be at least 1"),
            (("outcome", "maybe"), "outcome=\"maybe\": not one of accepted, refused, unscored"),
            (("intraday", "yes"), "intraday=\"yes\": not true or false"),
        ];
        for ((k, v), want) in cases {
            assert_eq!(p(&[(k, v)]).unwrap_err().to_string(), want);
        }
    }
    use crate::runview::view::{read_view, ViewInputs};
    use crate::runview::ProcessCheck;

    fn view() -> RunView {
        let mut ledger = String::new();
        for round in 1..=3 {
            for slot in 1..=4 {
                let outcome = match slot {
                    1 => r#"{"stage":"admission","accepted":true}"#,
                    2 => r#"{"stage":"admission","refused":"t 1.0 below threshold 2.5"}"#,
                    _ => r#"{"stage":"gate","refused":"rewrite of factor f1"}"#,
                };
                let t = if slot <= 2 { "2.0" } else { "null" };
                ledger += &format!(
                    "{{\"round\":{round},\"slot\":{slot},\"trial\":\"r{round:02}s{slot}\",\"t\":{t},\"outcome\":{outcome}}}\n"
                );
            }
        }
        let ledger = Box::leak(Box::new(LedgerState::from_bytes(ledger.as_bytes())));
        read_view(
            ViewInputs {
                name: "r".into(),
                path: "r".into(),
                snapshot: Ok(b"{}"),
                state: Some(Ok(br#"{"rounds_written":3}"#)),
                ledger: Some(Ok(ledger)),
                events: None,
                call_files: Vec::new(),
                call_files_after_state: None,
                memory: Box::leak(Box::default()),
                folder_problems: Vec::new(),
                state_written: None,
                last_call_written: None,
                last_written: None,
                version: "v".into(),
            },
            &|_, _| ProcessCheck::NotRecorded,
        )
    }

    fn names(p: &TrialPage) -> Vec<&str> {
        p.trials.iter().filter_map(|t| t.trial.trial.as_deref()).collect()
    }

    #[test]
    fn an_unfiltered_page_cut_from_round_lengths_equals_one_read_trial_by_trial() {
        let v = view();
        // Not intraday admits every trial here (no session operators), but takes
        // the trial-by-trial path.
        let every = TrialFilter { intraday: Some(false), ..TrialFilter::default() };
        for (round, offset, limit) in [(None, 0, 5), (None, 3, 4), (None, 11, 50), (Some(2), 1, 2), (Some(9), 0, 5)] {
            let fast = trial_page(&v, &TrialFilter { round, ..TrialFilter::default() }, offset, limit);
            let slow = trial_page(&v, &TrialFilter { round, ..every.clone() }, offset, limit);
            assert_eq!(fast, slow, "round {round:?}, offset {offset}, limit {limit}");
        }
    }

    #[test]
    fn trials_filter_by_round_stage_outcome_and_text_a_page_at_a_time_latest_round_first() {
        let v = view();
        let all = trial_page(&v, &TrialFilter::default(), 0, 5);
        assert_eq!((all.total, all.matching), (12, 12));
        assert_eq!(names(&all), ["r03s1", "r03s2", "r03s3", "r03s4", "r02s1"]);
        assert_eq!(names(&trial_page(&v, &TrialFilter::default(), 10, 5)), ["r01s3", "r01s4"]);
        let gate = TrialFilter { stage: Some("gate".into()), round: Some(2), ..TrialFilter::default() };
        assert_eq!(names(&trial_page(&v, &gate, 0, 50)), ["r02s3", "r02s4"]);
        let refused = TrialFilter { outcome: Some(OutcomeFilter::Refused), ..TrialFilter::default() };
        assert_eq!(trial_page(&v, &refused, 0, 50).matching, 3);
        let unscored = TrialFilter { outcome: Some(OutcomeFilter::Unscored), ..TrialFilter::default() };
        assert_eq!(trial_page(&v, &unscored, 0, 50).matching, 6);
        let text = TrialFilter { text: Some("R01S2".into()), ..TrialFilter::default() };
        assert_eq!(names(&trial_page(&v, &text, 0, 50)), ["r01s2"]);
        assert_eq!(all.stages, ["admission", "gate"]);
        assert_eq!(trial_page(&v, &TrialFilter::default(), 0, 100_000).trials.len(), 12, "capped, not refused");
    }
}
