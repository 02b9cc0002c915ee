//! The server's one HTTP error type: a refusal the client can read.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

/// An error answered as JSON `{"error": reason}`. Bad input is 422 with the reason;
/// an internal failure is logged in full and answered without its internals.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    #[error("{0}")]
    Unprocessable(String),
    #[error("{0}")]
    NotFound(String),
    #[error("internal error while {doing}")]
    Internal { doing: &'static str, detail: String },
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = match &self {
            Self::Unprocessable(_) => StatusCode::UNPROCESSABLE_ENTITY,
            Self::NotFound(_) => StatusCode::NOT_FOUND,
            Self::Internal { doing, detail } => {
                tracing::error!("{doing}: {detail}");
                StatusCode::INTERNAL_SERVER_ERROR
            }
        };
        (status, Json(json!({ "error": self.to_string() }))).into_response()
    }
}
