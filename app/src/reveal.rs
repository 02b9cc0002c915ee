//! Bringing what the reader just opened into view: detail drawn where the
//! click happened is scrolled to (smoothly, only as far as needed) and
//! marked for a moment, so an answer never appears out of sight.

/// Scrolls the element with `id` into view and highlights it briefly (the
/// `revealed` class, see `style/main.css`). Does nothing on the server or
/// when no such element exists yet.
pub fn reveal(id: &str) {
    #[cfg(feature = "hydrate")]
    {
        let id = id.to_owned();
        // After the view has drawn the element (the next frame).
        leptos::prelude::request_animation_frame(move || {
            let Some(el) = web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(&id)) else {
                return;
            };
            // Its top at the top of the window: the reader sees what they
            // asked for from its first line.
            el.scroll_into_view_with_bool(true);
            let _ = el.class_list().add_1("revealed");
        });
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = id;
}

/// Reveals `id` whenever `chosen` changes to something after the page was
/// first drawn (a round picked, a call opened) — not on the first draw, where
/// the reader has not asked for anything yet.
pub fn reveal_on_change<T: PartialEq + Clone + Send + Sync + 'static>(
    chosen: impl Fn() -> Option<T> + Send + Sync + 'static,
    id: &'static str,
) {
    #[cfg(feature = "hydrate")]
    leptos::prelude::Effect::new(move |prev: Option<Option<T>>| {
        let now = chosen();
        if prev.is_some_and(|p| p != now) && now.is_some() {
            reveal(id);
        }
        now
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (chosen, id);
}
