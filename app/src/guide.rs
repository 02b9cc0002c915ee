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

/// What the guide shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shown {
    /// Nothing: dismissed.
    Nothing,
    /// One line offering the walk, on a first visit to a page no step is
    /// about: a page is never covered by a step about another.
    Offer,
    /// A step.
    Step(usize),
}

/// What the guide shows, from what the storage holds and the page: a
/// reader under way goes on where they were; a first visit starts at this
/// page's own first step, or (on a page no step is about) only offers the walk.
pub fn shown_for(stored: Option<&str>, path: &str) -> Shown {
    match stored {
        None => STEPS.iter().position(|s| s.path == path).map_or(Shown::Offer, Shown::Step),
        Some("dismissed") => Shown::Nothing,
        Some(n) => Shown::Step(n.parse::<usize>().ok().filter(|i| *i < STEPS.len()).unwrap_or(0)),
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
    let offer = RwSignal::new(false);
    let location = use_location();
    let pathname = location.pathname;
    // In the browser only: read where the reader left the guide.
    #[cfg(not(feature = "hydrate"))]
    let _ = demo;
    Effect::new(move |_| {
        #[cfg(feature = "hydrate")]
        if demo {
            let stored = storage().and_then(|s| s.get_item(KEY).ok().flatten());
            match shown_for(stored.as_deref(), &pathname.get_untracked()) {
                Shown::Nothing => {}
                Shown::Offer => offer.set(true),
                Shown::Step(i) => step.set(Some(i)),
            }
        }
    });
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
        offer.set(false);
    };
    let start = go.clone();
    view! {
        {move || offer.get().then(|| {
            let start = start.clone();
            view! {
                <aside class="guide guide-offer" aria-label="A walk through the console">
                    <p class="guide-words">"New here? A short guide walks through the console, from the Overview to launching a batch."</p>
                    <div class="guide-controls">
                        <button type="button" class="guide-start" on:click=move |_| { offer.set(false); start(0); }>"Start the guide"</button>
                        <button type="button" class="guide-dismiss" on:click=move |_| dismiss()>"No thanks"</button>
                    </div>
                </aside>
            }
        })}
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
    fn the_storage_and_the_page_say_what_the_guide_shows() {
        assert_eq!(shown_for(None, "/"), Shown::Step(0), "a first visit to the Overview starts it");
        // Issue 40 (item 11): a first visit elsewhere starts at that page's
        // own step, or only offers the walk — never the Overview's step over it.
        assert_eq!(shown_for(None, "/live"), Shown::Step(4));
        assert_eq!(shown_for(None, "/coverage"), Shown::Step(1));
        assert_eq!(shown_for(None, "/runs"), Shown::Offer);
        assert_eq!(shown_for(Some("dismissed"), "/"), Shown::Nothing);
        assert_eq!(shown_for(Some("3"), "/runs"), Shown::Step(3), "a reader under way goes on");
        assert_eq!(shown_for(Some("99"), "/"), Shown::Step(0), "a step that is not there starts again");
        assert_eq!(shown_for(Some("x"), "/"), Shown::Step(0));
        // The walk the issue names, in order.
        let paths: Vec<&str> = STEPS.iter().map(|s| s.path).collect();
        assert_eq!(paths, ["/", "/coverage", "/coverage", "/coverage", "/live", "/evidence", "/next", "/next"]);
    }
}
