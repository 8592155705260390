//! The mode a client asked its answers in: the bare message, `{"result": ...}`
//! or `{"message": ...}`, with the content type each is sent with.

use serde_json::json;
use worker::Response;

use crate::http::wire::form;

/// How a message body is shaped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BodyMode {
    /// The bare message (holder routes without `result_mode=json`).
    Plain,
    /// `{"result": "..."}` (holder routes with `result_mode=json`).
    Result,
    /// `{"message": "..."}` (login and the operator API).
    Message,
}

impl BodyMode {
    /// `result_mode=json` anywhere in the URL's query selects JSON; anything else is plain text.
    pub fn of_url(url: &str) -> Self {
        let json = form_urlencoded::parse(form::query_of(url).as_bytes())
            .any(|(k, v)| k == "result_mode" && v == "json");
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
        respond(body, self.content_type())
    }
}

pub(super) fn respond(body: String, content_type: &str) -> worker::Result<Response> {
    let response = Response::ok(body)?;
    response.headers().set("Content-Type", content_type)?;
    Ok(response)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_result_mode_json_selects_json() {
        let base = "https://greylist.example/api/checkIpOnGreylist";
        assert_eq!(
            BodyMode::of_url(&format!("{base}?result_mode=json")),
            BodyMode::Result
        );
        assert_eq!(
            BodyMode::of_url(&format!("{base}?a=1&result_mode=json#x")),
            BodyMode::Result
        );
        for query in [
            "",
            "?",
            "?result_mode=JSON",
            "?result_mode=xml",
            "?result_mode",
            "?mode=json",
            "#?result_mode=json",
        ] {
            assert_eq!(
                BodyMode::of_url(&format!("{base}{query}")),
                BodyMode::Plain,
                "{query:?}"
            );
        }
    }
}
