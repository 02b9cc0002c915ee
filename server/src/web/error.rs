//! The server's one HTTP error type: the console's [`ApiError`], answered as
//! JSON `{"kind": …, "error": "…"}` with the status its kind fixes — the same
//! body and status a page's server function gets for the same request.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use runboard::api::ApiError;

/// The most a request body may hold (axum's default limit, said here so
/// the refusal names it): 2 MiB.
pub const MAX_BODY: usize = 2 << 20;

/// The refusal of a body past [`MAX_BODY`] (413).
pub fn too_large() -> ApiError {
    ApiError::new(
        runboard::api::ErrorKind::TooLarge,
        format!("the request body is larger than {} MiB, the most the console reads", MAX_BODY >> 20),
    )
}

/// An internal failure of the server's own (a write, a lock): logged here in
/// full, answered without its detail (`internal error while {doing}`). The
/// one such helper of the adapters; REST handlers wrap it in [`AppError`].
pub fn internal(doing: &str, detail: impl std::fmt::Display) -> ApiError {
    tracing::error!("{doing}: {detail}");
    ApiError::internal(doing)
}

/// A refusal or failure of a REST handler.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct AppError(pub ApiError);

impl AppError {
    pub fn not_found(what: impl Into<String>) -> Self {
        Self(ApiError::not_found(what))
    }

    /// An internal failure: logged in full, answered without its detail.
    pub fn internal(doing: &str, detail: impl std::fmt::Display) -> Self {
        Self(internal(doing, detail))
    }
}

impl From<ApiError> for AppError {
    fn from(e: ApiError) -> Self {
        Self(e)
    }
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = StatusCode::from_u16(self.0.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        (status, Json(self.0)).into_response()
    }
}
