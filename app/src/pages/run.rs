//! A run's page, `/runs/<name>?tab=…`: summary, rounds and trials, the round in
//! progress, calls (with each call's reasoning on demand), and memory versions
//! with their line diffs. It follows a live run: the run's version is polled every
//! second and the view re-read only when it changed.

use leptos::prelude::*;
use leptos_router::hooks::{query_signal, use_params_map};
use runboard::runview::analysis::{CollisionKind, RunAnalysis};
use runboard::runview::diff::DiffLine;
use runboard::runview::view::{CallEvent, RunView};

#[cfg(feature = "hydrate")]
use crate::api::get_run_version;
use crate::api::{get_analysis, get_call, get_run};

#[cfg(feature = "hydrate")]
const POLL_MS: u32 = 1_000;

const TABS: [(&str, &str); 8] = [
    ("summary", "Summary"),
    ("rounds", "Rounds"),
    ("progress", "In progress"),
    ("calls", "Calls"),
    ("map", "Admission map"),
    ("refusals", "Refusals"),
    ("collisions", "Collisions"),
    ("memory", "Memory"),
];

#[component]
pub fn RunPage() -> impl IntoView {
    let params = use_params_map();
    let name = Memo::new(move |_| params.read().get("name").unwrap_or_default());
    let refresh = RwSignal::new(0u64);
    let view = Resource::new(move || (name.get(), refresh.get()), |(n, _)| get_run(n));
    let (tab, _) = query_signal::<String>("tab");

    #[cfg(feature = "hydrate")]
    crate::live::follow(
        POLL_MS,
        move || name.try_get_untracked().map(|n| async move { get_run_version(n).await.ok() }),
        move || view.try_get_untracked().map(|r| r.and_then(Result::ok).map(|v| v.row.version)),
        move || {
            refresh.try_update(|x| *x += 1);
        },
    );

    view! {
        <section class="run">
            <p class="crumbs"><a href="/runs">"Runs"</a>" / "<strong>{move || name.get()}</strong></p>
            <nav class="tabs">
                {TABS.map(|(key, label)| {
                    let href = move || format!("/runs/{}?tab={key}", name.get());
                    let current = move || tab.get().unwrap_or_else(|| "summary".into()) == key;
                    view! { <a href=href class:current=current data-tab=key>{label}</a> }
                })}
            </nav>
            <Transition fallback=|| view! { <p class="loading">"Reading the run…"</p> }>
                {move || view.get().map(|res| match res {
                    Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                    Ok(v) => {
                        let t = tab.get().unwrap_or_else(|| "summary".into());
                        let n = name.get();
                        view! {
                            <div class="tab-body" data-version=v.row.version.clone()>
                                {match t.as_str() {
                                    "rounds" => rounds(&v).into_any(),
                                    "progress" => progress(&v).into_any(),
                                    "calls" => calls(n, &v.calls).into_any(),
                                    "memory" => memory(&v).into_any(),
                                    "map" | "refusals" | "collisions" => view! { <Analysis name=n tab=t version=v.row.version.clone()/> }.into_any(),
                                    _ => summary(&v).into_any(),
                                }}
                            </div>
                        }.into_any()
                    }
                })}
            </Transition>
        </section>
    }
}

fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_default()
}

fn summary(v: &RunView) -> impl IntoView {
    let r = &v.row;
    let label = r.status.label();
    let process = match &r.process {
        runboard::runview::ProcessCheck::NotRecorded => "not recorded".to_owned(),
        runboard::runview::ProcessCheck::Alive { host, pid } => format!("{pid} on {host}: alive"),
        runboard::runview::ProcessCheck::Gone { host, pid } => format!("{pid} on {host}: gone"),
        runboard::runview::ProcessCheck::OtherHost { host, pid } => format!("{pid} on {host}: unknown from here"),
    };
    view! {
        <dl class="facts">
            <dt>"Status"</dt><dd class="status"><span class=format!("badge {label}")>{label}</span>" "{r.status_text.clone()}</dd>
            <dt>"Phase"</dt><dd class="phase">{r.phase.clone().unwrap_or_else(|| "–".into())}</dd>
            <dt>"Process"</dt><dd class="process">{process}</dd>
            <dt>"Model"</dt><dd>{r.model.clone().unwrap_or_else(|| "–".into())}</dd>
            <dt>"Rounds written"</dt><dd class="rounds-written">{r.rounds_written.map(|n| n.to_string()).unwrap_or_else(|| "0".into())}{r.rounds_planned.map(|p| format!(" of {p}"))}</dd>
            <dt>"Calls"</dt><dd class="calls-total">{v.calls_total}</dd>
            <dt>"Tokens"</dt><dd class="tokens-total">{v.tokens_total}</dd>
            <dt>"Path"</dt><dd><code>{r.path.clone()}</code></dd>
        </dl>
        {(!v.problems.is_empty()).then(|| view! {
            <div class="problems">
                <h3>"Parts that could not be read"</h3>
                <ul>{v.problems.iter().map(|p| view! { <li class="problem"><code>{p.part.clone()}</code>": "{p.reason.clone()}</li> }).collect_view()}</ul>
            </div>
        })}
        <h3>"Settings (snapshot)"</h3>
        <pre class="settings">{pretty(&v.snapshot_settings)}</pre>
        {v.opened_with.as_ref().map(|s| view! { <h3>"Opened with"</h3><pre class="opened-with">{pretty(s)}</pre> })}
    }
}

fn num(x: Option<f64>) -> String {
    x.map(|f| format!("{f:.2}")).unwrap_or_else(|| "–".into())
}

fn rounds(v: &RunView) -> impl IntoView {
    if v.rounds.is_empty() {
        return view! { <p class="empty">"No round written yet."</p> }.into_any();
    }
    view! {
        <table class="trials">
            <thead><tr><th>"Round"</th><th>"Slot"</th><th>"Trial"</th><th>"t"</th><th>"max |corr|"</th><th>"Tokens"</th><th>"Stage"</th><th>"Outcome"</th></tr></thead>
            <tbody>
                {v.rounds.iter().flat_map(|r| r.trials.iter()).map(|t| view! {
                    <tr class:accepted=t.accepted data-round=t.round>
                        <td>{t.round}</td>
                        <td>{t.slot.map(|s| s.to_string())}</td>
                        <td>{t.trial.clone()}</td>
                        <td>{num(t.t)}</td>
                        <td>{num(t.max_abs_corr)}</td>
                        <td>{t.tokens.map(|n| n.to_string())}</td>
                        <td>{t.stage.clone()}</td>
                        <td>{if t.accepted { "accepted".to_owned() } else { t.reason.clone().unwrap_or_else(|| "refused".into()) }}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

fn progress(v: &RunView) -> impl IntoView {
    match &v.in_progress {
        None => view! { <p class="empty">"No round in progress."</p> }.into_any(),
        Some(p) => view! {
            <div class="in-progress" data-round=p.round>
                <p>{format!("Round {} — {}", p.round, p.phase.clone().unwrap_or_else(|| "starting".into()))}</p>
                <ul class="pending">
                    {p.pending.iter().map(|s| view! { <li class="pending-slot">{format!("slot {s}: pending")}</li> }).collect_view()}
                </ul>
                <p>{format!("{} calls so far this round", p.calls.len())}</p>
            </div>
        }
        .into_any(),
    }
}

fn calls(run: String, calls: &[CallEvent]) -> impl IntoView {
    if calls.is_empty() {
        return view! { <p class="empty">"No calls recorded in the events."</p> }.into_any();
    }
    let open = RwSignal::new(None::<u32>);
    let detail = Resource::new(
        move || open.get(),
        move |n| {
            let run = run.clone();
            async move {
                match n {
                    Some(n) => Some(get_call(run, n).await),
                    None => None,
                }
            }
        },
    );
    view! {
        <table class="calls">
            <thead><tr><th>"Call"</th><th>"Round"</th><th>"Slots"</th><th>"Purpose"</th><th>"Tokens"</th><th>"Truncated"</th><th></th></tr></thead>
            <tbody>
                {calls.iter().map(|c| {
                    let n = c.call;
                    view! {
                        <tr data-call=n>
                            <td>{n}</td>
                            <td>{c.round.map(|r| r.to_string())}</td>
                            <td>{c.slots.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")}</td>
                            <td>{c.purpose.clone()}</td>
                            <td>{c.tokens.map(|t| t.to_string())}</td>
                            <td>{match c.truncated { Some(true) => "yes", Some(false) => "no", None => "–" }}</td>
                            <td><button class="open-call" on:click=move |_| open.set(Some(n))>"reasoning"</button></td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
        <Transition fallback=|| ()>
            {move || detail.get().flatten().map(|res| match res {
                Err(e) => view! { <p class="error call-error">{e.to_string()}</p> }.into_any(),
                Ok(c) => view! {
                    <div class="call-detail" data-call=c.call>
                        <h3>{format!("Call {}", c.call)}</h3>
                        <h4>"Reasoning"</h4>
                        <pre class="reasoning">{c.record.get("reasoning").and_then(|r| r.as_str()).unwrap_or("(none recorded)").to_owned()}</pre>
                        <h4>"Reply"</h4>
                        <pre class="reply">{pretty(c.record.get("reply").unwrap_or(&serde_json::Value::Null))}</pre>
                        <h4>"Tokens"</h4>
                        <pre>{pretty(c.record.get("tokens").unwrap_or(&serde_json::Value::Null))}</pre>
                    </div>
                }.into_any(),
            })}
        </Transition>
    }
    .into_any()
}

fn memory(v: &RunView) -> impl IntoView {
    if v.memory.is_empty() {
        return view! { <p class="empty">"No memory versions."</p> }.into_any();
    }
    view! {
        <div class="memory">
            {v.memory.iter().rev().map(|m| view! {
                <details class="memory-version" data-round=m.round>
                    <summary>{format!("Before round {}", m.round)}</summary>
                    {match &m.diff {
                        Some(lines) => view! {
                            <pre class="diff">
                                {lines.iter().map(|l| match l {
                                    DiffLine::Same(t) => view! { <span class="same">{format!("  {t}\n")}</span> }.into_any(),
                                    DiffLine::Added(t) => view! { <span class="added">{format!("+ {t}\n")}</span> }.into_any(),
                                    DiffLine::Removed(t) => view! { <span class="removed">{format!("- {t}\n")}</span> }.into_any(),
                                }).collect_view()}
                            </pre>
                        }.into_any(),
                        None => view! { <pre class="text">{m.text.clone()}</pre> }.into_any(),
                    }}
                </details>
            }).collect_view()}
        </div>
    }
    .into_any()
}

/// The tabs read from the trials together (refusal groups, collisions, map).
#[component]
fn Analysis(name: String, tab: String, version: String) -> impl IntoView {
    let analysis = Resource::new(move || (name.clone(), version.clone()), |(n, _)| get_analysis(n));
    view! {
        <Transition fallback=|| view! { <p class="loading">"Reading the trials…"</p> }>
            {
                let tab = tab.clone();
                move || analysis.get().map(|res| match res {
                    Err(e) => view! { <p class="error">{e.to_string()}</p> }.into_any(),
                    Ok(a) => match tab.as_str() {
                        "refusals" => refusals(&a).into_any(),
                        "collisions" => collisions_table(&a).into_any(),
                        _ => admission_map(&a).into_any(),
                    },
                })
            }
        </Transition>
    }
}

fn refusals(a: &RunAnalysis) -> impl IntoView {
    if a.refusals.is_empty() {
        return view! { <p class="empty">"No unscored trials."</p> }.into_any();
    }
    view! {
        <table class="refusals">
            <thead><tr><th>"Stage"</th><th>"Reason"</th><th>"Trials"</th><th>"As written"</th></tr></thead>
            <tbody>
                {a.refusals.iter().map(|g| view! {
                    <tr class="refusal-group">
                        <td>{g.stage.clone()}</td>
                        <td>{g.reason.clone()}</td>
                        <td>{g.trials}</td>
                        <td><details><summary>"examples"</summary><ul>{g.examples.iter().map(|e| view! { <li>{e.clone()}</li> }).collect_view()}</ul></details></td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

fn collisions_table(a: &RunAnalysis) -> impl IntoView {
    if a.collisions.is_empty() {
        return view! { <p class="empty">"No collisions."</p> }.into_any();
    }
    view! {
        <table class="collisions">
            <thead><tr><th>"Kind"</th><th>"Round"</th><th>"Trial"</th><th>"With"</th><th>"Refusal"</th></tr></thead>
            <tbody>
                {a.collisions.iter().map(|c| view! {
                    <tr class="collision">
                        <td>{match c.kind { CollisionKind::Code => "code", CollisionKind::Ranking => "ranking" }}</td>
                        <td>{c.round}</td>
                        <td>{c.trial.clone()}</td>
                        <td>{c.with.join(", ")}</td>
                        <td>{c.reason.clone()}</td>
                    </tr>
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

/// t (vertical) against the largest absolute correlation (horizontal), one dot per
/// scored trial, with the latest t threshold and the correlation limit as lines.
fn admission_map(a: &RunAnalysis) -> impl IntoView {
    const W: f64 = 560.0;
    const H: f64 = 320.0;
    const PAD: f64 = 40.0;
    if a.map.is_empty() {
        return view! { <p class="empty">"No scored trials yet."</p> }.into_any();
    }
    let threshold = a.thresholds.iter().rev().find_map(|(_, t)| *t);
    let (t_min, t_max) = a
        .map
        .iter()
        .fold((threshold.unwrap_or(0.0).min(0.0), threshold.unwrap_or(1.0)), |(lo, hi), p| (lo.min(p.t), hi.max(p.t)));
    let span = (t_max - t_min).max(1e-9);
    let x = move |c: f64| PAD + c.clamp(0.0, 1.0) * (W - 2.0 * PAD);
    let y = move |t: f64| H - PAD - (t - t_min) / span * (H - 2.0 * PAD);
    let limit = a.correlation_limit;
    view! {
        <svg class="admission-map" viewBox=format!("0 0 {W} {H}") width=W height=H role="img"
             aria-label="admission map: t against largest absolute correlation">
            <rect x=PAD y=PAD / 2.0 width=W - 2.0 * PAD height=H - 1.5 * PAD fill="none" stroke="#d8dbdf"/>
            <text x=W / 2.0 y=H - 8.0 text-anchor="middle" font-size="12">"largest |correlation| with an existing factor"</text>
            <text x=PAD y=H - PAD + 14.0 text-anchor="middle" font-size="11">"0"</text>
            <text x=W - PAD y=H - PAD + 14.0 text-anchor="middle" font-size="11">"1"</text>
            <text x=PAD - 4.0 y=y(t_max) + 4.0 text-anchor="end" font-size="11">{format!("{t_max:.1}")}</text>
            <text x=PAD - 4.0 y=y(t_min) text-anchor="end" font-size="11">{format!("{t_min:.1}")}</text>
            <text x=12 y=H / 2.0 font-size="12" transform=format!("rotate(-90 12 {})", H / 2.0) text-anchor="middle">"partial-IC t"</text>
            {threshold.map(|t| view! {
                <line class="threshold" x1=PAD x2=W - PAD y1=y(t) y2=y(t) stroke="#9a6700" stroke-dasharray="4 3"/>
                <text x=W - PAD y=y(t) - 4.0 text-anchor="end" font-size="11">{format!("t threshold {t:.2}")}</text>
            })}
            {limit.map(|c| view! {
                <line class="limit" x1=x(c) x2=x(c) y1=PAD / 2.0 y2=H - PAD stroke="#cf222e" stroke-dasharray="4 3"/>
                <text x=x(c) + 4.0 y=PAD / 2.0 + 12.0 font-size="11">{format!("limit {c:.2}")}</text>
            })}
            {a.map.iter().map(|p| view! {
                <circle class=if p.accepted { "point accepted" } else { "point refused" } cx=x(p.max_abs_corr) cy=y(p.t) r=4
                        fill=if p.accepted { "#1a7f37" } else { "#57606a" } fill-opacity="0.75">
                    <title>{format!("{} (round {}): t {:.2}, |corr| {:.2}, {}", p.trial.clone().unwrap_or_default(), p.round, p.t, p.max_abs_corr, if p.accepted { "accepted" } else { "refused" })}</title>
                </circle>
            }).collect_view()}
        </svg>
        <p class="legend">"Green: accepted. Grey: refused. Dashed: the latest t threshold and the correlation limit."</p>
    }
    .into_any()
}
