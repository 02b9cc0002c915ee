//! The proposal guide, `/next?by=&max_cells=&model=&endpoint=&delta=`:
//! the batches whose cells, run next, would most narrow an open difference
//! to the baseline — each in words, with today's interval and the one
//! expected after, the cells a chosen difference needs, its predicted cost
//! and time (low, expected, high) and what it re-runs — and "Draft it",
//! which saves its draft and offers the usual check and Launch below it.
//! It explains its ranking and never launches by itself.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::basics::numfmt::signed_pp as pp;
use runboard::results::propose::{Proposal, Proposals, ProposeParams};

use super::coverage::Launching;
use crate::api;
use crate::ui::refusal;

#[component]
pub fn NextPage() -> impl IntoView {
    let (by, set_by) = query_signal::<String>("by");
    let (max_cells, set_max_cells) = query_signal::<String>("max_cells");
    let (model, set_model) = query_signal::<String>("model");
    let (endpoint, set_endpoint) = query_signal::<String>("endpoint");
    let (delta, set_delta) = query_signal::<String>("delta");
    let params = move || ProposeParams {
        by: by.get(),
        max_cells: max_cells.get(),
        top: None,
        model: model.get(),
        endpoint: endpoint.get(),
        delta: delta.get(),
    };
    let proposals = crate::codec::resource(params, api::propose);
    let form = crate::codec::resource(|| (), |_| api::draft_form(api::Nothing {}));
    // The spec "Draft it" saved, checked and launched below the list.
    let spec_path = RwSignal::new(String::new());
    let set_text = |set: SignalSetter<Option<String>>| {
        move |ev: leptos::ev::Event| set.set(Some(event_target_value(&ev)).filter(|s| !s.trim().is_empty()))
    };
    view! {
        <section class="next">
            <div class="toolbar"><h1>"What to run next"</h1></div>
            <Transition fallback=|| ()>
                {move || form.get().and_then(Result::ok).map(|f| view! {
                    <form class="next-options" on:submit=|ev| ev.prevent_default()>
                        <label>"Compare "
                            <select name="by" prop:value=move || by.get().unwrap_or_else(|| "condition".into()) on:change=set_text(set_by)>
                                {f.factors.iter().filter(|(k, _)| k != "task").map(|(k, _)| view! { <option value=k.clone()>{k.clone()}</option> }).collect_view()}
                            </select>
                        </label>
                        <label>"Cells per batch "
                            <input name="max_cells" type="number" min="1" max="10000" step="1" placeholder="20"
                                prop:value=move || max_cells.get().unwrap_or_default() on:change=set_text(set_max_cells)/>
                        </label>
                        <label>"Model "
                            <select name="model" prop:value=move || model.get().unwrap_or_default() on:change=set_text(set_model)>
                                <option value="">"(the newest batch's)"</option>
                                {f.models.iter().map(|m| view! { <option value=m.name.clone()>{m.name.clone()}</option> }).collect_view()}
                            </select>
                        </label>
                        <label>"Endpoint "
                            <select name="endpoint" prop:value=move || endpoint.get().unwrap_or_default() on:change=set_text(set_endpoint)>
                                <option value="">"(the newest batch's)"</option>
                                {f.endpoints.iter().map(|e| view! { <option value=e.name.clone()>{e.name.clone()}</option> }).collect_view()}
                            </select>
                        </label>
                        <label>"A difference of "
                            <input name="delta" type="number" min="1" max="99" step="1" placeholder="20"
                                prop:value=move || delta.get().unwrap_or_default() on:change=set_text(set_delta)/>
                            " pp"
                        </label>
                    </form>
                })}
            </Transition>
            <Transition fallback=|| crate::ui::loading("Weighing what the next cells would resolve…")>
                {move || proposals.get().map(|res| match res {
                    Err(e) => refusal(&e).into_any(),
                    Ok(p) => body(p, spec_path).into_any(),
                })}
            </Transition>
            <div class="next-launch" class:hidden=move || spec_path.with(String::is_empty)>
                <h2>"Check and launch the draft"</h2>
                <Launching spec_path=spec_path/>
            </div>
        </section>
    }
    .into_any()
}

fn body(p: Proposals, spec_path: RwSignal<String>) -> impl IntoView {
    let delta = p.delta_pp;
    let by = p.by.clone();
    view! {
        <p class="how">{p.how.clone()}</p>
        <p class="route">{format!("Drafts name {}.", p.route)}</p>
        {(!p.notes.is_empty()).then(|| view! {
            <ul class="notes">{p.notes.iter().map(|n| view! { <li class="note">{n.clone()}</li> }).collect_view()}</ul>
        })}
        {(p.considered > p.proposals.len()).then(|| view! {
            <p class="considered">{format!("The best {} of {} candidate batches.", p.proposals.len(), p.considered)}</p>
        })}
        <ol class="proposals">
            {p.proposals.into_iter().map(|x| proposal(x, &by, delta, spec_path)).collect_view()}
        </ol>
    }
}

fn proposal(x: Proposal, by: &str, delta: f64, spec_path: RwSignal<String>) -> impl IntoView {
    let save = Action::new(|r: &runboard::console::draft::DraftRequest| {
        let r = r.clone();
        async move { api::draft_save(r).await }
    });
    Effect::new(move |_| {
        if let Some(Ok(saved)) = save.value().get() {
            spec_path.set(saved.path);
        }
    });
    let request = x.request.clone();
    let can_draft = x.refused.is_empty();
    let today = match x.today {
        Some(d) => format!("{} pp [{}, {}]", pp(d.difference), pp(d.ci95.lo), pp(d.ci95.hi)),
        None => "not measured yet".into(),
    };
    let needed = x.cells_needed.map(|n| {
        let settle = match x.cells_to_settle {
            Some(m) => format!("about {m} cells per {by} for its verdict to settle it in 80 % of cases (read after every batch); one fixed look at 95 % confidence and 80 % power needs {n}"),
            None => format!("one fixed look at 95 % confidence and 80 % power needs about {n} cells per {by}"),
        };
        format!("To tell a {delta:.0} pp difference from {}: {settle} (counted now: {} and {}).", x.baseline, x.n_compared, x.n_baseline)
    });
    let predicted = x.prediction.as_ref().map(|p| {
        let range = p.range_words().map(|r| format!(" Range: {r}.")).unwrap_or_default();
        format!("Predicted {}.{range}", p.words())
    });
    view! {
        <li class="proposal" class:settled=x.settled data-task=x.task.clone() data-level=x.level.clone()>
            <p class="words">{x.words.clone()}</p>
            <dl class="figures">
                <dt>{format!("{} − {} today, one look", x.compared, x.baseline)}</dt><dd class="today">{today}</dd>
                <dt>"Expected after, one look"</dt>
                <dd class="after">{format!("±{:.0} pp [{}, {}]", x.after * 100.0, pp(x.after_ci95.lo), pp(x.after_ci95.hi))}</dd>
                <dt title="the half-width of an interval that holds however often it is read, as the verdict does: what the ranking weighs">"Always-valid margin"</dt>
                <dd class="margin">{format!("±{:.0} → ±{:.0} pp", x.margin * 100.0, x.margin_after * 100.0)}</dd>
                <dt>"Cells"</dt>
                <dd class="cells">{format!("{} of {} still to run{}", x.cells, x.open_cells,
                    if x.reruns > 0 { format!("; {} failed cell(s) run again", x.reruns) } else { String::new() })}</dd>
            </dl>
            {needed.map(|n| view! { <p class="needed">{n}</p> })}
            {predicted.map(|p| view! { <p class="predicted">{p}</p> })}
            {(!x.held_back.is_empty()).then(|| view! {
                <ul class="held-back">{x.held_back.iter().map(|h| view! {
                    <li>{format!("{} cell(s) held back: {}", h.cells, h.reason)}</li>
                }).collect_view()}</ul>
            })}
            {(!can_draft).then(|| view! {
                <div class="refused">
                    <strong>"Cannot be drafted as it is (choose a model or endpoint above):"</strong>
                    <ul>{x.refused.iter().map(|r| view! { <li class="reason">{r.clone()}</li> }).collect_view()}</ul>
                </div>
            })}
            <button class="draft-it" disabled=move || crate::role::viewer() || !can_draft || save.pending().get()
                on:click=move |_| { save.dispatch(request.clone()); }>"Draft it"</button>
            {move || save.value().get().map(|r| match r {
                Err(e) => refusal(&e).into_any(),
                Ok(s) => view! {
                    <p class="saved">{format!("Saved {} ({} cells): check and launch it below.", s.path, s.cells)}</p>
                }.into_any(),
            })}
        </li>
    }
}
