//! The batch spec: the plan for one batch (label, cells, model/backend/endpoint,
//! prompt variant, retry policy, request preset). A *draft* becomes a *committed*
//! spec when launched; the driver runs committed specs and never edits them.
//!
//! A spec may be one file or a folder of files (every `*.json` below it,
//! recursively); [`merge`] joins the documents into one spec, refusing what
//! cannot be run with an error that names the file and the field.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

pub const SCHEMA_VERSION: u32 = 1;

/// One planned attempt, identified by its factor values.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Cell {
    /// Stable, derived from the factors (see [`cell_id`]); given ids must match.
    pub id: String,
    /// condition, task, phase, seed, repetition, and any a campaign adds.
    pub factors: BTreeMap<String, Value>,
}

/// A batch spec as the driver runs it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BatchSpec {
    pub schema_version: u32,
    pub label: String,
    pub cells: Vec<Cell>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backend: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<String>,
    /// A resource pool: one logical batch spread over these endpoints (the
    /// spec's cell *i* runs on `endpoints[i mod n]`, its `{endpoint}`); they
    /// must serve the same model identity under the same request policy
    /// (checked at launch). Not with `endpoint`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_variant: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_preset: Option<String>,
    /// Files (relative to the campaign root) the batch needs; missing ones block it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub artefacts: Vec<String>,
}

impl BatchSpec {
    /// The endpoints its cells run on: its pool (`endpoints`) when it has
    /// one, else its one `endpoint` (a spec never has both: `merge` refuses it).
    pub fn endpoints_used(&self) -> Vec<String> {
        if self.endpoints.is_empty() {
            self.endpoint.iter().cloned().collect()
        } else {
            self.endpoints.clone()
        }
    }
}

/// A refusal, naming the file and the field at fault.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{file}: {field}: {problem}")]
pub struct SpecError {
    pub file: String,
    pub field: String,
    pub problem: String,
}

/// How much of a problem's text (and of a field path) an error keeps: a value
/// echoed from a spec can be megabytes long (a 10 MB label), and an error is
/// read on a terminal or a page.
const MAX_ECHO: usize = 200;

fn err(file: &str, field: impl Into<String>, problem: impl Into<String>) -> SpecError {
    SpecError { file: file.to_owned(), field: shorten(&field.into()), problem: shorten(&problem.into()) }
}

/// `text` cut to at most [`MAX_ECHO`] bytes (at a character boundary), saying
/// how much was left out.
pub fn shorten(text: &str) -> String {
    if text.len() <= MAX_ECHO {
        return text.to_owned();
    }
    let mut end = MAX_ECHO;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes in all)", &text[..end], text.len())
}

/// The stable id of a cell: `c-` and 12 hex digits of a hash over its factors in
/// name order (so the same factors always give the same id, on any machine).
pub fn cell_id(factors: &BTreeMap<String, Value>) -> String {
    let mut h = crate::basics::hash::Fnv1a::new();
    for (k, v) in factors {
        h.write(k.as_bytes());
        h.write(&[0]);
        h.write(v.to_string().as_bytes());
        h.write(&[1]);
    }
    format!("c-{:012x}", h.finish() & 0xffff_ffff_ffff)
}

/// Parses one spec document. `file` names it in errors.
pub fn parse(file: &str, bytes: &[u8]) -> Result<BatchSpec, SpecError> {
    let doc: Value =
        serde_json::from_slice(bytes).map_err(|e| err(file, "(document)", crate::basics::json::describe_error(&e)))?;
    let obj = doc.as_object().ok_or_else(|| err(file, "(document)", "must be a JSON object"))?;
    let version = obj.get("schema_version").ok_or_else(|| err(file, "schema_version", "missing"))?;
    match version.as_u64() {
        Some(v) if v as u32 == SCHEMA_VERSION => {}
        Some(v) => {
            return Err(err(
                file,
                "schema_version",
                format!("{v} is not a version this runboard reads ({SCHEMA_VERSION})"),
            ))
        }
        None => return Err(err(file, "schema_version", format!("must be an integer, not {version}"))),
    }
    let label = match obj.get("label") {
        Some(Value::String(s)) if valid_label(s) => s.clone(),
        Some(Value::String(s)) => {
            let shown = if s.len() > 40 { format!("a {}-byte label", s.len()) } else { format!("{s:?}") };
            return Err(err(file, "label", format!("{shown} must be 1-80 letters, digits, '-', '_' or '.'")));
        }
        Some(other) => return Err(err(file, "label", format!("must be a string, not {other}"))),
        None => return Err(err(file, "label", "missing")),
    };
    let raw_cells = match obj.get("cells") {
        Some(Value::Array(a)) => a,
        Some(other) => return Err(err(file, "cells", format!("must be an array, not {}", kind(other)))),
        None => return Err(err(file, "cells", "missing")),
    };
    let mut cells = Vec::with_capacity(raw_cells.len());
    for (i, c) in raw_cells.iter().enumerate() {
        let at = |f: &str| format!("cells[{i}].{f}");
        let factors: BTreeMap<String, Value> = match c.get("factors") {
            Some(Value::Object(m)) if !m.is_empty() => m.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
            Some(Value::Object(_)) => return Err(err(file, at("factors"), "must name at least one factor")),
            Some(other) => return Err(err(file, at("factors"), format!("must be an object, not {}", kind(other)))),
            None => return Err(err(file, at("factors"), "missing")),
        };
        for (k, v) in &factors {
            if v.is_object() || v.is_array() || v.is_null() {
                return Err(err(file, at(&format!("factors.{k}")), "must be a string, number or boolean"));
            }
        }
        let derived = cell_id(&factors);
        match c.get("id") {
            None => {}
            Some(Value::String(given)) if *given == derived => {}
            Some(given) => {
                return Err(err(file, at("id"), format!("{given} does not match its factors (expected {derived:?})")))
            }
        }
        cells.push(Cell { id: derived, factors });
    }
    // The other fields by their types; `cells` was checked above, field by field.
    let mut rest = obj.clone();
    rest.insert("cells".into(), Value::Array(Vec::new()));
    let mut spec: BatchSpec = serde_path_to_error::deserialize(Value::Object(rest)).map_err(|e| {
        let field = e.path().to_string();
        err(file, field, e.into_inner().to_string())
    })?;
    spec.label = label;
    spec.cells = cells;
    Ok(spec)
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub fn valid_label(s: &str) -> bool {
    (1..=80).contains(&s.len()) && s.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Joins the documents of a spec folder (given as `(file, spec)` in path order)
/// into one spec: the first document's settings, every document's cells. Empty
/// input, conflicting labels and a cell planned twice are refused.
pub fn merge(docs: Vec<(String, BatchSpec)>) -> Result<BatchSpec, SpecError> {
    let mut iter = docs.into_iter();
    let (first_file, mut spec) = iter.next().ok_or_else(|| err("(spec)", "(files)", "no *.json spec files found"))?;
    let mut seen: BTreeMap<String, String> = spec.cells.iter().map(|c| (c.id.clone(), first_file.clone())).collect();
    if seen.len() != spec.cells.len() {
        return Err(err(&first_file, "cells", "the same cell (same factors) is planned twice"));
    }
    let mut artefacts: BTreeSet<String> = spec.artefacts.iter().cloned().collect();
    for (file, doc) in iter {
        if doc.label != spec.label {
            return Err(err(&file, "label", format!("{:?} differs from {:?} in {first_file}", doc.label, spec.label)));
        }
        for c in doc.cells {
            if let Some(other) = seen.insert(c.id.clone(), file.clone()) {
                return Err(err(&file, "cells", format!("cell {} is also planned in {other}", c.id)));
            }
            spec.cells.push(c);
        }
        artefacts.extend(doc.artefacts);
    }
    spec.artefacts = artefacts.into_iter().collect();
    if spec.endpoint.is_some() && !spec.endpoints.is_empty() {
        return Err(err(&first_file, "endpoints", "give endpoint (one) or endpoints (a pool), not both"));
    }
    // A pool's launch check lists an empty pool with its other reasons.
    if spec.cells.is_empty() && spec.endpoints.is_empty() {
        return Err(err(&first_file, "cells", "the spec plans no cells"));
    }
    Ok(spec)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn doc(v: Value) -> Vec<u8> {
        serde_json::to_vec(&v).unwrap()
    }

    #[test]
    fn a_huge_value_is_not_echoed_whole() {
        let label = "x ".repeat(5_000_000);
        let e = parse("a.json", &doc(json!({"schema_version": 1, "label": label, "cells": []}))).unwrap_err();
        let text = e.to_string();
        assert!(text.len() < 400, "{} bytes", text.len());
        assert!(text.contains("a 10000000-byte label must be"), "{text}");
        let e = parse("a.json", &doc(json!({"schema_version": 1, "label": "ok", "cells": [], "artefacts": label})))
            .unwrap_err()
            .to_string();
        assert!(e.len() < 400 && e.contains("bytes in all"), "{e}");
    }

    #[test]
    fn cell_ids_are_stable_and_depend_on_every_factor() {
        let f = |t: &str, s: i64| -> BTreeMap<String, Value> {
            [("task".to_owned(), json!(t)), ("seed".to_owned(), json!(s))].into_iter().collect()
        };
        assert_eq!(cell_id(&f("t1", 1)), cell_id(&f("t1", 1)));
        assert_ne!(cell_id(&f("t1", 1)), cell_id(&f("t1", 2)));
        assert_ne!(cell_id(&f("t1", 1)), cell_id(&f("t2", 1)));
        assert!(cell_id(&f("t1", 1)).starts_with("c-") && cell_id(&f("t1", 1)).len() == 14);
    }

    #[test]
    fn a_valid_spec_parses_with_derived_ids() {
        let s = parse(
            "a.json",
            &doc(json!({"schema_version": 1, "label": "batch-1", "model": "qwen",
            "cells": [{"factors": {"task": "t1", "seed": 1}}]})),
        )
        .unwrap();
        assert_eq!(s.label, "batch-1");
        assert_eq!(s.model.as_deref(), Some("qwen"));
        assert_eq!(s.cells[0].id, cell_id(&s.cells[0].factors));
    }

    #[test]
    fn malformed_specs_name_the_file_and_field() {
        let cases = [
            (json!([]), "a.json: (document): must be a JSON object"),
            (json!({"label": "x", "cells": []}), "a.json: schema_version: missing"),
            (json!({"schema_version": 7, "label": "x", "cells": []}), "a.json: schema_version: 7 is not a version"),
            (json!({"schema_version": 1, "cells": []}), "a.json: label: missing"),
            (json!({"schema_version": 1, "label": "a b", "cells": []}), "a.json: label: \"a b\" must be"),
            (json!({"schema_version": 1, "label": "x", "cells": {}}), "a.json: cells: must be an array, not an object"),
            (
                json!({"schema_version": 1, "label": "x", "cells": [{"factors": {}}]}),
                "a.json: cells[0].factors: must name at least one factor",
            ),
            (
                json!({"schema_version": 1, "label": "x", "cells": [{"factors": {"t": [1]}}]}),
                "a.json: cells[0].factors.t: must be a string",
            ),
            (
                json!({"schema_version": 1, "label": "x", "cells": [{"id": "c-0", "factors": {"t": 1}}]}),
                "a.json: cells[0].id: \"c-0\" does not match",
            ),
            (
                json!({"schema_version": 1, "label": "x", "model": 3, "cells": []}),
                "a.json: model: invalid type: integer `3`, expected a string",
            ),
        ];
        for (v, want) in cases {
            let got = parse("a.json", &doc(v.clone())).unwrap_err().to_string();
            assert!(got.starts_with(want), "{v} -> {got}");
        }
        let got = parse("a.json", b"{\"schema_version\": 1,").unwrap_err().to_string();
        assert!(got.starts_with("a.json: (document): line 1 column"), "{got}");
    }

    #[test]
    fn merging_joins_cells_and_refuses_conflicts() {
        let one = |label: &str, task: &str| {
            parse("x", &doc(json!({"schema_version": 1, "label": label, "cells": [{"factors": {"task": task}}]})))
                .unwrap()
        };
        let merged = merge(vec![("a.json".into(), one("b", "t1")), ("b.json".into(), one("b", "t2"))]).unwrap();
        assert_eq!(merged.cells.len(), 2);
        let dup = merge(vec![("a.json".into(), one("b", "t1")), ("b.json".into(), one("b", "t1"))]).unwrap_err();
        assert!(
            dup.to_string().starts_with("b.json: cells: cell c-")
                && dup.to_string().ends_with("also planned in a.json")
        );
        let label = merge(vec![("a.json".into(), one("b", "t1")), ("b.json".into(), one("c", "t2"))]).unwrap_err();
        assert_eq!(label.to_string(), "b.json: label: \"c\" differs from \"b\" in a.json");
        assert_eq!(merge(vec![]).unwrap_err().to_string(), "(spec): (files): no *.json spec files found");
    }
}
