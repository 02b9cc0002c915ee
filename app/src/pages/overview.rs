//! The Overview, the landing page (`/`): the campaign's progress over time
//! (cells covered, failed, running) as a chart, the latest batches, and what
//! needs attention — failed launches, unknown states, holds, closeout
//! backfill, unreadable records — each with a link. Pushed: it is read again
//! whenever the live state changes.

use leptos::prelude::*;
use runboard::results::overview::OverviewView;

use crate::api;
use crate::chart::ChartFigure;
use crate::ui::loaded;

#[component]
pub fn OverviewPage() -> impl IntoView {
    let refresh = RwSignal::new(0u64);
    let overview = crate::codec::resource(move || refresh.get(), |_| api::overview(api::Nothing {}));
    // The overview carries no version of its own: every push (one per
    // change of the live state or the run sets) reads it again.
    crate::ui::refresh_on(runboard::api::streams::LIVE_VERSION, refresh, move || {
        overview.try_get_untracked().map(|_| None)
    });
    view! {
        <section class="overview">
            <h1>"Overview"</h1>
            {loaded(overview, "Reading the campaign…", "Could not read the campaign", move |o| {
                body(&o).into_any()
            })}
        </section>
    }
}

fn body(o: &OverviewView) -> impl IntoView {
    let t = &o.totals;
    view! {
        <p class="live-words"><a href="/live">{o.live_words.clone()}</a></p>
        <dl class="facts totals">
            <dt>"Planned cells"</dt><dd class="planned">{t.planned}</dd>
            <dt>"Covered (done)"</dt><dd class="covered">{t.covered}</dd>
            <dt>"Failed"</dt><dd class="failed">{t.failed}</dd>
            <dt>"Running"</dt><dd class="running">{t.running}</dd>
            <dt>"Run sets"</dt><dd class="run-sets">{t.run_sets}</dd>
        </dl>
        <h2>"Needs attention"</h2>
        {if o.attention.is_empty() {
            view! { <p class="attention-none">"Nothing needs attention."</p> }.into_any()
        } else {
            view! {
                <ul class="attention">
                    {o.attention.iter().map(|a| view! {
                        <li class=format!("attention-item {}", a.kind.word()) data-kind=a.kind.word()>
                            <a href=a.href.clone()>{a.words.clone()}</a>
                        </li>
                    }).collect_view()}
                </ul>
            }.into_any()
        }}
        <ChartFigure chart=o.progress.clone() empty="No cell has started yet: no progress to draw." class="progress-chart"/>
        <h2>"Latest batches"</h2>
        {if o.latest.is_empty() {
            view! { <p class="empty">"No batch has run yet. Draft and launch one from Coverage."</p> }.into_any()
        } else {
            view! {
                <table class="latest">
                    <thead><tr><th>"Run set"</th><th>"Outcome"</th><th>"Cells"</th><th>"Done"</th><th>"Failed"</th><th>"Started"</th></tr></thead>
                    <tbody>
                        {o.latest.iter().map(|r| view! {
                            <tr data-run-set=r.name.clone()>
                                <td><a href=format!("/reports/{}", crate::url::encode(&r.name))>{r.name.clone()}</a></td>
                                <td>{if r.live { "running".to_owned() } else {
                                    r.status.map(runboard::live::outcome_words).map(str::to_owned).unwrap_or_else(|| "no outcome".into())
                                }}</td>
                                <td>{r.planned.unwrap_or(r.cells)}</td>
                                <td>{r.done}</td>
                                <td>{r.failed}</td>
                                <td>{r.started_at.as_deref().map(runboard::basics::timefmt::display_rfc3339).unwrap_or_default()}</td>
                            </tr>
                        }).collect_view()}
                    </tbody>
                </table>
            }.into_any()
        }}
        <p class="hint">"Operational signals (launches, holds) are on the Live and Auto pages; results are on Evidence and Timing."</p>
    }
}
