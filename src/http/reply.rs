//! Turning answers into responses in the mode the client asked for.

use serde_json::json;
use worker::Response;

use crate::domain::outcome::Outcome;

/// How a message body is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyMode {
    /// The bare message (list operations without `result_mode=json`).
    Plain,
    /// `{"result": "..."}` (list operations with `result_mode=json`).
    Result,
    /// `{"message": "..."}` (login and the operator API).
    Message,
}

impl BodyMode {
    /// `result_mode=json` anywhere in the query selects JSON; anything else is plain text.
    pub fn of_query(query: Option<&str>) -> Self {
        let json = form_urlencoded::parse(query.unwrap_or("").as_bytes()).any(|(k, v)| k == "result_mode" && v == "json");
        if json {
            Self::Result
        } else {
            Self::Plain
        }
    }

    pub fn content_type(self) -> &'static str {
        match self {
            Self::Plain => "text/plain; charset=utf-8",
            Self::Result | Self::Message => "application/json",
        }
    }

    pub fn render(self, message: &str) -> worker::Result<Response> {
        let body = match self {
            Self::Plain => message.to_owned(),
            Self::Result => json!({ "result": message }).to_string(),
            Self::Message => json!({ "message": message }).to_string(),
        };
        let response = Response::ok(body)?;
        response.headers().set("Content-Type", self.content_type())?;
        Ok(response)
    }
}

/// A successful answer of any endpoint.
pub enum Reply {
    Outcome(Outcome),
    Json(u16, serde_json::Value),
    NoContent,
}

impl Reply {
    pub fn code(&self) -> &'static str {
        match self {
            Self::Outcome(outcome) => outcome.code(),
            Self::Json(..) | Self::NoContent => "ok",
        }
    }

    pub fn into_response(self, mode: BodyMode) -> worker::Result<Response> {
        match self {
            Self::Outcome(outcome) => mode.render(&outcome.message()),
            Self::Json(status, value) => Ok(Response::from_json(&value)?.with_status(status)),
            Self::NoContent => Ok(Response::empty()?.with_status(204)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_result_mode_json_selects_json() {
        assert_eq!(BodyMode::of_query(Some("result_mode=json")), BodyMode::Result);
        assert_eq!(BodyMode::of_query(Some("a=1&result_mode=json")), BodyMode::Result);
        for query in [None, Some(""), Some("result_mode=JSON"), Some("result_mode=xml"), Some("result_mode"), Some("mode=json")] {
            assert_eq!(BodyMode::of_query(query), BodyMode::Plain, "{query:?}");
        }
    }
}
