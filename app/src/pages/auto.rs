//! The Auto view, `/auto`: the autopilot's mode and controls, why it holds
//! (in words, since when), what a tick now would do and every guard's value
//! (the explain panel), its lanes and why each is idle, today's launches
//! against the caps, credit flags and quarantined endpoints with their
//! expiry, closeout warnings, the settings form (refused with every reason)
//! and the history. Pushed live: the server sends a version whenever the
//! state, its log or the live batch changes.

use leptos::prelude::*;
use runboard::auto::view::{AutoView, TickReport};
use runboard::auto::Mode;
use serde_json::{json, Value};

use crate::api;
use crate::api::{ApiError, DraftForm};
use crate::ui::loaded;
use crate::ui::refusal;

#[component]
pub fn AutoPage() -> impl IntoView {
    let refresh = RwSignal::new(0u64);
    let auto = crate::codec::resource(move || refresh.get(), |_| api::auto(api::Nothing {}));
    let form_data = crate::codec::resource(|| (), |_| api::draft_form(api::Nothing {}));
    let controls = crate::codec::resource(
        move || refresh.get(),
        |_| api::audit(runboard::access::audit::AuditQuery { limit: Some(CONTROLS_SHOWN), ..Default::default() }),
    );

    crate::ui::refresh_on(runboard::api::streams::AUTO_VERSION, refresh, move || Some(None));

    // The form is made once, from the settings first read: pushes while a
    // batch runs must not reset what the operator is typing.
    let first_settings = RwSignal::new(None::<Value>);
    Effect::new(move |_| {
        if first_settings.get_untracked().is_none() {
            if let Some(Ok(v)) = auto.get() {
                first_settings.set(Some(v.state.settings.clone()));
            }
        }
    });
    let outcome = RwSignal::new(None::<Result<(), ApiError>>);

    let said = RwSignal::new(None::<Result<String, ApiError>>);
    let mode = Action::new(move |m: &Mode| {
        let m = *m;
        async move {
            api::auto_mode(api::AutoModeRequest::new(m)).await.map(|v| format!("Auto mode is {}.", v.state.mode.word()))
        }
    });
    crate::ui::on_answer(mode, move |r| {
        said.set(Some(r));
        refresh.update(|n| *n += 1);
    });

    view! {
        <section class="auto">
            <div class="toolbar"><h1>"Auto"</h1></div>
            {loaded(auto, "Reading the autopilot…", "Could not read the autopilot", move |v| {
                let m = v.state.mode.word();
                view! {
                    <div class=format!("auto-mode mode-{m}") data-mode=m>
                        <span class=format!("badge {m}")>{format!("auto {m}")}</span>
                        " "
                        <span class="words">{hold_words(&v)}</span>
                    </div>
                    <div class="controls">
                        <button class="auto-on" disabled=move || crate::role::viewer() || mode.pending().get() || v.state.mode == Mode::On
                            on:click=move |_| { mode.dispatch(Mode::On); }>"On"</button>
                        <button class="auto-finishing" disabled=move || crate::role::viewer() || mode.pending().get() || v.state.mode != Mode::On
                            title="Let the current batch end, launch nothing more, then off"
                            on:click=move |_| { mode.dispatch(Mode::Finishing); }>"Finish"</button>
                        <button class="auto-off" disabled=move || crate::role::viewer() || mode.pending().get() || v.state.mode == Mode::Off
                            on:click=move |_| { mode.dispatch(Mode::Off); }>"Off"</button>
                        <span class="hint">"Stop and abort (on the Live page) also turns auto mode off."</span>
                    </div>
                    {move || said.get().map(|r| match r {
                        Ok(text) => view! { <p class="said ok">{text}</p> }.into_any(),
                        Err(e) => refusal(&e).into_any(),
                    })}
                    {explain_panel(&v.explain, v.tick_s)}
                    {lanes_table(&v)}
                    {restrictions(&v)}
                    {history(&v)}
                }.into_any()

            })}
            <Transition fallback=|| ()>
                {move || match (first_settings.get(), form_data.get()) {
                    (Some(saved), Some(Ok(f))) => settings_form(saved, f, refresh, outcome).into_any(),
                    _ => ().into_any(),
                }}
            </Transition>
            <Transition fallback=|| ()>
                {move || controls.get().map(|res| match res {
                    Err(e) => view! { <p class="error">"Could not read the audit log: " {e.to_string()}</p> }.into_any(),
                    Ok(p) => controls_table(&p).into_any(),
                })}
            </Transition>
        </section>
    }
    .into_any()
}

/// The headline, from the same dry run the tick preview shows (never from
/// the state as the last tick left it, which a save makes stale).
fn hold_words(v: &AutoView) -> String {
    v.explain.headline()
}

fn explain_panel(r: &TickReport, tick_s: Option<f64>) -> impl IntoView {
    let every = match tick_s {
        Some(s) => format!("This server ticks every {s} s."),
        None => "This server runs no autopilot loop (`--auto-tick 0`): run `runboard auto tick`.".into(),
    };
    view! {
        <div class="explain">
            <h2>"What a tick now would do"</h2>
            <p class="verdict">{r.verdict.clone()}</p>
            <table class="guards">
                <thead><tr><th>"Guard"</th><th>""</th><th>"Value"</th></tr></thead>
                <tbody>
                    {r.guards.iter().map(|g| {
                        let (cls, word) = if g.ok { ("guard ok", "ok") } else { ("guard holds", "holds") };
                        view! { <tr class=cls data-guard=g.name.clone()><td>{g.name.clone()}</td><td>{word}</td><td>{g.value.clone()}</td></tr> }
                    }).collect_view()}
                </tbody>
            </table>
            {(!r.launches.is_empty()).then(|| view! {
                <ul class="would-launch">
                    {r.launches.iter().map(|l| view! {
                        <li>{format!("{} — {} cells of {} on lane {}: {}", l.label, l.cells, l.model, l.lane, l.why)}</li>
                    }).collect_view()}
                </ul>
            })}
            <p class="hint">{every}</p>
        </div>
    }
}

fn lanes_table(v: &AutoView) -> impl IntoView {
    if v.lanes.is_empty() {
        return view! { <p class="empty">"No lanes: the settings enable no model yet."</p> }.into_any();
    }
    view! {
        <h2>"Lanes"</h2>
        <table class="lanes">
            <thead><tr><th>"Lane"</th><th>"Models"</th><th>"Status"</th><th>"Batch, or why idle"</th></tr></thead>
            <tbody>
                {v.lanes.iter().map(|l| view! {
                    <tr class=format!("lane status-{}", l.status.word()) data-lane=l.lane.clone()>
                        <td>{l.lane.clone()}</td>
                        <td>{l.models.join(", ")}</td>
                        <td>{crate::ui::badge(l.status.word())}</td>
                        <td>
                            {l.unit.clone().or(l.idle_reason.clone()).unwrap_or_default()}
                            {l.idle_since.map(|t| view! { <span class="since">{format!(" (idle since {})", t.to_display())}</span> })}
                        </td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
        <h2>"Today's launches (UTC)"</h2>
        <table class="caps">
            <thead><tr><th>"Model"</th><th>"By auto"</th><th>"In all"</th></tr></thead>
            <tbody>
                {v.caps.iter().map(|c| view! {
                    <tr data-model=c.model.clone()>
                        <td>{c.model.clone()}</td>
                        <td>{format!("{}{}", c.auto_today, c.auto_cap.map(|x| format!(" of {x}")).unwrap_or_default())}</td>
                        <td>{format!("{}{}", c.all_today, c.catalogue_cap.map(|x| format!(" of {x}")).unwrap_or_default())}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

fn restrictions(v: &AutoView) -> impl IntoView {
    let st = &v.state;
    let mut items: Vec<(String, String)> = Vec::new();
    for (m, f) in &st.credit_flags {
        items.push(("credit".into(), format!("{m} is credit-flagged until {} ({})", f.until.to_display(), f.reason)));
    }
    for (e, f) in &st.endpoint_failures {
        items.push((
            "quarantine".into(),
            format!(
                "{e} is quarantined until {} after {} failure(s) ({})",
                f.retry_at.to_display(),
                f.failures,
                f.reason
            ),
        ));
    }
    for b in &st.closeout_backfill {
        items.push((
            "closeout".into(),
            format!("{}: publication stage {} failed ({}); backfill it", b.run_set, b.stage, b.message),
        ));
    }
    for p in &v.settings_problems {
        items.push(("settings".into(), format!("settings: {p}")));
    }
    (!items.is_empty()).then(|| {
        view! {
            <div class="restrictions">
                <h2>"Restrictions and warnings"</h2>
                <ul>{items.into_iter().map(|(k, t)| view! { <li class=format!("restriction {k}")>{t}</li> }).collect_view()}</ul>
            </div>
        }
    })
}

/// The newest controls the Auto page lists.
const CONTROLS_SHOWN: usize = 20;

/// The audit log's newest lines: every control, from any page, the command
/// line or REST, refused ones too.
fn controls_table(p: &runboard::access::audit::AuditPage) -> impl IntoView {
    view! {
        <h2>"Controls"</h2>
        <p class="hint">{format!(
            "Every state-changing request — from a page, the command line or REST, refused ones too — newest first ({} recorded; all of them: runboard audit).",
            runboard::basics::numfmt::thousands(p.total as u64)
        )}</p>
        {if p.entries.is_empty() {
            view! { <p class="empty">"No control recorded yet."</p> }.into_any()
        } else {
            view! {
                <table class="audit">
                    <thead><tr><th>"When"</th><th>"What"</th><th>"By"</th><th>"From"</th><th>"Answer"</th></tr></thead>
                    <tbody>
                        {p.entries.iter().map(|e| {
                            let args = e.args_words();
                            let ok = (200..300).contains(&e.status);
                            view! {
                                <tr data-op=e.op.clone() class=if ok { "ok" } else { "refused" }>
                                    <td class="at">{e.at.to_display()}</td>
                                    <td class="op"><code>{e.op.clone()}</code>" "<span class="args">{args}</span></td>
                                    <td class="by">{e.by.clone()}</td>
                                    <td class="from">{format!("{} ({})", e.from, e.surface)}</td>
                                    <td class="answer">{format!("{} {}", e.status, e.answer)}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
    }
}

fn history(v: &AutoView) -> impl IntoView {
    view! {
        <h2>"History"</h2>
        {if v.state.history.is_empty() {
            view! { <p class="empty">"Nothing has happened yet."</p> }.into_any()
        } else {
            view! {
                <table class="history">
                    <tbody>
                        {v.state.history.iter().rev().map(|e| view! {
                            <tr data-event=e.event.kind().to_owned()>
                                <td class="at">{e.at.to_display()}</td>
                                <td class="event">{e.event.kind().to_owned()}</td>
                                <td class="words">{e.event.words()}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
    }
}

/// The settings as a form: each choice from the campaign (models, tasks,
/// builds), saved whole; a refusal lists every reason beside it.
fn settings_form(
    saved: Value,
    f: DraftForm,
    refresh: RwSignal<u64>,
    outcome: RwSignal<Option<Result<(), ApiError>>>,
) -> impl IntoView {
    let mut start = serde_json::to_value(runboard::auto::settings::Settings::default()).unwrap_or_default();
    if let (Some(s), Some(saved)) = (start.as_object_mut(), saved.as_object()) {
        for (k, val) in saved {
            s.insert(k.clone(), val.clone());
        }
    }
    let form = RwSignal::new(start);
    let save = Action::new(move |s: &Value| {
        let s = s.clone();
        async move { api::auto_settings(s).await.map(|_| ()) }
    });
    Effect::new(move |_| {
        if let Some(r) = save.value().get() {
            let ok = r.is_ok();
            outcome.set(Some(r));
            if ok {
                refresh.update(|n| *n += 1);
            }
        }
    });
    let levels = |name: &str| f.factors.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap_or_default();
    let models: Vec<String> = f.models.iter().map(|m| m.name.clone()).collect();
    let paid: Vec<String> =
        f.models.iter().filter(|m| m.kind == runboard::campaign::ModelKind::Paid).map(|m| m.name.clone()).collect();
    let builds = levels("build");
    view! {
        <form class="auto-settings" on:submit=move |ev| { ev.prevent_default(); save.dispatch(form.get_untracked()); }>
            <h2>"Settings"</h2>
            <fieldset><legend>"Models"</legend>{checklist(form, "models", models)}</fieldset>
            <fieldset><legend>"Tasks"</legend>{checklist(form, "tasks", levels("task"))}</fieldset>
            {(!builds.is_empty()).then(|| view! { <fieldset><legend>"Builds"</legend>{checklist(form, "builds", builds)}</fieldset> })}
            <fieldset>
                <legend>"Routes"</legend>
                <label>"Prompt variants (comma-separated) "
                    <input name="prompt_variants" prop:value=move || join(&form.get()["prompt_variants"])
                        on:change=move |ev| {
                            let parts: Vec<String> = event_target_value(&ev).split(',').map(|s| s.trim().to_owned()).filter(|s| !s.is_empty()).collect();
                            form.update(|f| f["prompt_variants"] = json!(parts));
                        }/>
                </label>
                <label>"Retry feedback "
                    {[true, false].map(|b| view! {
                        <label class="check"><input type="checkbox" name=format!("retry_feedback_{b}")
                            prop:checked=move || form.get()["retry_feedback"].as_array().is_some_and(|a| a.contains(&json!(b)))
                            on:change=move |ev| toggle(form, "retry_feedback", json!(b), event_target_checked(&ev))/>
                        {if b { "with" } else { "without" }}</label>
                    })}
                </label>
            </fieldset>
            {(!paid.is_empty()).then(|| view! {
                <fieldset><legend>"Daily caps of paid models (batches per UTC day, 1–50)"</legend>
                    {paid.into_iter().map(|m| {
                        let (m1, m2) = (m.clone(), m.clone());
                        view! { <label>{format!("{m} ")}
                            <input type="number" min="1" max="50" name=format!("cap_{m}")
                                prop:value=move || form.get()["daily_caps"][&m1].as_u64().map(|n| n.to_string()).unwrap_or_default()
                                on:change=move |ev| {
                                    let v = event_target_value(&ev);
                                    form.update(|f| {
                                        if !f["daily_caps"].is_object() { f["daily_caps"] = json!({}); }
                                        match v.trim().parse::<u64>() {
                                            Ok(n) => { f["daily_caps"][&m2] = json!(n); }
                                            Err(_) => { if let Some(o) = f["daily_caps"].as_object_mut() { o.remove(&m2); } }
                                        }
                                    });
                                }/>
                        </label> }
                    }).collect_view()}
                </fieldset>
            })}
            <fieldset>
                <legend>"Choosing and pacing"</legend>
                <label>"Objective "
                    <select name="objective" prop:value=move || form.get()["objective"].as_str().unwrap_or("").to_owned()
                        on:change=move |ev| form.update(|f| f["objective"] = json!(event_target_value(&ev)))>
                        <option value="fill_gaps">"fill gaps in order"</option>
                        <option value="least_covered">"least covered first"</option>
                        <option value="expected_impact">"expected impact"</option>
                    </select>
                </label>
                <label>"Count "
                    <select name="count_basis" prop:value=move || form.get()["count_basis"].as_str().unwrap_or("").to_owned()
                        on:change=move |ev| form.update(|f| f["count_basis"] = json!(event_target_value(&ev)))>
                        <option value="covered">"passed cells"</option>
                        <option value="attempted">"attempted cells"</option>
                    </select>
                </label>
                {number(form, "max_cells", "Cells per batch")}
                {number(form, "wait_minutes", "Minutes between batches")}
                {number(form, "endpoint_retry_minutes", "Quarantine (minutes)")}
                {number(form, "hold_notify_minutes", "Announce a hold after (minutes)")}
                <label>"Label prefix "
                    <input name="label_prefix" prop:value=move || form.get()["label_prefix"].as_str().unwrap_or("").to_owned()
                        on:change=move |ev| form.update(|f| f["label_prefix"] = json!(event_target_value(&ev)))/>
                </label>
                <label class="check"><input type="checkbox" name="parallel_lanes"
                    prop:checked=move || form.get()["parallel_lanes"].as_bool().unwrap_or(false)
                    on:change=move |ev| form.update(|f| f["parallel_lanes"] = json!(event_target_checked(&ev)))/>
                    "Parallel lanes (one batch per endpoint)"</label>
            </fieldset>
            <button type="submit" class="save-settings" disabled=move || crate::role::viewer() || save.pending().get()>"Save settings"</button>
            {move || outcome.get().map(|r| match r {
                Ok(()) => view! { <p class="said ok">"Settings saved."</p> }.into_any(),
                Err(e) => refusal(&e).into_any(),
            })}
        </form>
    }
}

fn join(v: &Value) -> String {
    v.as_array().map(|a| a.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")).unwrap_or_default()
}

fn toggle(form: RwSignal<Value>, key: &'static str, item: Value, on: bool) {
    form.update(|f| {
        if !f[key].is_array() {
            f[key] = json!([]);
        }
        if let Some(a) = f[key].as_array_mut() {
            a.retain(|x| *x != item);
            if on {
                a.push(item);
            }
        }
    });
}

fn checklist(form: RwSignal<Value>, key: &'static str, options: Vec<String>) -> impl IntoView {
    options
        .into_iter()
        .map(|o| {
            let (o1, o2, o3) = (o.clone(), o.clone(), o.clone());
            view! {
                <label class="check">
                    <input type="checkbox" name=format!("{key}_{o}")
                        prop:checked=move || form.get()[key].as_array().is_some_and(|a| a.contains(&json!(o1)))
                        on:change=move |ev| toggle(form, key, json!(o2), event_target_checked(&ev))/>
                    {o3}
                </label>
            }
        })
        .collect_view()
}

fn number(form: RwSignal<Value>, key: &'static str, label: &'static str) -> impl IntoView {
    view! {
        <label>{format!("{label} ")}
            <input type="number" name=key step="any"
                prop:value=move || form.get()[key].as_f64().map(|n| n.to_string()).unwrap_or_default()
                on:change=move |ev| {
                    let v = event_target_value(&ev);
                    // Whatever was typed goes to the server, which says what is wrong with it.
                    form.update(|f| {
                        f[key] = match v.trim().parse::<f64>() {
                            // Whole numbers as integers (`max_cells` is a count).
                            Ok(n) if n.fract() == 0.0 && n.abs() < 1e15 => json!(n as i64),
                            Ok(n) => json!(n),
                            Err(_) => json!(v),
                        }
                    });
                }/>
        </label>
    }
}
