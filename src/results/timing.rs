//! Timing: where each cell's time went, which timings can be trusted, and how
//! fast each endpoint turned tokens out. Pure: cell records, the run sets'
//! events and `now` in; figures out.
//!
//! **Phases.** From a run set's `events.jsonl`: a cell is *queued* from its
//! batch's start (or resume) to its `cell_start`; each attempt runs from
//! `cell_start` to `cell_end`. An attempt that ended `stopped` is followed by
//! a *paused* stretch until the batch that resumed it started; one that ended
//! `failed` and was started again is a *retried* attempt; a last attempt that
//! failed is a *failed* one. A cell whose run set has no events for it (a
//! cluster's manager writes the records) has one stretch from its record's
//! `started_at` to `ended_at`.
//!
//! **Timing validity.** A cell's duration counts only when the cell is `done`,
//! ran in one attempt (never retried, never started more than once), was never
//! paused, has both its times, and its endpoint was not serving another run
//! set's cells at any moment it ran, and its throughput is plausible (at most
//! [`MAX_PLAUSIBLE_TOKENS_PER_S`]: a record saying 38,600 tokens in 0.1 s
//! was not timed, whatever it says). Every other cell is listed with each
//! reason it does not count.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::basics::timefmt::Timestamp;
use crate::charts::Phase;
use crate::console::matrix::value_text;
use crate::console::spec::BatchSpec;
use crate::drive::records::{CellRecord, CellStatus};

/// The most tokens per second one cell's timing may claim and count: well
/// above what one agent run gets from any model server (a few thousand at
/// most), well below what a record with made-up or missing times implies.
pub const MAX_PLAUSIBLE_TOKENS_PER_S: f64 = 20_000.0;

/// The events of a run set that timing reads.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    BatchStart,
    CellStart(String),
    /// The cell and the status it ended with (`None`: the line named none,
    /// or one this reader does not know).
    CellEnd(String, Option<CellStatus>),
    BatchEnd,
}

/// An event and when it happened (unix seconds).
#[derive(Debug, Clone, PartialEq)]
pub struct TimedEvent {
    pub at: f64,
    pub event: Event,
}

/// The events in `events.jsonl` bytes: complete lines only (the last line of
/// a file being appended to may be half written), lines that are not an event
/// timing reads skipped.
pub fn parse_events(bytes: &[u8]) -> Vec<TimedEvent> {
    let (lines, _) = crate::runview::jsonl::complete_lines(bytes);
    lines
        .into_iter()
        .filter_map(|l| {
            let v: Value = serde_json::from_slice(l).ok()?;
            let at = secs(v.get("at")?.as_str()?)?;
            let detail = v.get("detail");
            let cell = || detail.and_then(|d| d.get("cell")).and_then(Value::as_str).map(str::to_owned);
            let event = match v.get("event")?.as_str()? {
                "batch_start" => Event::BatchStart,
                "batch_end" => Event::BatchEnd,
                "cell_start" => Event::CellStart(cell()?),
                "cell_end" => Event::CellEnd(
                    cell()?,
                    detail.and_then(|d| d.get("status")).and_then(|s| CellStatus::deserialize(s).ok()),
                ),
                _ => return None,
            };
            Some(TimedEvent { at, event })
        })
        .collect()
}

/// An RFC 3339 timestamp as unix seconds.
pub fn secs(text: &str) -> Option<f64> {
    Timestamp::parse_rfc3339(text).map(|t| t.millis() as f64 / 1000.0)
}

/// One run set as timing reads it.
pub struct RunSetTiming<'a> {
    pub name: &'a str,
    pub spec: Option<&'a BatchSpec>,
    pub cells: &'a [CellRecord],
    pub events: &'a [TimedEvent],
}

/// A stretch of a cell's time.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Segment {
    pub from: f64,
    pub to: f64,
    pub phase: Phase,
}

/// One cell's timing in one run set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CellTiming {
    pub run_set: String,
    pub cell: String,
    pub factors: BTreeMap<String, Value>,
    pub model: Option<String>,
    pub endpoint: Option<String>,
    pub status: CellStatus,
    pub attempts: u32,
    pub segments: Vec<Segment>,
    /// Seconds its last attempt ran (to `now` while it runs).
    pub duration_s: Option<f64>,
    pub tokens: Option<u64>,
    /// Tokens per second of its last attempt.
    pub tokens_per_s: Option<f64>,
    /// Whether its duration counts (see the module's rules).
    pub counts: bool,
    /// Why it does not count, each reason in words.
    pub why_not: Vec<String>,
    pub ended_at: Option<String>,
}

/// The endpoint a cell ran on: the spec's `endpoint`, its pool's
/// `endpoints[i mod n]`, or the cell's own `endpoint` factor.
pub fn endpoint_of(spec: Option<&BatchSpec>, cell: &CellRecord) -> Option<String> {
    if let Some(s) = spec {
        if let Some(e) = &s.endpoint {
            return Some(e.clone());
        }
        if !s.endpoints.is_empty() {
            if let Some(i) = s.cells.iter().position(|c| c.id == cell.cell) {
                return Some(s.endpoints[i % s.endpoints.len()].clone());
            }
        }
    }
    cell.factors.get("endpoint").map(value_text)
}

/// Every cell's timing in these run sets; `now` ends the stretches of cells
/// still running.
pub fn timings(run_sets: &[RunSetTiming], now: Timestamp) -> Vec<CellTiming> {
    let now = now.millis() as f64 / 1000.0;
    let mut out: Vec<CellTiming> = Vec::new();
    for rs in run_sets {
        let by_cell = events_by_cell(rs.events);
        for c in rs.cells {
            let segments = match by_cell.get(c.cell.as_str()) {
                Some(evs) if evs.iter().any(|e| matches!(e.1, Step::Start)) => segments_from_events(evs, c, now),
                _ => segments_from_record(c, now),
            };
            let last_run = segments.iter().rev().find(|s| s.phase != Phase::Queued && s.phase != Phase::Paused);
            let duration_s = last_run.map(|s| s.to - s.from);
            // What it spent: reported, else counted of its calls.
            let tokens = c.tokens_total();
            let tokens_per_s = match (tokens, duration_s) {
                (Some(t), Some(d)) if d > 0.0 && c.status == CellStatus::Done => Some(t as f64 / d),
                _ => None,
            };
            let mut why_not = Vec::new();
            match c.status {
                CellStatus::Done => {}
                CellStatus::Failed => why_not.push("not complete: it failed".to_owned()),
                CellStatus::Running => why_not.push("not complete: still running".to_owned()),
                CellStatus::Pending => why_not.push("not complete: never started".to_owned()),
                CellStatus::Stopped => why_not.push("not complete: stopped".to_owned()),
            }
            if segments.iter().any(|s| s.phase == Phase::Paused) {
                why_not.push("paused: its batch was stopped while it ran, and resumed".to_owned());
            }
            let started = segments.iter().filter(|s| s.phase != Phase::Queued && s.phase != Phase::Paused).count();
            if segments.iter().any(|s| s.phase == Phase::Retried) {
                why_not.push(format!("retried: {} attempts", started.max(c.attempts as usize)));
            } else if c.attempts > 1 && started <= 1 {
                why_not.push(format!("started {} times in its run set", c.attempts));
            }
            if (c.started_at.is_none() || c.ended_at.is_none()) && c.status == CellStatus::Done {
                why_not.push("its record lacks a start or end time".to_owned());
            }
            if let (Some(rate), Some(t), Some(d)) = (tokens_per_s, tokens, duration_s) {
                if rate > MAX_PLAUSIBLE_TOKENS_PER_S {
                    why_not.push(format!(
                        "implausible: {} tokens in {} is {} tokens/s (more than {} tokens/s is not a real timing)",
                        crate::basics::numfmt::thousands(t),
                        crate::basics::timefmt::span_words(d),
                        crate::basics::numfmt::thousands(rate.round() as u64),
                        crate::basics::numfmt::thousands(MAX_PLAUSIBLE_TOKENS_PER_S as u64)
                    ));
                }
            }
            out.push(CellTiming {
                run_set: rs.name.to_owned(),
                cell: c.cell.clone(),
                factors: c.factors.clone(),
                model: rs.spec.and_then(|s| s.model.clone()),
                endpoint: endpoint_of(rs.spec, c),
                status: c.status,
                attempts: c.attempts,
                segments,
                duration_s,
                tokens,
                tokens_per_s,
                counts: false,
                why_not,
                ended_at: c.ended_at.clone(),
            });
        }
    }
    mark_shared(&mut out);
    for t in &mut out {
        t.counts = t.why_not.is_empty();
    }
    out
}

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Session,
    Start,
    End(Option<CellStatus>),
}

/// Per cell: its own starts and ends, with every batch (re)start between.
fn events_by_cell(events: &[TimedEvent]) -> BTreeMap<&str, Vec<(f64, Step)>> {
    let mut sessions: Vec<f64> = Vec::new();
    let mut by: BTreeMap<&str, Vec<(f64, Step)>> = BTreeMap::new();
    for e in events {
        match &e.event {
            Event::BatchStart => sessions.push(e.at),
            Event::CellStart(c) => by.entry(c.as_str()).or_default().push((e.at, Step::Start)),
            Event::CellEnd(c, s) => by.entry(c.as_str()).or_default().push((e.at, Step::End(*s))),
            Event::BatchEnd => {}
        }
    }
    for v in by.values_mut() {
        v.extend(sessions.iter().map(|t| (*t, Step::Session)));
        // Sessions first at equal times: a batch starts before its cells do.
        v.sort_by(|a, b| a.0.total_cmp(&b.0).then((!matches!(a.1, Step::Session)).cmp(&!matches!(b.1, Step::Session))));
    }
    by
}

fn segments_from_events(evs: &[(f64, Step)], c: &CellRecord, now: f64) -> Vec<Segment> {
    let mut out = Vec::new();
    let mut session: Option<f64> = None;
    let mut open: Option<f64> = None;
    let mut last_end: Option<(f64, Option<CellStatus>)> = None;
    for (at, step) in evs {
        match step {
            Step::Session => {
                if let Some(a) = open.take() {
                    // A batch restarted while this attempt had no end: its
                    // driver was killed, and the attempt is run again.
                    out.push(Segment { from: a, to: *at, phase: Phase::Retried });
                    last_end = Some((*at, None));
                }
                if let Some((t, s)) = &last_end {
                    if *s == Some(CellStatus::Stopped) && *at > *t {
                        out.push(Segment { from: *t, to: *at, phase: Phase::Paused });
                    }
                }
                session = Some(*at);
            }
            Step::Start => {
                // Queued since its batch (re)started or its last attempt
                // ended, whichever was later.
                let queued_from = match (&last_end, session) {
                    (Some((t, _)), Some(ss)) => ss.max(*t),
                    (Some((t, _)), None) => *t,
                    (None, Some(ss)) => ss,
                    (None, None) => *at,
                };
                if *at > queued_from {
                    out.push(Segment { from: queued_from, to: *at, phase: Phase::Queued });
                }
                open = Some(*at);
                last_end = None;
            }
            Step::End(status) => {
                if let Some(a) = open.take() {
                    let phase = if *status == Some(CellStatus::Failed) { Phase::Failed } else { Phase::Running };
                    out.push(Segment { from: a, to: *at, phase });
                }
                last_end = Some((*at, *status));
            }
        }
    }
    if let Some(a) = open {
        let to =
            if c.status == CellStatus::Running { now } else { c.ended_at.as_deref().and_then(secs).unwrap_or(now) };
        out.push(Segment { from: a, to: to.max(a), phase: Phase::Running });
    }
    // A failed attempt followed by another attempt was retried.
    let attempt_idx: Vec<usize> = out
        .iter()
        .enumerate()
        .filter(|(_, s)| matches!(s.phase, Phase::Running | Phase::Failed | Phase::Retried))
        .map(|(i, _)| i)
        .collect();
    for w in attempt_idx.windows(2) {
        if out[w[0]].phase == Phase::Failed {
            out[w[0]].phase = Phase::Retried;
        }
    }
    out
}

fn segments_from_record(c: &CellRecord, now: f64) -> Vec<Segment> {
    let Some(from) = c.started_at.as_deref().and_then(secs) else { return Vec::new() };
    let to = match (c.status, c.ended_at.as_deref().and_then(secs)) {
        (_, Some(t)) => t,
        (CellStatus::Running, None) => now,
        _ => return Vec::new(),
    };
    let phase = if c.status == CellStatus::Failed { Phase::Failed } else { Phase::Running };
    vec![Segment { from, to: to.max(from), phase }]
}

/// A run set's stretch on an endpoint: from, to, run set.
type Span = (f64, f64, String);

/// Marks every cell whose endpoint served another run set's cells while it
/// ran. Per endpoint, each run set's span (its cells' first start to last
/// end) is compared with each cell's running stretches.
fn mark_shared(out: &mut [CellTiming]) {
    // endpoint → [(from, to, run set)], sorted by from, with the running
    // maximum of `to` so a scan can stop early.
    let mut spans: BTreeMap<String, BTreeMap<String, (f64, f64)>> = BTreeMap::new();
    for t in out.iter() {
        let Some(e) = &t.endpoint else { continue };
        for s in t.segments.iter().filter(|s| s.phase != Phase::Queued && s.phase != Phase::Paused) {
            let span = spans.entry(e.clone()).or_default().entry(t.run_set.clone()).or_insert((s.from, s.to));
            span.0 = span.0.min(s.from);
            span.1 = span.1.max(s.to);
        }
    }
    let index: BTreeMap<String, (Vec<Span>, Vec<f64>)> = spans
        .into_iter()
        .map(|(e, by_rs)| {
            let mut v: Vec<Span> = by_rs.into_iter().map(|(rs, (a, b))| (a, b, rs)).collect();
            v.sort_by(|x, y| x.0.total_cmp(&y.0));
            let mut max = f64::NEG_INFINITY;
            let prefix: Vec<f64> = v
                .iter()
                .map(|x| {
                    max = max.max(x.1);
                    max
                })
                .collect();
            (e, (v, prefix))
        })
        .collect();
    for t in out.iter_mut() {
        let Some((spans, prefix)) = t.endpoint.as_ref().and_then(|e| index.get(e)) else { continue };
        let mut others: Vec<&str> = Vec::new();
        for s in t.segments.iter().filter(|s| s.phase != Phase::Queued && s.phase != Phase::Paused) {
            let upto = spans.partition_point(|x| x.0 < s.to);
            for i in (0..upto).rev() {
                if prefix[i] <= s.from {
                    break;
                }
                let (a, b, rs) = &spans[i];
                if *rs != t.run_set && *a < s.to && *b > s.from && !others.contains(&rs.as_str()) {
                    others.push(rs);
                }
            }
        }
        if !others.is_empty() {
            others.sort_unstable();
            let shown: Vec<&str> = others.iter().take(3).copied().collect();
            let more = if others.len() > 3 { format!(" and {} more", others.len() - 3) } else { String::new() };
            t.why_not.push(format!(
                "endpoint {} shared: run set {}{more} used it at the same time",
                t.endpoint.as_deref().unwrap_or(""),
                shown.join(", ")
            ));
        }
    }
}

/// Counted and not counted cells, and how often each kind of reason appears.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Validity {
    pub counted: u64,
    pub not_counted: u64,
    /// Reason kind (`not complete`, `paused`, `retried`, `started`, `endpoint`,
    /// `its record`) → cells, most common first.
    pub reasons: Vec<(String, u64)>,
}

pub fn validity(ts: &[CellTiming]) -> Validity {
    let mut v = Validity::default();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for t in ts {
        if t.counts {
            v.counted += 1;
        } else {
            v.not_counted += 1;
        }
        for r in &t.why_not {
            let kind = r.split([':', ' ']).next().unwrap_or(r);
            let kind = match kind {
                "not" => "not complete",
                "its" => "no start or end time",
                "started" => "started more than once",
                "endpoint" => "endpoint shared",
                k => k,
            };
            *kinds.entry(kind.to_owned()).or_default() += 1;
        }
    }
    v.reasons = kinds.into_iter().collect();
    v.reasons.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    v
}

/// Durations and throughput over the cells that count.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingSummary {
    pub counted: u64,
    pub median_s: Option<f64>,
    pub p90_s: Option<f64>,
    /// Sum of counted cells' tokens over the sum of their seconds.
    pub tokens_per_s: Option<f64>,
    pub tokens: u64,
    /// Hours the counted cells ran.
    pub cell_hours: f64,
}

pub fn summary<'a>(ts: impl IntoIterator<Item = &'a CellTiming>) -> TimingSummary {
    let mut durations: Vec<f64> = Vec::new();
    let (mut tok, mut tok_secs) = (0u64, 0.0f64);
    for t in ts.into_iter().filter(|t| t.counts) {
        let Some(d) = t.duration_s else { continue };
        durations.push(d);
        if let Some(k) = t.tokens {
            tok += k;
            tok_secs += d;
        }
    }
    durations.sort_by(f64::total_cmp);
    let q = |p: f64| -> Option<f64> {
        if durations.is_empty() {
            return None;
        }
        // Nearest rank.
        let i = ((p * durations.len() as f64).ceil() as usize).clamp(1, durations.len()) - 1;
        Some(durations[i])
    };
    TimingSummary {
        counted: durations.len() as u64,
        median_s: q(0.5),
        p90_s: q(0.9),
        tokens_per_s: (tok_secs > 0.0).then(|| tok as f64 / tok_secs),
        tokens: tok,
        cell_hours: durations.iter().sum::<f64>() / 3600.0,
    }
}

/// Throughput over time, per `endpoint · model`: the counted cells ending in
/// each of up to `buckets` equal stretches of time, their tokens over their
/// seconds. Returns (series name, [(bucket middle, tokens/s)]).
pub fn throughput(ts: &[CellTiming], buckets: usize) -> Vec<(String, Vec<(f64, f64)>)> {
    let pts: Vec<(String, f64, u64, f64)> = ts
        .iter()
        .filter(|t| t.counts)
        .filter_map(|t| {
            let d = t.duration_s.filter(|d| *d > 0.0)?;
            let end = t.segments.last()?.to;
            let name = format!(
                "{} · {}",
                t.endpoint.as_deref().unwrap_or("no endpoint"),
                t.model.as_deref().unwrap_or("no model")
            );
            Some((name, end, t.tokens?, d))
        })
        .collect();
    if pts.is_empty() || buckets == 0 {
        return Vec::new();
    }
    let lo = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let hi = pts.iter().map(|p| p.1).fold(f64::NEG_INFINITY, f64::max);
    let width = ((hi - lo) / buckets as f64).max(1.0);
    let mut by: BTreeMap<String, BTreeMap<usize, (u64, f64)>> = BTreeMap::new();
    for (name, end, tok, d) in pts {
        let b = (((end - lo) / width) as usize).min(buckets - 1);
        let e = by.entry(name).or_default().entry(b).or_default();
        e.0 += tok;
        e.1 += d;
    }
    by.into_iter()
        .map(|(name, bs)| {
            let points = bs.into_iter().map(|(b, (tok, d))| (lo + (b as f64 + 0.5) * width, tok as f64 / d)).collect();
            (name, points)
        })
        .collect()
}

/// The most cells one timeline draws (the table below it lists them all).
pub const TIMELINE_ROWS: usize = 120;
/// The most not-counted cells the view lists with their reasons.
pub const NOT_COUNTED_SHOWN: usize = 200;

/// The Timing view: one run set's timeline, and over the whole scope the
/// validity, the durations and the throughput.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct TimingView {
    pub scope: String,
    /// Run sets with cells in scope, newest first.
    pub run_sets: Vec<String>,
    /// The run set the timeline shows (the newest unless one was asked for).
    pub run_set: Option<String>,
    /// Its cells in scope, in the order the timeline draws them (by start).
    pub cells: Vec<CellTiming>,
    pub timeline: crate::charts::Chart,
    pub validity: Validity,
    /// Cells whose timings do not count, with why (the first
    /// [`NOT_COUNTED_SHOWN`], newest run sets first).
    pub not_counted: Vec<CellTiming>,
    /// Over the counted cells in scope.
    pub summary: TimingSummary,
    /// The same per endpoint.
    pub by_endpoint: Vec<(String, TimingSummary)>,
    pub throughput: crate::charts::Chart,
}

/// Builds the view from every cell's timing in scope; `run_sets` are the
/// scope's run sets newest first; `run_set` the one asked for, if any.
pub fn timing_view(all: &[CellTiming], run_sets: Vec<String>, run_set: Option<&str>, scope: String) -> TimingView {
    let chosen = run_set.map(str::to_owned).or_else(|| run_sets.first().cloned());
    let mut cells: Vec<CellTiming> = all.iter().filter(|t| Some(&t.run_set) == chosen.as_ref()).cloned().collect();
    let first = |t: &CellTiming| t.segments.first().map_or(f64::INFINITY, |s| s.from);
    cells.sort_by(|a, b| first(a).total_cmp(&first(b)).then(a.cell.cmp(&b.cell)));
    let rank: BTreeMap<&str, usize> = run_sets.iter().enumerate().map(|(i, n)| (n.as_str(), i)).collect();
    let mut not_counted: Vec<&CellTiming> = all.iter().filter(|t| !t.counts).collect();
    not_counted.sort_by_key(|t| (rank.get(t.run_set.as_str()).copied().unwrap_or(usize::MAX), t.cell.clone()));
    let mut endpoints: BTreeMap<String, Vec<&CellTiming>> = BTreeMap::new();
    for t in all {
        endpoints.entry(t.endpoint.clone().unwrap_or_else(|| "(no endpoint)".into())).or_default().push(t);
    }
    #[cfg_attr(not(feature = "charts"), allow(unused_mut))]
    let mut view = TimingView {
        scope,
        run_sets,
        run_set: chosen,
        validity: validity(all),
        not_counted: not_counted.into_iter().take(NOT_COUNTED_SHOWN).cloned().collect(),
        summary: summary(all),
        by_endpoint: endpoints.into_iter().map(|(e, ts)| (e, summary(ts))).collect(),
        cells,
        timeline: Default::default(),
        throughput: Default::default(),
    };
    #[cfg(feature = "charts")]
    {
        use crate::charts::{lines_over_time, timeline, Series, TimelineRow};
        let rows: Vec<TimelineRow> = view
            .cells
            .iter()
            .take(TIMELINE_ROWS)
            .map(|t| TimelineRow {
                label: t.cell.clone(),
                segments: t.segments.iter().map(|s| (s.from, s.to, s.phase)).collect(),
            })
            .collect();
        let title = match (&view.run_set, view.cells.len()) {
            (Some(rs), n) if n > TIMELINE_ROWS => format!("{rs}: the first {TIMELINE_ROWS} of {n} cells"),
            (Some(rs), _) => format!("{rs}: each cell's time"),
            (None, _) => "Each cell's time".to_owned(),
        };
        view.timeline = timeline(&title, &rows);
        let series: Vec<Series> =
            throughput(all, 24).into_iter().map(|(name, points)| Series { name, points }).collect();
        view.throughput =
            lines_over_time("Throughput by endpoint · model (counted cells)", "tokens per second", &series);
    }
    view
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rec(
        cell: &str,
        status: CellStatus,
        attempts: u32,
        start: &str,
        end: Option<&str>,
        tokens: Option<u64>,
    ) -> CellRecord {
        CellRecord {
            schema_version: 1,
            cell: cell.into(),
            factors: [("task".to_string(), json!("t1"))].into(),
            status,
            attempts,
            started_at: Some(start.into()),
            ended_at: end.map(str::to_owned),
            exit_code: None,
            tokens,
            score: None,
            log: None,
            ..Default::default()
        }
    }

    fn spec(endpoint: &str) -> BatchSpec {
        crate::console::spec::parse(
            "s.json",
            json!({"schema_version": 1, "label": "b", "endpoint": endpoint, "cells": [{"factors": {"task": "t1"}}]})
                .to_string()
                .as_bytes(),
        )
        .unwrap()
    }

    const NOW: Timestamp = Timestamp::from_millis(1_764_600_000_000);

    #[test]
    fn events_give_queue_attempts_pause_and_retry() {
        let events = parse_events(
            br#"{"at":"2026-11-30T10:00:00Z","event":"batch_start","detail":{}}
{"at":"2026-11-30T10:00:05Z","event":"cell_start","detail":{"cell":"c-1","pid":1}}
{"at":"2026-11-30T10:00:10Z","event":"cell_start","detail":{"cell":"c-2","pid":2}}
{"at":"2026-11-30T10:00:20Z","event":"cell_end","detail":{"cell":"c-2","status":"failed","exit_code":3}}
{"at":"2026-11-30T10:00:30Z","event":"cell_end","detail":{"cell":"c-1","status":"stopped","exit_code":143}}
{"at":"2026-11-30T10:00:31Z","event":"batch_end","detail":{}}
{"at":"2026-11-30T11:00:00Z","event":"batch_start","detail":{}}
{"at":"2026-11-30T11:00:02Z","event":"cell_start","detail":{"cell":"c-1","pid":3}}
{"at":"2026-11-30T11:00:03Z","event":"cell_start","detail":{"cell":"c-2","pid":4}}
{"at":"2026-11-30T11:00:42Z","event":"cell_end","detail":{"cell":"c-1","status":"done","exit_code":0}}
{"at":"2026-11-30T11:00:13Z","event":"cell_end","detail":{"cell":"c-2","status":"done","exit_code":0}}
{"at":"2026-11-30T11:00:50Z","event":"cell_end","detail":{"cell":"c-3","#,
        );
        assert_eq!(events.len(), 11, "the torn last line is not read");
        let cells = [
            rec("c-1", CellStatus::Done, 2, "2026-11-30T11:00:02Z", Some("2026-11-30T11:00:42Z"), Some(400)),
            rec("c-2", CellStatus::Done, 2, "2026-11-30T11:00:03Z", Some("2026-11-30T11:00:13Z"), Some(100)),
        ];
        let s = spec("gpu-a");
        let ts = timings(&[RunSetTiming { name: "b-1", spec: Some(&s), cells: &cells, events: &events }], NOW);
        let phases = |i: usize| ts[i].segments.iter().map(|s| (s.phase, s.to - s.from)).collect::<Vec<_>>();
        assert_eq!(
            phases(0),
            vec![
                (Phase::Queued, 5.0),
                (Phase::Running, 25.0),
                (Phase::Paused, 3570.0),
                (Phase::Queued, 2.0),
                (Phase::Running, 40.0)
            ]
        );
        assert_eq!(
            phases(1),
            vec![(Phase::Queued, 10.0), (Phase::Retried, 10.0), (Phase::Queued, 3.0), (Phase::Running, 10.0)]
        );
        assert_eq!(ts[0].duration_s, Some(40.0));
        assert_eq!(ts[0].tokens_per_s, Some(10.0));
        assert_eq!(ts[0].endpoint.as_deref(), Some("gpu-a"));
        assert!(!ts[0].counts && ts[0].why_not[0].starts_with("paused"), "{:?}", ts[0].why_not);
        assert!(!ts[1].counts && ts[1].why_not == vec!["retried: 2 attempts".to_string()], "{:?}", ts[1].why_not);
        let v = validity(&ts);
        assert_eq!((v.counted, v.not_counted), (0, 2));
        assert_eq!(v.reasons, vec![("paused".to_string(), 1), ("retried".to_string(), 1)]);
    }

    #[test]
    fn a_cell_counts_only_alone_on_its_endpoint_and_complete() {
        let a = [rec("c-1", CellStatus::Done, 1, "2026-11-30T10:00:00Z", Some("2026-11-30T10:01:40Z"), Some(1000))];
        let b = [rec("c-2", CellStatus::Done, 1, "2026-11-30T10:01:00Z", Some("2026-11-30T10:02:00Z"), Some(10))];
        let c = [rec("c-3", CellStatus::Done, 1, "2026-11-30T10:05:00Z", Some("2026-11-30T10:06:00Z"), Some(600))];
        let d = [rec("c-4", CellStatus::Failed, 1, "2026-11-30T10:05:00Z", Some("2026-11-30T10:06:00Z"), None)];
        let (ga, gb) = (spec("gpu-a"), spec("gpu-b"));
        let ts = timings(
            &[
                RunSetTiming { name: "a", spec: Some(&ga), cells: &a, events: &[] },
                RunSetTiming { name: "b", spec: Some(&ga), cells: &b, events: &[] },
                RunSetTiming { name: "c", spec: Some(&ga), cells: &c, events: &[] },
                RunSetTiming { name: "d", spec: Some(&gb), cells: &d, events: &[] },
            ],
            NOW,
        );
        assert_eq!(ts[0].why_not, vec!["endpoint gpu-a shared: run set b used it at the same time".to_string()]);
        assert_eq!(ts[1].why_not, vec!["endpoint gpu-a shared: run set a used it at the same time".to_string()]);
        assert!(ts[2].counts, "after the others ended it had gpu-a alone: {:?}", ts[2].why_not);
        assert_eq!(ts[3].why_not, vec!["not complete: it failed".to_string()]);
        let s = summary(&ts);
        assert_eq!((s.counted, s.median_s, s.tokens_per_s, s.tokens), (1, Some(60.0), Some(10.0), 600));
        let tp = throughput(&ts, 10);
        assert_eq!(
            tp,
            vec![("gpu-a · no model".to_string(), vec![(secs("2026-11-30T10:06:00Z").unwrap() + 0.5, 10.0)])]
        );
    }

    #[test]
    fn an_implausible_throughput_does_not_count_and_is_not_drawn() {
        // 38,600 tokens in 0.1 s: 386,000 tokens/s.
        let fast =
            [rec("c-1", CellStatus::Done, 1, "2026-11-30T10:00:00Z", Some("2026-11-30T10:00:00.100Z"), Some(38_600))];
        let fair = [rec("c-2", CellStatus::Done, 1, "2026-11-30T11:00:00Z", Some("2026-11-30T11:01:00Z"), Some(6_000))];
        let (ga, gb) = (spec("gpu-a"), spec("gpu-b"));
        let ts = timings(
            &[
                RunSetTiming { name: "a", spec: Some(&ga), cells: &fast, events: &[] },
                RunSetTiming { name: "b", spec: Some(&gb), cells: &fair, events: &[] },
            ],
            NOW,
        );
        assert!(!ts[0].counts);
        assert_eq!(
            ts[0].why_not,
            vec!["implausible: 38,600 tokens in 0.10 s is 386,000 tokens/s (more than 20,000 tokens/s is not a real timing)"
                .to_string()]
        );
        assert!(ts[1].counts, "{:?}", ts[1].why_not);
        let v = validity(&ts);
        assert_eq!(v.reasons, vec![("implausible".to_string(), 1)]);
        let tp = throughput(&ts, 10);
        assert!(tp.iter().all(|(_, pts)| pts.iter().all(|p| p.1 <= MAX_PLAUSIBLE_TOKENS_PER_S)), "{tp:?}");
    }

    #[test]
    fn a_running_cell_runs_to_now_and_does_not_count() {
        let cells = [rec("c-1", CellStatus::Running, 1, "2025-12-01T14:39:00Z", None, None)];
        let ts = timings(&[RunSetTiming { name: "a", spec: None, cells: &cells, events: &[] }], NOW);
        assert_eq!(ts[0].duration_s, Some(60.0));
        assert_eq!(ts[0].why_not, vec!["not complete: still running".to_string()]);
    }

    #[test]
    fn pool_cells_run_on_their_endpoint_by_position() {
        let s = crate::console::spec::parse(
            "s.json",
            json!({"schema_version": 1, "label": "b", "endpoints": ["e0", "e1"],
                   "cells": [{"factors": {"task": "t1"}}, {"factors": {"task": "t2"}}]})
            .to_string()
            .as_bytes(),
        )
        .unwrap();
        let mut r = rec(&s.cells[1].id, CellStatus::Done, 1, "2026-11-30T10:00:00Z", None, None);
        assert_eq!(endpoint_of(Some(&s), &r).as_deref(), Some("e1"));
        r.cell = "c-unknown".into();
        r.factors.insert("endpoint".into(), json!("e9"));
        assert_eq!(endpoint_of(Some(&s), &r).as_deref(), Some("e9"));
    }
}
