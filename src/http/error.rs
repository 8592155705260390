//! The one error type of the HTTP layer: each variant decides its status,
//! its client-facing text and its log code here, and nowhere else.

use serde_json::json;
use worker::Response;

use crate::domain::feed::feed_token::MAX_PER_HOLDER as MAX_FEED_TOKENS;
use crate::domain::machines::credentials::MAX_PER_HOLDER as MAX_MACHINES;
use crate::http::wire::bulk::{BulkError, MAX_ADDRESSES};
use crate::http::wire::mode::BodyMode;
use crate::objects::directory::protocol::DirectoryRefusal;
use crate::objects::holder::protocol::HolderRefusal;
use crate::objects::operator_lists::protocol::OperatorListsRefusal;
use crate::objects::protocol::Failure;
use crate::objects::revocations::protocol::RevocationsRefusal;
use crate::platform::config::BadSettings;
use crate::store::directory::keys::MAX_KEYS;
use crate::store::StoreError;

#[derive(Debug, Clone)]
pub enum ApiError {
    /// A list operation without a valid access token; the reason is logged only.
    Unauthorized(&'static str),
    /// A CrowdSec bouncer's key is missing, unknown or revoked: the Local API's
    /// own 403 and text, which bouncers expect; the reason is logged only.
    AccessForbidden(&'static str),
    AdminUnauthorized,
    LoginRefused,
    /// A CrowdSec engine's token is missing, invalid or expired, or its machine
    /// or license was revoked; the reason is logged only.
    MachineUnauthorized(&'static str),
    /// A CrowdSec engine's login: unknown or revoked machine, wrong password,
    /// revoked license, or no login at all. The Local API's own 401 and text.
    MachineLoginRefused,
    NotFound(&'static str),
    /// A route of CrowdSec's Local API this service does not offer: 404 with this text.
    NotOffered(&'static str),
    /// The methods the path takes, for `Allow`.
    MethodNotAllowed(String),
    /// The route's limit, in bytes.
    PayloadTooLarge(usize),
    /// A `Content-Encoding` the route does not decode.
    UnsupportedEncoding(String),
    /// A bulk request with more addresses (first) than it may carry (second).
    TooManyAddresses(usize, usize),
    /// A CrowdSec engine's post with more alerts than this in its array.
    TooManyAlerts(u64),
    /// Too many requests from one client address; it may try again after this many seconds.
    TooManyRequests(u32),
    BadRequest(String),
    /// The request conflicts with what the holder has (too many feed tokens).
    Conflict(String),
    /// The credential is valid but does not open what was asked (a feed token of
    /// scope `personal` asking for `scope=all`).
    Forbidden(String),
    /// A fault on our side (storage, configuration); the detail is logged, never shown.
    Internal(String),
    /// A feature the operator has not set up (the detail names the setting).
    Unavailable(String),
    /// The service's two Workers are between a deployment's two steps, and the
    /// objects refused this edge's call; the detail is logged, never shown.
    Upgrading(String),
}

/// What a client is told to wait, when a deployment's second step is on its way:
/// `make deploy` uploads it right after the first.
pub const UPGRADE_RETRY_SECONDS: u32 = 5;

impl ApiError {
    pub fn status(&self) -> u16 {
        match self {
            Self::Unauthorized(_)
            | Self::AdminUnauthorized
            | Self::LoginRefused
            | Self::MachineUnauthorized(_)
            | Self::MachineLoginRefused => 401,
            Self::NotFound(_) | Self::NotOffered(_) => 404,
            Self::MethodNotAllowed(_) => 405,
            Self::PayloadTooLarge(_) | Self::TooManyAddresses(..) | Self::TooManyAlerts(_) => 413,
            Self::UnsupportedEncoding(_) => 415,
            Self::TooManyRequests(_) => 429,
            Self::BadRequest(_) => 400,
            Self::Conflict(_) => 409,
            Self::Forbidden(_) | Self::AccessForbidden(_) => 403,
            Self::Internal(_) => 500,
            Self::Upgrading(_) | Self::Unavailable(_) => 503,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Self::Unauthorized(_) => {
                "Unauthorized: the access token is missing or invalid".to_owned()
            }
            Self::AdminUnauthorized => {
                "Unauthorized: the admin token or operator key is missing or invalid".to_owned()
            }
            Self::LoginRefused => "Unauthorized: the license key is unknown or revoked".to_owned(),
            Self::MachineUnauthorized(_) => {
                "Unauthorized: the machine's token is invalid, expired or revoked".to_owned()
            }
            Self::AccessForbidden(_) => "access forbidden".to_owned(),
            Self::MachineLoginRefused => "incorrect Username or Password".to_owned(),
            Self::NotFound(what) => format!("Not found: no such {what}"),
            Self::NotOffered(text) => (*text).to_owned(),
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
            Self::TooManyAlerts(max) => format!("Payload too large: at most {max} alerts a request"),
            Self::UnsupportedEncoding(coding) => format!(
                "Unsupported media type: the body may be sent as it is or with Content-Encoding gzip, not {coding:?}"
            ),
            Self::TooManyRequests(seconds) => {
                format!("Too many requests: try again in {seconds} seconds")
            }
            Self::BadRequest(detail) => format!("Bad request: {detail}"),
            Self::Conflict(detail) => format!("Conflict: {detail}"),
            Self::Forbidden(detail) => format!("Forbidden: {detail}"),
            Self::Internal(_) => {
                "Internal error: the request could not be completed, try again later".to_owned()
            }
            Self::Unavailable(detail) => format!("Service unavailable: {detail}"),
            Self::Upgrading(_) => format!(
                "Service unavailable: the service is being upgraded, try again in {UPGRADE_RETRY_SECONDS} seconds"
            ),
        }
    }

    /// The code the request's log line carries.
    pub fn code(&self) -> &'static str {
        match self {
            Self::Unauthorized(reason)
            | Self::AccessForbidden(reason)
            | Self::MachineUnauthorized(reason) => reason,
            Self::AdminUnauthorized => "admin_unauthorized",
            Self::LoginRefused => "login_refused",
            Self::MachineLoginRefused => "machine_login_refused",
            Self::NotFound(_) => "not_found",
            Self::NotOffered(_) => "not_offered",
            Self::MethodNotAllowed(_) => "method_not_allowed",
            Self::PayloadTooLarge(_) | Self::TooManyAddresses(..) | Self::TooManyAlerts(_) => {
                "payload_too_large"
            }
            Self::UnsupportedEncoding(_) => "unsupported_encoding",
            Self::TooManyRequests(_) => "too_many_requests",
            Self::BadRequest(_) => "bad_request",
            Self::Conflict(_) => "conflict",
            Self::Forbidden(_) => "forbidden",
            Self::Internal(_) => "internal_error",
            Self::Upgrading(_) => "upgrading",
            Self::Unavailable(_) => "unavailable",
        }
    }

    pub fn detail(&self) -> Option<&str> {
        match self {
            Self::Internal(detail) | Self::Upgrading(detail) => Some(detail),
            _ => None,
        }
    }

    pub fn into_response(self, mode: BodyMode) -> worker::Result<Response> {
        if let Self::MachineLoginRefused = self {
            // CrowdSec's own shape: the engine reads `message`, and `code` beside it.
            let body = json!({ "code": 401, "message": self.message() });
            return Ok(Response::from_json(&body)?.with_status(401));
        }
        let response = mode.render(&self.message())?.with_status(self.status());
        match &self {
            Self::Unauthorized(_) => {
                response.headers().set("WWW-Authenticate", "Bearer")?;
                response
                    .headers()
                    .set("X-Greylist-Outcome", "unauthorized")?;
            }
            // Login takes its key in the body, so a refused login names no scheme to retry with.
            Self::AdminUnauthorized | Self::MachineUnauthorized(_) => {
                response.headers().set("WWW-Authenticate", "Bearer")?
            }
            Self::MethodNotAllowed(allowed) => response.headers().set("Allow", allowed)?,
            Self::TooManyRequests(seconds) => response
                .headers()
                .set("Retry-After", &seconds.to_string())?,
            Self::Upgrading(_) => response
                .headers()
                .set("Retry-After", &UPGRADE_RETRY_SECONDS.to_string())?,
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

impl From<BadSettings> for ApiError {
    fn from(error: BadSettings) -> Self {
        Self::Internal(error.0)
    }
}

/// What a client is told of a storage failure: a refusal it can act on, or a fault of ours.
/// A bulk body refused: too many addresses (413), or malformed (400).
impl From<BulkError> for ApiError {
    fn from(error: BulkError) -> Self {
        match error {
            BulkError::TooMany(n) => Self::TooManyAddresses(n, MAX_ADDRESSES),
            BulkError::Malformed(detail) => Self::BadRequest(detail),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(error: StoreError) -> Self {
        match error {
            StoreError::UnknownCursor => {
                Self::BadRequest("cursor is not one this service gave out".to_owned())
            }
            StoreError::OtherShape(detail) => Self::Upgrading(detail),
            fault => Self::Internal(fault.to_string()),
        }
    }
}

/// A holder object's refusals, as the holder is told them.
impl From<Failure<HolderRefusal>> for ApiError {
    fn from(failure: Failure<HolderRefusal>) -> Self {
        match failure {
            Failure::Refused(HolderRefusal::LicenseRevoked) => {
                Self::Unauthorized("license_revoked")
            }
            Failure::Refused(HolderRefusal::FeedTokenRevoked) => {
                Self::Unauthorized("feed_token_revoked")
            }
            Failure::Refused(HolderRefusal::TooManyFeedTokens) => Self::Conflict(format!(
                "at most {MAX_FEED_TOKENS} feed tokens; revoke one first"
            )),
            Failure::Refused(HolderRefusal::TooManyMachines) => {
                Self::Conflict(format!("at most {MAX_MACHINES} machines; revoke one first"))
            }
            Failure::Refused(HolderRefusal::MachineRevoked) => {
                Self::MachineUnauthorized("machine_revoked")
            }
            Failure::Fault(fault) => fault.into(),
        }
    }
}

/// The operator lists' object's refusals, as the operator is told them.
impl From<Failure<OperatorListsRefusal>> for ApiError {
    fn from(failure: Failure<OperatorListsRefusal>) -> Self {
        match failure {
            Failure::Refused(
                OperatorListsRefusal::BadEdit(why)
                | OperatorListsRefusal::BadImport(why)
                | OperatorListsRefusal::NotPending(why),
            ) => Self::BadRequest(why),
            Failure::Refused(OperatorListsRefusal::ImportTooLarge(limit)) => {
                Self::PayloadTooLarge(limit)
            }
            Failure::Fault(fault) => fault.into(),
        }
    }
}

/// The revocations' object's refusal, as the operator is told it.
impl From<Failure<RevocationsRefusal>> for ApiError {
    fn from(failure: Failure<RevocationsRefusal>) -> Self {
        match failure {
            Failure::Refused(RevocationsRefusal::NoSuchLicense) => Self::NotFound("license"),
            Failure::Fault(fault) => fault.into(),
        }
    }
}

/// The directory's refusals, as the operator is told them.
impl From<Failure<DirectoryRefusal>> for ApiError {
    fn from(failure: Failure<DirectoryRefusal>) -> Self {
        match failure {
            Failure::Refused(DirectoryRefusal::UnknownKey) => Self::AdminUnauthorized,
            Failure::Refused(DirectoryRefusal::Denied(denied)) => Self::Forbidden(denied.message()),
            Failure::Refused(DirectoryRefusal::NoSuchLicense) => Self::NotFound("license"),
            Failure::Refused(DirectoryRefusal::NoSuchKey) => Self::NotFound("operator key"),
            Failure::Refused(DirectoryRefusal::TooManyKeys) => Self::Conflict(format!(
                "at most {MAX_KEYS} operator keys may stand at once; revoke one first"
            )),
            Failure::Refused(DirectoryRefusal::UnknownCursor) => StoreError::UnknownCursor.into(),
            Failure::Refused(DirectoryRefusal::BadCanaries(why)) => Self::BadRequest(why),
            Failure::Fault(fault) => fault.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_are_the_callers_and_faults_are_logged_500s() {
        let fault = || StoreError::Sql(crate::store::sql::SqlError("disk I/O error".to_owned()));
        let edit: ApiError = Failure::<OperatorListsRefusal>::Fault(fault()).into();
        assert_eq!(
            (edit.status(), edit.detail()),
            (500, Some("SQL: disk I/O error")),
            "a failed save is ours, not a bad request"
        );
        let refused: ApiError = Failure::Refused(OperatorListsRefusal::BadEdit(
            "\"x\": not an address".to_owned(),
        ))
        .into();
        assert_eq!(
            (refused.status(), refused.message().as_str()),
            (400, "Bad request: \"x\": not an address")
        );
        let holder: ApiError = Failure::<HolderRefusal>::Fault(fault()).into();
        assert_eq!(holder.status(), 500);
        let revoked: ApiError = Failure::Refused(HolderRefusal::LicenseRevoked).into();
        assert_eq!((revoked.status(), revoked.code()), (401, "license_revoked"));
    }

    #[test]
    fn a_call_the_objects_of_another_build_refuse_is_a_503_to_try_again() {
        let refused: ApiError =
            Failure::<HolderRefusal>::Fault(StoreError::OtherShape("a call of shape".to_owned()))
                .into();
        assert_eq!(
            (refused.status(), refused.code(), refused.detail()),
            (503, "upgrading", Some("a call of shape")),
            "another build's refusal is told as an upgrade to try again, not as a fault"
        );
        assert_eq!(
            refused.message(),
            "Service unavailable: the service is being upgraded, try again in 5 seconds"
        );
    }
}
