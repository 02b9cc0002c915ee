//! A resource's answer, said the same way on every page.

use leptos::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::api::ApiError;
use crate::codec::Json;

/// While `resource` is first read, `reading` ("Reading the runs…"); once
/// read, its error as "`failed`: the error", else `ok` of its value. A
/// refresh keeps what is shown until the new answer is in (a
/// `<Transition>`), so a live page never flashes back to "Reading…".
///
/// A function, not a component: a component's props builder would be one
/// more copy in the bundle for every page that uses it.
pub fn loaded<T, F, V>(
    resource: Resource<Result<T, ApiError>, Json>,
    reading: &'static str,
    failed: &'static str,
    ok: F,
) -> impl IntoView
where
    T: Clone + Serialize + DeserializeOwned + Send + Sync + 'static,
    F: Fn(T) -> V + Send + Sync + 'static,
    V: IntoView + 'static,
{
    view! {
        <Transition fallback=move || loading(reading)>
            {move || resource.get().map(|res| match res {
                Err(e) => failure(failed, &e),
                Ok(v) => ok(v).into_any(),
            })}
        </Transition>
    }
}

/// "Reading …" (not generic: one copy in the bundle, for every page).
pub fn loading(reading: &'static str) -> AnyView {
    view! { <p class="loading">{reading}</p> }.into_any()
}

/// "Could not read X: why", one shape for every page (not generic).
pub fn failure(failed: &'static str, e: &ApiError) -> AnyView {
    view! { <p class="error">{failed}": "{e.to_string()}</p> }.into_any()
}
