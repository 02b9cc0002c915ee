//! The Coverage view, `/coverage?rows=&cols=`: which planned cells are
//! covered, running, failed or gaps — in total, per factor, and on a grid of
//! two chosen factors (each square its counts, coloured by state, its numbers
//! in words on hover) — and the drafting of the next batch from the gaps:
//! preview, save, the preflight's refusals beside the Launch button, launch.

use leptos::prelude::*;
use leptos_router::hooks::{query_signal, use_navigate};
use runboard::console::coverage::{CoverageView, Grid, StateCounts};
use runboard::console::draft::{DraftPreview, DraftRequest, SavedDraft};
use runboard::console::launch::LaunchRequest;
use runboard::console::preflight::Preflight;

use crate::api;
use crate::api::{ApiError, CoverageParams, DraftForm};
use crate::ui::refusal;

#[component]
pub fn CoveragePage() -> impl IntoView {
    let (rows, set_rows) = query_signal::<String>("rows");
    let (cols, set_cols) = query_signal::<String>("cols");
    let coverage = crate::codec::resource(
        move || (rows.get(), cols.get()),
        |(rows, cols)| api::coverage(CoverageParams { rows, cols }),
    );
    view! {
        <section class="coverage">
            <div class="toolbar"><h1>"Coverage"</h1></div>
            <Transition fallback=|| crate::ui::loading("Reading the matrix and the run sets…")>
                {move || coverage.get().map(|res| match res {
                    // A bad `?rows=`/`?cols=`: say why, and keep the pickers
                    // (over the default grid) so another choice is one click.
                    Err(e) => view! {
                        <p class="error grid-refused">{e.to_string()}" — the default grid is shown below."</p>
                        <DefaultGrid set_rows=set_rows set_cols=set_cols/>
                    }.into_any(),
                    Ok(v) => coverage_view(v, set_rows, set_cols).into_any(),
                })}
            </Transition>
            <Drafting/>
        </section>
    }
    .into_any()
}

/// The grid of the matrix's default factors, with its pickers.
#[component]
fn DefaultGrid(set_rows: SignalSetter<Option<String>>, set_cols: SignalSetter<Option<String>>) -> impl IntoView {
    let default = crate::codec::resource(|| (), |_| api::coverage(CoverageParams { rows: None, cols: None }));
    view! {
        <Transition fallback=|| ()>
            {move || default.get().map(|res| match res {
                Err(e) => crate::ui::failure("Could not read the coverage", &e),
                Ok(v) => coverage_view(v, set_rows, set_cols).into_any(),
            })}
        </Transition>
    }
}

fn coverage_view(
    v: CoverageView,
    set_rows: SignalSetter<Option<String>>,
    set_cols: SignalSetter<Option<String>>,
) -> impl IntoView {
    let picker =
        |which: &'static str, chosen: Option<String>, set: SignalSetter<Option<String>>, factors: &[String]| {
            view! {
                <label>{which}" "
                    <select class=format!("grid-{}", which.to_lowercase()) prop:value=chosen.unwrap_or_default()
                        on:change=move |ev| set.set(Some(event_target_value(&ev)).filter(|s| !s.is_empty()))>
                        {factors.iter().map(|f| view! { <option value=f.clone()>{f.clone()}</option> }).collect_view()}
                    </select>
                </label>
            }
        };
    let grid = v.grid.clone();
    view! {
        <p class="totals" data-covered=v.totals.covered data-gaps=v.totals.gap>
            {format!("{} — {} run sets read", v.words, v.run_sets)}
            {(v.off_matrix > 0).then(|| format!("; {} cell records are not in the matrix", v.off_matrix))}
        </p>
        {grid.map(|g| {
            let (r, c) = (g.rows_factor.clone(), g.cols_factor.clone());
            view! {
                <div class="grid-pickers">
                    {picker("Rows", Some(r), set_rows, &v.factors)}
                    {picker("Columns", Some(c), set_cols, &v.factors)}
                    <span class="legend">
                        <span class="swatch covered">"covered"</span>
                        <span class="swatch running">"running"</span>
                        <span class="swatch failed">"failed"</span>
                        <span class="swatch gap">"gap"</span>
                    </span>
                </div>
                {grid_table(g)}
            }
        })}
        <details class="by-factor">
            <summary>"Per factor"</summary>
            <table class="factor-counts">
                <thead><tr><th>"Factor"</th><th>"Level"</th><th>"Covered"</th><th>"Running"</th><th>"Failed"</th><th>"Gaps"</th></tr></thead>
                <tbody>
                    {v.factors.iter().flat_map(|f| {
                        let levels = v.by_factor.get(f).cloned().unwrap_or_default();
                        let f = f.clone();
                        levels.into_iter().map(move |l| view! {
                            <tr><td>{f.clone()}</td><td>{l.level}</td><td>{l.counts.covered}</td><td>{l.counts.running}</td><td>{l.counts.failed}</td><td>{l.counts.gap}</td></tr>
                        })
                    }).collect_view()}
                </tbody>
            </table>
        </details>
        {(!v.problems.is_empty()).then(|| view! {
            <div class="problems">
                <strong>"Not read"</strong>
                <ul>{v.problems.iter().map(|p| view! { <li class="problem">{p.clone()}</li> }).collect_view()}</ul>
            </div>
        })}
    }
    .into_any()
}

/// The dominant state of a square, for its colour (its numbers are written in it).
fn tone(c: &StateCounts) -> &'static str {
    if c.total() == 0 {
        "empty"
    } else if c.covered == c.total() {
        "covered"
    } else if c.running > 0 {
        "running"
    } else if c.failed > 0 {
        "failed"
    } else if c.covered > 0 {
        "partial"
    } else {
        "gap"
    }
}

fn grid_table(g: Grid) -> impl IntoView {
    let (rf, cf) = (g.rows_factor.clone(), g.cols_factor.clone());
    view! {
        <table class="coverage-grid">
            <thead><tr>
                <th>{format!("{rf} \\ {cf}")}</th>
                {g.cols.iter().map(|c| view! { <th>{c.clone()}</th> }).collect_view()}
            </tr></thead>
            <tbody>
                {g.rows.iter().zip(g.squares.iter()).map(|(r, line)| {
                    let r = r.clone();
                    view! {
                        <tr>
                            <th>{r.clone()}</th>
                            {line.iter().zip(g.cols.iter()).map(|(sq, c)| {
                                let title = format!("{rf} = {r}, {cf} = {c}: {}", sq.words());
                                view! {
                                    <td class=format!("square {}", tone(sq)) title=title.clone() aria-label=title
                                        data-row=r.clone() data-col=c.clone()>
                                        {(sq.total() > 0).then(|| format!("{}/{}", sq.covered, sq.total()))}
                                        {(sq.failed > 0).then(|| view! { <span class="n-failed">{format!(" ✗{}", sq.failed)}</span> })}
                                        {(sq.running > 0).then(|| view! { <span class="n-running">{format!(" ▶{}", sq.running)}</span> })}
                                    </td>
                                }
                            }).collect_view()}
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
}

/// The drafting form, the draft shown before saving, and the launch of the
/// saved draft (its preflight refusals shown beside the button).
#[component]
fn Drafting() -> impl IntoView {
    let form = crate::codec::resource(|| (), |_| api::draft_form(api::Nothing {}));
    let req = RwSignal::new(DraftRequest {
        label: "batch".into(),
        max_cells: Some(runboard::console::draft::DEFAULT_DRAFT_CELLS as f64),
        ..Default::default()
    });
    let preview = Action::new(|r: &DraftRequest| {
        let r = r.clone();
        async move { api::draft_preview(r).await }
    });
    let save = Action::new(|r: &DraftRequest| {
        let r = r.clone();
        async move { api::draft_save(r).await }
    });
    let spec_path = RwSignal::new(String::new());
    Effect::new(move |_| {
        if let Some(Ok(saved)) = save.value().get() {
            spec_path.set(saved.path);
        }
    });
    view! {
        <section class="drafting">
            <h2>"Draft the next batch"</h2>
            <p class="hint">"Not sure which cells? "<a class="to-next" href="/next">"The proposal guide"</a>" ranks the batches by what their cells would resolve, with what each would cost."</p>
            <Transition fallback=|| ()>
                {move || form.get().map(|res| match res {
                    Err(e) => crate::ui::failure("Could not read the draft form", &e),
                    Ok(f) => draft_form(f, req).into_any(),
                })}
            </Transition>
            <div class="draft-actions">
                <button class="preview" disabled=crate::role::viewer() on:click=move |_| { preview.dispatch(req.get_untracked()); }>"Preview the draft"</button>
                <button class="save" disabled=crate::role::viewer() on:click=move |_| { save.dispatch(req.get_untracked()); }>"Save the draft"</button>
            </div>
            {move || preview.value().get().map(|r| match r {
                Err(e) => refusal(&e).into_any(),
                Ok(p) => draft_preview(p).into_any(),
            })}
            {move || save.value().get().map(|r| match r {
                Err(e) => refusal(&e).into_any(),
                Ok(s) => saved_view(s).into_any(),
            })}
            <Launching spec_path=spec_path/>
        </section>
    }
    .into_any()
}

fn draft_form(f: DraftForm, req: RwSignal<DraftRequest>) -> impl IntoView {
    let problems = f.problems.clone();
    view! {
        {(!problems.is_empty()).then(|| view! {
            <div class="problems"><ul>{problems.into_iter().map(|p| view! { <li class="problem">{p}</li> }).collect_view()}</ul></div>
        })}
        <form class="draft-form" on:submit=|ev| ev.prevent_default()>
            <label>"Label "
                <input name="label" prop:value=move || req.with(|r| r.label.clone())
                    on:input=move |ev| req.update(|r| r.label = event_target_value(&ev))/>
            </label>
            <label>"Max cells "
                <input name="max_cells" type="number" min="1" max="10000" step="1"
                    prop:value=move || req.with(|r| r.max_cells.map(|n| n.to_string()).unwrap_or_default())
                    on:input=move |ev| req.update(|r| {
                        // Empty: the default; anything else is sent as typed,
                        // so the server names what is wrong with it.
                        let t = event_target_value(&ev);
                        r.max_cells = if t.trim().is_empty() { None } else { Some(t.trim().parse().unwrap_or(f64::NAN)) };
                    })/>
            </label>
            <label>"Model "
                <select name="model" on:change=move |ev| req.update(|r| r.model = Some(event_target_value(&ev)).filter(|s| !s.is_empty()))>
                    <option value="">"(the endpoint's)"</option>
                    {f.models.iter().map(|m| {
                        let label = format!("{} ({}{})", m.name, if m.kind == runboard::campaign::ModelKind::Paid { "paid" } else { "local" },
                            m.daily_cap.map(|c| format!(", {c} a day")).unwrap_or_default());
                        view! { <option value=m.name.clone()>{label}</option> }
                    }).collect_view()}
                </select>
            </label>
            <label>"Endpoint "
                <select name="endpoint" on:change=move |ev| req.update(|r| r.endpoint = Some(event_target_value(&ev)).filter(|s| !s.is_empty()))>
                    <option value="">"(none: a paid route)"</option>
                    {f.endpoints.iter().map(|e| view! { <option value=e.name.clone()>{format!("{} — {}", e.name, e.models.join(", "))}</option> }).collect_view()}
                </select>
            </label>
            <label>"Prompt variant "
                <input name="prompt_variant" on:input=move |ev| req.update(|r| r.prompt_variant = Some(event_target_value(&ev)).filter(|s| !s.is_empty()))/>
            </label>
            <label>"Retry feedback "
                <select name="retry_feedback" on:change=move |ev| req.update(|r| r.retry_feedback = match event_target_value(&ev).as_str() { "yes" => Some(true), "no" => Some(false), _ => None })>
                    <option value="">"(not set)"</option>
                    <option value="yes">"yes"</option>
                    <option value="no">"no"</option>
                </select>
            </label>
            <label><input type="checkbox" name="skip_failed" on:change=move |ev| req.update(|r| r.skip_failed = event_target_checked(&ev))/>" leave failed cells out"</label>
            <fieldset class="filters">
                <legend>"Only cells with (none ticked: any)"</legend>
                {f.factors.into_iter().map(|(factor, levels)| {
                    let fac = factor.clone();
                    view! {
                        <div class="filter-factor" data-factor=factor.clone()>
                            <strong>{factor.clone()}": "</strong>
                            {levels.into_iter().map(|level| {
                                let (f2, l2) = (fac.clone(), level.clone());
                                view! {
                                    <label class="level">
                                        <input type="checkbox" value=level.clone() on:change=move |ev| {
                                            let on = event_target_checked(&ev);
                                            req.update(|r| {
                                                let vals = r.filters.entry(f2.clone()).or_default();
                                                vals.retain(|v| *v != l2);
                                                if on { vals.push(l2.clone()); }
                                                if vals.is_empty() { r.filters.remove(&f2); }
                                            });
                                        }/>
                                        {level}
                                    </label>
                                }
                            }).collect_view()}
                        </div>
                    }
                }).collect_view()}
            </fieldset>
        </form>
    }
}

fn draft_preview(p: DraftPreview) -> impl IntoView {
    let d = p.draft;
    view! {
        <div class="draft-preview">
            <p class="draft-count">{format!("{} cells drafted of {} eligible; predicted {}.", d.spec.cells.len(), d.eligible, p.prediction.words())}</p>
            {(!d.held_back.is_empty()).then(|| view! {
                <ul class="held-back">{d.held_back.iter().map(|h| view! {
                    <li>{format!("{} cell(s) held back: {} (e.g. {})", h.cells, h.reason, h.example)}</li>
                }).collect_view()}</ul>
            })}
            <table class="draft-cells">
                <thead><tr><th>"Cell"</th><th>"Factors"</th></tr></thead>
                <tbody>{d.spec.cells.iter().map(|c| view! {
                    <tr data-cell=c.id.clone()><td><code>{c.id.clone()}</code></td>
                    <td>{c.factors.iter().map(|(k, v)| format!("{k}={}", runboard::console::matrix::value_text(v))).collect::<Vec<_>>().join(" ")}</td></tr>
                }).collect_view()}</tbody>
            </table>
        </div>
    }
}

fn saved_view(s: SavedDraft) -> impl IntoView {
    view! {
        <p class="saved">{format!("Saved {} ({} cells). From a terminal: ", s.path, s.cells)}<code>{s.launch_hint}</code></p>
    }
}

/// Launch a spec: its preflight first (every refusal listed beside the
/// button), then the one launch path; a launch goes to the Live view.
#[component]
pub(crate) fn Launching(spec_path: RwSignal<String>) -> impl IntoView {
    let check = Action::new(|p: &String| {
        let p = p.clone();
        async move { api::preflight(api::SpecPath { path: p }).await }
    });
    let launch = Action::new(|p: &String| {
        let req = LaunchRequest { path: p.clone(), skip_preflight: false, tag: None };
        async move { api::start(req).await }
    });
    // A new path or a new check replaces what was said about the old one.
    Effect::new(move |_| {
        let p = spec_path.get();
        if !p.is_empty() {
            check.dispatch(p);
        }
    });
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(_)) = launch.value().get() {
            navigate("/live", Default::default());
        }
    });
    let refusals = move || -> Option<Result<Preflight, ApiError>> { check.value().get() };
    // Why Launch cannot be pressed now, in words (none: it can).
    let why_not = move || -> Option<&'static str> {
        if spec_path.with(String::is_empty) {
            Some("Launch needs a spec: save a draft above (Save), or type a spec's path.")
        } else if launch.pending().get() {
            Some("Launching…")
        } else if matches!(refusals(), Some(Ok(ref p)) if !p.refusals.is_empty()) {
            Some("Launch waits until the preflight refuses nothing: see its reasons below.")
        } else {
            None
        }
    };
    view! {
        <div class="launching">
            <label>"Spec "
                <input name="spec" class="spec-path" placeholder="specs/drafts/….json" prop:value=move || spec_path.get()
                    on:change=move |ev| spec_path.set(event_target_value(&ev))/>
            </label>
            <button class="check" disabled=crate::role::viewer() on:click=move |_| { check.dispatch(spec_path.get_untracked()); }>"Check"</button>
            <button class="launch"
                disabled=move || crate::role::viewer() || why_not().is_some()
                title=move || why_not().unwrap_or("Start this batch (a launch that spends money or re-runs cells asks first)")
                on:click=move |_| {
                    // Warnings (money, a re-run, a shared or unavailable
                    // endpoint) are confirmed before anything is launched.
                    let warned = match refusals() {
                        Some(Ok(p)) if !p.warnings.is_empty() => Some(p),
                        _ => None,
                    };
                    let go = match warned {
                        None => true,
                        Some(p) => crate::ui::confirm(&format!(
                            "Launch {}? Before it starts:\n- {}\n\nPredicted: {}.",
                            spec_path.get_untracked(),
                            p.warnings.join("\n- "),
                            p.prediction.words()
                        )),
                    };
                    if go {
                        launch.dispatch(spec_path.get_untracked());
                    }
                }>"Launch"</button>
            {move || why_not().map(|w| view! { <p class="launch-why">{w}</p> })}
            <div class="preflight">
                {move || refusals().map(|r| match r {
                    Err(e) => refusal(&e).into_any(),
                    Ok(p) if p.refusals.is_empty() => view! {
                        <p class="preflight-ok">{format!("Preflight passed; predicted {}.", p.prediction.words())}</p>
                        {(!p.warnings.is_empty()).then(|| view! {
                            <div class="preflight-warnings" role="status">
                                <strong>"Before you launch (you will be asked to confirm):"</strong>
                                <ul>{p.warnings.iter().map(|w| view! { <li class="warning">{w.clone()}</li> }).collect_view()}</ul>
                            </div>
                        })}
                    }.into_any(),
                    Ok(p) => view! {
                        <div class="refusal preflight-refusals" role="alert">
                            <strong>"The preflight refuses this batch:"</strong>
                            <ul>{p.refusals.into_iter().map(|r| view! { <li class="reason">{r}</li> }).collect_view()}</ul>
                            <p class="prediction">{format!("Predicted {}.", p.prediction.words())}</p>
                        </div>
                    }.into_any(),
                })}
                {move || launch.value().get().and_then(Result::err).map(|e| refusal(&e))}
            </div>
        </div>
    }
    .into_any()
}
