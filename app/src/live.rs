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
    use futures_util::future::abortable;
    use futures_util::stream::{select, StreamExt};
    use gloo_net::eventsource::futures::EventSource;

    let Ok(mut source) = EventSource::new(url) else { return };
    let (Ok(versions), Ok(gones)) = (source.subscribe("version"), source.subscribe("gone")) else { return };
    let (task, handle) = abortable(async move {
        let mut events = select(versions, gones);
        while let Some(Ok((kind, event))) = events.next().await {
            if kind == "gone" {
                gone();
                changed();
                break;
            }
            match shown() {
                Some(shown) if shown != event.data().as_string() => changed(),
                Some(_) => {}
                // The page is gone: stop listening.
                None => break,
            }
        }
        // Dropping the source closes the stream.
        drop(source);
    });
    leptos::task::spawn_local(async move {
        let _ = task.await;
    });
    leptos::prelude::on_cleanup(move || handle.abort());
}

/// While the calling component lives, calls `tick()` every `period` while
/// the page is visible (a hidden tab asks nothing). For what has no version
/// stream to follow: an endpoint's metrics, the catalogue's probes.
#[cfg(feature = "hydrate")]
pub fn every_while_visible(period: std::time::Duration, tick: impl Fn() + 'static) {
    use leptos::prelude::{document, on_cleanup, set_interval_with_handle};
    let handle = set_interval_with_handle(
        move || {
            if !document().hidden() {
                tick();
            }
        },
        period,
    )
    .ok();
    on_cleanup(move || {
        if let Some(h) = handle {
            h.clear();
        }
    });
}
