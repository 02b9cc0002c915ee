//! The calls under way at a batch's gateway, as it writes them for the
//! console (`<run set>/.gateway-calls.json`, every second): per cell its
//! calls in flight and since when, its calls held by the rate limit, its
//! overloads in the last minute; per endpoint the limit now. From these the
//! console says why a cell is quiet ([`quiet`]) instead of guessing: a cell
//! with a call in flight or held is never stalled by silence.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::basics::timefmt::{duration_words, Timestamp};

/// A gateway's calls now.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CallsNow {
    /// When it was written.
    pub at: Timestamp,
    #[serde(default)]
    pub cells: BTreeMap<String, CellCalls>,
    #[serde(default)]
    pub endpoints: BTreeMap<String, EndpointCalls>,
}

/// One cell's calls at the gateway.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellCalls {
    /// The endpoint its calls go to.
    pub endpoint: String,
    pub in_flight: u32,
    /// When its oldest call in flight was sent.
    #[serde(default)]
    pub oldest_since: Option<Timestamp>,
    /// Its calls held by the endpoint's rate limit.
    pub waiting: u32,
    /// 429/503/529 answers to it in the last minute.
    pub overloads_last_min: u32,
    /// When its last call was answered (any answer): the cell is alive and
    /// calling, whatever it wrote.
    #[serde(default)]
    pub last_answered: Option<Timestamp>,
}

/// One endpoint's limit and calls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct EndpointCalls {
    /// Its concurrency limit now (none: no limit).
    pub limit: Option<u32>,
    /// Its `max_concurrency` (none: not set).
    pub max: Option<u32>,
    pub in_flight: u32,
    pub waiting: u32,
    pub overloads_last_min: u32,
    /// Calls are held until then, as its last overload's `Retry-After` said.
    #[serde(default)]
    pub held_until: Option<Timestamp>,
}

/// The file a gateway writes its calls to, in its run set's folder.
pub const CALLS_FILE: &str = ".gateway-calls.json";
/// A calls file older than this is not believed: its gateway is gone.
pub const FRESH_S: f64 = 10.0;
/// A call in flight longer than this is its own warning.
pub const CALL_LONG_S: f64 = 600.0;

impl EndpointCalls {
    /// Whether there is anything to say of it: a limit set, or calls under
    /// way, held, or overloaded (an idle endpoint with no limit is not listed).
    pub fn worth_saying(&self) -> bool {
        self.max.is_some()
            || self.limit.is_some()
            || self.in_flight > 0
            || self.waiting > 0
            || self.overloads_last_min > 0
    }
}

impl CallsNow {
    /// The file's word, if it is fresh at `now`.
    pub fn fresh(self, now: Timestamp) -> Option<Self> {
        ((now.0 - self.at.0) as f64 / 1000.0 <= FRESH_S).then_some(self)
    }
}

/// Why a running cell is quiet, from its calls at the gateway — or not
/// (none: it has neither a call in flight nor one held, and silence is the
/// stall rule's to judge).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Quiet {
    /// Its calls are held by its endpoint's rate limit.
    Waiting { endpoint: String, calls: u32, words: String },
    /// A call is in flight; `long` past [`CALL_LONG_S`].
    InFlight { calls: u32, for_s: f64, long: bool, words: String },
}

impl Quiet {
    pub fn words(&self) -> &str {
        match self {
            Self::Waiting { words, .. } | Self::InFlight { words, .. } => words,
        }
    }
}

/// A wait or a call's age in words, to the second under an hour
/// ("4 min 10 s"): a call's progress is watched closely.
fn for_words(secs: f64) -> String {
    let s = secs.max(0.0).round() as u64;
    match s {
        60..=3599 if !s.is_multiple_of(60) => format!("{} min {} s", s / 60, s % 60),
        _ => duration_words(secs),
    }
}

fn calls_word(n: u32) -> String {
    match n {
        1 => "one call".into(),
        n => format!("{n} calls"),
    }
}

/// Why `cell` is quiet now, from its gateway's word (fresh).
pub fn quiet(c: &CellCalls, endpoint: Option<&EndpointCalls>, now: Timestamp) -> Option<Quiet> {
    if c.waiting > 0 {
        let why = match endpoint.and_then(|e| e.held_until.filter(|t| *t > now)) {
            Some(t) => {
                format!("held by the rate limit: it asked to wait {} more", for_words((t.0 - now.0) as f64 / 1000.0))
            }
            None => "held by the rate limit".to_owned(),
        };
        let overloads = match c.overloads_last_min.max(endpoint.map_or(0, |e| e.overloads_last_min)) {
            0 => String::new(),
            n => format!(" ({n} × 429/503 in the last minute)"),
        };
        return Some(Quiet::Waiting {
            endpoint: c.endpoint.clone(),
            calls: c.waiting,
            words: format!("waiting on {}: {} {why}{overloads}", c.endpoint, calls_word(c.waiting)),
        });
    }
    if c.in_flight > 0 {
        let for_s = c.oldest_since.map_or(0.0, |t| ((now.0 - t.0).max(0)) as f64 / 1000.0);
        let long = for_s > CALL_LONG_S;
        let mut words = format!("{} in flight for {}", calls_word(c.in_flight), for_words(for_s));
        if long {
            words.push_str(&format!(" — longer than {}", duration_words(CALL_LONG_S)));
        }
        return Some(Quiet::InFlight { calls: c.in_flight, for_s, long, words });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_quiet_cell_is_explained_by_its_calls() {
        let now = Timestamp(1_000_000);
        let held = CellCalls { endpoint: "paid-api".into(), waiting: 3, overloads_last_min: 2, ..Default::default() };
        let e = EndpointCalls { held_until: Some(Timestamp(1_004_000)), overloads_last_min: 5, ..Default::default() };
        assert_eq!(
            quiet(&held, Some(&e), now).unwrap().words(),
            "waiting on paid-api: 3 calls held by the rate limit: it asked to wait 4 s more (5 × 429/503 in the last minute)"
        );
        assert_eq!(
            quiet(&held, None, now).unwrap().words(),
            "waiting on paid-api: 3 calls held by the rate limit (2 × 429/503 in the last minute)"
        );
        let flying = CellCalls { in_flight: 1, oldest_since: Some(Timestamp(1_000_000 - 250_000)), ..held.clone() };
        let flying = CellCalls { waiting: 0, ..flying };
        let q = quiet(&flying, None, now).unwrap();
        assert_eq!(q.words(), "one call in flight for 4 min 10 s");
        assert!(matches!(q, Quiet::InFlight { long: false, .. }));
        let stuck = CellCalls { oldest_since: Some(Timestamp(1_000_000 - 700_000)), in_flight: 2, ..flying.clone() };
        let q = quiet(&stuck, None, now).unwrap();
        assert!(matches!(q, Quiet::InFlight { long: true, calls: 2, .. }), "{q:?}");
        assert!(q.words().ends_with("— longer than 10 min"), "{}", q.words());
        assert_eq!(quiet(&CellCalls::default(), None, now), None);
        // A word older than 10 s is not believed.
        let file = CallsNow { at: Timestamp(now.0 - 11_000), ..Default::default() };
        assert!(file.clone().fresh(now).is_none());
        assert!(CallsNow { at: now, ..file }.fresh(now).is_some());
    }
}
