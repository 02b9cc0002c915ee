//! What a batch spends while it runs, the caps that pause it, and cells that
//! have gone silent — all decided from data, `now` passed in.
//!
//! **Where tokens come from.** A running cell's calls are counted as its
//! files grow (the adapter feeds only the appended bytes or the new files):
//! `{out}/progress.jsonl` (one line per call, [`progress_line`]) when the
//! cell writes one, else the call files of the run directory it owns
//! (`{out}/calls/NNNN.json`, [`call_file`]). An ended cell that reported
//! tokens in its `result.json` counts what it reported instead (its own
//! total is the last word) — unless what was counted of its calls is more:
//! a harness stopped mid-call does not report the call the stop cut short,
//! which the endpoint answered and the batch's gateway counted, and a cap
//! must see it. One that reported none keeps what was counted —
//! its driver counts its calls once more when it ends and writes the count
//! into its record (`counted`), so what was counted outlives the batch.
//!
//! **Prices.** Per 1,000 tokens, from the model's catalogue entry:
//! input, output and cached separately when given, else
//! `price_per_1k_tokens` for all three. Tokens reported without a split
//! (a `result.json` `tokens` alone, a progress line's `tokens`) are priced
//! at the dearest of the model's prices, so a cap is never crossed unseen.
//!
//! **Caps** ([`check_caps`]): per batch, per UTC day and per campaign, in
//! money and in tokens, from `[budget]`. **Stalls** ([`stall_after`],
//! [`stalled`]): a running cell that has written nothing for longer than its
//! task's threshold.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::basics::timefmt::Timestamp;
use crate::campaign::{Budget, CampaignConfig, ModelEntry, StallConfig};

/// A cell's progress file, in its own folder (`{out}/progress.jsonl`).
pub const PROGRESS_FILE: &str = "progress.jsonl";

/// Tokens by kind. `unsplit`: reported only as a total.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub output: u64,
    pub cached: u64,
    pub unsplit: u64,
}

impl Tokens {
    pub fn total(&self) -> u64 {
        self.input + self.output + self.cached + self.unsplit
    }

    /// By kind, when any was counted apart: "12,000 in, 3,400 out, 800
    /// cached" (a total alone says "not split"); none when every token came
    /// as a total only, or there is none.
    pub fn split_words(&self) -> Option<String> {
        let parts: Vec<String> =
            [(self.input, "in"), (self.output, "out"), (self.cached, "cached"), (self.unsplit, "not split")]
                .into_iter()
                .filter(|(n, _)| *n > 0)
                .map(|(n, what)| format!("{} {what}", crate::basics::numfmt::thousands(n)))
                .collect();
        (parts.len() > 1 || self.unsplit == 0 && !parts.is_empty()).then(|| parts.join(", "))
    }

    pub fn add(&mut self, o: &Tokens) {
        self.input += o.input;
        self.output += o.output;
        self.cached += o.cached;
        self.unsplit += o.unsplit;
    }
}

/// A model's prices per 1,000 tokens.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Prices {
    pub input: f64,
    pub output: f64,
    pub cached: f64,
}

impl Prices {
    /// The entry's prices: each split price when given, else the simple one.
    pub fn of(m: &ModelEntry) -> Self {
        let simple = m.price_per_1k_tokens;
        Self {
            input: m.price_input_per_1k.unwrap_or(simple),
            output: m.price_output_per_1k.unwrap_or(simple),
            cached: m.price_cached_per_1k.unwrap_or(simple),
        }
    }

    /// Whether anything is priced at all (a free or local model costs nothing,
    /// and its cost is not shown as 0).
    pub fn any(&self) -> bool {
        self.input > 0.0 || self.output > 0.0 || self.cached > 0.0
    }

    pub fn cost(&self, t: &Tokens) -> f64 {
        let dearest = self.input.max(self.output).max(self.cached);
        (t.input as f64 * self.input
            + t.output as f64 * self.output
            + t.cached as f64 * self.cached
            + t.unsplit as f64 * dearest)
            / 1000.0
    }
}

/// A cell's model, as its spend is priced: the spec's `model`, else the
/// cell's own `model` factor.
pub fn cell_model(
    spec_model: Option<&str>,
    factors: Option<&std::collections::BTreeMap<String, serde_json::Value>>,
) -> Option<String> {
    spec_model
        .map(str::to_owned)
        .or_else(|| factors.and_then(|f| f.get("model")).map(crate::console::matrix::value_text))
}

/// The prices of `model` in `cfg` (none: not in the catalogue, or free).
pub fn prices_of(cfg: &CampaignConfig, model: Option<&str>) -> Option<Prices> {
    model.and_then(|m| cfg.model(m)).map(Prices::of).filter(Prices::any)
}

/// One LLM call as a cell reported it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CallSpend {
    /// When it ended, as written (none: when it was read).
    pub at: Option<Timestamp>,
    pub model: Option<String>,
    pub tokens: Tokens,
    /// How long it took, when said (a call file's `started_at` to
    /// `ended_at`; a progress line's `latency_s`): endpoint telemetry.
    pub latency_s: Option<f64>,
    /// The answer reported no usage (a progress line's `"usage":
    /// "missing"`, as the gateway writes for a stream that ended without
    /// it): a call made, its tokens unknown.
    pub unmetered: bool,
}

fn whole(v: &serde_json::Value, field: &str) -> Result<u64, String> {
    match v.get(field) {
        None | Some(serde_json::Value::Null) => Ok(0),
        Some(x) => x.as_u64().ok_or_else(|| format!("{field}: must be a whole number >= 0, not {x}")),
    }
}

fn object(bytes: &[u8]) -> Result<serde_json::Value, String> {
    let v: serde_json::Value = crate::basics::json::from_slice_lenient(bytes).map_err(|e| format!("not JSON: {e}"))?;
    if v.is_object() {
        Ok(v)
    } else {
        Err("not a JSON object".into())
    }
}

fn at_of(v: &serde_json::Value, field: &str) -> Option<Timestamp> {
    v.get(field).and_then(serde_json::Value::as_str).and_then(Timestamp::parse_rfc3339)
}

/// A line of a progress file: `{"ts", "model", "input_tokens",
/// "output_tokens", "cached_tokens", "tokens"}`, each optional but at least
/// one count. `tokens` beside a split counts only what the split leaves out.
pub fn progress_line(line: &[u8]) -> Result<CallSpend, String> {
    let v = object(line)?;
    let (input, output, cached) =
        (whole(&v, "input_tokens")?, whole(&v, "output_tokens")?, whole(&v, "cached_tokens")?);
    let total = whole(&v, "tokens")?;
    let counted = ["input_tokens", "output_tokens", "cached_tokens", "tokens"].iter().any(|f| v.get(f).is_some());
    if !counted {
        return Err("no token count (input_tokens, output_tokens, cached_tokens or tokens)".into());
    }
    let unsplit = total.saturating_sub(input + output + cached);
    let latency_s = match v.get("latency_s") {
        None | Some(serde_json::Value::Null) => None,
        Some(x) => {
            Some(x.as_f64().filter(|l| *l >= 0.0).ok_or_else(|| format!("latency_s: must be a number >= 0, not {x}"))?)
        }
    };
    Ok(CallSpend {
        at: at_of(&v, "ts"),
        model: v.get("model").and_then(|m| m.as_str()).map(str::to_owned),
        tokens: Tokens { input, output, cached, unsplit },
        latency_s,
        unmetered: v.get("usage").and_then(serde_json::Value::as_str) == Some("missing"),
    })
}

/// A run directory's call file (`calls/NNNN.json`): `tokens.prompt` is input
/// (`tokens.cached` of it cached), `tokens.completion` and
/// `tokens.reasoning` output; `ended_at` when it ended.
pub fn call_file(bytes: &[u8]) -> Result<CallSpend, String> {
    let v = object(bytes)?;
    let t = v.get("tokens").cloned().unwrap_or(serde_json::Value::Null);
    let (prompt, cached) = (whole(&t, "prompt")?, whole(&t, "cached")?);
    let output = whole(&t, "completion")? + whole(&t, "reasoning")?;
    let (started, ended) = (at_of(&v, "started_at"), at_of(&v, "ended_at"));
    Ok(CallSpend {
        at: ended,
        latency_s: started.zip(ended).map(|(s, e)| (e.0 - s.0).max(0) as f64 / 1000.0),
        model: v.get("model").and_then(|m| m.as_str()).map(str::to_owned),
        tokens: Tokens { input: prompt.saturating_sub(cached), output, cached, unsplit: 0 },
        unmetered: false,
    })
}

/// The gaps between writes a tally keeps (the newest), for the stall threshold.
pub const GAPS_KEPT: usize = 512;

/// What was counted of one cell's calls so far.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CellTally {
    pub calls: u64,
    /// Of those, calls whose answer reported no usage ([`CallSpend::unmetered`]).
    pub unmetered: u64,
    /// Tokens per UTC day (`YYYY-MM-DD`) and model (`""`: the cell's own).
    pub by_day: BTreeMap<(String, String), Tokens>,
    pub first_at: Option<Timestamp>,
    pub last_at: Option<Timestamp>,
    /// Seconds between consecutive calls, the newest [`GAPS_KEPT`].
    pub gaps_s: Vec<f64>,
    /// Lines or files that could not be read, with why (the newest 5).
    pub problems: Vec<String>,
    /// The newest calls ([`crate::live::telemetry::RECENT_KEPT`]), for endpoint telemetry.
    pub recent: std::collections::VecDeque<crate::live::telemetry::CallTime>,
}

impl CellTally {
    /// Counts one call, `read_at` standing in for a call that says not when;
    /// returns the gap since the one before, in seconds.
    pub fn feed(&mut self, call: &CallSpend, read_at: Timestamp) -> Option<f64> {
        let at = call.at.unwrap_or(read_at);
        self.calls += 1;
        self.unmetered += u64::from(call.unmetered);
        let day = at.day_key();
        self.by_day.entry((day, call.model.clone().unwrap_or_default())).or_default().add(&call.tokens);
        let gap = self.last_at.map(|last| (at.0 - last.0).max(0) as f64 / 1000.0);
        if let Some(g) = gap {
            if self.gaps_s.len() == GAPS_KEPT {
                self.gaps_s.remove(0);
            }
            self.gaps_s.push(g);
        }
        if self.recent.len() == crate::live::telemetry::RECENT_KEPT {
            self.recent.pop_front();
        }
        self.recent.push_back(crate::live::telemetry::CallTime {
            at,
            latency_s: call.latency_s,
            output_tokens: call.tokens.output,
            tokens: call.tokens.total(),
        });
        self.first_at = Some(self.first_at.map_or(at, |f| f.min(at)));
        self.last_at = Some(self.last_at.map_or(at, |l| l.max(at)));
        gap
    }

    pub fn problem(&mut self, what: String) {
        if self.problems.len() == 5 {
            self.problems.remove(0);
        }
        self.problems.push(what);
    }

    pub fn tokens(&self) -> Tokens {
        let mut t = Tokens::default();
        self.by_day.values().for_each(|x| t.add(x));
        t
    }
}

/// What one cell has spent, by the rules of the module doc.
/// Where a cell's spend was read from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpendSource {
    /// Its `result.json`, once it ended and reported tokens.
    Report,
    /// Counted from its `{out}/progress.jsonl`…
    Progress,
    /// …or from the call files of the run directory it owns.
    Calls,
    /// Nothing to read yet.
    #[default]
    None,
}

impl SpendSource {
    pub const fn word(self) -> &'static str {
        match self {
            Self::Report => "report",
            Self::Progress => "progress",
            Self::Calls => "calls",
            Self::None => "none",
        }
    }
}

impl From<crate::drive::records::CountSource> for SpendSource {
    fn from(counted: crate::drive::records::CountSource) -> Self {
        match counted {
            crate::drive::records::CountSource::Progress => Self::Progress,
            crate::drive::records::CountSource::Calls => Self::Calls,
        }
    }
}

crate::display_as_word!(SpendSource);

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct CellSpend {
    pub tokens: Tokens,
    /// In the campaign's currency; none when its model has no price.
    pub cost: Option<f64>,
    /// Of that, spent today (UTC).
    pub today_tokens: u64,
    pub today_cost: Option<f64>,
    /// Calls counted from its files (its driver's count when its report is the
    /// source; 0 when none was counted).
    pub calls: u64,
    pub source: SpendSource,
    /// Of the calls counted, those whose answer reported no usage: their
    /// tokens are in none of these figures (0 when its report is the source).
    #[serde(default)]
    pub unmetered_calls: u64,
}

/// The spend of one cell: its report once it ended and reported tokens, else
/// what was counted — or what was counted, when it is more (the module doc).
/// `prices` of its model; `today` as [`day_key`](crate::Timestamp::day_key).
pub fn cell_spend(
    record: Option<&crate::drive::records::CellRecord>,
    tally: Option<(&CellTally, crate::drive::records::CountSource)>,
    prices: Option<Prices>,
    today: &str,
) -> CellSpend {
    use crate::drive::records::CellStatus;
    let ended = record.filter(|r| !matches!(r.status, CellStatus::Running | CellStatus::Pending));
    let counted = counted_spend(ended, tally, prices, today);
    let reported = ended.filter(|r| r.tokens.is_some() || r.input_tokens.is_some());
    match (reported, counted) {
        (Some(r), Some(c)) if Some(c.tokens.total()) > r.tokens_reported() => c,
        (Some(r), _) => {
            let (input, output) = (r.input_tokens.unwrap_or(0), r.output_tokens.unwrap_or(0));
            let tokens =
                Tokens { input, output, cached: 0, unsplit: r.tokens.unwrap_or(0).saturating_sub(input + output) };
            let cost = r.cost.or(prices.map(|p| p.cost(&tokens)));
            let (today_tokens, today_cost) = spent_on_its_end_day(r, tokens, cost, today);
            CellSpend {
                today_tokens,
                today_cost,
                tokens,
                cost,
                // Its calls, as its driver counted them (0: none counted).
                calls: r.counted.as_ref().map_or(0, |c| c.calls),
                source: SpendSource::Report,
                unmetered_calls: 0,
            }
        }
        (None, Some(c)) => c,
        (None, None) => CellSpend { source: SpendSource::None, ..Default::default() },
    }
}

/// What was counted of a cell's calls: its files as read here, else its
/// driver's count in the record of `ended` (the cell, once it ended).
fn counted_spend(
    ended: Option<&crate::drive::records::CellRecord>,
    tally: Option<(&CellTally, crate::drive::records::CountSource)>,
    prices: Option<Prices>,
    today: &str,
) -> Option<CellSpend> {
    if let Some((t, source)) = tally.filter(|(t, _)| t.calls > 0) {
        let tokens = t.tokens();
        let mut today_t = Tokens::default();
        t.by_day.iter().filter(|((d, _), _)| d == today).for_each(|(_, x)| today_t.add(x));
        return Some(CellSpend {
            tokens,
            cost: prices.map(|p| p.cost(&tokens)),
            today_tokens: today_t.total(),
            today_cost: prices.map(|p| p.cost(&today_t)),
            calls: t.calls,
            source: source.into(),
            unmetered_calls: t.unmetered,
        });
    }
    // Counted by its driver when it ended: the record once nothing here read
    // its files (a restarted console, another machine's cells).
    let (r, c) = ended.and_then(|r| r.counted.as_ref().map(|c| (r, c)))?;
    let tokens =
        Tokens { input: c.input_tokens, output: c.output_tokens, cached: c.cached_tokens, unsplit: c.unsplit_tokens };
    let cost = prices.map(|p| p.cost(&tokens));
    let (today_tokens, today_cost) = spent_on_its_end_day(r, tokens, cost, today);
    Some(CellSpend {
        today_tokens,
        today_cost,
        tokens,
        cost,
        calls: c.calls,
        source: c.source.into(),
        unmetered_calls: c.unmetered_calls,
    })
}

/// Of a whole spend known only once the cell ended (its report, its
/// driver's count), what falls on `today`: all of it when it ended today,
/// else none.
fn spent_on_its_end_day(
    r: &crate::drive::records::CellRecord,
    tokens: Tokens,
    cost: Option<f64>,
    today: &str,
) -> (u64, Option<f64>) {
    let on_day = r.ended_at.as_deref().is_some_and(|e| e.starts_with(today));
    (if on_day { tokens.total() } else { 0 }, cost.map(|c| if on_day { c } else { 0.0 }))
}

/// A batch's spend while it runs (`GET /api/live` `spend`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct BatchSpend {
    pub tokens: Tokens,
    pub total_tokens: u64,
    pub cost: Option<f64>,
    pub calls: u64,
    /// Of those, calls whose answer reported no usage: counted, their
    /// tokens unknown (in none of these figures).
    #[serde(default)]
    pub unmetered_calls: u64,
    /// Tokens per minute and cost per hour, from its first counted call to
    /// `now` (while it runs; none before a call or once it ended).
    pub tokens_per_min: Option<f64>,
    pub cost_per_hour: Option<f64>,
    /// What it will have spent at its end: the spend so far plus the rate
    /// times the time left (the live ETA); none without both.
    pub projected_tokens: Option<u64>,
    pub projected_cost: Option<f64>,
    /// Each cap of `[budget]` as used now.
    #[serde(default)]
    pub caps: Vec<CapUse>,
}

/// Sums `cells` into a batch's spend; `first_call` the earliest counted
/// call; `running` whether the batch runs now; `eta_s` its time left.
pub fn batch_spend(
    cells: &[CellSpend],
    first_call: Option<Timestamp>,
    running: bool,
    eta_s: Option<f64>,
    now: Timestamp,
) -> BatchSpend {
    let mut out = BatchSpend::default();
    for c in cells {
        out.tokens.add(&c.tokens);
        out.calls += c.calls;
        out.unmetered_calls += c.unmetered_calls;
        if let Some(x) = c.cost {
            out.cost = Some(out.cost.unwrap_or(0.0) + x);
        }
    }
    out.total_tokens = out.tokens.total();
    let minutes = first_call.map(|f| (now.0 - f.0) as f64 / 60_000.0).filter(|m| running && *m > 0.0);
    if let Some(m) = minutes {
        out.tokens_per_min = Some(out.total_tokens as f64 / m);
        out.cost_per_hour = out.cost.map(|c| c / m * 60.0);
    }
    if let (Some(rate), Some(eta)) = (out.tokens_per_min, eta_s) {
        out.projected_tokens = Some(out.total_tokens + (rate * eta / 60.0).round() as u64);
        out.projected_cost = out.cost.zip(out.cost_per_hour).map(|(c, r)| c + r * eta / 3600.0);
    }
    out
}

/// What is said of calls whose answer reported no usage, when there were
/// some: the tokens shown leave them out, and the reader should know.
pub fn unmetered_words(calls: u64) -> Option<String> {
    (calls > 0).then(|| {
        format!(
            "{} reported no usage (a stream the endpoint ended without it): their tokens are in none of these figures",
            crate::basics::numfmt::count(calls, "call")
        )
    })
}

/// Which spend a cap limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapScope {
    /// The batch's own spend.
    Batch,
    /// Everything spent today (UTC), every batch's.
    Day,
    /// Everything the campaign's run sets spent.
    Campaign,
}

impl CapScope {
    pub fn words(self) -> &'static str {
        match self {
            Self::Batch => "per batch",
            Self::Day => "per UTC day",
            Self::Campaign => "for the campaign",
        }
    }
}

/// What a cap counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CapMeasure {
    Money,
    Tokens,
}

/// One cap of `[budget]` against what it limits now.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapUse {
    pub scope: CapScope,
    pub measure: CapMeasure,
    /// Its `[budget]` key.
    pub key: String,
    pub limit: f64,
    pub used: f64,
    /// `used >= limit`.
    pub reached: bool,
    /// In words: "batch cap 0.50 USD: 0.52 USD spent".
    pub words: String,
}

/// What the caps are checked against: the batch's, today's and the
/// campaign's spend (money none: nothing is priced).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct SpendNow {
    pub batch_tokens: u64,
    pub batch_cost: Option<f64>,
    pub day_tokens: u64,
    pub day_cost: Option<f64>,
    pub campaign_tokens: u64,
    pub campaign_cost: Option<f64>,
}

/// Every cap `[budget]` sets, as used now, in the order of the docs.
pub fn check_caps(b: &Budget, now: &SpendNow, money: impl Fn(f64) -> String) -> Vec<CapUse> {
    /// A scope's caps (money, tokens) and its spend (money, tokens).
    type Row<'a> = (CapScope, &'a str, Option<f64>, Option<u64>, Option<f64>, u64);
    let rows: [Row; 3] = [
        (CapScope::Batch, "max", b.max_cost, b.max_tokens, now.batch_cost, now.batch_tokens),
        (CapScope::Day, "daily_max", b.daily_max_cost, b.daily_max_tokens, now.day_cost, now.day_tokens),
        (
            CapScope::Campaign,
            "campaign_max",
            b.campaign_max_cost,
            b.campaign_max_tokens,
            now.campaign_cost,
            now.campaign_tokens,
        ),
    ];
    let mut out = Vec::new();
    for (scope, prefix, cost_cap, token_cap, cost, tokens) in rows {
        if let Some(limit) = cost_cap {
            let used = cost.unwrap_or(0.0);
            out.push(CapUse {
                scope,
                measure: CapMeasure::Money,
                key: format!("{prefix}_cost"),
                limit,
                used,
                reached: used >= limit,
                words: format!("the cap of {} {}: {} spent", money(limit), scope.words(), money(used)),
            });
        }
        if let Some(limit) = token_cap {
            out.push(CapUse {
                scope,
                measure: CapMeasure::Tokens,
                key: format!("{prefix}_tokens"),
                limit: limit as f64,
                used: tokens as f64,
                reached: tokens >= limit,
                words: format!(
                    "the cap of {} tokens {}: {} used",
                    crate::basics::numfmt::thousands(limit),
                    scope.words(),
                    crate::basics::numfmt::thousands(tokens)
                ),
            });
        }
    }
    out
}

/// What is left under the day and campaign caps (none: not capped), for
/// the preflight: a batch predicted to spend more is refused.
pub fn left_for_next(caps: &[CapUse]) -> (Option<f64>, Option<u64>) {
    let mut money: Option<f64> = None;
    let mut tokens: Option<u64> = None;
    for c in caps.iter().filter(|c| c.scope != CapScope::Batch) {
        let left = (c.limit - c.used).max(0.0);
        match c.measure {
            CapMeasure::Money => money = Some(money.map_or(left, |m| m.min(left))),
            CapMeasure::Tokens => tokens = Some(tokens.map_or(left as u64, |t| t.min(left as u64))),
        }
    }
    (money, tokens)
}

/// The preflight's refusals from what is left (`left_for_next`).
pub fn refusals_for_left(
    left: (Option<f64>, Option<u64>),
    predicted_cost: Option<f64>,
    predicted_tokens: u64,
    money: impl Fn(f64) -> String,
) -> Vec<String> {
    let mut out = Vec::new();
    if let (Some(left), Some(cost)) = (left.0, predicted_cost) {
        if cost > left {
            out.push(format!(
                "budget: a cost of {} predicted, more than the {} left under the day's and the campaign's caps",
                money(cost),
                money(left)
            ));
        }
    }
    if let Some(left) = left.1.filter(|l| predicted_tokens > *l) {
        out.push(format!(
            "budget: {} tokens predicted, more than the {} left under the day's and the campaign's caps",
            crate::basics::numfmt::thousands(predicted_tokens),
            crate::basics::numfmt::thousands(left)
        ));
    }
    out
}

/// Gaps needed before a task's threshold is taken from its history.
pub const MIN_GAPS: usize = 10;
/// The threshold when a task has too little history and none is set.
pub const DEFAULT_STALL_S: f64 = 600.0;

/// How long a cell of a task may write nothing before it is stalled:
/// `[stall] after_s` when set (for every task, or the task's own in
/// `[stall.tasks]`), else 3 × the 95th percentile of the gaps seen between
/// its task's calls (at least `floor_s`) once [`MIN_GAPS`] were seen, else
/// [`DEFAULT_STALL_S`].
pub fn stall_after(cfg: &StallConfig, task: Option<&str>, gaps_s: &[f64]) -> (f64, String) {
    if let Some(s) = task.and_then(|t| cfg.tasks.get(t)) {
        return (*s, "[stall.tasks] for its task".into());
    }
    if let Some(s) = cfg.after_s {
        return (s, "[stall] after_s".into());
    }
    let floor = cfg.floor_s.unwrap_or(crate::campaign::DEFAULT_STALL_FLOOR_S);
    if gaps_s.len() >= MIN_GAPS {
        let p95 = crate::results::stats::quantile(gaps_s, 0.95).unwrap_or(0.0);
        let s = (3.0 * p95).max(floor);
        return (
            s,
            format!(
                "3 × the 95th percentile gap between its task's calls ({}), at least {}",
                crate::basics::timefmt::duration_words(p95),
                crate::basics::timefmt::duration_words(floor)
            ),
        );
    }
    (DEFAULT_STALL_S.max(floor), format!("the default, too few of its task's calls seen (fewer than {MIN_GAPS})"))
}

/// A running cell that has written nothing for too long.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stall {
    pub cell: String,
    /// Seconds since it last wrote (or started, when it wrote nothing).
    pub silent_s: f64,
    pub threshold_s: f64,
    /// Where the threshold comes from.
    pub threshold_from: String,
    /// What it last wrote and when, in words.
    pub last_wrote: String,
    pub words: String,
}

/// Whether a running cell is stalled: silent since `last` (its newest write,
/// what it was) or since it started, longer than `threshold`.
pub fn stalled(
    cell: &str,
    started: Option<Timestamp>,
    last: Option<(Timestamp, &str)>,
    threshold: (f64, String),
    now: Timestamp,
) -> Option<Stall> {
    let since = last.map(|(t, _)| t).into_iter().chain(started).max()?;
    let silent_s = (now.0 - since.0).max(0) as f64 / 1000.0;
    if silent_s <= threshold.0 {
        return None;
    }
    let last_wrote = match last {
        Some((t, what)) => format!("{what}, {}", crate::basics::timefmt::ago(t, now)),
        None => "nothing since it started".into(),
    };
    Some(Stall {
        cell: cell.to_owned(),
        words: format!(
            "{cell} has written nothing for {} (more than {}); last: {last_wrote}",
            crate::basics::timefmt::duration_words(silent_s),
            crate::basics::timefmt::duration_words(threshold.0)
        ),
        silent_s,
        threshold_s: threshold.0,
        threshold_from: threshold.1,
        last_wrote,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::drive::records::{CellRecord, CellStatus};

    fn ts(s: &str) -> Timestamp {
        Timestamp::parse_rfc3339(s).unwrap()
    }

    #[test]
    fn a_call_that_reported_no_usage_is_counted_as_a_call_and_said() {
        let missing = progress_line(br#"{"ts":"2026-12-04T10:00:00Z","tokens":0,"usage":"missing"}"#).unwrap();
        let metered = progress_line(br#"{"ts":"2026-12-04T10:00:01Z","input_tokens":40,"output_tokens":7}"#).unwrap();
        assert!(missing.unmetered && !metered.unmetered);
        let mut tally = CellTally::default();
        tally.feed(&missing, ts("2026-12-04T10:00:00Z"));
        tally.feed(&metered, ts("2026-12-04T10:00:01Z"));
        assert_eq!((tally.calls, tally.unmetered, tally.tokens().total()), (2, 1, 47));
        let cell = cell_spend(None, Some((&tally, crate::drive::records::CountSource::Progress)), None, "2026-12-04");
        assert_eq!((cell.calls, cell.unmetered_calls, cell.tokens.total()), (2, 1, 47));
        let batch = batch_spend(&[cell.clone(), cell], None, true, None, ts("2026-12-04T10:00:02Z"));
        assert_eq!(batch.unmetered_calls, 2);
        assert_eq!(
            unmetered_words(batch.unmetered_calls).unwrap(),
            "2 calls reported no usage (a stream the endpoint ended without it): their tokens are in none of these figures"
        );
        assert_eq!(unmetered_words(0), None);
    }

    #[test]
    fn progress_lines_and_call_files_are_read_field_by_field() {
        let c = progress_line(
            br#"{"ts":"2026-12-04T10:00:00Z","model":"gpt","input_tokens":1000,"output_tokens":200,"cached_tokens":300}"#,
        )
        .unwrap();
        assert_eq!(c.tokens, Tokens { input: 1000, output: 200, cached: 300, unsplit: 0 });
        assert_eq!((c.at, c.model.as_deref()), (Some(ts("2026-12-04T10:00:00Z")), Some("gpt")));
        assert_eq!(progress_line(br#"{"tokens":50,"input_tokens":20}"#).unwrap().tokens.unsplit, 30);
        assert!(progress_line(br#"{"model":"gpt"}"#).unwrap_err().contains("no token count"));
        assert!(progress_line(br#"{"input_tokens":-3}"#).unwrap_err().contains("input_tokens"));
        assert!(progress_line(b"[1]").is_err());
        assert!(progress_line(b"{\"tok").is_err());
        let f = call_file(br#"{"tokens":{"prompt":900,"completion":100,"reasoning":50,"cached":400},"ended_at":"2026-12-04T10:00:01Z"}"#)
            .unwrap();
        assert_eq!(f.tokens, Tokens { input: 500, output: 150, cached: 400, unsplit: 0 });
        assert_eq!(f.latency_s, None);
        // The latency, for endpoint telemetry: a call file's start to end, a progress line's own.
        let f = call_file(
            br#"{"tokens":{"prompt":1},"started_at":"2026-12-04T10:00:00Z","ended_at":"2026-12-04T10:00:02.5Z"}"#,
        );
        assert_eq!(f.unwrap().latency_s, Some(2.5));
        assert_eq!(progress_line(br#"{"tokens":5,"latency_s":1.25}"#).unwrap().latency_s, Some(1.25));
        assert!(progress_line(br#"{"tokens":5,"latency_s":-1}"#).unwrap_err().contains("latency_s"));
        let mut tally = CellTally::default();
        for i in 0..(crate::live::telemetry::RECENT_KEPT + 3) {
            tally
                .feed(&progress_line(br#"{"tokens":5,"output_tokens":2,"latency_s":1}"#).unwrap(), Timestamp(i as i64));
        }
        assert_eq!(tally.recent.len(), crate::live::telemetry::RECENT_KEPT);
        assert_eq!(tally.recent.back().map(|c| (c.at, c.tokens, c.output_tokens)), Some((Timestamp(258), 5, 2)));
    }

    #[test]
    fn prices_split_or_simple_and_unsplit_at_the_dearest() {
        let mut m = ModelEntry {
            name: "gpt".into(),
            kind: crate::campaign::ModelKind::Paid,
            daily_cap: None,
            price_per_1k_tokens: 0.002,
            price_input_per_1k: Some(0.001),
            price_output_per_1k: Some(0.004),
            price_cached_per_1k: Some(0.0005),
        };
        let p = Prices::of(&m);
        // 2,000 in × 0.001 + 1,000 out × 0.004 + 4,000 cached × 0.0005 + 500 unsplit × 0.004 (dearest)
        let t = Tokens { input: 2000, output: 1000, cached: 4000, unsplit: 500 };
        assert!((p.cost(&t) - (0.002 + 0.004 + 0.002 + 0.002)).abs() < 1e-12);
        m.price_output_per_1k = None;
        assert_eq!(Prices::of(&m).output, 0.002);
    }

    /// Issue 40 (item 10): tokens that came as totals only are not said as
    /// "0 in, 0 out, 0 cached".
    #[test]
    fn tokens_are_split_in_words_only_when_counted_apart() {
        let t = |input, output, cached, unsplit| Tokens { input, output, cached, unsplit };
        assert_eq!(t(12_000, 3_400, 800, 0).split_words().as_deref(), Some("12,000 in, 3,400 out, 800 cached"));
        assert_eq!(t(0, 0, 0, 108_000).split_words(), None);
        assert_eq!(t(1_000, 0, 0, 500).split_words().as_deref(), Some("1,000 in, 500 not split"));
        assert_eq!(t(0, 0, 0, 0).split_words(), None);
    }

    #[test]
    fn a_cell_counts_its_report_once_ended_else_what_was_counted() {
        let p = Some(Prices { input: 1.0, output: 2.0, cached: 0.5 });
        let mut tally = CellTally::default();
        let call = |at: &str, i, o| CallSpend {
            at: Some(ts(at)),
            model: None,
            tokens: Tokens { input: i, output: o, ..Default::default() },
            ..Default::default()
        };
        tally.feed(&call("2026-12-03T23:59:00Z", 1000, 0), Timestamp(0));
        tally.feed(&call("2026-12-04T00:01:00Z", 1000, 500), Timestamp(0));
        assert_eq!(tally.gaps_s, vec![120.0]);
        let running = CellRecord { status: CellStatus::Running, ..Default::default() };
        let s = cell_spend(Some(&running), Some((&tally, crate::drive::records::CountSource::Calls)), p, "2026-12-04");
        assert_eq!((s.tokens.total(), s.cost, s.today_tokens, s.today_cost), (2500, Some(3.0), 1500, Some(2.0)));
        assert_eq!(s.source, SpendSource::Calls);
        // Ended with a report: the report is the last word.
        let done = CellRecord {
            status: CellStatus::Done,
            tokens: Some(3000),
            input_tokens: Some(2000),
            output_tokens: Some(600),
            ended_at: Some("2026-12-04T00:05:00Z".into()),
            ..Default::default()
        };
        let s = cell_spend(Some(&done), Some((&tally, crate::drive::records::CountSource::Calls)), p, "2026-12-04");
        // 2,000 × 1 + 600 × 2 + 400 unsplit × 2 (dearest) = 4.0 per 1k.
        assert_eq!((s.tokens.unsplit, s.cost, s.today_tokens, s.source), (400, Some(4.0), 3000, SpendSource::Report));
        // A report short of what was counted (a stopped eval does not
        // report the call its stop cut short): what was counted stands.
        let short = CellRecord { tokens: Some(2000), input_tokens: None, output_tokens: None, ..done.clone() };
        let s = cell_spend(Some(&short), Some((&tally, crate::drive::records::CountSource::Progress)), p, "2026-12-04");
        assert_eq!((s.tokens.total(), s.source), (2500, SpendSource::Progress));
        let count = crate::drive::records::Counted { calls: 2, input_tokens: 2500, ..Default::default() };
        assert_eq!(CellRecord { counted: Some(count), ..short }.tokens_total(), Some(2500));
        // Ended without a report: what was counted stands.
        let failed = CellRecord { status: CellStatus::Failed, ..Default::default() };
        assert_eq!(
            cell_spend(Some(&failed), Some((&tally, crate::drive::records::CountSource::Calls)), p, "2026-12-04")
                .tokens
                .total(),
            2500
        );
        assert_eq!(cell_spend(None, None, p, "2026-12-04").source, SpendSource::None);
        // Ended without a report, read by no one here (a console started
        // after it ended): its driver's count is the record.
        let counted = CellRecord {
            status: CellStatus::Done,
            ended_at: Some("2026-12-04T00:05:00Z".into()),
            counted: Some(crate::drive::records::Counted {
                calls: 2,
                input_tokens: 2000,
                output_tokens: 500,
                source: crate::drive::records::CountSource::Progress,
                ..Default::default()
            }),
            ..Default::default()
        };
        let s = cell_spend(Some(&counted), None, p, "2026-12-04");
        assert_eq!(
            (s.tokens.total(), s.cost, s.today_cost, s.calls, s.source.word()),
            (2500, Some(3.0), Some(3.0), 2, "progress")
        );
        assert_eq!(counted.tokens_total(), Some(2500));
    }

    #[test]
    fn the_batch_rate_and_projection_follow_the_time_left() {
        let cells = [
            CellSpend {
                tokens: Tokens { input: 6000, ..Default::default() },
                cost: Some(0.6),
                calls: 3,
                ..Default::default()
            },
            CellSpend {
                tokens: Tokens { output: 3000, ..Default::default() },
                cost: Some(0.3),
                calls: 2,
                ..Default::default()
            },
        ];
        let start = ts("2026-12-04T10:00:00Z");
        let now = ts("2026-12-04T10:10:00Z");
        let b = batch_spend(&cells, Some(start), true, Some(1200.0), now);
        assert_eq!((b.total_tokens, b.calls), (9000, 5));
        assert_eq!(b.tokens_per_min, Some(900.0));
        assert!((b.cost_per_hour.unwrap() - 5.4).abs() < 1e-9);
        // 20 more minutes at 900/min and 5.4/h.
        assert_eq!(b.projected_tokens, Some(27_000));
        assert!((b.projected_cost.unwrap() - 2.7).abs() < 1e-9);
        let ended = batch_spend(&cells, Some(start), false, None, now);
        assert_eq!((ended.tokens_per_min, ended.projected_cost), (None, None));
    }

    #[test]
    fn caps_are_reached_at_their_limit_and_what_is_left_is_the_least() {
        let b = Budget {
            max_cost: Some(1.0),
            daily_max_tokens: Some(10_000),
            campaign_max_cost: Some(5.0),
            ..Default::default()
        };
        let now = SpendNow {
            batch_tokens: 9_000,
            batch_cost: Some(1.0),
            day_tokens: 9_500,
            day_cost: Some(1.2),
            campaign_tokens: 50_000,
            campaign_cost: Some(4.5),
        };
        let caps = check_caps(&b, &now, |x| format!("{x:.2} USD"));
        let reached: Vec<&str> = caps.iter().filter(|c| c.reached).map(|c| c.key.as_str()).collect();
        assert_eq!(reached, ["max_cost"]);
        assert_eq!(caps[0].words, "the cap of 1.00 USD per batch: 1.00 USD spent");
        assert_eq!(left_for_next(&caps), (Some(0.5), Some(500)));
        let refused = refusals_for_left(left_for_next(&caps), Some(0.75), 400, |x| format!("{x:.2} USD"));
        assert_eq!(refused.len(), 1);
        assert!(refused[0].contains("0.75 USD predicted, more than the 0.50 USD left"), "{refused:?}");
    }

    #[test]
    fn a_stall_needs_silence_past_its_task_threshold() {
        let cfg = StallConfig::default();
        // Too little history: the default.
        assert_eq!(stall_after(&cfg, Some("t"), &[1.0; 3]).0, DEFAULT_STALL_S);
        // Gaps of 10 s with one of 40 s: p95 by linear interpolation over 20 gaps.
        let mut gaps = vec![10.0; 19];
        gaps.push(40.0);
        let (s, from) = stall_after(&StallConfig { floor_s: Some(5.0), ..Default::default() }, Some("t"), &gaps);
        // p95 of 19 × 10 and one 40: rank 0.95 × 19 = 18.05 → 10 + 0.05 × 30 = 11.5; × 3.
        assert!((s - 34.5).abs() < 1e-9, "{s} {from}");
        // The floor wins over a short history.
        assert_eq!(stall_after(&StallConfig { floor_s: Some(120.0), ..Default::default() }, None, &gaps).0, 120.0);
        let fixed = StallConfig { after_s: Some(30.0), ..Default::default() };
        assert_eq!(stall_after(&fixed, Some("t"), &gaps).0, 30.0);
        let start = ts("2026-12-04T10:00:00Z");
        let at = |s: i64| Timestamp(start.0 + s * 1000);
        let th = || (30.0, "x".to_string());
        assert_eq!(stalled("c", Some(start), Some((at(10), "a call")), th(), at(40)), None);
        let s = stalled("c", Some(start), Some((at(10), "a call")), th(), at(41)).unwrap();
        assert_eq!(s.silent_s, 31.0);
        assert!(s.words.contains("last: a call, 31 s ago"), "{}", s.words);
        assert!(stalled("c", Some(start), None, th(), at(31)).unwrap().last_wrote.contains("nothing"));
        assert_eq!(stalled("c", None, None, th(), at(100)), None);
    }
}
