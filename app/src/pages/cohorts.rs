//! The Cohorts view, `/cohorts?compare=a,b&scope=`: named presets (a scope
//! each, kept in `runsets/cohort_presets.json`) — save the scope in use as
//! one, rename, delete — and two or more compared side by side on every
//! evidence and timing figure, the first as the baseline. The cohorts
//! compared are in the URL.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::basics::timefmt::span_words;
use runboard::results::cohorts::{Comparison, DeleteRequest, Preset, RenameRequest};

use crate::api;
use crate::api::{ApiError, CompareQuery};
use crate::chart::ChartFigure;
use crate::scope::use_scope;
use crate::ui::loaded;

fn names_of(list: &Option<String>) -> Vec<String> {
    list.as_deref().unwrap_or("").split(',').map(str::trim).filter(|n| !n.is_empty()).map(str::to_owned).collect()
}

#[component]
pub fn CohortsPage() -> impl IntoView {
    let (compare, set_compare) = query_signal::<String>("compare");
    let (by, set_by) = query_signal::<String>("by");
    let (scope, _) = use_scope();
    let refresh = RwSignal::new(0u64);
    let presets = crate::codec::resource(move || refresh.get(), |_| api::cohorts(api::Nothing {}));
    let comparison = crate::codec::resource(
        move || (compare.get(), by.get(), refresh.get()),
        |(names, by, _)| async move {
            if names_of(&names).is_empty() {
                None
            } else {
                Some(api::cohort_compare(CompareQuery { names, by }).await)
            }
        },
    );
    let said = RwSignal::new(None::<Result<String, ApiError>>);
    let done = move |r: Result<String, ApiError>| {
        said.set(Some(r));
        refresh.update(|n| *n += 1);
    };
    let save = Action::new(move |p: &Preset| {
        let p = p.clone();
        async move { api::cohort_save(p.clone()).await.map(|_| format!("Saved {:?}.", p.name)) }
    });
    let rename = Action::new(move |r: &RenameRequest| {
        let r = r.clone();
        async move { api::cohort_rename(r.clone()).await.map(|_| format!("Renamed {:?} to {:?}.", r.from, r.to)) }
    });
    let delete = Action::new(move |d: &DeleteRequest| {
        let d = d.clone();
        async move { api::cohort_delete(d.clone()).await.map(|_| format!("Deleted {:?}.", d.name)) }
    });
    crate::ui::on_answer(save, done);
    crate::ui::on_answer(rename, done);
    crate::ui::on_answer(delete, done);
    let toggle = move |name: String| {
        let mut names = names_of(&compare.get_untracked());
        if let Some(i) = names.iter().position(|n| *n == name) {
            names.remove(i);
        } else {
            names.push(name);
        }
        set_compare.set((!names.is_empty()).then(|| names.join(",")));
    };
    let (new_name, new_scope, new_note) =
        (RwSignal::new(String::new()), RwSignal::new(String::new()), RwSignal::new(String::new()));
    let replace = RwSignal::new(false);
    Effect::new(move |_| new_scope.set(scope.get().unwrap_or_default()));
    view! {
        <section class="cohorts">
            <h1>"Cohorts"</h1>
            {move || said.get().map(|r| match r {
                Ok(t) => view! { <p class="said ok">{t}</p> }.into_any(),
                Err(e) => view! {
                    <div class="said error cohort-refused"><p>{e.to_string()}</p>
                        <ul>{e.reasons.iter().map(|r| view! { <li class="reason">{r.clone()}</li> }).collect_view()}</ul></div>
                }.into_any(),
            })}
            {save_form(save, (new_name, new_scope, new_note), replace)}
            {loaded(presets, "Reading the presets…", "Could not read the presets", move |v| {
                let chosen = names_of(&compare.get());
                view! {
                    {v.problem.clone().map(|p| view! { <p class="error presets-problem">{p}</p> })}
                    {if v.presets.is_empty() {
                        view! { <p class="empty">"No presets yet: save a scope above."</p> }.into_any()
                    } else {
                        view! {
                            <table class="presets">
                                <thead><tr><th>"Compare"</th><th>"Name"</th><th>"Scope"</th><th>"Note"</th><th>"Rename"</th><th>""</th></tr></thead>
                                <tbody>
                                    {v.presets.into_iter().map(|p| {
                                        let name = p.name.clone();
                                        let (n1, n2, n3) = (name.clone(), name.clone(), name.clone());
                                        let to = RwSignal::new(String::new());
                                        view! {
                                            <tr data-name=name.clone()>
                                                <td><input type="checkbox" class="compare" prop:checked=chosen.contains(&name)
                                                    on:change=move |_| toggle(n1.clone())/></td>
                                                <td>{name.clone()}</td>
                                                <td><a href=crate::scope::with_scope("/evidence", Some(&p.scope))><code>{p.scope.clone()}</code></a></td>
                                                <td>{p.note.clone()}</td>
                                                <td>
                                                    <input type="text" class="rename-to" size="14" on:input=move |ev| to.set(event_target_value(&ev))/>
                                                    <button type="button" class="rename" disabled=crate::role::viewer() on:click=move |_| {
                                                        rename.dispatch(RenameRequest { from: n2.clone(), to: to.get_untracked() });
                                                    }>"Rename"</button>
                                                </td>
                                                <td><button type="button" class="delete" disabled=crate::role::viewer() on:click=move |_| {
                                                    delete.dispatch(DeleteRequest { name: n3.clone() });
                                                }>"Delete"</button></td>
                                            </tr>
                                        }
                                    }).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }}
                }.into_any()

            })}
            <Transition fallback=|| ()>
                {move || comparison.get().flatten().map(|res| match res {
                    Err(e) => view! { <p class="error">"Could not compare: " {e.to_string()}</p> }.into_any(),
                    Ok(c) => view! {
                        <label class="compare-by">"Evidence by "
                            <input type="text" name="by" size="12" placeholder="condition"
                                prop:value=move || by.get().unwrap_or_default()
                                on:change=move |ev| { let v = event_target_value(&ev); set_by.set((!v.trim().is_empty()).then_some(v)); }/>
                        </label>
                        {comparison_view(&c)}
                    }.into_any(),
                })}
            </Transition>
        </section>
    }
}

/// Saves the scope as a named preset (a name in use is refused unless
/// Replace is ticked).
fn save_form(
    save: Action<Preset, Result<String, ApiError>>,
    (new_name, new_scope, new_note): (RwSignal<String>, RwSignal<String>, RwSignal<String>),
    replace: RwSignal<bool>,
) -> impl IntoView {
    view! {
    <form class="cohort-save" on:submit=move |ev| {
        ev.prevent_default();
        save.dispatch(Preset {
            name: new_name.get_untracked(),
            scope: new_scope.get_untracked(),
            note: new_note.get_untracked(),
            replace: replace.get_untracked(),
        });
    }>
        <label>"Name " <input type="text" name="name" prop:value=move || new_name.get() on:input=move |ev| new_name.set(event_target_value(&ev))/></label>
        <label>"Scope " <input type="text" name="scope" size="40" placeholder="condition=base tag=nightly"
            prop:value=move || new_scope.get() on:input=move |ev| new_scope.set(event_target_value(&ev))/></label>
        <label>"Note " <input type="text" name="note" prop:value=move || new_note.get() on:input=move |ev| new_note.set(event_target_value(&ev))/></label>
        <label title="Without this, a name in use is refused">
            <input type="checkbox" name="replace" prop:checked=move || replace.get()
                on:change=move |ev| replace.set(event_target_checked(&ev))/>
            " Replace a preset of this name"
        </label>
        <button type="submit" disabled=crate::role::viewer()>"Save preset"</button>
    </form>
    }
}

fn pct(x: Option<f64>) -> String {
    x.map(|x| format!("{:.0} %", x * 100.0)).unwrap_or_else(|| "—".into())
}

fn comparison_view(c: &Comparison) -> impl IntoView {
    let diff_of = |name: &str| c.differences.iter().find(|d| d.name == name);
    view! {
        <h2>"Side by side"</h2>
        <p class="family">{c.family.words()}</p>
        <table class="cohort-comparison">
            <thead><tr><th>"Cohort"</th><th>"Scope"</th><th>"Run sets"</th><th>"Ended cells"</th><th>"Passed"</th>
                <th>"Rate [95 % Wilson]"</th><th>"Against the first: verdict; fixed-look 95 % Newcombe"</th><th>"Tokens"</th>
                <th>"Timings counted / not"</th><th>"Median"</th><th>"90th percentile"</th><th>"Tokens/s"</th></tr></thead>
            <tbody>
                {c.cohorts.iter().map(|f| {
                    let d = diff_of(&f.name).map(|d| format!("{:+.0} points, {} (p = {}); fixed-look [{:+.0}, {:+.0}]", d.difference * 100.0,
                        if d.clear { "clear" } else { "open" }, runboard::results::paired::p_words(d.p_family),
                        d.ci95.lo * 100.0, d.ci95.hi * 100.0)).unwrap_or_else(|| "baseline".into());
                    let ci = f.passes.ci95.map(|ci| format!(" [{:.0}–{:.0} %]", ci.lo * 100.0, ci.hi * 100.0)).unwrap_or_default();
                    view! {
                        <tr data-name=f.name.clone()>
                            <td>{f.name.clone()}</td>
                            <td><code>{f.scope.clone()}</code></td>
                            <td>{f.run_sets}</td>
                            <td class="num n">{runboard::basics::numfmt::thousands(f.passes.n)}</td>
                            <td class="passes">{f.passes.successes}</td>
                            <td class="rate">{format!("{}{ci}", pct(f.passes.rate))}</td>
                            <td class="difference">{d}</td>
                            <td class="num">{runboard::basics::numfmt::thousands(f.tokens)}</td>
                            <td>{format!("{} / {}", f.validity.counted, f.validity.not_counted)}</td>
                            <td>{f.timing.median_s.map(span_words).unwrap_or_else(|| "—".into())}</td>
                            <td>{f.timing.p90_s.map(span_words).unwrap_or_else(|| "—".into())}</td>
                            <td>{f.timing.tokens_per_s.map(|r| format!("{r:.1}")).unwrap_or_else(|| "—".into())}</td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <div class="charts">
            <ChartFigure chart=c.charts.rates.clone() empty="" class="cohort-rates-chart"/>
            <ChartFigure chart=c.charts.differences.clone() empty="" class="cohort-differences-chart"/>
        </div>
        {side_by_side("by-level", format!("By {}", c.cohorts.first().map(|f| f.evidence.by.clone()).unwrap_or_default()), c, |f| &f.evidence.groups)}
        {side_by_side("by-task", "By task".into(), c, |f| &f.evidence.by_task)}
        {side_by_side("by-model", "By model".into(), c, |f| &f.evidence.by_model)}
        {counts_side_by_side("not-passed-reasons", "Did not pass, by reason", c, |f| f.evidence.not_passed_by_reason.iter().map(|r| (r.reason.clone(), r.cells)).collect())}
        {counts_side_by_side("validity-reasons", "Why timings do not count", c, |f| f.validity.reasons.clone())}
    }
}

/// One row per level (in the first cohort's order, then the others'), one
/// column per cohort: its pass rate there with the Wilson interval.
fn side_by_side(
    class: &'static str,
    title: String,
    c: &Comparison,
    groups: impl Fn(&runboard::results::cohorts::CohortFigures) -> &Vec<runboard::results::Group>,
) -> impl IntoView {
    let mut levels: Vec<String> = Vec::new();
    for f in &c.cohorts {
        for g in groups(f) {
            if !levels.contains(&g.level) {
                levels.push(g.level.clone());
            }
        }
    }
    let cell = |f: &runboard::results::cohorts::CohortFigures, level: &str| {
        groups(f).iter().find(|g| g.level == level).map_or("—".to_owned(), |g| super::evidence::rate_words(&g.passes))
    };
    view! {
        <h3>{title}</h3>
        <table class=format!("side-by-side {class}")>
            <thead><tr><th>"Level"</th>{c.cohorts.iter().map(|f| view! { <th>{f.name.clone()}</th> }).collect_view()}</tr></thead>
            <tbody>
                {levels.iter().map(|l| view! {
                    <tr data-level=l.clone()><td>{l.clone()}</td>
                        {c.cohorts.iter().map(|f| view! { <td data-cohort=f.name.clone()>{cell(f, l)}</td> }).collect_view()}</tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// One row per reason, one column per cohort: how many cells.
fn counts_side_by_side(
    class: &'static str,
    title: &'static str,
    c: &Comparison,
    counts: impl Fn(&runboard::results::cohorts::CohortFigures) -> Vec<(String, u64)>,
) -> impl IntoView {
    let per: Vec<Vec<(String, u64)>> = c.cohorts.iter().map(&counts).collect();
    let mut reasons: Vec<String> = Vec::new();
    for r in per.iter().flatten() {
        if !reasons.contains(&r.0) {
            reasons.push(r.0.clone());
        }
    }
    view! {
        <h3>{title}</h3>
        <table class=format!("side-by-side {class}")>
            <thead><tr><th>"Reason"</th>{c.cohorts.iter().map(|f| view! { <th>{f.name.clone()}</th> }).collect_view()}</tr></thead>
            <tbody>
                {reasons.iter().map(|r| view! {
                    <tr data-reason=r.clone()><td>{r.clone()}</td>
                        {per.iter().map(|p| view! { <td>{p.iter().find(|x| x.0 == *r).map_or(0, |x| x.1)}</td> }).collect_view()}</tr>
                }).collect_view()}
            </tbody>
        </table>
    }
}
