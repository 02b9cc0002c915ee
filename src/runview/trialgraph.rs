//! A round's trial graph: `trial_graph/round_NN.json`, the pool of
//! candidates the planner chose parents from before round NN, with the edges
//! between them, ranked again by the graph's pick order. A round without the file
//! has none.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::basics::json::{describe_error, from_slice_lenient};

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GraphNode {
    pub trial: String,
    pub round: Option<u32>,
    pub parents: Vec<String>,
    /// The planner's score for the node, as written.
    pub score: Option<f64>,
    pub accepted: Option<bool>,
    /// 1 for the first picked; `None` for a node the planner did not pick.
    pub rank: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TrialGraph {
    pub round: u32,
    /// Picked nodes in pick order, then the others as the file lists them.
    pub nodes: Vec<GraphNode>,
    /// Nodes left out because they name no trial.
    pub skipped_nodes: usize,
}

/// A round's trial-graph file, read or with the reason it cannot be.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GraphEntry {
    Graph(TrialGraph),
    Unreadable { file: String, round: u32, reason: String },
}

impl GraphEntry {
    /// Reads `trial_graph/<file>` of round `round` from its bytes (or the reason
    /// they could not be read).
    pub fn read(file: &str, round: u32, bytes: Result<&[u8], String>) -> Self {
        match bytes.and_then(|b| parse(round, b)) {
            Ok(g) => Self::Graph(g),
            Err(reason) => Self::Unreadable { file: file.to_owned(), round, reason },
        }
    }

    pub fn round(&self) -> u32 {
        match self {
            Self::Graph(g) => g.round,
            Self::Unreadable { round, .. } => *round,
        }
    }
}

/// The round number of a trial-graph file name (`round_07.json` → 7).
pub fn round_of_file(name: &str) -> Option<u32> {
    name.strip_prefix("round_")?.strip_suffix(".json")?.parse().ok()
}

/// Reads round `round`'s trial graph; `Err` names what is wrong with the file.
pub fn parse(round: u32, bytes: &[u8]) -> Result<TrialGraph, String> {
    let v: Value = from_slice_lenient(bytes).map_err(|e| describe_error(&e))?;
    let items = v["nodes"].as_array().ok_or("no \"nodes\" list")?;
    let mut skipped_nodes = 0;
    let mut nodes: Vec<GraphNode> = Vec::with_capacity(items.len());
    for n in items {
        let Some(trial) = n["trial"].as_str() else {
            skipped_nodes += 1;
            continue;
        };
        nodes.push(GraphNode {
            trial: trial.to_owned(),
            round: n["round"].as_u64().and_then(|r| u32::try_from(r).ok()),
            parents: crate::basics::json::strings(&n["parents"]),
            score: n["score"].as_f64().filter(|f| f.is_finite()),
            accepted: n["accepted"].as_bool(),
            rank: None,
        });
    }
    // Ranked again by pick order: the graph's own order of the nodes is the order
    // they were added, not the order they were chosen.
    let picks: Vec<&str> =
        v["pick_order"].as_array().map(|p| p.iter().filter_map(Value::as_str).collect()).unwrap_or_default();
    let mut rank = 0;
    for pick in picks {
        if let Some(node) = nodes.iter_mut().find(|n| n.trial == pick && n.rank.is_none()) {
            rank += 1;
            node.rank = Some(rank);
        }
    }
    // Stable: unpicked nodes keep the file's order after the picked ones.
    nodes.sort_by_key(|n| n.rank.unwrap_or(u32::MAX));
    Ok(TrialGraph { round, nodes, skipped_nodes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_rounds_trial_graph_is_ranked_again_by_the_graphs_pick_order() {
        let file = br#"{"round": 3, "nodes": [
            {"trial": "r01s1", "round": 1, "score": 0.2},
            {"trial": "r01s2", "round": 1, "score": NaN},
            {"trial": "r02s1", "round": 2, "parents": ["r01s2"], "accepted": true},
            {"round": 2}
        ], "pick_order": ["r02s1", "r01s1", "not-a-node"]}"#;
        let g = parse(3, file).unwrap();
        let got: Vec<(&str, Option<u32>)> = g.nodes.iter().map(|n| (n.trial.as_str(), n.rank)).collect();
        assert_eq!(got, [("r02s1", Some(1)), ("r01s1", Some(2)), ("r01s2", None)]);
        assert_eq!(g.nodes[0].parents, ["r01s2"]);
        assert_eq!(g.nodes[2].score, None, "NaN reads as none");
        assert_eq!(g.skipped_nodes, 1);
        assert_eq!(round_of_file("round_03.json"), Some(3));
        assert_eq!(round_of_file("round_x.json"), None);
    }

    #[test]
    fn a_broken_trial_graph_says_why() {
        assert!(parse(1, b"{\"nodes\": [").unwrap_err().starts_with("line 1 column"));
        assert_eq!(parse(1, b"{}").unwrap_err(), "no \"nodes\" list");
    }
}
