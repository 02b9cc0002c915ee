//! Following files that change on disk: a page polls a cheap version token and
//! re-reads its data only when the token differs from what it shows.

/// While the calling component is mounted, asks `current()` every `every_ms`
/// and calls `changed()` when the answer differs from `shown()`. Stops when the
/// component is cleaned up (its signals are gone then).
#[cfg(feature = "hydrate")]
pub fn follow<F, Fut>(
    every_ms: u32,
    current: F,
    shown: impl Fn() -> Option<Option<String>> + 'static,
    changed: impl Fn() + 'static,
) where
    F: Fn() -> Option<Fut> + 'static,
    Fut: std::future::Future<Output = Option<String>> + 'static,
{
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let alive = Arc::new(AtomicBool::new(true));
    let alive_loop = alive.clone();
    leptos::prelude::on_cleanup(move || alive.store(false, Ordering::Relaxed));
    leptos::task::spawn_local(async move {
        loop {
            gloo_timers::future::TimeoutFuture::new(every_ms).await;
            if !alive_loop.load(Ordering::Relaxed) {
                break;
            }
            // `None`: the page's signals are gone.
            let (Some(shown), Some(ask)) = (shown(), current()) else { break };
            if let Some(now) = ask.await {
                if shown.as_deref() != Some(now.as_str()) && alive_loop.load(Ordering::Relaxed) {
                    changed();
                }
            }
        }
    });
}
