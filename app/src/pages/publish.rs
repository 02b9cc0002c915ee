//! The Publish view, `/publish`: what was last published, when, its
//! provenance hash and what changed since; a Push button that runs the
//! command `campaign.toml` sets (`[publish] command`), one at a time, and the
//! push's output. The status is read again every 60 s while the page is
//! visible, 1.5 s after a push starts, and every 1.5 s while one runs.

use std::time::Duration;

use leptos::prelude::*;
use runboard::results::publish::{PublishStatus, PushRecord};

use crate::api;
use crate::ui::loaded;

#[component]
pub fn PublishPage() -> impl IntoView {
    let refresh = RwSignal::new(0u64);
    let status = crate::codec::resource(move || refresh.get(), |_| api::publish_status(api::Nothing {}));
    #[cfg(feature = "hydrate")]
    crate::live::every_while_visible(Duration::from_secs(60), move || {
        refresh.try_update(|n| *n += 1);
    });
    let again_soon = move || {
        set_timeout(
            move || {
                refresh.try_update(|n| *n += 1);
            },
            Duration::from_millis(1500),
        )
    };
    // While a push runs, look again shortly.
    Effect::new(move |_| {
        if let Some(Ok(s)) = status.get() {
            if s.running.is_some() {
                again_soon();
            }
        }
    });
    let push = Action::new(|_: &()| api::publish_push(api::Nothing {}));
    Effect::new(move |_| {
        if push.value().get().is_some() {
            again_soon();
        }
    });
    view! {
        <section class="publish">
            <div class="toolbar">
                <h1>"Publish"</h1>
                <button type="button" class="push" on:click=move |_| { push.dispatch(()); }
                    disabled=move || crate::role::viewer() || push.pending().get()>"Push"</button>
            </div>
            {move || push.value().get().map(|r| match r {
                Ok(run) => view! { <p class="said ok">{format!("Push started {}.", run.started_at.to_display())}</p> }.into_any(),
                Err(e) => view! { <p class="said error push-refused">{e.to_string()}</p> }.into_any(),
            })}
            {loaded(status, "Reading the publication status…", "Could not read the status", move |s| {
                body(&s).into_any()
            })}
        </section>
    }
}

fn record(title: &'static str, class: &'static str, r: &PushRecord) -> impl IntoView {
    view! {
        <div class=format!("push-record {class}")>
            <h2>{title}</h2>
            <dl class="facts">
                <dt>"Ended"</dt><dd>{r.ended_at.to_display()}</dd>
                <dt>"How"</dt><dd class="push-words">{r.words()}</dd>
                <dt>"Command"</dt><dd><code>{r.command.join(" ")}</code></dd>
                <dt>"Content hash"</dt><dd class="hash"><code>{r.content_hash.clone()}</code></dd>
                <dt>"Run sets"</dt><dd>{r.run_sets.len()}</dd>
            </dl>
            <pre class="push-output">{if r.output.is_empty() { "(no output)".to_owned() } else { r.output.clone() }}</pre>
        </div>
    }
}

fn body(s: &PublishStatus) -> impl IntoView {
    view! {
        <p class="publish-words">{s.words.clone()}</p>
        <dl class="facts">
            <dt>"Command"</dt><dd>{s.command.as_ref().map(|c| c.join(" ")).unwrap_or_else(|| "not set".into())}</dd>
            <dt>"Time limit"</dt><dd>{format!("{} s", s.timeout_s)}</dd>
            <dt>"Evidence now"</dt><dd>{format!("hash {}, {} run set(s)", s.current_hash, s.current_run_sets.len())}</dd>
            <dt>"Changed since published"</dt><dd class="changed">{if s.changed { "yes" } else { "no" }}</dd>
            {(!s.new_run_sets.is_empty()).then(|| view! { <dt>"New run sets"</dt><dd class="new-run-sets">{s.new_run_sets.join(", ")}</dd> })}
            {(!s.dropped_run_sets.is_empty()).then(|| view! { <dt>"No longer counted"</dt><dd>{s.dropped_run_sets.join(", ")}</dd> })}
        </dl>
        {s.last.as_ref().map(|r| record("The last push", "last", r))}
        {s.published.as_ref().filter(|p| Some(*p) != s.last.as_ref()).map(|r| record("The last publication", "published", r))}
    }
}
