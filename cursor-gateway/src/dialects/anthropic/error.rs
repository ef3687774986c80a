//! An [`ApiError`] in Anthropic's shape: `{"type": "error", "error": {"type", "message"}}`, with
//! the API's statuses (an overloaded gateway is Anthropic's 529).

use axum::Json;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use crate::ApiError;

/// An error answered in Anthropic's shape.
#[derive(Clone, Debug)]
pub(crate) struct AnthropicError(pub(crate) ApiError);

impl From<ApiError> for AnthropicError {
    fn from(error: ApiError) -> Self {
        Self(error)
    }
}

impl AnthropicError {
    fn status_and_type(&self) -> (u16, &'static str) {
        match self.0.status {
            400 => (400, "invalid_request_error"),
            401 => (401, "authentication_error"),
            403 => (403, "permission_error"),
            404 => (404, "not_found_error"),
            408 => (408, "timeout_error"),
            413 => (413, "request_too_large"),
            429 => (429, "rate_limit_error"),
            503 => (529, "overloaded_error"),
            _ => (500, "api_error"),
        }
    }

    /// The error object.
    pub(crate) fn body(&self) -> Value {
        let (_, kind) = self.status_and_type();
        json!({"type": "error", "error": {"type": kind, "message": self.0.message}})
    }
}

impl IntoResponse for AnthropicError {
    fn into_response(self) -> Response {
        let (status, _) = self.status_and_type();
        let status =
            http::StatusCode::from_u16(status).unwrap_or(http::StatusCode::INTERNAL_SERVER_ERROR);
        let mut response = (status, Json(self.body())).into_response();
        if let Some(seconds) = self.0.retry_after {
            response
                .headers_mut()
                .insert(http::header::RETRY_AFTER, http::HeaderValue::from(seconds));
        }
        response
    }
}
