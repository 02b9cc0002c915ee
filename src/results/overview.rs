//! The Overview (the landing page): how the campaign has progressed over time
//! (cells covered, failed, running), the latest batches, and what needs the
//! operator's attention, each with a link. Pure: records, the live state and
//! the autopilot's state in; the view out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::auto::AutoState;
use crate::basics::timefmt::Timestamp;
use crate::drive::records::{CellRecord, CellStatus};
use crate::live::LiveState;
use crate::results::timing::secs;
use crate::runsets::RunSetSummary;

/// How many batches the overview lists.
pub const LATEST: usize = 8;
/// How many moments the progress chart samples.
pub const SAMPLES: usize = 48;

/// What an attention item is about (its word on the wire, and the page's
/// class for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AttentionKind {
    /// The live batch: its launch failed, its state is unknown, it stopped
    /// and can be resumed, it was interrupted or aborted.
    LaunchFailed,
    Unknown,
    StoppedResumable,
    Interrupted,
    Aborted,
    /// The autopilot holds (while it is on).
    AutoHold,
    /// A closeout stage failed and waits to be backfilled.
    CloseoutBackfill,
    /// A run set's records cannot be read.
    Unreadable,
    /// A running cell's calls wait for a rate limit, or one call is in flight too long.
    Waiting,
    CallLong,
    /// A running cell stopped writing.
    Stalled,
    /// A budget cap was reached.
    Budget,
    /// A notification could not be delivered.
    NotifyFailed,
    /// The autopilot's state file was repaired.
    AutoRepaired,
    /// What to do next, when nothing else needs a look.
    NextStep,
}

impl AttentionKind {
    pub const fn word(self) -> &'static str {
        match self {
            Self::LaunchFailed => "launch_failed",
            Self::Unknown => "unknown",
            Self::StoppedResumable => "stopped_resumable",
            Self::Interrupted => "interrupted",
            Self::Aborted => "aborted",
            Self::AutoHold => "auto_hold",
            Self::CloseoutBackfill => "closeout_backfill",
            Self::Unreadable => "unreadable",
            Self::Waiting => "waiting",
            Self::CallLong => "call_long",
            Self::Stalled => "stalled",
            Self::Budget => "budget",
            Self::NotifyFailed => "notify_failed",
            Self::AutoRepaired => "auto_repaired",
            Self::NextStep => "next_step",
        }
    }
}

crate::display_as_word!(AttentionKind);

/// One thing to look at, with where to look.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Attention {
    pub kind: AttentionKind,
    pub words: String,
    pub href: String,
}

/// The campaign's figures now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Totals {
    /// Rows of the matrix.
    pub planned: usize,
    /// Cells whose latest ended record is `done`.
    pub covered: usize,
    /// Cells whose latest ended record is `failed`.
    pub failed: usize,
    pub running: usize,
    pub run_sets: usize,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OverviewView {
    pub totals: Totals,
    /// The live state in words.
    pub live_words: String,
    pub progress: crate::charts::Chart,
    /// Newest first.
    pub latest: Vec<RunSetSummary>,
    pub attention: Vec<Attention>,
}

/// A moment of the campaign's progress.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ProgressPoint {
    pub at: f64,
    pub covered: usize,
    pub failed: usize,
    pub running: usize,
}

/// Cells covered, failed and running at `samples` moments from the first
/// start to the last end (to `now` while a cell runs). A cell's status at a moment is its latest record that had
/// ended by then; running counts records started and not yet ended.
pub fn progress<'a>(
    cells: impl IntoIterator<Item = &'a CellRecord>,
    now: Timestamp,
    samples: usize,
) -> Vec<ProgressPoint> {
    let now = now.millis() as f64 / 1000.0;
    // (time, cell, +1 start / ended status)
    let mut ends: Vec<(f64, &str, bool)> = Vec::new();
    let mut runs: Vec<(f64, f64)> = Vec::new();
    for c in cells {
        let start = c.started_at.as_deref().and_then(secs);
        let end = c.ended_at.as_deref().and_then(secs);
        match (c.status, end) {
            (CellStatus::Done | CellStatus::Failed, Some(e)) => ends.push((e, &c.cell, c.status == CellStatus::Done)),
            (CellStatus::Running, _) => {
                if let Some(s) = start {
                    runs.push((s, f64::INFINITY));
                }
            }
            _ => {}
        }
        if let (Some(s), Some(e), CellStatus::Done | CellStatus::Failed | CellStatus::Stopped) = (start, end, c.status)
        {
            runs.push((s, e));
        }
    }
    let first = ends.iter().map(|e| e.0).chain(runs.iter().map(|r| r.0)).fold(f64::INFINITY, f64::min);
    if !first.is_finite() || samples == 0 {
        return Vec::new();
    }
    ends.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut starts: Vec<f64> = runs.iter().map(|r| r.0).collect();
    let mut stops: Vec<f64> = runs.iter().map(|r| r.1).collect();
    starts.sort_by(f64::total_cmp);
    stops.sort_by(f64::total_cmp);
    // To now while a cell runs; else to the last thing that happened (so an
    // idle campaign's chart does not change as time passes).
    let latest_event = ends.iter().map(|e| e.0).chain(runs.iter().flat_map(|r| [r.0, r.1])).fold(first, f64::max);
    let last = if latest_event.is_finite() { latest_event } else { now }.max(first);
    let step = if samples > 1 { (last - first) / (samples - 1) as f64 } else { 0.0 };
    let mut latest: BTreeMap<&str, bool> = BTreeMap::new();
    let (mut covered, mut failed, mut i) = (0usize, 0usize, 0usize);
    let mut out = Vec::with_capacity(samples);
    for k in 0..samples {
        let at = if k + 1 == samples { last } else { first + step * k as f64 };
        while i < ends.len() && ends[i].0 <= at {
            let (_, cell, done) = ends[i];
            match latest.insert(cell, done) {
                Some(true) => covered -= 1,
                Some(false) => failed -= 1,
                None => {}
            }
            if done {
                covered += 1;
            } else {
                failed += 1;
            }
            i += 1;
        }
        let started = starts.partition_point(|s| *s <= at);
        let stopped = stops.partition_point(|s| *s <= at);
        out.push(ProgressPoint { at, covered, failed, running: started.saturating_sub(stopped) });
        if step == 0.0 {
            break;
        }
    }
    out
}

/// What needs attention: the live state when it is not a normal one, every
/// other resumable run set, the autopilot's hold (when on) and closeout
/// backfill, and unreadable records. (The server adds runs that crashed or
/// cannot be read, and the next step.)
pub fn attention(
    live: &LiveState,
    live_words: &str,
    resumable: &[String],
    auto: Option<&AutoState>,
    run_sets: &[RunSetSummary],
) -> Vec<Attention> {
    let mut out = Vec::new();
    use AttentionKind as K;
    let item = |kind: K, words: String, href: &str| Attention { kind, words, href: href.into() };
    let shown = match live {
        LiveState::LaunchFailed { .. } => Some((K::LaunchFailed, None)),
        LiveState::Unknown { .. } => Some((K::Unknown, None)),
        LiveState::StoppedResumable { run_set, .. } => Some((K::StoppedResumable, Some(run_set))),
        LiveState::Interrupted { run_set, .. } => Some((K::Interrupted, Some(run_set))),
        LiveState::Aborted { run_set, .. } => Some((K::Aborted, Some(run_set))),
        _ => None,
    };
    if let Some((kind, _)) = shown {
        out.push(item(kind, live_words.to_owned(), "/live"));
    }
    let shown_rs = shown.and_then(|(_, rs)| rs);
    for rs in resumable.iter().filter(|rs| Some(*rs) != shown_rs) {
        out.push(item(
            K::StoppedResumable,
            format!("Run set {rs} stopped before completion and can be resumed (Resume on the Live page)."),
            "/live",
        ));
    }
    if let Some(a) = auto {
        if a.mode != crate::auto::Mode::Off {
            if let Some(h) = &a.hold {
                let words = if h.words.is_empty() { h.reason.word().to_owned() } else { h.words.clone() };
                out.push(item(K::AutoHold, format!("The autopilot holds: {words}"), "/auto"));
            }
        }
        for b in &a.closeout_backfill {
            out.push(item(
                K::CloseoutBackfill,
                format!("Run set {}: its closeout stage {} failed{}", b.run_set, b.stage, colon(&b.message)),
                &format!("/reports/{}", crate::results::url_segment(&b.run_set)),
            ));
        }
    }
    for rs in run_sets.iter().filter(|r| !r.problems.is_empty()) {
        let shown: Vec<&str> = rs.problems.iter().take(3).map(String::as_str).collect();
        let more = if rs.problems.len() > 3 { format!(" (and {} more)", rs.problems.len() - 3) } else { String::new() };
        out.push(item(
            K::Unreadable,
            format!("Run set {}: {} record(s) cannot be read: {}{more}", rs.name, rs.problems.len(), shown.join("; ")),
            &format!("/reports/{}", crate::results::url_segment(&rs.name)),
        ));
    }
    out
}

fn colon(s: &str) -> String {
    if s.is_empty() {
        String::new()
    } else {
        format!(": {s}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(cell: &str, status: CellStatus, start: &str, end: Option<&str>) -> CellRecord {
        CellRecord {
            schema_version: 1,
            cell: cell.into(),
            factors: [("task".to_string(), json!("t1"))].into(),
            status,
            attempts: 1,
            started_at: Some(start.into()),
            ended_at: end.map(str::to_owned),
            exit_code: None,
            tokens: None,
            score: None,
            log: None,
            ..Default::default()
        }
    }

    #[test]
    fn progress_counts_each_cells_latest_end_and_what_runs() {
        let now = Timestamp::parse_rfc3339("2026-11-30T10:10:00Z").unwrap();
        let cells = [
            rec("a", CellStatus::Failed, "2026-11-30T10:00:00Z", Some("2026-11-30T10:01:00Z")),
            // The same cell, run again later and done: covered, no longer failed.
            rec("a", CellStatus::Done, "2026-11-30T10:04:00Z", Some("2026-11-30T10:05:00Z")),
            rec("b", CellStatus::Running, "2026-11-30T10:08:00Z", None),
        ];
        let p = progress(&cells, now, 11);
        assert_eq!(p.len(), 11);
        let at = |min: usize| p[min];
        assert_eq!((at(0).covered, at(0).failed, at(0).running), (0, 0, 1));
        assert_eq!((at(2).covered, at(2).failed, at(2).running), (0, 1, 0));
        assert_eq!((at(4).covered, at(4).failed, at(4).running), (0, 1, 1));
        assert_eq!((at(5).covered, at(5).failed), (1, 0));
        assert_eq!((at(10).covered, at(10).failed, at(10).running), (1, 0, 1));
        assert!(progress(&[], now, 11).is_empty());
    }

    #[test]
    fn attention_names_a_failed_launch_a_hold_backfill_and_unreadable_records() {
        let live = LiveState::Unknown { unit: "u".into(), reason: "bus".into(), alive_run_set: None };
        let mut auto = AutoState { mode: crate::auto::Mode::On, ..Default::default() };
        auto.hold = Some(crate::auto::Hold {
            reason: crate::auto::HoldReason::NoEligibleSlot,
            words: "every model reached its daily cap".into(),
            since: Timestamp::from_millis(0),
        });
        auto.closeout_backfill.push(crate::auto::Backfill {
            run_set: "b-1".into(),
            stage: "publish_experiment_results".into(),
            message: "push refused".into(),
        });
        let rs = RunSetSummary {
            name: "b 2".into(),
            problems: vec!["cells/c-1.json: EOF while parsing".into()],
            ..Default::default()
        };
        let a = attention(&live, "Unknown: bus", &[], Some(&auto), &[rs]);
        let kinds: Vec<&str> = a.iter().map(|x| x.kind.word()).collect();
        assert_eq!(kinds, ["unknown", "auto_hold", "closeout_backfill", "unreadable"]);
        assert_eq!(a[1].words, "The autopilot holds: every model reached its daily cap");
        assert_eq!(a[3].href, "/reports/b%202");
        // An aborted batch and another resumable run set are named too.
        let aborted = LiveState::Aborted { run_set: "b-3".into(), at: Timestamp::from_millis(0) };
        let a = attention(&aborted, "Aborted by the operator: b-3.", &["b-1".into()], None, &[]);
        let kinds: Vec<&str> = a.iter().map(|x| x.kind.word()).collect();
        assert_eq!(kinds, ["aborted", "stopped_resumable"]);
        assert!(a[1].words.contains("b-1 stopped before completion and can be resumed"), "{a:?}");
        let paused = LiveState::StoppedResumable { run_set: "b-1".into(), spec: String::new(), reason: None };
        assert_eq!(attention(&paused, "Stopped", &["b-1".into()], None, &[]).len(), 1, "named once");
        auto.mode = crate::auto::Mode::Off;
        assert!(!attention(&LiveState::Idle { last_run_set: None, last_outcome: None }, "", &[], Some(&auto), &[])
            .iter()
            .any(|x| x.kind == AttentionKind::AutoHold));
    }
}
