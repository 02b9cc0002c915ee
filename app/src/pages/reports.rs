//! Reports: `/reports?scope=` lists the run sets with cells in scope;
//! `/reports/<run set>?scope=` is one batch's report — its outcome, cells,
//! failures with reasons, cost, time and the run directories it owns —
//! laid out to print (the navigation and controls are left off paper).

use leptos::prelude::*;
use leptos_router::hooks::use_params_map;
use runboard::basics::timefmt::span_words;
use runboard::results::report::Report;

use crate::api;
use crate::api::ScopeQuery;
use crate::scope::{use_scope, with_scope, ScopeBar};
use crate::tags::{TagEditor, TagNotes};
use crate::ui::loaded;

#[component]
pub fn ReportsPage() -> impl IntoView {
    let (scope, _) = use_scope();
    let list = crate::codec::resource(move || scope.get(), |scope| api::reports(ScopeQuery { scope }));
    view! {
        <section class="reports">
            <h1>"Reports"</h1>
            <ScopeBar/>
            <TagNotes/>
            <Transition fallback=|| crate::ui::loading("Reading the run sets…")>
                {move || list.get().map(|res| match res {
                    Err(e) => view! { <p class="error">"Could not list the reports: " {e.to_string()}</p> }.into_any(),
                    Ok(l) if l.is_empty() => view! { <p class="empty">"No run set in this scope."</p> }.into_any(),
                    Ok(l) => view! {
                        <table class="report-list">
                            <thead><tr><th>"Run set"</th><th>"Outcome"</th><th>"Cells"</th><th>"Done"</th><th>"Failed"</th><th>"Started"</th><th>"Tags"</th></tr></thead>
                            <tbody>
                                {l.into_iter().map(|r| {
                                    let href = with_scope(&format!("/reports/{}", crate::url::encode(&r.name)), scope.get_untracked().as_deref());
                                    view! {
                                        <tr data-run-set=r.name.clone()>
                                            <td><a href=href>{r.name.clone()}</a></td>
                                            <td>{r.status.map(runboard::live::outcome_words).unwrap_or("no outcome")}</td>
                                            <td class="num">{r.cells}</td><td class="num">{r.done}</td><td class="num">{r.failed}</td>
                                            <td>{r.started_at.as_deref().map(runboard::basics::timefmt::display_rfc3339).unwrap_or_default()}</td>
                                            <td><TagEditor run_set=r.name.clone() tags=r.tags.clone()/></td>
                                        </tr>
                                    }
                                }).collect_view()}
                            </tbody>
                        </table>
                    }.into_any(),
                })}
            </Transition>
        </section>
    }
}

#[component]
pub fn ReportPage() -> impl IntoView {
    let params = use_params_map();
    let (scope, _) = use_scope();
    let report = crate::codec::resource(
        move || (params.with(|p| p.get("run_set").unwrap_or_default()), scope.get()),
        |(run_set, scope)| api::report(api::ReportQuery { run_set, scope }),
    );
    view! {
        <section class="report">
            <p class="no-print"><a href=move || with_scope("/reports", scope.get().as_deref())>"All reports"</a>
                " · " <button type="button" class="print" onclick="window.print()">"Print"</button></p>
            {loaded(report, "Reading the run set…", "Could not read the report", move |r| {
                body(&r).into_any()
            })}
        </section>
    }
}

fn opt_secs(s: Option<f64>) -> String {
    s.map(span_words).unwrap_or_else(|| "—".into())
}

/// "at 1.00 USD per 1,000 tokens", or each kind's price when they differ.
fn price_words(p: &runboard::live::spend::Prices, currency: &str) -> String {
    let m = |x| runboard::basics::numfmt::money(x, currency);
    if p.input == p.output && p.input == p.cached {
        format!("at {} per 1,000 tokens", m(p.input))
    } else {
        format!("per 1,000 tokens: {} input, {} output, {} cached", m(p.input), m(p.output), m(p.cached))
    }
}

/// Reasons and how many cells gave each, or `empty` in words.
fn reasons_table(rows: &[(String, u64)], class: &'static str, empty: &'static str) -> AnyView {
    if rows.is_empty() {
        return view! { <p class="empty">{empty}</p> }.into_any();
    }
    view! {
        <table class=class>
            <thead><tr><th>"Reason"</th><th>"Cells"</th></tr></thead>
            <tbody>{rows.iter().map(|(w, n)| view! { <tr><td>{w.clone()}</td><td class="num">{*n}</td></tr> }).collect_view()}</tbody>
        </table>
    }.into_any()
}

fn body(r: &Report) -> impl IntoView {
    let s = &r.summary;
    let outcome = match &r.outcome {
        Some(o) => format!("{}: {}", runboard::live::outcome_words(o.status), o.reason),
        None => "no outcome written".into(),
    };
    let cost = match (r.cost, r.prices) {
        (Some(c), Some(p)) => {
            format!("{} ({})", runboard::basics::numfmt::money(c, &r.currency), price_words(&p, &r.currency))
        }
        _ => "not priced (the catalogue gives this model no price)".into(),
    };
    let ran = r.cells.iter().filter(|c| c.passed.is_some()).count();
    view! {
        <h1>"Report: " {s.name.clone()}</h1>
        {(!r.scope.is_empty()).then(|| view! { <p class="scope-note">"Cells in scope " {r.scope.clone()} " only."</p> })}
        <dl class="facts report-facts">
            <dt>"Outcome"</dt><dd class="outcome">{outcome}</dd>
            <dt>"Model"</dt><dd>{r.model.clone().unwrap_or_else(|| "—".into())}</dd>
            <dt>"Endpoints"</dt><dd>{if r.endpoints.is_empty() { "—".into() } else { r.endpoints.join(", ") }}</dd>
            <dt>"Spec"</dt><dd>{s.spec.clone().unwrap_or_else(|| "—".into())}</dd>
            <dt>"Tags"</dt><dd class="tags"><span class="print-only">{s.tags.join(", ")}</span><span class="no-print"><TagEditor run_set=s.name.clone() tags=s.tags.clone()/></span></dd>
            <dt>"Started"</dt><dd>{s.started_at.as_deref().map(runboard::basics::timefmt::display_rfc3339).unwrap_or_default()}</dd>
            <dt>"Ended"</dt><dd>{s.ended_at.as_deref().map(runboard::basics::timefmt::display_rfc3339).unwrap_or_default()}</dd>
            <dt>"Wall time"</dt><dd class="wall">{opt_secs(r.wall_s)}</dd>
            <dt>"Cell time"</dt><dd>{runboard::basics::timefmt::duration_words(r.cell_hours * 3600.0)}</dd>
            <dt>"Cells"</dt><dd class="cell-counts">{format!("{} listed: {} done, {} failed", r.cells.len(), s.done, s.failed)}</dd>
            <dt>"Passed"</dt><dd class="pass-counts">{format!("{} of the {ran} that ended passed; {} did not pass", r.passed, ran - r.passed)}</dd>
            <dt>"Tokens"</dt><dd class="tokens">{format!("{} (from {} cells: reported, or counted of their calls)", runboard::basics::numfmt::thousands(r.tokens), r.cells_with_tokens)}</dd>
            <dt>"Cost"</dt><dd class="cost">{cost}</dd>
        </dl>
        {(!r.problems.is_empty()).then(|| view! {
            <div class="problems"><h2>"Records that cannot be read"</h2>
                <ul>{r.problems.iter().map(|p| view! { <li class="problem">{p.clone()}</li> }).collect_view()}</ul></div>
        })}
        <h2>"Failures"</h2>
        <p class="words-note">"A cell " <em>"failed"</em> " when its process did; one that ran to its end and did not pass is listed apart, under " <em>"Did not pass"</em> "."</p>
        {reasons_table(&r.failures, "report-failures", "No cell failed (its process ended badly).")}
        <h2>"Did not pass"</h2>
        {reasons_table(&r.not_passed, "report-not-passed", "Every cell that ran to its end passed.")}
        <h2>"Cells"</h2>
        <table class="report-cells">
            <thead><tr><th>"Cell"</th><th>"Factors"</th><th>"Status"</th><th>"Attempts"</th><th>"Duration"</th><th>"Tokens"</th><th>"Score"</th><th>"Passed"</th><th>"Failure or why not passed"</th><th>"Log"</th></tr></thead>
            <tbody>
                {r.cells.iter().map(|c| {
                    let factors: Vec<String> = c.factors.iter().map(|(k, v)| format!("{k}={}", runboard::console::matrix::value_text(v))).collect();
                    view! {
                        <tr data-cell=c.cell.clone()>
                            <td>{c.cell.clone()}</td>
                            <td>{factors.join(" ")}</td>
                            <td class="status">{format!("{:?}", c.status).to_lowercase()}</td>
                            <td>{c.attempts}</td>
                            <td>{opt_secs(c.duration_s)}</td>
                            <td class="num">{c.tokens.map(runboard::basics::numfmt::thousands).unwrap_or_default()}</td>
                            <td>{c.score.map(|t| format!("{t:.2}")).unwrap_or_default()}</td>
                            <td class="passed">{match c.passed { Some(true) => "yes", Some(false) => "no", None => "–" }}</td>
                            <td class="failure">{c.failure.clone().or_else(|| c.not_passed.clone()).unwrap_or_default()}</td>
                            <td><code>{c.log.clone().unwrap_or_default()}</code></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <h2>"Run directories"</h2>
        {if r.runs.is_empty() {
            view! { <p class="empty">"Its cells wrote no run directory."</p> }.into_any()
        } else {
            view! {
                <ul class="report-runs">
                    {r.runs.iter().map(|d| view! {
                        <li><a href=crate::url::run_href(&d.path)>{d.path.clone()}</a>{format!(" — {}", d.status_text)}</li>
                    }).collect_view()}
                </ul>
            }.into_any()
        }}
    }
}
