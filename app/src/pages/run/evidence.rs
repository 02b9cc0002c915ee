//! The tabs about what a run found: accepted factors, the diagnosis, a trial's
//! lineage and the acceptance and hold-out reports.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::runview::acceptance::{AcceptanceReport, ReportEntry};
use runboard::runview::analysis::RunAnalysis;
use runboard::runview::lineage::Lineage;
use runboard::runview::view::AcceptedFactor;

use super::{num, pretty};
use crate::api;
use crate::ui::loaded;

/// The accepted tab: its own read (the list grows with the run).
#[component]
pub(super) fn AcceptedTab(name: String, version: Signal<String>) -> impl IntoView {
    let accepted = crate::codec::resource(
        move || (name.clone(), version.get()),
        |(n, _)| api::run_accepted(api::RunName { name: n }),
    );
    view! {
        {loaded(accepted, "Reading the accepted factors…", "Could not read the accepted factors", move |list| {
            accepted_table(list).into_any()
        })}
    }
}

fn accepted_table(list: Vec<AcceptedFactor>) -> impl IntoView {
    if list.is_empty() {
        return view! { <p class="empty">"No factor accepted yet."</p> }.into_any();
    }
    view! {
        <table class="accepted">
            <thead><tr><th>"Factor"</th><th>"Round"</th><th>"Trial"</th><th>"t (directed)"</th><th>"t threshold"</th><th>"max |corr|"</th><th>"Intraday"</th><th>"Code"</th></tr></thead>
            <tbody>
                {list.into_iter().map(|a| view! {
                    <tr class="accepted-factor" data-factor=a.factor.clone()>
                        <td>{a.factor.clone()}</td>
                        <td>{a.round}</td>
                        <td>{a.trial.clone()}</td>
                        <td>{num(a.directed_t)}</td>
                        <td>{num(a.t_threshold)}</td>
                        <td>{num(a.max_abs_corr)}</td>
                        <td class="intraday">{if a.intraday { "yes" } else { "no" }}</td>
                        <td><code>{a.code.clone()}</code></td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

pub(super) fn diagnosis(a: &RunAnalysis) -> impl IntoView {
    if a.diagnosis.is_empty() {
        return view! { <p class="empty">"Nothing stands out in the written trials."</p> }.into_any();
    }
    view! {
        <ul class="diagnosis">
            {a.diagnosis.iter().map(|f| view! {
                <li class="finding" data-rule=f.rule.clone()>
                    <strong>{f.summary.clone()}</strong>
                    <span class="share">{format!(" {} of {} trials", f.trials, f.of)}</span>
                    <p>{f.advice.clone()}</p>
                    <p class="examples">"For example: "{f.examples.join(", ")}</p>
                </li>
            }).collect_view()}
        </ul>
    }
    .into_any()
}

/// `?tab=lineage&trial=NAME`: the trial's ancestors, generation by generation.
#[component]
pub(super) fn LineageTab(name: String, version: Signal<String>) -> impl IntoView {
    let (trial, _) = query_signal::<String>("trial");
    let run = name.clone();
    let lineage = crate::codec::resource(
        move || (trial.get(), version.get()),
        move |(t, _)| {
            let run = run.clone();
            async move {
                match t.filter(|t| !t.is_empty()) {
                    Some(t) => Some(api::run_lineage(api::RunTrial { name: run, trial: t }).await),
                    None => None,
                }
            }
        },
    );
    view! {
        <form class="lineage-form" method="get">
            <input type="hidden" name="tab" value="lineage"/>
            <label>"Trial "<input type="text" name="trial" placeholder="e.g. r03s1" prop:value=move || trial.get().unwrap_or_default()/></label>
            <button type="submit">"Show lineage"</button>
        </form>
        <Transition fallback=|| crate::ui::loading("Reading the lineage…")>
            {move || lineage.get().map(|res| match res {
                None => view! { <p class="empty">"Name a trial, or follow a trial's lineage link on the rounds tab."</p> }.into_any(),
                Some(Err(e)) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                Some(Ok(l)) => lineage_view(&l).into_any(),
            })}
        </Transition>
    }
}

fn lineage_view(l: &Lineage) -> impl IntoView {
    let limits = format!(
        "Judged by least coverage {:.2} and least monotonicity {:.2}, {}.",
        l.limits.min_coverage,
        l.limits.min_monotonicity,
        match l.limits.source {
            runboard::runview::admission::LimitsSource::LastOpen => "as the run was last opened",
            runboard::runview::admission::LimitsSource::Defaults => "the defaults (the run's events do not say)",
        }
    );
    view! {
        <p class="lineage-of">{format!("Lineage of {} (round {})", l.trial.trial.clone().unwrap_or_default(), l.trial.round)}</p>
        <p class="limits">{limits}</p>
        {if l.ancestors.is_empty() {
            view! { <p class="empty">"No parents: a trial from scratch."</p> }.into_any()
        } else {
            view! {
                <table class="lineage">
                    <thead><tr><th>"Generation"</th><th>"Trial"</th><th>"Round"</th><th>"t"</th><th>"Coverage"</th><th>"Monotonicity"</th><th>"Met the limits"</th><th>"Outcome"</th></tr></thead>
                    <tbody>
                        {l.ancestors.iter().map(|a| {
                            let r = a.record.as_ref();
                            view! {
                                <tr class="ancestor" data-generation=a.generation>
                                    <td>{a.generation}</td>
                                    <td><a href=format!("?tab=lineage&trial={}", crate::url::encode(&a.trial))>{a.trial.clone()}</a></td>
                                    <td>{r.map(|r| r.round.to_string()).unwrap_or_else(|| "not in a written round".into())}</td>
                                    <td>{num(r.and_then(|r| r.directed_t()))}</td>
                                    <td>{num(r.and_then(|r| r.coverage))}</td>
                                    <td>{num(r.and_then(|r| r.monotonicity))}</td>
                                    <td class="met">{match a.met_limits { Some(true) => "yes", Some(false) => "no", None => "–" }}</td>
                                    <td>{r.map(|r| r.outcome_text())}</td>
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
        {l.cut.then(|| view! { <p class="problem">"The lineage goes back further than shown."</p> })}
    }
}

#[component]
pub(super) fn Reports(name: String, version: Signal<String>) -> impl IntoView {
    let reports = crate::codec::resource(
        move || (name.clone(), version.get()),
        |(n, _)| api::run_reports(api::RunName { name: n }),
    );
    view! {
        <Transition fallback=|| crate::ui::loading("Reading the reports…")>
            {move || reports.get().map(|res| match res {
                Err(e) => crate::ui::failure("Could not read the reports", &e),
                Ok(list) if list.is_empty() => view! { <p class="empty">"No acceptance reports."</p> }.into_any(),
                Ok(list) => view! {
                    <div class="reports">
                        {list.iter().map(|entry| match entry {
                            ReportEntry::Unreadable { file, reason } => view! {
                                <p class="problem report-problem">"acceptance/"{file.clone()}": "{reason.clone()}</p>
                            }.into_any(),
                            ReportEntry::Report(r) => report(r).into_any(),
                        }).collect_view()}
                    </div>
                }.into_any(),
            })}
        </Transition>
    }
}

fn report(r: &AcceptanceReport) -> impl IntoView {
    let title = match &r.digest {
        Some(d) => format!("{} ({d})", r.segment),
        None => r.segment.clone(),
    };
    view! {
        <section class="report" class:holdout=r.holdout data-file=r.file.clone()>
            <h3>{title}{r.holdout.then(|| view! { " "<span class="badge holdout">"hold-out"</span> })}</h3>
            {r.written_at.clone().map(|w| view! { <p class="written">"written "{w}</p> })}
            {r.holdout.then(|| view! {
                <h4>"Hold-out opens"</h4>
                <ul class="opens">
                    {r.opens.iter().map(|o| view! {
                        <li>{format!("{} by {}: {}", o.at.clone().unwrap_or_else(|| "?".into()), o.by.clone().unwrap_or_else(|| "?".into()), o.reason.clone().unwrap_or_else(|| "no reason given".into()))}</li>
                    }).collect_view()}
                </ul>
            })}
            <table class="report-factors">
                <thead><tr><th>"Factor"</th><th>"Trial"</th><th>"IC"</th><th>"t"</th><th>"Selected"</th></tr></thead>
                <tbody>
                    {r.factors.iter().map(|f| view! {
                        <tr>
                            <td>{f.factor.clone()}</td>
                            <td>{f.trial.clone()}</td>
                            <td>{f.ic.map(|x| format!("{x:.4}"))}</td>
                            <td>{num(f.t)}</td>
                            <td class="selected">{match f.selected { Some(true) => "yes", Some(false) => "no", None => "not recorded" }}</td>
                        </tr>
                    }).collect_view()}
                </tbody>
            </table>
            {match &r.contribution {
                None => view! { <p class="no-contribution">"No contribution table: the report predates it."</p> }.into_any(),
                Some(rows) => view! {
                    <table class="contribution">
                        <thead><tr><th>"Factor"</th><th>"Share of contribution"</th></tr></thead>
                        <tbody>{rows.iter().map(|c| view! { <tr><td>{c.factor.clone()}</td><td>{num(c.share)}</td></tr> }).collect_view()}</tbody>
                    </table>
                }.into_any(),
            }}
            {(!r.metrics.is_null()).then(|| view! { <pre class="metrics">{pretty(&r.metrics)}</pre> })}
        </section>
    }
}
