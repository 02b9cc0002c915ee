//! The Runs view: every run directory under the campaign root, latest written
//! first, with its status in words, a page of [`PAGE`] rows at a time. Filters
//! and the page live in the URL (`?q=…&status=…&page=…`) so a filtered list can
//! be linked; the server filters and pages (a campaign of 10,000 runs sends one
//! page). The list follows the disk: the server pushes the cheap list version
//! when it changes (looked at every 2 s) and the page re-reads only then.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::basics::timefmt::ago;
use runboard::runview::listing::STATUSES;
use runboard::runview::RunRow;

use crate::api;
use crate::api::ListParams;
use crate::ui::loaded;

/// Rows per page.
pub const PAGE: usize = 100;

#[component]
pub fn RunsPage() -> impl IntoView {
    let refresh = RwSignal::new(0u64);
    let (query, set_query) = query_signal::<String>("q");
    let (status, set_status) = query_signal::<String>("status");
    let (page, set_page) = query_signal::<usize>("page");
    let runs = crate::codec::resource(
        move || (refresh.get(), query.get(), status.get(), page.get().unwrap_or(0)),
        |(_, q, status, page)| {
            api::runs(ListParams {
                status,
                q,
                sort: None,
                offset: Some((page * PAGE).to_string()),
                limit: Some(PAGE.to_string()),
            })
        },
    );

    crate::ui::refresh_on(runboard::api::streams::RUNS_VERSION, refresh, move || {
        runs.try_get_untracked().map(|r| r.and_then(Result::ok).map(|l| l.version))
    });

    view! {
        <section class="runs">
            <div class="toolbar">
                <h1>"Runs"</h1>
                <input
                    type="search"
                    class="filter"
                    placeholder="filter by path, model or status"
                    prop:value=move || query.get().unwrap_or_default()
                    on:input=move |ev| {
                        let v = event_target_value(&ev);
                        set_page.set(None);
                        set_query.set(if v.is_empty() { None } else { Some(v) });
                    }
                />
                <select
                    class="status-filter"
                    on:change=move |ev| {
                        let v = event_target_value(&ev);
                        set_page.set(None);
                        set_status.set(if v.is_empty() { None } else { Some(v) });
                    }
                    prop:value=move || status.get().unwrap_or_default()
                >
                    <option value="">"any status"</option>
                    {STATUSES.map(|s| view! { <option value=s>{s}</option> })}
                </select>
            </div>
            {loaded(runs, "Reading runs…", "Could not list runs", move |list| {
                let (matching, total, offset) = (list.matching, list.total, list.offset);
                let rows = list.runs;
                let now = list.generated_at;
                let skipped = list.skipped;
                let from_cache = list.from_cache;
                let shown = if rows.is_empty() { String::new() } else { format!(" (showing {}–{})", offset + 1, offset + rows.len()) };
                let pages = matching.div_ceil(PAGE).max(1);
                let current = offset / PAGE;
                view! {
                    <p class="count" data-count=matching>
                        {format!("{matching} of {total} runs{shown}")}
                    </p>
                    {from_cache.map(|saved| view! {
                        <p class="note from-cache" title=saved.to_display()>
                            {format!("Listed as saved {} (before this server started); checking every run against its files — the list updates when done.", ago(saved, now))}
                        </p>
                    })}
                    {(pages > 1).then(|| crate::ui::pager(current, pages, ("← newer", "older →"), format!("page {} of {pages}", current + 1),
                        crate::ui::PageTo::Query { set: set_page, per_page: 1 }))}
                    {if rows.is_empty() {
                        view! { <p class="empty">"No run directories match. A run directory is any folder holding snapshot.json."</p> }.into_any()
                    } else {
                        view! {
                            <table class="run-list">
                                <thead><tr>
                                    <th>"Run"</th><th>"Path"</th><th>"Last written"</th>
                                    <th>"Status"</th><th>"Rounds"</th><th>"Phase"</th><th>"Model"</th>
                                </tr></thead>
                                <tbody>
                                    {rows.into_iter().map(|r| run_row(r, now)).collect_view()}
                                </tbody>
                            </table>
                        }.into_any()
                    }}
                    {(!skipped.is_empty()).then(|| view! {
                        <details class="skipped">
                            <summary>{format!("{} folders could not be searched", skipped.len())}</summary>
                            <ul>{skipped.into_iter().map(|s| view! { <li><code>{s.path}</code>": "{s.reason}</li> }).collect_view()}</ul>
                        </details>
                    })}
                }.into_any()

            })}
        </section>
    }
}

fn run_row(r: RunRow, now: runboard::Timestamp) -> impl IntoView {
    let label = r.status.label();
    let written = r.last_written.map(|t| (ago(t, now), t.to_display()));
    let rounds = match (r.rounds_written, r.rounds_planned) {
        (Some(w), Some(p)) => format!("{w} / {p}"),
        (Some(w), None) => w.to_string(),
        (None, Some(p)) => format!("0 / {p}"),
        (None, None) => "–".to_owned(),
    };
    let title = written.as_ref().map(|w| w.1.clone());
    let shown = written.map(|w| w.0).unwrap_or_else(|| "never".to_owned());
    let name = r.name.clone();
    let href = crate::url::run_href(&r.path);
    view! {
        <tr class=format!("run status-{label}") data-run=name data-status=label>
            <td class="name"><a href=href>{r.name}</a></td>
            <td class="path"><code>{r.path}</code></td>
            <td class="written" title=title>{shown}</td>
            <td class="status">
                {crate::ui::badge(label)}
                " "
                <span class="why">{r.status_text}</span>
            </td>
            <td class="rounds">{rounds}</td>
            <td class="phase">{r.phase.unwrap_or_default()}</td>
            <td class="model">{r.model.unwrap_or_default()}</td>
        </tr>
    }
}
