//! The pages' kit: what every page needs and no page owns.
//!
//! - [`loaded`] — a resource's answer: the loading line while it is first
//!   read (kept on screen while a refresh is under way), its error in words,
//!   else what the page makes of it; [`loading`] and [`failure`] are its
//!   two lines, for a page that reads its answer another way.
//! - [`refusal`] — a refusal with every reason it gave.
//! - [`confirm`] — the browser's confirmation, for a control that ends work
//!   (it names what it ends).
//! - [`badge`] — a state's word as a coloured badge.
//! - [`on_answer`] — what a control does once its action has answered.
//! - [`refresh_on`] — a page's data read again whenever the version stream
//!   it follows says it changed (the stream paths are the core's
//!   `runboard::api::streams`, the router's too).

mod loaded;

pub use loaded::{failure, loaded, loading};

use leptos::prelude::*;

use crate::api::ApiError;

/// A refusal with every reason it gave.
pub fn refusal(e: &ApiError) -> impl IntoView {
    let reasons = if e.reasons.is_empty() { vec![e.error.clone()] } else { e.reasons.clone() };
    view! {
        <div class="refusal" role="alert">
            <strong>"Refused:"</strong>
            <ul>{reasons.into_iter().map(|r| view! { <li class="reason">{r}</li> }).collect_view()}</ul>
        </div>
    }
}

/// Runs `then` with what `action` answered, each time it answers (a
/// control's result said, its page read again).
pub fn on_answer<I, O>(action: Action<I, O>, then: impl Fn(O) + Copy + Send + Sync + 'static)
where
    I: Send + Sync + 'static,
    O: Clone + Send + Sync + 'static,
{
    Effect::new(move |_| {
        if let Some(r) = action.value().get() {
            then(r);
        }
    });
}

/// Asks the reader to confirm (the browser's dialog); on the server, never.
pub fn confirm(question: &str) -> bool {
    #[cfg(feature = "hydrate")]
    {
        web_sys::window().and_then(|w| w.confirm_with_message(question).ok()).unwrap_or(false)
    }
    #[cfg(not(feature = "hydrate"))]
    {
        let _ = question;
        false
    }
}

/// A state's wire word as a badge (`class="badge <word>"`, the word with
/// its underscores as spaces): the stylesheet colours each state.
pub fn badge(word: &str) -> impl IntoView {
    view! { <span class=format!("badge {word}")>{word.replace('_', " ")}</span> }
}

/// While the calling component lives, bumps `refresh` whenever the version
/// stream at `url` pushes a version other than the one `shown()` returns
/// (`Some(None)`: every push; `None`: the page is gone). A page's resources
/// that read `refresh` are read again then. Nothing on the server.
pub fn refresh_on(url: &str, refresh: RwSignal<u64>, shown: impl Fn() -> Option<Option<String>> + 'static) {
    #[cfg(feature = "hydrate")]
    crate::live::follow(
        url,
        shown,
        move || {
            refresh.try_update(|n| *n += 1);
        },
        || {},
    );
    #[cfg(not(feature = "hydrate"))]
    let _ = (url, refresh, shown);
}

/// Where a pager's links lead: a page set in place — its query signal set
/// to the page's first item (`per_page` × the page; none for the first
/// page, so the first page's address is the view's own) —, or the address
/// of a page (a real link, for a view whose page is its URL).
#[derive(Clone, Copy)]
pub enum PageTo {
    Query { set: SignalSetter<Option<usize>>, per_page: usize },
    Href(Callback<usize, String>),
}

/// "← back · what is shown · on →" over `pages` pages, `current` (0-based)
/// shown: each link only where there is a page to go to. `shown` says what
/// is on screen ("page 2 of 9", "cells 101–200 of 950").
pub fn pager(
    current: usize,
    pages: usize,
    words: (&'static str, &'static str),
    shown: String,
    to: PageTo,
) -> impl IntoView {
    let link = move |n: usize, class: &'static str, word: &'static str| {
        match to {
        PageTo::Query { set, per_page } => view! {
            <a class=class href="" on:click=move |ev| { ev.prevent_default(); set.set((n > 0).then_some(n * per_page)); }>{word}</a>
        }
        .into_any(),
        PageTo::Href(href) => view! { <a class=class href=href.run(n)>{word}</a> }.into_any(),
    }
    };
    view! {
        <nav class="pager">
            {(current > 0).then(|| link(current - 1, "prev", words.0))}
            <span class="shown">{format!(" {shown} ")}</span>
            {(current + 1 < pages).then(|| link(current + 1, "next", words.1))}
        </nav>
    }
}
