//! The first visit's guide, on the demo: a short walk through the console
//! — Overview → Coverage → draft → check → launch → Live → Evidence → the
//! proposal guide — each step pointing at the real control (outlined and
//! brought into view). It sits between the header and the page, never over
//! a control, and remembers (in the browser's local storage) the step it is
//! at, or that it was dismissed. The server renders nothing of it: it is
//! drawn once the page has hydrated and read the storage.

use leptos::prelude::*;
use leptos_router::hooks::{use_location, use_navigate};

/// The local-storage key: a step's number, or `dismissed`.
pub const KEY: &str = "runboard.guide";

/// One step: where, what it points at (a CSS selector; the first match that
/// exists), what it says.
pub struct Step {
    pub path: &'static str,
    pub target: &'static str,
    pub title: &'static str,
    pub words: &'static str,
}

pub const STEPS: [Step; 8] = [
    Step {
        path: "/",
        target: "section.overview dl.totals",
        title: "The Overview",
        words: "Where the campaign stands: cells covered and failed, progress over time, the latest batches, and what needs your attention (each item links to where it is dealt with).",
    },
    Step {
        path: "/coverage",
        target: "table.coverage-grid",
        title: "Coverage",
        words: "Every planned cell of the matrix: covered, running, failed or a gap, on a grid of two factors you choose.",
    },
    Step {
        path: "/coverage",
        target: "form.draft-form",
        title: "Draft the next batch",
        words: "Choose cells by factor, a model and endpoint, how many; Preview shows the draft and its predicted cost, Save writes it under specs/drafts/.",
    },
    Step {
        path: "/coverage",
        target: "div.launching",
        title: "Check, then launch",
        words: "Check runs the preflight (the driver's doctor, the catalogue, daily caps, the budget) and lists every refusal; Launch starts the batch through the one launch path, asking first when it spends money or re-runs cells.",
    },
    Step {
        path: "/live",
        target: "div.live-state",
        title: "Live",
        words: "The batch's true state — starting, running, stopped but resumable, aborted, failed to launch and why — every cell, tokens, cost and time left. Pause, Stop and abort and Resume are here, and each asks before it ends anything.",
    },
    Step {
        path: "/evidence",
        target: "table.comparisons",
        title: "Evidence",
        words: "What the ended cells say: pass rates with 95 % intervals, each condition's difference to the baseline, the paired view where the same cells ran under both, and where failures fall.",
    },
    Step {
        path: "/next",
        target: "ol.proposals",
        title: "What to run next",
        words: "The proposal guide ranks the batches whose cells would most narrow an open difference, with their cost and time; Draft it saves one, then check and launch it as before.",
    },
    Step {
        path: "/next",
        target: "nav a[href='/next']",
        title: "That is the tour",
        words: "Every page is in the navigation above. Your campaign is served with scripts/run.sh --root DIR; runboard init DIR starts one from an example.",
    },
];

/// The step to show from what the storage holds: none once dismissed.
pub fn step_from(stored: Option<&str>) -> Option<usize> {
    match stored {
        None => Some(0),
        Some("dismissed") => None,
        Some(n) => Some(n.parse::<usize>().ok().filter(|i| *i < STEPS.len()).unwrap_or(0)),
    }
}

#[cfg(feature = "hydrate")]
fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

fn remember(value: &str) {
    #[cfg(feature = "hydrate")]
    if let Some(s) = storage() {
        let _ = s.set_item(KEY, value);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = value;
}

/// Brings the first element matching `target` into view, looking again for
/// a few seconds while the page loads its data. (The outline is a style rule
/// the guide draws, so it survives the page drawing the element again.)
fn point(target: Option<&'static str>) {
    #[cfg(feature = "hydrate")]
    {
        fn attempt(target: &'static str, tries: u32) {
            let found =
                web_sys::window().and_then(|w| w.document()).and_then(|d| d.query_selector(target).ok().flatten());
            match found {
                Some(el) => el.scroll_into_view_with_bool(false),
                None if tries > 0 => leptos::prelude::set_timeout(
                    move || attempt(target, tries - 1),
                    std::time::Duration::from_millis(250),
                ),
                None => {}
            }
        }
        if let Some(t) = target {
            attempt(t, 20);
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = target;
}

/// The guide, shown on the demo until dismissed.
#[component]
pub fn Guide(demo: bool) -> impl IntoView {
    let step = RwSignal::new(None::<usize>);
    // In the browser only: read where the reader left the guide.
    #[cfg(not(feature = "hydrate"))]
    let _ = demo;
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if demo {
            let stored = storage().and_then(|s| s.get_item(KEY).ok().flatten());
            step.set(step_from(stored.as_deref()));
        }
    });
    let location = use_location();
    let pathname = location.pathname;
    Effect::new(move |_| {
        let path = pathname.get();
        point(step.get().map(|i| &STEPS[i]).filter(|s| s.path == path).map(|s| s.target));
    });
    let navigate = use_navigate();
    let go = move |to: usize| {
        remember(&to.to_string());
        step.set(Some(to));
        if pathname.get_untracked() != STEPS[to].path {
            navigate(STEPS[to].path, Default::default());
        }
    };
    let dismiss = move || {
        remember("dismissed");
        step.set(None);
    };
    view! {
        {move || step.get().map(|i| {
            let s = &STEPS[i];
            let last = i + 1 == STEPS.len();
            let (back, next) = (go.clone(), go.clone());
            view! {
                <aside class="guide" role="dialog" aria-label="A walk through the console" data-step=i>
                    // The step's control outlined by a rule of its own: it
                    // holds while the page redraws the control (a live update).
                    {move || (pathname.get() == s.path).then(|| view! {
                        <style>{format!("{} {{ outline: 3px solid #d4a72c; outline-offset: 3px; }}", s.target)}</style>
                    })}
                    <p class="guide-step">{format!("Guide, step {} of {}: ", i + 1, STEPS.len())}<strong>{s.title}</strong></p>
                    <p class="guide-words">{s.words}</p>
                    <div class="guide-controls">
                        {(i > 0).then(|| view! { <button type="button" class="guide-back" on:click=move |_| back(i - 1)>"Back"</button> })}
                        {(!last).then(|| view! { <button type="button" class="guide-next" on:click=move |_| next(i + 1)>"Next"</button> })}
                        <button type="button" class="guide-dismiss" on:click=move |_| dismiss()>{if last { "Finish" } else { "Dismiss the guide" }}</button>
                    </div>
                </aside>
            }
        })}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_storage_says_where_the_guide_is() {
        assert_eq!(step_from(None), Some(0), "a first visit starts it");
        assert_eq!(step_from(Some("dismissed")), None);
        assert_eq!(step_from(Some("3")), Some(3));
        assert_eq!(step_from(Some("99")), Some(0), "a step that is not there starts again");
        assert_eq!(step_from(Some("x")), Some(0));
        // The walk the issue names, in order.
        let paths: Vec<&str> = STEPS.iter().map(|s| s.path).collect();
        assert_eq!(paths, ["/", "/coverage", "/coverage", "/coverage", "/live", "/evidence", "/next", "/next"]);
    }
}
