//! A run's page, `/runs/<name>?tab=…`: summary, rounds and trials (filtered, a
//! page at a time), the round in progress, calls (with each call's reasoning on
//! demand), accepted factors, the admission map, refusal groups, collisions, the
//! diagnosis, a trial's lineage, trial graphs, memory versions with their line
//! diffs, and acceptance reports. Every tab is a URL. It follows a live run: the
//! server pushes the run's version when the run writes (looked at every 250 ms,
//! `stat` only) and what the tab shows is re-read only then.

mod charts;
mod evidence;
mod record;
mod rounds;

use leptos::prelude::*;
use leptos_router::hooks::{query_signal, use_params_map};
use runboard::runview::analysis::{CollisionKind, RunAnalysis};
use runboard::runview::view::RunView;

use crate::api;
use crate::chart::ChartFigure;

const TABS: [(&str, &str); 13] = [
    ("summary", "Summary"),
    ("rounds", "Rounds"),
    ("progress", "In progress"),
    ("calls", "Calls"),
    ("accepted", "Accepted"),
    ("map", "Admission map"),
    ("refusals", "Refusals"),
    ("collisions", "Collisions"),
    ("diagnosis", "Diagnosis"),
    ("lineage", "Lineage"),
    ("graph", "Trial graph"),
    ("memory", "Memory"),
    ("reports", "Reports"),
];

#[component]
pub fn RunPage() -> impl IntoView {
    let params = use_params_map();
    let name = Memo::new(move |_| params.read().get("name").unwrap_or_default());
    let refresh = RwSignal::new(0u64);
    let view = crate::codec::resource(move || (name.get(), refresh.get()), |(n, _)| api::run(api::RunName { name: n }));
    let (tab, _) = query_signal::<String>("tab");
    // Whether the run could be read (it changes only between read and
    // refused), apart from what it holds now (which changes at every write).
    let loaded = Memo::new(move |_| view.get().map(|r| r.map(|_| ())));
    let current = Memo::new(move |_| view.get().and_then(Result::ok));
    let version =
        Signal::derive(move || current.with(|v| v.as_ref().map(|v| v.row.version.clone()).unwrap_or_default()));
    let written = Signal::derive(move || current.with(|v| v.as_ref().map_or(0, |v| v.rounds_written)));
    // Set when the server says the followed run's folder disappeared.
    let gone = RwSignal::new(false);

    // Follows the run by push: re-subscribed when the page moves to another run.
    #[cfg(feature = "hydrate")]
    Effect::new(move |_| {
        let url = runboard::api::streams::run_version(&crate::url::encode(&name.get()));
        crate::live::follow(
            &url,
            move || view.try_get_untracked().map(|r| r.and_then(Result::ok).map(|v| v.row.version)),
            move || {
                refresh.try_update(|x| *x += 1);
            },
            move || {
                gone.try_set(true);
            },
        );
    });

    view! {
        <section class="run">
            <p class="crumbs"><a href="/runs">"Runs"</a>" / "<strong>{move || name.get()}</strong></p>
            <nav class="tabs">
                {TABS.map(|(key, label)| {
                    let href = move || format!("{}?tab={key}", crate::url::run_href(&name.get()));
                    let current = move || tab.get().unwrap_or_else(|| "summary".into()) == key;
                    view! { <a href=href class:current=current data-tab=key>{label}</a> }
                })}
            </nav>
            <Show when=move || gone.get()>
                <p class="gone" role="alert">
                    "This run is no longer on disk: its folder was removed or renamed while this page followed it. "
                    <a href="/runs">"Back to the runs"</a>
                </p>
            </Show>
            <Transition fallback=|| crate::ui::loading("Reading the run…")>
                // Read here so the server waits for the run before it renders
                // (the memos below are owned outside this Transition); it
                // draws nothing, so following the run costs nothing here.
                {move || view.get().map(|_| ())}
                // Made again only when the tab, the run or whether it could be
                // read changes — never because the run wrote: each tab follows
                // `version` itself and re-reads in place, keeping the reader's
                // scroll and what they typed.
                {move || loaded.get().map(|res| match res {
                    Err(e) => crate::ui::failure("Could not read the run", &e),
                    Ok(()) => {
                        let t = tab.get().unwrap_or_else(|| "summary".into());
                        let n = name.get();
                        view! {
                            <div class="tab-body" data-version=move || version.get()>
                                {match t.as_str() {
                                    "rounds" => view! { <rounds::RoundsTab name=n version=version written=written/> }.into_any(),
                                    "progress" => (move || current.get().map(|v| progress(&v))).into_any(),
                                    "calls" => view! { <record::CallsTab name=n version=version/> }.into_any(),
                                    "accepted" => view! { <evidence::AcceptedTab name=n version=version/> }.into_any(),
                                    "memory" => view! { <record::MemoryTab name=n version=version/> }.into_any(),
                                    "lineage" => view! { <evidence::LineageTab name=n version=version/> }.into_any(),
                                    "graph" => view! { <charts::TrialGraphs name=n version=version/> }.into_any(),
                                    "reports" => view! { <evidence::Reports name=n version=version/> }.into_any(),
                                    "map" | "refusals" | "collisions" | "diagnosis" => view! { <Analysis name=n tab=t version=version/> }.into_any(),
                                    _ => (move || current.get().map(|v| summary(&v))).into_any(),
                                }}
                            </div>
                        }.into_any()
                    }
                })}
            </Transition>
        </section>
    }
}

pub(super) fn pretty(v: &serde_json::Value) -> String {
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
            <dt>"Status"</dt><dd class="status">{crate::ui::badge(label)}" "{r.status_text.clone()}</dd>
            <dt>"Phase"</dt><dd class="phase">{r.phase.clone().unwrap_or_else(|| "–".into())}</dd>
            <dt>"Process"</dt><dd class="process">{process}</dd>
            <dt>"Model"</dt><dd>{r.model.clone().unwrap_or_else(|| "–".into())}</dd>
            <dt>"Rounds written"</dt><dd class="rounds-written">{r.rounds_written.map(|n| n.to_string()).unwrap_or_else(|| "0".into())}{r.rounds_planned.map(|p| format!(" of {p}"))}</dd>
            <dt>"Calls"</dt><dd class="calls-total">{v.calls_total}</dd>
            <dt>"Calls this round"</dt><dd class="calls-in-progress">{v.calls_in_progress.map(|n| n.to_string()).unwrap_or_else(|| "–".into())}</dd>
            <dt>"Tokens"</dt><dd class="tokens-total">{v.tokens_total}</dd>
            <dt>"Path"</dt><dd><code>{r.path.clone()}</code></dd>
        </dl>
        {(!v.problems.is_empty()).then(|| view! {
            <div class="problems">
                <h3>"Parts that could not be read"</h3>
                <ul>{v.problems.iter().map(|p| view! { <li class="problem"><code>{p.part.clone()}</code>": "{p.reason.clone()}</li> }).collect_view()}</ul>
            </div>
        })}
        <h3>"Admission"</h3>
        <dl class="facts admission">
            <dt>"Correlation limit"</dt><dd class="correlation-limit">{v.correlation_limit.map(|c| format!("{c:.2}")).unwrap_or_else(|| "not given by the run".into())}</dd>
            <dt>"Least coverage"</dt><dd>{format!("{:.2}", v.admission_limits.min_coverage)}</dd>
            <dt>"Least monotonicity"</dt><dd>{format!("{:.2}", v.admission_limits.min_monotonicity)}</dd>
            <dt>"Limits from"</dt><dd class="limits-source">{match v.admission_limits.source {
                runboard::runview::admission::LimitsSource::LastOpen => "the run's last open",
                runboard::runview::admission::LimitsSource::Defaults => "the defaults (the run does not say)",
            }}</dd>
            <dt>"Intraday operators"</dt><dd class="session-operators">{if v.session_operators.is_empty() { "none (no intraday dataset)".to_owned() } else { v.session_operators.iter().cloned().collect::<Vec<_>>().join(", ") }}</dd>
            <dt>"Accepted factors"</dt><dd class="accepted-count">{v.accepted_count}</dd>
        </dl>
        <h3>"Settings (snapshot)"</h3>
        <pre class="settings">{pretty(&v.snapshot_settings)}</pre>
        {v.opened_with.as_ref().map(|s| view! { <h3>"Opened with"</h3><pre class="opened-with">{pretty(s)}</pre> })}
    }
}

/// A number as the tables show it: two decimals, or a dash for none.
pub(super) fn num(x: Option<f64>) -> String {
    x.map(|f| format!("{f:.2}")).unwrap_or_else(|| "–".into())
}

fn progress(v: &RunView) -> impl IntoView {
    match &v.in_progress {
        // Without events there is no plan to replay, only the calls made since the
        // last written round, counted from the call files.
        None if !v.has_events => view! {
            <p class="empty no-events">{format!(
                "This run writes no events, so its round in progress cannot be replayed: {} calls since its last written round (counted from its call files).",
                v.calls_in_progress.unwrap_or(0)
            )}</p>
        }
        .into_any(),
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

/// The tabs read from the trials together (refusal groups, collisions, map).
#[component]
fn Analysis(name: String, tab: String, version: Signal<String>) -> impl IntoView {
    let analysis = crate::codec::resource(
        move || (name.clone(), version.get()),
        |(n, _)| api::run_analysis(api::RunName { name: n }),
    );
    view! {
        <Transition fallback=|| crate::ui::loading("Reading the trials…")>
            {
                let tab = tab.clone();
                move || analysis.get().map(|res| match res {
                    Err(e) => crate::ui::failure("Could not read the trials", &e),
                    Ok(a) => match tab.as_str() {
                        "refusals" => refusals(&a).into_any(),
                        "collisions" => collisions_table(&a).into_any(),
                        "diagnosis" => evidence::diagnosis(&a).into_any(),
                        _ => view! {
                            <ChartFigure chart=a.admission_chart.clone() empty="No scored trials yet." class="admission-map"/>
                            <p class="legend">"Dashed: the latest t threshold and the correlation limit."</p>
                        }.into_any(),
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
