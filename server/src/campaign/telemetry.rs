//! Endpoint telemetry's reads (`runboard::live::telemetry`): the calls the live
//! batches' cells wrote in the last minute, by endpoint, and each endpoint's
//! Prometheus metrics — read at most once per [`METRICS_KEPT`], one reader at
//! a time, each read bounded by [`METRICS_TIMEOUT`] and
//! [`runboard::live::telemetry::METRICS_MAX_BYTES`].

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use runboard::api::ApiError;
use runboard::basics::timefmt::Timestamp;
use runboard::campaign::CampaignConfig;
use runboard::live::telemetry::{self, Engine, EngineRead, TelemetryView, WINDOW_S};

use super::Campaign;

/// How long a metrics read is shown before the endpoint is read again.
pub const METRICS_KEPT: Duration = Duration::from_secs(5);
/// How long one metrics read may take.
pub const METRICS_TIMEOUT: Duration = Duration::from_secs(2);
/// How long a made view answers every asker: each open Live page asks every
/// 5 s, and a view reads every live batch's new calls.
pub const VIEW_KEPT: Duration = Duration::from_secs(2);

/// One endpoint's metrics as last read.
struct Held {
    url: String,
    read: Instant,
    /// The newest good read and the good read before it (for throughput).
    newest: Option<EngineRead>,
    before: Option<EngineRead>,
    /// The last read: its line problems, or why it failed.
    last: Result<Vec<String>, String>,
}

#[derive(Default)]
pub(super) struct TelemetryMemo {
    held: Mutex<HashMap<String, Held>>,
    /// Held while reading: one reader at a time, so many pages asking at once
    /// make one read per endpoint per [`METRICS_KEPT`].
    reading: Mutex<()>,
    /// The view as last made, and when: answered again for [`VIEW_KEPT`].
    made: Mutex<Option<(Instant, TelemetryView)>>,
}

impl TelemetryMemo {
    fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, Held>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }
}

impl Campaign {
    /// Every catalogue endpoint's telemetry now (made at most once per
    /// [`VIEW_KEPT`], however many ask).
    pub fn telemetry(&self) -> Result<TelemetryView, ApiError> {
        let mut made = self.telemetry_seen.made.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, view)) = made.as_ref().filter(|(at, _)| at.elapsed() < VIEW_KEPT) {
            return Ok(view.clone());
        }
        let view = self.make_telemetry()?;
        *made = Some((Instant::now(), view.clone()));
        Ok(view)
    }

    fn make_telemetry(&self) -> Result<TelemetryView, ApiError> {
        let cfg = self.config()?;
        let now = crate::system::clock::now();
        let since = Timestamp(now.0 - (WINDOW_S * 1000.0) as i64);
        let mut calls = self.recent_calls_by_endpoint(&cfg, since, now);
        let engines = self.engines(&cfg, cfg.endpoints.iter().map(|e| e.name.clone()).collect());
        let mut gateways = self.gateway_calls_by_endpoint(now);
        let endpoints = cfg
            .endpoints
            .iter()
            .map(|e| {
                let (run_sets, recent) = calls.remove(&e.name).unwrap_or_default();
                let rates = telemetry::call_rates(&recent, now, WINDOW_S);
                let t = telemetry::endpoint_telemetry(e, run_sets, rates, engines.get(&e.name));
                telemetry::with_gateway(t, gateways.remove(&e.name))
            })
            .collect();
        Ok(TelemetryView { endpoints, window_s: WINDOW_S, generated_at: now, note: telemetry::NOTE.to_owned() })
    }

    /// The endpoints with a `max_waiting` whose engine is at it now, with
    /// why: the autopilot launches nothing new on them, the catalogue says so.
    /// Only those endpoints' metrics are read.
    pub fn busy_endpoints(&self, cfg: &CampaignConfig) -> BTreeMap<String, String> {
        let limited: Vec<String> =
            cfg.endpoints.iter().filter(|e| e.max_waiting.is_some()).map(|e| e.name.clone()).collect();
        if limited.is_empty() {
            return BTreeMap::new();
        }
        let engines = self.engines(cfg, limited);
        cfg.endpoints
            .iter()
            .filter_map(|e| {
                let engine = engines.get(&e.name).and_then(|r| r.as_ref().ok()).map(|(en, _)| en);
                telemetry::busy(e, engine).map(|b| (e.name.clone(), b))
            })
            .collect()
    }

    /// The engine of each named endpoint that has a metrics URL, from a read
    /// of the last [`METRICS_KEPT`] or a new one.
    fn engines(
        &self,
        cfg: &CampaignConfig,
        names: Vec<String>,
    ) -> BTreeMap<String, Result<(Engine, Vec<String>), String>> {
        let urls: Vec<(String, String)> = names
            .into_iter()
            .filter_map(|n| cfg.endpoint(&n).and_then(telemetry::metrics_url).map(|u| (n, u)))
            .collect();
        let fresh = |held: &HashMap<String, Held>, (n, u): &(String, String)| {
            held.get(n).is_some_and(|h| &h.url == u && h.read.elapsed() < METRICS_KEPT)
        };
        if urls.iter().any(|t| !fresh(&self.telemetry_seen.held(), t)) {
            let _one = self.telemetry_seen.reading.lock().unwrap_or_else(|p| p.into_inner());
            // Read by another caller while this one waited: not again.
            let stale: Vec<(String, String)> =
                urls.iter().filter(|t| !fresh(&self.telemetry_seen.held(), t)).cloned().collect();
            let got = super::pool::get_all(stale.clone(), METRICS_TIMEOUT, telemetry::METRICS_MAX_BYTES);
            let at = crate::system::clock::now();
            let mut held = self.telemetry_seen.held();
            for (name, url) in stale {
                let h = held.entry(name.clone()).or_insert_with(|| Held {
                    url: url.clone(),
                    read: Instant::now(),
                    newest: None,
                    before: None,
                    last: Ok(Vec::new()),
                });
                if h.url != url {
                    (h.url, h.newest, h.before) = (url, None, None);
                }
                h.read = Instant::now();
                h.last = match got.get(&name).cloned().unwrap_or_else(|| Err("not read".into())) {
                    Ok(body) => {
                        let (samples, problems) = telemetry::parse_exposition(&String::from_utf8_lossy(&body));
                        h.before = h.newest.take();
                        h.newest = Some(telemetry::engine_read(&samples, at));
                        Ok(problems)
                    }
                    Err(why) => Err(why),
                };
            }
        }
        let held = self.telemetry_seen.held();
        urls.into_iter()
            .filter_map(|(n, _)| {
                let h = held.get(&n)?;
                let made = match (&h.last, &h.newest) {
                    (Ok(problems), Some(newest)) => {
                        Ok((telemetry::engine(h.before.as_ref(), newest), problems.clone()))
                    }
                    (Err(why), _) => Err(why.clone()),
                    (Ok(_), None) => Err("not read yet".into()),
                };
                Some((n, made))
            })
            .collect()
    }
}
