//! Turning answers into responses in the mode the client asked for.

use serde::Serialize;
use serde_json::{json, Value};
use worker::Response;

use crate::domain::holder::outcome::HolderOutcome;
use crate::domain::holder::quota::Quota;
use crate::http::error::ApiError;
use crate::http::wire::mode::{respond, BodyMode};
use crate::http::wire::{bulk, rate_limit};

/// One page of a holder's list or history.
pub struct Listing {
    pub message: String,
    /// The rows as a JSON array, for JSON mode.
    pub entries: Value,
    /// The rows as text lines, for plain mode.
    pub lines: Vec<String>,
    pub cursor: Option<String>,
}

/// A successful answer of any endpoint.
pub enum Reply {
    /// A list operation's outcome, with the day's quota when the holder's list answered.
    HolderOutcome(HolderOutcome, Option<Quota>),
    /// A bulk request's outcomes, in the order of its addresses, and the day's quota after them.
    Outcomes(Vec<HolderOutcome>, Option<Quota>),
    Listing(Listing),
    /// A JSON answer, written as it was made: a value of a hundred thousand elements
    /// is never held as a tree of `Value`s on its way out.
    Json(u16, String),
    NoContent,
    /// An answer its handler built whole (a streamed feed or export, with its ETag).
    Built(Response),
}

/// Any typed value as JSON.
pub fn to_json(value: impl Serialize) -> Result<Value, ApiError> {
    serde_json::to_value(value).map_err(|e| ApiError::Internal(format!("JSON: {e}")))
}

impl Reply {
    /// A JSON answer from a typed value.
    pub fn json(status: u16, value: &impl Serialize) -> Result<Self, ApiError> {
        let text =
            serde_json::to_string(value).map_err(|e| ApiError::Internal(format!("JSON: {e}")))?;
        Ok(Self::Json(status, text))
    }

    pub fn code(&self) -> &'static str {
        match self {
            Self::HolderOutcome(outcome, _) => outcome.code(),
            Self::Outcomes(..)
            | Self::Listing(_)
            | Self::Json(..)
            | Self::NoContent
            | Self::Built(_) => "ok",
        }
    }

    pub fn into_response(self, mode: BodyMode) -> worker::Result<Response> {
        match self {
            Self::HolderOutcome(outcome, quota) => {
                let response = mode.render(&outcome.message())?;
                let headers = response.headers();
                headers.set("X-Greylist-Outcome", outcome.code())?;
                set_quota(&response, quota.as_ref())?;
                Ok(response)
            }
            Self::Outcomes(outcomes, quota) => {
                let response = match mode {
                    BodyMode::Plain => respond(
                        outcomes
                            .iter()
                            .map(|outcome| outcome.message() + "\n")
                            .collect(),
                        mode.content_type(),
                    )?,
                    BodyMode::Result | BodyMode::Message => {
                        let results: Vec<Value> = outcomes
                            .iter()
                            .map(|outcome| json!({ "ip": outcome.ip_text(), "result": outcome.message(), "outcome": outcome.code() }))
                            .collect();
                        respond(
                            json!({ "results": results, "counts": bulk::counts(&outcomes) })
                                .to_string(),
                            "application/json",
                        )?
                    }
                };
                set_quota(&response, quota.as_ref())?;
                Ok(response)
            }
            Self::Listing(listing) => {
                let response = match mode {
                    BodyMode::Plain => respond(
                        listing
                            .lines
                            .iter()
                            .map(|line| format!("{line}\n"))
                            .collect(),
                        mode.content_type(),
                    )?,
                    BodyMode::Result | BodyMode::Message => {
                        let body = json!({ "result": listing.message, "entries": listing.entries, "cursor": listing.cursor });
                        respond(body.to_string(), "application/json")?
                    }
                };
                if let Some(cursor) = &listing.cursor {
                    response.headers().set("X-Greylist-Cursor", cursor)?;
                }
                Ok(response)
            }
            Self::Json(status, text) => Ok(respond(text, "application/json")?.with_status(status)),
            Self::NoContent => Ok(Response::empty()?.with_status(204)),
            Self::Built(response) => Ok(response),
        }
    }
}

/// The day's quota, when there is one, as RateLimit headers.
fn set_quota(response: &Response, quota: Option<&Quota>) -> worker::Result<()> {
    for (name, value) in quota.iter().flat_map(|quota| rate_limit::headers(quota)) {
        response.headers().set(name, &value)?;
    }
    Ok(())
}
