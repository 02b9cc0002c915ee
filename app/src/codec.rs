//! One JSON decoder for everything a page receives.
//!
//! A server function's answer is decoded by `server_fn`'s JSON codec with
//! `serde_json::from_slice`; a resource's value sent in the server-rendered
//! page was decoded by Leptos's default codec with `serde_json::from_str`.
//! Each reader makes its own copy of every answer type's deserializer, so the
//! browser's bundle carried two of each (about a fifth of its code). Every
//! resource here decodes through `from_slice` as well, so each type's
//! deserializer is compiled once.

use leptos::prelude::Resource;
use leptos::server::codee::{Decoder, Encoder};
use serde::de::DeserializeOwned;
use serde::Serialize;

/// JSON, encoded as text and decoded from its bytes (`from_slice`).
pub struct Json;

impl<T: Serialize> Encoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = String;

    fn encode(val: &T) -> Result<String, serde_json::Error> {
        serde_json::to_string(val)
    }
}

impl<T: DeserializeOwned> Decoder<T> for Json {
    type Error = serde_json::Error;
    type Encoded = str;

    fn decode(val: &str) -> Result<T, serde_json::Error> {
        serde_json::from_slice(val.as_bytes())
    }
}

/// A resource (as `Resource::new`) whose value crosses from the server's
/// render to the browser through [`Json`].
#[track_caller]
pub fn resource<S, T, Fut>(
    source: impl Fn() -> S + Send + Sync + 'static,
    fetcher: impl Fn(S) -> Fut + Send + Sync + 'static,
) -> Resource<T, Json>
where
    S: Send + Sync + Clone + PartialEq + 'static,
    T: Serialize + DeserializeOwned + Send + Sync + 'static,
    Fut: std::future::Future<Output = T> + Send + 'static,
{
    Resource::new_with_options(source, fetcher, false)
}
