//! The one error type of the HTTP layer: each variant decides its status,
//! its client-facing text and its log code here, and nowhere else.

use worker::Response;

use super::reply::BodyMode;
use crate::store::StoreError;

#[derive(Debug, Clone)]
pub enum ApiError {
    /// A list operation without a valid access token; the reason is logged only.
    Unauthorized(&'static str),
    AdminUnauthorized,
    LoginRefused,
    NotFound(&'static str),
    /// The methods the path takes, for `Allow`.
    MethodNotAllowed(String),
    /// The route's limit, in bytes.
    PayloadTooLarge(usize),
    /// A bulk request with more addresses (first) than it may carry (second).
    TooManyAddresses(usize, usize),
    /// Too many requests from one client address; it may try again after this many seconds.
    TooManyRequests(u32),
    BadRequest(String),
    /// The request conflicts with what the holder has (too many feed tokens).
    Conflict(String),
    /// A fault on our side (storage, configuration); the detail is logged, never shown.
    Internal(String),
}

impl ApiError {
    pub fn status(&self) -> u16 {
        match self {
            Self::Unauthorized(_) | Self::AdminUnauthorized | Self::LoginRefused => 401,
            Self::NotFound(_) => 404,
            Self::MethodNotAllowed(_) => 405,
            Self::PayloadTooLarge(_) | Self::TooManyAddresses(..) => 413,
            Self::TooManyRequests(_) => 429,
            Self::BadRequest(_) => 400,
            Self::Conflict(_) => 409,
            Self::Internal(_) => 500,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Self::Unauthorized(_) => {
                "Unauthorized: the access token is missing or invalid".to_owned()
            }
            Self::AdminUnauthorized => {
                "Unauthorized: the admin token is missing or invalid".to_owned()
            }
            Self::LoginRefused => "Unauthorized: the license key is unknown or revoked".to_owned(),
            Self::NotFound(what) => format!("Not found: no such {what}"),
            Self::MethodNotAllowed(allowed) => format!("Method not allowed: use {allowed}"),
            Self::PayloadTooLarge(limit) if limit % (1 << 20) == 0 => format!(
                "Payload too large: the body may be at most {} MiB",
                limit >> 20
            ),
            Self::PayloadTooLarge(limit) => format!(
                "Payload too large: the body may be at most {} KiB",
                limit >> 10
            ),
            Self::TooManyAddresses(sent, max) => {
                format!("Payload too large: at most {max} addresses a request, not {sent}")
            }
            Self::TooManyRequests(seconds) => {
                format!("Too many requests: try again in {seconds} seconds")
            }
            Self::BadRequest(detail) => format!("Bad request: {detail}"),
            Self::Conflict(detail) => format!("Conflict: {detail}"),
            Self::Internal(_) => {
                "Internal error: the request could not be completed, try again later".to_owned()
            }
        }
    }

    /// The code the request's log line carries.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unauthorized(reason) => reason,
            Self::AdminUnauthorized => "admin_unauthorized",
            Self::LoginRefused => "login_refused",
            Self::NotFound(_) => "not_found",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::PayloadTooLarge(_) | Self::TooManyAddresses(..) => "payload_too_large",
            Self::TooManyRequests(_) => "too_many_requests",
            Self::BadRequest(_) => "bad_request",
            Self::Conflict(_) => "conflict",
            Self::Internal(_) => "internal_error",
        }
    }

    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::Internal(detail) => Some(detail),
            _ => None,
        }
    }

    pub fn into_response(self, mode: BodyMode) -> worker::Result<Response> {
        let response = mode.render(&self.message())?.with_status(self.status());
        match &self {
            Self::Unauthorized(_) => {
                response.headers().set("WWW-Authenticate", "Bearer")?;
                response
                    .headers()
                    .set("X-Greylist-Outcome", "unauthorized")?;
            }
            // Login takes its key in the body, so a refused login names no scheme to retry with.
            Self::AdminUnauthorized => response.headers().set("WWW-Authenticate", "Bearer")?,
            Self::MethodNotAllowed(allowed) => response.headers().set("Allow", allowed)?,
            Self::TooManyRequests(seconds) => response
                .headers()
                .set("Retry-After", &seconds.to_string())?,
            _ => {}
        }
        Ok(response)
    }
}

impl From<worker::Error> for ApiError {
    fn from(error: worker::Error) -> Self {
        Self::Internal(error.to_string())
    }
}

impl From<crate::config::BadSettings> for ApiError {
    fn from(error: crate::config::BadSettings) -> Self {
        Self::Internal(error.0)
    }
}

/// What a client is told of a storage failure: a refusal it can act on, or a fault of ours.
impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::LicenseRevoked => Self::Unauthorized("license_revoked"),
            StoreError::FeedTokenRevoked => Self::Unauthorized("feed_token_revoked"),
            StoreError::UnknownCursor => {
                Self::BadRequest("cursor is not one this service gave out".to_owned())
            }
            error => Self::Internal(error.to_string()),
        }
    }
}
