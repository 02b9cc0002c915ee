//! Following files that change on disk, by push: the server sends a cheap
//! version token (server-sent events) each time what a page shows is written,
//! and the page re-reads its data only when the token differs from what it
//! shows. The browser reconnects a dropped stream by itself.

/// While the calling component (or effect) lives, listens to the version stream
/// at `url` and calls `changed()` when a pushed version differs from `shown()`.
/// When the stream says what it follows is `gone` (its folder was removed or
/// renamed), calls `gone()` and then `changed()`, and closes the stream (the
/// browser would otherwise reconnect to a 404). `shown()` returns `None` once
/// the page's signals are gone. The stream is closed on cleanup.
#[cfg(feature = "hydrate")]
pub fn follow(
    url: &str,
    shown: impl Fn() -> Option<Option<String>> + 'static,
    changed: impl Fn() + 'static,
    gone: impl Fn() + 'static,
) {
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::JsCast;
    let Ok(source) = web_sys::EventSource::new(url) else { return };
    let changed = std::rc::Rc::new(changed);
    let on_version = {
        let changed = changed.clone();
        Closure::<dyn Fn(web_sys::MessageEvent)>::new(move |e: web_sys::MessageEvent| {
            if let Some(shown) = shown() {
                if shown != e.data().as_string() {
                    changed();
                }
            }
        })
    };
    let on_gone = {
        let source = source.clone();
        Closure::<dyn Fn(web_sys::Event)>::new(move |_: web_sys::Event| {
            source.close();
            gone();
            changed();
        })
    };
    let _ = source.add_event_listener_with_callback("version", on_version.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("gone", on_gone.as_ref().unchecked_ref());
    // The browser-side handles are not `Send`; they live and die on this thread.
    let held = send_wrapper::SendWrapper::new((source, on_version, on_gone));
    leptos::prelude::on_cleanup(move || held.take().0.close());
}
