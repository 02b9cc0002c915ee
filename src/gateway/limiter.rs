//! One rate limit per endpoint, shared by every cell of the batch: a
//! concurrency limit that falls when the endpoint says it is overloaded and
//! rises again as calls succeed (AIMD), a wait for as long as `Retry-After`
//! says, and the calls held meanwhile let go fairly — one cell's turn after
//! another's, each cell's calls in the order they came.
//!
//! **Policy.** The gateway never retries a call itself: a 429/503/529 is
//! passed to the client as the endpoint sent it (the harness owns its
//! retries). What the gateway does is hold the *next* calls of every cell:
//!
//! - the concurrency limit starts at `max_concurrency` (none set: no limit,
//!   until the first overload), halves at an overload (at most once per
//!   [`DECREASE_EVERY_MS`], since calls started together fail together; never
//!   below 1), and grows by one for each `limit` calls answered without
//!   overload, up to `max_concurrency`;
//! - after an overload, no call is let go until its `Retry-After` (seconds,
//!   at most [`HOLD_MAX_MS`]; 1 s when the answer does not say) has passed.
//!
//! All times are milliseconds on a clock the caller passes in.

use std::collections::{BTreeMap, VecDeque};

/// The least time between two decreases of the limit.
pub const DECREASE_EVERY_MS: u64 = 1_000;
/// The longest `Retry-After` honoured (a longer one is held this long).
pub const HOLD_MAX_MS: u64 = 60_000;
/// The hold after an overload whose answer named no `Retry-After`.
pub const HOLD_DEFAULT_MS: u64 = 1_000;
/// The limit when none is set: high enough never to hold a batch's cells.
const UNLIMITED: f64 = 1_000_000.0;

/// A call waiting for its turn.
pub type Ticket = u64;

/// How a call ended, for the limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Answer {
    /// Answered (any status but an overload), or failed without an answer.
    Served,
    /// 429, 503 or 529: the endpoint is overloaded; `retry_after_ms` as it said.
    Overloaded { retry_after_ms: Option<u64> },
}

impl Answer {
    /// The answer a status means, with its `Retry-After` header's value.
    pub fn of(status: u16, retry_after: Option<&str>) -> Self {
        if matches!(status, 429 | 503 | 529) {
            let ms = retry_after.and_then(|v| v.trim().parse::<f64>().ok()).filter(|s| s.is_finite() && *s >= 0.0);
            Self::Overloaded { retry_after_ms: ms.map(|s| (s * 1000.0) as u64) }
        } else {
            Self::Served
        }
    }
}

/// One endpoint's limit and the calls it holds.
#[derive(Debug, Clone)]
pub struct Limiter {
    max: Option<u32>,
    limit: f64,
    in_flight: u32,
    /// Calls held, per cell, in the order they came.
    waiting: BTreeMap<String, VecDeque<Ticket>>,
    /// The cell whose call was let go last (the next turn is the one after it).
    last_turn: Option<String>,
    next_ticket: Ticket,
    hold_until: u64,
    last_decrease: Option<u64>,
    /// Overloads, by when (the newest minute's).
    overloads: VecDeque<u64>,
}

/// What a call is told when it asks to go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Turn {
    Go,
    Wait(Ticket),
}

impl Limiter {
    /// `max`: the endpoint's `max_concurrency` (none: no limit until an overload).
    pub fn new(max: Option<u32>) -> Self {
        Self {
            max: max.map(|m| m.max(1)),
            limit: max.map_or(UNLIMITED, |m| m.max(1) as f64),
            in_flight: 0,
            waiting: BTreeMap::new(),
            last_turn: None,
            next_ticket: 0,
            hold_until: 0,
            last_decrease: None,
            overloads: VecDeque::new(),
        }
    }

    /// A call of `cell` asks to go at `now`: it goes at once when nothing is
    /// held and there is room, else it waits for [`Limiter::turns`] to name its ticket.
    pub fn ask(&mut self, cell: &str, now: u64) -> Turn {
        if self.waiting.is_empty() && now >= self.hold_until && (self.in_flight as f64) < self.limit.floor() {
            self.in_flight += 1;
            return Turn::Go;
        }
        self.next_ticket += 1;
        self.waiting.entry(cell.to_owned()).or_default().push_back(self.next_ticket);
        Turn::Wait(self.next_ticket)
    }

    /// A waiting call gave up (its client went away): it is no longer held.
    pub fn forget(&mut self, ticket: Ticket) {
        self.waiting.retain(|_, q| {
            q.retain(|t| *t != ticket);
            !q.is_empty()
        });
    }

    /// A call let go that never went (its client had gone): its room is free
    /// again, and says nothing of the endpoint.
    pub fn returned(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    /// A call that went has ended at `now`, as `answer` says.
    pub fn ended(&mut self, answer: Answer, now: u64) {
        self.in_flight = self.in_flight.saturating_sub(1);
        let ceiling = self.max.map_or(UNLIMITED, |m| m as f64);
        match answer {
            Answer::Served => {
                // Additive increase: one more for each `limit` calls served.
                self.limit = (self.limit + 1.0 / self.limit.max(1.0)).min(ceiling);
            }
            Answer::Overloaded { retry_after_ms } => {
                self.overloads.push_back(now);
                if self.last_decrease.is_none_or(|t| now >= t + DECREASE_EVERY_MS) {
                    // From what was in flight when no limit was set yet.
                    let from = self.limit.min((self.in_flight + 1) as f64);
                    self.limit = (from / 2.0).max(1.0);
                    self.last_decrease = Some(now);
                }
                let hold = retry_after_ms.unwrap_or(HOLD_DEFAULT_MS).min(HOLD_MAX_MS);
                self.hold_until = self.hold_until.max(now + hold);
            }
        }
        self.trim(now);
    }

    fn trim(&mut self, now: u64) {
        while self.overloads.front().is_some_and(|t| *t + 60_000 <= now) {
            self.overloads.pop_front();
        }
    }

    /// The calls let go now, in turn across cells; each counts as in flight.
    pub fn turns(&mut self, now: u64) -> Vec<Ticket> {
        let mut out = Vec::new();
        while now >= self.hold_until && (self.in_flight as f64) < self.limit.floor() && !self.waiting.is_empty() {
            // The first cell after the one served last, in name order, wrapping.
            let cell = match &self.last_turn {
                Some(last) => self
                    .waiting
                    .range::<String, _>((std::ops::Bound::Excluded(last), std::ops::Bound::Unbounded))
                    .next()
                    .or_else(|| self.waiting.iter().next())
                    .map(|(c, _)| c.clone()),
                None => self.waiting.keys().next().cloned(),
            };
            let Some(cell) = cell else { break };
            let queue = self.waiting.get_mut(&cell).expect("a cell with calls held");
            out.push(queue.pop_front().expect("a held call"));
            if queue.is_empty() {
                self.waiting.remove(&cell);
            }
            self.last_turn = Some(cell);
            self.in_flight += 1;
        }
        out
    }

    /// When calls are held only by a `Retry-After`: when it passes.
    pub fn held_until(&self, now: u64) -> Option<u64> {
        (self.hold_until > now).then_some(self.hold_until)
    }

    /// The limit now (none: no limit).
    pub fn limit(&self) -> Option<u32> {
        (self.limit < UNLIMITED).then_some(self.limit.floor() as u32)
    }

    pub fn in_flight(&self) -> u32 {
        self.in_flight
    }

    /// Calls held, in all and of `cell`.
    pub fn waiting(&self) -> usize {
        self.waiting.values().map(VecDeque::len).sum()
    }

    /// Calls held, per cell.
    pub fn waiting_by_cell(&self) -> impl Iterator<Item = (String, usize)> + '_ {
        self.waiting.iter().map(|(c, q)| (c.clone(), q.len()))
    }

    pub fn waiting_of(&self, cell: &str) -> usize {
        self.waiting.get(cell).map_or(0, VecDeque::len)
    }

    /// Overloads answered in the minute before `now`.
    pub fn overloads_last_min(&mut self, now: u64) -> usize {
        self.trim(now);
        self.overloads.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_limit_holds_calls_and_lets_them_go_in_turn_across_cells() {
        let mut l = Limiter::new(Some(2));
        assert_eq!(l.ask("a", 0), Turn::Go);
        assert_eq!(l.ask("a", 0), Turn::Go);
        // Full: a's third call, then b's two, then c's, wait.
        let held: Vec<Ticket> = ["a", "b", "b", "c"]
            .iter()
            .map(|c| match l.ask(c, 0) {
                Turn::Wait(t) => t,
                Turn::Go => panic!("over the limit"),
            })
            .collect();
        assert_eq!((l.waiting(), l.waiting_of("b")), (4, 2));
        assert!(l.turns(0).is_empty(), "no room yet");
        // Each ended call lets one go: a, then b, then c, then b again.
        let mut order = Vec::new();
        for _ in 0..4 {
            l.ended(Answer::Served, 10);
            order.extend(l.turns(10));
        }
        assert_eq!(order, [held[0], held[1], held[3], held[2]]);
        assert_eq!(l.in_flight(), 2);
    }

    #[test]
    fn an_overload_halves_the_limit_holds_for_retry_after_and_successes_raise_it_again() {
        let mut l = Limiter::new(Some(8));
        for _ in 0..8 {
            assert_eq!(l.ask("a", 0), Turn::Go);
        }
        l.ended(Answer::of(429, Some("2")), 100);
        assert_eq!(l.limit(), Some(4));
        // Calls failing together lower it once a second, not once each.
        l.ended(Answer::of(503, None), 200);
        assert_eq!((l.limit(), l.overloads_last_min(200)), (Some(4), 2));
        // Held until the Retry-After has passed, whatever the room.
        for _ in 0..6 {
            l.ended(Answer::Served, 300);
        }
        assert_eq!(l.in_flight(), 0);
        assert!(matches!(l.ask("b", 300), Turn::Wait(_)));
        assert_eq!(l.held_until(300), Some(2_100));
        assert!(l.turns(2_000).is_empty());
        assert_eq!(l.turns(2_100).len(), 1);
        // Additive increase: back to 8 after enough calls served, never past it.
        for _ in 0..200 {
            if l.ask("b", 3_000) == Turn::Go || !l.turns(3_000).is_empty() {
                l.ended(Answer::Served, 3_000);
            }
        }
        assert_eq!(l.limit(), Some(8));
        assert_eq!(l.overloads_last_min(62_000), 0, "a minute later none is recent");
        // Other statuses are the endpoint's answer, not an overload.
        assert_eq!(Answer::of(500, Some("5")), Answer::Served);
        assert_eq!(Answer::of(529, Some("0.5")), Answer::Overloaded { retry_after_ms: Some(500) });
        assert_eq!(Answer::of(429, Some("soon")), Answer::Overloaded { retry_after_ms: None });
    }

    #[test]
    fn with_no_limit_set_calls_go_until_an_overload_sets_one() {
        let mut l = Limiter::new(None);
        for _ in 0..100 {
            assert_eq!(l.ask("a", 0), Turn::Go);
        }
        assert_eq!(l.limit(), None);
        l.ended(Answer::of(429, Some("1")), 10);
        assert_eq!(l.limit(), Some(50), "half of what was in flight");
        assert!(matches!(l.ask("a", 20), Turn::Wait(_)));
        // A waiting call whose client went away is no longer held.
        let Turn::Wait(t) = l.ask("b", 20) else { panic!() };
        l.forget(t);
        assert_eq!(l.waiting_of("b"), 0);
    }
}
