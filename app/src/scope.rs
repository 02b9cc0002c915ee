//! The scope bar: one filter (factors, tags, dates — see
//! `runboard::results::scope`) that the evidence, timing and report views
//! share. It lives in the URL as `?scope=`, so a view's state can be linked,
//! and the navigation carries it from one results view to the next.

use leptos::prelude::*;
use leptos_router::hooks::query_signal;

/// The scope in the URL, and a setter that writes it back (empty clears it).
pub fn use_scope() -> (Memo<Option<String>>, SignalSetter<Option<String>>) {
    query_signal::<String>("scope")
}

/// The text box: applies on Enter or the button; a refused scope shows its
/// reasons where the view's error is shown.
#[component]
pub fn ScopeBar() -> impl IntoView {
    let (scope, set_scope) = use_scope();
    let text = RwSignal::new(scope.get_untracked().unwrap_or_default());
    // Follow the URL when it changes elsewhere (back, a link).
    Effect::new(move |_| text.set(scope.get().unwrap_or_default()));
    let apply = move || {
        let t = text.get_untracked().trim().to_owned();
        set_scope.set((!t.is_empty()).then_some(t));
    };
    view! {
        <form class="scope-bar" on:submit=move |ev| { ev.prevent_default(); apply(); }>
            <label>"Scope "
                <input type="text" name="scope" size="48" placeholder="task=t1,t2 model=m1 tag=nightly from=2026-11-01 to=2026-11-30"
                    prop:value=move || text.get() on:input=move |ev| text.set(event_target_value(&ev))/>
            </label>
            <button type="submit">"Apply"</button>
            <button type="button" class="clear" on:click=move |_| { text.set(String::new()); set_scope.set(None); }>"Everything"</button>
        </form>
    }
}

/// `path` with the current scope (and nothing else) in its query.
pub fn with_scope(path: &str, scope: Option<&str>) -> String {
    match scope.filter(|s| !s.trim().is_empty()) {
        Some(s) => format!("{path}?scope={}", crate::url::encode(s)),
        None => path.to_owned(),
    }
}
