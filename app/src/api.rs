//! The pages' side of the console's service boundary: one server function per
//! row of the operation table (`runboard::api::operations`), made here by a
//! macro from the table, so a page asks exactly what a REST client asks.
//!
//! Each server function is `/sfn/{name}` and takes the operation's one input:
//! a GET's in the URL (`?input[field]=…`), a POST's as JSON (`{"input": …}`).
//! On the server it calls the same [`Console`](runboard::api::Console) method
//! as the REST route, on the blocking pool, and a refusal sets the response's
//! status, so both surfaces answer alike (status and body).
//!
//! The types (`ApiError`, the inputs and queries) live in the core and are
//! re-exported here for the pages.

// Each server function's argument struct is named as its operation (the
// operation's one name), so it does not shadow the input and output types.
#![allow(non_camel_case_types)]

use leptos::prelude::*;
pub use runboard::api::*;
pub use runboard::runview::listing::ListParams;
pub use runboard::runview::trials::TrialParams;

#[cfg(feature = "ssr")]
pub mod ssr {
    //! The seam between the app and the server's adapters.
    use super::ApiError;
    use runboard::api::{Console, Operation};
    use std::sync::Arc;

    pub type ConsoleHandle = Arc<dyn Console>;

    /// An internal failure: logged in full here, answered without its detail.
    pub fn internal(doing: &str, detail: impl std::fmt::Display) -> ApiError {
        tracing::error!("{doing}: {detail}");
        ApiError::internal(doing)
    }

    /// Answers operation `O` for a server function, on the blocking pool: a
    /// refusal also sets the response's status, so a page's call and the REST
    /// endpoint answer alike.
    pub async fn answer<O: Operation>(input: O::Input) -> Result<O::Output, ApiError> {
        let result = match leptos::prelude::use_context::<ConsoleHandle>() {
            None => Err(internal(O::DOING, "the console is not provided")),
            Some(console) => tokio::task::spawn_blocking(move || O::call(console.as_ref(), input))
                .await
                .unwrap_or_else(|e| Err(internal(O::DOING, format!("the console task failed: {e}")))),
        };
        if let Err(e) = &result {
            if let Some(opts) = leptos::prelude::use_context::<leptos_axum::ResponseOptions>() {
                if let Ok(status) = http::StatusCode::from_u16(e.status()) {
                    opts.set_status(status);
                }
            }
        }
        result
    }
}

/// One server function per operation: GET ones take their input from the URL,
/// POST ones as JSON.
macro_rules! server_fns {
    ($( $(#[$doc:meta])* $name:ident $ep:literal : $method:ident $path:literal, $input:ty => $output:ty, $doing:literal $(=> $group:ident $cli:tt)? $(, $opt:ident = $val:expr)* ; )*) => {
        $( server_fn_of!($method $(#[$doc])* $name $ep, $input => $output); )*
    };
}

macro_rules! server_fn_of {
    (GET $(#[$doc:meta])* $name:ident $ep:literal, $input:ty => $output:ty) => {
        $(#[$doc])*
        #[server(prefix = "/sfn", input = server_fn::codec::GetUrl, endpoint = $ep, name = $name)]
        pub async fn $name(#[server(default)] input: $input) -> Result<$output, ApiError> {
            ssr::answer::<runboard::api::operations::op::$name>(input).await
        }
    };
    (POST $(#[$doc:meta])* $name:ident $ep:literal, $input:ty => $output:ty) => {
        $(#[$doc])*
        #[server(prefix = "/sfn", input = server_fn::codec::Json, endpoint = $ep, name = $name)]
        pub async fn $name(#[server(default)] input: $input) -> Result<$output, ApiError> {
            ssr::answer::<runboard::api::operations::op::$name>(input).await
        }
    };
}

use runboard::api::operations::types::*;
runboard::operations!(server_fns);
