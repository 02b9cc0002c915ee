//! The Upkeep view, `/upkeep`: what the campaign left lying about (stale
//! drafts, temporary files of killed writers, units and run sets whose
//! process is gone, orphaned logs, ended run sets' logs), each with its one
//! safe action — asked first, naming what it does, and done by the server only
//! if the finding is unchanged (its token) — and the disk each run set uses.

use leptos::prelude::*;
use runboard::basics::numfmt::thousands;
use runboard::live::upkeep::{Finding, UpkeepRequest, UpkeepView};

use crate::api;
use crate::ui::loaded;
use crate::ui::{confirm, refusal};

#[component]
pub fn UpkeepPage() -> impl IntoView {
    let refresh = RwSignal::new(0u64);
    let view_now = crate::codec::resource(move || refresh.get(), |_| api::upkeep(api::Nothing {}));
    let act = Action::new(|f: &Finding| {
        let req =
            UpkeepRequest { action: f.action.word().to_owned(), target: f.target.clone(), token: f.token.clone() };
        async move { api::upkeep_act(req).await }
    });
    Effect::new(move |_| {
        if act.value().get().is_some() {
            refresh.update(|n| *n += 1);
        }
    });
    view! {
        <section class="upkeep">
            <div class="toolbar">
                <h1>"Upkeep"</h1>
                <button type="button" class="reread" on:click=move |_| refresh.update(|n| *n += 1)>"Look again"</button>
            </div>
            {move || act.value().get().map(|r| match r {
                Ok(d) => {
                    let freed = (d.freed_bytes > 0).then(|| format!(" ({} freed)", runboard::basics::numfmt::bytes(d.freed_bytes)));
                    view! { <p class="said ok">{format!("Done: {}{}.", d.words, freed.unwrap_or_default())}</p> }.into_any()
                }
                Err(e) => refusal(&e).into_any(),
            })}
            {loaded(view_now, "Looking through the campaign…", "Could not look", move |v| {
                body(v, act).into_any()
            })}
        </section>
    }
}

fn body(
    v: UpkeepView,
    act: Action<Finding, Result<runboard::live::upkeep::UpkeepDone, runboard::api::ApiError>>,
) -> impl IntoView {
    let pending = act.pending();
    view! {
        <p class="note">{v.note.clone()}</p>
        <h2>"To clear up"</h2>
        {if v.findings.is_empty() {
            view! { <p class="empty">"Nothing to clear up."</p> }.into_any()
        } else {
            view! {
                <ul class="findings">{v.findings.into_iter().map(|f| {
                    let (label, question) = (f.action.word().replace('_', " "), f.question.clone());
                    let (kind, target, words) = (f.kind.word(), f.target.clone(), f.words.clone());
                    view! {
                        <li class="finding" data-kind=kind data-target=target>
                            <span class="words">{words}</span>" "
                            <button type="button" class=format!("act {}", f.action.word()) disabled=move || crate::role::viewer() || pending.get()
                                on:click=move |_| {
                                    if confirm(&question) { act.dispatch(f.clone()); }
                                }>{label}</button>
                        </li>
                    }
                }).collect_view()}</ul>
            }.into_any()
        }}
        <h2>"Disk use"</h2>
        <p class="total">{format!("{} in {}", runboard::basics::numfmt::bytes(v.total_bytes), runboard::basics::numfmt::count(v.disk.len() as u64, "run set"))}</p>
        <table class="disk">
            <thead><tr><th>"run set"</th><th>"size"</th><th>"files"</th><th>"of it logs"</th><th>"state"</th></tr></thead>
            <tbody>{v.disk.into_iter().map(|d| view! {
                <tr data-run-set=d.run_set.clone()>
                    <td><a href=format!("/reports/{}", runboard::results::url_segment(&d.run_set))>{d.run_set.clone()}</a></td>
                    <td class="num">{format!("{}{}", runboard::basics::numfmt::bytes(d.bytes), if d.partial { "+" } else { "" })}</td>
                    <td class="num">{thousands(d.files)}</td>
                    <td class="num">{runboard::basics::numfmt::bytes(d.log_bytes)}</td>
                    <td>{d.state.word()}</td>
                </tr>
            }).collect_view()}</tbody>
        </table>
    }
}
