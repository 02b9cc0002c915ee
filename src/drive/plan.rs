//! Which cells a batch still has to run, and how a command template is filled.

use std::collections::BTreeMap;

use super::records::{CellRecord, CellStatus};
use crate::console::spec::Cell;

/// The cells of `planned` that no completion record marks done, in plan order.
/// A failed, stopped or still-"running" (interrupted) cell runs again.
pub fn remaining<'a>(planned: &'a [Cell], records: &BTreeMap<String, CellRecord>) -> Vec<&'a Cell> {
    planned.iter().filter(|c| !records.get(&c.id).is_some_and(|r| matches!(r.status, CellStatus::Done))).collect()
}

/// Replaces `{name}` in each argument with `vars[name]`; `{{` and `}}` are literal
/// braces. A `{name}` with no value is an error naming it, so a typo never runs a
/// command with a literal placeholder.
pub fn fill(template: &[String], vars: &BTreeMap<String, String>) -> Result<Vec<String>, String> {
    template
        .iter()
        .map(|arg| {
            let mut out = String::with_capacity(arg.len());
            let mut rest = arg.as_str();
            while let Some(open) = rest.find(['{', '}']) {
                out.push_str(&rest[..open]);
                let after = &rest[open + 1..];
                // `{{` and `}}` are a literal brace (JSON in a shell command, say).
                if rest[open..].starts_with("{{") || rest[open..].starts_with("}}") {
                    out.push_str(&rest[open..open + 1]);
                    rest = &rest[open + 2..];
                    continue;
                }
                if rest[open..].starts_with('}') {
                    out.push('}');
                    rest = after;
                    continue;
                }
                let close = after.find('}').ok_or_else(|| format!("unclosed '{{' in {arg:?}"))?;
                let name = &after[..close];
                let value = vars.get(name).ok_or_else(|| format!("{{{name}}} in {arg:?} has no value"))?;
                out.push_str(value);
                rest = &after[close + 1..];
            }
            out.push_str(rest);
            Ok(out)
        })
        .collect()
}

/// What a runner command may name besides the cell's own values: the
/// batch's folders (`{out}`, `{runset}`, `{logs}`) and `{runboard}` (the
/// running runboard program), which the driver fills per cell, and the
/// catalogue's endpoint URLs, each endpoint's `{endpoint_url}`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BatchVars {
    pub fixed: BTreeMap<String, String>,
    pub endpoint_urls: BTreeMap<String, String>,
}

/// The names the driver fills for every runner command.
pub const FIXED_VARS: [&str; 4] = ["out", "runset", "logs", "runboard"];

/// Everything `cell`'s runner command may name: the route, the cell's
/// factors and id, its pool endpoint (which wins over the route's), that
/// endpoint's catalogue URL, and the batch's fixed values.
pub fn runner_vars(
    route: &BTreeMap<String, String>,
    pool: &BTreeMap<String, String>,
    cell: &Cell,
    batch: &BatchVars,
) -> BTreeMap<String, String> {
    let mut vars = cell_vars(route, cell);
    if let Some(e) = pool.get(&cell.id) {
        vars.insert("endpoint".into(), e.clone());
    }
    if let Some(url) = vars.get("endpoint").and_then(|e| batch.endpoint_urls.get(e)) {
        vars.insert("endpoint_url".into(), url.clone());
    }
    vars.extend(batch.fixed.iter().map(|(k, v)| (k.clone(), v.clone())));
    vars
}

/// The batch's route as template variables (`{model}`, `{backend}`,
/// `{endpoint}`, `{prompt_variant}`, `{request_preset}`), those the spec gives.
pub fn route_vars(spec: &crate::console::spec::BatchSpec) -> BTreeMap<String, String> {
    [
        ("model", &spec.model),
        ("backend", &spec.backend),
        ("endpoint", &spec.endpoint),
        ("prompt_variant", &spec.prompt_variant),
        ("request_preset", &spec.request_preset),
    ]
    .into_iter()
    .filter_map(|(k, v)| v.as_ref().map(|v| (k.to_owned(), v.clone())))
    .collect()
}

/// A resource pool's assignment: each cell's endpoint, by the cell's place in
/// the spec (`endpoints[i mod n]`) — the same on a resume, which runs only
/// some of the cells. Empty when the spec has no pool.
pub fn pool_assignment(spec: &crate::console::spec::BatchSpec) -> BTreeMap<String, String> {
    if spec.endpoints.is_empty() {
        return BTreeMap::new();
    }
    spec.cells
        .iter()
        .enumerate()
        .map(|(i, c)| (c.id.clone(), spec.endpoints[i % spec.endpoints.len()].clone()))
        .collect()
}

/// The template variables of a cell: the batch's route, then its factors as
/// text (a factor of the same name wins), and its id.
pub fn cell_vars(route: &BTreeMap<String, String>, cell: &Cell) -> BTreeMap<String, String> {
    let mut vars = route.clone();
    vars.extend(
        cell.factors.iter().map(|(k, v)| (k.clone(), v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string()))),
    );
    vars.insert("cell".into(), cell.id.clone());
    vars
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::spec::cell_id;
    use serde_json::json;

    fn cell(task: &str) -> Cell {
        let factors: BTreeMap<_, _> =
            [("task".to_owned(), json!(task)), ("seed".to_owned(), json!(3))].into_iter().collect();
        Cell { id: cell_id(&factors), factors }
    }

    #[test]
    fn fill_replaces_known_names_and_refuses_unknown_ones() {
        let c = cell("t1");
        let mut vars = cell_vars(&BTreeMap::new(), &c);
        vars.insert("out".into(), "/o".into());
        let argv =
            fill(&["run".into(), "--task={task}".into(), "{out}/{cell}".into(), "-s{seed}".into()], &vars).unwrap();
        assert_eq!(argv, ["run", "--task=t1", &format!("/o/{}", c.id), "-s3"]);
        assert_eq!(fill(&["{nope}".into()], &vars).unwrap_err(), "{nope} in \"{nope}\" has no value");
        assert_eq!(fill(&["a{b".into()], &vars).unwrap_err(), "unclosed '{' in \"a{b\"");
        assert_eq!(fill(&["{{\"k\": {seed}}}".into()], &vars).unwrap(), ["{\"k\": 3}"]);
    }

    #[test]
    fn only_done_cells_are_skipped_on_resume() {
        let cells = [cell("a"), cell("b"), cell("c"), cell("d")];
        let rec = |c: &Cell, status| (c.id.clone(), CellRecord::new(c, status));
        let records: BTreeMap<_, _> =
            [rec(&cells[0], CellStatus::Done), rec(&cells[1], CellStatus::Failed), rec(&cells[2], CellStatus::Running)]
                .into_iter()
                .collect();
        let left: Vec<_> = remaining(&cells, &records).iter().map(|c| c.factors["task"].clone()).collect();
        assert_eq!(left, [json!("b"), json!("c"), json!("d")]);
    }
}
