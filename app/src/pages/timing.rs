//! The Timing view, `/timing?scope=&run_set=`: where each cell's time went on
//! a timeline (one row per cell; queued, running, retried, paused and failed
//! stretches coloured), which timings count and why the others do not, the
//! durations and the throughput (tokens per second per endpoint and model
//! over time), over the cells the scope selects.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::basics::timefmt::span_words;
use runboard::results::timing::{CellTiming, TimingSummary, TimingView};

use crate::api;
use crate::api::TimingQuery;
use crate::chart::ChartFigure;
use crate::scope::{use_scope, ScopeBar};
use crate::ui::loaded;

#[component]
pub fn TimingPage() -> impl IntoView {
    let (scope, _) = use_scope();
    let (run_set, set_run_set) = query_signal::<String>("run_set");
    let timing = crate::codec::resource(
        move || (scope.get(), run_set.get()),
        |(scope, run_set)| api::timing(TimingQuery { scope, run_set }),
    );
    view! {
        <section class="timing">
            <div class="toolbar">
                <h1>"Timing"</h1>
                <Transition fallback=|| ()>
                    {move || timing.get().and_then(Result::ok).filter(|t| !t.run_sets.is_empty()).map(|t| {
                        let chosen = t.run_set.clone().unwrap_or_default();
                        view! {
                            <label>"Timeline of "
                                <select name="run_set" prop:value=chosen
                                    on:change=move |ev| set_run_set.set(Some(event_target_value(&ev)))>
                                    {t.run_sets.iter().map(|r| view! { <option value=r.clone()>{r.clone()}</option> }).collect_view()}
                                </select>
                            </label>
                        }
                    })}
                </Transition>
            </div>
            <ScopeBar/>
            {loaded(timing, "Reading the timings…", "Could not read the timings", move |t| {
                body(&t).into_any()
            })}
        </section>
    }
    .into_any()
}

fn secs(s: Option<f64>) -> String {
    s.map(span_words).unwrap_or_else(|| "—".into())
}

fn rate(r: Option<f64>) -> String {
    r.map(|r| format!("{r:.1}")).unwrap_or_else(|| "—".into())
}

fn summary_row(name: String, s: &TimingSummary) -> impl IntoView {
    let key = name.clone();
    view! {
        <tr data-endpoint=key>
            <td>{name}</td>
            <td class="counted">{s.counted}</td>
            <td>{secs(s.median_s)}</td>
            <td>{secs(s.p90_s)}</td>
            <td class="tokens-per-s">{rate(s.tokens_per_s)}</td>
            <td>{runboard::basics::timefmt::duration_words(s.cell_hours * 3600.0)}</td>
        </tr>
    }
}

fn cell_row(c: &CellTiming) -> impl IntoView {
    let phases: Vec<String> =
        c.segments.iter().map(|s| format!("{} {}", s.phase.word(), span_words(s.to - s.from))).collect();
    view! {
        <tr data-cell=c.cell.clone() class=if c.counts { "counts" } else { "not-counted" }>
            <td>{c.cell.clone()}</td>
            <td>{c.run_set.clone()}</td>
            <td>{format!("{:?}", c.status).to_lowercase()}</td>
            <td>{c.endpoint.clone().unwrap_or_else(|| "—".into())}</td>
            <td class="phases">{phases.join(", ")}</td>
            <td>{secs(c.duration_s)}</td>
            <td>{rate(c.tokens_per_s)}</td>
            <td class="why">{if c.counts { "counts".to_owned() } else { c.why_not.join("; ") }}</td>
        </tr>
    }
}

fn cells_table(class: &'static str, cells: &[CellTiming]) -> impl IntoView {
    view! {
        <table class=format!("cells {class}")>
            <thead><tr><th>"Cell"</th><th>"Run set"</th><th>"Status"</th><th>"Endpoint"</th><th>"Phases"</th>
                <th>"Last attempt"</th><th>"Tokens/s"</th><th>"Timing"</th></tr></thead>
            <tbody>{cells.iter().map(cell_row).collect_view()}</tbody>
        </table>
    }
}

fn body(t: &TimingView) -> impl IntoView {
    if t.run_sets.is_empty() {
        let why = if t.scope.is_empty() {
            "No run set yet: nothing has been timed.".to_owned()
        } else {
            format!("No cell in the scope {}.", t.scope)
        };
        return view! { <p class="empty">{why}</p> }.into_any();
    }
    let v = &t.validity;
    view! {
        <p class="validity-words">{format!(
            "{} cells' timings count, {} do not{}.",
            v.counted, v.not_counted,
            if t.scope.is_empty() { String::new() } else { format!(" (scope {})", t.scope) }
        )}</p>
        <p class="hint">"A timing counts when the cell finished in one attempt, was never paused, and its endpoint served no other run set while it ran."</p>
        <ChartFigure chart=t.timeline.clone() empty="No cell of this run set has started." class="timeline-chart"/>
        <h2>"Cells of " {t.run_set.clone().unwrap_or_default()}</h2>
        {cells_table("timeline-cells", &t.cells)}
        <h2>"Durations and throughput (counted cells)"</h2>
        <table class="timing-summary">
            <thead><tr><th>"Endpoint"</th><th>"Counted"</th><th>"Median"</th><th>"90th percentile"</th><th>"Tokens/s"</th><th>"Cell time"</th></tr></thead>
            <tbody>
                {summary_row("all".into(), &t.summary)}
                {t.by_endpoint.iter().map(|(e, s)| summary_row(e.clone(), s)).collect_view()}
            </tbody>
        </table>
        <ChartFigure chart=t.throughput.clone() empty="No counted cell reported tokens: no throughput to draw." class="throughput-chart"/>
        <h2>"Why timings do not count"</h2>
        {v.reasons.is_empty().then(|| view! { <p class="empty">"Every timing counts."</p> })}
        <table class="validity-reasons" class:hidden=v.reasons.is_empty()>
            <thead><tr><th>"Reason"</th><th>"Cells"</th></tr></thead>
            <tbody>{v.reasons.iter().map(|(r, n)| view! { <tr data-reason=r.clone()><td>{r.clone()}</td><td>{*n}</td></tr> }).collect_view()}</tbody>
        </table>
        {(!t.not_counted.is_empty()).then(|| view! {
            <details class="not-counted">
                <summary>{format!("The cells that do not count ({} shown of {})", t.not_counted.len(), v.not_counted)}</summary>
                {cells_table("not-counted-cells", &t.not_counted)}
            </details>
        })}
    }
    .into_any()
}
