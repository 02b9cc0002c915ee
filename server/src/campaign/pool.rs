//! Probing a resource pool's endpoints: `GET <url>/models` on each, at once,
//! each bounded by [`PROBE_TIMEOUT`]; the decision is `runboard::console::pool::check`.
//! [`get_all`] is the bounded `GET` of many URLs at once (the metrics reads use it too).

use std::collections::BTreeMap;
use std::time::Duration;

use runboard::campaign::CampaignConfig;
use runboard::console::pool::{ModelsAnswer, Probe};

/// How long one endpoint may take to answer `/models`.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

/// The probe of each named catalogue endpoint (names not in the catalogue
/// are left out: the check says so).
pub fn probe(cfg: &CampaignConfig, names: &[String]) -> BTreeMap<String, Probe> {
    let targets: Vec<(String, String)> = names
        .iter()
        .filter_map(|n| cfg.endpoint(n).map(|e| (n.clone(), format!("{}/models", e.url.trim_end_matches('/')))))
        .collect();
    get_all(targets, PROBE_TIMEOUT, MODELS_MAX_BYTES)
        .into_iter()
        .map(|(name, got)| {
            let probe = got.and_then(|body| {
                serde_json::from_slice::<ModelsAnswer>(&body)
                    .map(|a| a.data)
                    .map_err(|e| format!("not an OpenAI-compatible model list: {e}"))
            });
            (name, probe)
        })
        .collect()
}

/// The most of a `/models` answer read.
const MODELS_MAX_BYTES: usize = 4 << 20;

/// `GET` each `(name, url)` at once, each bounded by `timeout` and its body
/// by `max_bytes`: each body, or why not in words (a status other than 2xx
/// is a failure). Never through a proxy. Callable from any thread (a
/// request handler's blocking pool, the CLI, a test): a runtime of its own on
/// a thread of its own.
pub fn get_all(
    mut targets: Vec<(String, String)>,
    timeout: Duration,
    max_bytes: usize,
) -> BTreeMap<String, Result<Vec<u8>, String>> {
    targets.sort();
    targets.dedup();
    if targets.is_empty() {
        return BTreeMap::new();
    }
    let worker = std::thread::spawn(move || {
        let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(rt) => rt,
            Err(e) => return targets.into_iter().map(|(n, _)| (n, Err(format!("no runtime: {e}")))).collect(),
        };
        rt.block_on(async move {
            // A client of this runtime (a pooled one would outlive it).
            let client = match reqwest::Client::builder().no_proxy().timeout(timeout).build() {
                Ok(c) => c,
                Err(e) => return targets.into_iter().map(|(n, _)| (n, Err(e.to_string()))).collect(),
            };
            let asks = targets.into_iter().map(|(name, url)| {
                let client = client.clone();
                async move { (name, get(&client, &url, timeout, max_bytes).await) }
            });
            futures_util::future::join_all(asks).await.into_iter().collect::<BTreeMap<_, _>>()
        })
    });
    worker.join().unwrap_or_default()
}

async fn get(client: &reqwest::Client, url: &str, timeout: Duration, max_bytes: usize) -> Result<Vec<u8>, String> {
    let words = |e: reqwest::Error| {
        if e.is_timeout() {
            format!("no answer within {} s", timeout.as_secs_f64())
        } else if e.is_connect() {
            "cannot connect".to_owned()
        } else {
            e.to_string()
        }
    };
    let mut res = client.get(url).send().await.map_err(words)?;
    let status = res.status();
    if !status.is_success() {
        return Err(format!("HTTP {status}"));
    }
    let mut body = Vec::new();
    while let Some(chunk) = res.chunk().await.map_err(words)? {
        if body.len() + chunk.len() > max_bytes {
            return Err(format!(
                "its answer is larger than {} bytes",
                runboard::basics::numfmt::thousands(max_bytes as u64)
            ));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}
