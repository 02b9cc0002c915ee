//! A round's trial graph, drawn as SVG on the server and the client alike
//! (the admission map is a server-drawn chart: `runboard::charts`).

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::runview::trialgraph::{GraphEntry, GraphNode, TrialGraph};

use super::num;
use crate::api;

/// The trial-graph tab: one round's graph at a time (`?round=N`, the latest by
/// default), drawn and listed in pick order.
/// How many of a graph's nodes its table lists (the drawing shows them all).
const NODES_SHOWN: usize = 50;

#[component]
pub(super) fn TrialGraphs(name: String, version: Signal<String>) -> impl IntoView {
    let (round, _) = query_signal::<u32>("round");
    let (nodes_page, _) = query_signal::<usize>("nodes_page");
    let graphs = crate::codec::resource(
        move || (name.clone(), version.get()),
        |(n, _)| api::run_trial_graphs(api::RunName { name: n }),
    );
    view! {
        <Transition fallback=|| crate::ui::loading("Reading the trial graphs…")>
            {move || graphs.get().map(|res| match res {
                Err(e) => crate::ui::failure("Could not read the trial graphs", &e),
                Ok(list) if list.is_empty() => view! { <p class="empty">"No trial graphs: no round has a trial_graph file."</p> }.into_any(),
                Ok(list) => {
                    let chosen = round.get().filter(|r| list.iter().any(|g| g.round() == *r)).unwrap_or_else(|| list.last().map(GraphEntry::round).unwrap_or(0));
                    view! {
                        <nav class="graph-rounds">"Round: "
                            {list.iter().map(|g| {
                                let r = g.round();
                                view! { <a href=format!("?tab=graph&round={r}") class:current=r == chosen data-round=r>{r}</a>" " }
                            }).collect_view()}
                        </nav>
                        {list.into_iter().find(|g| g.round() == chosen).map(|g| match g {
                            GraphEntry::Unreadable { file, reason, .. } => view! {
                                <p class="problem">"trial_graph/"{file}": "{reason}</p>
                            }.into_any(),
                            GraphEntry::Graph(g) => trial_graph(&g, chosen, nodes_page.get().unwrap_or(0)).into_any(),
                        })}
                    }.into_any()
                }
            })}
        </Transition>
    }
}

/// Nodes in columns by the round that wrote them, edges from parents, the picked
/// nodes labelled with their rank; then the same nodes as a table in pick order.
fn trial_graph(g: &TrialGraph, round: u32, page: usize) -> impl IntoView {
    const COL: f64 = 150.0;
    const ROW: f64 = 34.0;
    const PAD: f64 = 30.0;
    /// Rounds of unpicked nodes drawn (the latest); the table lists every node.
    const RECENT_ROUNDS: u32 = 4;
    // A long run's pool holds every earlier trial: draw the picked nodes, their
    // parents, and the pool's latest rounds.
    let latest = g.nodes.iter().filter_map(|n| n.round).max().unwrap_or(0);
    let wanted: std::collections::HashSet<&str> = g
        .nodes
        .iter()
        .filter(|n| n.rank.is_some())
        .flat_map(|n| std::iter::once(n.trial.as_str()).chain(n.parents.iter().map(String::as_str)))
        .collect();
    let drawn: Vec<&GraphNode> = g
        .nodes
        .iter()
        .filter(|n| wanted.contains(n.trial.as_str()) || n.round.is_some_and(|r| r + RECENT_ROUNDS > latest))
        .collect();
    let caption = format!(
        "Blue: picked (numbered in pick order). Green: accepted. Lines join a trial to its parents. {} of {} nodes drawn: the picked, their parents and the latest {RECENT_ROUNDS} rounds.",
        drawn.len(),
        g.nodes.len()
    );
    let mut columns: Vec<Option<u32>> = drawn.iter().map(|n| n.round).collect();
    columns.sort_unstable();
    columns.dedup();
    let mut place = std::collections::HashMap::new();
    let mut filled = vec![0usize; columns.len()];
    for n in &drawn {
        let c = columns.iter().position(|r| *r == n.round).unwrap_or(0);
        place.insert(n.trial.as_str(), (PAD + c as f64 * COL, PAD + filled[c] as f64 * ROW));
        filled[c] += 1;
    }
    let w = PAD * 2.0 + (columns.len().max(1) - 1) as f64 * COL + 100.0;
    let h = PAD * 2.0 + (filled.iter().copied().max().unwrap_or(1).max(1) - 1) as f64 * ROW + 10.0;
    let edges: Vec<((f64, f64), (f64, f64))> = drawn
        .iter()
        .flat_map(|n| n.parents.iter().filter_map(|p| Some((*place.get(p.as_str())?, *place.get(n.trial.as_str())?))))
        .collect();
    view! {
        <svg class="trial-graph" viewBox=format!("0 0 {w} {h}") width=w height=h role="img"
             aria-label=format!("trial graph of round {}", g.round)>
            {edges.into_iter().map(|((x1, y1), (x2, y2))| view! {
                <line class="edge" x1=x1 y1=y1 x2=x2 y2=y2 stroke="#8c959f" stroke-width="1"/>
            }).collect_view()}
            {drawn.iter().map(|n| {
                let (x, y) = place[n.trial.as_str()];
                let fill = match (n.rank, n.accepted) { (Some(_), _) => "#0969da", (None, Some(true)) => "#1a7f37", _ => "#afb8c1" };
                view! {
                    <g class=if n.rank.is_some() { "node picked" } else { "node" } data-trial=n.trial.clone()>
                        <circle cx=x cy=y r=7 fill=fill/>
                        <text x=x + 10.0 y=y + 4.0 font-size="11">{match n.rank { Some(r) => format!("#{r} {}", n.trial), None => n.trial.clone() }}</text>
                        <title>{format!("{} (round {}), score {}", n.trial, n.round.map(|r| r.to_string()).unwrap_or_else(|| "?".into()), num(n.score))}</title>
                    </g>
                }
            }).collect_view()}
        </svg>
        <p class="legend">{caption}</p>
        // The nodes a page at a time (a round's graph can hold hundreds):
        // the picked ones first, as the graph ranks them.
        {crate::ui::pager(
            page,
            g.nodes.len().div_ceil(NODES_SHOWN),
            ("← previous", "next →"),
            format!("nodes {}–{} of {}", (page * NODES_SHOWN + 1).min(g.nodes.len()), ((page + 1) * NODES_SHOWN).min(g.nodes.len()), g.nodes.len()),
            crate::ui::PageTo::Href(Callback::new(move |n| format!("?tab=graph&round={round}&nodes_page={n}"))),
        )}
        <table class="graph-nodes">
            <thead><tr><th>"Rank"</th><th>"Trial"</th><th>"Round"</th><th>"Score"</th><th>"Parents"</th></tr></thead>
            <tbody>
                {g.nodes.iter().skip(page * NODES_SHOWN).take(NODES_SHOWN).map(|n| view! {
                    <tr class="graph-node" data-trial=n.trial.clone()>
                        <td class="rank">{n.rank.map(|r| r.to_string()).unwrap_or_else(|| "not picked".into())}</td>
                        <td>{n.trial.clone()}</td>
                        <td>{n.round.map(|r| r.to_string())}</td>
                        <td>{num(n.score)}</td>
                        <td>{n.parents.join(", ")}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        {(g.skipped_nodes > 0).then(|| view! { <p class="problem">{format!("{} nodes name no trial and are left out", g.skipped_nodes)}</p> })}
    }
}
