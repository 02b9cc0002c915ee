//! Probing a resource pool's endpoints: `GET <url>/models` on each, at once,
//! each bounded by [`PROBE_TIMEOUT`]; the decision is `runboard::pool::check`.

use std::collections::BTreeMap;
use std::time::Duration;

use runboard::campaign::CampaignConfig;
use runboard::pool::{ModelsAnswer, Probe};

/// How long one endpoint may take to answer `/models`.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The probe of each named catalogue endpoint (names not in the catalogue
/// are left out: the check says so).
pub fn probe(cfg: &CampaignConfig, names: &[String]) -> BTreeMap<String, Probe> {
    let mut targets: Vec<(String, String)> = names
        .iter()
        .filter_map(|n| cfg.endpoint(n).map(|e| (n.clone(), format!("{}/models", e.url.trim_end_matches('/')))))
        .collect();
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        return BTreeMap::new();
    }
    // A runtime of its own on a thread of its own: callable from any thread
    // (a request handler's blocking pool, the CLI, a test).
    let worker = std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => return targets.into_iter().map(|(n, _)| (n, Err(format!("no runtime: {e}")))).collect(),
        };
        rt.block_on(async move {
            // A client of this runtime (a pooled one would outlive it); never a proxy.
            let client = reqwest::Client::builder().no_proxy().timeout(PROBE_TIMEOUT).build();
            let client = match client {
                Ok(c) => c,
                Err(e) => return targets.into_iter().map(|(n, _)| (n, Err(e.to_string()))).collect(),
            };
            let asks = targets.into_iter().map(|(name, url)| {
                let client = client.clone();
                async move { (name, ask(&client, &url).await) }
            });
            futures_util::future::join_all(asks).await.into_iter().collect::<BTreeMap<_, _>>()
        })
    });
    worker.join().unwrap_or_default()
}

async fn ask(client: &reqwest::Client, url: &str) -> Probe {
    let res = client.get(url).send().await.map_err(|e| {
        if e.is_timeout() {
            format!("no answer within {} s", PROBE_TIMEOUT.as_secs())
        } else if e.is_connect() {
            "cannot connect".to_owned()
        } else {
            e.to_string()
        }
    })?;
    let status = res.status();
    let body = res.bytes().await.map_err(|e| e.to_string())?;
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    serde_json::from_slice::<ModelsAnswer>(&body)
        .map(|a| a.data)
        .map_err(|e| format!("not an OpenAI-compatible model list: {e}"))
}
