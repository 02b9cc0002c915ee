//! The provider catalogue view: every model and endpoint `campaign.toml`
//! names, with what the campaign knows of each now — which endpoints answer
//! and report the models they are said to serve, which are quarantined by
//! the autopilot and until when, which paid models are credit-flagged or at
//! their daily cap, what each has been used for (run sets, cells, tokens,
//! cost) and what is on it now. Availability and configuration: operational
//! signals, never results.
//!
//! A pure function of the catalogue, the run index's launches today, the
//! autopilot's flags, each run set's use and the endpoints' probes.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::auto::{CreditFlag, EndpointFailure};
use crate::basics::timefmt::Timestamp;
use crate::campaign::{CampaignConfig, EndpointEntry, ModelEntry, ModelKind};
use crate::console::pool::Probe;

/// What one run set used: its model, its endpoint(s) and what its cells spent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunSetUse {
    pub run_set: String,
    pub model: Option<String>,
    /// Its endpoint, or a pool's endpoints.
    pub endpoints: Vec<String>,
    /// Cells that ended (done or failed).
    pub cells: usize,
    /// What they spent: reported, else counted of their calls.
    pub tokens: u64,
    /// Their spend priced by kind (none: its model has no price).
    pub cost: Option<f64>,
    /// When it was launched.
    pub started_at: Option<Timestamp>,
    /// A unit of it is in flight now.
    pub in_flight: bool,
}

/// Everything the view is made from.
#[derive(Debug, Clone, Copy)]
pub struct CatalogueInputs<'a> {
    pub cfg: &'a CampaignConfig,
    /// Model → batches launched today (UTC), from the run index.
    pub launches_today: &'a BTreeMap<String, u32>,
    pub credit_flags: &'a BTreeMap<String, CreditFlag>,
    pub endpoint_failures: &'a BTreeMap<String, EndpointFailure>,
    pub usage: &'a [RunSetUse],
    /// Endpoint name → what `GET <url>/models` gave (absent: not probed).
    pub probes: &'a BTreeMap<String, Probe>,
    pub probed_at: Option<Timestamp>,
    /// Endpoint name → why it is busy now (its engine's queue at its
    /// `max_waiting`: `runboard::telemetry::busy`).
    pub busy: &'a BTreeMap<String, String>,
    pub now: Timestamp,
}

/// What the campaign has spent on a model or an endpoint.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Use {
    pub run_sets: usize,
    pub cells: usize,
    pub tokens: u64,
    /// At the catalogue's price (models with a price only).
    pub cost: Option<f64>,
    #[serde(with = "crate::basics::timefmt::rfc3339::option")]
    pub last_used: Option<Timestamp>,
    /// Run sets with a unit in flight now.
    pub in_flight: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelRow {
    pub name: String,
    pub kind: ModelKind,
    pub price_per_1k_tokens: f64,
    pub daily_cap: Option<u32>,
    pub launched_today: u32,
    /// The catalogue endpoints that serve it.
    pub endpoints: Vec<String>,
    pub credit_flag: Option<CreditFlag>,
    #[serde(rename = "use")]
    pub used: Use,
    /// Whether a batch of it could be launched now (the console's checks
    /// still apply: this says why not when it cannot).
    pub available: bool,
    pub words: String,
}

/// An endpoint's answer at `/models`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeRow {
    pub answers: bool,
    /// The model ids it reports.
    pub reported: Vec<String>,
    /// Catalogue models it is said to serve that it does not report.
    pub missing: Vec<String>,
    pub error: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EndpointRow {
    pub name: String,
    pub url: String,
    pub backend: String,
    pub models: Vec<String>,
    pub request_preset: Option<String>,
    /// `None`: not probed.
    pub probe: Option<ProbeRow>,
    /// The autopilot's quarantine, while it lasts.
    pub quarantine: Option<EndpointFailure>,
    /// Why it is busy now (its engine's queue at its `max_waiting`): usable,
    /// but the autopilot starts nothing new on it.
    #[serde(default)]
    pub busy: Option<String>,
    #[serde(rename = "use")]
    pub used: Use,
    pub available: bool,
    pub words: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CatalogueView {
    #[serde(with = "crate::basics::timefmt::rfc3339")]
    pub generated_at: Timestamp,
    #[serde(with = "crate::basics::timefmt::rfc3339::option")]
    pub probed_at: Option<Timestamp>,
    pub models: Vec<ModelRow>,
    pub endpoints: Vec<EndpointRow>,
    /// Run sets whose model or endpoint the catalogue no longer names.
    pub uncatalogued: Vec<String>,
    /// What the figures are.
    pub note: String,
    /// The currency of every price and cost (the campaign's).
    #[serde(default)]
    pub currency: String,
}

pub const NOTE: &str = "Availability and configuration: operational signals, not results.";

fn add(u: &mut Use, r: &RunSetUse) {
    u.run_sets += 1;
    u.cells += r.cells;
    u.tokens += r.tokens;
    if let Some(c) = r.cost {
        u.cost = Some(u.cost.unwrap_or(0.0) + c);
    }
    u.last_used = u.last_used.max(r.started_at);
    if r.in_flight {
        u.in_flight.push(r.run_set.clone());
    }
}

fn probe_row(probe: &Probe, serves: &[String]) -> ProbeRow {
    match probe {
        Err(e) => ProbeRow { answers: false, reported: Vec::new(), missing: Vec::new(), error: Some(e.clone()) },
        Ok(served) => {
            let reported: Vec<String> = served.iter().map(|s| s.id.clone()).collect();
            let missing = serves.iter().filter(|m| !reported.contains(m)).cloned().collect();
            ProbeRow { answers: true, reported, missing, error: None }
        }
    }
}

/// The view: models and endpoints in catalogue order.
pub fn catalogue(i: &CatalogueInputs) -> CatalogueView {
    let cfg = i.cfg;
    let mut uncatalogued = Vec::new();
    for r in i.usage {
        let unknown_model = r.model.as_deref().is_some_and(|m| cfg.model(m).is_none());
        let unknown_endpoint = r.endpoints.iter().any(|e| cfg.endpoint(e).is_none());
        if unknown_model || unknown_endpoint {
            uncatalogued.push(r.run_set.clone());
        }
    }
    let endpoints: Vec<EndpointRow> = cfg.endpoints.iter().map(|e| endpoint_row(i, e)).collect();
    let models = cfg.models.iter().map(|m| model_row(i, m, &endpoints)).collect();
    CatalogueView {
        generated_at: i.now,
        probed_at: i.probed_at,
        models,
        endpoints,
        uncatalogued,
        note: NOTE.into(),
        currency: i.cfg.currency.clone(),
    }
}

/// An endpoint's row: its use, its probe, and whether it is available — not
/// quarantined by the autopilot, answering `/models` and reporting every
/// model it serves — and why not, in words.
fn endpoint_row(i: &CatalogueInputs, e: &EndpointEntry) -> EndpointRow {
    let time = |t: Timestamp| t.to_display();
    let mut used = Use::default();
    for r in i.usage.iter().filter(|r| r.endpoints.contains(&e.name)) {
        add(&mut used, r);
    }
    let probe = i.probes.get(&e.name).map(|p| probe_row(p, &e.models));
    let quarantine = i.endpoint_failures.get(&e.name).filter(|f| !f.released && f.retry_at > i.now).cloned();
    let mut why_not = Vec::new();
    if let Some(q) = &quarantine {
        why_not.push(format!(
            "quarantined by the autopilot until {} after {} failure(s){}",
            time(q.retry_at),
            q.failures,
            if q.reason.is_empty() { String::new() } else { format!(": {}", q.reason) }
        ));
    }
    match &probe {
        Some(ProbeRow { error: Some(err), .. }) => {
            why_not.push(format!("{}/models does not answer: {err}", e.url.trim_end_matches('/')))
        }
        Some(p) if !p.missing.is_empty() => why_not.push(format!(
            "it does not report {} at /models (it reports {})",
            p.missing.join(", "),
            if p.reported.is_empty() { "none".into() } else { p.reported.join(", ") }
        )),
        _ => {}
    }
    let available = why_not.is_empty();
    let mut words = if available {
        match &probe {
            Some(_) => format!("Answers and reports {}.", e.models.join(", ")),
            None => "Not probed.".to_owned(),
        }
    } else {
        format!("Not available: {}.", why_not.join("; "))
    };
    if !used.in_flight.is_empty() {
        words += &format!(" Serving {} now.", used.in_flight.join(", "));
    }
    let busy = i.busy.get(&e.name).cloned();
    if let Some(b) = &busy {
        words += &format!(" Busy: {b}; the autopilot starts nothing new on it.");
    }
    EndpointRow {
        name: e.name.clone(),
        url: e.url.clone(),
        backend: e.backend.clone(),
        models: e.models.clone(),
        request_preset: e.request_preset.clone(),
        probe,
        quarantine,
        busy,
        used,
        available,
        words,
    }
}

/// A model's row: its use, its launches today against its daily cap, and
/// whether it is available — not credit-flagged, under its cap, and (a
/// local model) served by an available endpoint — and why not, in words.
fn model_row(i: &CatalogueInputs, m: &ModelEntry, endpoints: &[EndpointRow]) -> ModelRow {
    let time = |t: Timestamp| t.to_display();
    let mut used = Use::default();
    for r in i.usage.iter().filter(|r| r.model.as_deref() == Some(m.name.as_str())) {
        add(&mut used, r);
    }
    let serving: Vec<&EndpointRow> = endpoints.iter().filter(|e| e.models.contains(&m.name)).collect();
    let launched_today = i.launches_today.get(&m.name).copied().unwrap_or(0);
    let credit_flag = i.credit_flags.get(&m.name).filter(|f| f.until > i.now).cloned();
    let mut why_not = Vec::new();
    if let Some(f) = &credit_flag {
        why_not.push(format!(
            "credit-flagged until {}{}",
            time(f.until),
            if f.reason.is_empty() { String::new() } else { format!(" ({})", f.reason) }
        ));
    }
    if let Some(cap) = m.daily_cap.filter(|c| launched_today >= *c) {
        why_not.push(format!("its daily cap of {cap} is reached ({launched_today} launched today, UTC)"));
    }
    if m.kind == ModelKind::Local {
        if serving.is_empty() {
            why_not.push("no endpoint serves it".into());
        } else if !serving.iter().any(|e| e.available) {
            why_not.push(format!(
                "none of its endpoints is available ({})",
                serving.iter().map(|e| e.name.as_str()).collect::<Vec<_>>().join(", ")
            ));
        }
    }
    let available = why_not.is_empty();
    let words = if available {
        match m.daily_cap {
            Some(cap) => format!("Available: {} of its daily cap of {cap} left today.", cap - launched_today),
            None => "Available.".to_owned(),
        }
    } else {
        format!("Not available: {}.", why_not.join("; "))
    };
    ModelRow {
        name: m.name.clone(),
        kind: m.kind,
        price_per_1k_tokens: m.price_per_1k_tokens,
        daily_cap: m.daily_cap,
        launched_today,
        endpoints: serving.iter().map(|e| e.name.clone()).collect(),
        credit_flag,
        used,
        available,
        words,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{EndpointEntry, ModelEntry};
    use crate::console::pool::ServedModel;

    fn cfg() -> CampaignConfig {
        let mut c = CampaignConfig::unnamed("x");
        c.models = vec![
            ModelEntry::new("qwen", ModelKind::Local, None, 0.0),
            ModelEntry::new("llama", ModelKind::Local, None, 0.0),
            ModelEntry::new("gpt", ModelKind::Paid, Some(2), 0.5),
            ModelEntry::new("claude", ModelKind::Paid, Some(3), 1.0),
        ];
        let ep = |name: &str, models: &[&str]| EndpointEntry {
            name: name.into(),
            url: format!("http://127.0.0.1:9/{name}/v1"),
            backend: "vllm".into(),
            models: models.iter().map(|m| (*m).into()).collect(),
            request_preset: None,
            ..Default::default()
        };
        c.endpoints = vec![ep("a", &["qwen"]), ep("b", &["qwen", "llama"]), ep("c", &["llama"])];
        c
    }

    fn served(ids: &[&str]) -> Probe {
        Ok(ids.iter().map(|id| ServedModel { id: (*id).into(), root: None, max_model_len: None }).collect())
    }

    #[test]
    fn says_for_each_model_and_endpoint_whether_it_can_be_used_and_why_not() {
        let cfg = cfg();
        let now = Timestamp(1_000_000);
        let launches = BTreeMap::from([("gpt".to_owned(), 2u32), ("claude".to_owned(), 1)]);
        let flags = BTreeMap::from([
            ("claude".to_owned(), CreditFlag { reason: "HTTP 402".into(), until: Timestamp(2_000_000) }),
            // Expired: no longer holds.
            ("gpt".to_owned(), CreditFlag { reason: "old".into(), until: Timestamp(500) }),
        ]);
        let failures = BTreeMap::from([
            (
                "c".to_owned(),
                EndpointFailure {
                    failures: 2,
                    retry_at: Timestamp(1_500_000),
                    reason: "no run set".into(),
                    released: false,
                },
            ),
            // Past its retry time: not quarantined.
            (
                "a".to_owned(),
                EndpointFailure { failures: 1, retry_at: Timestamp(10), reason: String::new(), released: false },
            ),
        ]);
        let usage = [
            RunSetUse {
                run_set: "r1".into(),
                model: Some("gpt".into()),
                endpoints: vec![],
                cells: 4,
                tokens: 3000,
                cost: Some(1.5),
                started_at: Some(Timestamp(100)),
                in_flight: false,
            },
            RunSetUse {
                run_set: "r2".into(),
                model: Some("qwen".into()),
                endpoints: vec!["a".into()],
                cells: 2,
                tokens: 500,
                cost: None,
                started_at: Some(Timestamp(200)),
                in_flight: true,
            },
            RunSetUse {
                run_set: "r3".into(),
                model: Some("gone".into()),
                endpoints: vec!["a".into()],
                cells: 1,
                tokens: 1,
                cost: None,
                started_at: Some(Timestamp(300)),
                in_flight: false,
            },
        ];
        let probes = BTreeMap::from([
            ("a".to_owned(), served(&["qwen"])),
            ("b".to_owned(), served(&["qwen"])),
            ("c".to_owned(), Err("cannot connect".to_owned())),
        ]);
        let v = catalogue(&CatalogueInputs {
            cfg: &cfg,
            launches_today: &launches,
            credit_flags: &flags,
            endpoint_failures: &failures,
            usage: &usage,
            probes: &probes,
            probed_at: Some(now),
            busy: &BTreeMap::from([("a".to_owned(), "endpoint a is busy: 9 requests waiting".to_owned())]),
            now,
        });
        let words: Vec<(&str, bool, &str)> =
            v.endpoints.iter().map(|e| (e.name.as_str(), e.available, e.words.as_str())).collect();
        assert_eq!(
            words,
            [
                (
                    "a",
                    true,
                    "Answers and reports qwen. Serving r2 now. Busy: endpoint a is busy: 9 requests waiting; \
                     the autopilot starts nothing new on it."
                ),
                ("b", false, "Not available: it does not report llama at /models (it reports qwen)."),
                (
                    "c",
                    false,
                    "Not available: quarantined by the autopilot until 1970-01-01 00:25:00 UTC after 2 failure(s): \
                     no run set; http://127.0.0.1:9/c/v1/models does not answer: cannot connect."
                ),
            ]
        );
        let words: Vec<(&str, bool, &str)> =
            v.models.iter().map(|m| (m.name.as_str(), m.available, m.words.as_str())).collect();
        assert_eq!(
            words,
            [
                ("qwen", true, "Available."),
                ("llama", false, "Not available: none of its endpoints is available (b, c)."),
                ("gpt", false, "Not available: its daily cap of 2 is reached (2 launched today, UTC)."),
                ("claude", false, "Not available: credit-flagged until 1970-01-01 00:33:20 UTC (HTTP 402)."),
            ]
        );
        let gpt = &v.models[2];
        assert_eq!((gpt.used.run_sets, gpt.used.cells, gpt.used.tokens, gpt.used.cost), (1, 4, 3000, Some(1.5)));
        assert_eq!(v.models[0].used.cost, None, "a model without a price has no cost");
        assert_eq!(v.endpoints[0].used.run_sets, 2, "{:?}", v.endpoints[0].used);
        assert_eq!(v.endpoints[0].used.last_used, Some(Timestamp(300)));
        assert_eq!(v.uncatalogued, ["r3"]);
        assert_eq!(v.note, NOTE);
    }

    #[test]
    fn an_unprobed_catalogue_says_so_and_a_cap_counts_down() {
        let cfg = cfg();
        let launches = BTreeMap::from([("claude".to_owned(), 1u32)]);
        let none = BTreeMap::new();
        let v = catalogue(&CatalogueInputs {
            cfg: &cfg,
            launches_today: &launches,
            credit_flags: &BTreeMap::new(),
            endpoint_failures: &BTreeMap::new(),
            usage: &[],
            probes: &none,
            probed_at: None,
            busy: &BTreeMap::new(),
            now: Timestamp(0),
        });
        assert!(v.endpoints.iter().all(|e| e.probe.is_none() && e.words == "Not probed." && e.available));
        assert_eq!(v.models[3].words, "Available: 2 of its daily cap of 3 left today.");
    }
}
