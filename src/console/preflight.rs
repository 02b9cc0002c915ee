//! Static preflight: everything that would stop a batch, found before it is
//! launched — so a plan that cannot run is refused to the person pressing
//! Launch, in words, instead of dying minutes later in a background log.
//!
//! Three sources: the driver's doctor (found by the adapter, passed in), the
//! catalogue (model, endpoint, daily cap) and the budget (the batch's
//! predicted tokens, cost and hours from the same cells' history, against the
//! caps in `campaign.toml`).

use std::collections::{BTreeMap, HashMap};

use serde::{Deserialize, Serialize};

use crate::campaign::{CampaignConfig, ModelKind};
use crate::console::spec::BatchSpec;
use crate::drive::doctor::Finding;

/// One earlier finished attempt of a cell: what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sample {
    pub tokens: Option<u64>,
    /// How long it ran — only when Timing counts its timing (complete, alone
    /// on its endpoint, not paused or retried, a plausible throughput): a
    /// duration Timing rejects is no basis for a prediction either.
    pub seconds: Option<f64>,
}

/// Earlier attempts by cell id, by task (for cells never run before), and
/// all of them (for a cell with neither: a matrix without a task factor).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct History {
    pub by_cell: HashMap<String, Vec<Sample>>,
    pub by_task: HashMap<String, Vec<Sample>>,
    pub all: Vec<Sample>,
}

impl History {
    /// Adds one ended attempt of `cell` (of `task`, when the matrix has one).
    pub fn add(&mut self, cell: &str, task: Option<String>, sample: Sample) {
        self.by_cell.entry(cell.to_owned()).or_default().push(sample);
        if let Some(t) = task {
            self.by_task.entry(t).or_default().push(sample);
        }
        self.all.push(sample);
    }
}

/// What a batch is predicted to cost.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Prediction {
    pub cells: usize,
    /// Cells predicted from their own earlier attempts.
    pub from_cell_history: usize,
    /// Cells predicted from their task's other cells.
    pub from_task_history: usize,
    /// Cells predicted from every earlier cell of the campaign: no history of
    /// their own, and none of their task (or no task factor).
    #[serde(default)]
    pub from_any_history: usize,
    /// Cells with no history at all (not in the figures).
    pub unknown: usize,
    /// Cells whose history says their tokens (the rest count none in `tokens`).
    #[serde(default)]
    pub tokened: usize,
    pub tokens: u64,
    /// `tokens` × the model's price per 1,000 tokens; none without a priced model.
    pub cost: Option<f64>,
    /// Wall-clock hours with the runner's parallelism (0 when no cell's
    /// time is known: see `timed`).
    pub hours: f64,
    /// Cells whose time is predicted: from history with a timing Timing
    /// counts. The rest count no time in `hours`.
    #[serde(default)]
    pub timed: usize,
    /// The currency of `cost` (the campaign's).
    #[serde(default)]
    pub currency: Option<String>,
    /// The range the same history allows (none when no cell has history).
    #[serde(default)]
    pub range: Option<Range>,
}

/// A prediction's low and high ends: each cell at the 10th and at the 90th
/// percentile of the earlier attempts it is predicted from. The ends are
/// sums of per-cell percentiles — as if the cells all ran cheap, or all
/// dear, together — so the range is wide rather than falsely narrow.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Range {
    pub low: Estimate,
    pub high: Estimate,
}

/// Tokens, cost and hours at one end of a [`Range`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Estimate {
    pub tokens: u64,
    pub cost: Option<f64>,
    pub hours: f64,
}

impl Prediction {
    /// "about 120,000 tokens, 1.20 USD in cost, 48 min (9 of 10 cells from history)".
    pub fn words(&self) -> String {
        let cost = self
            .cost
            .map(|c| {
                format!(", {} in cost", crate::basics::numfmt::money(c, self.currency.as_deref().unwrap_or("USD")))
            })
            .unwrap_or_default();
        let known = self.from_cell_history + self.from_task_history + self.from_any_history;
        if known == 0 {
            return format!(
                "nothing to predict from: no earlier cell has ended (0 of {} cells from history)",
                self.cells
            );
        }
        let tokens = match self.tokened {
            0 => "tokens not known (no earlier cell reported or was counted any)".to_owned(),
            n if n < known => format!("at least {} tokens", crate::basics::numfmt::thousands(self.tokens)),
            _ => format!("about {} tokens", crate::basics::numfmt::thousands(self.tokens)),
        };
        let time = match self.timed {
            0 => "time not known (no timing in history that Timing counts)".to_owned(),
            n if n < known => {
                format!("at least {} ({n} of them timed)", crate::basics::timefmt::duration_words(self.hours * 3600.0))
            }
            _ => crate::basics::timefmt::duration_words(self.hours * 3600.0),
        };
        format!("{tokens}{cost}, {time} ({known} of {} cells from history)", self.cells)
    }

    /// One timed cell's predicted seconds on average (none: no cell timed),
    /// `parallel` the runner's — the Live page's time left before any of
    /// the batch's own cells has ended.
    pub fn typical_cell_s(&self, parallel: usize) -> Option<f64> {
        (self.timed > 0 && self.hours > 0.0).then(|| self.hours * 3600.0 * parallel.max(1) as f64 / self.timed as f64)
    }

    /// "80,000–150,000 tokens, 0.80 USD–1.50 USD, 30 min–1 h" (none without history).
    pub fn range_words(&self) -> Option<String> {
        let Range { low, high } = self.range.as_ref()?;
        let currency = self.currency.as_deref().unwrap_or("USD");
        let cost = match (low.cost, high.cost) {
            (Some(l), Some(h)) => {
                format!(", {}–{}", crate::basics::numfmt::money(l, currency), crate::basics::numfmt::money(h, currency))
            }
            _ => String::new(),
        };
        // No time is said where none is known (0 s would be a claim).
        let time = if self.timed == 0 {
            String::new()
        } else {
            format!(
                ", {}–{}",
                crate::basics::timefmt::duration_words(low.hours * 3600.0),
                crate::basics::timefmt::duration_words(high.hours * 3600.0)
            )
        };
        if self.tokened == 0 {
            // Neither tokens nor their cost are known: only a time, if any.
            return (self.timed > 0).then(|| time.trim_start_matches(", ").to_owned());
        }
        Some(format!(
            "{}–{} tokens{cost}{time}",
            crate::basics::numfmt::thousands(low.tokens),
            crate::basics::numfmt::thousands(high.tokens)
        ))
    }
}

/// The preflight's answer: every refusal (empty: the batch may launch) and the
/// prediction, which is shown either way.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Preflight {
    pub refusals: Vec<String>,
    /// What the operator should know before launching, though it does not
    /// stop the launch: the catalogue says its endpoint or model is not
    /// available now, it re-runs covered cells, it shares an endpoint with a
    /// batch running now, it spends money. The page asks to confirm them.
    #[serde(default)]
    pub warnings: Vec<String>,
    pub prediction: Prediction,
}

/// What the preflight is told of the campaign now, beyond the spec: for its
/// warnings. Gathered by the adapter (coverage, the batches in flight, the
/// catalogue's probe of the spec's endpoint).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Circumstances {
    /// The spec's cells already covered (passed) in earlier run sets.
    pub covered: Vec<String>,
    /// Batches in flight: (run set, its endpoints).
    pub in_flight: Vec<(String, Vec<String>)>,
    /// Why the catalogue says the spec's endpoint or model cannot be used
    /// now (its `/models` probe), if it says so.
    pub unavailable: Vec<String>,
}

/// The warnings of [`Preflight`], each in words.
pub fn warnings(spec: &BatchSpec, cfg: &CampaignConfig, prediction: &Prediction, now: &Circumstances) -> Vec<String> {
    let mut out: Vec<String> = now.unavailable.iter().map(|u| format!("the catalogue says: {u}")).collect();
    if !now.covered.is_empty() {
        out.push(format!(
            "re-runs {} cell{} already covered (e.g. {})",
            crate::basics::numfmt::thousands(now.covered.len() as u64),
            if now.covered.len() == 1 { "" } else { "s" },
            now.covered[0]
        ));
    }
    let mine = spec.endpoints_used();
    for (rs, endpoints) in &now.in_flight {
        if let Some(e) = endpoints.iter().find(|e| mine.contains(e)) {
            out.push(format!(
                "shares endpoint {e} with {rs}, running now (both run slower, and neither's timings count)"
            ));
        }
    }
    let model = spec.model.as_deref().and_then(|m| cfg.model(m));
    let paid = model.is_some_and(|m| m.kind == ModelKind::Paid || crate::live::spend::Prices::of(m).any());
    if paid {
        let name = model.map(|m| m.name.as_str()).unwrap_or_default();
        out.push(match prediction.cost {
            Some(c) => format!("spends money: about {} predicted on {name}", cfg.money(c)),
            None => format!("spends money: {name} is paid, and its cost cannot be predicted (no history, or no price)"),
        });
    }
    out
}

/// Checks `spec` against the doctor's `findings`, the catalogue, today's
/// launches per model and the budget.
pub fn check(
    spec: &BatchSpec,
    cfg: &CampaignConfig,
    findings: &[Finding],
    launches_today: &BTreeMap<String, u32>,
    history: &History,
) -> Preflight {
    let mut refusals: Vec<String> = findings.iter().map(|f| format!("doctor: {}", f.message)).collect();
    refusals.extend(catalogue(spec, cfg, launches_today));
    let prediction = predict(spec, cfg, history);
    let b = &cfg.budget;
    let over = "over the campaign's budget";
    if let Some(cap) = b.max_tokens.filter(|cap| prediction.tokens > *cap) {
        refusals.push(format!(
            "budget: {} tokens predicted, {over} of {} per batch",
            crate::basics::numfmt::thousands(prediction.tokens),
            crate::basics::numfmt::thousands(cap)
        ));
    }
    if let (Some(cap), Some(cost)) = (b.max_cost, prediction.cost) {
        if cost > cap {
            refusals.push(format!(
                "budget: a cost of {} predicted, {over} of {} per batch",
                cfg.money(cost),
                cfg.money(cap)
            ));
        }
    }
    if let Some(cap) = b.max_hours.filter(|cap| prediction.hours > *cap) {
        refusals.push(format!("budget: {:.1} h predicted, {over} of {cap:.1} h per batch", prediction.hours));
    }
    Preflight { refusals, warnings: Vec::new(), prediction }
}

fn catalogue(spec: &BatchSpec, cfg: &CampaignConfig, launches_today: &BTreeMap<String, u32>) -> Vec<String> {
    let mut out = Vec::new();
    let endpoint = spec.endpoint.as_deref().map(|name| (name, cfg.endpoint(name)));
    if let Some((name, None)) = endpoint {
        out.push(format!("endpoint {name:?} is not in the catalogue"));
    }
    // The batch's models: the spec's, else each cell's `model` factor.
    let models: Vec<String> = match &spec.model {
        Some(m) => vec![m.clone()],
        None => {
            let per_cell: Vec<Option<String>> =
                spec.cells.iter().map(|c| c.factors.get("model").map(crate::console::matrix::value_text)).collect();
            if per_cell.iter().any(Option::is_none) {
                if !cfg.models.is_empty() {
                    out.push("the spec names no model (no `model`, and not every cell has a model factor)".into());
                }
                return out;
            }
            let mut m: Vec<String> = per_cell.into_iter().flatten().collect();
            m.sort();
            m.dedup();
            m
        }
    };
    for m in &models {
        let Some(entry) = cfg.model(m) else {
            if !cfg.models.is_empty() {
                out.push(format!("model {m:?} is not in the catalogue"));
            }
            continue;
        };
        match endpoint {
            // A pool's endpoints are checked by `pool::check`.
            None if !spec.endpoints.is_empty() => {}
            Some((name, Some(e))) if !e.models.iter().any(|s| s == m) => {
                out.push(format!("endpoint {name:?} does not serve {m:?} (it serves {})", e.models.join(", ")))
            }
            None if entry.kind == ModelKind::Local => {
                out.push(format!("model {m:?} is local and the spec names no endpoint"))
            }
            _ => {}
        }
        let today = launches_today.get(m.as_str()).copied().unwrap_or(0);
        if let Some(cap) = entry.daily_cap.filter(|cap| today >= *cap) {
            out.push(format!("model {m:?}: its daily cap of {cap} batch(es) is reached ({today} launched today, UTC)"));
        }
    }
    out
}

/// The batch's predicted tokens, cost and hours: each cell from the mean of its
/// own earlier attempts, else the median of its task's, else unknown.
pub fn predict(spec: &BatchSpec, cfg: &CampaignConfig, history: &History) -> Prediction {
    let mut p = Prediction { cells: spec.cells.len(), currency: Some(cfg.currency.clone()), ..Default::default() };
    // Expected, low and high: tokens and seconds.
    let mut sums = [(0.0f64, 0.0f64); 3];
    for cell in &spec.cells {
        let own = history.by_cell.get(&cell.id).filter(|s| !s.is_empty());
        let task = cell.factors.get("task").map(crate::console::matrix::value_text);
        let (samples, central): (&[Sample], Central) = if let Some(samples) = own {
            p.from_cell_history += 1;
            (samples, mean)
        } else if let Some(samples) = task.and_then(|t| history.by_task.get(&t)).filter(|s| !s.is_empty()) {
            p.from_task_history += 1;
            (samples, median)
        } else if !history.all.is_empty() {
            p.from_any_history += 1;
            (history.all.as_slice(), median)
        } else {
            p.unknown += 1;
            continue;
        };
        let tokens: Vec<f64> = samples.iter().filter_map(|s| s.tokens.map(|t| t as f64)).collect();
        let secs: Vec<f64> = samples.iter().filter_map(|s| s.seconds).collect();
        if !secs.is_empty() {
            p.timed += 1;
        }
        if !tokens.is_empty() {
            p.tokened += 1;
        }
        for (sum, at) in sums.iter_mut().zip([None, Some(0.1), Some(0.9)]) {
            let pick = |xs: &[f64]| match at {
                None => central(xs),
                Some(q) => crate::results::stats::quantile(xs, q),
            };
            sum.0 += pick(&tokens).map_or(0.0, f64::round);
            sum.1 += pick(&secs).unwrap_or(0.0);
        }
    }
    let parallel = cfg.runner.as_ref().map_or(1, |r| r.parallel.max(1)) as f64;
    // History gives each cell's tokens as a total: priced at the dearest of
    // the model's prices (by kind, or the one price), so a cap is never
    // under-predicted.
    let prices = crate::live::spend::prices_of(cfg, spec.model.as_deref())
        // No cell predicted from history: the cost is unknown, not zero.
        .filter(|_| p.unknown < p.cells);
    let [expected, low, high] = sums.map(|(tokens, secs)| Estimate {
        tokens: tokens as u64,
        cost: prices.map(|p| p.cost(&crate::live::spend::Tokens { unsplit: tokens as u64, ..Default::default() })),
        hours: secs / parallel / 3600.0,
    });
    p.tokens = expected.tokens;
    p.cost = expected.cost;
    p.hours = expected.hours;
    if p.unknown < p.cells {
        p.range = Some(Range { low, high });
    }
    p
}

/// How a cell's expected figure is taken from its samples (mean or median).
type Central = fn(&[f64]) -> Option<f64>;

fn mean(xs: &[f64]) -> Option<f64> {
    let xs: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
    (!xs.is_empty()).then(|| xs.iter().sum::<f64>() / xs.len() as f64)
}

fn median(xs: &[f64]) -> Option<f64> {
    crate::results::stats::quantile(xs, 0.5)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{Budget, EndpointEntry, ModelEntry};
    use crate::console::spec::{cell_id, Cell};
    use crate::drive::doctor::Severity;
    use serde_json::json;

    fn cell(task: &str, seed: i64) -> Cell {
        let factors: BTreeMap<String, serde_json::Value> =
            [("task".to_owned(), json!(task)), ("seed".to_owned(), json!(seed))].into();
        Cell { id: cell_id(&factors), factors }
    }

    fn cfg() -> CampaignConfig {
        let mut c = CampaignConfig::unnamed("t");
        c.models = vec![
            ModelEntry::new("qwen", ModelKind::Local, None, 0.0),
            ModelEntry::new("gpt", ModelKind::Paid, Some(2), 0.5),
        ];
        c.endpoints = vec![EndpointEntry {
            name: "gpu".into(),
            url: "http://127.0.0.1:9/v1".into(),
            backend: "vllm".into(),
            models: vec!["qwen".into()],
            request_preset: None,
            ..Default::default()
        }];
        c
    }

    fn spec(model: &str, endpoint: Option<&str>, cells: Vec<Cell>) -> BatchSpec {
        BatchSpec {
            schema_version: 1,
            label: "b".into(),
            cells,
            model: Some(model.into()),
            backend: None,
            endpoint: endpoint.map(Into::into),
            endpoints: Vec::new(),
            prompt_variant: None,
            retry: None,
            request_preset: None,
            artefacts: Vec::new(),
        }
    }

    /// Issue 40 (item 3): a model priced only per kind is priced, at the
    /// dearest kind (history gives totals), so a cost cap can refuse it.
    #[test]
    fn a_model_priced_per_kind_is_priced_at_its_dearest_kind() {
        let mut c = cfg();
        let mut m = ModelEntry::new("split", ModelKind::Paid, None, 0.0);
        (m.price_input_per_1k, m.price_output_per_1k, m.price_cached_per_1k) = (Some(1.0), Some(4.0), Some(0.1));
        c.models.push(m);
        let a = cell("t1", 1);
        let mut h = History::default();
        h.by_cell.insert(a.id.clone(), vec![Sample { tokens: Some(20_000), seconds: Some(60.0) }]);
        let p = predict(&spec("split", None, vec![a]), &c, &h);
        assert_eq!((p.tokens, p.cost), (20_000, Some(80.0)));
        let w = warnings(&spec("split", None, vec![]), &c, &p, &Circumstances::default());
        assert!(w.iter().any(|w| w.contains("spends money: about 80.00 USD predicted on split")), "{w:?}");
    }

    /// Issue 40 (item 6): history without a timing Timing counts predicts
    /// tokens and says the time is not known — never "0 s".
    #[test]
    fn a_history_without_counted_timings_predicts_no_time() {
        let a = cell("t1", 1);
        let mut h = History::default();
        h.by_cell.insert(a.id.clone(), vec![Sample { tokens: Some(233_862), seconds: None }]);
        let p = predict(&spec("gpt", None, vec![a]), &cfg(), &h);
        assert_eq!((p.tokens, p.timed, p.hours), (233_862, 0, 0.0));
        let w = p.words();
        assert!(w.contains("time not known") && !w.contains(" 0 s"), "{w}");
        assert!(!p.range_words().unwrap().contains(" s"), "{:?}", p.range_words());
        assert_eq!(p.typical_cell_s(2), None);
    }

    #[test]
    fn prediction_uses_the_cells_own_history_then_its_tasks() {
        let (a, b, c) = (cell("t1", 1), cell("t1", 2), cell("t2", 1));
        let mut h = History::default();
        let s = |t, secs| Sample { tokens: Some(t), seconds: Some(secs) };
        h.by_cell.insert(a.id.clone(), vec![s(1000, 60.0), s(3000, 180.0)]);
        h.by_task.insert("t1".into(), vec![s(1000, 60.0), s(3000, 180.0), s(5000, 600.0)]);
        let p = predict(&spec("gpt", None, vec![a, b, c]), &cfg(), &h);
        assert_eq!((p.from_cell_history, p.from_task_history, p.unknown), (1, 1, 1));
        assert_eq!(p.tokens, 2000 + 3000);
        assert_eq!(p.cost, Some(2.5));
        assert!((p.hours - 300.0 / 3600.0).abs() < 1e-9);
        assert_eq!(p.words(), "about 5,000 tokens, 2.50 USD in cost, 5 min (2 of 3 cells from history)");
        // The ends, by hand: cell a's two attempts at their 10th/90th
        // percentiles (1000 + 0.1·2000 = 1200 and 2800; 72 s and 168 s);
        // cell b from t1's three (1000 + 0.2·2000 = 1400 and 3000 + 0.8·2000
        // = 4600; 60 + 0.2·120 = 84 s and 180 + 0.8·420 = 516 s).
        let r = p.range.clone().unwrap();
        assert_eq!((r.low.tokens, r.high.tokens), (1200 + 1400, 2800 + 4600));
        assert_eq!((r.low.cost, r.high.cost), (Some(1.3), Some(3.7)));
        assert!((r.low.hours * 3600.0 - 156.0).abs() < 1e-6 && (r.high.hours * 3600.0 - 684.0).abs() < 1e-6);
        assert_eq!(p.range_words().unwrap(), "2,600–7,400 tokens, 1.30 USD–3.70 USD, 2 min–11 min");
        // `all` is empty here: no history at all, no range, nothing claimed.
        let other = predict(&spec("gpt", None, vec![cell("t9", 1)]), &cfg(), &h);
        assert_eq!((other.from_any_history, other.unknown, other.range.is_none()), (0, 1, true));
        assert!(other.words().starts_with("nothing to predict from"), "{}", other.words());
        // Issue 40 (item 6): a matrix without a task factor still predicts
        // from the campaign's history, and a history without tokens says so.
        let mut any = History::default();
        any.add("elsewhere", None, Sample { tokens: None, seconds: Some(30.0) });
        let p = predict(&spec("gpt", None, vec![cell("t9", 1)]), &cfg(), &any);
        assert_eq!((p.from_any_history, p.timed, p.tokened), (1, 1, 0));
        assert!(p.words().starts_with("tokens not known"), "{}", p.words());
        assert!(p.words().contains("30 s (1 of 1 cells from history)"), "{}", p.words());
    }

    #[test]
    fn warnings_name_unavailability_reruns_a_shared_endpoint_and_money() {
        let (a, b) = (cell("t1", 1), cell("t1", 2));
        let s = spec("gpt", None, vec![a.clone(), b]);
        let prediction = Prediction { cost: Some(1234.5), currency: Some("USD".into()), ..Default::default() };
        let now = Circumstances {
            covered: vec![a.id.clone()],
            in_flight: vec![],
            unavailable: vec!["model \"gpt\" is credit-flagged until midnight".into()],
        };
        let w = warnings(&s, &cfg(), &prediction, &now);
        assert_eq!(
            w,
            [
                "the catalogue says: model \"gpt\" is credit-flagged until midnight".to_string(),
                format!("re-runs 1 cell already covered (e.g. {})", a.id),
                "spends money: about 1,234.50 USD predicted on gpt".to_string(),
            ]
        );
        let mut local = spec("qwen", Some("gpu-a"), vec![cell("t2", 1)]);
        local.endpoint = Some("gpu-a".into());
        let busy = Circumstances { in_flight: vec![("b-9".into(), vec!["gpu-a".into()])], ..Default::default() };
        let w = warnings(&local, &cfg(), &Prediction::default(), &busy);
        assert_eq!(w, ["shares endpoint gpu-a with b-9, running now (both run slower, and neither's timings count)"]);
    }

    #[test]
    fn every_refusal_is_listed_together() {
        let mut c = cfg();
        c.budget = Budget { max_tokens: Some(1000), max_cost: Some(0.1), ..Default::default() };
        let a = cell("t1", 1);
        let mut h = History::default();
        h.by_cell.insert(a.id.clone(), vec![Sample { tokens: Some(4000), seconds: Some(10.0) }]);
        let findings = [Finding { severity: Severity::Blocking, message: "program \"python9\" not found".into() }];
        let today = BTreeMap::from([("gpt".to_owned(), 2)]);
        let pf = check(&spec("gpt", Some("gpu"), vec![a]), &c, &findings, &today, &h);
        assert_eq!(
            pf.refusals,
            [
                "doctor: program \"python9\" not found",
                "endpoint \"gpu\" does not serve \"gpt\" (it serves qwen)",
                "model \"gpt\": its daily cap of 2 batch(es) is reached (2 launched today, UTC)",
                "budget: 4,000 tokens predicted, over the campaign's budget of 1,000 per batch",
                "budget: a cost of 2.00 USD predicted, over the campaign's budget of 0.10 USD per batch",
            ]
        );
        let ok = check(&spec("qwen", Some("gpu"), vec![cell("t9", 1)]), &cfg(), &[], &BTreeMap::new(), &h);
        assert!(ok.refusals.is_empty(), "{:?}", ok.refusals);
        let ghost = check(&spec("ghost", Some("nowhere"), vec![]), &cfg(), &[], &BTreeMap::new(), &h);
        assert_eq!(
            ghost.refusals,
            ["endpoint \"nowhere\" is not in the catalogue", "model \"ghost\" is not in the catalogue"]
        );
        let local = check(&spec("qwen", None, vec![]), &cfg(), &[], &BTreeMap::new(), &h);
        assert_eq!(local.refusals, ["model \"qwen\" is local and the spec names no endpoint"]);
    }
}
