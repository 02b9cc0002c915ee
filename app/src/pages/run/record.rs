//! The tabs that show what the run recorded as it went: its LLM calls (each
//! call's reasoning on demand) and its memory versions with their line diffs.
//! Which call or version is open lives in the URL (`?tab=calls&call=N`,
//! `?tab=memory&round=N`), so it stays open while a live run refreshes the page
//! and can be linked.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;
use runboard::runview::diff::DiffLine;
use runboard::runview::view::{CallEvent, MemoryVersion};

use super::pretty;
use crate::api;
use crate::ui::loaded;

#[component]
pub(super) fn CallsTab(name: String, version: Signal<String>) -> impl IntoView {
    let (open, _) = query_signal::<u32>("call");
    let run = name.clone();
    let calls =
        crate::codec::resource(move || (run.clone(), version.get()), |(n, _)| api::run_calls(api::RunName { name: n }));
    // A call file is written once, whole: its detail does not follow the version.
    let detail = crate::codec::resource(
        move || (name.clone(), open.get()),
        |(run, n)| async move {
            match n {
                Some(n) => Some(api::run_call(api::RunCall { name: run, call: n.to_string() }).await),
                None => None,
            }
        },
    );
    // The detail opens right under the row that was clicked (never after the
    // whole table, out of sight), and is brought into view.
    let shown_detail = move || {
        view! {
            <Transition fallback=|| crate::ui::loading("Reading the call…")>
                {move || detail.get().flatten().map(|res| match res {
                    Err(e) => view! { <p class="error call-error">{e.to_string()}</p> }.into_any(),
                    Ok(c) => view! {
                        <div class="call-detail" id="call-detail" data-call=c.call>
                            <h3>{format!("Call {}", c.call)}" "<a class="close" href="?tab=calls">"close"</a></h3>
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
    };
    // Brought into view once it is drawn (it loads after the click).
    crate::reveal::reveal_on_change(move || detail.get().flatten().and_then(Result::ok).map(|c| c.call), "call-detail");
    view! {
        {loaded(calls, "Reading the calls…", "Could not read the calls", move |list| {
            call_table(&list, open.get(), shown_detail).into_any()
        })}
    }
}

fn call_table<V: IntoView + 'static>(
    calls: &[CallEvent],
    open: Option<u32>,
    detail: impl Fn() -> V + Clone + Send + 'static,
) -> impl IntoView {
    if calls.is_empty() {
        return view! { <p class="empty">"No calls recorded in the events."</p> }.into_any();
    }
    view! {
        <table class="calls">
            <thead><tr><th>"Call"</th><th>"Round"</th><th>"Slots"</th><th>"Purpose"</th><th>"Tokens"</th><th>"Truncated"</th><th></th></tr></thead>
            <tbody>
                {calls.iter().map(|c| {
                    let n = c.call;
                    let is_open = open == Some(n);
                    let detail = detail.clone();
                    view! {
                        <tr data-call=n class:open=is_open id=is_open.then_some("call-row-open")>
                            <td>{n}</td>
                            <td>{c.round.map(|r| r.to_string())}</td>
                            <td>{c.slots.iter().map(|s| s.to_string()).collect::<Vec<_>>().join(", ")}</td>
                            <td>{c.purpose.clone()}</td>
                            <td class="num">{c.tokens.map(runboard::basics::numfmt::thousands)}</td>
                            <td>{match c.truncated { Some(true) => "yes", Some(false) => "no", None => "–" }}</td>
                            <td><a class="open-call" href=format!("?tab=calls&call={n}")>"reasoning"</a></td>
                        </tr>
                        {is_open.then(|| view! { <tr class="call-detail-row"><td colspan="7">{detail()}</td></tr> })}
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

#[component]
pub(super) fn MemoryTab(name: String, version: Signal<String>) -> impl IntoView {
    let (round, _) = query_signal::<u32>("round");
    let memory = crate::codec::resource(
        move || (name.clone(), version.get()),
        |(n, _)| api::run_memory(api::RunName { name: n }),
    );
    view! {
        {loaded(memory, "Reading the memory…", "Could not read the memory", move |versions| {
            memory_view(&versions, round.get()).into_any()
        })}
    }
}

/// The versions as links, and the chosen one (the latest by default) compared
/// line by line with the one before.
fn memory_view(versions: &[MemoryVersion], chosen: Option<u32>) -> impl IntoView {
    let Some(latest) = versions.last() else {
        return view! { <p class="empty">"No memory versions."</p> }.into_any();
    };
    let shown = chosen.and_then(|r| versions.iter().find(|m| m.round == r)).unwrap_or(latest);
    view! {
        <nav class="memory-versions">"Before round: "
            {versions.iter().map(|m| {
                let r = m.round;
                view! { <a href=format!("?tab=memory&round={r}") class:current=r == shown.round data-round=r>{r}</a>" " }
            }).collect_view()}
        </nav>
        <div class="memory-version" data-round=shown.round>
            <h3>{format!("Memory before round {}", shown.round)}</h3>
            {match &shown.diff {
                Some(lines) => view! {
                    <p class="legend">"Compared line by line with the version before."</p>
                    <pre class="diff">
                        {lines.iter().map(|l| match l {
                            DiffLine::Same(t) => view! { <span class="same">{format!("  {t}\n")}</span> }.into_any(),
                            DiffLine::Added(t) => view! { <span class="added">{format!("+ {t}\n")}</span> }.into_any(),
                            DiffLine::Removed(t) => view! { <span class="removed">{format!("- {t}\n")}</span> }.into_any(),
                        }).collect_view()}
                    </pre>
                }.into_any(),
                None => view! { <pre class="text">{shown.text.clone()}</pre> }.into_any(),
            }}
        </div>
    }
    .into_any()
}
