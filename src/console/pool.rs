//! A resource-pool launch: one logical batch spread over several endpoints
//! (`endpoints` in the spec). Its cells are only comparable if every
//! endpoint serves the same model the same way, so the launch is refused —
//! with every reason at once — unless the pool has cells, names each
//! endpoint once, every endpoint is in the catalogue, serves the requested
//! model and backend and reports the model at its `/v1/models`, and the
//! endpoints agree on the model's identity and on the request policy.
//!
//! The probes of `/v1/models` are made by the server; this is the decision.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::campaign::CampaignConfig;
use crate::console::spec::BatchSpec;

/// One model an endpoint reports at `GET <url>/models` (OpenAI-compatible:
/// `{"data": [{"id", "root"?, "max_model_len"?}, …]}`; vLLM gives `root`,
/// the weights it loaded, and `max_model_len`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServedModel {
    pub id: String,
    #[serde(default)]
    pub root: Option<String>,
    #[serde(default)]
    pub max_model_len: Option<u64>,
}

/// `/v1/models`'s answer.
#[derive(Debug, Clone, Deserialize)]
pub struct ModelsAnswer {
    pub data: Vec<ServedModel>,
}

/// What probing an endpoint gave: the models it reports, or why it did not.
pub type Probe = Result<Vec<ServedModel>, String>;

impl ServedModel {
    /// What makes two servings of a model the same: the weights and the
    /// context length.
    fn identity(&self) -> String {
        let weights = self.root.as_deref().unwrap_or(&self.id);
        match self.max_model_len {
            Some(n) => format!("{weights} (max_model_len {n})"),
            None => weights.to_owned(),
        }
    }
}

/// Every reason a pool spec cannot launch (empty: it can). `probes` holds the
/// probe of each catalogue endpoint the pool names.
pub fn check(spec: &BatchSpec, cfg: &CampaignConfig, probes: &BTreeMap<String, Probe>) -> Vec<String> {
    let mut out = Vec::new();
    if spec.cells.is_empty() {
        out.push("the pool plans no cells".into());
    }
    let mut seen = BTreeSet::new();
    for name in &spec.endpoints {
        if !seen.insert(name.as_str()) {
            out.push(format!("endpoint {name:?} is named twice in the pool"));
        }
    }
    let model = spec.model.as_deref();
    if model.is_none() {
        out.push("a pool must name its model".into());
    }
    // (endpoint, identity) of each endpoint that reports the model.
    let mut identities: Vec<(&str, String)> = Vec::new();
    let mut policies: Vec<(&str, Option<&str>)> = Vec::new();
    for name in seen {
        let Some(e) = cfg.endpoint(name) else {
            out.push(format!("endpoint {name:?} is not in the catalogue"));
            continue;
        };
        policies.push((name, e.request_preset.as_deref()));
        if let Some(m) = model {
            if !e.models.iter().any(|s| s == m) {
                out.push(format!("endpoint {name:?} does not serve {m:?} (it serves {})", e.models.join(", ")));
            }
        }
        if let Some(b) = spec.backend.as_deref().filter(|b| *b != e.backend) {
            out.push(format!("endpoint {name:?} runs {:?}, the spec asks for backend {b:?}", e.backend));
        }
        match probes.get(name) {
            None => out.push(format!("endpoint {name:?} was not probed")),
            Some(Err(why)) => out.push(format!("endpoint {name:?} ({}): /models did not answer: {why}", e.url)),
            Some(Ok(served)) => {
                if let Some(m) = model {
                    match served.iter().find(|s| s.id == m) {
                        Some(s) => identities.push((name, s.identity())),
                        None => out.push(format!(
                            "endpoint {name:?} does not report {m:?} at {}/models (it reports {})",
                            e.url,
                            if served.is_empty() {
                                "none".to_owned()
                            } else {
                                served.iter().map(|s| s.id.as_str()).collect::<Vec<_>>().join(", ")
                            }
                        )),
                    }
                }
            }
        }
    }
    let distinct: BTreeSet<&str> = identities.iter().map(|(_, i)| i.as_str()).collect();
    if distinct.len() > 1 {
        out.push(format!(
            "the endpoints do not serve the same model identity: {}",
            identities.iter().map(|(n, i)| format!("{n} serves {i}")).collect::<Vec<_>>().join("; ")
        ));
    }
    let distinct: BTreeSet<Option<&str>> = policies.iter().map(|(_, p)| *p).collect();
    if distinct.len() > 1 {
        out.push(format!(
            "the endpoints do not share a request policy: {}",
            policies
                .iter()
                .map(|(n, p)| format!("{n} uses preset {}", p.map_or("(none)".into(), |p| format!("{p:?}"))))
                .collect::<Vec<_>>()
                .join("; ")
        ));
    } else if let (Some(asked), Some((_, Some(theirs)))) = (spec.request_preset.as_deref(), policies.first()) {
        if asked != *theirs {
            out.push(format!("the spec asks for request preset {asked:?}; the pool's endpoints use {theirs:?}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::campaign::{EndpointEntry, ModelEntry, ModelKind};
    use crate::console::spec::Cell;

    fn cfg() -> CampaignConfig {
        let mut c = CampaignConfig::unnamed("x");
        c.models = vec![ModelEntry::new("qwen", ModelKind::Local, None, 0.0)];
        let ep = |name: &str, backend: &str, preset: &str| EndpointEntry {
            name: name.into(),
            url: format!("http://127.0.0.1:9/{name}/v1"),
            backend: backend.into(),
            models: vec!["qwen".into()],
            request_preset: Some(preset.into()),
            ..Default::default()
        };
        c.endpoints = vec![ep("a", "vllm", "p"), ep("b", "vllm", "p"), ep("c", "sglang", "q")];
        c
    }

    fn spec(endpoints: &[&str], cells: usize) -> BatchSpec {
        BatchSpec {
            schema_version: 1,
            label: "pool".into(),
            cells: (0..cells)
                .map(|i| Cell { id: format!("c-{i}"), factors: [("seed".to_owned(), serde_json::json!(i))].into() })
                .collect(),
            model: Some("qwen".into()),
            backend: Some("vllm".into()),
            endpoint: None,
            endpoints: endpoints.iter().map(|s| (*s).to_owned()).collect(),
            prompt_variant: None,
            retry: None,
            request_preset: None,
            artefacts: Vec::new(),
        }
    }

    fn served(root: &str) -> Probe {
        Ok(vec![ServedModel { id: "qwen".into(), root: Some(root.into()), max_model_len: Some(32768) }])
    }

    #[test]
    fn a_pool_of_the_same_serving_passes() {
        let probes = BTreeMap::from([("a".to_owned(), served("/m/qwen-awq")), ("b".to_owned(), served("/m/qwen-awq"))]);
        assert_eq!(check(&spec(&["a", "b"], 4), &cfg(), &probes), Vec::<String>::new());
    }

    #[test]
    fn every_reason_a_pool_is_refused_is_listed_at_once() {
        let probes = BTreeMap::from([
            ("a".to_owned(), served("/m/qwen-awq")),
            ("b".to_owned(), served("/m/qwen-fp16")),
            ("c".to_owned(), Err("connection refused".to_owned())),
        ]);
        let got = check(&spec(&["a", "b", "a", "c", "ghost"], 0), &cfg(), &probes);
        let want = [
            "the pool plans no cells",
            "endpoint \"a\" is named twice in the pool",
            "endpoint \"c\" runs \"sglang\", the spec asks for backend \"vllm\"",
            "endpoint \"c\" (http://127.0.0.1:9/c/v1): /models did not answer: connection refused",
            "endpoint \"ghost\" is not in the catalogue",
            "the endpoints do not serve the same model identity: a serves /m/qwen-awq (max_model_len 32768); b serves /m/qwen-fp16 (max_model_len 32768)",
            "the endpoints do not share a request policy: a uses preset \"p\"; b uses preset \"p\"; c uses preset \"q\"",
        ];
        assert_eq!(got, want);
        // An endpoint that answers without the model.
        let probes = BTreeMap::from([
            ("a".to_owned(), served("/m/qwen-awq")),
            ("b".to_owned(), Ok(vec![ServedModel { id: "llama".into(), root: None, max_model_len: None }])),
        ]);
        assert_eq!(
            check(&spec(&["a", "b"], 2), &cfg(), &probes),
            ["endpoint \"b\" does not report \"qwen\" at http://127.0.0.1:9/b/v1/models (it reports llama)"]
        );
    }
}
