//! The samples behind a cell: `/samples/<run set>/<cell>?against=<run
//! set>/<cell>&flipped=1&offset=` — each sample's id, epoch, verdict, score,
//! error and excerpts of its input, target and output, read from the cell's
//! Inspect log; against another cell (its twin at the baseline, from
//! Evidence's paired view), that cell's verdict beside each, and with
//! `flipped` only the samples whose verdicts differ.

use leptos::prelude::*;
use leptos_router::hooks::{query_signal, use_params_map};
use runboard::api::CellSamples;
use runboard::harness::samples::verdict_words;

use crate::api;
use crate::ui::loaded;

/// Samples a page lists.
const PAGE: usize = 50;

fn verdict_class(p: Option<bool>) -> &'static str {
    match p {
        Some(true) => "verdict passed",
        Some(false) => "verdict not-passed",
        None => "verdict none",
    }
}

#[component]
pub fn SamplesPage() -> impl IntoView {
    let params = use_params_map();
    let (against, _) = query_signal::<String>("against");
    let (flipped, set_flipped) = query_signal::<String>("flipped");
    let (offset, set_offset) = query_signal::<usize>("offset");
    let samples = crate::codec::resource(
        move || {
            let p = params.get();
            (
                p.get("run_set").unwrap_or_default(),
                p.get("cell").unwrap_or_default(),
                against.get(),
                flipped.get(),
                offset.get(),
            )
        },
        |(run_set, cell, against, flipped, offset)| {
            api::samples(api::SamplesQuery { run_set, cell, offset, limit: Some(PAGE), against, flipped })
        },
    );
    view! {
        <section class="samples">
            <h1>"Samples: " {move || params.with(|p| p.get("cell").unwrap_or_default())}</h1>
            <p class="hint">"Each sample of the cell's Inspect log, as its first scorer judged it: full credit passed, anything less not passed; a sample that ended in an error has no verdict. Excerpts of 300 characters."</p>
            {move || against.get().map(|a| view! {
                <p class="against">{format!("Against {a}: its verdict beside each sample. ")}
                    <label><input type="checkbox" name="flipped" prop:checked=move || flipped.get().as_deref() == Some("1")
                        on:change=move |ev| { set_offset.set(None); set_flipped.set(event_target_checked(&ev).then(|| "1".to_owned())); }/>
                        " only the samples that flipped"</label>
                </p>
            })}
            {loaded(samples, "Reading the cell's log…", "Could not read the samples", move |s| {
                body(s, set_offset).into_any()
            })}
        </section>
    }
}

fn body(s: CellSamples, set_offset: SignalSetter<Option<usize>>) -> impl IntoView {
    let shown_to = s.offset + s.samples.len();
    let against = s.against.clone();
    view! {
        <p class="summary">{format!(
            "{} in {} ({}); {} of {} scored passed{}.",
            runboard::basics::numfmt::count(s.total as u64, "sample"), s.log, s.format, s.passed, s.scored,
            s.against.as_ref().map(|a| format!("; {} flipped against {a}", s.flipped)).unwrap_or_default()
        )}</p>
        {s.problems.iter().map(|p| view! { <p class="problem">{p.clone()}</p> }).collect_view()}
        {s.samples.is_empty().then(|| view! { <p class="empty">"No sample here."</p> })}
        <div class="table-wrap">
            <table class="sample-rows" class:hidden=s.samples.is_empty()>
                <thead><tr><th>"Sample"</th><th>"Verdict"</th>{against.is_some().then(|| view! { <th>"There"</th> })}<th>"Score"</th><th>"Input"</th><th>"Target"</th><th>"Output"</th><th>"Error"</th></tr></thead>
                <tbody>
                    {s.samples.iter().enumerate().map(|(i, r)| {
                        let there = s.against_passed.get(i).copied().flatten();
                        view! {
                            <tr data-sample=r.id.clone() data-epoch=r.epoch>
                                <td class="id">{if r.epoch > 1 { format!("{} (epoch {})", r.id, r.epoch) } else { r.id.clone() }}</td>
                                <td class=verdict_class(r.passed)>{verdict_words(r.passed)}</td>
                                {against.is_some().then(|| view! { <td class=format!("there {}", verdict_class(there))>{verdict_words(there)}</td> })}
                                <td class="score">{r.score.clone().map(|v| format!("{}: {v}", r.scorer.clone().unwrap_or_default())).unwrap_or_default()}</td>
                                <td class="excerpt input">{r.input.clone()}</td>
                                <td class="excerpt target">{r.target.clone()}</td>
                                <td class="excerpt output">{r.output.clone()}</td>
                                <td class="excerpt error">{r.error.clone().unwrap_or_default()}</td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
        {crate::ui::pager(
            s.offset / PAGE,
            s.total.div_ceil(PAGE),
            ("← earlier", "later →"),
            if s.samples.is_empty() { "no samples".into() } else { format!("{}–{} of {}", s.offset + 1, shown_to, s.total) },
            crate::ui::PageTo::Query { set: set_offset, per_page: PAGE },
        )}
    }
}
